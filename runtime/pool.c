/* SPDX-License-Identifier: Apache-2.0
 * Kernel threads for one call (contract in pool.h). Starting two threads
 * costs ~20-40 us here, so callers split only work of a millisecond or more. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "blas.h"

enum { POOL_MAX = 64 };

/* One call's parts, handed out in order to whichever thread asks first:
 * when a helper starts late (a loaded machine), the caller takes its parts
 * instead of idling at the join with half the work undone. The call waits
 * for its parts to finish, not for its helpers to exit: a helper that the
 * scheduler has not run yet when the last part is handed out would
 * otherwise hold the caller for its whole wait for a core (1-5 ms a call
 * at a load of 7 on 2 cores: the BSP server's update of LeNet then took
 * longer on 2 threads than on 1). Such a helper finds no part left and
 * exits; the job lives on the heap until its last holder lets go, and no
 * thread touches fn or ctx after its last part is done. */
typedef struct PoolJob {
    void (*fn)(void *ctx, int part);
    void *ctx;
    int n;
    atomic_int next;    /* the next part to hand out */
    atomic_int refs;    /* the caller and each started helper */
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* the caller waits here for done == n */
    int done;           /* parts finished (under mu) */
} PoolJob;

static void job_release(PoolJob *j)
{
    if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static void run_parts(PoolJob *j)
{
    for (;;) {
        int p = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (p >= j->n)
            return;
        j->fn(j->ctx, p);
        pthread_mutex_lock(&j->mu);
        if (++j->done == j->n)
            pthread_cond_signal(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
}

static void *pool_main(void *arg)
{
    run_parts(arg);
    job_release(arg);
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

/* The parts of a call on the caller's thread alone. */
static void run_alone(void (*fn)(void *ctx, int part), void *ctx, int n)
{
    for (int p = 0; p < n; p++)
        fn(ctx, p);
}

void pool_run(const Interp *I, void (*fn)(void *ctx, int part), void *ctx, int n)
{
    if (n <= 0)
        return;
    int threads = pool_threads(I);
    if (threads > n)
        threads = n;
    PoolJob *job = threads > 1 ? malloc(sizeof *job) : NULL;
    pthread_attr_t attr;
    if (!job || pthread_attr_init(&attr) != 0) {
        free(job);
        run_alone(fn, ctx, n);
        return;
    }
    *job = (PoolJob){.fn = fn, .ctx = ctx, .n = n};
    atomic_init(&job->next, 0);
    atomic_init(&job->refs, 1);
    pthread_mutex_init(&job->mu, NULL);
    pthread_cond_init(&job->cv, NULL);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* A helper that cannot be started leaves its parts to the others. */
    for (int t = 1; t < threads; t++) {
        pthread_t th;
        atomic_fetch_add_explicit(&job->refs, 1, memory_order_relaxed);
        if (pthread_create(&th, &attr, pool_main, job) != 0) {
            atomic_fetch_sub_explicit(&job->refs, 1, memory_order_relaxed);
            break;
        }
    }
    pthread_attr_destroy(&attr);
    run_parts(job);
    pthread_mutex_lock(&job->mu);
    while (job->done < n)
        pthread_cond_wait(&job->cv, &job->mu);
    pthread_mutex_unlock(&job->mu);
    job_release(job);
}
