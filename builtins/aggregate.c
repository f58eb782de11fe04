/* SPDX-License-Identifier: Apache-2.0
 * Aggregate builtins over matrices: full (sum, mean, var, sd, prod, trace),
 * row-wise and column-wise (rowSums ... colProds, rowIndexMax/Min) and the
 * cumulative ones (cumsum, cumprod, cummin, cummax, rowcumsum). Sums use
 * Kahan compensation like upstream's KahanPlus; a non-finite compensated sum
 * is recomputed plainly so Inf/NaN propagate as in IEEE arithmetic. Scalars
 * are errors. Thread-safe. */
#include "registry.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/ops.h"
#include "../runtime/sparse_ops.h"

#define LL(x) ((long long)(x))

/* ============================ summation kernels ========================== */

/* Kahan step: add v to (*sum, *corr) as upstream's KahanPlus does. Once
 * the sum overflows (or meets an Inf or NaN) the correction would be
 * Inf - Inf = NaN and poison every later step: it is dropped instead, so the
 * sum keeps IEEE's answer (Inf stays Inf; Inf + -Inf is NaN). */
static inline void kahan_add(double *sum, double *corr, double v)
{
    double c = v + *corr;
    double t = *sum + c;
    *corr = isfinite(t) ? c - (t - *sum) : 0.0;
    *sum = t;
}

/* Kahan step without the overflow guard, for the first pass of
 * ksum_strided: while every partial sum is finite it computes exactly what
 * kahan_add does; once one is not, the sum stays non-finite to the end and
 * the guarded pass runs instead. */
static inline void kahan_add_fast(double *sum, double *corr, double v)
{
    double c = v + *corr;
    double t = *sum + c;
    *corr = c - (t - *sum);
    *sum = t;
}

/* Kahan sum of x[0], x[s], x[2s], ... (n terms), kahan_add or
 * kahan_add_fast as 'add'. Contiguous input uses four independent
 * compensated lanes (combined with compensation at the end), so the loop is
 * not bound by one long dependency chain; they are named variables, not an
 * array, which GCC kept in memory. */
#define KSUM_BODY(add)                                                          \
    do {                                                                        \
        if (s == 1 && n >= 16) {                                                \
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0; \
            int64_t i = 0;                                                      \
            for (; i + 4 <= n; i += 4) {                                        \
                add(&s0, &c0, x[i]);                                            \
                add(&s1, &c1, x[i + 1]);                                        \
                add(&s2, &c2, x[i + 2]);                                        \
                add(&s3, &c3, x[i + 3]);                                        \
            }                                                                   \
            const double ls[4] = {s0, s1, s2, s3}, lc[4] = {c0, c1, c2, c3};    \
            for (int l = 0; l < 4; l++) {                                       \
                add(&sum, &corr, ls[l]);                                        \
                add(&sum, &corr, lc[l]);                                        \
            }                                                                   \
            for (; i < n; i++)                                                  \
                add(&sum, &corr, x[i]);                                         \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++)                                     \
                add(&sum, &corr, x[i * s]);                                     \
        }                                                                       \
    } while (0)

static double ksum_strided(const double *x, int64_t n, int64_t s)
{
    double sum = 0, corr = 0;
    KSUM_BODY(kahan_add_fast);
    if (isfinite(sum))
        return sum;
    sum = 0, corr = 0;
    KSUM_BODY(kahan_add);
    if (!isfinite(sum)) {
        sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += x[i * s];
    }
    return sum;
}
#undef KSUM_BODY

static double ksum(const double *x, int64_t n) { return ksum_strided(x, n, 1); }

/* Mean of n strided values. When the sum overflows although every value is
 * finite (1e308 + 1e308), the mean is taken as the sum of x/n, which cannot
 * overflow: R (long double sums) and upstream (incremental means) give
 * 1e308 there, not Inf. */
