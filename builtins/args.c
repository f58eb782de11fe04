/* SPDX-License-Identifier: Apache-2.0
 * Argument helpers for builtins: fetch a bound argument as a given type, or
 * set an error that names the builtin and the argument, e.g.
 *   rand(): argument 'rows' must be an integer, got matrix
 * Pure functions of their inputs; thread-safe. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/ops.h"

const char *arg_name(const BArgs *a, int i, char *buf, size_t cap)
{
    if (a->def && a->def->bind == BIND_VARIADIC) {
        if (a->names && i < a->n && a->names[i])
            snprintf(buf, cap, "%s", a->names[i]);
        else
            snprintf(buf, cap, "#%d", i + 1);
        return buf;
    }
    if (!a->def)
        snprintf(buf, cap, "#%d", i + 1);
    else
        builtin_param_name(a->def, i, buf, cap);
    return buf;
}

static const char *fn_name(const BArgs *a) { return a->def ? a->def->name : "builtin"; }

static const char *got_name(const BArgs *a, int i)
{
    if (i >= a->n || a->v[i].kind == VAL_NONE)
        return "nothing";
    return val_kind_name(a->v[i].kind);
}

Status arg_type_error(Interp *I, const BArgs *a, int i, const char *expected)
{
    char nb[64];
    arg_name(a, i, nb, sizeof nb);
    if (!arg_given(a, i))
        return err_set(I, "%s(): argument '%s' is missing (expected %s)", fn_name(a), nb, expected);
    return err_set(I, "%s(): argument '%s' must be %s, got %s", fn_name(a), nb, expected, got_name(a, i));
}

Status arg_matrix(Interp *I, const BArgs *a, int i, Matrix **out)
{
    if (!arg_given(a, i) || a->v[i].kind != VAL_MATRIX)
        return arg_type_error(I, a, i, "a matrix");
    *out = mat_dense_m(I, a->v[i].m, fn_name(a));
    return *out ? ST_OK : ST_ERR;
}

Status arg_matrix_any(Interp *I, const BArgs *a, int i, Matrix **out)
{
    if (!arg_given(a, i) || a->v[i].kind != VAL_MATRIX)
        return arg_type_error(I, a, i, "a matrix");
    *out = a->v[i].m;
    return ST_OK;
}

Status bargs_densify(Interp *I, const BArgs *a, BArgs *d)
{
    *d = *a;
    d->v = calloc((size_t)(a->n ? a->n : 1), sizeof *d->v);
    if (!d->v)
        return err_set(I, "%s(): out of memory", fn_name(a));
    Status st = ST_OK;
    for (int i = 0; i < a->n; i++) {
        d->v[i] = val_ref(a->v[i]);
        if (st == ST_OK)
            st = val_densify(I, &d->v[i], fn_name(a));
    }
    if (st != ST_OK)
        bargs_dense_free(d);
    return st;
}

void bargs_dense_free(BArgs *d)
{
    for (int i = 0; d->v && i < d->n; i++)
        val_release(d->v[i]);
    free(d->v);
    d->v = NULL;
}

Status arg_matrix_or_scalar(Interp *I, const BArgs *a, int i, Matrix **out, Value *owned)
{
    *owned = val_none();
    if (arg_given(a, i) && a->v[i].kind == VAL_MATRIX) {
        *out = mat_dense_m(I, a->v[i].m, fn_name(a));
        return *out ? ST_OK : ST_ERR;
    }
    if (!arg_given(a, i) || !(val_is_number(a->v[i]) || a->v[i].kind == VAL_BOOL))
        return arg_type_error(I, a, i, "a matrix or a number");
    Matrix *m = mat_alloc(I, 1, 1);
    if (!m)
        return ST_ERR;
    m->data[0] = val_num(a->v[i]);
    *owned = val_matrix_take(m);
    *out = m;
    return ST_OK;
}

Status arg_double(Interp *I, const BArgs *a, int i, double dflt, double *out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    Value v = a->v[i];
    if (v.kind == VAL_DOUBLE || v.kind == VAL_INT || v.kind == VAL_BOOL) {
        *out = val_num(v);
        return ST_OK;
    }
    return arg_type_error(I, a, i, "a number");
}

Status arg_int(Interp *I, const BArgs *a, int i, int64_t dflt, int64_t *out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    Value v = a->v[i];
    switch (v.kind) {
    case VAL_INT: *out = v.i; return ST_OK;
    case VAL_BOOL: *out = v.b; return ST_OK;
    case VAL_DOUBLE:
        if (isnan(v.d) || fabs(v.d) >= 9.2e18) {
            char nb[64];
            return err_set(I, "%s(): argument '%s' must be an integer, got %g", fn_name(a),
                           arg_name(a, i, nb, sizeof nb), v.d);
        }
        *out = ops_d2i(v.d);
        return ST_OK;
    default: return arg_type_error(I, a, i, "an integer");
    }
}

Status arg_bool(Interp *I, const BArgs *a, int i, bool dflt, bool *out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    Value v = a->v[i];
    switch (v.kind) {
    case VAL_BOOL: *out = v.b; return ST_OK;
    case VAL_INT: *out = v.i != 0; return ST_OK;
    case VAL_DOUBLE: *out = v.d != 0; return ST_OK;
    case VAL_STRING:
        if (!strcmp(v.s->s, "TRUE") || !strcmp(v.s->s, "true")) { *out = true; return ST_OK; }
        if (!strcmp(v.s->s, "FALSE") || !strcmp(v.s->s, "false")) { *out = false; return ST_OK; }
        return arg_type_error(I, a, i, "a boolean");
    default: return arg_type_error(I, a, i, "a boolean");
    }
}

Status arg_string(Interp *I, const BArgs *a, int i, const char *dflt, const char **out)
{
    if (!arg_given(a, i)) {
        if (!dflt)
            return arg_type_error(I, a, i, "a string");
        *out = dflt;
        return ST_OK;
    }
    if (a->v[i].kind != VAL_STRING)
        return arg_type_error(I, a, i, "a string");
    *out = a->v[i].s->s;
    return ST_OK;
}

Status arg_list(Interp *I, const BArgs *a, int i, List **out)
{
    if (!arg_given(a, i) || a->v[i].kind != VAL_LIST)
        return arg_type_error(I, a, i, "a list");
    *out = a->v[i].l;
    return ST_OK;
}

void bi_set_outs_take(const BArgs *a, Value *out, Value *res, int nres)
{
    (void)a;
    for (int j = 0; j < nres; j++)
        out[j] = res[j];
}

Status arg_matrices(Interp *I, const BArgs *a, int first, int n, Matrix **const out[])
{
    for (int k = 0; k < n; k++)
        TRY(arg_matrix(I, a, first + k, out[k]));
    return ST_OK;
}

Status bi_alloc_outs(Interp *I, const OutShape *shape, int n, Value *res, Matrix **m)
{
    for (int k = 0; k < n; k++) {
        m[k] = shape[k].zero ? mat_alloc_zero(I, shape[k].rows, shape[k].cols)
                             : mat_alloc(I, shape[k].rows, shape[k].cols);
        if (!m[k]) {
            for (int j = 0; j < k; j++)
                val_release(res[j]);
            return ST_ERR;
        }
        res[k] = val_matrix_take(m[k]);
    }
    return ST_OK;
}
