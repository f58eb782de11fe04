/* SPDX-License-Identifier: Apache-2.0
 * The CSR storage (base/sparse.c) and its kernels (runtime/sparse_ops.c)
 * against the dense path on the same values: random shapes and densities,
 * empty rows and columns, 0x0 and 1x1, NaN, Inf and huge values among the
 * non-zeros.
 * - aggregates: the builtins (sum, mean, max, min, row and column sums,
 *   means, maxs, mins) to the bit, sign of zero included;
 * - products: to the bit against a dense row-major triple loop (the order
 *   the sparse kernels sum in), NaN cells included, and to rounding
 *   against BLAS (mat_matmul_t), whose blocked FMA order differs, on the
 *   finite cells (where Inf meets a zero, OpenBLAS gives NaN or Inf
 *   depending on the kernel: it skips some zero terms);
 * - element-wise, cbind/rbind, diag, t: the builtins and operators cell by
 *   cell (a dense -0.0 is +0.0 in CSR, so zeros compare without sign);
 * - every kernel the same to the bit on 1 and 4 threads;
 * - rand: the cell-wise stream gives the dense rand's matrix for a seed. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sparse.h"
#include "base/value.h"
#include "builtins/registry.h"
#include "check.h"
#include "runtime/interp.h"
#include "runtime/matrix.h"
#include "runtime/ops.h"
#include "runtime/rng.h"
#include "runtime/sparse_ops.h"

/* ---- helpers ---- */