static double kmean_strided(const double *x, int64_t n, int64_t s)
{
    double mu = ksum_strided(x, n, s) / (double)n;
    if (isfinite(mu) || n == 0)
        return mu;
    double sum = 0, corr = 0;
    for (int64_t i = 0; i < n; i++)
        kahan_add(&sum, &corr, x[i * s] / (double)n);
    return sum;
}

/* One Kahan step of n adjacent columns' (o, k) by their cells r, for the
 * columns whose cell is not zero (a zero cell is no step): defined for two
 * columns (SSE2's width; gcc turns a comparison of four doubles into a
 * branch per cell on the base ISA) and for four (AVX2, one instruction). */
#define KSTEP_DEF(name, n)                                                                                      \
    typedef double name##_v __attribute__((vector_size(n * sizeof(double))));                                  \
    typedef long long name##_m __attribute__((vector_size(n * sizeof(long long))));                            \
    static inline __attribute__((always_inline)) void name(const double *r, double *restrict o, double *restrict k) \
    {                                                                                                           \
        name##_v rv, kv, ov;                                                                                    \
        memcpy(&rv, r, sizeof rv);                                                                              \
        memcpy(&kv, k, sizeof kv);                                                                              \
        memcpy(&ov, o, sizeof ov);                                                                              \
        name##_v c = rv + kv, t = ov + c, nk = c - (t - ov);                                                    \
        name##_m nz = rv != 0;                                                                                  \
        kv = (name##_v)(((name##_m)nk & nz) | ((name##_m)kv & ~nz));                                            \
        ov = (name##_v)(((name##_m)t & nz) | ((name##_m)ov & ~nz));                                             \
        memcpy(k, &kv, sizeof kv);                                                                              \
        memcpy(o, &ov, sizeof ov);                                                                              \
    }
KSTEP_DEF(kstep2, 2)
KSTEP_DEF(kstep4, 4)
#undef KSTEP_DEF

/* Kahan sums per column of rows [r0, r1) of x, from 0: sums into o[0..C),
 * corrections into k[0..C). A zero cell is no step (a Kahan step of adding
 * 0 can still move the correction into the sum): a column's sum is the
 * compensated sum of its non-zero cells in row order, which a sparse
 * matrix gives without looking at its zeros (runtime/sparse_ops.c).
 * Compiled for the base ISA (two columns a comparison) and for AVX2 (four),
 * the same steps. */
static inline __attribute__((always_inline)) void col_ksums_body(const Matrix *x, int64_t r0, int64_t r1,
                                                                 double *restrict o, double *restrict k, bool avx2)
{
    int64_t C = x->cols;
    for (int64_t j = 0; j < C; j++)
        o[j] = k[j] = 0;
    for (int64_t i = r0; i < r1; i++) {
        const double *restrict r = x->data + i * C;
        int64_t j = 0;
        /* four columns a step, each column's operations as below (gcc -O2
         * left this loop scalar: colSums was 5% of LeNet's training) */
        for (; j + 4 <= C; j += 4) {
            if (avx2) {
                kstep4(r + j, o + j, k + j);
            } else {
                kstep2(r + j, o + j, k + j);
                kstep2(r + j + 2, o + j + 2, k + j + 2);
            }
        }
        for (; j < C; j++) {
            if (r[j] == 0)
                continue;
            double c = r[j] + k[j];
            double t = o[j] + c;
            k[j] = c - (t - o[j]);
            o[j] = t;
        }
    }
}

static void col_ksums_base(const Matrix *x, int64_t r0, int64_t r1, double *restrict o, double *restrict k)
{
    col_ksums_body(x, r0, r1, o, k, false);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void col_ksums_avx2(const Matrix *x, int64_t r0, int64_t r1,
                                                           double *restrict o, double *restrict k)
{
    col_ksums_body(x, r0, r1, o, k, true);
}
#endif

/* col_ksums_body for the CPU, picked once (as the other kernels pick). */
static void (*col_ksums_rows)(const Matrix *, int64_t, int64_t, double *restrict, double *restrict) = col_ksums_base;
static pthread_once_t cks_once = PTHREAD_ONCE_INIT;

static void cks_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        col_ksums_rows = col_ksums_avx2;
#endif
}

/* Column sums of an R x C row-major block into out[0..C): Kahan per column,
 * in blocks of rows when there are many (sp_col_block_rows: the sparse
 * kernel's blocks, the same bits). */
static Status col_ksums(Interp *I, const Matrix *x, double *out)
{
    int64_t R = x->rows, C = x->cols;
    int64_t br = sp_col_block_rows(R, C), nb = R > br ? (R + br - 1) / br : 1;
    pthread_once(&cks_once, cks_init);
    double *corr = calloc((size_t)(C ? C : 1) * (size_t)(nb > 1 ? 2 * nb : 1), sizeof *corr);
    if (!corr)
        return err_set(I, "out of memory");
    if (nb == 1) {
        col_ksums_rows(x, 0, R, out, corr);
    } else {
        /* block b's sums at corr + 2bC, corrections at corr + (2b+1)C;
         * then per column the blocks' sums and corrections, compensated */
        for (int64_t b = 0; b < nb; b++)
            col_ksums_rows(x, b * br, (b + 1) * br < R ? (b + 1) * br : R, corr + 2 * b * C, corr + (2 * b + 1) * C);
        for (int64_t j = 0; j < C; j++) {
            double s = 0, k = 0;
            for (int64_t b = 0; b < nb; b++) {
                kahan_add_fast(&s, &k, corr[2 * b * C + j]);
                kahan_add_fast(&s, &k, corr[(2 * b + 1) * C + j]);
            }
            out[j] = s;
        }
    }
    free(corr);
    for (int64_t j = 0; j < C; j++)
        if (!isfinite(out[j])) {
            double s = 0;
            for (int64_t i = 0; i < R; i++)
                s += x->data[i * C + j];
            out[j] = s;
        }
    return ST_OK;
}

/* Sample variance (n-1) of n strided values; 0 for n == 1, NaN for n == 0. */
static double var_strided(const double *x, int64_t n, int64_t s)
{
    if (n == 0)
        return NAN;
    if (n == 1)
        return isfinite(x[0]) ? 0.0 : NAN;
    double mu = kmean_strided(x, n, s);
    double sum = 0, corr = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i * s] - mu;
        kahan_add(&sum, &corr, d * d);
    }
    return sum / (double)(n - 1);
}

