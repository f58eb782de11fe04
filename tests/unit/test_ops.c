/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of the operators (runtime/ops.c), the matrix kernels
 * (runtime/matrix.c, blas.c), value storage (value.c) and the RNG (rng.c):
 * exact results of doc/language.md, "operators" and "types", error messages, in-place reuse,
 * and kernels against naive loops on empty, vector and odd shapes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/blas.h"
#include "runtime/interp.h"
#include "runtime/matrix.h"
#include "runtime/ops.h"
#include "runtime/rng.h"
#include "base/value.h"

/* ---- helpers ---- */

static Value mat(int64_t r, int64_t c, const double *v)
{
    Matrix *m = mat_new_raw(r, c);
    if (m && v)
        memcpy(m->data, v, (size_t)(r * c) * sizeof(double));
    return val_matrix_take(m);
}

static Value str(const char *s)
{
    return val_str_take(str_from(s));
}

/* Matrix with cells filled from a small deterministic generator. */
static Value mat_rand(Rng *g, int64_t r, int64_t c)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++)
        m->data[i] = rng_uniform(g) * 4 - 2;
    return val_matrix_take(m);
}

/* Same, with special cells sprinkled in (NaN, +-0, +-Inf, small ints) so
 * that the SIMD kernels meet every IEEE corner the scalar rules define. */
static Value mat_rand_special(Rng *g, int64_t r, int64_t c)
{
    static const double special[] = {NAN, 0.0, -0.0, INFINITY, -INFINITY, 1.0, -1.0, 2.0, 3.0};
    Value v = mat_rand(g, r, c);
    for (int64_t i = 0; i < r * c; i++)
        if (rng_below(g, 4) == 0)
            v.m->data[i] = special[rng_below(g, sizeof special / sizeof special[0])];
    return v;
}

/* a op b, expected to succeed; operands consumed. */
static Value bin(Interp *I, BinOp op, Value a, Value b)
{
    Value out = val_none();
    if (ops_binary_take(I, op, a, b, &out) != ST_OK) {
        check_report_(false, __FILE__, __LINE__, "unexpected error: %s", I->err.msg ? I->err.msg : "?");
        err_clear(I);
        return val_none();
    }
    return out;
}

/* a op b, expected to fail; returns the message (valid until the next call). */
static const char *bin_err(Interp *I, BinOp op, Value a, Value b)
{
    static char msg[256];
    Value out = val_none();
    if (ops_binary_take(I, op, a, b, &out) == ST_OK) {
        val_release(out);
        return "(no error)";
    }
    snprintf(msg, sizeof msg, "%s", I->err.msg ? I->err.msg : "(null)");
    err_clear(I);
    return msg;
}

static bool cells_are(Value v, int64_t r, int64_t c, const double *want)
{
    if (v.kind != VAL_MATRIX || v.m->rows != r || v.m->cols != c)
        return false;
    for (int64_t i = 0; i < r * c; i++)
        if (!check_same_double_(v.m->data[i], want[i]))
            return false;
    return true;
}

/* ---- scalar arithmetic ---- */

static void test_int_int(Interp *I)
{
    Value v = bin(I, OP_ADD, val_int(7), val_int(2));
    CHECK(v.kind == VAL_INT && v.i == 9);
    v = bin(I, OP_MUL, val_int(-3), val_int(4));
    CHECK(v.kind == VAL_INT && v.i == -12);
    v = bin(I, OP_DIV, val_int(7), val_int(2));
    CHECK(v.kind == VAL_DOUBLE && v.d == 3.5);
    v = bin(I, OP_POW, val_int(2), val_int(10));
    CHECK(v.kind == VAL_DOUBLE && v.d == 1024.0);
    v = bin(I, OP_INTDIV, val_int(-7), val_int(2));
    CHECK(v.kind == VAL_INT && v.i == -3);
    v = bin(I, OP_INTDIV, val_int(7), val_int(2));
    CHECK(v.kind == VAL_INT && v.i == 3);
    v = bin(I, OP_MOD, val_int(-7), val_int(2));
    CHECK(v.kind == VAL_INT && v.i == -1);
    v = bin(I, OP_MOD, val_int(7), val_int(-2));
    CHECK(v.kind == VAL_INT && v.i == 1);
    v = bin(I, OP_MOD, val_int(5), val_int(0));
    CHECK(v.kind == VAL_INT && v.i == 0);
    v = bin(I, OP_INTDIV, val_int(7), val_int(0));
    CHECK(v.kind == VAL_INT && v.i == INT64_MAX);
    v = bin(I, OP_INTDIV, val_int(0), val_int(0));
    CHECK(v.kind == VAL_INT && v.i == 0);
    v = bin(I, OP_MOD, val_int(INT64_MIN), val_int(-1));
    CHECK(v.kind == VAL_INT && v.i == 0);
    /* ((i-1) * batch_size) %% N + 1, as LeNet computes batch starts */
    v = bin(I, OP_MOD, val_int(4 * 64), val_int(100));
    CHECK(v.kind == VAL_INT && v.i == 56);

    CHECK_STR(bin_err(I, OP_ADD, val_int(INT64_MAX), val_int(1)),
              "Integer operation created numerical result overflow");
    CHECK_STR(bin_err(I, OP_SUB, val_int(INT64_MIN), val_int(1)),
              "Integer operation created numerical result overflow");
    CHECK_STR(bin_err(I, OP_MUL, val_int(INT64_MIN), val_int(-1)),
              "Integer operation created numerical result overflow");
    CHECK_STR(bin_err(I, OP_INTDIV, val_int(INT64_MIN), val_int(-1)),
              "Integer operation created numerical result overflow");

    v = bin(I, OP_LT, val_int(INT64_MAX - 1), val_int(INT64_MAX));  /* exact, not via double */
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_EQ, val_int(3), val_int(3));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_AND, val_int(3), val_int(0));
    CHECK(v.kind == VAL_BOOL && !v.b);
    v = bin(I, OP_OR, val_int(3), val_int(0));
    CHECK(v.kind == VAL_BOOL && v.b);
}

