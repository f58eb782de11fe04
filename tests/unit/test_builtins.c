/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of the builtin registry (builtins/registry.c) and of builtins
 * called directly through builtin_find(...)->fn with hand-built BArgs:
 * table integrity (no duplicate names, consistent flags), parameter names,
 * concurrent first lookups, and aggregates against naive loops on empty,
 * 1x1 and odd shapes. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/registry.h"
#include "check.h"
#include "runtime/interp.h"
#include "runtime/rng.h"
#include "base/value.h"

/* ---- helpers ---- */

static Value mat(int64_t r, int64_t c, const double *v)
{
    Matrix *m = mat_new_raw(r, c);
    if (m && v && r * c > 0)
        memcpy(m->data, v, (size_t)(r * c) * sizeof(double));
    return val_matrix_take(m);
}

static Value mat_rand(Rng *g, int64_t r, int64_t c)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++)
        m->data[i] = rng_uniform(g) * 4 - 2;
    return val_matrix_take(m);
}

/* Calls builtin 'name' with positional values v[0..n) padded to its
 * parameter count; returns the status, result in *out. */
static Status call(Interp *I, const char *name, const Value *v, int n, Value *out)
{
    const BuiltinDef *d = builtin_find(name);
    if (!d)
        return err_set(I, "no builtin %s", name);
    int np = d->bind == BIND_VARIADIC ? n : builtin_nparams(d);
    Value args[16];
    for (int i = 0; i < 16; i++)
        args[i] = val_none();
    for (int i = 0; i < n; i++)
        args[i] = v[i];
    Value res[8];
    memset(res, 0, sizeof res);
    BArgs a = {.def = d, .v = args, .names = NULL, .n = np, .loc = NULL, .nout = d->nout};
    Status st = d->fn(I, &a, res);
    if (st == ST_OK) {
        *out = res[0];
        for (int i = 1; i < d->nout; i++)
            val_release(res[i]);
    }
    return st;
}

/* ---- registry ---- */

typedef struct Names { const char *n[1024]; int k; } Names;
static void collect(const char *name, void *ctx)
{
    Names *ns = ctx;
    if (ns->k < 1024)
        ns->n[ns->k++] = name;
}

static void test_registry(void)
{
    Names ns = {.k = 0};
    builtin_each(collect, &ns);
    CHECK(ns.k > 100);
    int dups = 0;
    for (int i = 0; i < ns.k; i++) {
        for (int j = i + 1; j < ns.k; j++)
            if (strcmp(ns.n[i], ns.n[j]) == 0) {
                dups++;
                fprintf(stderr, "duplicate builtin name '%s'\n", ns.n[i]);
            }
        const BuiltinDef *d = builtin_find(ns.n[i]);
        CHECK(d && strcmp(d->name, ns.n[i]) == 0);
        if (d) {
            CHECK(d->fn != NULL);
            CHECK(((d->flags & (BF_MULTI | BF_MULTI_OPT)) != 0) == (d->nout > 1));
            CHECK(d->min_args <= builtin_nparams(d) || d->bind == BIND_VARIADIC);
        }
    }
    CHECK_INT(dups, 0);
    CHECK(builtin_find("noSuchBuiltin") == NULL);
    CHECK(builtin_find("") == NULL);
    const BuiltinDef *t = builtin_find("toString");
    CHECK(t && builtin_nparams(t) == 7);
    char buf[32];
    CHECK(t && strcmp(builtin_param_name(t, 0, buf, sizeof buf), "target") == 0);
    CHECK(t && strcmp(builtin_param_name(t, 6, buf, sizeof buf), "linesep") == 0);
    CHECK(t && strcmp(builtin_param_name(t, 9, buf, sizeof buf), "") == 0);
    char tiny[4];
    CHECK(t && strcmp(builtin_param_name(t, 0, tiny, sizeof tiny), "tar") == 0);
    const BuiltinDef *tm = builtin_find("time");
    CHECK(tm && builtin_nparams(tm) == 0);
    const char *need[] = {"print", "stop", "assert", "matrix", "rand", "seq", "table", "cbind", "rbind", "sum",
                          "mean", "max", "min", "rowSums", "colSums", "rowMaxs", "rowIndexMax", "exp", "log",
                          "sqrt", "t", "list", "as.scalar", "as.matrix", "as.integer", "as.double", "toString",
                          "nrow", "ncol", "length", "ifelse", "order", "outer", "round", "floor", "ceil"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!builtin_find(need[i])) {
            check_report_(false, __FILE__, __LINE__, "builtin %s missing", need[i]);
        }
}

static void *lookup_thread(void *arg)
{
    (void)arg;
    intptr_t bad = 0;
    for (int i = 0; i < 2000; i++)
        bad += builtin_find("rowSums") == NULL || builtin_find("zzz") != NULL;
    return (void *)bad;
}

