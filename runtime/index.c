/* SPDX-License-Identifier: Apache-2.0
 * Indexing (doc/language.md, "indexing"): right indexing X[r, c] of matrices
 * and frames and L[i] of lists, and left indexing X[r, c] = v / L[i] = v.
 * Index parts are 1-based and inclusive; an empty part means "all". Left indexing mutates in place when
 * the variable holds the only reference, else it copies (value semantics). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "frame.h"
#include "ops.h"
#include "sparse_ops.h"

typedef struct Span {
    int64_t lo, hi;         /* 0-based, half-open [lo, hi) */
} Span;

/* A scalar as a 1-based index (ints, integral doubles truncated as doc/language.md, "types"). */
static Status index_value(Interp *I, Value v, int64_t *out)
{
    switch (v.kind) {
    case VAL_INT: *out = v.i; return ST_OK;
    case VAL_DOUBLE:
        if (!isfinite(v.d))
            return err_set(I, "index is not a finite number");
        *out = ops_d2i(v.d);
        return ST_OK;
    case VAL_BOOL: *out = v.b; return ST_OK;
    case VAL_MATRIX:
        if (v.m->rows == 1 && v.m->cols == 1 && isfinite(mat_get(v.m, 0, 0))) {
            *out = ops_d2i(mat_get(v.m, 0, 0));
            return ST_OK;
        }
        return err_set(I, "index must be a scalar, got a %lldx%lld matrix", (long long)v.m->rows,
                       (long long)v.m->cols);
    default:
        return err_set(I, "index must be a number, got a %s", val_kind_name(v.kind));
    }
}

static Status part_bound(Interp *I, const Node *n, int64_t *out)
{
    Value v;
    TRY(eval_expr(I, n, &v));
    Status st = index_value(I, v, out);
    val_release(v);
    if (st != ST_OK)
        return err_stamp(I, &n->loc);
    return ST_OK;
}

/* One index part against a dimension of size 'dim'. */
static Status eval_span(Interp *I, const IndexPart *ip, int64_t dim, const char *what, int64_t rows, int64_t cols,
                        const char *noun, const Loc *loc, Span *sp)
{
    if (ip->kind == IX_ALL) {
        sp->lo = 0;
        sp->hi = dim;
        return ST_OK;
    }
    int64_t lo, hi;
    TRY(part_bound(I, ip->lo, &lo));
    if (ip->kind == IX_RANGE)
        TRY(part_bound(I, ip->hi, &hi));
    else
        hi = lo;
    if (lo > hi)
        return err_at(I, loc, "invalid %s range %lld:%lld (lower bound above upper bound)", what, (long long)lo,
                      (long long)hi);
    if (lo < 1 || hi > dim) {
        if (lo == hi)
            return err_at(I, loc, "%s index %lld out of bounds for a %lldx%lld %s", what, (long long)lo,
                          (long long)rows, (long long)cols, noun);
        return err_at(I, loc, "%s range %lld:%lld out of bounds for a %lldx%lld %s", what, (long long)lo,
                      (long long)hi, (long long)rows, (long long)cols, noun);
    }
    sp->lo = lo - 1;
    sp->hi = hi;
    return ST_OK;
}

/* The row and column spans of X[rows, cols] over a nr x nc 'noun'. */
static Status dim_spans(Interp *I, int64_t nr, int64_t nc, const char *noun, const IndexPart *rows,
                        const IndexPart *cols, bool has_cols, const Loc *loc, Span *rs, Span *cs)
{
    TRY(eval_span(I, rows, nr, "row", nr, nc, noun, loc, rs));
    if (has_cols)
        TRY(eval_span(I, cols, nc, "column", nr, nc, noun, loc, cs));
    else {
        cs->lo = 0;
        cs->hi = nc;
    }
    return ST_OK;
}

static Status matrix_spans(Interp *I, const Matrix *m, const IndexPart *rows, const IndexPart *cols, bool has_cols,
                           const Loc *loc, Span *rs, Span *cs)
{
    return dim_spans(I, m->rows, m->cols, "matrix", rows, cols, has_cols, loc, rs, cs);
}