/* Java Math.min/max: NaN if either operand is NaN (runtime/ops.h). */
#define dmin ops_min2
#define dmax ops_max2

/* ============================ full aggregates ============================ */

/* sum(X) */
static Status bi_sum(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->sp) {
        *out = val_double(sp_full_agg(x->sp, SP_SUM));
        return ST_OK;
    }
    *out = val_double(ksum(x->data, mat_len(x)));
    return ST_OK;
}

/* nnz(X) */
static Status bi_nnz(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix_any(I, a, 0, &x));
    *out = val_int(mat_nnz(x));
    return ST_OK;
}

/* mean(X) / avg(X) / mean(X, W) */
static Status bi_mean(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *w;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->sp && !arg_given(a, 1)) {
        *out = val_double(sp_full_agg(x->sp, SP_MEAN));
        return ST_OK;
    }
    TRY(arg_matrix(I, a, 0, &x));
    int64_t n = mat_len(x);
    if (!arg_given(a, 1)) {
        *out = val_double(kmean_strided(x->data, n, 1));
        return ST_OK;
    }
    TRY(arg_matrix(I, a, 1, &w));
    if (w->rows != x->rows || w->cols != x->cols)
        return err_set(I, "mean(): weights must have the dimensions of X: %lldx%lld vs %lldx%lld", LL(w->rows),
                       LL(w->cols), LL(x->rows), LL(x->cols));
    double s = 0, cs = 0, ws = 0, cw = 0;
    for (int64_t i = 0; i < n; i++) {
        kahan_add(&s, &cs, x->data[i] * w->data[i]);
        kahan_add(&ws, &cw, w->data[i]);
    }
    *out = val_double(s / ws);
    return ST_OK;
}

