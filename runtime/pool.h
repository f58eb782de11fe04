/* SPDX-License-Identifier: Apache-2.0
 * Splitting one kernel over threads: pool_run(I, fn, ctx, n) calls
 * fn(ctx, part) once for each part in [0, n), on the calling thread and on
 * up to pool_threads(I) - 1 threads started for the call; it returns when
 * every part is done (a helper still starting then finds no part and exits
 * without touching fn or ctx; none waits idle). Parts go to
 * whichever thread is free, in order, so cutting the work into a few parts
 * per thread keeps a helper that the scheduler starts late from holding
 * up the call. The thread count comes from the thread budget
 * (pool_threads), so kernels never oversubscribe the cores. */
#ifndef DML_RUNTIME_POOL_H
#define DML_RUNTIME_POOL_H

#include "interp.h"

/* Threads a kernel running on I's thread may use: I->blas_threads when set
 * (paramserv/parfor workers get their share: blas_budget_share), else 1 on
 * a worker (I->in_parallel), else the process budget. */
int pool_threads(const Interp *I);
/* Runs fn(ctx, part) for part in [0, n), each exactly once, on at most
 * pool_threads(I) threads (the caller's included); returns when all are
 * done. When a thread cannot be started the others take its parts. */
void pool_run(const Interp *I, void (*fn)(void *ctx, int part), void *ctx, int n);

#endif
