/* SPDX-License-Identifier: Apache-2.0
 * Frame builtins (doc/frames.md): as.frame, typeof, colnames, applySchema.
 * cbind/rbind of frames are in reorg.c's bind (runtime/frame.c does the
 * work), reading and writing in readwrite.c, transform* in transform.c.
 * Thread-safe: all state comes from the arguments. */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#include "../runtime/frame.h"

/* A 1 x n STRING frame whose cell j is text(j); the names are f's when f is
 * given. */
static Status string_row(Interp *I, int64_t n, const FrameBlock *names_of, const char *(*text)(const void *ctx,
                         int64_t j, char *buf, size_t cap), const void *ctx, Value *out)
{
    FrameBlock *r = frame_alloc(I, 1, n, NULL);
    if (!r)
        return ST_ERR;
    for (int64_t j = 0; j < n; j++) {
        char buf[256];
        const char *t = text(ctx, j, buf, sizeof buf);
        Str *s = str_from(t);
        if (!s || (names_of && names_of->names && !frame_set_name(r, j, names_of->names[j]))) {
            str_release(s);
            frame_release(r);
            return err_set(I, "out of memory");
        }
        r->col[j].s[0] = s;
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* ---- as.frame ---- */

/* The column type a DML scalar gets. */
static FrameType scalar_type(Value v)
{
    switch (v.kind) {
    case VAL_INT: return FT_INT;
    case VAL_DOUBLE: return FT_DOUBLE;
    case VAL_BOOL: return FT_BOOL;
    default: return FT_STRING;
    }
}

/* A list of scalars: one column of their common type (all of one type:
 * that one; numbers of both kinds: FP64; else STRING), as as.matrix makes
 * a column of a list of scalars. */
static Status frame_of_list(Interp *I, const List *l, Value *out)
{
    if (l->n == 1 && (l->items[0].kind == VAL_FRAME || l->items[0].kind == VAL_MATRIX)) {
        Value e = l->items[0];
        if (e.kind == VAL_FRAME) {
            *out = val_ref(e);
            return ST_OK;
        }
        FrameBlock *f = frame_from_matrix(I, e.m);
        if (!f)
            return ST_ERR;
        *out = val_frame_take(f);
        return ST_OK;
    }
    FrameType t = FT_STRING;
    for (int64_t i = 0; i < l->n; i++) {
        Value e = l->items[i];
        if (!val_is_scalar(e))
            return err_set(I, "as.frame(): a list of several entries must hold scalars only (entry %lld is a %s)",
                           (long long)i + 1, val_kind_name(e.kind));
        FrameType et = scalar_type(e);
        if (i == 0)
            t = et;
        else if (t != et)
            t = (t == FT_DOUBLE || t == FT_INT) && (et == FT_DOUBLE || et == FT_INT) ? FT_DOUBLE : FT_STRING;
    }
    FrameBlock *f = frame_alloc(I, l->n, 1, &t);
    if (!f)
        return ST_ERR;
    for (int64_t i = 0; i < l->n; i++)
        if (frame_put_value(I, f, i, 0, l->items[i]) != ST_OK) {
            frame_release(f);
            return ST_ERR;
        }
    *out = val_frame_take(f);
    return ST_OK;
}

/* as.frame(x): matrix -> FP64 columns; scalar -> 1x1; frame -> itself. */
static Status bi_as_frame(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    switch (v.kind) {
    case VAL_FRAME:
        *out = val_ref(v);
        return ST_OK;
    case VAL_MATRIX: {
        FrameBlock *f = frame_from_matrix(I, v.m);
        if (!f)
            return ST_ERR;
        *out = val_frame_take(f);
        return ST_OK;
    }
    case VAL_LIST:
        return frame_of_list(I, v.l, out);
    case VAL_BOOL: case VAL_INT: case VAL_DOUBLE: case VAL_STRING: {
        FrameType t = scalar_type(v);
        FrameBlock *f = frame_alloc(I, 1, 1, &t);
        if (!f)
            return ST_ERR;
        if (frame_put_value(I, f, 0, 0, v) != ST_OK) {
            frame_release(f);
            return ST_ERR;
        }
        *out = val_frame_take(f);
        return ST_OK;
    }
    default:
        return arg_type_error(I, a, 0, "a matrix, scalar, list or frame");
    }
}

/* ---- typeof, colnames ---- */

static const char *type_of_col(const void *ctx, int64_t j, char *buf, size_t cap)
{
    (void)buf, (void)cap;
    return frame_col_type_name(&((const FrameBlock *)ctx)->col[j]);
}

static const char *fp64(const void *ctx, int64_t j, char *buf, size_t cap)
{
    (void)ctx, (void)j, (void)buf, (void)cap;
    return "FP64";
}

/* typeof(X): a 1 x ncol frame of the columns' value types. */
static Status bi_typeof(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_FRAME)
        return string_row(I, v.f->cols, v.f, type_of_col, v.f, out);
    if (v.kind == VAL_MATRIX)
        return string_row(I, v.m->cols, NULL, fp64, NULL, out);
    return arg_type_error(I, a, 0, "a frame or matrix");
}

static const char *name_of_col(const void *ctx, int64_t j, char *buf, size_t cap)
{
    return frame_col_name(ctx, j, buf, cap);
}

/* colnames(F): a 1 x ncol frame of F's column names. */
static Status bi_colnames(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[0].kind != VAL_FRAME)
        return arg_type_error(I, a, 0, "a frame");
    const FrameBlock *f = a->v[0].f;
    return string_row(I, f->cols, f, name_of_col, f, out);
}

/* ---- applySchema ---- */

/* applySchema(F, S): F with column j converted to the type named by S[1, j]
 * (STRING, FP64, FP32, INT64, INT32, BOOLEAN). A cell that does not convert
 * (or an integer beyond 32 bits for INT32) is an error naming it; an FP32
 * cell is the double rounded to float. */
static Status bi_applySchema(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[0].kind != VAL_FRAME)
        return arg_type_error(I, a, 0, "a frame");
    if (a->v[1].kind != VAL_FRAME)
        return arg_type_error(I, a, 1, "a frame (1 x ncol, of value type names)");
    const FrameBlock *f = a->v[0].f, *s = a->v[1].f;
    if (s->rows < 1 || s->cols != f->cols)
        return err_set(I, "applySchema(): the schema frame is %lldx%lld but the frame has %lld columns",
                       (long long)s->rows, (long long)s->cols, (long long)f->cols);
    FrameType *types = calloc((size_t)f->cols + 1, sizeof *types);
    bool *narrow = calloc((size_t)f->cols + 1, sizeof *narrow);
    if (!types || !narrow) {
        free(types);
        free(narrow);
        return err_set(I, "applySchema(): out of memory");
    }
    for (int64_t j = 0; j < f->cols; j++) {
        StrBuf b;
        sb_init(&b);
        frame_cell_text(&b, s, 0, j);
        bool ok = !b.oom && frame_type_parse(b.p ? b.p : "", b.len, &types[j], &narrow[j]);
        Status st = ok ? ST_OK : err_set(I, "applySchema(): '%s' (column %lld of the schema) is not a value type "
                                          "(expected STRING, FP64, FP32, INT64, INT32 or BOOLEAN)", b.p ? b.p : "",
                                          (long long)j + 1);
        sb_free(&b);
        if (st != ST_OK) {
            free(types);
            free(narrow);
            return st;
        }
    }
    FrameBlock *r = frame_alloc(I, f->rows, f->cols, types);
    free(types);
    if (r)
        frame_set_narrow(r, narrow);
    free(narrow);
    if (!r)
        return ST_ERR;
    Status st = ST_OK;
    for (int64_t j = 0; j < f->cols && st == ST_OK; j++) {
        if (f->names && !frame_set_name(r, j, f->names[j])) {
            st = err_set(I, "applySchema(): out of memory");
            break;
        }
        for (int64_t i = 0; i < f->rows && st == ST_OK; i++) {
            /* Same storage: copied (an FP32 target rounds); an INT64 into
             * INT32 goes through the text, which checks the range. */
            if (f->col[j].type == r->col[j].type &&
                !(r->col[j].type == FT_INT && r->col[j].narrow && !f->col[j].narrow)) {
                frame_copy_cell(r, i, j, f, i, j);
                continue;
            }
            /* A missing string stays missing in a STRING column, and is
             * zero (FALSE) in the others, as in a frame read from csv. */
            if (f->col[j].type == FT_STRING && !f->col[j].s[i])
                continue;
            StrBuf b;
            sb_init(&b);
            frame_cell_text(&b, f, i, j);
            bool oom = b.oom;
            if (!oom && !frame_put_text(r, i, j, b.p ? b.p : "", b.len, &oom)) {
                char where[200];
                st = oom ? err_set(I, "applySchema(): out of memory")
                         : err_set(I, "applySchema(): the cell at %s holds '%s', which is not %s",
                                   frame_cell_where(f, i, j, where, sizeof where), b.p ? b.p : "",
                                   frame_col_type_name(&r->col[j]));
            }
            sb_free(&b);
        }
    }
    if (st != ST_OK) {
        frame_release(r);
        return st;
    }
    *out = val_frame_take(r);
    return ST_OK;
}

const BuiltinDef bi_frame_table[] = {
    {"as.frame", bi_as_frame, "x", 1, BIND_POS, 1, BF_RT(RT_FRAME)},
    {"typeof", bi_typeof, "x", 1, BIND_POS, 1, BF_RT(RT_FRAME)},
    {"colnames", bi_colnames, "x", 1, BIND_POS, 1, BF_RT(RT_FRAME)},
    {"applySchema", bi_applySchema, "target,schema", 2, BIND_POS, 1, BF_RT(RT_FRAME)},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