static Matrix *slice(Interp *I, const Matrix *m, Span rs, Span cs)
{
    int64_t nr = rs.hi - rs.lo, nc = cs.hi - cs.lo;
    if (m->sp)  /* sparse, or dense when the slice filled up */
        return mat_from_sp_take(I, sp_slice(m->sp, rs.lo, rs.hi, cs.lo, cs.hi), "indexing");
    Matrix *r = mat_alloc(I, nr, nc);
    if (!r)
        return NULL;
    if (nc == m->cols) {
        if (nr > 0 && nc > 0)
            memcpy(r->data, m->data + rs.lo * m->cols, sizeof(double) * (size_t)(nr * nc));
    } else {
        for (int64_t i = 0; i < nr; i++)
            memcpy(r->data + i * nc, m->data + (rs.lo + i) * m->cols + cs.lo, sizeof(double) * (size_t)nc);
    }
    return r;
}

/* S with the cells [rs) x [cs) replaced by src (row-major, rs x cs; NULL
 * when the range is empty), as a new CSR; NULL when memory runs out. */
static SpMat *sparse_assign(const SpMat *S, Span rs, Span cs, const double *src)
{
    int64_t nc = cs.hi - cs.lo, nr = rs.hi - rs.lo;
    int64_t add = 0;
    for (int64_t k = 0; k < nr * nc; k++)
        add += src[k] != 0;
    SpMat *Z = sp_new(S->rows, S->cols, S->nnz + add);
    if (!Z)
        return NULL;
    int64_t o = 0;
    for (int64_t i = 0; i < S->rows; i++) {
        int64_t p = S->rowptr[i], pe = S->rowptr[i + 1];
        if (i < rs.lo || i >= rs.hi) {
            for (; p < pe; p++, o++) {
                Z->colidx[o] = S->colidx[p];
                Z->vals[o] = S->vals[p];
            }
        } else {
            const double *row = nc > 0 ? src + (i - rs.lo) * nc : NULL;
            for (; p < pe && S->colidx[p] < cs.lo; p++, o++) {
                Z->colidx[o] = S->colidx[p];
                Z->vals[o] = S->vals[p];
            }
            for (int64_t j = 0; j < nc; j++)
                if (row[j] != 0) {
                    Z->colidx[o] = (int32_t)(cs.lo + j);
                    Z->vals[o++] = row[j];
                }
            while (p < pe && S->colidx[p] < cs.hi)
                p++;
            for (; p < pe; p++, o++) {
                Z->colidx[o] = S->colidx[p];
                Z->vals[o] = S->vals[p];
            }
        }
        Z->rowptr[i + 1] = o;
    }
    Z->nnz = o;
    return Z;
}

/* ---- lists ---- */

/* Position (0-based) of a list index value: a number or an entry name. */
static Status list_pos(Interp *I, const List *l, const Node *n, int64_t *pos, bool allow_end)
{
    Value v;
    TRY(eval_expr(I, n, &v));
    if (v.kind == VAL_STRING) {
        if (!l->names) {
            Status st = err_at(I, &n->loc, "Invalid indexing by name in unnamed list: %s.", v.s->s);
            val_release(v);
            return st;
        }
        int64_t k = list_find(l, v.s->s);
        if (k < 0) {
            if (allow_end) {
                *pos = -1;      /* caller appends under this name */
                val_release(v);
                return ST_OK;
            }
            Status st = err_at(I, &n->loc, "List indexing returned no entry for name='%s'", v.s->s);
            val_release(v);
            return st;
        }
        val_release(v);
        *pos = k;
        return ST_OK;
    }
    int64_t k;
    Status st = index_value(I, v, &k);
    val_release(v);
    if (st != ST_OK)
        return err_stamp(I, &n->loc);
    if (k < 1 || k > l->n + (allow_end ? 1 : 0))
        return err_at(I, &n->loc, "list index %lld out of bounds for a list of length %lld", (long long)k,
                      (long long)l->n);
    *pos = k - 1;
    return ST_OK;
}