static void test_double_mixed(Interp *I)
{
    Value v = bin(I, OP_ADD, val_int(1), val_double(0.5));
    CHECK(v.kind == VAL_DOUBLE && v.d == 1.5);
    v = bin(I, OP_INTDIV, val_double(-7), val_double(2));
    CHECK(v.kind == VAL_DOUBLE && v.d == -3.0);
    v = bin(I, OP_INTDIV, val_double(-1), val_double(2));
    CHECK_DBL(v.d, 0.0);        /* +0.0, not -0.0 */
    v = bin(I, OP_MOD, val_double(-7), val_double(2));
    CHECK_DBL(v.d, -1.0);
    v = bin(I, OP_MOD, val_double(5.5), val_double(2));
    CHECK_DBL(v.d, 1.5);
    v = bin(I, OP_MOD, val_double(5), val_double(0));
    CHECK(isnan(v.d));
    v = bin(I, OP_INTDIV, val_double(5), val_double(0));
    CHECK_DBL(v.d, INFINITY);
    v = bin(I, OP_INTDIV, val_double(0), val_double(0));
    CHECK(isnan(v.d));
    v = bin(I, OP_POW, val_double(1), val_double(NAN));     /* Java: NaN */
    CHECK(isnan(v.d));
    v = bin(I, OP_POW, val_double(-1), val_double(INFINITY));
    CHECK(isnan(v.d));
    v = bin(I, OP_POW, val_double(2), val_double(-1));
    CHECK_DBL(v.d, 0.5);
    v = bin(I, OP_DIV, val_double(1), val_double(0));
    CHECK_DBL(v.d, INFINITY);

    /* NaN compares false with everything (IEEE). */
    v = bin(I, OP_EQ, val_double(NAN), val_double(NAN));
    CHECK(v.kind == VAL_BOOL && !v.b);
    v = bin(I, OP_NE, val_double(NAN), val_double(NAN));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_LT, val_double(NAN), val_int(1));
    CHECK(v.kind == VAL_BOOL && !v.b);
    v = bin(I, OP_GE, val_double(NAN), val_int(1));
    CHECK(v.kind == VAL_BOOL && !v.b);
    v = bin(I, OP_AND, val_double(NAN), val_bool(true));   /* NaN != 0 */
    CHECK(v.kind == VAL_BOOL && v.b);
}

static void test_booleans(Interp *I)
{
    CHECK_STR(bin_err(I, OP_ADD, val_int(1), val_bool(true)), "Invalid Valuetypes for operation INT64 BOOLEAN");
    CHECK_STR(bin_err(I, OP_MUL, val_bool(true), val_double(2)), "Invalid Valuetypes for operation BOOLEAN FP64");
    Value v = bin(I, OP_ADD, val_bool(true), val_bool(true));
    CHECK(v.kind == VAL_DOUBLE && v.d == 2.0);
    v = bin(I, OP_EQ, val_bool(true), val_int(1));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_LT, val_bool(false), val_bool(true));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_AND, val_bool(true), val_double(0.5));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_OR, val_bool(false), val_int(0));
    CHECK(v.kind == VAL_BOOL && !v.b);
    CHECK_STR(bin_err(I, OP_MATMUL, val_int(1), val_int(2)),
              "Matrix multiplication requires matrix operands (got int and int)");
    CHECK_STR(bin_err(I, OP_ANDAND, val_bool(true), val_bool(true)), "Conditional AND (&&) not supported.");
}

static void test_strings(Interp *I)
{
    Value v = bin(I, OP_ADD, str("B:"), val_int(10));
    v = bin(I, OP_ADD, v, str(", C:"));
    v = bin(I, OP_ADD, v, val_double(10.0));
    CHECK(v.kind == VAL_STRING);
    CHECK_STR(v.s->s, "B:10, C:10.0");
    CHECK_INT(v.s->len, 12);
    val_release(v);

    v = bin(I, OP_ADD, val_double(0.1 + 0.2), str(""));
    CHECK_STR(v.s->s, "0.30000000000000004");
    val_release(v);
    v = bin(I, OP_ADD, str("x"), val_bool(true));
    CHECK_STR(v.s->s, "xTRUE");
    val_release(v);
    v = bin(I, OP_ADD, val_int(1), str("5"));       /* strings never convert: "15" */
    CHECK_STR(v.s->s, "15");
    val_release(v);
    v = bin(I, OP_ADD, str("e"), val_double(1e-4));
    CHECK_STR(v.s->s, "e1.0E-4");
    val_release(v);

    v = bin(I, OP_LT, str("abc"), str("abd"));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_EQ, str("add"), str("add"));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_NE, str("add"), str("mean"));
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_EQ, str("TRUE"), val_bool(true));     /* compares string forms */
    CHECK(v.kind == VAL_BOOL && v.b);
    v = bin(I, OP_GT, str("10"), val_int(9));           /* "10" < "9" as strings */
    CHECK(v.kind == VAL_BOOL && !v.b);

    CHECK_STR(bin_err(I, OP_SUB, str("a"), val_int(1)), "Arithmetic '-' not supported over string inputs.");
    CHECK_STR(bin_err(I, OP_MUL, val_int(2), str("a")), "Arithmetic '*' not supported over string inputs.");
    CHECK_STR(bin_err(I, OP_AND, str("a"), val_bool(true)), "Arithmetic '&' not supported over string inputs.");
    double c[] = {1, 2};
    CHECK_STR(bin_err(I, OP_ADD, mat(1, 2, c), str("a")), "Arithmetic '+' not supported over string inputs.");
}