/* var(X) */
static Status bi_var(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    *out = val_double(var_strided(x->data, mat_len(x), 1));
    return ST_OK;
}

/* sd(X) */
static Status bi_sd(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    *out = val_double(sqrt(var_strided(x->data, mat_len(x), 1)));
    return ST_OK;
}

/* prod(X) */
static Status bi_prod(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    double p = 1;
    int64_t n = mat_len(x);
    for (int64_t i = 0; i < n; i++)
        p *= x->data[i];
    *out = val_double(p);
    return ST_OK;
}

/* trace(X) / tr(X) */
static Status bi_trace(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    if (x->rows != x->cols)
        return err_set(I, "%s(): matrix must be square, got %lldx%lld", a->def->name, LL(x->rows), LL(x->cols));
    *out = val_double(ksum_strided(x->data, x->rows, x->cols + 1));
    return ST_OK;
}

/* ========================== row / column aggregates ====================== */

typedef enum RC { RC_SUM, RC_MEAN, RC_MAX, RC_MIN, RC_VAR, RC_SD, RC_PROD } RC;

/* The sparse kernels' name for op, or -1 where there is none. */
static int sp_agg_of(RC op)
{
    return op == RC_SUM ? SP_SUM : op == RC_MEAN ? SP_MEAN : op == RC_MAX ? SP_MAX : op == RC_MIN ? SP_MIN : -1;
}

static Status row_agg(Interp *I, const BArgs *a, Value *out, RC op)
{
    Matrix *x;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->sp && sp_agg_of(op) >= 0) {
        Matrix *m = mat_alloc(I, x->rows, 1);
        if (!m)
            return ST_ERR;
        sp_row_agg(I, x->sp, (SpAgg)sp_agg_of(op), m->data);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, 1);
    if (!m)
        return ST_ERR;
    for (int64_t i = 0; i < R; i++) {
        const double *r = x->data + i * C;
        double v;
        switch (op) {
        case RC_SUM: v = ksum(r, C); break;
        case RC_MEAN: v = kmean_strided(r, C, 1); break;
        case RC_MAX: v = -INFINITY; for (int64_t j = 0; j < C; j++) v = dmax(v, r[j]); break;
        case RC_MIN: v = INFINITY; for (int64_t j = 0; j < C; j++) v = dmin(v, r[j]); break;
        case RC_VAR: v = var_strided(r, C, 1); break;
        case RC_SD: v = sqrt(var_strided(r, C, 1)); break;
        default: v = 1; for (int64_t j = 0; j < C; j++) v *= r[j]; break;
        }
        m->data[i] = v;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

static Status col_agg(Interp *I, const BArgs *a, Value *out, RC op)
{
    Matrix *x;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->sp && sp_agg_of(op) >= 0) {
        Matrix *m = mat_alloc(I, 1, x->cols);
        if (!m)
            return ST_ERR;
        if (!sp_col_agg(I, x->sp, (SpAgg)sp_agg_of(op), m->data)) {
            mat_release(m);
            return err_set(I, "%s(): out of memory", a->def->name);
        }
        *out = val_matrix_take(m);
        return ST_OK;
    }
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, 1, C);
    if (!m)
        return ST_ERR;
    double *y = m->data;
    Status st = ST_OK;
    switch (op) {
    case RC_SUM:
    case RC_MEAN:
        st = col_ksums(I, x, y);
        if (op == RC_MEAN)
            for (int64_t j = 0; j < C; j++) {
                y[j] /= (double)R;
                if (!isfinite(y[j]))
                    y[j] = kmean_strided(x->data + j, R, C);
            }
        break;
    case RC_MAX:
    case RC_MIN:
        for (int64_t j = 0; j < C; j++) y[j] = op == RC_MAX ? -INFINITY : INFINITY;
        for (int64_t i = 0; i < R; i++) {
            const double *r = x->data + i * C;
            if (op == RC_MAX) for (int64_t j = 0; j < C; j++) y[j] = dmax(y[j], r[j]);
            else for (int64_t j = 0; j < C; j++) y[j] = dmin(y[j], r[j]);
        }
        break;
    case RC_VAR:
    case RC_SD:
        for (int64_t j = 0; j < C; j++) {
            double v = var_strided(x->data + j, R, C);
            y[j] = op == RC_SD ? sqrt(v) : v;
        }
        break;
    default:
        for (int64_t j = 0; j < C; j++) y[j] = 1;
        for (int64_t i = 0; i < R; i++) {
            const double *r = x->data + i * C;
            for (int64_t j = 0; j < C; j++) y[j] *= r[j];
        }
        break;
    }
    if (st != ST_OK) {
        mat_release(m);
        return st;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* rowSums(X) */
static Status bi_rowSums(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_SUM); }
/* colSums(X) */
static Status bi_colSums(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_SUM); }
/* rowMeans(X) */
static Status bi_rowMeans(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_MEAN); }
/* colMeans(X) */
static Status bi_colMeans(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_MEAN); }
/* rowMaxs(X) */
static Status bi_rowMaxs(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_MAX); }
/* colMaxs(X) */
static Status bi_colMaxs(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_MAX); }
/* rowMins(X) */
static Status bi_rowMins(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_MIN); }
/* colMins(X) */
static Status bi_colMins(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_MIN); }
/* rowVars(X) */
static Status bi_rowVars(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_VAR); }
/* colVars(X) */
static Status bi_colVars(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_VAR); }
/* rowSds(X) */
static Status bi_rowSds(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_SD); }
/* colSds(X) */
static Status bi_colSds(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_SD); }
/* rowProds(X) */
static Status bi_rowProds(Interp *I, const BArgs *a, Value *out) { return row_agg(I, a, out, RC_PROD); }
/* colProds(X) */
static Status bi_colProds(Interp *I, const BArgs *a, Value *out) { return col_agg(I, a, out, RC_PROD); }

