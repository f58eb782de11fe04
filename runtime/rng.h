/* SPDX-License-Identifier: Apache-2.0
 * Per-Interp random numbers: xoshiro256** seeded through splitmix64.
 * No global state: each thread owns its Rng. */
#ifndef DML_RUNTIME_RNG_H
#define DML_RUNTIME_RNG_H

#include <stdint.h>

typedef struct Rng {
    uint64_t s[4];
    double spare_normal;
    int has_spare;
} Rng;

void rng_seed(Rng *r, uint64_t seed);
/* rng_seed(r, seed) with splitmix64's state advanced 'k' steps first:
 * rng_seed_at(r, s, 0) is rng_seed(r, s). */
void rng_seed_at(Rng *r, uint64_t seed, uint64_t k);
uint64_t rng_next(Rng *r);
/* Uniform in [0, 1). */
double rng_uniform(Rng *r);
/* Standard normal. */
double rng_normal(Rng *r);
/* Poisson with mean lambda. */
double rng_poisson(Rng *r, double lambda);
/* Uniform integer in [0, n). */
uint64_t rng_below(Rng *r, uint64_t n);
/* A seed from the clock and a counter (for seed = -1). */
uint64_t rng_fresh_seed(void);

/* Seeds derived from one seed, for streams that must not depend on which
 * thread runs them or when (parfor iterations, paramserv workers and their
 * epochs). Every mixer is splitmix64's; no other file mixes seeds.
 * The k-th output (k >= 1) of splitmix64 started at 'seed': */
uint64_t rng_split(uint64_t seed, uint64_t k);
/* One seed from three words, e.g. (seed, worker + 1, epoch): */
uint64_t rng_mix3(uint64_t a, uint64_t b, uint64_t c);

/* splitmix64's finaliser: a bijection of 64-bit words in which every input
 * bit reaches every output bit. The mixer behind the seeds above; also a
 * hash of doubles' bit patterns (countDistinct's table). */
static inline uint64_t rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
