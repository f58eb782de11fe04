/* SPDX-License-Identifier: Apache-2.0
 * The deep-learning builtins of doc/builtins.md, "Deep learning": conv2d and its two
 * backward passes, max/avg pooling and their backward passes, bias_add and
 * bias_multiply. This file binds and validates the arguments (the shape lists
 * are named: input_shape=[N,C,H,W], filter_shape=[F,C,R,S], pool_size=[R,S],
 * stride=[sh,sw], padding=[ph,pw]) and allocates the results; the arithmetic
 * is in dnn_kernels.c. Thread-safe: all state comes from the Interp. */
#include "registry.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dnn_kernels.h"

/* Largest shape value accepted: keeps every product we form below 2^63
 * once the matrix sizes (which the values must match) are checked. */
#define DNN_MAX_DIM ((int64_t)1 << 31)

/* Reads the shape list argument i (input_shape=[64, 1, 28, 28], ...) into
 * out[0..n): each entry a number, truncated to an integer like upstream. */
static Status shape_arg(Interp *I, const BArgs *a, int i, int n, int64_t *out)
{
    char pn[32];
    const char *fn = a->def->name;
    arg_name(a, i, pn, sizeof pn);
    if (!arg_given(a, i)) {
        /* upstream says "Expected stride1 to be expanded"; name the argument instead */
        const char *eg = !strcmp(pn, "input_shape") ? "[N, C, H, W]"
                         : !strcmp(pn, "filter_shape") ? "[F, C, R, S]"
                         : !strcmp(pn, "pool_size") ? "[R, S]"
                         : !strcmp(pn, "stride") ? "[1, 1]" : "[0, 0]";
        return err_set(I, "%s(): missing argument '%s' (shape lists are passed by name, e.g. %s=%s)", fn,
                       pn, pn, eg);
    }
    Value v = a->v[i];
    if (v.kind != VAL_LIST)
        return err_set(I, "%s(): argument '%s' must be a list of %d integers like [%s], got %s", fn, pn, n,
                       n == 4 ? "a, b, c, d" : "a, b", val_kind_name(v.kind));
    const List *l = v.l;
    if (l->n != n)
        return err_set(I, "%s(): argument '%s' must have %d entries, got %ld", fn, pn, n, (long)l->n);
    for (int k = 0; k < n; k++) {
        Value e = l->items[k];
        if (!val_is_number(e) && e.kind != VAL_BOOL)
            return err_set(I, "%s(): entry %d of '%s' must be a number, got %s", fn, k + 1, pn,
                           val_kind_name(e.kind));
        double d = val_num(e);
        if (!(fabs(d) < (double)DNN_MAX_DIM))
            return err_set(I, "%s(): entry %d of '%s' is out of range: %g", fn, k + 1, pn, d);
        out[k] = (int64_t)d;    /* truncation toward zero */
    }
    return ST_OK;
}

/* Binds the four shape lists, which start at argument 'first' in the order
 * input_shape, filter_shape or pool_size, stride, padding; checks their
 * values and computes the output size. */
static Status geom_args(Interp *I, const BArgs *a, int first, bool pool, DnnGeom *g)
{
    const char *fn = a->def->name;
    int64_t in[4], fs[4], st[2], pd[2];
    TRY(shape_arg(I, a, first, 4, in));
    TRY(shape_arg(I, a, first + 1, pool ? 2 : 4, fs));
    TRY(shape_arg(I, a, first + 2, 2, st));
    TRY(shape_arg(I, a, first + 3, 2, pd));
    if (in[0] < 1 || in[1] < 1 || in[2] < 1 || in[3] < 1)
        return err_set(I, "%s(): input_shape values must be positive, got [%ld, %ld, %ld, %ld]", fn,
                       (long)in[0], (long)in[1], (long)in[2], (long)in[3]);
    *g = (DnnGeom){.N = in[0], .C = in[1], .H = in[2], .W = in[3]};
    if (pool) {
        if (fs[0] < 1 || fs[1] < 1)
            return err_set(I, "%s(): pool_size values must be positive, got [%ld, %ld]", fn, (long)fs[0],
                           (long)fs[1]);
        g->R = fs[0];
        g->S = fs[1];
    } else {
        if (fs[0] < 1 || fs[1] < 1 || fs[2] < 1 || fs[3] < 1)
            return err_set(I, "%s(): filter_shape values must be positive, got [%ld, %ld, %ld, %ld]", fn,
                           (long)fs[0], (long)fs[1], (long)fs[2], (long)fs[3]);
        if (fs[1] != in[1])
            return err_set(I, "%s(): the channel counts differ: filter_shape has C=%ld, input_shape has C=%ld",
                           fn, (long)fs[1], (long)in[1]);
        g->F = fs[0];
        g->R = fs[2];
        g->S = fs[3];
    }
    if (st[0] < 1 || st[1] < 1)
        return err_set(I, "%s(): stride values must be positive, got [%ld, %ld]", fn, (long)st[0], (long)st[1]);
    if (pd[0] < 0 || pd[1] < 0)
        return err_set(I, "%s(): padding values must not be negative, got [%ld, %ld]", fn, (long)pd[0],
                       (long)pd[1]);
    g->sh = st[0];
    g->sw = st[1];
    g->ph = pd[0];
    g->pw = pd[1];
    if (!dnn_geom_output(g))
        return err_set(I, "%s(): the %ldx%ld %s does not fit the %ldx%ld input with padding [%ld, %ld]", fn,
                       (long)g->R, (long)g->S, pool ? "pool window" : "filter", (long)g->H, (long)g->W,
                       (long)g->ph, (long)g->pw);
    return ST_OK;
}

