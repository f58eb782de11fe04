/* SPDX-License-Identifier: Apache-2.0
 * runtime/pool.c: every part of a call runs exactly once, on 1 to 8
 * threads, and no part runs after pool_run returns, also when the parts
 * take uneven time (a helper then often starts after the caller took the
 * last part: it must leave without touching the call's context, which
 * lives on the caller's stack and is gone when pool_run returns). Run under
 * ASan and TSan by the suite (tests/run.sh's THREADED_UNITS). */
#include "../../runtime/pool.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum { MAX_PARTS = 64 };

typedef struct Counts {
    atomic_int hits[MAX_PARTS];
    int slow;               /* parts p with p % slow == 0 sleep a little (0: none) */
} Counts;

static void count_part(void *ctx, int part)
{
    Counts *c = ctx;
    if (c->slow && part % c->slow == 0) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add_explicit(&c->hits[part], 1, memory_order_relaxed);
}

/* One call on a fresh stack frame; true when each of the n parts ran once. */
static bool one_call(const Interp *I, int n, int slow, int *after)
{
    Counts c;
    memset(&c, 0, sizeof c);
    c.slow = slow;
    pool_run(I, count_part, &c, n);
    bool ok = true;
    for (int p = 0; p < MAX_PARTS; p++)
        ok = ok && atomic_load(&c.hits[p]) == (p < n ? 1 : 0);
    /* Any part still running after the return would add here. */
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
    int sum = 0;
    for (int p = 0; p < MAX_PARTS; p++)
        sum += atomic_load(&c.hits[p]);
    *after = sum;
    return ok;
}

static void test_parts_once(void)
{
    static const int ns[] = {0, 1, 2, 3, 5, 17, 64};
    for (int threads = 1; threads <= 8; threads++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int slow = 0; slow <= 3; slow++) {
                Interp I;
                interp_init(&I, NULL, 1);
                I.in_parallel = true;
                I.blas_threads = threads;
                bool all = true, none_after = true;
                for (int rep = 0; rep < 10; rep++) {
                    int after = 0;
                    all = all && one_call(&I, ns[ni], slow, &after);
                    none_after = none_after && after == ns[ni];
                }
                check_report_(all, __FILE__, __LINE__, "pool_run: %d parts on %d threads (slow %d) each once", ns[ni],
                              threads, slow);
                check_report_(none_after, __FILE__, __LINE__, "pool_run: %d parts on %d threads: none after return",
                              ns[ni], threads);
                interp_destroy(&I);
            }
}

int main(void)
{
    test_parts_once();
    return CHECK_DONE();
}
