/* SPDX-License-Identifier: Apache-2.0
 * Linear-algebra builtins: solve, inv/inverse, det, cholesky and the
 * multi-return eigen, lu, qr, svd. Factorisations call the LAPACK that
 * OpenBLAS ships (Fortran symbols declared below). Our matrices are
 * row-major and LAPACK is column-major, so inputs and outputs are converted
 * (or, where the transpose does not matter, reinterpreted). qr follows the
 * Householder layout of upstream's commons-math (H, R). Thread-safe. */
#include "registry.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* ---- LAPACK (Fortran ABI: everything by pointer, hidden string lengths) ---- */
extern void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b, const int *ldb,
                   int *info);
extern void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a, const int *lda,
                   double *b, const int *ldb, double *work, const int *lwork, int *info, size_t);
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work, const int *lwork,
                    int *info);
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t);
extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                    double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);
extern void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s, double *u,
                    const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *iwork,
                    int *info, size_t);

/* ================================ helpers =============================== */

static Status check_lapack_dims(Interp *I, const char *fn, int64_t r, int64_t c)
{
    if (r > INT_MAX / 2 || c > INT_MAX / 2 || (r && c > (int64_t)INT_MAX / r))
        return err_set(I, "%s(): matrix too large for LAPACK (%lldx%lld)", fn, LL(r), LL(c));
    return ST_OK;
}

static Status check_square(Interp *I, const char *fn, const Matrix *x)
{
    if (x->rows != x->cols) {
        /* upstream LibCommonsMath's wording for inv and cholesky, and eigen's */
        if (!strcmp(fn, "inv") || !strcmp(fn, "inverse") || !strcmp(fn, "cholesky"))
            return err_set(I, "Input to %s() must be square matrix -- given: a %lldx%lld matrix.",
                           strcmp(fn, "cholesky") ? "inv" : fn, LL(x->rows), LL(x->cols));
        if (!strcmp(fn, "eigen"))
            return err_set(I, "Eigen Decomposition can only be done on a square matrix. Input matrix is rectangular "
                           "(rows=%lld, cols=%lld)", LL(x->rows), LL(x->cols));
        return err_set(I, "%s(): matrix must be square, got %lldx%lld", fn, LL(x->rows), LL(x->cols));
    }
    return check_lapack_dims(I, fn, x->rows, x->cols);
}

/* malloc'd column-major copy of x (NULL and an error on OOM). */
static double *to_colmajor(Interp *I, const Matrix *x)
{
    int64_t R = x->rows, C = x->cols;
    double *b = malloc((size_t)(R * C > 0 ? R * C : 1) * sizeof *b);
    if (!b) {
        err_oom(I, R, C);
        return NULL;
    }
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            b[j * R + i] = x->data[i * C + j];
    return b;
}

/* New R x C matrix from column-major data with leading dimension ld. */
static Matrix *from_colmajor(Interp *I, const double *b, int64_t R, int64_t C, int64_t ld)
{
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return NULL;
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++)
            m->data[i * C + j] = b[j * ld + i];
    return m;
}

/* ================================ solve ================================= */

/* solve(A, b): x with A %*% x = b (least squares for non-square A) */
static Status bi_solve(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A, *B;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(arg_matrix(I, a, 1, &B));
    int64_t m = A->rows, n = A->cols, k = B->cols;
    /* upstream's validate: b is a vector, and one of its sides matches A's rows */
    if (B->rows != 1 && B->cols != 1)
        return err_set(I, "Second input to solve() must be a vector");
    if (B->rows != m && B->cols != m)
        return err_set(I, "Dimension mismatch in a call to solve()");
    if (B->rows != m)
        return err_set(I, "solve(): dimension mismatch: A is %lldx%lld but b is %lldx%lld", LL(m), LL(n),
                       LL(B->rows), LL(B->cols));
    TRY(check_lapack_dims(I, "solve", m, n));
    TRY(check_lapack_dims(I, "solve", m > n ? m : n, k));
    if (m == 0 || n == 0 || k == 0) {
        /* nothing to solve: the (minimum-norm) solution is zero */
        Matrix *z = mat_alloc_zero(I, n, k);
        if (!z) return ST_ERR;
        *out = val_matrix_take(z);
        return ST_OK;
    }
    double *ac = to_colmajor(I, A);
    if (!ac)
        return ST_ERR;
    int64_t ldb = m > n ? m : n;
    double *bc = calloc((size_t)(ldb * k), sizeof *bc);
    Status st = ST_OK;
    Matrix *x = NULL;
    if (!bc) {
        st = err_oom(I, ldb, k);
        goto done;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++)
            bc[j * ldb + i] = B->data[i * k + j];
    int im = (int)m, in = (int)n, ik = (int)k, ild = (int)ldb, info = 0;
    if (m == n) {
        int *piv = malloc((size_t)n * sizeof *piv);
        if (!piv) {
            st = err_oom(I, n, 1);
            goto done;
        }
        dgesv_(&in, &ik, ac, &im, piv, bc, &ild, &info);
        free(piv);
        if (info > 0) {
            st = err_set(I, "solve(): matrix is singular");
            goto done;
        }
    } else {
        double wq;
        int lw = -1;
        dgels_("N", &im, &in, &ik, ac, &im, bc, &ild, &wq, &lw, &info, 1);
        lw = (int)wq;
        double *w = malloc((size_t)(lw > 0 ? lw : 1) * sizeof *w);
        if (!w) {
            st = err_oom(I, lw, 1);
            goto done;
        }
        dgels_("N", &im, &in, &ik, ac, &im, bc, &ild, w, &lw, &info, 1);
        free(w);
        if (info > 0) {
            st = err_set(I, "solve(): matrix does not have full rank");
            goto done;
        }
    }
    if (info < 0) {
        st = err_set(I, "solve(): LAPACK argument error %d", info);
        goto done;
    }
    if (!(x = from_colmajor(I, bc, n, k, ldb))) {
        st = ST_ERR;
        goto done;
    }
    *out = val_matrix_take(x);
done:
    free(ac);
    free(bc);
    return st;
}

