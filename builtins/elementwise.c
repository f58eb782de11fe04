/* SPDX-License-Identifier: Apache-2.0
 * Element-wise builtins: the unary math functions (exp, log, round, trig,
 * sigmoid, ...), min/max/pmin/pmax (one argument: aggregate; more: cell-wise
 * with broadcasting), xor and the bitw* family. A scalar in gives a scalar
 * out. Loops are specialised per operator so they stay tight. Thread-safe. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/ops.h"
#include "../runtime/sparse_ops.h"
#include "../runtime/vmath.h"

#define LL(x) ((long long)(x))

/* ============================== unary math ============================== */

/* Matrices go through vm_unary (runtime/vmath.c: libmvec exp/log at the
 * widest vector width), the one kernel the fused evaluator uses too;
 * scalars through libm. */
static Status unary(Interp *I, const BArgs *a, Value *out, VmFn f)
{
    Value v = a->v[0];
    if (v.kind == VAL_MATRIX) {
        if (v.m->sp && sp_unary_safe(f)) {   /* f(0) == 0: the non-zeros only */
            Matrix *m = mat_from_sp_take(I, sp_unary(I, v.m->sp, f), a->def->name);
            if (!m)
                return ST_ERR;
            *out = val_matrix_take(m);
            return ST_OK;
        }
        const double *x = mat_dense(I, v.m, a->def->name);
        if (!x && mat_len(v.m) > 0)
            return ST_ERR;
        Matrix *m = mat_alloc(I, v.m->rows, v.m->cols);
        if (!m)
            return ST_ERR;
        vm_unary(f, x, m->data, mat_len(m));
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (v.kind == VAL_INT && f == VM_ABS) {
        *out = val_int(v.i < 0 ? (int64_t)(0 - (uint64_t)v.i) : v.i);
        return ST_OK;
    }
    if (v.kind == VAL_INT || v.kind == VAL_DOUBLE || v.kind == VAL_BOOL) {
        *out = val_double(vm_scalar(f, val_num(v)));
        return ST_OK;
    }
    return arg_type_error(I, a, 0, "a number or matrix");
}

/* exp(x) */
static Status bi_exp(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_EXP); }
/* sqrt(x) */
static Status bi_sqrt(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_SQRT); }
/* abs(x) */
static Status bi_abs(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_ABS); }
/* sign(x) */
static Status bi_sign(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_SIGN); }
/* round(x) */
static Status bi_round(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_ROUND); }
/* floor(x) */
static Status bi_floor(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_FLOOR); }
/* ceil(x) / ceiling(x) */
static Status bi_ceil(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_CEIL); }
/* sin(x) */
static Status bi_sin(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_SIN); }
/* cos(x) */
static Status bi_cos(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_COS); }
/* tan(x) */
static Status bi_tan(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_TAN); }
/* asin(x) */
static Status bi_asin(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_ASIN); }
/* acos(x) */
static Status bi_acos(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_ACOS); }
/* atan(x) */
static Status bi_atan(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_ATAN); }
/* sinh(x) */
static Status bi_sinh(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_SINH); }
/* cosh(x) */
static Status bi_cosh(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_COSH); }
/* tanh(x) */
static Status bi_tanh(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_TANH); }
/* sigmoid(x) = 1 / (1 + exp(-x)) */
static Status bi_sigmoid(Interp *I, const BArgs *a, Value *out) { return unary(I, a, out, VM_SIGMOID); }

/* log(x) / log(x, base) */
/* log(x) and log(x, b) = ln(x)/ln(b) per cell: x and b may each be a scalar
 * or a matrix (the result is a matrix if either is; always double). Two
 * matrices have equal shapes, or b is a row or column vector (COMPAT.md 7). */
