/* SPDX-License-Identifier: Apache-2.0
 * sqrtMatrixJava(A): the matrix square root upstream computes in Java
 * (LibCommonsMath, commons-math's EigenDecomposition.getSquareRoot, which
 * upstream's DML builtin sqrtMatrix calls for its "Java" strategy). That
 * root is defined for symmetric positive definite A only: B = V sqrt(D) V^T
 * with A = V D V^T, so B %*% B = A and B is symmetric positive definite.
 * Like commons-math we refuse a non-square, non-symmetric (relative
 * tolerance 10 n^2 2^-53) or not positive definite (an eigenvalue <= 0)
 * input. Thread-safe. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/matrix.h"

extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                    double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);

static Status bi_sqrt_matrix_java(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    int64_t N = A->rows;
    if (A->rows != A->cols)
        return err_set(I, "sqrtMatrixJava(): non square (%lldx%lld) matrix", (long long)A->rows,
                       (long long)A->cols);
    if (N > 46340)      /* n*n must fit LAPACK's int */
        return err_oom(I, N, N);
    double tol = 10.0 * (double)N * (double)N * 0x1p-53;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = i + 1; j < N; j++) {
            double x = A->data[i * N + j], y = A->data[j * N + i];
            if (!(fabs(x - y) <= fmax(fabs(x), fabs(y)) * tol))
                return err_set(I, "sqrtMatrixJava(): unsupported operation: the matrix is not symmetric "
                               "(A[%lld,%lld] = %g, A[%lld,%lld] = %g)", (long long)i + 1, (long long)j + 1, x,
                               (long long)j + 1, (long long)i + 1, y);
        }
    for (int64_t i = 0; i < N; i++)
        if (!isfinite(A->data[i * N + i]))
            return err_set(I, "sqrtMatrixJava(): unsupported operation: A[%lld,%lld] = %g", (long long)i + 1,
                           (long long)i + 1, A->data[i * N + i]);
    Matrix *B = mat_alloc_zero(I, N, N);
    if (!B)
        return ST_ERR;
    if (N == 0) {
        *out = val_matrix_take(B);
        return ST_OK;
    }
    int n = (int)N, info = 0, lw = -1, liw = -1, iwq = 0;
    double wq = 0;
    double *v = malloc(sizeof *v * (size_t)(N * N)), *w = malloc(sizeof *w * (size_t)N), *work = NULL;
    int *iwork = NULL;
    Status st = ST_OK;
    if (!v || !w) {
        st = err_oom(I, N, N);
        goto done;
    }
    memcpy(v, A->data, sizeof *v * (size_t)(N * N));     /* symmetric: row- and column-major agree */
    dsyevd_("V", "U", &n, v, &n, w, &wq, &lw, &iwq, &liw, &info, 1, 1);
    lw = (int)wq;
    liw = iwq;
    work = malloc(sizeof *work * (size_t)(lw > 0 ? lw : 1));
    iwork = malloc(sizeof *iwork * (size_t)(liw > 0 ? liw : 1));
    if (!work || !iwork) {
        st = err_oom(I, N, N);
        goto done;
    }
    dsyevd_("V", "U", &n, v, &n, w, work, &lw, iwork, &liw, &info, 1, 1);
    if (info != 0) {
        st = err_set(I, "sqrtMatrixJava(): the eigen decomposition did not converge");
        goto done;
    }
    for (int64_t k = 0; k < N; k++) {
        if (!(w[k] > 0)) {
            st = err_set(I, "sqrtMatrixJava(): unsupported operation: the matrix is not positive definite "
                         "(eigenvalue %g)", w[k]);
            goto done;
        }
        w[k] = sqrt(w[k]);
    }
    /* B = V diag(sqrt w) V^T; column k of V is v[k*N .. k*N+N) */
    for (int64_t k = 0; k < N; k++) {
        const double *vk = v + k * N;
        for (int64_t i = 0; i < N; i++) {
            double s = w[k] * vk[i];
            double *b = B->data + i * N;
            for (int64_t j = 0; j < N; j++)
                b[j] += s * vk[j];
        }
    }
done:
    free(v);
    free(w);
    free(work);
    free(iwork);
    if (st != ST_OK) {
        mat_release(B);
        return st;
    }
    *out = val_matrix_take(B);
    return ST_OK;
}

const BuiltinDef bi_sqrtm_table[] = {
    {"sqrtMatrixJava", bi_sqrt_matrix_java, "A", 1, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