static void test_concurrent_lookup(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, lookup_thread, NULL);
    intptr_t bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        bad += (intptr_t)r;
    }
    CHECK_INT(bad, 0);
}

/* ---- aggregates against naive loops ---- */

static void test_aggregates(Interp *I)
{
    Rng g;
    rng_seed(&g, 5);
    int64_t shapes[][2] = {{0, 0}, {0, 3}, {3, 0}, {1, 1}, {1, 7}, {7, 1}, {5, 3}, {17, 33}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t R = shapes[s][0], C = shapes[s][1];
        Value x = mat_rand(&g, R, C);
        Value rs, cs, tot, rmax;
        CHECK(call(I, "rowSums", &x, 1, &rs) == ST_OK);
        CHECK(call(I, "colSums", &x, 1, &cs) == ST_OK);
        CHECK(call(I, "sum", &x, 1, &tot) == ST_OK);
        CHECK_INT(rs.m->rows, R);
        CHECK_INT(rs.m->cols, 1);
        CHECK_INT(cs.m->rows, 1);
        CHECK_INT(cs.m->cols, C);
        double all = 0;
        for (int64_t i = 0; i < R; i++) {
            double r = 0;
            for (int64_t j = 0; j < C; j++)
                r += x.m->data[i * C + j];
            CHECK_NEAR(rs.m->data[i], r, 1e-12);
            all += r;
        }
        for (int64_t j = 0; j < C; j++) {
            double c = 0;
            for (int64_t i = 0; i < R; i++)
                c += x.m->data[i * C + j];
            CHECK_NEAR(cs.m->data[j], c, 1e-12);
        }
        CHECK_NEAR(tot.d, all, 1e-12);
        Status st = call(I, "rowIndexMax", &x, 1, &rmax);
        if (C == 0) {
            CHECK(st == ST_ERR);
            err_clear(I);
        } else {
            CHECK(st == ST_OK);
            for (int64_t i = 0; st == ST_OK && i < R; i++) {
                int64_t k = 0;
                for (int64_t j = 1; j < C; j++)
                    if (x.m->data[i * C + j] >= x.m->data[i * C + k])
                        k = j;
                CHECK_DBL(rmax.m->data[i], (double)(k + 1));
            }
            if (st == ST_OK)
                val_release(rmax);
        }
        val_release(rs);
        val_release(cs);
        val_release(x);
    }
}

static void test_direct_calls(Interp *I)
{
    Value out;
    /* seq(1, 10, 3) = 1 4 7 10 */
    Value sv[3] = {val_int(1), val_int(10), val_int(3)};
    CHECK(call(I, "seq", sv, 3, &out) == ST_OK);
    CHECK_INT(out.m->rows, 4);
    CHECK_DBL(out.m->data[3], 10.0);
    val_release(out);
    /* wrong sign */
    Value sw[3] = {val_int(1), val_int(10), val_int(-1)};
    CHECK(call(I, "seq", sw, 3, &out) == ST_ERR);
    CHECK(I->err.msg && strstr(I->err.msg, "Wrong sign for the increment") != NULL);
    err_clear(I);
    /* max of ints stays int; with a double it is double */
    Value mv[2] = {val_int(3), val_int(9)};
    CHECK(call(I, "max", mv, 2, &out) == ST_OK);
    CHECK(out.kind == VAL_INT && out.i == 9);
    mv[1] = val_double(2.5);
    CHECK(call(I, "max", mv, 2, &out) == ST_OK);
    CHECK(out.kind == VAL_DOUBLE && out.d == 3.0);
    /* abs of int is int */
    Value av = val_int(-4);
    CHECK(call(I, "abs", &av, 1, &out) == ST_OK);
    CHECK(out.kind == VAL_INT && out.i == 4);
    /* cbind row mismatch */
    double d4[4] = {1, 2, 3, 4};
    Value cv[2] = {mat(2, 2, d4), mat(4, 1, d4)};
    CHECK(call(I, "cbind", cv, 2, &out) == ST_ERR);
    CHECK(I->err.msg && strstr(I->err.msg, "inputs to cbind must have same number of rows") != NULL);
    err_clear(I);
    CHECK(call(I, "rbind", cv, 2, &out) == ST_ERR);
    err_clear(I);
    val_release(cv[0]);
    val_release(cv[1]);
    /* table one-hot */
    double a3[3] = {1, 2, 3}, b3[3] = {2, 2, 1};
    Value tv[2] = {mat(3, 1, a3), mat(3, 1, b3)};
    CHECK(call(I, "table", tv, 2, &out) == ST_OK);
    CHECK_INT(out.m->rows, 3);
    CHECK_INT(out.m->cols, 2);
    CHECK_DBL(out.m->data[1], 1.0);
    CHECK_DBL(out.m->data[2], 0.0);
    CHECK_DBL(out.m->data[4], 1.0);
    val_release(out);
    val_release(tv[0]);
    val_release(tv[1]);
    /* matrix("1 2 3", rows=2, cols=2) */
    Value mv2[3] = {val_str_take(str_from("1 2 3")), val_int(2), val_int(2)};
    CHECK(call(I, "matrix", mv2, 3, &out) == ST_ERR);
    CHECK(I->err.msg && strcmp(I->err.msg, "Invalid matrix string intialization: dimensions=[2x2] vs numValues=3") == 0);
    err_clear(I);
    val_release(mv2[0]);
}