static Status bi_log(Interp *I, const BArgs *a, Value *out)
{
    if (!arg_given(a, 1))
        return unary(I, a, out, VM_LOG);
    Value x = a->v[0], b = a->v[1];
    bool xm = x.kind == VAL_MATRIX, bm = b.kind == VAL_MATRIX;
    if (!xm && !val_is_number(x) && x.kind != VAL_BOOL)
        return arg_type_error(I, a, 0, "a number or matrix");
    if (!bm && !val_is_number(b) && b.kind != VAL_BOOL)
        return arg_type_error(I, a, 1, "a number or matrix");
    if (!xm && !bm) {
        *out = val_double(log(val_num(x)) / log(val_num(b)));
        return ST_OK;
    }
    int64_t rows = xm ? x.m->rows : b.m->rows, cols = xm ? x.m->cols : b.m->cols;
    if (xm && bm && !(b.m->rows == rows && b.m->cols == cols) && !(b.m->rows == rows && b.m->cols == 1)
        && !(b.m->rows == 1 && b.m->cols == cols))
        return err_set(I, "Mismatch in matrix dimensions of parameters for function LOG: %lldx%lld vs %lldx%lld",
                       (long long)rows, (long long)cols, (long long)b.m->rows, (long long)b.m->cols);
    Matrix *m = mat_alloc(I, rows, cols);
    if (!m)
        return ST_ERR;
    double xs = xm ? 0 : val_num(x), lbs = bm ? 0 : log(val_num(b));
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            double xv = xm ? x.m->data[i * cols + j] : xs;
            double lb = lbs;
            if (bm) {
                int64_t bi = b.m->rows == 1 ? 0 : i, bj = b.m->cols == 1 ? 0 : j;
                lb = log(b.m->data[bi * b.m->cols + bj]);
            }
            m->data[i * cols + j] = log(xv) / lb;
        }
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ========================= cell-wise n-ary operators ===================== */

typedef enum NFn { NFN_MIN, NFN_MAX, NFN_XOR, NFN_BAND, NFN_BOR, NFN_BXOR, NFN_SHL, NFN_SHR } NFn;

/* Java Math.min/max: NaN if either operand is NaN (runtime/ops.h, shared
 * with the fused evaluator). */
#define dmin ops_min2
#define dmax ops_max2
static inline int64_t d2l(double d)
{
    if (isnan(d)) return 0;
    if (d >= 9.223372036854775807e18) return INT64_MAX;
    if (d <= -9.223372036854775808e18) return INT64_MIN;
    return (int64_t)d;
}
static inline double nfn(NFn f, double a, double b)
{
    switch (f) {
    case NFN_MIN: return dmin(a, b);
    case NFN_MAX: return dmax(a, b);
    case NFN_XOR: return ((a != 0) != (b != 0)) ? 1.0 : 0.0;
    case NFN_BAND: return (double)(d2l(a) & d2l(b));
    case NFN_BOR: return (double)(d2l(a) | d2l(b));
    case NFN_BXOR: return (double)(d2l(a) ^ d2l(b));
    case NFN_SHL: return (double)(int64_t)((uint64_t)d2l(a) << (d2l(b) & 63));
    case NFN_SHR: return (double)(d2l(a) >> (d2l(b) & 63));
    }
    return 0;
}

/* One operand seen against an R x C result: a pointer to its row i and
 * whether that row is a single broadcast value. */
typedef enum BKind { B_SCALAR, B_FULL, B_COLVEC, B_ROWVEC } BKind;
typedef struct Bcast { BKind kind; const double *p; double s; int64_t cols; } Bcast;

static inline bool bc_row(const Bcast *b, int64_t i, const double **p, double *s)
{
    switch (b->kind) {
    case B_SCALAR: *s = b->s; return true;
    case B_COLVEC: *s = b->p[i]; return true;
    case B_ROWVEC: *p = b->p; return false;
    default: *p = b->p + i * b->cols; return false;
    }
}

