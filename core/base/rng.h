/* rng.h - the seeded generator enc_model_random and seeded embeddings use:
 * splitmix64 streams, one per (seed, layer, tensor), so each tensor's
 * numbers depend on nothing else.  Private to core/. */
#ifndef ATTND_BASE_RNG_H
#define ATTND_BASE_RNG_H

#include <stdint.h>

typedef struct rng_stream {
    uint64_t state;
} rng_stream;

void rng_init(rng_stream *r, uint64_t seed, int layer, int tensor);
uint64_t rng_next(rng_stream *r);
/* A float32 uniform in [-bound, bound): (2u - 1) * bound in double, u having
 * 24 random bits, rounded once to float. */
float rng_uniform(rng_stream *r, double bound);
/* Moves the stream n numbers on, as n rng_next calls would (splitmix64 is a
 * counter: its state only ever adds the same constant). */
void rng_skip(rng_stream *r, uint64_t n);

#endif
