/* Small, fast, reproducible random numbers for our programs (xorshift64*):
 * index arrays and pointer-chasing cycles must be the same on every rank
 * and every run for a given seed, and need no quality beyond that. */
#ifndef CG_RANDOM_H
#define CG_RANDOM_H

#include <stdint.h>

/* State from a seed and a per-use salt; never zero */
static inline uint64_t cg_rng_seed(uint64_t seed, uint64_t salt)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ULL + salt;
    return st ? st : 1;
}

static inline uint64_t cg_rng_next(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif
