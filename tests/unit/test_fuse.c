/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of the fused element-wise evaluator (runtime/fuse.c) and the
 * vector math it shares with the builtins (runtime/vmath.c): every fused
 * expression is checked cell by cell, bit for bit, against a reference loop
 * written here, over shapes 0xN, Nx0, 1x1, vectors and sizes that are not
 * multiples of 8, with NaN/Inf/-0 sprinkled in, broadcasting rows, columns,
 * scalars and 1x1 matrices on either side, on one and several threads.
 * Also: operands are never written (value semantics), errors are the
 * operator-at-a-time ones, and the thread budget's arithmetic. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/registry.h"
#include "check.h"
#include "runtime/blas.h"
#include "runtime/eval.h"
#include "runtime/interp.h"
#include "runtime/pool.h"
#include "runtime/program.h"
#include "runtime/resolve.h"
#include "runtime/rng.h"
#include "runtime/vmath.h"

/* ---- a tiny harness: a program, its variables, one statement ---- */

typedef struct Env {
    Program *p;
    Interp I;
    CallFrame top;
} Env;

static int slot_of(Env *e, const char *name)
{
    const SlotTable *t = e->top.names;
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    return -1;
}

/* Loads 'text' as the main program of a fresh Env (caller: env_free). */
static bool env_load(Env *e, const char *text, Node ***stmts, int *n)
{
    memset(e, 0, sizeof *e);
    e->p = program_new();
    DiagErr err;
    if (!program_load_main(e->p, "fuse_test.dml", text, strlen(text), stmts, n, &err)) {
        char *msg = program_render_err(e->p, &err, false);
        check_report_(false, __FILE__, __LINE__, "load failed: %s", msg ? msg : err.msg);
        free(msg);
        program_free(e->p);
        return false;
    }
    interp_init(&e->I, e->p, 1);
    e->I.frame = &e->top;
    exec_sync_top(&e->I, &e->top);
    e->top.names = &e->p->top;
    return true;
}

static void env_set(Env *e, const char *name, Value v)
{
    int s = slot_of(e, name);
    if (s < 0) {
        val_release(v);
        return;
    }
    val_release(e->top.slots[s]);
    e->top.slots[s] = v;
}

static Value env_get(Env *e, const char *name)
{
    int s = slot_of(e, name);
    return s < 0 ? val_none() : e->top.slots[s];
}

static void env_free(Env *e)
{
    for (int i = 0; i < e->top.nslots; i++)
        val_release(e->top.slots[i]);
    free(e->top.slots);
    interp_destroy(&e->I);
    program_free(e->p);
}

/* ---- data ---- */

static Matrix *mrand(Rng *g, int64_t r, int64_t c, bool special)
{
    static const double sp[] = {NAN, 0.0, -0.0, INFINITY, -INFINITY, 1.0, -1.0, 2.0, 0.5};
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++) {
        m->data[i] = rng_uniform(g) * 4 - 2;
        if (special && rng_below(g, 5) == 0)
            m->data[i] = sp[rng_below(g, sizeof sp / sizeof sp[0])];
    }
    return m;
}

/* The operands of a case: A, B full; rw a row (1 x C); cl a column (R x 1);
 * one a 1x1 matrix; s a double. */
typedef struct Cells {
    double a, b, rw, cl, one, s;
} Cells;

typedef double (*RefFn)(const Cells *c);

static double vexp(double x) { return vm_unary1(VM_EXP, x); }
static double vlog(double x) { return vm_unary1(VM_LOG, x); }
/* Java's pow corners; y == 2 squares (ops.c: x*x, correctly rounded, as the
 * matrix kernels square). */
static double jpow(double x, double y)
{
    return (isnan(y) || (isinf(y) && fabs(x) == 1.0)) ? NAN : y == 2.0 ? x * x : pow(x, y);
}

static double r_issue(const Cells *c) { return vexp(c->a) * c->b + c->a; }
static double r_chain(const Cells *c) { return vlog(vexp(c->a) + 1) - c->b / 2; }
static double r_bcast(const Cells *c) { return (c->a - c->rw) * c->cl + c->s; }
static double r_scal_left(const Cells *c) { return c->s - c->a * (2 * c->s); }
static double r_one(const Cells *c) { return c->a * c->one + c->b * c->one; }
static double r_cmp(const Cells *c) { return ((c->a > 0) ? 1.0 : 0.0) * c->b + ((c->a != c->b) ? 1.0 : 0.0); }
static double r_logic(const Cells *c)
{
    double p = (c->a < c->b) ? 1.0 : 0.0, q = (c->b >= 0.5) ? 1.0 : 0.0;
    double andv = ((p != 0) & (q != 0)) ? 1.0 : 0.0, orv = ((p != 0) | (q != 0)) ? 1.0 : 0.0;
    return andv + 2 * orv;
}
static double r_neg_not(const Cells *c) { return -(c->a * c->b) + ((c->a == 0) ? 1.0 : 0.0) * 3; }
static double r_pow2(const Cells *c) { return c->a * c->a + c->b; }          /* (A^2 + B): x^2 is x*x */
static double r_powm(const Cells *c) { return jpow(c->a, c->b) * 1; }        /* A^B elementwise: pow */
static double r_sigmoid(const Cells *c)
{
    return 1.0 / (1.0 + vexp(-(c->a * 2))) + 0;
}
static double r_rowcol_fn(const Cells *c) { return c->a + vexp(c->cl * 2); }
static double r_mod(const Cells *c)
{
    /* A %% 3 + A %/% 2: through the scalar kernels of ops.c */
    double y = 3, q = c->a / y, d;
    if (!isfinite(q))
        d = q;
    else
        d = copysign(floor(fabs(q) + 0x1p-53), q) + 0.0;
    double m = y == 0 ? NAN : c->a - d * y;
    double q2 = c->a / 2, d2 = !isfinite(q2) ? q2 : copysign(floor(fabs(q2) + 0x1p-53), q2) + 0.0;
    return m + d2;
}

/* Java Math.round as the builtin does it: saturating at the long range. */
static double jround(double v)
{
    if (isnan(v))
        return 0.0;
    if (v >= 0x1p63)
        return 0x1p63;
    if (v <= -0x1p63)
        return -0x1p63;
    double f = floor(v);
    return (v - f >= 0.5 ? f + 1.0 : f) + 0.0;
}
static double r_funcs_j(const Cells *c)
{
    return sqrt(fabs(c->a)) + floor(c->b * 3) - jround(c->a) + tanh(c->b) * sin(c->a);
}

/* One operator alone: fused only to split a large matrix over threads. */
static double r_solo_mul(const Cells *c) { return c->a * c->b; }
static double r_solo_sub(const Cells *c) { return c->a - c->rw; }
static double r_solo_div(const Cells *c) { return c->a / c->cl; }
static double r_solo_gt(const Cells *c) { return (c->a > c->s) ? 1.0 : 0.0; }
static double r_solo_neg(const Cells *c) { return -c->a; }
static double r_solo_not(const Cells *c) { return (c->a == 0) ? 1.0 : 0.0; }
static double r_solo_sq(const Cells *c) { return c->a * c->a; }
static double r_solo_exp(const Cells *c) { return vexp(c->a); }
static double r_solo_sqrt(const Cells *c) { return sqrt(c->a); }
static double r_solo_abs(const Cells *c) { return fabs(c->a); }
static double r_solo_floor(const Cells *c) { return floor(c->a); }
static double r_solo_ceil(const Cells *c) { return ceil(c->a); }
static double r_solo_sign(const Cells *c) { return c->a > 0 ? 1.0 : c->a < 0 ? -1.0 : c->a; }
static double jround(double v);
static double r_solo_round(const Cells *c) { return jround(c->a); }
/* max/min of two arguments: Java's Math.max/min, NaN if either is NaN. */
static double jmax(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double jmin(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double r_mm_relu(const Cells *c) { return jmax(0, c->a); }
static double r_mm_chain(const Cells *c) { return jmax(c->a * 2, c->b - 0.5) + jmin(c->a, c->b) * 2; }
static double r_mm_p(const Cells *c) { return jmax(c->a, c->s) - jmin(c->b, 1); }
static double r_mm_col(const Cells *c) { return jmax(c->a, c->cl) + 0; }
static double r_mm_row(const Cells *c) { return jmin(c->rw, c->a) * 1; }
static double r_mm_nested(const Cells *c) { return jmin(jmax(c->a, -0.5), 0.5) + exp(0) * 0; }

static const struct Case {
    const char *expr;
    RefFn ref;
} CASES[] = {
    {"exp(A) * B + A", r_issue},
    {"log(exp(A) + 1) - B / 2", r_chain},
    {"(A - rw) * cl + s", r_bcast},
    {"s - A * (2 * s)", r_scal_left},
    {"A * one + B * one", r_one},
    {"(A > 0) * B + (A != B)", r_cmp},
    {"((A < B) & (B >= 0.5)) + 2 * ((A < B) | (B >= 0.5))", r_logic},
    {"-(A * B) + (!A) * 3", r_neg_not},
    {"A ^ 2 + B", r_pow2},
    {"A ^ B * 1", r_powm},
    {"sigmoid(A * 2) + 0", r_sigmoid},
    {"sqrt(abs(A)) + floor(B * 3) - round(A) + tanh(B) * sin(A)", r_funcs_j},
    {"A + exp(cl * 2)", r_rowcol_fn},
    {"A %% 3 + A %/% 2", r_mod},
    {"A * B", r_solo_mul},
    {"A - rw", r_solo_sub},
    {"A / cl", r_solo_div},
    {"A > s", r_solo_gt},
    {"-A", r_solo_neg},
    {"!A", r_solo_not},
    {"A ^ 2", r_solo_sq},
    {"exp(A)", r_solo_exp},
    {"sqrt(A)", r_solo_sqrt},
    {"abs(A)", r_solo_abs},
    {"floor(A)", r_solo_floor},
    {"ceil(A)", r_solo_ceil},
    {"sign(A)", r_solo_sign},
    {"round(A)", r_solo_round},
    {"max(0, A)", r_mm_relu},
    {"max(A * 2, B - 0.5) + min(A, B) * 2", r_mm_chain},
    {"pmax(A, s) - pmin(B, 1)", r_mm_p},
    {"min(max(A, -0.5), 0.5) + exp(0) * 0", r_mm_nested},
};

/* Vector operands of max/min: the builtin's own broadcasting, which refuses
 * a vector against an empty matrix (so these run on non-empty shapes). */
static const struct Case CASES_VEC[] = {
    {"max(A, cl) + 0", r_mm_col},
    {"min(rw, A) * 1", r_mm_row},
};

/* Runs "Z = expr" over R x C operands and checks Z cell by cell. */
static void check_case(const struct Case *k, int64_t R, int64_t C, bool special, unsigned seed)
{
    char text[512];
    snprintf(text, sizeof text, "Z = %s\n", k->expr);
    Env e;
    Node **stmts;
    int n;
    if (!env_load(&e, text, &stmts, &n))
        return;
    Rng g;
    rng_seed(&g, seed);
    Matrix *A = mrand(&g, R, C, special), *B = mrand(&g, R, C, special);
    Matrix *rw = mrand(&g, 1, C, special), *cl = mrand(&g, R, 1, special), *one = mrand(&g, 1, 1, false);
    double s = rng_uniform(&g) * 3 - 1;
    Matrix *A0 = mat_clone_raw(A), *B0 = mat_clone_raw(B);
    /* The environment gets references; ours keep the operands alive for
     * the reference loop even when the expression names no such variable. */
    env_set(&e, "A", val_matrix_take(A));
    env_set(&e, "B", val_matrix_take(B));
    env_set(&e, "rw", val_ref(val_matrix_take(rw)));
    env_set(&e, "cl", val_ref(val_matrix_take(cl)));
    env_set(&e, "one", val_ref(val_matrix_take(one)));
    env_set(&e, "s", val_double(s));
    if (exec_block(&e.I, stmts, n) != ST_OK) {
        check_report_(false, __FILE__, __LINE__, "%s at %lldx%lld: %s", k->expr, (long long)R, (long long)C,
                      e.I.err.msg ? e.I.err.msg : "?");
        goto out;
    }
    Value z = env_get(&e, "Z");
    if (!check_report_(z.kind == VAL_MATRIX && z.m->rows == R && z.m->cols == C, __FILE__, __LINE__,
                       "%s: result shape at %lldx%lld", k->expr, (long long)R, (long long)C))
        goto out;
    int bad = 0;
    for (int64_t i = 0; i < R && bad < 3; i++)
        for (int64_t j = 0; j < C && bad < 3; j++) {
            Cells c = {.a = A0->data[i * C + j], .b = B0->data[i * C + j], .rw = rw->data[j],
                       .cl = cl->data[i], .one = one->data[0], .s = s};
            double want = k->ref(&c), got = z.m->data[i * C + j];
            if (!check_same_double_(want, got)) {
                check_report_(false, __FILE__, __LINE__, "%s at %lldx%lld cell (%lld,%lld): %.17g, want %.17g",
                              k->expr, (long long)R, (long long)C, (long long)i, (long long)j, got, want);
                bad++;
            }
        }
    CHECK(bad == 0);
    /* Value semantics: the operands are untouched. */
    Value a = env_get(&e, "A"), b = env_get(&e, "B");
    size_t bytes = (size_t)(R * C) * sizeof(double);
    if (slot_of(&e, "A") >= 0)
        CHECK(a.kind == VAL_MATRIX && a.m != z.m && (!bytes || memcmp(a.m->data, A0->data, bytes) == 0));
    if (slot_of(&e, "B") >= 0)
        CHECK(b.kind == VAL_MATRIX && b.m != z.m && (!bytes || memcmp(b.m->data, B0->data, bytes) == 0));
out:
    mat_release(A0);
    mat_release(B0);
    mat_release(rw);
    mat_release(cl);
    mat_release(one);
    env_free(&e);
}

static void test_cases(void)
{
    static const int64_t shapes[][2] = {
        {0, 5}, {5, 0}, {0, 0}, {1, 1}, {1, 7}, {7, 1}, {3, 5}, {7, 13}, {33, 17}, {2, 1029}, {300, 301},
        {601, 503},     /* past the size where a lone operator is split over threads */
    };
    unsigned seed = 1;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            check_case(&CASES[k], shapes[s][0], shapes[s][1], false, seed++);
            check_case(&CASES[k], shapes[s][0], shapes[s][1], true, seed++);
        }
    for (size_t k = 0; k < sizeof CASES_VEC / sizeof CASES_VEC[0]; k++)
        for (size_t s = 3; s < sizeof shapes / sizeof shapes[0]; s++) {     /* from 1x1 on */
            check_case(&CASES_VEC[k], shapes[s][0], shapes[s][1], false, seed++);
            check_case(&CASES_VEC[k], shapes[s][0], shapes[s][1], true, seed++);
        }
}

/* Runs 'text' and returns the first error message, or "" (static buffer). */
static const char *run_err(const char *text, int64_t R, int64_t C)
{
    static char msg[512];
    Env e;
    Node **stmts;
    int n;
    msg[0] = '\0';
    if (!env_load(&e, text, &stmts, &n))
        return "(load failed)";
    Rng g;
    rng_seed(&g, 7);
    env_set(&e, "A", val_matrix_take(mrand(&g, R, C, false)));
    env_set(&e, "B", val_matrix_take(mrand(&g, C, R, false)));
    env_set(&e, "cl", val_matrix_take(mrand(&g, R, 1, false)));
    env_set(&e, "rw", val_matrix_take(mrand(&g, 1, C, false)));
    if (exec_block(&e.I, stmts, n) != ST_OK) {
        char *f = err_format(&e.I);
        snprintf(msg, sizeof msg, "%s", f ? f : "?");
        free(f);
    }
    env_free(&e);
    return msg;
}

static void test_errors(void)
{
    /* The operator-at-a-time errors, with the failing operator's position. */
    CHECK(strstr(run_err("Z = exp(A) * B + A\n", 3, 4),
                 "fuse_test.dml:1:5: Block sizes are not matched for binary cell operations: 3x4 vs 4x3"));
    CHECK(strstr(run_err("Z = A + 1 + \"x\" * 2\n", 3, 4), "Arithmetic '*' not supported over string inputs."));
    CHECK(strstr(run_err("Z = (A + 1) + TRUE\n", 3, 4), "fuse_test.dml:1:5:"));
    CHECK(strstr(run_err("Z = exp(A) + nosuch\n", 3, 4), "nosuch"));
    CHECK(strstr(run_err("Z = max(A, t(A)) + 1\n", 3, 4),
                 "fuse_test.dml:1:5: Block sizes are not matched for binary cell operations: 4x3 vs 3x4"));
    CHECK(strstr(run_err("Z = min(A * 2, \"x\") + 1\n", 3, 4),
                 "fuse_test.dml:1:5: min(): argument '#2' must be a number or matrix, got string"));
    /* An outer-product broadcast is replayed by the ordinary operators. */
    Env e;
    Node **stmts;
    int n;
    if (env_load(&e, "Z = cl + rw * 1\n", &stmts, &n)) {
        Rng g;
        rng_seed(&g, 3);
        Matrix *cl = mrand(&g, 4, 1, false), *rw = mrand(&g, 1, 5, false);
        env_set(&e, "cl", val_matrix_take(mat_clone_raw(cl)));
        env_set(&e, "rw", val_matrix_take(mat_clone_raw(rw)));
        CHECK(exec_block(&e.I, stmts, n) == ST_OK);
        Value z = env_get(&e, "Z");
        CHECK(z.kind == VAL_MATRIX && z.m->rows == 4 && z.m->cols == 5);
        if (z.kind == VAL_MATRIX && z.m->rows == 4 && z.m->cols == 5)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 5; j++)
                    CHECK_DBL(z.m->data[i * 5 + j], cl->data[i] + rw->data[j] * 1);
        mat_release(cl);
        mat_release(rw);
        env_free(&e);
    }
    /* Scalars only: the ordinary scalar rules (integer arithmetic stays int). */
    if (env_load(&e, "x = 3\nZ = -(x * 2) + x %/% 2\n", &stmts, &n)) {
        CHECK(exec_block(&e.I, stmts, n) == ST_OK);
        Value z = env_get(&e, "Z");
        CHECK(z.kind == VAL_INT && z.i == -5);
        env_free(&e);
    }
    /* max/min of integers stay integers (the builtin's scalar rule). */
    if (env_load(&e, "x = 3\nZ = max(x * 2, 4) + min(x, 1)\n", &stmts, &n)) {
        CHECK(exec_block(&e.I, stmts, n) == ST_OK);
        Value z = env_get(&e, "Z");
        CHECK(z.kind == VAL_INT && z.i == 7);
        env_free(&e);
    }
}

