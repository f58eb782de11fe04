/* SPDX-License-Identifier: Apache-2.0
 * What the standalone kernel benchmarks (dnn_bench.c, lenet_kernels.c) share:
 * the blas_dgemm that runtime/blas.c provides inside dml, so that they link
 * builtins/dnn_kernels.c, builtins/dnn_winograd.c and nothing else of the tree, and the filler of
 * their input arrays. Include it from exactly one file of each program. */
#ifndef DML_BENCH_KERNEL_SHIM_H
#define DML_BENCH_KERNEL_SHIM_H

#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/blas.h"

void blas_dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                double *C, int64_t ldc)
{
    cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, A, (blasint)lda, B, (blasint)ldb, beta,
                C, (blasint)ldc);
}

/* The single-precision Winograd (builtins/dnn_winograd.c) links these;
 * the benchmarks run in double precision. */
void blas_sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, alpha, A, (blasint)lda, B, (blasint)ldb, beta,
                C, (blasint)ldc);
}

bool blas_single(void)
{
    return false;
}

/* the float im2col of builtins/dnn_kernels.c links these (single only) */
void blas_round_float(const double *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)s[i];
}

void blas_widen_float(const float *f, double *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        w[i] = f[i];
}

/* n doubles in [-0.5, 0.5) from a fixed LCG, so every run sees the same data;
 * 'who' names the program in the out-of-memory exit. */
static double *bench_filled(int64_t n, unsigned seed, const char *who)
{
    double *a = malloc((size_t)n * sizeof(double));
    if (!a) {
        fprintf(stderr, "%s: out of memory\n", who);
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (double)(seed >> 8) / 16777216.0 - 0.5;
    }
    return a;
}

#endif