/* ============================== inv / det =============================== */

/* inv(A) / inverse(A) */
static Status bi_inv(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(check_square(I, a->def->name, A));
    int n = (int)A->rows, info = 0;
    /* Row-major A read column-major is t(A), and inv(t(A)) = t(inv(A)):
     * inverting the raw data in place yields inv(A) row-major. */
    Matrix *m = mat_clone(I, A);
    if (!m)
        return ST_ERR;
    if (n == 0) {
        *out = val_matrix_take(m);
        return ST_OK;
    }
    int *piv = malloc((size_t)n * sizeof *piv);
    if (!piv) {
        mat_release(m);
        return err_oom(I, n, 1);
    }
    dgetrf_(&n, &n, m->data, &n, piv, &info);
    if (info == 0) {
        double wq;
        int lw = -1;
        dgetri_(&n, m->data, &n, piv, &wq, &lw, &info);
        lw = (int)wq > n ? (int)wq : n;
        double *w = malloc((size_t)lw * sizeof *w);
        if (!w) {
            free(piv);
            mat_release(m);
            return err_oom(I, lw, 1);
        }
        dgetri_(&n, m->data, &n, piv, w, &lw, &info);
        free(w);
    }
    free(piv);
    if (info != 0) {
        mat_release(m);
        return err_set(I, "%s(): matrix is singular", a->def->name);
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* det(A) */
static Status bi_det(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(check_square(I, "det", A));
    int n = (int)A->rows, info = 0;
    if (n == 0) {
        *out = val_double(1.0);
        return ST_OK;
    }
    double *lu = malloc((size_t)n * (size_t)n * sizeof *lu);
    int *piv = malloc((size_t)n * sizeof *piv);
    if (!lu || !piv) {
        free(lu);
        free(piv);
        return err_oom(I, n, n);
    }
    memcpy(lu, A->data, (size_t)n * (size_t)n * sizeof *lu);   /* det(t(A)) = det(A) */
    dgetrf_(&n, &n, lu, &n, piv, &info);
    double d = 1;
    for (int i = 0; i < n; i++) {
        d *= lu[(size_t)i * n + i];
        if (piv[i] != i + 1)
            d = -d;
    }
    free(lu);
    free(piv);
    *out = val_double(d);
    return ST_OK;
}

/* cholesky(A): lower-triangular L with A = L %*% t(L) */
static Status bi_cholesky(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(check_square(I, "cholesky", A));
    int n = (int)A->rows, info = 0;
    Matrix *m = mat_clone(I, A);
    if (!m)
        return ST_ERR;
    if (n > 0) {
        /* Column-major view of symmetric A is A; the upper factor U (A = U'U)
         * stored column-major reads row-major as L = t(U). */
        dpotrf_("U", &n, m->data, &n, &info, 1);
        if (info != 0) {
            mat_release(m);
            return err_set(I, "cholesky(): matrix is not positive definite");
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++)
                m->data[i * n + j] = 0.0;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ============================ multi-return ============================== */

/* [w, V] = eigen(A): eigenvalues ascending (n x 1), eigenvectors as columns */
static Status bi_eigen(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(check_square(I, "eigen", A));
    int64_t N = A->rows;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = i + 1; j < N; j++) {
            double x = A->data[i * N + j], y = A->data[j * N + i];
            if (fabs(x - y) > 1e-10 * (fabs(x) + fabs(y) + 1e-300) && !(isnan(x) && isnan(y)))
                return err_set(I, "Eigen Decomposition can only be done on a symmetric matrix. "
                               "Input matrix is not symmetric.");
        }
    int n = (int)N, info = 0;
    Matrix *w = mat_alloc(I, N, 1);
    Matrix *V = NULL;
    double *ac = NULL, *work = NULL;
    int *iwork = NULL;
    if (!w)
        return ST_ERR;
    if (n == 0) {
        if (!(V = mat_alloc(I, 0, 0)))
            goto fail;
        goto ok;
    }
    if (!(ac = malloc((size_t)n * (size_t)n * sizeof *ac))) {
        err_oom(I, N, N);
        goto fail;
    }
    memcpy(ac, A->data, (size_t)n * (size_t)n * sizeof *ac);
    double wq;
    int lw = -1, iwq, liw = -1;
    dsyevd_("V", "U", &n, ac, &n, w->data, &wq, &lw, &iwq, &liw, &info, 1, 1);
    lw = (int)wq;
    liw = iwq;
    work = malloc((size_t)(lw > 0 ? lw : 1) * sizeof *work);
    iwork = malloc((size_t)(liw > 0 ? liw : 1) * sizeof *iwork);
    if (!work || !iwork) {
        err_set(I, "eigen(): out of memory");
        goto fail;
    }
    dsyevd_("V", "U", &n, ac, &n, w->data, work, &lw, iwork, &liw, &info, 1, 1);
    if (info != 0) {
        err_set(I, "eigen(): the eigen decomposition did not converge");
        goto fail;
    }
    if (!(V = from_colmajor(I, ac, N, N, N)))
        goto fail;
ok:
    free(ac);
    free(work);
    free(iwork);
    {
        Value res[2] = {val_matrix_take(w), val_matrix_take(V)};
        bi_set_outs_take(a, out, res, 2);
    }
    return ST_OK;
fail:
    free(ac);
    free(work);
    free(iwork);
    mat_release(w);
    if (V)
        mat_release(V);
    return ST_ERR;
}

/* [P, L, U] = lu(A): P %*% A = L %*% U, L unit lower, U upper */
static Status bi_lu(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    if (A->rows != A->cols)
        return err_set(I, "LU Decomposition can only be done on a square matrix. Input matrix is rectangular "
                       "(rows=%lld, cols=%lld)", LL(A->rows), LL(A->cols));
    TRY(check_lapack_dims(I, "lu", A->rows, A->cols));
    int64_t N = A->rows;
    int n = (int)N, info = 0;
    Matrix *P = mat_alloc_zero(I, N, N), *L = mat_alloc_zero(I, N, N), *U = mat_alloc_zero(I, N, N);
    double *ac = to_colmajor(I, A);
    int *piv = malloc((size_t)(n ? n : 1) * sizeof *piv);
    int64_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!P || !L || !U || !ac || !piv || !perm) {
        free(ac);
        free(piv);
        free(perm);
        mat_release(P);
        mat_release(L);
        mat_release(U);
        return err_oom(I, N, N);
    }
    if (n > 0)
        dgetrf_(&n, &n, ac, &n, piv, &info);   /* info > 0: singular, factors still valid */
    for (int64_t i = 0; i < N; i++)
        perm[i] = i;
    for (int64_t i = 0; i < N; i++) {
        int64_t j = piv[i] - 1, t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int64_t i = 0; i < N; i++) {
        P->data[i * N + perm[i]] = 1.0;
        for (int64_t j = 0; j < N; j++) {
            double v = ac[j * N + i];
            if (j < i) L->data[i * N + j] = v;
            else U->data[i * N + j] = v;
        }
        L->data[i * N + i] = 1.0;
    }
    free(ac);
    free(piv);
    free(perm);
    {
        Value res[3] = {val_matrix_take(P), val_matrix_take(L), val_matrix_take(U)};
        bi_set_outs_take(a, out, res, 3);
    }
    return ST_OK;
}

/* [H, R] = qr(A): Householder vectors H (m x n, lower trapezoidal) and R
 * (m x n, upper), in the layout of commons-math's QRDecomposition. */
static Status bi_qr(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    int64_t m = A->rows, n = A->cols, p = m < n ? m : n;
    /* qrt = t(A): n rows of length m (row-major A read column-major) */
    double *qrt = to_colmajor(I, A);
    double *rdiag = malloc((size_t)(p ? p : 1) * sizeof *rdiag);
    Matrix *H = mat_alloc_zero(I, m, n), *R = mat_alloc_zero(I, m, n);
    if (!qrt || !rdiag || !H || !R) {
        free(qrt);
        free(rdiag);
        mat_release(H);
        mat_release(R);
        if (!I->err.msg)
            err_oom(I, m, n);
        return ST_ERR;
    }
    for (int64_t minor = 0; minor < p; minor++) {
        double *qm = qrt + minor * m;
        double xn = 0;
        for (int64_t row = minor; row < m; row++)
            xn += qm[row] * qm[row];
        double al = qm[minor] > 0 ? -sqrt(xn) : sqrt(xn);
        rdiag[minor] = al;
        if (al != 0.0) {
            qm[minor] -= al;
            for (int64_t col = minor + 1; col < n; col++) {
                double *qc = qrt + col * m;
                double alpha = 0;
                for (int64_t row = minor; row < m; row++)
                    alpha -= qc[row] * qm[row];
                alpha /= al * qm[minor];
                for (int64_t row = minor; row < m; row++)
                    qc[row] -= alpha * qm[row];
            }
        }
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < (i + 1 < n ? i + 1 : n) && j < p; j++)
            H->data[i * n + j] = qrt[j * m + i] / -rdiag[j];
    for (int64_t row = p - 1; row >= 0; row--) {
        R->data[row * n + row] = rdiag[row];
        for (int64_t col = row + 1; col < n; col++)
            R->data[row * n + col] = qrt[col * m + row];
    }
    free(qrt);
    free(rdiag);
    Value res[2] = {val_matrix_take(H), val_matrix_take(R)};
    bi_set_outs_take(a, out, res, 2);
    return ST_OK;
}

/* [U, S, V] = svd(A): A = U %*% S %*% t(V), S diagonal (compact: p = min(m, n)) */
static Status bi_svd(Interp *I, const BArgs *a, Value *out)
{
    Matrix *A;
    TRY(arg_matrix(I, a, 0, &A));
    TRY(check_lapack_dims(I, "svd", A->rows, A->cols));
    int64_t M = A->rows, N = A->cols, P = M < N ? M : N;
    Matrix *U = NULL, *S = NULL, *V = NULL;
    double *ac = NULL, *s = NULL, *u = NULL, *vt = NULL, *work = NULL;
    int *iwork = NULL;
    if (P == 0) {
        U = mat_alloc_zero(I, M, 0);
        S = mat_alloc_zero(I, 0, 0);
        V = mat_alloc_zero(I, N, 0);
        if (!U || !S || !V)
            goto fail;
        goto ok;
    }
    int m = (int)M, n = (int)N, p = (int)P, info = 0;
    ac = to_colmajor(I, A);
    s = malloc((size_t)p * sizeof *s);
    u = malloc((size_t)M * (size_t)P * sizeof *u);
    vt = malloc((size_t)P * (size_t)N * sizeof *vt);
    iwork = malloc((size_t)8 * (size_t)p * sizeof *iwork);
    if (!ac || !s || !u || !vt || !iwork) {
        if (!I->err.msg) err_oom(I, M, N);
        goto fail;
    }
    double wq;
    int lw = -1;
    dgesdd_("S", &m, &n, ac, &m, s, u, &m, vt, &p, &wq, &lw, iwork, &info, 1);
    lw = (int)wq;
    if (!(work = malloc((size_t)(lw > 0 ? lw : 1) * sizeof *work))) {
        err_set(I, "svd(): out of memory");
        goto fail;
    }
    dgesdd_("S", &m, &n, ac, &m, s, u, &m, vt, &p, work, &lw, iwork, &info, 1);
    if (info != 0) {
        err_set(I, "svd(): the singular value decomposition did not converge");
        goto fail;
    }
    if (!(U = from_colmajor(I, u, M, P, M)) || !(S = mat_alloc_zero(I, P, P)) || !(V = mat_alloc(I, N, P)))
        goto fail;
    for (int64_t i = 0; i < P; i++)
        S->data[i * P + i] = s[i];
    /* V = t(VT); VT is P x N column-major, so V[j][i] = vt[j * P + i] */
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < P; i++)
            V->data[j * P + i] = vt[j * P + i];
ok:
    free(ac); free(s); free(u); free(vt); free(work); free(iwork);
    {
        Value res[3] = {val_matrix_take(U), val_matrix_take(S), val_matrix_take(V)};
        bi_set_outs_take(a, out, res, 3);
    }
    return ST_OK;
fail:
    free(ac); free(s); free(u); free(vt); free(work); free(iwork);
    mat_release(U);
    mat_release(S);
    mat_release(V);
    if (!I->err.msg)
        err_oom(I, M, N);
    return ST_ERR;
}

const BuiltinDef bi_linalg_table[] = {
    {"solve", bi_solve, "A,b", 2, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"inv", bi_inv, "A", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"inverse", bi_inv, "A", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"det", bi_det, "A", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"cholesky", bi_cholesky, "A", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"eigen", bi_eigen, "A", 1, BIND_POS, 2, BF_MULTI},
    {"lu", bi_lu, "A", 1, BIND_POS, 3, BF_MULTI},
    {"qr", bi_qr, "A", 1, BIND_POS, 2, BF_MULTI},
    {"svd", bi_svd, "A", 1, BIND_POS, 3, BF_MULTI},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
