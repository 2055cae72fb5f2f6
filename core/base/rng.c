/* rng.c - the seeded generator (rng.h): splitmix64 streams. */
#include "base/rng.h"

/* splitmix64's increment, the golden ratio in 64 bits. */
#define RNG_GAMMA 0x9E3779B97F4A7C15ull

void rng_init(rng_stream *r, uint64_t seed, int layer, int tensor)
{
    r->state = seed ^ (RNG_GAMMA * (uint64_t)(layer * 16 + tensor + 1));
}

/* splitmix64 (Steele, Lea, Flood 2014): the whole state in one word. */
uint64_t rng_next(rng_stream *r)
{
    uint64_t z = (r->state += RNG_GAMMA);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void rng_skip(rng_stream *r, uint64_t n)
{
    r->state += n * RNG_GAMMA;
}

float rng_uniform(rng_stream *r, double bound)
{
    double u = (double)(rng_next(r) >> 40) * (1.0 / 16777216.0);
    return (float)((2.0 * u - 1.0) * bound);
}
