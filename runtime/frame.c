/* SPDX-License-Identifier: Apache-2.0
 * Frames in the runtime (frame.h): DML errors on allocation, the cell
 * conversions between frames, scalars, text and matrices, toString(), and
 * left indexing. Pure functions over their arguments; safe from any thread.
 * A frame is mutated only through frame_make_unique_take (value semantics). */
#include "frame.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* ---- allocation ---- */

FrameBlock *frame_alloc(Interp *I, int64_t rows, int64_t cols, const FrameType *types)
{
    if (rows < 0 || cols < 0) {
        err_set(I, "invalid frame dimensions %lldx%lld", (long long)rows, (long long)cols);
        return NULL;
    }
    FrameBlock *f = frame_new_raw(rows, cols, types);
    if (!f)
        err_set(I, "out of memory allocating a %lldx%lld frame", (long long)rows, (long long)cols);
    return f;
}

FrameBlock *frame_make_unique_take(Interp *I, FrameBlock *f)
{
    if (obj_unique(&f->h))
        return f;
    FrameBlock *c = frame_clone_raw(f);
    if (!c)
        err_set(I, "out of memory copying a %lldx%lld frame", (long long)f->rows, (long long)f->cols);
    frame_release(f);
    return c;
}

/* ---- cells ---- */

const char *frame_cell_where(const FrameBlock *f, int64_t i, int64_t j, char *buf, size_t cap)
{
    char name[128];
    snprintf(buf, cap, "row %lld, column '%s' (%s)", (long long)i + 1, frame_col_name(f, j, name, sizeof name),
             frame_col_type_name(&f->col[j]));
    return buf;
}

bool frame_cell_double(const FrameBlock *f, int64_t i, int64_t j, double *out)
{
    const FrameCol *c = &f->col[j];
    switch (c->type) {
    case FT_DOUBLE: *out = c->d[i]; return true;
    case FT_INT: *out = (double)c->i[i]; return true;
    case FT_BOOL: *out = c->b[i]; return true;
    case FT_STRING:
        break;
    }
    const Str *s = c->s[i];
    if (!s || s->len == 0) {
        *out = NAN;
        return true;
    }
    /* Parse through a one-cell FP64 frame column: one number grammar. */
    FrameType t = FT_DOUBLE;
    FrameBlock tmp = {.rows = 1, .cols = 1};
    double d = 0;
    FrameCol col = {.type = t, .d = &d};
    tmp.col = &col;
    bool oom = false;
    if (!frame_put_text(&tmp, 0, 0, s->s, (size_t)s->len, &oom))
        return false;
    *out = d;
    return true;
}

Status frame_put_value(Interp *I, FrameBlock *f, int64_t i, int64_t j, Value v)
{
    FrameCol *c = &f->col[j];
    char where[200];
    if (v.kind == VAL_STRING) {
        bool oom = false;
        if (frame_put_text(f, i, j, v.s->s, (size_t)v.s->len, &oom))
            return ST_OK;
        if (oom)
            return err_set(I, "out of memory storing a frame cell");
        return err_set(I, "cannot store '%s' in the frame cell at %s", v.s->s,
                       frame_cell_where(f, i, j, where, sizeof where));
    }
    if (!val_is_scalar(v))
        return err_set(I, "cannot store a %s in the frame cell at %s", val_kind_name(v.kind),
                       frame_cell_where(f, i, j, where, sizeof where));
    switch (c->type) {
    case FT_DOUBLE:
        c->d[i] = frame_narrow_double(c, val_num(v));
        return ST_OK;
    case FT_BOOL:
        c->b[i] = val_num(v) != 0;
        return ST_OK;
    case FT_INT:
        if (v.kind == VAL_DOUBLE) {
            if (!(v.d >= -9223372036854775808.0 && v.d < 9223372036854775808.0) || v.d != floor(v.d)) {
                char num[32];
                fmt_double_java(v.d, num);
                return err_set(I, "cannot store %s in the frame cell at %s (not an integer)", num,
                               frame_cell_where(f, i, j, where, sizeof where));
            }
            c->i[i] = (int64_t)v.d;
        } else {
            c->i[i] = v.kind == VAL_INT ? v.i : (int64_t)v.b;
        }
        if (c->narrow && (c->i[i] < INT32_MIN || c->i[i] > INT32_MAX)) {
            c->i[i] = 0;
            return err_set(I, "cannot store %lld in the frame cell at %s (beyond 32 bits)", (long long)
                           (v.kind == VAL_DOUBLE ? (int64_t)v.d : v.kind == VAL_INT ? v.i : 0),
                           frame_cell_where(f, i, j, where, sizeof where));
        }
        return ST_OK;
    case FT_STRING: {
        char buf[32];
        const char *t = buf;
        if (v.kind == VAL_INT)
            snprintf(buf, sizeof buf, "%lld", (long long)v.i);
        else if (v.kind == VAL_DOUBLE)
            fmt_double_java(v.d, buf);
        else
            t = v.b ? "true" : "false";
        Str *s = str_from(t);
        if (!s)
            return err_set(I, "out of memory storing a frame cell");
        str_release(c->s[i]);
        c->s[i] = s;
        return ST_OK;
    }
    }
    return ST_OK;
}