/* Equal as values: NaN equals NaN, +0 equals -0. */
static bool same_val(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* Equal to the bit (check.h's rule: sign of zero counts, NaN equals NaN). */
static bool same_bits(double a, double b)
{
    return check_same_double_(a, b);
}

/* Index of the first cell where a and b differ (by 'eq'), or -1. */
static int64_t first_diff(const double *a, const double *b, int64_t n, bool (*eq)(double, double))
{
    for (int64_t i = 0; i < n; i++)
        if (!eq(a[i], b[i]))
            return i;
    return -1;
}

#define CHECK_ARR(a, b, n, eq, what) do { \
        int64_t d_ = first_diff((a), (b), (n), (eq)); \
        check_report_(d_ < 0, __FILE__, __LINE__, "%s: cell %lld differs (%.17g vs %.17g)", (what), \
                      (long long)d_, d_ >= 0 ? (a)[d_] : 0.0, d_ >= 0 ? (b)[d_] : 0.0); \
    } while (0)

/* A value for a non-zero: mostly of mixed magnitude (so Kahan corrections
 * are non-zero), sometimes NaN, +-Inf or near the overflow threshold when
 * 'special' is set. Never 0 or -0. */
static double rand_nz(Rng *g, bool special)
{
    if (special && rng_below(g, 12) == 0) {
        static const double sp[] = {NAN, INFINITY, -INFINITY, 1e308, -1e308, 1.5e308};
        return sp[rng_below(g, 6)];
    }
    double v;
    switch (rng_below(g, 3)) {
    case 0: v = (double)(1 + rng_below(g, 9)); break;          /* small integers: exact sums */
    case 1: v = rng_uniform(g) * 4 - 2; break;
    default: v = (rng_uniform(g) - 0.5) * pow(10.0, (double)rng_below(g, 33) - 16); break;
    }
    if (v == 0)
        v = 0.5;
    return rng_below(g, 2) ? v : -v;
}

/* Dense r x c with about 'dens' non-zeros, some rows and columns emptied. */
static double *gen_dense(Rng *g, int64_t r, int64_t c, double dens, bool special)
{
    double *x = calloc((size_t)(r * c) + 1, sizeof *x);
    for (int64_t k = 0; k < r * c; k++)
        if (rng_uniform(g) < dens)
            x[k] = rand_nz(g, special);
    if (r > 2 && rng_below(g, 2))
        for (int64_t j = 0; j < c; j++)
            x[rng_below(g, (uint64_t)r) * c + j] = 0;
    if (c > 2 && rng_below(g, 2)) {
        int64_t j = (int64_t)rng_below(g, (uint64_t)c);
        for (int64_t i = 0; i < r; i++)
            x[i * c + j] = 0;
    }
    return x;
}

static Matrix *dense_mat(const double *x, int64_t r, int64_t c)
{
    Matrix *m = mat_new_raw(r, c);
    if (r * c > 0)
        memcpy(m->data, x, (size_t)(r * c) * sizeof *x);
    return m;
}

/* Calls builtin 'name' on positional values; the result (owned) or none. */
static Value call(Interp *I, const char *name, const Value *v, int n)
{
    const BuiltinDef *d = builtin_find(name);
    if (!d) {
        check_report_(false, __FILE__, __LINE__, "no builtin %s", name);
        return val_none();
    }
    int np = d->bind == BIND_VARIADIC ? n : builtin_nparams(d);
    Value args[16], res[8];
    for (int i = 0; i < 16; i++)
        args[i] = i < n ? v[i] : val_none();
    memset(res, 0, sizeof res);
    BArgs a = {.def = d, .v = args, .names = NULL, .n = np, .loc = NULL, .nout = d->nout};
    if (d->fn(I, &a, res) != ST_OK) {
        check_report_(false, __FILE__, __LINE__, "%s(): %s", name, I->err.msg ? I->err.msg : "?");
        err_clear(I);
        return val_none();
    }
    for (int i = 1; i < d->nout; i++)
        val_release(res[i]);
    /* the builtin may hold its result sparse (DML_SPARSE_MIN_CELLS=0): the
     * checks read the dense cells */
    if (res[0].kind == VAL_MATRIX && res[0].m->sp && val_densify(I, &res[0], name) != ST_OK) {
        check_report_(false, __FILE__, __LINE__, "%s(): %s", name, I->err.msg ? I->err.msg : "?");
        err_clear(I);
        return val_none();
    }
    return res[0];
}

static Value call1(Interp *I, const char *name, Matrix *m)
{
    Value v = val_matrix_take(m);
    Value r = call(I, name, &v, 1);
    val_release(v);
    return r;
}

/* rowSums / rowMeans of the sparse form (doc/sparse.md): the dense
 * kernel's sum of each row's non-zeros packed together (the dense rowSums
 * of a 1 x n matrix of them), / cols for a mean; where a mean is not finite,
 * the dense result ('dense', r cells) of the same matrix. */
static void packed_row_sums(Interp *I, const double *x, int64_t r, int64_t c, bool mean, const double *dense,
                            double *want)
{
    double *row = malloc((size_t)c * sizeof *row + 8);
    for (int64_t i = 0; i < r; i++) {
        int64_t n = 0;
        for (int64_t j = 0; j < c; j++)
            if (x[i * c + j] != 0)
                row[n++] = x[i * c + j];
        double s = 0;
        if (n > 0) {
            Value v = call1(I, "rowSums", dense_mat(row, 1, n));
            s = v.kind == VAL_MATRIX ? v.m->data[0] : NAN;
            val_release(v);
        }
        want[i] = mean ? s / (double)c : s;
        if (mean && !isfinite(want[i]))
            want[i] = dense[i];
    }
    free(row);
}

/* The dense form of s, malloc'd (one spare cell so 0x0 is not NULL). */
static double *to_dense(const SpMat *s)
{
    double *d = malloc((size_t)(s->rows * s->cols + 1) * sizeof *d);
    sp_to_dense(s, d);
    return d;
}

/* s must satisfy the invariants and hold exactly the values of d (r x c). */
static void check_sparse_is(const SpMat *s, const double *d, int64_t r, int64_t c, const char *what)
{
    if (!check_report_(s != NULL, __FILE__, __LINE__, "%s: NULL result", what))
        return;
    const char *bad = sp_check(s);
    check_report_(bad == NULL, __FILE__, __LINE__, "%s: %s", what, bad ? bad : "");
    check_report_(s->rows == r && s->cols == c, __FILE__, __LINE__, "%s: shape %lldx%lld, want %lldx%lld", what,
                  (long long)s->rows, (long long)s->cols, (long long)r, (long long)c);
    if (s->rows != r || s->cols != c)
        return;
    double *x = to_dense(s);
    CHECK_ARR(x, d, r * c, same_val, what);
    free(x);
}

/* ---- tests ---- */

static void test_format(void)
{
    CHECK(sp_prefer_sparse(1000, 1000, 1000));
    CHECK(sp_prefer_sparse(1000, 1000, 399999));
    CHECK(!sp_prefer_sparse(1000, 1000, 400000));       /* at the turn point */
    if (sp_min_cells() == SP_MIN_CELLS) {                /* not under the DML_SPARSE_MIN_CELLS debug switch */
        CHECK(!sp_prefer_sparse(10, 10, 1));            /* too small to matter */
        CHECK(!sp_prefer_sparse(1000000, 1, 1));        /* a column vector: CSR is not smaller */
    }
    CHECK(sp_prefer_sparse(1, 1000000, 1));             /* a row vector is */
    CHECK(!sp_prefer_sparse(2, (int64_t)INT32_MAX + 1, 1));
    CHECK(!sp_prefer_sparse(0, 0, 0));
    /* 12 bytes per non-zero plus 8 per row (and the header) */
    CHECK_INT(sp_bytes(1000, 0) + 12 * 10, sp_bytes(1000, 10));
    CHECK_INT(sp_bytes(2000, 0) - sp_bytes(1000, 0), 8000);
    CHECK_INT(sp_dense_bytes(1000, 1000), 8000000);
    CHECK(sp_dense_bytes(INT64_MAX, 2) == UINT64_MAX);
    CHECK(sp_new(-1, 2, 0) == NULL);
    CHECK(sp_new(2, (int64_t)INT32_MAX + 1, 0) == NULL);
    SpMat *e = sp_new(0, 0, 0);
    CHECK(e && sp_check(e) == NULL && e->nnz == 0);
    sp_free(e);
    sp_free(NULL);
}

/* Shapes: the corner ones first, then random. */
static void pick_shape(Rng *g, int t, int64_t *r, int64_t *c)
{
    static const int64_t fixed[][2] = {{0, 0}, {1, 1}, {0, 5}, {5, 0}, {1, 17}, {17, 1}, {16, 16}, {3, 33}};
    int nf = (int)(sizeof fixed / sizeof fixed[0]);
    if (t < nf) {
        *r = fixed[t][0];
        *c = fixed[t][1];
        return;
    }
    *r = 1 + (int64_t)rng_below(g, 45);
    *c = 1 + (int64_t)rng_below(g, 45);
}

static double pick_density(Rng *g)
{
    static const double d[] = {0, 0.02, 0.1, 0.3, 0.6, 1.0};
    return d[rng_below(g, 6)];
}

static void test_conversions_and_aggregates(Interp *I, Rng *g)
{
    static const char *const row_fn[] = {"rowSums", "rowMeans", "rowMaxs", "rowMins"};
    static const char *const col_fn[] = {"colSums", "colMeans", "colMaxs", "colMins"};
    static const char *const full_fn[] = {"sum", "mean", "max", "min"};
    for (int t = 0; t < 300; t++) {
        int64_t r, c;
        pick_shape(g, t, &r, &c);
        bool special = t % 3 == 2;
        double *x = gen_dense(g, r, c, pick_density(g), special);
        SpMat *s = sp_from_dense(x, r, c, -1);
        check_sparse_is(s, x, r, c, "sp_from_dense");
        CHECK_INT(s->nnz, sp_count_nnz(x, r * c));
        SpMat *s2 = sp_from_dense(x, r, c, s->nnz);     /* with the count known */
        check_sparse_is(s2, x, r, c, "sp_from_dense(nnz)");
        sp_free(s2);
        SpMat *cl = sp_clone(s);
        check_sparse_is(cl, x, r, c, "sp_clone");
        sp_free(cl);
        for (int op = 0; op < 4; op++) {
            /* full aggregates: max/min of an empty matrix are errors in the builtins */
            if (r * c > 0 || op < 2) {
                Value want = call1(I, full_fn[op], dense_mat(x, r, c));
                double got = sp_full_agg(s, (SpAgg)op);
                check_report_(same_bits(got, val_num(want)), __FILE__, __LINE__, "%s %lldx%lld: %.17g vs %.17g",
                              full_fn[op], (long long)r, (long long)c, got, val_num(want));
            }
            Value want = call1(I, row_fn[op], dense_mat(x, r, c));
            double *got = malloc((size_t)r * sizeof *got + 8);
            sp_row_agg(I, s, (SpAgg)op, got);
            if (want.kind == VAL_MATRIX && op < 2) {
                /* sums: the non-zeros' sum; equal to the dense result to the
                 * bit on rows without zeros, to rounding otherwise */
                double *pk = malloc((size_t)r * sizeof *pk + 8);
                packed_row_sums(I, x, r, c, op == SP_MEAN, want.m->data, pk);
                CHECK_ARR(got, pk, r, same_bits, row_fn[op]);
                for (int64_t i = 0; i < r; i++) {
                    /* against the dense result: the same bits on a row
                     * without zeros; the same value where a cell is not
                     * finite; else within Kahan's error bound, ~2 eps of the
                     * sum of |x| (|x| / c for a mean), when that is finite */
                    double d = want.m->data[i], mag = 0;
                    bool full = true, odd = false;
                    for (int64_t j = 0; j < c; j++) {
                        full = full && x[i * c + j] != 0;
                        odd = odd || !isfinite(x[i * c + j]);
                        mag += fabs(x[i * c + j]);
                    }
                    if (op == SP_MEAN)
                        mag /= (double)c;
                    if (full)
                        check_report_(same_bits(got[i], d), __FILE__, __LINE__, "%s row %lld: %.17g vs dense %.17g",
                                      row_fn[op], (long long)i, got[i], d);
                    else if (odd)
                        check_report_(same_val(got[i], d), __FILE__, __LINE__, "%s row %lld: %.17g vs dense %.17g",
                                      row_fn[op], (long long)i, got[i], d);
                    else if (isfinite(mag))
                        check_report_(fabs(got[i] - d) <= 1e-14 * mag, __FILE__, __LINE__,
                                      "%s row %lld: %.17g vs dense %.17g", row_fn[op], (long long)i, got[i], d);
                }
                free(pk);
            } else if (want.kind == VAL_MATRIX)
                CHECK_ARR(got, want.m->data, r, same_bits, row_fn[op]);
            val_release(want);
            free(got);
            want = call1(I, col_fn[op], dense_mat(x, r, c));
            got = malloc((size_t)c * sizeof *got + 8);
            CHECK(sp_col_agg(I, s, (SpAgg)op, got));
            if (want.kind == VAL_MATRIX)
                CHECK_ARR(got, want.m->data, c, same_bits, col_fn[op]);
            val_release(want);
            free(got);
        }
        sp_free(s);
        free(x);
    }
}

/* Row and column sums of values far larger than their lane's running sum,
 * of both signs, 1e-15 to 1e15, where a Kahan lane can be left in a state
 * that a zero step would still change: the column sums take no step for a
 * zero cell in either form (the dense bits), the row sums are the sums of
 * the packed non-zeros. */
static void test_sums_wide_magnitudes(Interp *I, Rng *g)
{
    static const char *const fn[] = {"rowSums", "rowMeans", "colSums", "colMeans"};
    for (int t = 0; t < 60; t++) {
        int64_t r = 1 + (int64_t)rng_below(g, 70), c = 16 + (int64_t)rng_below(g, 120);
        double dens = t % 2 ? 0.05 : 0.4;
        double *x = calloc((size_t)(r * c), sizeof *x);
        for (int64_t k = 0; k < r * c; k++)
            if (rng_uniform(g) < dens)
                x[k] = (rng_uniform(g) - 0.5) * pow(10, rng_uniform(g) * 30 - 15);
        SpMat *s = sp_from_dense(x, r, c, -1);
        for (int op = 0; op < 4; op++) {
            bool rows = op < 2;
            int64_t n = rows ? r : c;
            Value want = call1(I, fn[op], dense_mat(x, r, c));
            double *got = malloc((size_t)n * sizeof *got);
            if (rows)
                sp_row_agg(I, s, op == 0 ? SP_SUM : SP_MEAN, got);
            else
                CHECK(sp_col_agg(I, s, op == 2 ? SP_SUM : SP_MEAN, got));
            if (want.kind == VAL_MATRIX && rows) {
                double *pk = malloc((size_t)n * sizeof *pk);
                packed_row_sums(I, x, r, c, op == 1, want.m->data, pk);
                CHECK_ARR(got, pk, n, same_bits, fn[op]);
                free(pk);
            } else if (want.kind == VAL_MATRIX)
                CHECK_ARR(got, want.m->data, n, same_bits, fn[op]);
            val_release(want);
            free(got);
        }
        sp_free(s);
        free(x);
    }
}

/* X * s with |s| >= 1 shares X's index arrays (sp_new_like): the result
 * outlives X, a shared matrix that grows gets its own arrays first, and the
 * owners may be freed on any threads at once. */
static void *free_one(void *arg)
{
    sp_free(arg);
    return NULL;
}

static void test_shared_index(Interp *I, Rng *g)
{
    int64_t r = 50, c = 40;
    double *x = gen_dense(g, r, c, 0.2, false);
    SpMat *X = sp_from_dense(x, r, c, -1);
    SpMat *Z = sp_binop_scalar(I, X, OP_MUL, 3.0, false);
    CHECK(Z && Z->colidx == X->colidx && Z->rowptr == X->rowptr);
    sp_free(X);
    double *want = malloc((size_t)(r * c) * sizeof *want);
    for (int64_t k = 0; k < r * c; k++)
        want[k] = x[k] * 3.0;
    check_sparse_is(Z, want, r, c, "X * 3 after X is freed");
    SpMat *W = sp_binop_scalar(I, Z, OP_MUL, -2.0, true);     /* -2 * Z */
    CHECK(W && W->colidx == Z->colidx);
    CHECK(sp_reserve(W, W->nnz + 10));                         /* shared: copied first */
    CHECK(W->colidx != Z->colidx && W->rowptr != Z->rowptr);
    sp_shrink(W);
    for (int64_t k = 0; k < r * c; k++)
        want[k] = x[k] * 3.0 * -2.0;
    check_sparse_is(W, want, r, c, "-2 * (X * 3), grown and shrunk");
    for (int64_t k = 0; k < r * c; k++)
        want[k] = x[k] * 3.0;
    check_sparse_is(Z, want, r, c, "X * 3 after a sharer grew");
    sp_free(W);
    /* eight owners freed on eight threads at once */
    SpMat *own[8];
    own[0] = Z;
    for (int k = 1; k < 8; k++) {
        own[k] = sp_binop_scalar(I, Z, OP_MUL, 1.0 + k, false);
        CHECK(own[k] && own[k]->colidx == Z->colidx);
    }
    pthread_t th[8];
    for (int k = 0; k < 8; k++)
        CHECK(pthread_create(&th[k], NULL, free_one, own[k]) == 0);
    for (int k = 0; k < 8; k++)
        pthread_join(th[k], NULL);
    free(want);
    free(x);
}

/* colSums / colMeans of a matrix with more rows than a block
 * (sp_col_block_rows): sparse and dense sum the same blocks, to the bit,
 * on 1, 2, 3 and 4 threads (the blocks cut into 1-4 parts, the first
 * adding its blocks into the total as it goes); values of wide magnitudes
 * leave some columns' corrections larger than half a unit of their sums. */
static void test_col_sums_blocks(Interp *I, Rng *g)
{
    int64_t r = 300001, c = 5;
    CHECK(sp_col_block_rows(r, c) < r);
    CHECK(sp_col_block_rows(100000, c) == 100000);
    double *x = calloc((size_t)(r * c), sizeof *x);
    for (int64_t k = 0; k < r * c; k++)
        if (rng_uniform(g) < 0.3)
            x[k] = k % 7 ? rng_uniform(g) : (rng_uniform(g) - 0.5) * pow(10, rng_uniform(g) * 20 - 10);
    SpMat *s = sp_from_dense(x, r, c, -1);
    Interp one = {0}, four = {0};
    one.blas_threads = 1;
    four.blas_threads = 4;
    static const char *const fn[] = {"colSums", "colMeans"};
    for (int op = 0; op < 2; op++) {
        Value want = call1(I, fn[op], dense_mat(x, r, c));
        double g1[5], g4[5];
        CHECK(sp_col_agg(&one, s, op ? SP_MEAN : SP_SUM, g1));
        CHECK(sp_col_agg(&four, s, op ? SP_MEAN : SP_SUM, g4));
        for (int th = 2; th <= 3; th++) {
            Interp it = {0};
            it.blas_threads = th;
            double gt[5];
            CHECK(sp_col_agg(&it, s, op ? SP_MEAN : SP_SUM, gt));
            CHECK_ARR(g1, gt, c, same_bits, "colSums blocks: 1 vs 2-3 threads");
        }
        if (want.kind == VAL_MATRIX) {
            CHECK_ARR(g1, want.m->data, c, same_bits, fn[op]);
            /* and near the plain sum in long double */
            for (int64_t j = 0; j < c && op == 0; j++) {
                long double t = 0, a = 0;
                for (int64_t i = 0; i < r; i++) {
                    t += x[i * c + j];
                    a += fabsl((long double)x[i * c + j]);
                }
                check_report_(fabsl(g1[j] - t) <= 1e-14L * a, __FILE__, __LINE__, "colSums %lld: %.17g vs %.17Lg",
                              (long long)j, g1[j], t);
            }
        }
        CHECK_ARR(g1, g4, c, same_bits, "colSums blocks: 1 vs 4 threads");
        val_release(want);
    }
    sp_free(s);
    free(x);
}

/* A column of 1, 1e16 + 2 and a zero: the Kahan sum after the second step
 * is 1e16 + 4 with a correction of -2, and a step of adding the zero would
 * move it to 1e16 + 2. colSums takes no step for a zero cell, dense and
 * sparse: 1e16 + 4, and the same below a row that holds the zero in
 * another column. */
static void test_col_sums_zero_no_step(Interp *I)
{
    double x[] = {1, 0, 1e16 + 2, 5, 0, 0};
    SpMat *s = sp_from_dense(x, 3, 2, -1);
    Value want = call1(I, "colSums", dense_mat(x, 3, 2));
    double got[2];
    CHECK(sp_col_agg(I, s, SP_SUM, got));
    CHECK(want.kind == VAL_MATRIX && want.m->data[0] == 1e16 + 4 && want.m->data[1] == 5);
    if (want.kind == VAL_MATRIX)
        CHECK_ARR(got, want.m->data, 2, same_bits, "colSums with a zero after a large step");
    val_release(want);
    sp_free(s);
}

/* C = op(A) %*% op(B) by the row-major triple loop, inner index ascending,
 * no cell skipped (so 0 * Inf is NaN as in BLAS). */
static void naive_mm(const double *A, int64_t ar, int64_t ac, bool tA, const double *B, int64_t br, int64_t bc,
                     bool tB, double *C)
{
    int64_t m = tA ? ac : ar, k = tA ? ar : ac, n = tB ? br : bc;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (tA ? A[p * ac + i] : A[i * ac + p]) * (tB ? B[j * bc + p] : B[p * bc + j]);
            C[i * n + j] = s;
        }
}

