/* SPDX-License-Identifier: Apache-2.0
 * Kernel threads for one call (contract in pool.h). Starting two threads
 * costs ~20-40 us here, so callers split only work of a millisecond or more. */
#include "pool.h"

#include <pthread.h>

#include "blas.h"

enum { POOL_MAX = 64 };

typedef struct PoolJob {
    void (*fn)(void *ctx, int part);
    void *ctx;
    int part;
} PoolJob;

static void *pool_main(void *arg)
{
    PoolJob *j = arg;
    j->fn(j->ctx, j->part);
    return NULL;
}

int pool_threads(const Interp *I)
{
    /* A worker whose owner did not give it a share (I->blas_threads) keeps
     * to its own thread: its siblings hold the other cores. */
    if (I && I->blas_threads <= 0 && I->in_parallel)
        return 1;
    int n = I && I->blas_threads > 0 ? I->blas_threads : blas_budget_total();
    return n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : n;
}

void pool_run(const Interp *I, void (*fn)(void *ctx, int part), void *ctx, int n)
{
    (void)I;
    if (n > POOL_MAX)
        n = POOL_MAX;
    PoolJob jobs[POOL_MAX];
    pthread_t th[POOL_MAX];
    bool started[POOL_MAX] = {false};
    for (int p = 1; p < n; p++) {
        jobs[p] = (PoolJob){fn, ctx, p};
        started[p] = pthread_create(&th[p], NULL, pool_main, &jobs[p]) == 0;
    }
    fn(ctx, 0);
    for (int p = 1; p < n; p++) {
        if (started[p])
            pthread_join(th[p], NULL);
        else
            fn(ctx, p);
    }
}
