/* SPDX-License-Identifier: Apache-2.0
 * Upstream's data constructors beyond matrix(): frame(data, rows, cols,
 * schema) and tensor(data, dims), the latter as far as a matrix can hold
 * it (two dimensions); and upstream builtins that need machinery dml does
 * not have (federated data, SQL over JDBC), which say so instead of
 * "is undefined" (issue 28). Thread-safe: no state beyond the arguments. */
#include "registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/frame.h"

/* ---- the values of a data= or dims= argument ---- */

/* The values of v as a flat sequence: a list ([a, b, c] or list(...)) of
 * scalars, a matrix (row-major cells) or one scalar. */
typedef struct Seq {
    const Value *items;     /* a list's items, or NULL */
    const Matrix *m;        /* a matrix, or NULL */
    Value one;              /* a scalar */
    int64_t n;
} Seq;

static Status seq_of(Interp *I, const char *fn, const char *what, Value v, Seq *s)
{
    memset(s, 0, sizeof *s);
    if (v.kind == VAL_LIST) {
        s->items = v.l->items;
        s->n = v.l->n;
        for (int64_t k = 0; k < s->n; k++) {
            ValKind t = s->items[k].kind;
            if (t != VAL_INT && t != VAL_DOUBLE && t != VAL_BOOL && t != VAL_STRING)
                return err_set(I, "%s(): %s must hold scalars, but item %lld is a %s", fn, what, (long long)k + 1,
                               val_kind_name(t));
        }
        return ST_OK;
    }
    if (v.kind == VAL_MATRIX) {
        s->m = v.m;
        s->n = mat_len(v.m);
        return ST_OK;
    }
    if (v.kind == VAL_INT || v.kind == VAL_DOUBLE || v.kind == VAL_BOOL || v.kind == VAL_STRING) {
        s->one = v;
        s->n = 1;
        return ST_OK;
    }
    return err_set(I, "%s(): %s must be a list [...], a matrix or a scalar, got %s", fn, what, val_kind_name(v.kind));
}

/* Item k of s, borrowed (a matrix cell comes back as a double). */
static Value seq_at(const Seq *s, int64_t k)
{
    if (s->items)
        return s->items[k];
    if (s->m)
        return val_double(s->m->data[k]);
    return s->one;
}

/* matrix(data, rows, cols) through matrix()'s own row (VAL_NONE: not given). */
static Status call_matrix(Interp *I, const BArgs *a, Value data, Value rows, Value cols, Value *out)
{
    const BuiltinDef *def = builtin_find("matrix");
    if (!def)
        return err_set(I, "internal error: no matrix() builtin");
    Value v[4] = {data, rows, cols, val_none()};
    BArgs b = {.def = def, .v = v, .names = NULL, .n = 4, .loc = a->loc, .nout = 1};
    return def->fn(I, &b, out);
}

/* ---- frame(data, rows, cols, schema) ---- */

/* Column j's type from the schema: a list of type names, or one string of
 * names separated by commas. */
static Status frame_schema(Interp *I, Value sch, int64_t cols, FrameType *types)
{
    for (int64_t j = 0; j < cols; j++)
        types[j] = FT_STRING;
    if (sch.kind == VAL_NONE)
        return ST_OK;
    if (sch.kind == VAL_STRING) {
        const char *p = sch.s->s;
        int64_t j = 0;
        for (;;) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            while (n && (*p == ' ' || *p == '\t')) {
                p++;
                n--;
            }
            while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
            bool narrow;
            if (j >= cols)
                return err_set(I, "frame(): the schema names more than the %lld columns", (long long)cols);
            if (!frame_type_parse(p, n, &types[j], &narrow))
                return err_set(I, "frame(): '%.*s' in the schema is not a value type (STRING, FP64, INT64, "
                               "BOOLEAN, FP32, INT32)", (int)(n > 60 ? 60 : n), p);
            j++;
            if (!e)
                break;
            p = e + 1;
        }
        if (j != cols)
            return err_set(I, "frame(): the schema names %lld value types for %lld columns", (long long)j,
                           (long long)cols);
        return ST_OK;
    }
    if (sch.kind != VAL_LIST)
        return err_set(I, "frame(): schema must be a list of value types [\"STRING\", ...] or a string, got %s",
                       val_kind_name(sch.kind));
    if (sch.l->n != cols)
        return err_set(I, "frame(): the schema names %lld value types for %lld columns", (long long)sch.l->n,
                       (long long)cols);
    for (int64_t j = 0; j < cols; j++) {
        Value t = sch.l->items[j];
        bool narrow;
        if (t.kind != VAL_STRING || !frame_type_parse(t.s->s, strlen(t.s->s), &types[j], &narrow))
            return err_set(I, "frame(): item %lld of the schema is not a value type (STRING, FP64, INT64, BOOLEAN, "
                           "FP32, INT32)", (long long)j + 1);
    }
    return ST_OK;
}

/* frame(data, rows, cols, schema): a rows x cols frame filled row by row
 * from data (rows*cols values, or one value for every cell), each value
 * converted to its column's type as a cell assignment converts it. */
