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

#endif