/* An unshared temporary operand may become the result; a shared one never. */
static void test_reuse(void)
{
    Env e;
    Node **stmts;
    int n;
    if (!env_load(&e, "T = A\nZ = (A %*% B) * 2 + 1\nW = exp(T) * 1 + 0\n", &stmts, &n))
        return;
    Rng g;
    rng_seed(&g, 11);
    Matrix *A = mrand(&g, 9, 9, false), *B = mrand(&g, 9, 9, false);
    Matrix *A0 = mat_clone_raw(A);
    env_set(&e, "A", val_matrix_take(A));
    env_set(&e, "B", val_matrix_take(B));
    CHECK(exec_block(&e.I, stmts, n) == ST_OK);
    Value z = env_get(&e, "Z"), w = env_get(&e, "W"), a = env_get(&e, "A"), t = env_get(&e, "T");
    CHECK(z.kind == VAL_MATRIX && w.kind == VAL_MATRIX);
    CHECK(memcmp(a.m->data, A0->data, 81 * sizeof(double)) == 0);
    CHECK(t.m == a.m);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 9; j++) {
            double p = 0;
            for (int k = 0; k < 9; k++)
                p += A0->data[i * 9 + k] * B->data[k * 9 + j];
            CHECK_NEAR(z.m->data[i * 9 + j], p * 2 + 1, 1e-12);
            CHECK_DBL(w.m->data[i * 9 + j], vexp(A0->data[i * 9 + j]) * 1 + 0);
        }
    mat_release(A0);
    env_free(&e);
}

