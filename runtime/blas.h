/* SPDX-License-Identifier: Apache-2.0
 * The only door to BLAS (blas.c is the only includer of cblas.h). Also picks
 * the OpenBLAS kernel for the CPU and controls the BLAS thread count. */
#ifndef DML_RUNTIME_BLAS_H
#define DML_RUNTIME_BLAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Row-major C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C. */
void blas_dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                double *C, int64_t ldc);
/* The same in float: sgemm on float operands whatever the precision
 * (the single-precision convolutions, builtins/dnn_winograd.c). */
void blas_sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* d[i] = (float)s[i] and w[i] = f[i], i < n: the conversions of the
 * single-precision paths, vectorised (AVX2 where the CPU has it; exact
 * operations, so the same bits on every ISA). */
void blas_round_float(const double *s, float *d, int64_t n);
void blas_widen_float(const float *f, double *w, int64_t n);
/* Precision of the heavy products: "double" (the default) or "single"
 * (--precision / DML_PRECISION; upstream's sysds.floating.point.precision).
 * In single precision blas_dgemm rounds its operands to float and
 * multiplies with sgemm (float accumulation) from 2^15 multiply-adds up,
 * and Winograd's conv2d passes compute in float (builtins/dnn_winograd.c);
 * storage, scalars and everything else stay double. Returns false for any
 * other name. Call before any thread starts. */
bool blas_precision_set(const char *name);
bool blas_single(void);
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
/* Picks the OpenBLAS kernel (core) by measurement: every core of the
 * library the CPU can run is timed on dgemm and sgemm and the fastest for
 * dgemm is switched to (blas.c says how; cached per CPU and library in
 * $XDG_CACHE_HOME/dml/blas-core or ~/.cache/dml/blas-core). Left alone:
 * a set OPENBLAS_CORETYPE, and an OpenBLAS without DYNAMIC_ARCH.
 * DML_BLAS_CORETYPE=name uses that core, =library keeps OpenBLAS's own
 * pick, =measure measures again (and rewrites the cache). Call once, before
 * any thread of ours starts and before any BLAS call is in flight. */
void blas_choose_core(void);
/* Switches to the fastest core for sgemm where it differs (single
 * precision runs); same conditions as blas_choose_core. */
void blas_prefer_single(void);
/* "Cooperlake (fastest measured; Cooperlake 103/240, SkylakeX ...)": the
 * core in use, how it was chosen, and what was measured, for --stats. */
void blas_core_report(char *buf, size_t cap);

#endif