static Status list_span(Interp *I, const List *l, const IndexPart *ip, const Loc *loc, Span *sp)
{
    if (ip->kind == IX_ALL) {
        sp->lo = 0;
        sp->hi = l->n;
        return ST_OK;
    }
    int64_t lo, hi;
    TRY(list_pos(I, l, ip->lo, &lo, false));
    if (ip->kind == IX_RANGE)
        TRY(list_pos(I, l, ip->hi, &hi, false));
    else
        hi = lo;
    if (lo > hi)
        return err_at(I, loc, "invalid list range %lld:%lld", (long long)lo + 1, (long long)hi + 1);
    sp->lo = lo;
    sp->hi = hi + 1;
    return ST_OK;
}

/* A list is indexed by its rows only: a column index (L[j, 1], L[j, ])
 * is ignored, as upstream's list indexing does (COMPAT.md 11). */
static Status index_list(Interp *I, const Node *n, const List *l, Value *out)
{
    Span sp = {0, 0};
    TRY(list_span(I, l, &n->index.rows, &n->loc, &sp));
    List *r = list_new(sp.hi - sp.lo, l->names != NULL);
    if (!r)
        return err_at(I, &n->loc, "out of memory");
    for (int64_t i = sp.lo; i < sp.hi; i++) {
        if (!list_push(r, l->items[i], l->names ? l->names[i]->s : NULL)) {
            list_release(r);
            return err_at(I, &n->loc, "out of memory");
        }
    }
    *out = val_list_take(r);
    return ST_OK;
}

Status index_get(Interp *I, const Node *n, Value *out)
{
    Value t;
    TRY(eval_expr(I, n->index.target, &t));
    Status st;
    if (t.kind == VAL_MATRIX) {
        Span rs, cs;
        st = matrix_spans(I, t.m, &n->index.rows, &n->index.cols, n->index.has_cols, &n->loc, &rs, &cs);
        if (st == ST_OK) {
            Matrix *r = slice(I, t.m, rs, cs);
            if (r)
                *out = val_matrix_take(r);
            else
                st = err_stamp(I, &n->loc);
        }
    } else if (t.kind == VAL_LIST) {
        st = index_list(I, n, t.l, out);
    } else if (t.kind == VAL_FRAME) {
        Span rs, cs;
        st = dim_spans(I, t.f->rows, t.f->cols, "frame", &n->index.rows, &n->index.cols, n->index.has_cols,
                       &n->loc, &rs, &cs);
        if (st == ST_OK) {
            FrameBlock *r = frame_slice_raw(t.f, rs.lo, rs.hi, cs.lo, cs.hi);
            if (r)
                *out = val_frame_take(r);
            else
                st = err_at(I, &n->loc, "out of memory indexing a frame");
        }
    } else {
        st = err_at(I, &n->loc, "cannot index %s %s (only matrices, frames and lists can be indexed)",
                    t.kind == VAL_INT ? "an" : "a", val_kind_name(t.kind));
    }
    val_release(t);
    return st;
}

/* ---- left indexing ---- */

/* Writes v into the cells rs x cs of m (owned; *res is what the variable
 * holds afterwards). The spans were computed before m left its variable. */
