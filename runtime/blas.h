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
