/* SPDX-License-Identifier: Apache-2.0
 * The only door to BLAS (blas.c is the only includer of cblas.h). Also picks
 * the OpenBLAS kernel for the CPU and controls the BLAS thread count. */
#ifndef DML_RUNTIME_BLAS_H
#define DML_RUNTIME_BLAS_H

#include <stdbool.h>
#include <stdint.h>

/* Row-major C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C. */
void blas_dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                double *C, int64_t ldc);
/* Row-major y = alpha * op(A) x + beta * y, A stored m x n with leading
 * dimension lda; y has n entries when transA, else m. */
void blas_dgemv(bool transA, int64_t m, int64_t n, double alpha, const double *A, int64_t lda,
                const double *x, double beta, double *y);
/* Number of BLAS threads for calls from now on (process-wide in OpenBLAS). */
void blas_set_threads(int n);
int blas_get_threads(void);
/* The thread budget: how many threads the process keeps busy at most
 * (--threads / DML_THREADS; default the online cores). Code that runs
 * several workers, each calling BLAS and the element-wise kernels (parfor,
 * paramserv), gives each worker budget / workers threads (at least 1), so
 * workers x threads per worker <= budget:
 *     int saved = blas_budget_enter(k);          // before starting k workers
 *     worker_interp.blas_threads = blas_budget_share(k);
 *     ...join the workers...
 *     blas_budget_leave(saved);
 * blas_budget_set is called once by main() before any thread starts; it
 * also sets the BLAS thread count to the budget, and makes idle OpenBLAS
 * threads sleep after ~1 ms instead of spinning for 0.1 s (unless the user
 * set OPENBLAS_THREAD_TIMEOUT). total < 1: the default,
 * OpenBLAS's own count (the cores, or OPENBLAS_NUM_THREADS). */
void blas_budget_set(int total);
int blas_budget_total(void);
/* Threads per worker when 'workers' share the budget: total / workers, >= 1. */
int blas_budget_share(int workers);
/* Sets the BLAS thread count to blas_budget_share(workers); returns the
 * previous count for blas_budget_leave. */
int blas_budget_enter(int workers);
void blas_budget_leave(int saved);
/* Name of the OpenBLAS kernel in use ("SkylakeX", "Haswell", ...). */
const char *blas_corename(void);
/* Called first thing in main(), before OpenBLAS initialises: if the user did
 * not set OPENBLAS_CORETYPE, choose the best kernel the CPU supports. */
void blas_preinit(void);
/* The same with main()'s argv (blas_preinit reads /proc/self/cmdline).
 * When OPENBLAS_CORETYPE is unset and the loaded kernel is weaker than the
 * CPU allows (SkylakeX for AVX-512, Haswell for AVX2+FMA, SandyBridge for
 * AVX), sets OPENBLAS_CORETYPE and re-executes /proc/self/exe with argv;
 * DML_BLAS_NO_REEXEC=1 stops a loop, DML_BLAS_CORETYPE=name forces a core.
 * Returns only when nothing was re-executed. Call before any thread starts. */
void blas_preinit_argv(char **argv);

#endif