static Status bi_frame(Interp *I, const BArgs *a, Value *out)
{
    int64_t r, c;
    if (!arg_given(a, 1) || !arg_given(a, 2))
        return err_set(I, "frame(): rows and cols must be given");
    TRY(arg_int(I, a, 1, 0, &r));
    TRY(arg_int(I, a, 2, 0, &c));
    if (r < 0 || c < 0)
        return err_set(I, "frame(): dimensions must be non-negative, got rows=%lld, cols=%lld", (long long)r,
                       (long long)c);
    if (c > 0 && r > INT64_MAX / c)
        return err_set(I, "frame(): %lld x %lld cells are too many", (long long)r, (long long)c);
    Seq d;
    TRY(seq_of(I, "frame", "data", a->v[0], &d));
    if (d.n != 1 && d.n != r * c)
        return err_set(I, "frame(): data has %lld values for a %lld x %lld frame (give %lld, or one for every cell)",
                       (long long)d.n, (long long)r, (long long)c, (long long)(r * c));
    FrameType *types = malloc(sizeof *types * (size_t)(c ? c : 1));
    if (!types)
        return err_set(I, "frame(): out of memory");
    if (frame_schema(I, arg_given(a, 3) ? a->v[3] : val_none(), c, types) != ST_OK) {
        free(types);
        return ST_ERR;
    }
    FrameBlock *f = frame_alloc(I, r, c, types);
    free(types);
    if (!f)
        return ST_ERR;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            if (frame_put_value(I, f, i, j, seq_at(&d, d.n == 1 ? 0 : i * c + j)) != ST_OK) {
                frame_release(f);
                return ST_ERR;
            }
    *out = val_frame_take(f);
    return ST_OK;
}

/* ---- tensor(data, dims) ---- */

/* tensor(data, dims): dml has no tensors; one of two dimensions is a
 * matrix, built as matrix(data, rows=dims[1], cols=dims[2]) (data: a
 * scalar for every cell, a matrix reshaped row by row, a list or a string
 * of numbers). Other ranks are refused. */
static Status bi_tensor(Interp *I, const BArgs *a, Value *out)
{
    if (!arg_given(a, 1))
        return err_set(I, "tensor(): dims must be given (dml supports two dimensions, a matrix)");
    Value dv = a->v[1];
    Seq ds;
    Matrix *parsed = NULL;
    if (dv.kind == VAL_STRING) {    /* "2 3" */
        Value m;
        TRY(call_matrix(I, a, dv, val_none(), val_int(1), &m));
        parsed = m.m;
        dv = m;
    }
    Status st = seq_of(I, "tensor", "dims", dv, &ds);
    int64_t dims[2] = {0, 0};
    for (int64_t k = 0; st == ST_OK && k < ds.n && k < 2; k++) {
        Value x = seq_at(&ds, k);
        double v = x.kind == VAL_STRING ? NAN : val_num(x);
        if (!(v >= 0 && v == floor(v) && v < 9e15))
            st = err_set(I, "tensor(): dims must be non-negative integers");
        else
            dims[k] = (int64_t)v;
    }
    int64_t rank = ds.n;
    if (parsed)
        val_release(val_matrix_take(parsed));
    TRY(st);
    if (rank != 2)
        return err_set(I, "tensor(): tensors of %lld dimensions are not supported by dml (a tensor of two "
                       "dimensions is a matrix)", (long long)rank);
    Value d = a->v[0];
    if (d.kind == VAL_LIST) {
        Seq s;
        TRY(seq_of(I, "tensor", "data", d, &s));
        if (s.n != dims[0] * dims[1] && s.n != 1)
            return err_set(I, "tensor(): data has %lld values for %lld x %lld cells", (long long)s.n,
                           (long long)dims[0], (long long)dims[1]);
        Matrix *m = mat_alloc(I, dims[0], dims[1]);
        if (!m)
            return ST_ERR;
        for (int64_t k = 0; k < mat_len(m); k++) {
            Value x = seq_at(&s, s.n == 1 ? 0 : k);
            if (x.kind == VAL_STRING) {
                val_release(val_matrix_take(m));
                return err_set(I, "tensor(): data holds a string; dml's tensors are matrices of numbers");
            }
            m->data[k] = val_num(x);
        }
        *out = val_matrix_take(m);
        return ST_OK;
    }
    return call_matrix(I, a, d, val_int(dims[0]), val_int(dims[1]), out);
}

/* ---- upstream builtins that need what dml does not have ---- */

static Status bi_no_federated(Interp *I, const BArgs *a, Value *out)
{
    (void)a;
    (void)out;
    return err_set(I, "federated(): not supported by dml: it has no federated data (matrices and frames held by "
                   "federated workers); read the data with read() instead");
}

static Status bi_no_sql(Interp *I, const BArgs *a, Value *out)
{
    (void)a;
    (void)out;
    return err_set(I, "sql(): not supported by dml: it reads from a database over JDBC, which dml has no "
                   "connection to; export the table to csv and read() it");
}

const BuiltinDef bi_compat_ctor_table[] = {
    {"frame", bi_frame, "data,rows,cols,schema", 1, BIND_NAMED, 1, 0},
    {"tensor", bi_tensor, "data,dims", 1, BIND_NAMED, 1, 0},
    {"federated", bi_no_federated, "", 0, BIND_VARIADIC, 1, 0},
    {"sql", bi_no_sql, "", 0, BIND_VARIADIC, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
