/* SPDX-License-Identifier: Apache-2.0
 * Encoding and decoding of values for Open MPI messages (wire.h). */
#include <stdlib.h>
#include <string.h>

#include "../../base/sparse.h"
#include "wire.h"

/* Lists inside lists deeper than this are refused (values from DML cannot
 * be this deep in a paramserv model or hyperparams in practice). */
#define WIRE_MAX_DEPTH 64

enum { WIRE_NONE, WIRE_BOOL, WIRE_INT, WIRE_DOUBLE, WIRE_STRING, WIRE_MATRIX, WIRE_LIST, WIRE_SPARSE };

/* A sparse matrix travels as it is held (issue 31: a sparse partition is
 * what crosses the network), always inline, layout or not: rows, cols, nnz,
 * then the CSR's rowptr (rows + 1 int64), colidx (nnz int32) and vals (nnz
 * doubles). 12 bytes a non-zero instead of 8 a cell; the reader checks the
 * invariants (sp_check) before it accepts one. */
static void put_sparse(WBuf *b, const SpMat *sp)
{
    wb_i64(b, WIRE_SPARSE);
    wb_i64(b, sp->rows);
    wb_i64(b, sp->cols);
    wb_i64(b, sp->nnz);
    wb_bytes(b, sp->rowptr, sizeof(int64_t) * (size_t)(sp->rows + 1));
    wb_bytes(b, sp->colidx, sizeof(int32_t) * (size_t)sp->nnz);
    wb_bytes(b, sp->vals, sizeof(double) * (size_t)sp->nnz);
}

void wb_i64(WBuf *b, int64_t v) { wb_bytes(b, &v, sizeof v); }
void wb_f64(WBuf *b, double v) { wb_bytes(b, &v, sizeof v); }

void wb_strn(WBuf *b, const char *s, size_t n)
{
    wb_i64(b, (int64_t)n);
    wb_bytes(b, s, n);
}

void wb_str(WBuf *b, const char *s)
{
    if (!s) {
        wb_i64(b, -1);
        return;
    }
    wb_strn(b, s, strlen(s));
}

static void put_value(WBuf *b, Value v, int depth, bool data)
{
    switch (v.kind) {
    case VAL_BOOL: wb_i64(b, WIRE_BOOL); wb_i64(b, v.b); break;
    case VAL_INT: wb_i64(b, WIRE_INT); wb_i64(b, v.i); break;
    case VAL_DOUBLE: wb_i64(b, WIRE_DOUBLE); wb_f64(b, v.d); break;
    case VAL_STRING: wb_i64(b, WIRE_STRING); wb_strn(b, v.s->s, (size_t)v.s->len); break;
    case VAL_MATRIX:
        if (v.m->sp) {
            put_sparse(b, v.m->sp);
            break;
        }
        wb_i64(b, WIRE_MATRIX);
        wb_i64(b, v.m->rows);
        wb_i64(b, v.m->cols);
        if (data)
            wb_bytes(b, v.m->data, sizeof(double) * (size_t)mat_len(v.m));
        break;
    case VAL_LIST:
        if (depth >= WIRE_MAX_DEPTH) {
            b->oom = true;
            break;
        }
        wb_i64(b, WIRE_LIST);
        wb_i64(b, v.l->n);
        wb_i64(b, v.l->names != NULL);
        for (int64_t i = 0; i < v.l->n; i++) {
            if (v.l->names)
                wb_str(b, v.l->names[i] ? v.l->names[i]->s : NULL);
            put_value(b, v.l->items[i], depth + 1, data);
        }
        break;
    default: wb_i64(b, WIRE_NONE); break;
    }
}

void wb_value(WBuf *b, Value v) { put_value(b, v, 0, true); }
void wb_value_layout(WBuf *b, Value v) { put_value(b, v, 0, false); }

int64_t wire_matrices(Value v, Matrix **out, int64_t cap)
{
    if (v.kind == VAL_MATRIX) {
        if (v.m->sp)
            return 0;           /* inline in the layout (put_sparse) */
        if (cap > 0)
            out[0] = v.m;
        return 1;
    }
    int64_t n = 0;
    if (v.kind == VAL_LIST)
        for (int64_t i = 0; i < v.l->n; i++)
            n += wire_matrices(v.l->items[i], out ? out + n : NULL, cap - n > 0 ? cap - n : 0);
    return n;
}