/* ---- matrices ---- */

static void test_matrix_scalar(Interp *I)
{
    const double m[] = {1, 2, 3, 4, 5, 6};
    Value v = bin(I, OP_ADD, mat(2, 3, m), val_int(1));
    CHECK(cells_are(v, 2, 3, (double[]){2, 3, 4, 5, 6, 7}));
    val_release(v);
    v = bin(I, OP_SUB, val_int(1), mat(2, 3, m));                /* order kept */
    CHECK(cells_are(v, 2, 3, (double[]){0, -1, -2, -3, -4, -5}));
    val_release(v);
    v = bin(I, OP_POW, val_double(2), mat(2, 3, m));
    CHECK(cells_are(v, 2, 3, (double[]){2, 4, 8, 16, 32, 64}));
    val_release(v);
    v = bin(I, OP_POW, mat(2, 3, m), val_int(2));
    CHECK(cells_are(v, 2, 3, (double[]){1, 4, 9, 16, 25, 36}));
    val_release(v);
    v = bin(I, OP_POW, mat(2, 3, m), val_double(0.5));
    CHECK(v.kind == VAL_MATRIX && v.m->data[3] == 2.0 && v.m->data[0] == 1.0);
    val_release(v);
    v = bin(I, OP_DIV, mat(2, 3, m), val_double(2));
    CHECK(cells_are(v, 2, 3, (double[]){0.5, 1, 1.5, 2, 2.5, 3}));
    val_release(v);
    v = bin(I, OP_DIV, val_int(6), mat(2, 3, m));
    CHECK(cells_are(v, 2, 3, (double[]){6, 3, 2, 1.5, 1.2, 1}));
    val_release(v);
    v = bin(I, OP_GT, mat(2, 3, m), val_int(3));
    CHECK(cells_are(v, 2, 3, (double[]){0, 0, 0, 1, 1, 1}));
    val_release(v);
    v = bin(I, OP_LE, val_int(3), mat(2, 3, m));                 /* 3 <= M */
    CHECK(cells_are(v, 2, 3, (double[]){0, 0, 1, 1, 1, 1}));
    val_release(v);
    v = bin(I, OP_MOD, mat(2, 3, m), val_int(4));
    CHECK(cells_are(v, 2, 3, (double[]){1, 2, 3, 0, 1, 2}));
    val_release(v);
    const double neg[] = {-7, 7, -1, 0, NAN, INFINITY};
    v = bin(I, OP_INTDIV, mat(2, 3, neg), val_int(2));
    CHECK(cells_are(v, 2, 3, (double[]){-3, 3, 0, 0, NAN, INFINITY}));
    val_release(v);
    v = bin(I, OP_MOD, mat(2, 3, neg), val_int(2));
    CHECK(cells_are(v, 2, 3, (double[]){-1, 1, -1, 0, NAN, NAN}));
    val_release(v);
    v = bin(I, OP_EQ, mat(2, 3, neg), val_double(NAN));
    CHECK(cells_are(v, 2, 3, (double[]){0, 0, 0, 0, 0, 0}));
    val_release(v);
    v = bin(I, OP_NE, mat(2, 3, neg), mat(2, 3, neg));
    CHECK(cells_are(v, 2, 3, (double[]){0, 0, 0, 0, 1, 0}));
    val_release(v);
    /* Booleans: fine in comparisons and & |, rejected in arithmetic. */
    v = bin(I, OP_EQ, mat(2, 3, m), val_bool(true));
    CHECK(cells_are(v, 2, 3, (double[]){1, 0, 0, 0, 0, 0}));
    val_release(v);
    v = bin(I, OP_AND, mat(2, 3, neg), val_bool(true));
    CHECK(cells_are(v, 2, 3, (double[]){1, 1, 1, 0, 1, 1}));
    val_release(v);
    CHECK_STR(bin_err(I, OP_MUL, mat(2, 3, m), val_bool(true)), "Invalid Valuetypes for operation FP64 BOOLEAN");
    /* 0-sized matrices go through without touching data. */
    v = bin(I, OP_ADD, mat(0, 3, NULL), val_int(1));
    CHECK(v.kind == VAL_MATRIX && v.m->rows == 0 && v.m->cols == 3);
    val_release(v);
    List *l = list_new(0, false);
    CHECK_STR(bin_err(I, OP_ADD, val_list_take(l), val_int(1)), "operator '+' is not defined for list and int");
}

