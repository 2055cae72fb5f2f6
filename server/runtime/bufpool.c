/* bufpool.c - large buffers kept across requests (bufpool.h). */
#include "runtime/bufpool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each block starts with its header, one cache line, so that what the
 * caller gets stays 64-byte aligned. */
#define HEADER 64

typedef struct block {
    size_t cap; /* bytes after the header */
} block;

struct bufpool {
    pthread_mutex_t lock;
    size_t keep, n_idle;
    block **idle; /* (keep) */
};

static block *block_of(void *p)
{
    return (block *)((char *)p - HEADER);
}

static void *data_of(block *b)
{
    return (char *)b + HEADER;
}

static block *block_new(size_t bytes)
{
    if (bytes > SIZE_MAX - 2 * HEADER)
        return NULL;
    const size_t total = (bytes + HEADER + 63) / 64 * 64;
    block *b = aligned_alloc(64, total);
    if (b)
        b->cap = total - HEADER;
    return b;
}

bufpool *bufpool_new(size_t keep)
{
    bufpool *bp = calloc(1, sizeof *bp);
    if (!bp || !(bp->idle = calloc(keep ? keep : 1, sizeof *bp->idle))) {
        free(bp);
        return NULL;
    }
    bp->keep = keep;
    pthread_mutex_init(&bp->lock, NULL);
    return bp;
}

void bufpool_free(bufpool *bp)
{
    if (!bp)
        return;
    for (size_t i = 0; i < bp->n_idle; i++)
        free(bp->idle[i]);
    pthread_mutex_destroy(&bp->lock);
    free(bp->idle);
    free(bp);
}

/* Removes and returns idle block i. */
static block *unlist(bufpool *bp, size_t i)
{
    block *b = bp->idle[i];
    bp->idle[i] = bp->idle[--bp->n_idle];
    return b;
}

void *bufpool_take(bufpool *bp, size_t bytes)
{
    if (!bp)
        return malloc(bytes ? bytes : 1);
    block *b = NULL;
    pthread_mutex_lock(&bp->lock);
    size_t fit = SIZE_MAX, largest = SIZE_MAX;
    for (size_t i = 0; i < bp->n_idle; i++) {
        const size_t cap = bp->idle[i]->cap;
        if (cap >= bytes && (fit == SIZE_MAX || cap < bp->idle[fit]->cap))
            fit = i;
        if (largest == SIZE_MAX || cap > bp->idle[largest]->cap)
            largest = i;
    }
    if (fit != SIZE_MAX)
        b = unlist(bp, fit);
    else if (largest != SIZE_MAX)
        b = unlist(bp, largest);
    pthread_mutex_unlock(&bp->lock);
    if (b && b->cap >= bytes)
        return data_of(b);
    /* None large enough: the largest idle one makes way for a larger one
     * (so the idle blocks grow with the requests, and never shrink). */
    free(b);
    b = block_new(bytes);
    return b ? data_of(b) : NULL;
}

void *bufpool_resize(bufpool *bp, void *p, size_t bytes)
{
    if (!bp)
        return realloc(p, bytes ? bytes : 1);
    if (!p)
        return bufpool_take(bp, bytes);
    block *b = block_of(p);
    if (b->cap >= bytes)
        return p;
    void *q = bufpool_take(bp, bytes);
    if (!q)
        return NULL;
    memcpy(q, p, b->cap);
    bufpool_give(bp, p);
    return q;
}

void bufpool_give(bufpool *bp, void *p)
{
    if (!p)
        return;
    if (!bp) {
        free(p);
        return;
    }
    block *b = block_of(p), *drop = NULL;
    pthread_mutex_lock(&bp->lock);
    if (bp->n_idle < bp->keep) {
        bp->idle[bp->n_idle++] = b;
    } else {
        /* Full: keep the larger blocks, which serve any request. */
        size_t smallest = 0;
        for (size_t i = 1; i < bp->n_idle; i++)
            if (bp->idle[i]->cap < bp->idle[smallest]->cap)
                smallest = i;
        if (bp->n_idle && bp->idle[smallest]->cap < b->cap) {
            drop = bp->idle[smallest];
            bp->idle[smallest] = b;
        } else {
            drop = b;
        }
    }
    pthread_mutex_unlock(&bp->lock);
    free(drop);
}

size_t bufpool_idle(bufpool *bp, size_t *bytes)
{
    size_t total = 0, n = 0;
    if (bp) {
        pthread_mutex_lock(&bp->lock);
        n = bp->n_idle;
        for (size_t i = 0; i < n; i++)
            total += bp->idle[i]->cap;
        pthread_mutex_unlock(&bp->lock);
    }
    if (bytes)
        *bytes = total;
    return n;
}
