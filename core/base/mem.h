/* mem.h - zeroed memory for the core's large arrays (a model's parameters,
 * packed weights, embedding tables).  Private to core/. */
#ifndef ATTND_BASE_MEM_H
#define ATTND_BASE_MEM_H

#include <stddef.h>

/* From this size up mem_zalloc gives an allocation its own mapping. */
#define MEM_MAPPED_BYTES (4u << 20)

/* Zeroed memory: at MEM_MAPPED_BYTES and more its own mapping, advised to
 * use transparent huge pages (a BERT-base model is 170k page faults in 4 KiB
 * pages, a few hundred in 2 MiB ones); smaller, from the heap.  64-byte
 * aligned either way.  Freed with mem_zfree and the same size. */
void *mem_zalloc(size_t bytes);
void mem_zfree(void *p, size_t bytes);

#endif