/* ---- robustness: every builtin of the value families with odd arguments
 * (empty, 1x1, NaN/Inf, wrong types, lists) must return OK or an error with
 * a message, never crash or leak (run under ASan in CI). ---- */

static Value pool_value(Interp *I, int k)
{
    static const double nan_inf[9] = {1, NAN, 3, INFINITY, -INFINITY, 0, -2, 0.5, 7};
    static const double v6[6] = {1, 2, 0, 4, 5, 6};
    (void)I;
    switch (k) {
    case 0: return val_int(2);
    case 1: return val_int(0);
    case 2: return val_int(-1);
    case 3: return val_double(2.5);
    case 4: return val_double(NAN);
    case 5: return val_bool(true);
    case 6: return val_str_take(str_from("rows"));
    case 7: return val_str_take(str_from("1 2"));
    case 8: return mat(0, 0, NULL);
    case 9: return mat(0, 3, NULL);
    case 10: return mat(3, 0, NULL);
    case 11: return mat(1, 1, v6);
    case 12: return mat(3, 1, v6);
    case 13: return mat(1, 3, v6);
    case 14: return mat(3, 3, nan_inf);
    case 15: return mat(2, 3, v6);
    case 16: return val_list_take(list_new(0, false));
    case 17: {
        List *l = list_new(2, true);
        list_push_take(l, val_int(1), "a");
        list_push_take(l, mat(1, 1, v6), "b");
        return val_list_take(l);
    }
    default: {
        List *l = list_new(2, false);
        list_push_take(l, val_double(3), NULL);
        list_push_take(l, mat(3, 1, v6), NULL);
        return val_list_take(l);
    }
    }
}
#define POOL 19

static int fuzz_calls;

static void fuzz_one(Interp *I, const BuiltinDef *d, const int *ks, int n)
{
    int np = d->bind == BIND_VARIADIC ? n : builtin_nparams(d);
    if (n > np)
        return;
    Value args[8];
    for (int i = 0; i < 8; i++)
        args[i] = val_none();
    for (int i = 0; i < n; i++)
        args[i] = pool_value(I, ks[i]);
    Value res[8];
    memset(res, 0, sizeof res);
    BArgs a = {.def = d, .v = args, .names = NULL, .n = np, .loc = NULL, .nout = d->nout};
    Status st = d->fn(I, &a, res);
    fuzz_calls++;
    if (st == ST_OK) {
        for (int i = 0; i < d->nout; i++)
            val_release(res[i]);
    } else {
        if (!I->err.msg || !I->err.msg[0])
            check_report_(false, __FILE__, __LINE__, "%s failed without a message", d->name);
        err_clear(I);
    }
    for (int i = 0; i < n; i++)
        val_release(args[i]);
}

static void test_fuzz_tables(Interp *I)
{
    const BuiltinDef *tables[] = {bi_core_table, bi_construct_table, bi_elementwise_table, bi_aggregate_table,
                                  bi_reorg_table, bi_linalg_table, bi_list_table, bi_stats_table,
                                  bi_einsum_table, bi_unsupported_natives_table};
    static const int small[6] = {0, 3, 8, 11, 12, 15};
    FILE *devnull = fopen("/dev/null", "w");
    FILE *saved = I->out;
    I->out = devnull;
    int before = check_failed_;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const BuiltinDef *d = tables[t]; d->name; d++) {
            int ks[3];
            fuzz_one(I, d, ks, 0);
            for (ks[0] = 0; ks[0] < POOL; ks[0]++) {
                fuzz_one(I, d, ks, 1);
                for (ks[1] = 0; ks[1] < POOL; ks[1]++) {
                    fuzz_one(I, d, ks, 2);
                    for (int c = 0; c < 6; c++) {
                        ks[2] = small[c];
                        fuzz_one(I, d, ks, 3);
                    }
                }
            }
        }
    I->out = saved;
    if (devnull)
        fclose(devnull);
    CHECK(fuzz_calls > 100000);
    CHECK_INT(check_failed_, before);
}

int main(void)
{
    builtin_registry_install();
    Interp I;
    interp_init(&I, NULL, 1);
    test_registry();
    test_concurrent_lookup();
    test_aggregates(&I);
    test_direct_calls(&I);
    test_fuzz_tables(&I);
    interp_destroy(&I);
    return CHECK_DONE();
}