/* 1-based column of each row's max (min); ties -> last; all-NaN row -> 1. */
static Status row_index(Interp *I, const BArgs *a, Value *out, bool is_max)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    if (C == 0)
        return err_set(I, "%s(): input has 0 columns", a->def->name);
    Matrix *m = mat_alloc(I, R, 1);
    if (!m)
        return ST_ERR;
    for (int64_t i = 0; i < R; i++) {
        const double *r = x->data + i * C;
        double best = is_max ? -INFINITY : INFINITY;
        int64_t k = 0;
        if (is_max) {
            for (int64_t j = 0; j < C; j++)
                if (r[j] >= best) { best = r[j]; k = j; }
        } else {
            for (int64_t j = 0; j < C; j++)
                if (r[j] <= best) { best = r[j]; k = j; }
        }
        m->data[i] = (double)(k + 1);
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* rowIndexMax(X) */
static Status bi_rowIndexMax(Interp *I, const BArgs *a, Value *out) { return row_index(I, a, out, true); }
/* rowIndexMin(X) */
static Status bi_rowIndexMin(Interp *I, const BArgs *a, Value *out) { return row_index(I, a, out, false); }

/* ========================== cumulative aggregates ======================== */

typedef enum CumOp { CUM_SUM, CUM_PROD, CUM_MIN, CUM_MAX } CumOp;

static Status cum_agg(Interp *I, const BArgs *a, Value *out, CumOp op)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return ST_ERR;
    if (R == 0 || C == 0) {
        *out = val_matrix_take(m);
        return ST_OK;
    }
    double *corr = NULL;
    if (op == CUM_SUM && !(corr = calloc((size_t)C, sizeof *corr))) {
        mat_release(m);
        return err_set(I, "%s(): out of memory", a->def->name);
    }
    memcpy(m->data, x->data, (size_t)C * sizeof(double));
    for (int64_t i = 1; i < R; i++) {
        const double *r = x->data + i * C;
        const double *p = m->data + (i - 1) * C;
        double *y = m->data + i * C;
        switch (op) {
        case CUM_SUM:
            for (int64_t j = 0; j < C; j++) {
                if (isinf(p[j]) || isinf(r[j])) {
                    y[j] = p[j] + r[j];
                    corr[j] = 0;
                    continue;
                }
                double c = r[j] + corr[j], t = p[j] + c;
                corr[j] = c - (t - p[j]);
                y[j] = t;
            }
            break;
        case CUM_PROD: for (int64_t j = 0; j < C; j++) y[j] = p[j] * r[j]; break;
        case CUM_MIN: for (int64_t j = 0; j < C; j++) y[j] = dmin(p[j], r[j]); break;
        case CUM_MAX: for (int64_t j = 0; j < C; j++) y[j] = dmax(p[j], r[j]); break;
        }
    }
    free(corr);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* cumsum(X) */
static Status bi_cumsum(Interp *I, const BArgs *a, Value *out) { return cum_agg(I, a, out, CUM_SUM); }
/* cumprod(X) */
static Status bi_cumprod(Interp *I, const BArgs *a, Value *out) { return cum_agg(I, a, out, CUM_PROD); }
/* cummin(X) */
static Status bi_cummin(Interp *I, const BArgs *a, Value *out) { return cum_agg(I, a, out, CUM_MIN); }
/* cummax(X) */
static Status bi_cummax(Interp *I, const BArgs *a, Value *out) { return cum_agg(I, a, out, CUM_MAX); }

/* cumsumprod(X): X is n x 2; y_i = X[i,1] + X[i,2] * y_(i-1), y_0 = 0 */
static Status bi_cumsumprod(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    if (x->cols != 2)
        return err_set(I, "Cumsumprod only supported over two-column matrices (got %lld columns)",
                       (long long)x->cols);
    Matrix *m = mat_alloc(I, x->rows, 1);
    if (!m)
        return ST_ERR;
    double y = 0;
    for (int64_t i = 0; i < x->rows; i++) {
        y = x->data[2 * i] + x->data[2 * i + 1] * y;
        m->data[i] = y;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* rowcumsum(X): running sum along each row */
static Status bi_rowcumsum(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return ST_ERR;
    for (int64_t i = 0; i < R; i++) {
        const double *r = x->data + i * C;
        double *y = m->data + i * C;
        double sum = 0, corr = 0;
        for (int64_t j = 0; j < C; j++) {
            if (isinf(sum) || isinf(r[j]) || isnan(sum)) {
                sum += r[j];
                corr = 0;
            } else {
                double c = r[j] + corr, t = sum + c;
                corr = c - (t - sum);
                sum = t;
            }
            y[j] = sum;
        }
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

const BuiltinDef bi_aggregate_table[] = {
    {"nnz", bi_nnz, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"sum", bi_sum, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"mean", bi_mean, "x,w", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"avg", bi_mean, "x,w", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_SPARSE},
    {"var", bi_var, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"sd", bi_sd, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"prod", bi_prod, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE},
    {"trace", bi_trace, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"tr", bi_trace, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"rowSums", bi_rowSums, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"colSums", bi_colSums, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"rowMeans", bi_rowMeans, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"colMeans", bi_colMeans, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"rowMaxs", bi_rowMaxs, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"colMaxs", bi_colMaxs, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"rowMins", bi_rowMins, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"colMins", bi_colMins, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"rowVars", bi_rowVars, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"colVars", bi_colVars, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"rowSds", bi_rowSds, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"colSds", bi_colSds, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"rowProds", bi_rowProds, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"colProds", bi_colProds, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_SPARSE},
    {"rowIndexMax", bi_rowIndexMax, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"rowIndexMin", bi_rowIndexMin, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"cumsum", bi_cumsum, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"cumprod", bi_cumprod, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"cummin", bi_cummin, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"cummax", bi_cummax, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"rowcumsum", bi_rowcumsum, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"cumsumprod", bi_cumsumprod, "x", 1, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
