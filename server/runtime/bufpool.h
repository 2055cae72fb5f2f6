/* bufpool.h - large buffers kept across requests: a request's upload, its
 * input floats and its results are taken from here and given back when the
 * response has been sent, so the next request writes into memory that is
 * already mapped instead of first-touching fresh pages (on a virtual machine
 * a page fault costs about 10 us: 26 MB of fresh results cost more than the
 * forward that filled them).  Blocks are grown, never shrunk; at most keep
 * of them wait idle, each no larger than the limits allow a request.
 *
 *     bufpool *bp = bufpool_new(16);
 *     float *x = bufpool_take(bp, n * sizeof *x);   // NULL: out of memory
 *     ... x = bufpool_resize(bp, x, more) ...
 *     bufpool_give(bp, x);
 *     bufpool_free(bp);
 *
 * A NULL pool is plain malloc and free (for codec tests and tools).
 * Thread-safe. */
#ifndef ATTND_BUFPOOL_H
#define ATTND_BUFPOOL_H

#include <stddef.h>

typedef struct bufpool bufpool;

/* A pool that keeps up to keep idle blocks.  Owned, or NULL. */
bufpool *bufpool_new(size_t keep);

/* Frees the idle blocks and the pool (blocks still taken must have been
 * given back). */
void bufpool_free(bufpool *bp);

/* A block of at least bytes (64-byte aligned, contents undefined): the
 * smallest idle one that is large enough, else a new one (replacing the
 * largest idle one, so that idle blocks grow with the requests).  NULL when out of memory. */
void *bufpool_take(bufpool *bp, size_t bytes);

/* p (from bufpool_take, or NULL) with room for bytes, contents kept up to
 * the smaller size, like realloc; NULL when out of memory (p is then still
 * valid). */
void *bufpool_resize(bufpool *bp, void *p, size_t bytes);

/* Gives p (or NULL) back: kept idle, or freed when keep blocks already wait
 * (the smallest goes). */
void bufpool_give(bufpool *bp, void *p);

/* Idle blocks and their bytes (for /metrics and tests). */
size_t bufpool_idle(bufpool *bp, size_t *bytes);

#endif