/* Product of the values, or -1 when it would not fit an int64. */
static int64_t prod3(int64_t a, int64_t b, int64_t c)
{
    int64_t ab, abc;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc))
        return -1;
    return abc;
}

/* Fetches matrix argument i and checks that it is rows x cols; 'what' names
 * it in the upstream-style message ("Incorrect input dimensions in conv2d"). */
static Status dims_arg(Interp *I, const BArgs *a, int i, const char *what, int64_t rows, int64_t cols,
                       Matrix **out)
{
    TRY(arg_matrix(I, a, i, out));
    if (cols < 0)
        return err_set(I, "%s(): the shapes are too large", a->def->name);
    if ((*out)->rows != rows || (*out)->cols != cols)
        return err_set(I, "Incorrect %s dimensions in %s: expected %ldx%ld, got %ldx%ld", what, a->def->name,
                       (long)rows, (long)cols, (long)(*out)->rows, (long)(*out)->cols);
    return ST_OK;
}

/* A new rows x cols result; 'cols' is -1 when the shapes overflowed. */
static Matrix *result(Interp *I, const BArgs *a, int64_t rows, int64_t cols)
{
    if (cols < 0) {
        err_set(I, "%s(): the shapes are too large", a->def->name);
        return NULL;
    }
    return mat_alloc(I, rows, cols);
}

/* Hands the result to *out, or turns a kernel's scratch failure into an error. */
static Status finish_take(Interp *I, const BArgs *a, Matrix *res, int rc, Value *out)
{
    if (rc != 0) {
        mat_release(res);
        return err_set(I, "%s(): out of memory for scratch space", a->def->name);
    }
    *out = val_matrix_take(res);
    return ST_OK;
}

/* conv2d(input, filter, input_shape=[N,C,H,W], filter_shape=[F,C,R,S], stride=[sh,sw], padding=[ph,pw])
 * -> N x (F*P*Q) */
static Status bi_conv2d(Interp *I, const BArgs *a, Value *out)
{
    DnnGeom g;
    Matrix *X, *W;
    TRY(geom_args(I, a, 2, false, &g));
    TRY(dims_arg(I, a, 0, "input", g.N, prod3(g.C, g.H, g.W), &X));
    TRY(dims_arg(I, a, 1, "filter", g.F, prod3(g.C, g.R, g.S), &W));
    Matrix *res = result(I, a, g.N, prod3(g.F, g.P, g.Q));
    if (!res)
        return ST_ERR;
    return finish_take(I, a, res, dnn_conv2d(&g, X->data, W->data, res->data), out);
}

/* conv2d_backward_filter(input, dout, input_shape=, filter_shape=, stride=, padding=) -> F x (C*R*S) */
static Status bi_conv2d_backward_filter(Interp *I, const BArgs *a, Value *out)
{
    DnnGeom g;
    Matrix *X, *dout;
    TRY(geom_args(I, a, 2, false, &g));
    TRY(dims_arg(I, a, 0, "input", g.N, prod3(g.C, g.H, g.W), &X));
    TRY(dims_arg(I, a, 1, "dout", g.N, prod3(g.F, g.P, g.Q), &dout));
    Matrix *res = result(I, a, g.F, prod3(g.C, g.R, g.S));
    if (!res)
        return ST_ERR;
    return finish_take(I, a, res, dnn_conv2d_backward_filter(&g, X->data, dout->data, res->data), out);
}

/* conv2d_backward_data(filter, dout, input_shape=, filter_shape=, stride=, padding=) -> N x (C*H*W) */
static Status bi_conv2d_backward_data(Interp *I, const BArgs *a, Value *out)
{
    DnnGeom g;
    Matrix *W, *dout;
    TRY(geom_args(I, a, 2, false, &g));
    TRY(dims_arg(I, a, 0, "filter", g.F, prod3(g.C, g.R, g.S), &W));
    TRY(dims_arg(I, a, 1, "dout", g.N, prod3(g.F, g.P, g.Q), &dout));
    Matrix *res = result(I, a, g.N, prod3(g.C, g.H, g.W));
    if (!res)
        return ST_ERR;
    return finish_take(I, a, res, dnn_conv2d_backward_data(&g, W->data, dout->data, res->data), out);
}