/* vmath: a cell's result does not depend on its position or the array
 * length; exp/log agree with libm to a few ulp; the builtins use it. */
static void test_vmath(void)
{
    double x[37], y[37];
    Rng g;
    rng_seed(&g, 5);
    for (int i = 0; i < 37; i++)
        x[i] = rng_uniform(&g) * 40 - 20;
    x[3] = NAN, x[4] = INFINITY, x[5] = -INFINITY, x[6] = 0.0, x[7] = -0.0, x[8] = 710, x[9] = -750;
    for (int len = 1; len <= 37; len++) {
        vm_unary(VM_EXP, x, y, len);
        for (int i = 0; i < len; i++)
            CHECK_DBL(y[i], vm_unary1(VM_EXP, x[i]));
    }
    vm_unary(VM_EXP, x, y, 37);
    for (int i = 0; i < 37; i++) {
        double r = exp(x[i]);
        if (isnan(r) || isinf(r) || r == 0)
            CHECK_DBL(y[i], r);
        else
            CHECK_NEAR(y[i] / r, 1.0, 1e-15);
    }
    for (int i = 0; i < 37; i++)
        x[i] = fabs(x[i]);
    x[0] = 0.0, x[1] = -1.0;
    vm_unary(VM_LOG, x, y, 37);
    for (int i = 0; i < 37; i++) {
        double r = log(x[i]);
        if (isnan(r) || isinf(r) || fabs(r) < 1e-300)
            CHECK(check_same_double_(y[i], r) || (fabs(r) < 1e-300 && fabs(y[i]) < 1e-300));
        else
            CHECK_NEAR(y[i] / r, 1.0, 1e-15);
    }
    /* In place. */
    double z[11];
    for (int i = 0; i < 11; i++)
        z[i] = i * 0.25 - 1;
    vm_unary(VM_SIGMOID, z, z, 11);
    for (int i = 0; i < 11; i++)
        CHECK_DBL(z[i], 1.0 / (1.0 + vm_unary1(VM_EXP, -(i * 0.25 - 1))));
    const char *isa = vm_isa();
    CHECK(strcmp(isa, "avx2") == 0 || strcmp(isa, "avx") == 0 || strcmp(isa, "scalar") == 0);
    /* exp, log and sigmoid of a cell: the scalar's very bits (issue 28) */
    for (int i = 0; i < 37; i++) {
        double v = (i - 18) * 0.731 + 1e-3 * i, t[3];
        t[0] = t[1] = t[2] = v;
        vm_unary(VM_EXP, t, t, 1);
        CHECK_DBL(t[0], exp(v));
        vm_unary(VM_LOG, t + 1, t + 1, 1);
        CHECK_DBL(t[1], log(v));
        vm_unary(VM_SIGMOID, t + 2, t + 2, 1);
        CHECK_DBL(t[2], vm_scalar(VM_SIGMOID, v));
    }
}

