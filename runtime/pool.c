/* SPDX-License-Identifier: Apache-2.0
 * Kernel threads for one call (contract in pool.h). Starting two threads
 * costs ~20-40 us here, so callers split only work of a millisecond or more. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>

#include "blas.h"

enum { POOL_MAX = 64 };

/* One call's parts, handed out in order to whichever thread asks first:
 * when a helper starts late (a loaded machine), the caller takes its parts
 * instead of idling at the join with half the work undone. */
typedef struct PoolJob {
    void (*fn)(void *ctx, int part);
    void *ctx;
    int n;
    atomic_int next;    /* the next part to hand out */
} PoolJob;

static void run_parts(PoolJob *j)
{
    for (;;) {
        int p = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (p >= j->n)
            return;
        j->fn(j->ctx, p);
    }
}

static void *pool_main(void *arg)
{
    run_parts(arg);
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
    if (n <= 0)
        return;
    int threads = pool_threads(I);
    if (threads > n)
        threads = n;
    PoolJob job = {.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&job.next, 0);
    pthread_t th[POOL_MAX];
    int started = 0;
    /* A helper that cannot be started leaves its parts to the others. */
    while (started + 1 < threads && pthread_create(&th[started], NULL, pool_main, &job) == 0)
        started++;
    run_parts(&job);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}