/* y[0..C) = f(x, z) for one row, where x/z are a row or a broadcast value. */
static void row_kernel(NFn f, double *y, int64_t C, const double *xp, double xs, bool xc,
                       const double *zp, double zs, bool zc)
{
#define R_LOOPS(EXPR)                                                                 \
    if (!xc && !zc) for (int64_t j = 0; j < C; j++) { double a = xp[j], b = zp[j]; y[j] = EXPR; } \
    else if (!xc) for (int64_t j = 0; j < C; j++) { double a = xp[j], b = zs; y[j] = EXPR; }     \
    else if (!zc) for (int64_t j = 0; j < C; j++) { double a = xs, b = zp[j]; y[j] = EXPR; }     \
    else { double a = xs, b = zs; double r_ = EXPR; for (int64_t j = 0; j < C; j++) y[j] = r_; } \
    break
    switch (f) {
    case NFN_MIN: R_LOOPS(dmin(a, b));
    case NFN_MAX: R_LOOPS(dmax(a, b));
    default: R_LOOPS(nfn(f, a, b));
    }
#undef R_LOOPS
}

static const char *nfn_name(NFn f)
{
    static const char *const n[] = {"min", "max", "xor", "bitwAnd", "bitwOr", "bitwXor", "bitwShiftL", "bitwShiftR"};
    return n[f];
}

/* Scalar result of f over scalars v[0..n). */
static Status nary_scalars(Interp *I, const BArgs *a, const Value *v, int n, NFn f, Value *out)
{
    bool all_int = true;
    for (int i = 0; i < n; i++) {
        if (!(val_is_number(v[i]) || v[i].kind == VAL_BOOL))
            return arg_type_error(I, a, i, "a number or matrix");
        if (v[i].kind != VAL_INT)
            all_int = false;
    }
    if (f == NFN_XOR) {
        *out = val_bool((val_num(v[0]) != 0) != (val_num(v[1]) != 0));
        return ST_OK;
    }
    if (f == NFN_MIN || f == NFN_MAX) {
        if (all_int) {
            int64_t r = v[0].i;
            for (int i = 1; i < n; i++)
                r = f == NFN_MIN ? (v[i].i < r ? v[i].i : r) : (v[i].i > r ? v[i].i : r);
            *out = val_int(r);
            return ST_OK;
        }
        double r = val_num(v[0]);
        for (int i = 1; i < n; i++)
            r = nfn(f, r, val_num(v[i]));
        *out = val_double(r);
        return ST_OK;
    }
    /* bitw*: integer arithmetic */
    int64_t x = v[0].kind == VAL_INT ? v[0].i : d2l(val_num(v[0]));
    int64_t y = v[1].kind == VAL_INT ? v[1].i : d2l(val_num(v[1]));
    int64_t r;
    switch (f) {
    case NFN_BAND: r = x & y; break;
    case NFN_BOR: r = x | y; break;
    case NFN_BXOR: r = x ^ y; break;
    case NFN_SHL: r = (int64_t)((uint64_t)x << (y & 63)); break;
    default: r = x >> (y & 63); break;
    }
    *out = val_int(r);
    return ST_OK;
}

/* f folded over v[0..n) cell-wise: scalars broadcast, matrices of the result
 * shape, or row / column vectors of it. */