Status frame_replace(Interp *I, const FrameBlock *f, Value pat, Value rep, Value *out)
{
    if (!val_is_scalar(pat) || !val_is_scalar(rep))
        return err_set(I, "replace(): on a frame, 'pattern' and 'replacement' must be scalars");
    StrBuf p, r, cell;
    sb_init(&p);
    sb_init(&r);
    sb_init(&cell);
    tostring_scalar_sb(&p, pat);
    tostring_scalar_sb(&r, rep);
    FrameBlock *res = frame_clone_raw(f);
    Status st = ST_OK;
    if (!res || p.oom || r.oom)
        st = err_set(I, "replace(): out of memory");
    const char *pt = p.p ? p.p : "", *rt = r.p ? r.p : "";
    bool nan = !strcmp(pt, "NaN");
    for (int64_t j = 0; st == ST_OK && j < f->cols; j++)
        for (int64_t i = 0; st == ST_OK && i < f->rows; i++) {
            bool hit;
            if (f->col[j].type == FT_STRING && !f->col[j].s[i]) {
                hit = nan;
            } else {
                cell.len = 0;
                frame_cell_text(&cell, f, i, j);
                if (cell.oom) {
                    st = err_set(I, "replace(): out of memory");
                    break;
                }
                hit = cell.len == p.len && !memcmp(cell.p ? cell.p : "", pt, p.len);
            }
            if (!hit)
                continue;
            bool oom = false;
            if (!frame_put_text(res, i, j, rt, r.len, &oom)) {
                char where[200];
                st = oom ? err_set(I, "replace(): out of memory")
                         : err_set(I, "replace(): cannot store '%s' in the frame cell at %s", rt,
                                   frame_cell_where(f, i, j, where, sizeof where));
            }
        }
    sb_free(&p);
    sb_free(&r);
    sb_free(&cell);
    if (st != ST_OK) {
        if (res)
            frame_release(res);
        return st;
    }
    *out = val_frame_take(res);
    return ST_OK;
}

/* ---- matrices ---- */

FrameBlock *frame_from_matrix(Interp *I, const Matrix *m)
{
    if (m->sp && !(m = mat_dense_m(I, m, "matrix to frame")))
        return NULL;
    FrameType *types = calloc((size_t)m->cols + 1, sizeof *types);
    if (!types) {
        err_set(I, "out of memory in as.frame()");
        return NULL;
    }
    for (int64_t j = 0; j < m->cols; j++)
        types[j] = FT_DOUBLE;
    FrameBlock *f = frame_alloc(I, m->rows, m->cols, types);
    free(types);
    if (!f)
        return NULL;
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++)
            f->col[j].d[i] = m->data[i * m->cols + j];
    return f;
}

Status frame_to_matrix(Interp *I, const FrameBlock *f, const char *fn, Matrix **out)
{
    Matrix *m = mat_alloc(I, f->rows, f->cols);
    if (!m)
        return ST_ERR;
    for (int64_t j = 0; j < f->cols; j++)
        for (int64_t i = 0; i < f->rows; i++)
            if (!frame_cell_double(f, i, j, &m->data[i * f->cols + j])) {
                char where[200];
                Status st = err_set(I, "%s(): the frame cell at %s holds '%s', which is not a number", fn,
                                    frame_cell_where(f, i, j, where, sizeof where), f->col[j].s[i]->s);
                mat_release(m);
                return st;
            }
    *out = m;
    return ST_OK;
}

/* ---- left indexing ---- */