/* sqrt, abs, sign, floor and ceil over arrays (vector lanes and the cells
 * after them) give libm's bits, NaN payloads and zero signs included. */
static void test_vmath_simple(void)
{
    static const VmFn fns[] = {VM_SQRT, VM_ABS, VM_SIGN, VM_FLOOR, VM_CEIL};
    double x[41], y[41], want[41];
    Rng g;
    rng_seed(&g, 9);
    for (int i = 0; i < 41; i++)
        x[i] = (rng_uniform(&g) - 0.5) * pow(10, (int)rng_below(&g, 40) - 20);
    const double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 4.9e-324, -4.9e-324, 2.5, -2.5,
                         0x1p52 + 1, -0x1p52 - 1, 1e300, -1.0};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        x[3 * i] = sp[i];
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
        for (int len = 0; len <= 41; len++) {
            for (int i = 0; i < len; i++) {
                double v = x[i];
                switch (fns[k]) {
                case VM_SQRT: want[i] = sqrt(v); break;
                case VM_ABS: want[i] = fabs(v); break;
                case VM_SIGN: want[i] = v > 0 ? 1.0 : v < 0 ? -1.0 : v; break;
                case VM_FLOOR: want[i] = floor(v); break;
                default: want[i] = ceil(v); break;
                }
            }
            vm_unary(fns[k], x, y, len);
            CHECK(len == 0 || memcmp(y, want, sizeof(double) * (size_t)len) == 0);
            memcpy(y, x, sizeof x);
            vm_unary(fns[k], y, y, len);     /* in place */
            CHECK(len == 0 || memcmp(y, want, sizeof(double) * (size_t)len) == 0);
        }
}

/* Error of y against exp(x) in ulps of the true value (expl has 11 more
 * bits than double here, enough to tell 1 ulp from 1.01). */
static double exp_ulps(double y, double x)
{
    long double r = expl((long double)x);
    int e = ilogbl(r);
    return (double)(fabsl((long double)y - r) / ldexpl(1.0L, e - 52));
}

/* vm_unary's exp (libm's, cell by cell) stays within 1 ulp of the true
 * value over the whole range, special values included, and gives the same
 * bits for a cell whatever its neighbours. */