static Status nary(Interp *I, const BArgs *a, const Value *v, int n, NFn f, Value *out)
{
    int64_t R = -1, C = -1;
    for (int i = 0; i < n; i++) {
        if (v[i].kind == VAL_MATRIX) {
            if (v[i].m->rows > R) R = v[i].m->rows;
            if (v[i].m->cols > C) C = v[i].m->cols;
        } else if (!(val_is_number(v[i]) || v[i].kind == VAL_BOOL)) {
            return arg_type_error(I, a, i, "a number or matrix");
        }
    }
    if (R < 0)
        return nary_scalars(I, a, v, n, f, out);
    Bcast *b = malloc((size_t)n * sizeof *b);
    if (!b)
        return err_set(I, "%s(): out of memory", nfn_name(f));
    const Matrix *ref = NULL;
    for (int i = 0; i < n; i++) {
        if (v[i].kind != VAL_MATRIX) {
            b[i] = (Bcast){B_SCALAR, NULL, val_num(v[i]), 0};
            continue;
        }
        const Matrix *x = v[i].m;
        if (x->rows == R && x->cols == C) b[i] = (Bcast){B_FULL, x->data, 0, C};
        else if (x->rows == R && x->cols == 1) b[i] = (Bcast){B_COLVEC, x->data, 0, 1};
        else if (x->rows == 1 && x->cols == C) b[i] = (Bcast){B_ROWVEC, x->data, 0, C};
        else {
            if (!ref)
                for (int k = 0; k < n; k++)
                    if (v[k].kind == VAL_MATRIX && k != i) { ref = v[k].m; break; }
            free(b);
            return err_set(I, "Block sizes are not matched for binary cell operations: %lldx%lld vs %lldx%lld",
                           LL(ref ? ref->rows : R), LL(ref ? ref->cols : C), LL(x->rows), LL(x->cols));
        }
        if (!ref)
            ref = x;
    }
    Matrix *m = mat_alloc(I, R, C);
    if (!m) {
        free(b);
        return ST_ERR;
    }
    for (int64_t i = 0; i < R; i++) {
        double *y = m->data + i * C;
        const double *xp = NULL, *zp = NULL;
        double xs = 0, zs = 0;
        bool xc = bc_row(&b[0], i, &xp, &xs);
        bool zc = bc_row(&b[1], i, &zp, &zs);
        row_kernel(f, y, C, xp, xs, xc, zp, zs, zc);
        for (int k = 2; k < n; k++) {
            zc = bc_row(&b[k], i, &zp, &zs);
            row_kernel(f, y, C, y, 0, false, zp, zs, zc);
        }
    }
    free(b);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* min/max of all cells of one matrix (NaN propagates). */
static Status agg_minmax(Interp *I, const BArgs *a, Value *out, bool is_max)
{
    Value v = a->v[0];
    if (v.kind != VAL_MATRIX) {
        if (!(val_is_number(v) || v.kind == VAL_BOOL))
            return arg_type_error(I, a, 0, "a number or matrix");
        *out = v.kind == VAL_BOOL ? val_double(val_num(v)) : v;
        return ST_OK;
    }
    if (v.m->sp) {
        *out = val_double(sp_full_agg(v.m->sp, is_max ? SP_MAX : SP_MIN));
        return ST_OK;
    }
    const double *x = v.m->data;
    int64_t n = mat_len(v.m);
    double r = is_max ? -INFINITY : INFINITY;
    if (is_max)
        for (int64_t i = 0; i < n; i++) r = dmax(r, x[i]);
    else
        for (int64_t i = 0; i < n; i++) r = dmin(r, x[i]);
    *out = val_double(r);
    return ST_OK;
}

static Status minmax(Interp *I, const BArgs *a, Value *out, bool is_max)
{
    if (a->n == 0)
        return err_set(I, "%s(): expects at least one argument", a->def->name);
    if (a->n == 1)
        return agg_minmax(I, a, out, is_max);
    bool sparse = false;
    for (int i = 0; i < a->n; i++)
        sparse |= a->v[i].kind == VAL_MATRIX && a->v[i].m->sp;
    if (!sparse)
        return nary(I, a, a->v, a->n, is_max ? NFN_MAX : NFN_MIN, out);
    /* the cell-wise form has no sparse kernel: dense operands */
    Value *v = calloc((size_t)a->n, sizeof *v);
    if (!v)
        return err_set(I, "%s(): out of memory", a->def->name);
    Status st = ST_OK;
    for (int i = 0; i < a->n; i++) {
        v[i] = val_ref(a->v[i]);
        if (st == ST_OK)
            st = val_densify(I, &v[i], a->def->name);
    }
    if (st == ST_OK)
        st = nary(I, a, v, a->n, is_max ? NFN_MAX : NFN_MIN, out);
    for (int i = 0; i < a->n; i++)
        val_release(v[i]);
    free(v);
    return st;
}

/* min(X) / min(a, b, ...) / pmin(...) */
static Status bi_min(Interp *I, const BArgs *a, Value *out) { return minmax(I, a, out, false); }
/* max(X) / max(a, b, ...) / pmax(...) */
static Status bi_max(Interp *I, const BArgs *a, Value *out) { return minmax(I, a, out, true); }

static Status binary2(Interp *I, const BArgs *a, Value *out, NFn f)
{
    Value v[2] = {a->v[0], a->v[1]};
    return nary(I, a, v, 2, f, out);
}

/* xor(a, b) */
static Status bi_xor(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_XOR); }
/* bitwAnd(a, b) */
static Status bi_bitwAnd(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_BAND); }
/* bitwOr(a, b) */
static Status bi_bitwOr(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_BOR); }
/* bitwXor(a, b) */
static Status bi_bitwXor(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_BXOR); }
/* bitwShiftL(a, n) */
static Status bi_bitwShiftL(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_SHL); }
/* bitwShiftR(a, n) */
static Status bi_bitwShiftR(Interp *I, const BArgs *a, Value *out) { return binary2(I, a, out, NFN_SHR); }