/* X %*% v in sp_mm_sd's order: the k-th non-zero of a row goes to running
 * sum k % 4, the result is (s0 + s1) + (s2 + s3); a zero cell's product
 * (+-0, or NaN against an Inf/NaN of v) goes to s0. */
static void naive_mv4(const double *x, int64_t r, int64_t c, const double *v, double *y)
{
    for (int64_t i = 0; i < r; i++) {
        double s[4] = {0, 0, 0, 0};
        int k = 0;
        for (int64_t j = 0; j < c; j++) {
            double t = x[i * c + j] * v[j];
            if (x[i * c + j] != 0)
                s[k++ & 3] += t;
            else
                s[0] += t;
        }
        y[i] = (s[0] + s[1]) + (s[2] + s[3]);
    }
}

/* Within rounding of BLAS: relative to the magnitude of the terms. */
static void check_near_blas(const double *got, const double *A, int64_t ar, int64_t ac, bool tA, const double *B,
                            int64_t br, int64_t bc, bool tB, const char *what)
{
    int64_t m = tA ? ac : ar, n = tB ? br : bc;
    Matrix *Am = dense_mat(A, ar, ac), *Bm = dense_mat(B, br, bc), *Cm = mat_new_raw(m, n);
    mat_matmul_t(Am, tA, Bm, tB, Cm);
    /* |A| %*% |B| bounds the rounding error of each cell */
    double *absA = malloc((size_t)(ar * ac + 1) * sizeof(double)), *absB = malloc((size_t)(br * bc + 1) * sizeof(double));
    double *bound = malloc((size_t)(m * n + 1) * sizeof(double));
    for (int64_t i = 0; i < ar * ac; i++)
        absA[i] = fabs(A[i]);
    for (int64_t i = 0; i < br * bc; i++)
        absB[i] = fabs(B[i]);
    naive_mm(absA, ar, ac, tA, absB, br, bc, tB, bound);
    int64_t bad = -1;
    for (int64_t i = 0; i < m * n && bad < 0; i++) {
        double b = Cm->data[i];
        /* Non-finite cells are left to the bitwise check against the triple
         * loop: OpenBLAS skips some zero terms, so a cell where Inf meets a
         * zero is NaN (0 * Inf) or Inf depending on its kernel. */
        if (!isfinite(got[i]) || !isfinite(b))
            continue;
        if (fabs(got[i] - b) > 1e-12 * bound[i] + 1e-300) {
            bad = i;
        }
    }
    check_report_(bad < 0, __FILE__, __LINE__, "%s vs BLAS: cell %lld (%.17g vs %.17g)", what, (long long)bad,
                  bad >= 0 ? got[bad] : 0.0, bad >= 0 ? Cm->data[bad] : 0.0);
    free(absA);
    free(absB);
    free(bound);
    mat_release(Am);
    mat_release(Bm);
    mat_release(Cm);
}