Status frame_assign_take(Interp *I, FrameBlock *f, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Value v,
                         const Loc *loc, FrameBlock **res)
{
    *res = f;
    int64_t nr = r1 - r0, nc = c1 - c0;
    Status st = ST_OK;
    if (val_is_scalar(v)) {
        if (nr * nc != 1) {
            st = err_at(I, loc, "Invalid index range of scalar leftindexing: [%lld:%lld,%lld:%lld] (a scalar "
                        "goes into one frame cell)", (long long)r0 + 1, (long long)r1, (long long)c0 + 1,
                        (long long)c1);
            goto out;
        }
    } else if (v.kind == VAL_FRAME) {
        if (v.f->rows != nr || v.f->cols != nc) {
            st = err_at(I, loc, "left indexing: the frame is %lldx%lld but the target range "
                        "[%lld:%lld,%lld:%lld] is %lldx%lld", (long long)v.f->rows, (long long)v.f->cols,
                        (long long)r0 + 1, (long long)r1, (long long)c0 + 1, (long long)c1, (long long)nr,
                        (long long)nc);
            goto out;
        }
    } else {
        st = err_at(I, loc, "cannot assign a %s into a frame (only a frame, or a scalar into one cell)%s",
                    val_kind_name(v.kind), v.kind == VAL_MATRIX ? "; use as.frame(X)" : "");
        goto out;
    }
    /* A frame value may be f itself (F[,] = F): copy from a reference held
     * here, which also keeps f shared so that it is copied, not changed
     * under the reader. */
    f = frame_make_unique_take(I, f);
    *res = f;
    if (!f) {
        st = err_stamp(I, loc);
        goto out;
    }
    if (val_is_scalar(v)) {
        if (frame_put_value(I, f, r0, c0, v) != ST_OK)
            st = err_stamp(I, loc);
        goto out;
    }
    for (int64_t j = 0; j < nc && st == ST_OK; j++) {
        if (v.f->col[j].type == f->col[c0 + j].type) {
            for (int64_t i = 0; i < nr; i++)
                frame_copy_cell(f, r0 + i, c0 + j, v.f, i, j);
            continue;
        }
        /* Into a STRING column a cell goes as its own text: an FP32 cell
         * as its float's shortest digits (Float.toString), "0.1", not as
         * the double it widens to. */
        if (f->col[c0 + j].type == FT_STRING) {
            StrBuf b;
            sb_init(&b);
            for (int64_t i = 0; i < nr && st == ST_OK; i++) {
                b.len = 0;
                frame_cell_text(&b, v.f, i, j);
                bool oom = b.oom;
                if (oom || !frame_put_text(f, r0 + i, c0 + j, b.p ? b.p : "", b.len, &oom))
                    st = err_at(I, loc, "out of memory in frame left indexing");
            }
            sb_free(&b);
            continue;
        }
        for (int64_t i = 0; i < nr && st == ST_OK; i++) {
            Value cell = frame_get(v.f, i, j);
            if (cell.kind == VAL_NONE)
                st = err_at(I, loc, "out of memory in frame left indexing");
            else if (frame_put_value(I, f, r0 + i, c0 + j, cell) != ST_OK)
                st = err_stamp(I, loc);
            val_release(cell);
        }
    }
out:
    val_release(v);
    return st;
}

/* ---- parfor merge ---- */

bool frame_same_layout(const FrameBlock *a, const FrameBlock *b)
{
    if (a->rows != b->rows || a->cols != b->cols)
        return false;
    for (int64_t j = 0; j < a->cols; j++)
        if (a->col[j].type != b->col[j].type || a->col[j].narrow != b->col[j].narrow)
            return false;
    return true;
}

static bool cell_equal(const FrameCol *x, const FrameCol *y, int64_t i)
{
    switch (x->type) {
    case FT_DOUBLE: return x->d[i] == y->d[i] || (isnan(x->d[i]) && isnan(y->d[i]));
    case FT_INT: return x->i[i] == y->i[i];
    case FT_BOOL: return x->b[i] == y->b[i];
    case FT_STRING:
        break;
    }
    const Str *s = x->s[i], *t = y->s[i];
    if (s == t)
        return true;
    return s && t && s->len == t->len && memcmp(s->s, t->s, (size_t)s->len) == 0;
}

