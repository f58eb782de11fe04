/* SPDX-License-Identifier: Apache-2.0
 * Random numbers: xoshiro256** (Blackman & Vigna) seeded through
 * splitmix64, with uniform, normal, Poisson and bounded-integer draws.
 * Each Rng belongs to one thread (it lives in an Interp); the only shared
 * state is the atomic counter that makes rng_fresh_seed() differ per call. */
#include "rng.h"

#include <math.h>
#include <stdatomic.h>
#include <time.h>

/* splitmix64 (Steele, Lea & Flood): a Weyl sequence with step GAMMA, each
 * term passed through rng_mix64 (rng.h), a bijection of 64-bit words. */
#define GAMMA 0x9e3779b97f4a7c15ULL

static uint64_t splitmix64(uint64_t *x)
{
    return rng_mix64(*x += GAMMA);
}

uint64_t rng_split(uint64_t seed, uint64_t k)
{
    return rng_mix64(seed + GAMMA * k);
}

uint64_t rng_mix3(uint64_t a, uint64_t b, uint64_t c)
{
    return rng_mix64(a ^ (b + GAMMA) * 0xbf58476d1ce4e5b9ULL ^ (c + 0x632be59bd9b4e019ULL) * 0x94d049bb133111ebULL);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Same seed, same stream, on every platform. splitmix64 never yields the
 * all-zero state xoshiro must avoid (its outputs are a bijection of
 * distinct counters, so four zeros in a row cannot happen). */
void rng_seed(Rng *r, uint64_t seed)
{
    rng_seed_at(r, seed, 0);
}

void rng_seed_at(Rng *r, uint64_t seed, uint64_t k)
{
    uint64_t x = seed + GAMMA * k;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    r->spare_normal = 0;
    r->has_spare = 0;
}

/* Next 64 random bits; advances r. Period 2^256 - 1. */
uint64_t rng_next(Rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* The top 53 bits scaled by 2^-53: every double in [0,1) on that grid,
 * never 1.0. */
double rng_uniform(Rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* Standard normal. Marsaglia's polar method: two normals per accepted
 * pair, the second kept in r for the next call. */
double rng_normal(Rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare_normal;
    }
    double u, v, s;
    do {
        u = 2.0 * rng_uniform(r) - 1.0;
        v = 2.0 * rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double m = sqrt(-2.0 * log(s) / s);
    r->spare_normal = v * m;
    r->has_spare = 1;
    return u * m;
}

/* Poisson(lambda). Knuth's product of uniforms for small lambda (expected
 * lambda+1 draws); for lambda >= 10 Hoermann's PTRS transformed rejection
 * (1993), O(1) draws. lgamma_r, not lgamma: lgamma writes the global
 * 'signgam', a data race between threads. */
double rng_poisson(Rng *r, double lambda)
{
    if (isnan(lambda))
        return NAN;
    if (!(lambda > 0))
        return 0;
    if (lambda < 10) {
        double limit = exp(-lambda), p = 1.0;
        double k = -1;
        do {
            k++;
            p *= rng_uniform(r);
        } while (p > limit);
        return k;
    }
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam;
    double a = -0.059 + 0.02483 * b;
    double invalpha = 1.1239 + 1.1328 / (b - 3.4);
    double vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double U = rng_uniform(r) - 0.5;
        double V = rng_uniform(r);
        double us = 0.5 - fabs(U);
        double k = floor((2 * a / us + b) * U + lambda + 0.43);
        if (us >= 0.07 && V <= vr)
            return k;
        if (k < 0 || (us < 0.013 && V > us))
            continue;
        int sign;
        if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lambda + k * loglam - lgamma_r(k + 1, &sign))
            return k;
    }
}

/* Uniform in [0, n), 0 when n is 0. Lemire's multiply-shift with rejection:
 * unbiased, and almost always a single draw. */
uint64_t rng_below(Rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n;    /* 2^64 mod n */
        while (low < threshold) {
            m = (unsigned __int128)rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* A different seed on every call, also for calls in the same nanosecond
 * from different threads: clock, a process-wide counter, and addresses
 * (stack and ASLR) mixed through splitmix64. */
uint64_t rng_fresh_seed(void)
{
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t c = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    x ^= rotl(c * GAMMA, 17);
    x ^= rotl((uint64_t)(uintptr_t)&ts, 31) ^ rotl((uint64_t)(uintptr_t)&counter, 7);
    splitmix64(&x);
    return splitmix64(&x);
}