static void test_products(Interp *I, Rng *g)
{
    for (int t = 0; t < 150; t++) {
        int64_t r, c;
        pick_shape(g, t, &r, &c);
        int64_t n = t % 4 == 0 ? 1 : 1 + (int64_t)rng_below(g, 6);
        bool special = t % 3 == 2;
        double *x = gen_dense(g, r, c, pick_density(g), special);
        /* dense operands: sometimes with Inf/NaN cells too */
        double *B = gen_dense(g, c, n, 0.8, t % 5 == 4);
        double *A = gen_dense(g, n, r, 0.8, t % 5 == 4);
        double *Y = gen_dense(g, r, n, 0.8, t % 5 == 4);
        SpMat *s = sp_from_dense(x, r, c, -1);
        size_t big = (size_t)((r > c ? r : c) * (r > c ? r : c) + (r + c) * n + 1);
        double *got = malloc(big * sizeof(double)), *want = malloc(big * sizeof(double));

        sp_mm_sd(I, s, B, n, got);
        if (n == 1)
            naive_mv4(x, r, c, B, want);
        else
            naive_mm(x, r, c, false, B, c, n, false, want);
        CHECK_ARR(got, want, r * n, same_bits, "X %*% B");
        check_near_blas(got, x, r, c, false, B, c, n, false, "X %*% B");

        sp_mm_ds(I, A, n, s, got);
        naive_mm(A, n, r, false, x, r, c, false, want);
        CHECK_ARR(got, want, n * c, same_bits, "A %*% X");
        check_near_blas(got, A, n, r, false, x, r, c, false, "A %*% X");

        CHECK(sp_tmm_sd(I, s, Y, n, got));
        naive_mm(x, r, c, true, Y, r, n, false, want);
        CHECK_ARR(got, want, c * n, same_bits, "t(X) %*% Y");
        check_near_blas(got, x, r, c, true, Y, r, n, false, "t(X) %*% Y");

        CHECK(sp_tsmm(I, s, got));
        naive_mm(x, r, c, true, x, r, c, false, want);
        CHECK_ARR(got, want, c * c, same_bits, "t(X) %*% X");
        check_near_blas(got, x, r, c, true, x, r, c, false, "t(X) %*% X");

        SpMat *tr = sp_transpose(I, s);
        Matrix *xm = dense_mat(x, r, c), *tm = mat_new_raw(c, r);
        mat_transpose(xm, tm);
        check_sparse_is(tr, tm->data, c, r, "t(X)");
        mat_release(xm);
        mat_release(tm);

        /* sparse x sparse: finite operands only (sparse_ops.h) */
        if (!special) {
            int64_t n2 = 1 + (int64_t)rng_below(g, 40);
            double *y = gen_dense(g, c, n2, pick_density(g), false);
            SpMat *sy = sp_from_dense(y, c, n2, -1);
            CHECK(!sp_has_nonfinite(s) && !sp_has_nonfinite(sy));
            SpMat *z = sp_mm_ss(I, s, sy);
            double *w = malloc((size_t)(r * n2 + 1) * sizeof *w);
            naive_mm(x, r, c, false, y, c, n2, false, w);
            check_sparse_is(z, w, r, n2, "X %*% Y (sparse)");
            if (z) {
                double *zd = to_dense(z);
                CHECK_ARR(zd, w, r * n2, same_val, "X %*% Y (sparse) bits");
                free(zd);
            }
            sp_free(z);
            /* t(X) %*% X through the transpose and the sparse product */
            SpMat *tx = sp_transpose(I, s);
            z = sp_mm_ss(I, tx, s);
            double *w2 = malloc((size_t)(c * c + 1) * sizeof *w2);
            naive_mm(x, r, c, true, x, r, c, false, w2);
            check_sparse_is(z, w2, c, c, "t(X) %*% X (sparse)");
            sp_free(z);
            sp_free(tx);
            free(w2);
            free(w);
            free(y);
            sp_free(sy);
        }
        sp_free(tr);
        sp_free(s);
        free(got);
        free(want);
        free(x);
        free(A);
        free(B);
        free(Y);
    }
}