static void test_broadcast(Interp *I)
{
    const double m[] = {1, 2, 3, 4, 5, 6};         /* 2x3 */
    const double col[] = {10, 20};                 /* 2x1 */
    const double row[] = {1, 2, 3};                /* 1x3 */
    Value v = bin(I, OP_SUB, mat(2, 3, m), mat(2, 1, col));
    CHECK(cells_are(v, 2, 3, (double[]){-9, -8, -7, -16, -15, -14}));
    val_release(v);
    v = bin(I, OP_DIV, mat(2, 3, m), mat(1, 3, row));
    CHECK(cells_are(v, 2, 3, (double[]){1, 1, 1, 4, 2.5, 2}));
    val_release(v);
    v = bin(I, OP_ADD, mat(2, 3, m), mat(1, 1, (double[]){100}));
    CHECK(cells_are(v, 2, 3, (double[]){101, 102, 103, 104, 105, 106}));
    val_release(v);
    v = bin(I, OP_MUL, mat(2, 1, col), mat(1, 3, row));        /* outer */
    CHECK(cells_are(v, 2, 3, (double[]){10, 20, 30, 20, 40, 60}));
    val_release(v);
    v = bin(I, OP_GT, mat(2, 1, col), mat(1, 3, (double[]){5, 15, 25}));
    CHECK(cells_are(v, 2, 3, (double[]){1, 0, 0, 1, 1, 0}));
    val_release(v);
    v = bin(I, OP_MUL, mat(2, 3, m), mat(2, 3, m));
    CHECK(cells_are(v, 2, 3, (double[]){1, 4, 9, 16, 25, 36}));
    val_release(v);

    CHECK_STR(bin_err(I, OP_ADD, mat(2, 3, m), mat(3, 2, m)),
              "Block sizes are not matched for binary cell operations: 2x3 vs 3x2");
    /* The vector must be the right operand. */
    CHECK_STR(bin_err(I, OP_ADD, mat(1, 3, row), mat(2, 3, m)),
              "Block sizes are not matched for binary cell operations: 1x3 vs 2x3");
    CHECK_STR(bin_err(I, OP_ADD, mat(2, 1, col), mat(2, 3, m)),
              "Block sizes are not matched for binary cell operations: 2x1 vs 2x3");
    CHECK_STR(bin_err(I, OP_ADD, mat(2, 3, m), mat(3, 1, m)),
              "Block sizes are not matched for binary cell operations: 2x3 vs 3x1");

    /* Bigger shapes against a naive loop, every operator and layout. */
    Rng g;
    rng_seed(&g, 7);
    for (BinOp op = OP_ADD; op <= OP_OR; op++) {
        if (op == OP_MATMUL)
            continue;
        Value A = mat_rand_special(&g, 37, 29), C = mat_rand_special(&g, 37, 1);
        Value R = mat_rand_special(&g, 1, 29), S = mat_rand_special(&g, 37, 29);
        Value r1 = bin(I, op, val_ref(A), val_ref(C));
        Value r2 = bin(I, op, val_ref(A), val_ref(R));
        Value r3 = bin(I, op, val_ref(A), val_ref(S));
        Value r4 = bin(I, op, val_double(op == OP_POW ? 2.0 : 0.75), val_ref(A));
        Value r6 = bin(I, op, val_ref(A), val_double(op == OP_POW ? 2.0 : NAN));
        Value r7 = bin(I, op, val_ref(A), val_double(0.0));
        Value r5 = bin(I, op, val_ref(C), val_ref(R));
        bool ok = true;
        for (int64_t i = 0; i < 37; i++)
            for (int64_t j = 0; j < 29; j++) {
                double a = A.m->data[i * 29 + j];
                ok &= check_same_double_(r1.m->data[i * 29 + j], ops_apply_d(op, a, C.m->data[i]));
                ok &= check_same_double_(r2.m->data[i * 29 + j], ops_apply_d(op, a, R.m->data[j]));
                ok &= check_same_double_(r3.m->data[i * 29 + j], ops_apply_d(op, a, S.m->data[i * 29 + j]));
                ok &= check_same_double_(r4.m->data[i * 29 + j], ops_apply_d(op, op == OP_POW ? 2.0 : 0.75, a));
                ok &= check_same_double_(r6.m->data[i * 29 + j], ops_apply_d(op, a, op == OP_POW ? 2.0 : NAN));
                ok &= check_same_double_(r7.m->data[i * 29 + j], ops_apply_d(op, a, 0.0));
                ok &= check_same_double_(r5.m->data[i * 29 + j], ops_apply_d(op, C.m->data[i], R.m->data[j]));
            }
        check_report_(ok, __FILE__, __LINE__, "broadcast kernels vs naive for op %d", (int)op);
        Value all[] = {A, C, R, S, r1, r2, r3, r4, r5, r6, r7};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            val_release(all[k]);
    }
}

static void test_reuse(Interp *I)
{
    const double m[] = {1, 2, 3, 4};
    /* Unshared operand: its storage becomes the result. */
    Value a = mat(2, 2, m);
    Matrix *pa = a.m;
    double *da = a.m->data;
    Value v = bin(I, OP_MUL, a, val_int(3));
    CHECK(v.m == pa && v.m->data == da);
    CHECK(cells_are(v, 2, 2, (double[]){3, 6, 9, 12}));
    /* Scalar on the left: the right matrix is reused. */
    Value w = bin(I, OP_SUB, val_int(1), v);
    CHECK(w.m == pa);
    CHECK(cells_are(w, 2, 2, (double[]){-2, -5, -8, -11}));
    /* Right operand reused when the left one is shared. */
    Value keep = mat(2, 2, m);
    Value x = bin(I, OP_ADD, val_ref(keep), w);
    CHECK(x.m == pa);
    CHECK(cells_are(x, 2, 2, (double[]){-1, -3, -5, -7}));
    CHECK(cells_are(keep, 2, 2, m));         /* the shared operand untouched */
    /* Shared operands: fresh result, operands unchanged. */
    Value y = bin(I, OP_ADD, val_ref(keep), val_ref(keep));
    CHECK(y.m != keep.m);
    CHECK(cells_are(keep, 2, 2, m));
    CHECK(cells_are(y, 2, 2, (double[]){2, 4, 6, 8}));
    /* Borrowing entry point never reuses. */
    Value z = val_none();
    CHECK(ops_binary(I, OP_MUL, keep, val_int(2), &z) == ST_OK);
    CHECK(z.m != keep.m && cells_are(keep, 2, 2, m));
    CHECK(cells_are(z, 2, 2, (double[]){2, 4, 6, 8}));
    /* Broadcast into the reused left operand. */
    Value big = mat(2, 2, m);
    Matrix *pb = big.m;
    Value b2 = bin(I, OP_SUB, big, mat(2, 1, (double[]){1, 3}));
    CHECK(b2.m == pb);
    CHECK(cells_are(b2, 2, 2, (double[]){0, 1, 0, 1}));
    /* A result of a different shape cannot reuse. */
    Value col = mat(2, 1, (double[]){1, 2});
    Matrix *pc = col.m;
    Value outer = bin(I, OP_ADD, col, mat(1, 2, (double[]){10, 20}));
    CHECK(outer.m != pc && cells_are(outer, 2, 2, (double[]){11, 21, 12, 22}));
    Value all[] = {x, keep, y, z, b2, outer};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        val_release(all[k]);
}

