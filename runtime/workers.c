/* SPDX-License-Identifier: Apache-2.0
 * Setting up threads that run DML (contract in workers.h). */
#include "workers.h"

#include "blas.h"

void workers_begin(Workers *ws, int n)
{
    if (n > 0) {
        ws->saved = blas_budget_enter(n);
        ws->share = blas_budget_share(n);
    } else {
        ws->saved = blas_get_threads();
        ws->share = 0;
    }
}

void workers_end(Workers *ws)
{
    blas_budget_leave(ws->saved);
}

void worker_interp_init(Interp *w, Program *prog, uint64_t seed, atomic_int *abort, int threads,
                        FILE *out)
{
    interp_init(w, prog, seed);
    w->interrupt = abort;
    w->in_parallel = true;
    w->blas_threads = threads;
    w->out = out;
}

bool worker_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return false;
    pthread_attr_setstacksize(&attr, WORKER_STACK);
    bool ok = pthread_create(t, &attr, fn, arg) == 0;
    pthread_attr_destroy(&attr);
    return ok;
}

void worker_enter(Interp *w)
{
    interp_stack_init(w, WORKER_STACK);
}
