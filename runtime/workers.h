/* SPDX-License-Identifier: Apache-2.0
 * Threads that run DML beside the caller: parfor's chunks, paramserv's
 * server and local workers, a paramserv worker rank's worker. Each has an
 * Interp of its own over the shared, read-only Program (DESIGN.md), a stack
 * as large as the main thread's usual one, and a share of the thread budget
 * (runtime/blas.h). The pattern, for n workers:
 *     Workers ws;
 *     workers_begin(&ws, n);                      // n workers share the budget
 *     worker_interp_init(&w[i].I, prog, seed, &abort, ws.share, out);
 *     ok = worker_start(&w[i].thread, fn, &w[i]); // fn calls worker_enter first
 *     ...wait for and join the threads...
 *     workers_end(&ws);                           // restores the BLAS count
 * How a worker's error reaches the caller is the caller's: parfor takes the
 * first in iteration order, paramserv the first to arrive (ps_fail). */
#ifndef DML_RUNTIME_WORKERS_H
#define DML_RUNTIME_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "interp.h"

/* Stack of each worker thread: DML recursion inside a worker (parfor body,
 * paramserv's upd/agg) gets the room it has on the main thread. */
#define WORKER_STACK ((size_t)64 << 20)

typedef struct Workers {
    int share;      /* threads each worker's kernels may use; 0: one (see pool.h) */
    int saved;      /* the BLAS thread count before, for workers_end */
} Workers;

/* n > 0 workers will run at once: BLAS and each worker get budget / n
 * threads (ws->share), so workers x threads stay within the budget.
 * n == 0: the workers run elsewhere (worker ranks); nothing changes. */
void workers_begin(Workers *ws, int n);
/* After the workers are joined: the BLAS thread count from before. */
void workers_end(Workers *ws);

/* Sets up a worker's Interp: over 'prog', its RNG seeded with 'seed', it
 * stops when *abort is set, runs nested parfors sequentially, lets its
 * kernels use 'threads' threads (0: one) and prints to 'out'. The caller
 * gives it a frame. */
void worker_interp_init(Interp *w, Program *prog, uint64_t seed, atomic_int *abort, int threads,
                        FILE *out);
/* Starts fn(arg) on a new thread of WORKER_STACK bytes of stack, joinable;
 * false when the thread cannot be started. */
bool worker_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* The first call on a worker thread, with the Interp it runs: DML may use
 * the thread's stack from here on. */
void worker_enter(Interp *w);

#endif