/* ---- matrix multiply and transpose ---- */

static void naive_mm(const Matrix *A, bool tA, const Matrix *B, bool tB, double *C)
{
    int64_t m = tA ? A->cols : A->rows, k = tA ? A->rows : A->cols, n = tB ? B->rows : B->cols;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (tA ? A->data[p * A->cols + i] : A->data[i * A->cols + p]) *
                     (tB ? B->data[j * B->cols + p] : B->data[p * B->cols + j]);
            C[i * n + j] = s;
        }
}

static void check_mm(Interp *I, Rng *g, int64_t m, int64_t k, int64_t n)
{
    Value A = mat_rand(g, m, k), B = mat_rand(g, k, n);
    Value C = bin(I, OP_MATMUL, val_ref(A), val_ref(B));
    bool ok = C.kind == VAL_MATRIX && C.m->rows == m && C.m->cols == n;
    if (ok && m * n > 0) {
        double *want = malloc((size_t)(m * n) * sizeof(double));
        naive_mm(A.m, false, B.m, false, want);
        for (int64_t i = 0; i < m * n; i++)
            ok &= fabs(C.m->data[i] - want[i]) <= 1e-12 * (double)(k + 1);
        free(want);
    }
    check_report_(ok, __FILE__, __LINE__, "matmul %lldx%lld %%*%% %lldx%lld", (long long)m, (long long)k,
                  (long long)k, (long long)n);
    val_release(A);
    val_release(B);
    val_release(C);
}