/* The dense result of a op b through the operator (borrowed operands). */
static Value dense_op(Interp *I, BinOp op, Value a, Value b)
{
    Value out = val_none();
    if (ops_binary(I, op, a, b, &out) != ST_OK) {
        check_report_(false, __FILE__, __LINE__, "operator: %s", I->err.msg ? I->err.msg : "?");
        err_clear(I);
    }
    return out;
}

static void test_elementwise(Interp *I, Rng *g)
{
    static const VmFn un[] = {VM_ABS, VM_SQRT, VM_ROUND, VM_SIGN, VM_FLOOR, VM_CEIL, VM_SIN, VM_TAN};
    static const char *const un_name[] = {"abs", "sqrt", "round", "sign", "floor", "ceil", "sin", "tan"};
    struct { BinOp op; double s; bool left; bool safe; } sc[] = {
        {OP_MUL, 2, false, true},        {OP_MUL, -0.5, true, true},      {OP_NE, 0, false, true},
        {OP_AND, 1, false, true},        {OP_DIV, 4, false, true},        {OP_MUL, 1e-300, false, true},
        {OP_MUL, INFINITY, false, false}, {OP_ADD, 1, false, false},      {OP_NE, 1, false, false},
        {OP_MUL, NAN, true, false},      {OP_POW, 2, false, true},        {OP_DIV, 4, true, false},
    };
    static const BinOp bops[] = {OP_MUL, OP_AND, OP_ADD, OP_SUB, OP_NE, OP_OR, OP_LT, OP_GT};
    CHECK(!sp_unary_safe(VM_EXP) && !sp_unary_safe(VM_COS) && !sp_unary_safe(VM_SIGMOID));
    for (int t = 0; t < 120; t++) {
        int64_t r, c;
        pick_shape(g, t, &r, &c);
        double *x = gen_dense(g, r, c, pick_density(g), t % 3 == 2);
        SpMat *s = sp_from_dense(x, r, c, -1);
        for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
            CHECK(sp_unary_safe(un[k]));
            SpMat *z = sp_unary(I, s, un[k]);
            Value want = call1(I, un_name[k], dense_mat(x, r, c));
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, c, un_name[k]);
            val_release(want);
            sp_free(z);
        }
        for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++) {
            CHECK(sp_scalar_safe(sc[k].op, sc[k].s, sc[k].left) == sc[k].safe);
            if (!sc[k].safe)
                continue;
            SpMat *z = sp_binop_scalar(I, s, sc[k].op, sc[k].s, sc[k].left);
            Value m = val_matrix_take(dense_mat(x, r, c)), sv = val_double(sc[k].s);
            Value want = sc[k].left ? dense_op(I, sc[k].op, sv, m) : dense_op(I, sc[k].op, m, sv);
            if (want.kind == VAL_MATRIX)
                { char wh[64]; snprintf(wh, sizeof wh, "X op scalar (op %d, s %g, left %d)", (int)sc[k].op, sc[k].s, (int)sc[k].left); check_sparse_is(z, want.m->data, r, c, wh); }
            val_release(want);
            val_release(m);
            sp_free(z);
        }
        /* row and column vectors broadcast (scaling rows or columns) */
        static const BinOp vops[] = {OP_MUL, OP_DIV, OP_AND, OP_MUL};
        for (int k = 0; k < 4; k++) {
            bool col_vec = k % 2 == 0;
            int64_t n = col_vec ? r : c;
            double *vv = malloc((size_t)(n + 1) * sizeof *vv);
            for (int64_t q = 0; q < n; q++)
                vv[q] = rand_nz(g, false);
            CHECK(sp_vector_safe(vops[k], vv, n));
            SpMat *z = sp_binop_vector(I, s, vops[k], vv, col_vec);
            Value m = val_matrix_take(dense_mat(x, r, c));
            Value vm = val_matrix_take(dense_mat(vv, col_vec ? n : 1, col_vec ? 1 : n));
            Value want = dense_op(I, vops[k], m, vm);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, c, "X op vector");
            val_release(want);
            val_release(m);
            val_release(vm);
            sp_free(z);
            if (n > 0) {
                vv[n - 1] = vops[k] == OP_DIV ? 0.0 : INFINITY;   /* 0/0, 0*Inf: NaN, not sparse-safe */
                CHECK(vops[k] == OP_AND || !sp_vector_safe(vops[k], vv, n));
            }
            free(vv);
        }
        double *y = gen_dense(g, r, c, pick_density(g), t % 4 == 3);
        SpMat *sy = sp_from_dense(y, r, c, -1);
        Value mx = val_matrix_take(dense_mat(x, r, c)), my = val_matrix_take(dense_mat(y, r, c));
        for (size_t k = 0; k < sizeof bops / sizeof bops[0]; k++) {
            CHECK(ops_apply_d(bops[k], 0, 0) == 0);
            Value want = dense_op(I, bops[k], mx, my);
            SpMat *z = sp_binop_ss(I, s, bops[k], sy);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, c, "X op Y (sparse, sparse)");
            sp_free(z);
            z = sp_binop_sd(I, s, bops[k], y, false);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, c, "X op Y (sparse, dense)");
            sp_free(z);
            val_release(want);
            want = dense_op(I, bops[k], my, mx);
            z = sp_binop_sd(I, s, bops[k], y, true);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, c, "Y op X (dense, sparse)");
            sp_free(z);
            val_release(want);
        }
        val_release(mx);
        val_release(my);
        sp_free(sy);
        free(y);
        sp_free(s);
        free(x);
    }
}