static void test_vmath_exp_accuracy(void)
{
    enum { N = 1 << 18 };
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    Rng g;
    rng_seed(&g, 11);
    for (int i = 0; i < N; i++) {
        double u = rng_uniform(&g);
        switch (i % 5) {
        case 0: x[i] = u * 1416 - 708; break;          /* the fast range */
        case 1: x[i] = u * 40 - 20; break;
        case 2: x[i] = u * 1.4 - 0.7; break;           /* around the reduction's edges */
        case 3: x[i] = (u - 0.5) * 1e-6; break;        /* exp(x) ~ 1 + x */
        default: x[i] = u * 40 + (u < 0.5 ? -745 : 690); break;  /* under/overflow and subnormals */
        }
    }
    vm_unary(VM_EXP, x, y, N);
    double worst = 0, at = 0;
    int edge_bad = 0;
    for (int i = 0; i < N; i++) {
        double r = exp(x[i]);
        if (r == 0 || isinf(r) || r < 0x1p-1022) {
            /* libm's subnormal and overflow results are what we return. */
            edge_bad += !check_same_double_(y[i], r);
            continue;
        }
        double e = exp_ulps(y[i], x[i]);
        if (e > worst)
            worst = e, at = x[i];
    }
    double bound = 1.0;
    CHECK_INT(edge_bad, 0);
    CHECK(worst <= bound);
    if (worst > bound)
        fprintf(stderr, "exp: %.3f ulp at %.17g (%s)\n", worst, at, vm_isa());
    /* Lanes beside a slow-path lane: the same bits as alone. */
    double v[8] = {1.5, 800, -0.25, NAN, 3.0, -746, 700, -2.0}, w[8];
    vm_unary(VM_EXP, v, w, 8);
    for (int i = 0; i < 8; i++)
        CHECK_DBL(w[i], vm_unary1(VM_EXP, v[i]));
    free(x);
    free(y);
}

/* vm_unary's exp gives libm's exp's very bits, cell for cell, on 2^22
 * numbers over the whole range and its edges (issue 28: a matrix cell is
 * the scalar on every CPU; on AVX2+FMA through exp4_glibc). */
static void test_vmath_exp_bits(void)
{
    enum { N = 1 << 22 };
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    if (!CHECK(x && y)) {
        free(x);
        free(y);
        return;
    }
    uint64_t st = 88172645463325252ULL;
    for (int i = 0; i < N; i++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        double u = (double)(st >> 11) * 0x1p-53;
        switch (i % 6) {
        case 0: x[i] = u * 1500 - 750; break;
        case 1: x[i] = u * 40 - 20; break;
        case 2: x[i] = u * 2 - 1; break;
        case 3: x[i] = (u - 0.5) * 1e-6; break;
        case 4: x[i] = (u - 0.5) * 0x1p-50; break;         /* around the tiny edge 2^-54 */
        default: x[i] = 511 + u * 2 - (st & 1) * 1023; break; /* around +-512 */
        }
    }
    vm_unary(VM_EXP, x, y, N);
    int64_t differ = 0;
    double at = 0;
    for (int i = 0; i < N; i++) {
        double r = exp(x[i]);
        if (memcmp(&r, &y[i], sizeof r) != 0) {
            differ++;
            at = x[i];
        }
    }
    CHECK_INT(differ, 0);
    if (differ)
        fprintf(stderr, "exp: %lld cells differ from libm (%s), e.g. at %.17g\n", (long long)differ, vm_isa(), at);
    free(x);
    free(y);
}

/* pool_run: every part runs exactly once, whether there are more parts
 * than threads, fewer, or none. */
static void count_part(void *ctx, int part)
{
    atomic_fetch_add((atomic_int *)ctx + part, 1);
}

static void test_pool_parts(void)
{
    static const int ns[] = {0, 1, 2, 3, 37, 200};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        atomic_int seen[200];
        for (int i = 0; i < 200; i++)
            atomic_init(&seen[i], 0);
        pool_run(NULL, count_part, seen, ns[t]);
        for (int i = 0; i < 200; i++)
            CHECK_INT(atomic_load(&seen[i]), i < ns[t] ? 1 : 0);
    }
}

static void test_budget(void)
{
    int total = blas_budget_total();
    CHECK(total >= 1);
    CHECK_INT(blas_budget_share(1), total);
    CHECK(blas_budget_share(total + 5) == 1);
    CHECK(blas_budget_share(0) == total);
    int saved = blas_budget_enter(2);
    CHECK_INT(blas_get_threads(), blas_budget_share(2));
    blas_budget_leave(saved);
    CHECK_INT(blas_get_threads(), saved);
}

int main(void)
{
    builtin_registry_install();
    test_vmath();
    test_vmath_exp_accuracy();
    test_vmath_exp_bits();
    test_vmath_simple();
    test_pool_parts();
    test_cases();
    test_errors();
    test_reuse();
    test_budget();
    return CHECK_DONE();
}