const BuiltinDef bi_elementwise_table[] = {
    {"exp", bi_exp, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_EXP) | BF_PURE | BF_SPARSE},
    {"sqrt", bi_sqrt, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_SQRT) | BF_PURE | BF_SPARSE},
    {"log", bi_log, "x,base", 1, BIND_POS, 1, BF_FUSE_VM(VM_LOG) | BF_PURE},
    {"abs", bi_abs, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_ABS) | BF_PURE | BF_SPARSE},
    {"sign", bi_sign, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_SIGN) | BF_PURE | BF_SPARSE},
    {"round", bi_round, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_ROUND) | BF_PURE | BF_SPARSE},
    {"floor", bi_floor, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_FLOOR) | BF_PURE | BF_SPARSE},
    {"ceil", bi_ceil, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_CEIL) | BF_PURE | BF_SPARSE},
    {"ceiling", bi_ceil, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_CEIL) | BF_SPARSE},
    {"sin", bi_sin, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_SIN) | BF_SPARSE},
    {"cos", bi_cos, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_COS) | BF_SPARSE},
    {"tan", bi_tan, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_TAN) | BF_SPARSE},
    {"asin", bi_asin, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_ASIN) | BF_SPARSE},
    {"acos", bi_acos, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_ACOS) | BF_SPARSE},
    {"atan", bi_atan, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_ATAN) | BF_SPARSE},
    {"sinh", bi_sinh, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_SINH) | BF_SPARSE},
    {"cosh", bi_cosh, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_COSH) | BF_SPARSE},
    {"tanh", bi_tanh, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_TANH) | BF_PURE | BF_SPARSE},
    {"sigmoid", bi_sigmoid, "x", 1, BIND_POS, 1, BF_RT(RT_SAME) | BF_FUSE_VM(VM_SIGMOID) | BF_PURE | BF_SPARSE},
    {"min", bi_min, "", 0, BIND_VARIADIC, 1, BF_FUSE_MIN | BF_PURE | BF_SPARSE},
    {"max", bi_max, "", 0, BIND_VARIADIC, 1, BF_FUSE_MAX | BF_PURE | BF_SPARSE},
    {"pmin", bi_min, "", 0, BIND_VARIADIC, 1, BF_FUSE_MIN | BF_SPARSE},
    {"pmax", bi_max, "", 0, BIND_VARIADIC, 1, BF_FUSE_MAX | BF_SPARSE},
    {"xor", bi_xor, "a,b", 2, BIND_POS, 1, 0},
    {"bitwAnd", bi_bitwAnd, "a,b", 2, BIND_POS, 1, 0},
    {"bitwOr", bi_bitwOr, "a,b", 2, BIND_POS, 1, 0},
    {"bitwXor", bi_bitwXor, "a,b", 2, BIND_POS, 1, 0},
    {"bitwShiftL", bi_bitwShiftL, "a,b", 2, BIND_POS, 1, 0},
    {"bitwShiftR", bi_bitwShiftR, "a,b", 2, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