static void test_reorg(Interp *I, Rng *g)
{
    for (int t = 0; t < 120; t++) {
        int64_t r, c;
        pick_shape(g, t, &r, &c);
        double *x = gen_dense(g, r, c, pick_density(g), t % 3 == 2);
        SpMat *s = sp_from_dense(x, r, c, -1);
        /* cbind with a matrix of the same rows, rbind with one of the same cols */
        int64_t c2 = (int64_t)rng_below(g, 7), r2 = (int64_t)rng_below(g, 7);
        double *y = gen_dense(g, r, c2, pick_density(g), false), *w = gen_dense(g, r2, c, pick_density(g), false);
        SpMat *sy = sp_from_dense(y, r, c2, -1), *sw = sp_from_dense(w, r2, c, -1);
        Value v[2] = {val_matrix_take(dense_mat(x, r, c)), val_matrix_take(dense_mat(y, r, c2))};
        Value want = call(I, "cbind", v, 2);
        SpMat *z = sp_cbind(s, sy);
        if (want.kind == VAL_MATRIX)
            check_sparse_is(z, want.m->data, r, c + c2, "cbind");
        sp_free(z);
        val_release(want);
        val_release(v[1]);
        v[1] = val_matrix_take(dense_mat(w, r2, c));
        want = call(I, "rbind", v, 2);
        z = sp_rbind(s, sw);
        if (want.kind == VAL_MATRIX)
            check_sparse_is(z, want.m->data, r + r2, c, "rbind");
        sp_free(z);
        val_release(want);
        val_release(v[0]);
        val_release(v[1]);
        /* diag of a vector, diag of a square matrix */
        if (c == 1) {       /* diag() takes column vectors only (upstream too) */
            want = call1(I, "diag", dense_mat(x, r, c));
            z = sp_diag_from_vector(s);
            if (want.kind == VAL_MATRIX && r * c > 0)
                check_sparse_is(z, want.m->data, r * c, r * c, "diag(v)");
            sp_free(z);
            val_release(want);
        }
        if (r == c && r > 1) {
            want = call1(I, "diag", dense_mat(x, r, c));
            z = sp_diag_of_matrix(s);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, r, 1, "diag(X)");
            sp_free(z);
            val_release(want);
        }
        /* slices: a row range, a column range, a block, one cell, empty */
        for (int k = 0; k < 6; k++) {
            int64_t r0 = r ? (int64_t)rng_below(g, (uint64_t)r + 1) : 0, c0 = c ? (int64_t)rng_below(g, (uint64_t)c + 1) : 0;
            int64_t r1 = r0 + (int64_t)rng_below(g, (uint64_t)(r - r0) + 1);
            int64_t c1 = c0 + (int64_t)rng_below(g, (uint64_t)(c - c0) + 1);
            if (k == 0) { c0 = 0; c1 = c; }
            if (k == 1) { r0 = 0; r1 = r; }
            double *want_d = malloc((size_t)((r1 - r0) * (c1 - c0) + 1) * sizeof *want_d);
            for (int64_t i = r0; i < r1; i++)
                for (int64_t j = c0; j < c1; j++)
                    want_d[(i - r0) * (c1 - c0) + (j - c0)] = x[i * c + j];
            z = sp_slice(s, r0, r1, c0, c1);
            check_sparse_is(z, want_d, r1 - r0, c1 - c0, "X[rows, cols]");
            sp_free(z);
            free(want_d);
        }
        CHECK(sp_slice(s, 0, r + 1, 0, c) == NULL);
        /* a row gather with repeats (paramserv's partitions) */
        int64_t ng = (int64_t)rng_below(g, 9), sel[8];
        if (r > 0) {
            for (int64_t k = 0; k < ng && k < 8; k++)
                sel[k] = (int64_t)rng_below(g, (uint64_t)r);
            if (ng > 8)
                ng = 8;
            double *want_g = malloc((size_t)(ng * c + 1) * sizeof *want_g);
            for (int64_t k = 0; k < ng; k++)
                for (int64_t j = 0; j < c; j++)
                    want_g[k * c + j] = x[sel[k] * c + j];
            z = sp_gather_rows(s, sel, ng);
            check_sparse_is(z, want_g, ng, c, "gather rows");
            sp_free(z);
            free(want_g);
        }
        sel[0] = r;
        CHECK(sp_gather_rows(s, sel, 1) == NULL);
        sp_free(sy);
        sp_free(sw);
        free(y);
        free(w);
        sp_free(s);
        free(x);
    }
}

/* test_threads: transposes, scalar and unary ops and the sparse product,
 * one thread against four, on s (r x c; its non-finite values are
 * made finite here). */
