/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for the seed derivation in runtime/rng.c. Seeded parfor and
 * paramserv runs are reproducible only while these functions give the same
 * bits, so the values are pinned (worked out with the splitmix64 reference
 * formulas): a change to them changes every seeded result. Prints
 * "N passed, N failed"; exits non-zero on failure. */
#include "../../runtime/rng.h"

#include "check.h"

static void test_split(void)
{
    /* parfor iteration k of base seed s: rng_split(s, k + 1) */
    CHECK(rng_split(42, 1) == 0xbdd732262feb6e95ULL);
    CHECK(rng_split(42, 7) == 0x37e9671c45376d5dULL);
    /* the k-th output of splitmix64 from s is what rng_seed puts in s[k-1] */
    Rng r;
    rng_seed(&r, 7);
    CHECK(r.s[0] == 0x63cbe1e459320dd7ULL);
    for (int i = 0; i < 4; i++)
        CHECK(r.s[i] == rng_split(7, (uint64_t)i + 1));
}

static void test_mix3(void)
{
    /* paramserv: the server's seed, and worker 3's (id 2) in epoch 5 */
    CHECK(rng_mix3(42, 0, 0) == 0x1e155f5265eacdc9ULL);
    CHECK(rng_mix3(42, 3, 5) == 0x8f49a835df133df0ULL);
    CHECK(rng_mix3(42, 3, 5) != rng_mix3(42, 5, 3));
}

static void test_seed_at(void)
{
    /* OVERLAP_RESHUFFLE's shuffle for worker 2 (k = 2) */
    Rng r;
    rng_seed_at(&r, 7, 2);
    CHECK(r.s[0] == 0xe6984080bab12a02ULL);
    CHECK(r.s[1] == 0x953aeb70673e29cbULL);
    /* k = 0 is rng_seed, down to the spare normal */
    Rng a, b;
    rng_seed(&a, 99);
    rng_seed_at(&b, 99, 0);
    CHECK(a.s[0] == b.s[0] && a.s[1] == b.s[1] && a.s[2] == b.s[2] && a.s[3] == b.s[3]);
    CHECK(b.has_spare == 0);
    for (int i = 0; i < 8; i++)
        CHECK(rng_next(&a) == rng_next(&b));
}

int main(void)
{
    test_split();
    test_mix3();
    test_seed_at();
    return CHECK_DONE();
}