static Status assign_matrix_take(Interp *I, Matrix *m, Span rs, Span cs, Value v, bool accum, const Loc *loc,
                            Matrix **res)
{
    *res = m;
    int64_t nr = rs.hi - rs.lo, nc = cs.hi - cs.lo;
    if (accum) {
        Matrix *cur = slice(I, m, rs, cs);
        if (!cur) {
            val_release(v);
            return err_stamp(I, loc);
        }
        Value sum;
        if (ops_binary_take(I, OP_ADD, val_matrix_take(cur), val_ref(v), &sum) != ST_OK) {
            val_release(v);
            return err_stamp(I, loc);
        }
        val_release(v);
        v = sum;
    }
    Status st = ST_OK;
    const double *src = NULL;
    double scalar = 0;
    if (val_is_number(v) || v.kind == VAL_BOOL) {
        if (nr * nc != 1) {
            st = err_at(I, loc, "Invalid index range of scalar leftindexing: [%lld:%lld,%lld:%lld] (assign a "
                        "matrix(v, rows=%lld, cols=%lld) instead)", (long long)rs.lo + 1, (long long)rs.hi,
                        (long long)cs.lo + 1, (long long)cs.hi, (long long)nr, (long long)nc);
            goto out;
        }
        scalar = val_num(v);
        src = &scalar;
    } else if (v.kind == VAL_MATRIX) {
        if (v.m->rows != nr || v.m->cols != nc) {
            st = err_at(I, loc, "left indexing: the value is %lldx%lld but the target range [%lld:%lld,%lld:%lld] "
                        "is %lldx%lld", (long long)v.m->rows, (long long)v.m->cols, (long long)rs.lo + 1,
                        (long long)rs.hi, (long long)cs.lo + 1, (long long)cs.hi, (long long)nr, (long long)nc);
            goto out;
        }
        src = mat_dense(I, v.m, "left indexing");
        if (!src && nr * nc > 0) {
            st = err_stamp(I, loc);
            goto out;
        }
    } else {
        st = err_at(I, loc, "cannot assign a %s into a matrix", val_kind_name(v.kind));
        goto out;
    }
    if (m->sp) {
        /* a sparse target: rebuilt around the new cells (O(nnz)), sparse
         * or dense by the format rule; no dense copy of a large matrix */
        Matrix *r = mat_from_sp_take(I, sparse_assign(m->sp, rs, cs, src), "left indexing");
        mat_release(m);
        *res = r;
        if (!r)
            st = err_stamp(I, loc);
        goto out;
    }
    m = mat_make_unique_take(I, m);
    *res = m;
    if (!m) {
        st = err_stamp(I, loc);
        goto out;
    }
    /* src may alias m only if v is m itself (X[..] = X with the same shape):
     * memmove keeps that correct. An empty range copies nothing (src may
     * then be NULL, which memmove must not get). */
    for (int64_t i = 0; i < nr && nc > 0; i++)
        memmove(m->data + (rs.lo + i) * m->cols + cs.lo, src + i * nc, sizeof(double) * (size_t)nc);
out:
    val_release(v);
    return st;
}

/* Where a list left-index writes: entries [lo, hi] (0-based), or, when
 * lo < 0, a new entry appended under the name 'key' (owned). */
typedef struct ListTarget {
    int64_t lo, hi;
    Value key;
} ListTarget;

/* A column index (L[j, 1]) is ignored (COMPAT.md 11). */
static Status list_target(Interp *I, const Lhs *l, const List *L, ListTarget *t)
{
    t->key = val_none();
    if (l->rows.kind == IX_ALL) {
        t->lo = 0;
        t->hi = L->n - 1;
        return ST_OK;
    }
    TRY(list_pos(I, L, l->rows.lo, &t->lo, l->rows.kind == IX_ONE));
    if (l->rows.kind == IX_RANGE)
        TRY(list_pos(I, L, l->rows.hi, &t->hi, false));
    else
        t->hi = t->lo;
    if (t->lo < 0)
        TRY(eval_expr(I, l->rows.lo, &t->key));
    return ST_OK;
}