static void threads_sparse_ops(Interp *one, Interp *four, SpMat *s, int64_t r, int64_t c)
{
    SpMat *t1 = sp_transpose(one, s), *t4 = sp_transpose(four, s);
    double *d1 = to_dense(t1), *d4 = to_dense(t4);
    CHECK_ARR(d1, d4, r * c, same_bits, "threads: t(X)");
    CHECK(sp_check(t4) == NULL);
    free(d1);
    free(d4);
    sp_free(t1);
    sp_free(t4);
    t1 = sp_binop_scalar(one, s, OP_MUL, 1e-310, false);   /* drops some entries (underflow) */
    t4 = sp_binop_scalar(four, s, OP_MUL, 1e-310, false);
    CHECK(sp_check(t4) == NULL && t1->nnz == t4->nnz);
    d1 = to_dense(t1);
    d4 = to_dense(t4);
    CHECK_ARR(d1, d4, r * c, same_bits, "threads: X * s");
    free(d1);
    free(d4);
    sp_free(t1);
    sp_free(t4);
    t1 = sp_unary(one, s, VM_ROUND);
    t4 = sp_unary(four, s, VM_ROUND);
    CHECK(sp_check(t4) == NULL && t1->nnz == t4->nnz);
    sp_free(t1);
    sp_free(t4);
    for (int64_t p = 0; p < s->nnz; p++)    /* the sparse product needs finite values */
        if (!isfinite(s->vals[p]))
            s->vals[p] = 1;
    SpMat *tx = sp_transpose(one, s);
    t1 = sp_mm_ss(one, tx, s);
    t4 = sp_mm_ss(four, tx, s);
    CHECK(t1 && t4 && sp_check(t4) == NULL && t1->nnz == t4->nnz);
    d1 = to_dense(t1);
    d4 = to_dense(t4);
    CHECK_ARR(d1, d4, c * c, same_bits, "threads: X %*% Y (sparse)");
    free(d1);
    free(d4);
    sp_free(t1);
    sp_free(t4);
    sp_free(tx);
}

/* test_threads: outputs too large for 8 block copies, split by output
 * columns. */
static void threads_by_columns(Rng *g, Interp *one, Interp *four)
{
    /* outputs too large for 8 block copies: split by output columns */
    int64_t r2 = 2000, c2 = 1200;
    double *x2 = gen_dense(g, r2, c2, 0.05, false);
    SpMat *s2 = sp_from_dense(x2, r2, c2, -1);
    double *h1 = malloc((size_t)(c2 * c2) * sizeof *h1), *h4 = malloc((size_t)(c2 * c2) * sizeof *h4);
    CHECK(sp_tsmm(one, s2, h1));
    CHECK(sp_tsmm(four, s2, h4));
    CHECK_ARR(h1, h4, c2 * c2, same_bits, "threads: t(X) %*% X by columns");
    free(h1);
    free(h4);
    sp_free(s2);
    free(x2);
    int64_t r3 = 10, c3 = 1300000;
    SpRandArgs ra = {.rows = r3, .cols = c3, .pdf = SP_PDF_UNIFORM, .min = -1, .max = 1, .sparsity = 0.012};
    SpMat *s3 = sp_rand_skip(g, &ra);
    double y3[10] = {1, -2, 3, 0.5, 0, 7, -1, 2, 2, 1};
    h1 = malloc((size_t)c3 * sizeof *h1);
    h4 = malloc((size_t)c3 * sizeof *h4);
    CHECK(sp_tmm_sd(one, s3, y3, 1, h1));
    CHECK(sp_tmm_sd(four, s3, y3, 1, h4));
    CHECK_ARR(h1, h4, c3, same_bits, "threads: t(X) %*% v by columns");
    /* summed over the rows in order: the triple loop's bits */
    int64_t bad = -1;
    for (int64_t j = 0; j < c3 && bad < 0; j++) {
        double sum = 0;
        for (int64_t i = 0; i < r3; i++) {
            double xv = 0;
            for (int64_t p = s3->rowptr[i]; p < s3->rowptr[i + 1]; p++)
                if (s3->colidx[p] == j)
                    xv = s3->vals[p];
            sum += xv * y3[i];
        }
        if (!same_bits(sum, h1[j]))
            bad = j;
        if (j > 2000)
            break;  /* the first columns suffice: the loop above is slow */
    }
    CHECK_INT(bad, -1);
    free(h1);
    free(h4);
    sp_free(s3);
}

/* test_threads: skewed rows (entries bunched at the left, one at the far
 * right): the parts' first entries are far from where an even spread
 * puts them. */
static void threads_skewed(Rng *g, Interp *one, Interp *four)
{
    /* skewed rows (entries bunched at the left, one at the far right):
     * the parts' first entries are far from where an even spread puts
     * them */
    int64_t r4 = 6000, c4 = 400;
    double *x4 = calloc((size_t)(r4 * c4), sizeof *x4);
    for (int64_t i = 0; i < r4; i++) {
        for (int64_t j = 0; j < 1 + i % 50; j++)
            x4[i * c4 + j] = rand_nz(g, false);
        if (i % 3 == 0)
            x4[i * c4 + c4 - 1] = 1.5;
    }
    SpMat *s4 = sp_from_dense(x4, r4, c4, -1);
    CHECK(s4->nnz + r4 >= (1 << 17));
    double *h1 = malloc((size_t)c4 * sizeof *h1), *h4 = malloc((size_t)c4 * sizeof *h4);
    for (int op = 0; op < 4; op++) {
        CHECK(sp_col_agg(one, s4, (SpAgg)op, h1));
        CHECK(sp_col_agg(four, s4, (SpAgg)op, h4));
        CHECK_ARR(h1, h4, c4, same_bits, "threads: skewed column aggregate");
    }
    SpMat *t4a = sp_transpose(four, s4);
    Matrix *xm = dense_mat(x4, r4, c4), *tm = mat_new_raw(c4, r4);
    mat_transpose(xm, tm);
    check_sparse_is(t4a, tm->data, c4, r4, "threads: skewed t(X)");
    mat_release(xm);
    mat_release(tm);
    sp_free(t4a);
    free(h1);
    free(h4);
    sp_free(s4);
    free(x4);
}

/* Every kernel on a matrix large enough to be split: 1 thread and 4 give the
 * same bits. */
