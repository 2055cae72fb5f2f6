/* mem.c - zeroed memory for large arrays (mem.h). */
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *mem_zalloc(size_t bytes)
{
    if (bytes < MEM_MAPPED_BYTES) { /* 64-byte aligned, as the packed GEMM loads it */
        const size_t n = (bytes + 63) & ~(size_t)63;
        void *p = aligned_alloc(64, n ? n : 64);
        if (p)
            memset(p, 0, n ? n : 64);
        return p;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint; without THP, 4 KiB pages */
    return p;
}

void mem_zfree(void *p, size_t bytes)
{
    if (p && bytes < MEM_MAPPED_BYTES)
        free(p);
    else if (p)
        munmap(p, bytes);
}