void frame_merge_changed(FrameBlock *res, const FrameBlock *orig, const FrameBlock *v)
{
    for (int64_t j = 0; j < v->cols; j++)
        for (int64_t i = 0; i < v->rows; i++)
            if (!cell_equal(&v->col[j], &orig->col[j], i))
                frame_copy_cell(res, i, j, v, i, j);
}

/* ---- cbind / rbind ---- */

static Status bind_check(Interp *I, const char *fname, const Value *v, int n, bool by_cols, int64_t *R, int64_t *C)
{
    const FrameBlock *f0 = v[0].f;
    *R = by_cols ? f0->rows : 0;
    *C = by_cols ? 0 : f0->cols;
    for (int k = 0; k < n; k++) {
        if (v[k].kind != VAL_FRAME)
            return err_set(I, "%s(): argument %d must be a frame like the first, got %s", fname, k + 1,
                           val_kind_name(v[k].kind));
        const FrameBlock *f = v[k].f;
        if (by_cols) {
            if (f->rows != f0->rows)
                return err_set(I, "inputs to %s must have same number of rows: input 1 (%lldx%lld) vs input %d "
                               "(%lldx%lld)", fname, (long long)f0->rows, (long long)f0->cols, k + 1,
                               (long long)f->rows, (long long)f->cols);
            if (*C > INT64_MAX - f->cols)
                return err_set(I, "%s(): the result has too many columns", fname);
            *C += f->cols;
            continue;
        }
        if (f->cols != f0->cols)
            return err_set(I, "inputs to %s must have same number of columns: input 1 (%lldx%lld) vs input %d "
                           "(%lldx%lld)", fname, (long long)f0->rows, (long long)f0->cols, k + 1,
                           (long long)f->rows, (long long)f->cols);
        for (int64_t j = 0; j < f->cols; j++)
            if (f->col[j].type != f0->col[j].type || f->col[j].narrow != f0->col[j].narrow) {
                char name[128];
                return err_set(I, "%s(): the frames' schemas differ: column %lld ('%s') is %s in input 1 but %s "
                               "in input %d", fname, (long long)j + 1, frame_col_name(f0, j, name, sizeof name),
                               frame_col_type_name(&f0->col[j]), frame_col_type_name(&f->col[j]), k + 1);
            }
        if (*R > INT64_MAX - f->rows)
            return err_set(I, "%s(): the result has too many rows", fname);
        *R += f->rows;
    }
    return ST_OK;
}

Status frame_bind(Interp *I, const char *fname, const Value *v, int n, bool by_cols, Value *out)
{
    int64_t R, C;
    TRY(bind_check(I, fname, v, n, by_cols, &R, &C));
    FrameType *types = calloc((size_t)C + 1, sizeof *types);
    if (!types)
        return err_set(I, "%s(): out of memory", fname);
    int64_t off = 0;
    for (int k = 0; k < n && by_cols; k++)
        for (int64_t j = 0; j < v[k].f->cols; j++)
            types[off++] = v[k].f->col[j].type;
    for (int64_t j = 0; j < C && !by_cols; j++)
        types[j] = v[0].f->col[j].type;
    FrameBlock *r = frame_alloc(I, R, C, types);
    free(types);
    if (!r)
        return ST_ERR;
    off = 0;
    for (int k = 0; k < n && by_cols; k++)
        for (int64_t j = 0; j < v[k].f->cols; j++)
            r->col[off++].narrow = v[k].f->col[j].narrow;
    for (int64_t j = 0; j < C && !by_cols; j++)
        r->col[j].narrow = v[0].f->col[j].narrow;
    off = 0;
    for (int k = 0; k < n; k++) {
        const FrameBlock *f = v[k].f;
        for (int64_t j = 0; j < f->cols; j++)
            for (int64_t i = 0; i < f->rows; i++)
                frame_copy_cell(r, by_cols ? i : off + i, by_cols ? off + j : j, f, i, j);
        /* Names and imputed values: cbind concatenates them, rbind keeps
         * the first frame's. */
        if (by_cols || k == 0)
            for (int64_t j = 0; j < f->cols; j++)
                if ((f->names && !frame_set_name(r, by_cols ? off + j : j, f->names[j])) ||
                    (f->mv && !frame_set_mv(r, by_cols ? off + j : j, f->mv[j]))) {
                    frame_release(r);
                    return err_set(I, "%s(): out of memory", fname);
                }
        off += by_cols ? f->cols : f->rows;
    }
    *out = val_frame_take(r);
    return ST_OK;
}