static void test_threads(Rng *g)
{
    Interp one = {0}, four = {0};
    one.blas_threads = 1;
    four.blas_threads = 4;
    int64_t r = 1500, c = 300, n = 3;
    double *x = gen_dense(g, r, c, 0.4, false);
    x[7 * c + 5] = INFINITY;
    x[900 * c + 17] = NAN;
    SpMat *s = sp_from_dense(x, r, c, -1);
    CHECK(s->nnz + r >= (1 << 17));     /* above the split threshold */
    double *B = gen_dense(g, c, n, 1, false), *Y = gen_dense(g, r, n, 1, false), *A = gen_dense(g, 40, r, 1, false);
    size_t big = (size_t)(c * c + r * n + 40 * c + 1);
    double *g1 = malloc(big * sizeof(double)), *g4 = malloc(big * sizeof(double));
    sp_mm_sd(&one, s, B, n, g1);
    sp_mm_sd(&four, s, B, n, g4);
    CHECK_ARR(g1, g4, r * n, same_bits, "threads: X %*% B");
    sp_mm_sd(&one, s, B, 1, g1);
    sp_mm_sd(&four, s, B, 1, g4);
    CHECK_ARR(g1, g4, r, same_bits, "threads: X %*% v");
    sp_mm_ds(&one, A, 40, s, g1);
    sp_mm_ds(&four, A, 40, s, g4);
    CHECK_ARR(g1, g4, 40 * c, same_bits, "threads: A %*% X");
    CHECK(sp_tmm_sd(&one, s, Y, n, g1));
    CHECK(sp_tmm_sd(&four, s, Y, n, g4));
    CHECK_ARR(g1, g4, c * n, same_bits, "threads: t(X) %*% Y");
    CHECK(sp_tmm_sd(&one, s, Y, 1, g1));
    CHECK(sp_tmm_sd(&four, s, Y, 1, g4));
    CHECK_ARR(g1, g4, c, same_bits, "threads: t(X) %*% v");
    CHECK(sp_tsmm(&one, s, g1));
    CHECK(sp_tsmm(&four, s, g4));
    CHECK_ARR(g1, g4, c * c, same_bits, "threads: t(X) %*% X");
    /* the 8 row blocks' sums agree with the triple loop to rounding */
    double *w = malloc((size_t)(c * c) * sizeof *w);
    naive_mm(x, r, c, true, x, r, c, false, w);
    int64_t far = -1;
    for (int64_t k = 0; k < c * c && far < 0; k++)
        if (isfinite(w[k]) && fabs(g1[k] - w[k]) > 1e-12 * (fabs(w[k]) + 1))
            far = k;
        else if (!isfinite(w[k]) && !same_val(g1[k], w[k]))
            far = k;
    CHECK_INT(far, -1);
    free(w);
    for (int op = 0; op < 4; op++) {
        sp_row_agg(&one, s, (SpAgg)op, g1);
        sp_row_agg(&four, s, (SpAgg)op, g4);
        CHECK_ARR(g1, g4, r, same_bits, "threads: row aggregate");
        CHECK(sp_col_agg(&one, s, (SpAgg)op, g1));
        CHECK(sp_col_agg(&four, s, (SpAgg)op, g4));
        CHECK_ARR(g1, g4, c, same_bits, "threads: column aggregate");
    }
    threads_sparse_ops(&one, &four, s, r, c);
    free(g1);
    free(g4);
    threads_by_columns(g, &one, &four);
    threads_skewed(g, &one, &four);
    free(A);
    free(B);
    free(Y);
    sp_free(s);
    free(x);
}

static void test_rand(Interp *I)
{
    static const char *const pdf[] = {"uniform", "normal", "poisson"};
    static const struct { int64_t r, c; double sp; } cases[] = {
        {0, 0, 0.5}, {1, 1, 1.0}, {30, 40, 0.1}, {30, 40, 0.0}, {30, 40, 1.0}, {100, 7, 0.37}, {1, 500, 0.02},
    };
    for (int pk = 0; pk < 3; pk++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            SpRandArgs a = {.rows = cases[k].r, .cols = cases[k].c, .pdf = (SpPdf)pk, .min = -1, .max = 3,
                            .sparsity = cases[k].sp, .lambda = 2};
            Value v[8] = {val_int(a.rows), val_int(a.cols), val_double(a.min), val_double(a.max),
                          val_str_take(str_from(pdf[pk])), val_double(a.sparsity), val_int(42), val_double(2)};
            Value want = call(I, "rand", v, 8);
            val_release(v[4]);
            Rng g;
            rng_seed(&g, 42);
            SpMat *z = sp_rand_cellwise(&g, &a);
            if (want.kind == VAL_MATRIX)
                check_sparse_is(z, want.m->data, a.rows, a.cols, "rand cell-wise");
            val_release(want);
            sp_free(z);
            /* the skip stream: CSR and dense agree; values in range */
            rng_seed(&g, 7);
            z = sp_rand_skip(&g, &a);
            double *d = malloc((size_t)(a.rows * a.cols + 1) * sizeof *d);
            rng_seed(&g, 7);
            sp_rand_skip_dense(&g, &a, d);
            check_sparse_is(z, d, a.rows, a.cols, "rand skip");
            if (pk == 0 && z)
                for (int64_t p = 0; p < z->nnz; p++)
                    if (!(z->vals[p] >= -1 && z->vals[p] < 3))
                        CHECK(!"rand skip: value out of [min, max)");
            if (cases[k].sp == 1.0 && pk == 0 && z)
                CHECK_INT(z->nnz, a.rows * a.cols);
            free(d);
            sp_free(z);
        }
    /* positions must fit an int64 */
    {
        SpRandArgs huge = {.rows = (int64_t)1 << 40, .cols = (int64_t)1 << 40, .pdf = SP_PDF_UNIFORM, .max = 1,
                           .sparsity = 1e-30};
        Rng h;
        rng_seed(&h, 1);
        CHECK(sp_rand_skip(&h, &huge) == NULL);
        CHECK(sp_rand_cellwise(&h, &huge) == NULL);
    }
    /* the share of non-zeros of the skip stream: 200,000 cells at 0.05 give
     * 10,000 expected, standard deviation ~97; this seed's count is fixed */
    SpRandArgs a = {.rows = 400, .cols = 500, .pdf = SP_PDF_UNIFORM, .min = 1, .max = 2, .sparsity = 0.05};
    Rng g;
    rng_seed(&g, 3);
    SpMat *z = sp_rand_skip(&g, &a);
    CHECK(z && z->nnz > 9500 && z->nnz < 10500);
    int64_t empty_cols = 0;
    double *cs = malloc(500 * sizeof *cs);
    CHECK(sp_col_agg(NULL, z, SP_SUM, cs));
    for (int j = 0; j < 500; j++)
        empty_cols += cs[j] == 0;
    CHECK(empty_cols < 5);      /* positions are spread over all columns */
    free(cs);
    sp_free(z);
}

int main(void)
{
    builtin_registry_install();
    Interp I;
    interp_init(&I, NULL, 1);
    I.blas_threads = 2;
    Rng g;
    rng_seed(&g, 2024);
    test_format();
    test_conversions_and_aggregates(&I, &g);
    {
        Rng w;      /* its own stream: the later tests' draws stay as they were */
        rng_seed(&w, 31);
        test_sums_wide_magnitudes(&I, &w);
    }
    test_products(&I, &g);
    test_elementwise(&I, &g);
    {
        Rng w;
        rng_seed(&w, 32);
        test_shared_index(&I, &w);
        test_col_sums_blocks(&I, &w);
        test_col_sums_zero_no_step(&I);
    }
    test_reorg(&I, &g);
    test_threads(&g);
    test_rand(&I);
    interp_destroy(&I);
    return CHECK_DONE();
}