/* max_pool / avg_pool(input, input_shape=, pool_size=[R,S], stride=, padding=) -> N x (C*P*Q) */
static Status pool_forward(Interp *I, const BArgs *a, Value *out, bool avg)
{
    DnnGeom g;
    Matrix *X;
    TRY(geom_args(I, a, 1, true, &g));
    TRY(dims_arg(I, a, 0, "input", g.N, prod3(g.C, g.H, g.W), &X));
    Matrix *res = result(I, a, g.N, prod3(g.C, g.P, g.Q));
    if (!res)
        return ST_ERR;
    if (avg)
        dnn_avg_pool(&g, X->data, res->data);
    else
        dnn_max_pool(&g, X->data, res->data);
    *out = val_matrix_take(res);
    return ST_OK;
}

/* max_pool_backward / avg_pool_backward(input, dout, input_shape=, pool_size=, stride=, padding=)
 * -> N x (C*H*W). avg_pool_backward checks but does not read the input. */
static Status pool_backward(Interp *I, const BArgs *a, Value *out, bool avg)
{
    DnnGeom g;
    Matrix *X, *dout;
    TRY(geom_args(I, a, 2, true, &g));
    TRY(dims_arg(I, a, 0, "input", g.N, prod3(g.C, g.H, g.W), &X));
    TRY(dims_arg(I, a, 1, "dout", g.N, prod3(g.C, g.P, g.Q), &dout));
    Matrix *res = result(I, a, g.N, prod3(g.C, g.H, g.W));
    if (!res)
        return ST_ERR;
    if (avg)
        dnn_avg_pool_backward(&g, dout->data, res->data);
    else
        dnn_max_pool_backward(&g, X->data, dout->data, res->data);
    *out = val_matrix_take(res);
    return ST_OK;
}

static Status bi_max_pool(Interp *I, const BArgs *a, Value *out) { return pool_forward(I, a, out, false); }
static Status bi_avg_pool(Interp *I, const BArgs *a, Value *out) { return pool_forward(I, a, out, true); }
static Status bi_max_pool_backward(Interp *I, const BArgs *a, Value *out) { return pool_backward(I, a, out, false); }
static Status bi_avg_pool_backward(Interp *I, const BArgs *a, Value *out) { return pool_backward(I, a, out, true); }

/* bias_add / bias_multiply(input, bias): bias is C x 1 and C divides ncol(input);
 * channel c covers columns c*HW .. (c+1)*HW - 1, HW = ncol(input) / C. */
static Status bias_op(Interp *I, const BArgs *a, Value *out, bool mul)
{
    const char *fn = a->def->name;
    Matrix *X, *b;
    TRY(arg_matrix(I, a, 0, &X));
    TRY(arg_matrix(I, a, 1, &b));
    if (b->cols != 1 || b->rows < 1)
        return err_set(I, "Incorrect inputs for %s: the bias must be a column vector (C x 1), got %ldx%ld", fn,
                       (long)b->rows, (long)b->cols);
    if (X->cols % b->rows != 0)
        return err_set(I,
                       "Incorrect inputs for %s: the number of columns of the input (%ld) must be a multiple "
                       "of the number of rows of the bias (%ld)",
                       fn, (long)X->cols, (long)b->rows);
    /* An input that nothing else holds (bias_add(conv2d(...), b): the
     * argument is the only reference) takes the result in place, as the
     * operators reuse their unshared operands (runtime/ops.c). */
    Matrix *res;
    if (a->v[0].kind == VAL_MATRIX && a->v[0].m == X && obj_unique(&X->h)) {
        res = X;
        obj_retain(&res->h);
    } else if (!(res = result(I, a, X->rows, X->cols))) {
        return ST_ERR;
    }
    if (mul)
        dnn_bias_multiply(X->data, X->rows, X->cols, b->data, b->rows, res->data);
    else
        dnn_bias_add(X->data, X->rows, X->cols, b->data, b->rows, res->data);
    *out = val_matrix_take(res);
    return ST_OK;
}

static Status bi_bias_add(Interp *I, const BArgs *a, Value *out) { return bias_op(I, a, out, false); }
static Status bi_bias_multiply(Interp *I, const BArgs *a, Value *out) { return bias_op(I, a, out, true); }

const BuiltinDef bi_dnn_table[] = {
    {"conv2d", bi_conv2d, "input,filter,input_shape,filter_shape,stride,padding", 2, BIND_NAMED, 1, BF_PURE},
    {"conv2d_backward_filter", bi_conv2d_backward_filter,
     "input,dout,input_shape,filter_shape,stride,padding", 2, BIND_NAMED, 1, BF_PURE},
    {"conv2d_backward_data", bi_conv2d_backward_data, "filter,dout,input_shape,filter_shape,stride,padding", 2,
     BIND_NAMED, 1, BF_PURE},
    {"max_pool", bi_max_pool, "input,input_shape,pool_size,stride,padding", 1, BIND_NAMED, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"avg_pool", bi_avg_pool, "input,input_shape,pool_size,stride,padding", 1, BIND_NAMED, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"max_pool_backward", bi_max_pool_backward, "input,dout,input_shape,pool_size,stride,padding", 2,
     BIND_NAMED, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"avg_pool_backward", bi_avg_pool_backward, "input,dout,input_shape,pool_size,stride,padding", 2,
     BIND_NAMED, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"bias_add", bi_bias_add, "input,bias", 2, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"bias_multiply", bi_bias_multiply, "input,bias", 2, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