static Status assign_list_take(Interp *I, List *L, ListTarget *t, Value v, const Loc *loc, List **res)
{
    *res = L;
    Status st = ST_OK;
    int64_t lo = t->lo, hi = t->hi;
    if (lo < 0) {
        /* New name in a named list: append an entry. */
        List *c = list_clone(L);
        bool ok = c && list_push_take(c, v, t->key.s->s);
        if (!ok) {
            if (c)
                list_release(c);
            return err_at(I, loc, "out of memory");
        }
        list_release(L);
        *res = c;
        return ST_OK;
    }
    int64_t cnt = hi - lo + 1;
    List *c = list_clone(L);
    if (!c) {
        val_release(v);
        return err_at(I, loc, "out of memory");
    }
    if (lo == L->n) {
        /* L[length(L)+1] = v appends. */
        bool ok = list_push_take(c, v, L->names ? "" : NULL);
        if (!ok) {
            list_release(c);
            return err_at(I, loc, "out of memory");
        }
    } else if (v.kind == VAL_LIST && (cnt > 1 || v.l->n == 1)) {
        if (v.l->n != cnt) {
            st = err_at(I, loc, "List leftindexing size mismatch: %lld entries into a range of %lld",
                        (long long)v.l->n, (long long)cnt);
            val_release(v);
            list_release(c);
            return st;
        }
        for (int64_t i = 0; i < cnt; i++) {
            val_release(c->items[lo + i]);
            c->items[lo + i] = val_ref(v.l->items[i]);
        }
        val_release(v);
    } else {
        if (cnt != 1) {
            val_release(v);
            list_release(c);
            return err_at(I, loc, "List leftindexing size mismatch: one value into a range of %lld", (long long)cnt);
        }
        val_release(c->items[lo]);
        c->items[lo] = v;
    }
    list_release(L);
    *res = c;
    return ST_OK;
}

Status index_set_take(Interp *I, const Lhs *l, Value v, bool accum, const Loc *loc)
{
    Value *slot = &I->frame->slots[l->slot];
    if (slot->kind == VAL_NONE) {
        val_release(v);
        return err_at(I, loc, "variable '%s' must be defined before left indexing (%s[...] = ...)", l->name, l->name);
    }
    /* The index expressions are evaluated while the variable still holds its
     * value (they may read it: A[nrow(A), 1] = 5); only then is the value
     * moved out of the slot, so that, when the variable held the only
     * reference, the update happens in place. */
    if (slot->kind == VAL_MATRIX) {
        Span rs, cs;
        Matrix *cur = slot->m;
        if (matrix_spans(I, cur, &l->rows, &l->cols, l->has_cols, loc, &rs, &cs) != ST_OK) {
            val_release(v);
            return ST_ERR;
        }
        slot = &I->frame->slots[l->slot];
        Matrix *m = slot->m;
        *slot = val_none();
        Matrix *res;
        Status st = assign_matrix_take(I, m, rs, cs, v, accum, loc, &res);
        if (res)
            *slot = val_matrix_take(res);
        return st;
    }
    if (slot->kind == VAL_LIST) {
        if (accum) {
            val_release(v);
            return err_at(I, loc, "+= is not supported on list elements");
        }
        ListTarget t;
        if (list_target(I, l, slot->l, &t) != ST_OK) {
            val_release(t.key);
            val_release(v);
            return ST_ERR;
        }
        slot = &I->frame->slots[l->slot];
        List *L = slot->l;
        *slot = val_none();
        List *res;
        Status st = assign_list_take(I, L, &t, v, loc, &res);
        *slot = val_list_take(res);
        val_release(t.key);
        return st;
    }
    if (slot->kind == VAL_FRAME) {
        Span rs, cs;
        if (accum) {
            val_release(v);
            return err_at(I, loc, "+= is not supported on frame cells");
        }
        if (dim_spans(I, slot->f->rows, slot->f->cols, "frame", &l->rows, &l->cols, l->has_cols, loc, &rs,
                      &cs) != ST_OK) {
            val_release(v);
            return ST_ERR;
        }
        slot = &I->frame->slots[l->slot];
        FrameBlock *f = slot->f;
        *slot = val_none();
        FrameBlock *res;
        Status st = frame_assign_take(I, f, rs.lo, rs.hi, cs.lo, cs.hi, v, loc, &res);
        if (res)
            *slot = val_frame_take(res);
        return st;
    }
    val_release(v);
    return err_at(I, loc, "cannot index '%s': it is %s %s, not a matrix, frame or list", l->name,
                  slot->kind == VAL_INT ? "an" : "a", val_kind_name(slot->kind));
}