static void test_matmul(Interp *I)
{
    const double a[] = {1, 2, 3, 4, 5, 6};         /* 2x3 */
    const double b[] = {7, 8, 9, 10, 11, 12};      /* 3x2 */
    Value c = bin(I, OP_MATMUL, mat(2, 3, a), mat(3, 2, b));
    CHECK(cells_are(c, 2, 2, (double[]){58, 64, 139, 154}));
    val_release(c);
    CHECK_STR(bin_err(I, OP_MATMUL, mat(2, 3, a), mat(2, 3, b)),
              "invalid dimensions for matrix multiplication (k1=3, k2=2)");
    CHECK_STR(bin_err(I, OP_MATMUL, mat(2, 3, a), val_double(2)),
              "Matrix multiplication requires matrix operands (got matrix and double)");
    /* Empty shapes: 0 rows, and an empty inner dimension (zero result). */
    c = bin(I, OP_MATMUL, mat(0, 3, NULL), mat(3, 2, b));
    CHECK(c.kind == VAL_MATRIX && c.m->rows == 0 && c.m->cols == 2);
    val_release(c);
    c = bin(I, OP_MATMUL, mat(2, 0, NULL), mat(0, 3, NULL));
    CHECK(cells_are(c, 2, 3, (double[]){0, 0, 0, 0, 0, 0}));
    val_release(c);

    Rng g;
    rng_seed(&g, 11);
    const int64_t shapes[][3] = {
        {1, 1, 1}, {3, 5, 7}, {24, 24, 24}, {70, 50, 40}, {100, 80, 1}, {1, 80, 100},
        {1, 300, 1}, {257, 129, 65}, {5, 1000, 3}, {200, 1, 300},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_mm(I, &g, shapes[s][0], shapes[s][1], shapes[s][2]);

    /* Transposed operands (mat_matmul_t) on small, vector and BLAS paths. */
    const int64_t tshapes[][3] = {{3, 4, 5}, {60, 70, 50}, {1, 90, 80}, {90, 80, 1}};
    for (size_t s = 0; s < sizeof tshapes / sizeof tshapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            bool tA = t & 1, tB = t & 2;
            int64_t m = tshapes[s][0], k = tshapes[s][1], n = tshapes[s][2];
            Value A = tA ? mat_rand(&g, k, m) : mat_rand(&g, m, k);
            Value B = tB ? mat_rand(&g, n, k) : mat_rand(&g, k, n);
            Matrix *C = mat_new_raw(m, n);
            double *want = malloc((size_t)(m * n) * sizeof(double));
            mat_matmul_t(A.m, tA, B.m, tB, C);
            naive_mm(A.m, tA, B.m, tB, want);
            bool ok = true;
            for (int64_t i = 0; i < m * n; i++)
                ok &= fabs(C->data[i] - want[i]) <= 1e-12 * (double)(k + 1);
            check_report_(ok, __FILE__, __LINE__, "mat_matmul_t %lldx%lldx%lld tA=%d tB=%d", (long long)m,
                          (long long)k, (long long)n, tA, tB);
            free(want);
            val_release(A);
            val_release(B);
            mat_release(C);
        }
}

/* mat_matmul_stop: a product large enough to go in row panels has the
 * very bits of mat_matmul_t's (which splits it alike), with a flag or
 * without; single-threaded, explicit panels of 64 rows match too; a set
 * stop flag ends it early with false (issue 28: Ctrl-C between panels). */
static void test_matmul_panels(void)
{
    Rng g;
    rng_seed(&g, 29);
    /* 4400 x 1000 x 1000: 8.8e9 flops, two automatic panels (4295 rows) */
    const int64_t shapes[][3] = {{4400, 1000, 1000}, {97, 33, 129}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < (s == 0 ? 1 : 4); t++) {
            bool tA = t & 1, tB = t & 2;
            int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
            Value A = tA ? mat_rand(&g, k, m) : mat_rand(&g, m, k);
            Value B = tB ? mat_rand(&g, n, k) : mat_rand(&g, k, n);
            Matrix *C = mat_new_raw(m, n), *P = mat_new_raw(m, n);
            mat_matmul_t(A.m, tA, B.m, tB, C);
            atomic_int go = 0, stop = 1;
            bool done = mat_matmul_stop(A.m, tA, B.m, tB, P, &go, 0);
            check_report_(done && memcmp(C->data, P->data, (size_t)(m * n) * sizeof(double)) == 0, __FILE__,
                          __LINE__, "matmul with a stop flag %lldx%lldx%lld tA=%d tB=%d", (long long)m,
                          (long long)k, (long long)n, tA, tB);
            if (s == 1) {
                int saved = blas_get_threads();
                blas_set_threads(1);
                mat_matmul_t(A.m, tA, B.m, tB, C);
                done = mat_matmul_stop(A.m, tA, B.m, tB, P, NULL, 64);
                blas_set_threads(saved);
                check_report_(done && memcmp(C->data, P->data, (size_t)(m * n) * sizeof(double)) == 0, __FILE__,
                              __LINE__, "panels of 64 rows, one thread, tA=%d tB=%d", tA, tB);
            }
            CHECK(!mat_matmul_stop(A.m, tA, B.m, tB, P, &stop, s == 1 ? 64 : 0));
            val_release(A);
            val_release(B);
            mat_release(C);
            mat_release(P);
        }
}

static void test_transpose(void)
{
    Rng g;
    rng_seed(&g, 3);
    const int64_t shapes[][2] = {{37, 45}, {1, 9}, {9, 1}, {64, 64}, {0, 3}, {100, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t r = shapes[s][0], c = shapes[s][1];
        Value A = mat_rand(&g, r, c);
        Matrix *T = mat_new_raw(c, r);
        mat_transpose(A.m, T);
        bool ok = true;
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++)
                ok &= T->data[j * r + i] == A.m->data[i * c + j];
        check_report_(ok, __FILE__, __LINE__, "transpose %lldx%lld", (long long)r, (long long)c);
        val_release(A);
        mat_release(T);
    }
}

/* ---- unary ---- */

static void test_unary(Interp *I)
{
    Value v;
    CHECK(ops_unary_take(I, UOP_NEG, val_int(5), &v) == ST_OK && v.kind == VAL_INT && v.i == -5);
    CHECK(ops_unary_take(I, UOP_NEG, val_int(INT64_MIN), &v) == ST_ERR);
    CHECK_STR(I->err.msg, "Integer operation created numerical result overflow");
    err_clear(I);
    CHECK(ops_unary_take(I, UOP_NEG, val_double(0.0), &v) == ST_OK);
    CHECK_DBL(v.d, -0.0);
    CHECK(ops_unary_take(I, UOP_NOT, val_int(0), &v) == ST_OK && v.kind == VAL_BOOL && v.b);
    CHECK(ops_unary_take(I, UOP_NOT, val_double(NAN), &v) == ST_OK && v.kind == VAL_BOOL && !v.b);
    CHECK(ops_unary_take(I, UOP_NOT, val_bool(true), &v) == ST_OK && v.kind == VAL_BOOL && !v.b);
    CHECK(ops_unary_take(I, UOP_PLUS, val_int(3), &v) == ST_OK && v.kind == VAL_INT && v.i == 3);
    CHECK(ops_unary_take(I, UOP_NEG, val_bool(true), &v) == ST_ERR);
    CHECK_STR(I->err.msg, "Invalid Valuetypes for operation BOOLEAN INT64");
    err_clear(I);
    CHECK(ops_unary_take(I, UOP_NEG, str("a"), &v) == ST_ERR);
    CHECK_STR(I->err.msg, "Arithmetic '*' not supported over string inputs.");
    err_clear(I);

    const double m[] = {0, -1.5, 2, NAN};
    Value a = mat(2, 2, m);
    Matrix *pa = a.m;
    CHECK(ops_unary_take(I, UOP_NEG, a, &v) == ST_OK);
    CHECK(v.m == pa);       /* unshared: negated in place */
    CHECK(cells_are(v, 2, 2, (double[]){-0.0, 1.5, -2, NAN}));
    Value w;
    CHECK(ops_unary_take(I, UOP_NOT, val_ref(v), &w) == ST_OK);
    CHECK(w.m != v.m);      /* shared: copied */
    CHECK(cells_are(w, 2, 2, (double[]){1, 0, 0, 0}));
    CHECK(cells_are(v, 2, 2, (double[]){-0.0, 1.5, -2, NAN}));
    val_release(v);
    val_release(w);
}

/* ---- conversions ---- */

static void test_conversions(Interp *I)
{
    CHECK_INT(ops_d2i(2.9), 2);
    CHECK_INT(ops_d2i(-2.9), -2);
    CHECK_INT(ops_d2i(0.9999999999999999), 1);     /* the 2^-53 nudge */
    CHECK_INT(ops_d2i(12.8 + 1), 13);
    CHECK_INT(ops_d2i(NAN), 0);
    CHECK_INT(ops_d2i(1e300), INT64_MAX);
    CHECK_INT(ops_d2i(-INFINITY), INT64_MIN);
    CHECK_INT(ops_d2i(-0.0), 0);

    bool b;
    int64_t i;
    double d;
    Value s;
    s = str("TRUE");
    CHECK(ops_to_bool(I, s, &b) == ST_OK && b);
    val_release(s);
    s = str("true");
    CHECK(ops_to_bool(I, s, &b) == ST_OK && b);
    val_release(s);
    s = str("True");
    CHECK(ops_to_bool(I, s, &b) == ST_OK && !b);
    val_release(s);
    CHECK(ops_to_bool(I, val_double(NAN), &b) == ST_OK && b);
    CHECK(ops_to_bool(I, val_int(0), &b) == ST_OK && !b);

    s = str("3.7");
    CHECK(ops_to_int(I, s, &i) == ST_OK && i == 3);
    val_release(s);
    s = str(" -12 ");
    CHECK(ops_to_int(I, s, &i) == ST_OK && i == -12);
    val_release(s);
    s = str("9007199254740993");    /* exact beyond 2^53 */
    CHECK(ops_to_int(I, s, &i) == ST_OK && i == 9007199254740993LL);
    val_release(s);
    s = str("abc");
    CHECK(ops_to_int(I, s, &i) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot convert 'abc' to a number");
    err_clear(I);
    val_release(s);
    CHECK(ops_to_int(I, val_double(-7.5), &i) == ST_OK && i == -7);
    CHECK(ops_to_int(I, val_bool(true), &i) == ST_OK && i == 1);

    const char *good[] = {"1e3", " 1000 ", "1000.", "+1000", "1000d", "1e3F", "0x1.f4p9"};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        s = str(good[k]);
        d = 0;
        CHECK(ops_to_double(I, s, &d) == ST_OK);
        check_report_(d == 1000.0, __FILE__, __LINE__, "parse '%s' -> %g", good[k], d);
        val_release(s);
    }
    s = str("-Infinity");
    CHECK(ops_to_double(I, s, &d) == ST_OK && d == -INFINITY);
    val_release(s);
    s = str("NaN");
    CHECK(ops_to_double(I, s, &d) == ST_OK && isnan(d));
    val_release(s);
    const char *bad[] = {"", "inf", "nan", "1e", "0x10", "1,5", "abc", "1.5x", ".", "- 1"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        s = str(bad[k]);
        Status st = ops_to_double(I, s, &d);
        check_report_(st == ST_ERR, __FILE__, __LINE__, "'%s' must not parse", bad[k]);
        err_clear(I);
        val_release(s);
    }

    Str *o = NULL;
    CHECK(ops_to_str(I, val_double(1.0), &o) == ST_OK);
    CHECK_STR(o->s, "1.0");
    str_release(o);
    CHECK(ops_to_str(I, val_int(-42), &o) == ST_OK);
    CHECK_STR(o->s, "-42");
    str_release(o);
    CHECK(ops_to_str(I, val_bool(false), &o) == ST_OK);
    CHECK_STR(o->s, "FALSE");
    str_release(o);

    Value out;
    CHECK(ops_convert_take(I, str("true"), SCALAR_BOOLEAN, &out) == ST_OK && out.kind == VAL_BOOL && out.b);
    CHECK(ops_convert_take(I, val_double(2.9), SCALAR_INT, &out) == ST_OK && out.kind == VAL_INT && out.i == 2);
    CHECK(ops_convert_take(I, val_int(3), SCALAR_DOUBLE, &out) == ST_OK && out.kind == VAL_DOUBLE && out.d == 3.0);
    CHECK(ops_convert_take(I, val_int(5), SCALAR_STRING, &out) == ST_OK && out.kind == VAL_STRING);
    CHECK_STR(out.s->s, "5");
    val_release(out);
    CHECK(ops_convert_take(I, str("x"), SCALAR_STRING, &out) == ST_OK && out.kind == VAL_STRING);
    val_release(out);
    CHECK(ops_convert_take(I, mat(1, 1, (double[]){1}), SCALAR_INT, &out) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot convert matrix to int");
    err_clear(I);
    CHECK(ops_convert_take(I, val_list_take(list_new(0, false)), SCALAR_DOUBLE, &out) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot convert list to double");
    err_clear(I);
    CHECK(ops_convert_take(I, str("zz"), SCALAR_DOUBLE, &out) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot convert 'zz' to a number");
    err_clear(I);
}

/* ---- value storage ---- */

static void test_values(void)
{
    Matrix *m = mat_new_raw(3, 5);
    CHECK(m && ((uintptr_t)m->data % 64) == 0);
    mat_release(m);
    m = mat_new_raw(0, 5);
    CHECK(m && m->data == NULL && mat_len(m) == 0);
    mat_release(m);
    CHECK(mat_new_raw(INT64_MAX, 2) == NULL);
    CHECK(mat_new_raw(1LL << 40, 1LL << 40) == NULL);
    CHECK(mat_new_raw(-1, 2) == NULL);
    m = mat_new_zero_raw(4, 4);
    CHECK(m->data[0] == 0 && m->data[15] == 0);
    m->data[5] = 7;
    Matrix *c = mat_clone_raw(m);
    CHECK(c != m && c->data[5] == 7 && c->rows == 4);
    mat_release(m);
    mat_release(c);

    Str *s = str_printf("%s-%d", "ab", 12);
    CHECK_STR(s->s, "ab-12");
    CHECK_INT(s->len, 5);
    str_release(s);

    List *l = list_new(0, false);
    for (int k = 0; k < 20; k++)
        CHECK(list_push(l, val_int(k), NULL));
    Value mv = val_matrix_take(mat_new_zero_raw(2, 2));
    CHECK(list_push(l, mv, NULL));
    CHECK(atomic_load(&mv.m->h.rc) == 2);
    val_release(mv);
    CHECK_INT(l->n, 21);
    CHECK(l->names == NULL && list_find(l, "a") == -1);
    List *cl = list_clone(l);
    CHECK(cl->n == 21 && cl->items[20].m == l->items[20].m && atomic_load(&cl->items[20].m->h.rc) == 2);
    list_release(l);
    list_release(cl);

    List *nl = list_new(2, true);
    CHECK(list_push_take(nl, val_double(0.01), "lr"));
    CHECK(list_push_take(nl, str("x"), "name"));
    CHECK(list_push_take(nl, val_int(3), "C"));
    CHECK_INT(list_find(nl, "C"), 2);
    CHECK_INT(list_find(nl, "lr"), 0);
    CHECK_INT(list_find(nl, "nope"), -1);
    List *nc = list_clone(nl);
    CHECK_STR(nc->names[1]->s, "name");
    list_release(nl);
    CHECK_INT(list_find(nc, "name"), 1);
    list_release(nc);

    CHECK_STR(val_kind_name(VAL_INT), "int");
    CHECK_STR(val_kind_name(VAL_BOOL), "boolean");
    CHECK_STR(val_data_type_name(VAL_STRING), "scalar");
    CHECK_STR(val_data_type_name(VAL_LIST), "list");
}

/* ---- RNG ---- */

static void test_rng(void)
{
    Rng a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    bool same = true;
    for (int k = 0; k < 100; k++)
        same &= rng_next(&a) == rng_next(&b);
    CHECK(same);
    rng_seed(&b, 43);
    CHECK(rng_next(&a) != rng_next(&b));

    const int N = 200000;
    double sum = 0, sum2 = 0, lo = 1, hi = 0;
    for (int k = 0; k < N; k++) {
        double u = rng_uniform(&a);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    CHECK(lo >= 0 && hi < 1);
    CHECK_NEAR(sum / N, 0.5, 0.005);

    sum = sum2 = 0;
    for (int k = 0; k < N; k++) {
        double z = rng_normal(&a);
        sum += z;
        sum2 += z * z;
    }
    CHECK_NEAR(sum / N, 0.0, 0.01);
    CHECK_NEAR(sum2 / N, 1.0, 0.02);

    const double lambdas[] = {0.5, 3, 9.9, 10, 50, 1000};
    for (size_t l = 0; l < sizeof lambdas / sizeof lambdas[0]; l++) {
        double lam = lambdas[l];
        sum = sum2 = 0;
        bool integral = true;
        for (int k = 0; k < N / 4; k++) {
            double p = rng_poisson(&a, lam);
            integral &= p >= 0 && p == floor(p);
            sum += p;
            sum2 += p * p;
        }
        double mean = sum / (N / 4), var = sum2 / (N / 4) - mean * mean;
        CHECK(integral);
        check_report_(fabs(mean - lam) < 0.05 * sqrt(lam) + 0.01 && fabs(var / lam - 1) < 0.05, __FILE__,
                      __LINE__, "poisson(%g): mean %g var %g", lam, mean, var);
    }
    CHECK_DBL(rng_poisson(&a, 0), 0.0);

    int counts[7] = {0};
    bool inrange = true;
    for (int k = 0; k < 70000; k++) {
        uint64_t x = rng_below(&a, 7);
        inrange &= x < 7;
        if (x < 7)
            counts[x]++;
    }
    CHECK(inrange);
    for (int k = 0; k < 7; k++)
        check_report_(abs(counts[k] - 10000) < 500, __FILE__, __LINE__, "rng_below bucket %d: %d", k, counts[k]);
    CHECK(rng_below(&a, 1) == 0);
    CHECK(rng_below(&a, 0) == 0);

    uint64_t s1 = rng_fresh_seed(), s2 = rng_fresh_seed();
    CHECK(s1 != s2);
}

static void test_blas_info(void)
{
    const char *core = blas_corename();
    CHECK(core && *core);
    int t = blas_get_threads();
    CHECK(t >= 1);
    blas_set_threads(1);
    CHECK_INT(blas_get_threads(), 1);
    blas_set_threads(t);
}

int main(void)
{
    Interp I;
    interp_init(&I, NULL, 1);
    test_int_int(&I);
    test_double_mixed(&I);
    test_booleans(&I);
    test_strings(&I);
    test_matrix_scalar(&I);
    test_broadcast(&I);
    test_reuse(&I);
    test_matmul(&I);
    test_matmul_panels();
    test_transpose();
    test_unary(&I);
    test_conversions(&I);
    test_values();
    test_rng();
    test_blas_info();
    interp_destroy(&I);
    return CHECK_DONE();
}