static const char *take(WRead *r, size_t n)
{
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return NULL;
    }
    const char *p = r->p + r->pos;
    r->pos += n;
    return p;
}

int64_t wr_i64(WRead *r)
{
    int64_t v = 0;
    const char *p = take(r, sizeof v);
    if (p)
        memcpy(&v, p, sizeof v);
    return v;
}

double wr_f64(WRead *r)
{
    double v = 0;
    const char *p = take(r, sizeof v);
    if (p)
        memcpy(&v, p, sizeof v);
    return v;
}

const char *wr_strn(WRead *r, size_t *n)
{
    int64_t len = wr_i64(r);
    *n = 0;
    if (len < 0 || r->bad)
        return NULL;
    const char *p = take(r, (size_t)len);
    if (p)
        *n = (size_t)len;
    return p;
}

char *wr_str(WRead *r)
{
    size_t n;
    const char *p = wr_strn(r, &n);
    if (!p)
        return NULL;
    char *s = malloc(n + 1);
    if (!s) {
        r->bad = r->oom = true;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* Lists are made with room for at most this many items and grow as items
 * arrive, so a claimed count costs memory only once its items are there
 * (a list nested 64 deep, each claiming the whole buffer, would otherwise
 * allocate 64 times the message's size). */
#define WIRE_LIST_ROOM 64

/* A sparse matrix (put_sparse) from the buffer, whose length bounds its
 * arrays; NONE and 'bad' unless they hold the CSR invariants. */
static Value get_sparse(WRead *r)
{
    int64_t rows = wr_i64(r), cols = wr_i64(r), nnz = wr_i64(r);
    size_t left = r->len - r->pos;
    if (r->bad || rows < 0 || cols < 0 || cols > INT32_MAX || nnz < 0 || (uint64_t)rows >= left / 8 ||
        (uint64_t)nnz > (left - 8 * (uint64_t)(rows + 1)) / 12) {
        r->bad = true;
        return val_none();
    }
    SpMat *sp = sp_new(rows, cols, nnz);
    const char *rp = take(r, sizeof(int64_t) * (size_t)(rows + 1));
    const char *ci = take(r, sizeof(int32_t) * (size_t)nnz);
    const char *vs = take(r, sizeof(double) * (size_t)nnz);
    if (!sp || r->bad) {
        r->oom = r->oom || (!sp && !r->bad);
        r->bad = true;
        sp_free(sp);
        return val_none();
    }
    memcpy(sp->rowptr, rp, sizeof(int64_t) * (size_t)(rows + 1));
    if (nnz > 0) {
        memcpy(sp->colidx, ci, sizeof(int32_t) * (size_t)nnz);
        memcpy(sp->vals, vs, sizeof(double) * (size_t)nnz);
    }
    sp->nnz = nnz;
    if (sp_check(sp)) {
        sp_free(sp);
        r->bad = true;
        return val_none();
    }
    Matrix *m = mat_new_sparse_take(sp);
    if (!m) {
        r->bad = r->oom = true;
        return val_none();
    }
    return val_matrix_take(m);
}

/* A value at 'depth'. 'budget' (layouts only, data false): the bytes of
 * cells its matrices may still claim; a matrix past it is refused before
 * it is allocated. With data, the cells are in the buffer, so its length
 * bounds them. */
static Value get_value(WRead *r, int depth, bool data, uint64_t *budget)
{
    int64_t kind = wr_i64(r);
    if (r->bad)
        return val_none();
    switch (kind) {
    case WIRE_NONE: return val_none();     /* a list entry a pull leaves out (readset.c) */
    case WIRE_BOOL: {
        int64_t b = wr_i64(r);
        return r->bad ? val_none() : val_bool(b != 0);
    }
    case WIRE_INT: {
        int64_t i = wr_i64(r);
        return r->bad ? val_none() : val_int(i);
    }
    case WIRE_DOUBLE: {
        double d = wr_f64(r);
        return r->bad ? val_none() : val_double(d);
    }
    case WIRE_STRING: {
        size_t n;
        const char *p = wr_strn(r, &n);
        Str *s = p ? str_new(p, n) : NULL;
        if (!s) {
            r->oom = r->oom || p != NULL;
            r->bad = true;
            return val_none();
        }
        return val_str_take(s);
    }
    case WIRE_MATRIX: {
        int64_t rows = wr_i64(r), cols = wr_i64(r);
        if (r->bad || rows < 0 || cols < 0 || (cols > 0 && rows > INT64_MAX / 8 / cols) ||
            (data && (uint64_t)(rows * cols) * 8 > r->len - r->pos) ||
            (!data && (uint64_t)(rows * cols) * 8 > *budget)) {
            r->bad = true;
            return val_none();
        }
        if (!data)
            *budget -= (uint64_t)(rows * cols) * 8;
        Matrix *m = mat_new_raw(rows, cols);
        if (!data) {
            if (!m)
                r->bad = r->oom = true;
            return m ? val_matrix_take(m) : val_none();
        }
        const char *p = take(r, sizeof(double) * (size_t)(rows * cols));
        if (!m || !p) {
            if (m)
                mat_release(m);
            r->oom = r->oom || (p && !m);
            r->bad = true;
            return val_none();
        }
        if (rows * cols > 0)
            memcpy(m->data, p, sizeof(double) * (size_t)(rows * cols));
        return val_matrix_take(m);
    }
    case WIRE_SPARSE:
        return get_sparse(r);
    case WIRE_LIST: {
        int64_t n = wr_i64(r);
        bool named = wr_i64(r) != 0;
        if (r->bad || depth >= WIRE_MAX_DEPTH || n < 0 || (uint64_t)n > r->len - r->pos) {
            r->bad = true;
            return val_none();
        }
        List *l = list_new(n < WIRE_LIST_ROOM ? n : WIRE_LIST_ROOM, named);
        if (!l) {
            r->bad = r->oom = true;
            return val_none();
        }
        for (int64_t i = 0; i < n && !r->bad; i++) {
            char *name = named ? wr_str(r) : NULL;
            Value v = get_value(r, depth + 1, data, budget);
            if (r->bad)
                val_release(v);
            else if (!list_push_take(l, v, name))
                r->bad = r->oom = true;     /* list_push_take released v */
            free(name);
        }
        if (r->bad) {
            list_release(l);
            return val_none();
        }
        return val_list_take(l);
    }
    default:
        r->bad = true;
        return val_none();
    }
}

Value wr_value(WRead *r) { return get_value(r, 0, true, NULL); }

Value wr_value_layout(WRead *r, uint64_t max_bytes)
{
    return get_value(r, 0, false, &max_bytes);
}

/* ---- both directions ---- */

void wio_i64(WIO *x, int64_t *v)
{
    if (x->w)
        wb_i64(x->w, *v);
    else
        *v = wr_i64(x->r);
}

void wio_u64(WIO *x, uint64_t *v)
{
    int64_t i = (int64_t)*v;
    wio_i64(x, &i);
    *v = (uint64_t)i;
}

void wio_f64(WIO *x, double *v)
{
    if (x->w)
        wb_f64(x->w, *v);
    else
        *v = wr_f64(x->r);
}

void wio_str(WIO *x, const char **s)
{
    if (x->w)
        wb_str(x->w, *s);
    else
        *s = wr_str(x->r);
}

void wio_text(WIO *x, const char **s, size_t *n)
{
    if (x->w) {
        wb_strn(x->w, *s ? *s : "", *s ? *n : 0);
        return;
    }
    const char *p = wr_strn(x->r, n);
    char *t = x->r->bad ? NULL : malloc(*n + 1);
    if (t) {
        if (*n)
            memcpy(t, p, *n);
        t[*n] = '\0';
    } else {
        if (!x->r->bad)
            x->r->oom = true;
        x->r->bad = true;
        *n = 0;
    }
    *s = t;
}

void wio_value(WIO *x, Value *v)
{
    if (x->w)
        wb_value(x->w, *v);
    else
        *v = wr_value(x->r);
}
