/* SPDX-License-Identifier: Apache-2.0
 * Reorganisation builtins: t (transpose, via mat_transpose), rev (reverse
 * the row order), unique (distinct values), cbind/rbind/append (also the
 * list-append forms), removeEmpty and order. Results are fresh matrices.
 * Thread-safe. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/frame.h"
#include "../runtime/matrix.h"
#include "../runtime/ops.h"
#include "../runtime/sparse_ops.h"

#define LL(x) ((long long)(x))

/* t(X) */
static Status bi_t(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->sp) {
        Matrix *m = mat_from_sp_take(I, sp_transpose(I, x->sp), "t");
        if (!m)
            return ST_ERR;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (x->rows == 1 || x->cols == 1) {
        /* a vector's transpose has the same cell order */
        Matrix *m = mat_alloc(I, x->cols, x->rows);
        if (!m)
            return ST_ERR;
        if (mat_len(x))
            memcpy(m->data, x->data, (size_t)mat_len(x) * sizeof(double));
        *out = val_matrix_take(m);
        return ST_OK;
    }
    Matrix *m = mat_alloc(I, x->cols, x->rows);
    if (!m)
        return ST_ERR;
    if (mat_len(x))
        mat_transpose(x, m);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* rev(X): rows in reverse order */
static Status bi_rev(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return ST_ERR;
    if (C)
        for (int64_t i = 0; i < R; i++)
            memcpy(m->data + i * C, x->data + (R - 1 - i) * C, (size_t)C * sizeof(double));
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ---- unique ----
 * Upstream collects the distinct values in a java.util.HashSet<Double> and
 * emits them in its iteration order, which is deterministic: buckets in
 * index order, insertion order inside a bucket. We reproduce that order so
 * results match upstream cell for cell. */

typedef struct UVal { uint64_t bits; int64_t first; uint32_t bucket; } UVal;

static uint64_t java_bits(double d)
{
    if (d != d)
        return 0x7ff8000000000000ULL;   /* Double.doubleToLongBits: one NaN */
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static int by_bits(const void *x, const void *y)
{
    const UVal *a = x, *b = y;
    if (a->bits != b->bits)
        return a->bits < b->bits ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

static int by_bucket(const void *x, const void *y)
{
    const UVal *a = x, *b = y;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Distinct values of the n cells v[0], v[step], ... in HashSet order, into
 * out[0..); returns their count. 'u' is scratch for n entries. */
static int64_t distinct_java(const double *v, int64_t n, int64_t step, UVal *u, double *out)
{
    for (int64_t i = 0; i < n; i++)
        u[i] = (UVal){.bits = java_bits(v[i * step]), .first = i};
    qsort(u, (size_t)n, sizeof *u, by_bits);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (k == 0 || u[k - 1].bits != u[i].bits)
            u[k++] = u[i];
    /* HashMap: 16 buckets, doubled whenever size exceeds 3/4 of them. */
    uint64_t cap = 16;
    while ((uint64_t)k > cap / 4 * 3)
        cap *= 2;
    for (int64_t i = 0; i < k; i++) {
        uint32_t h = (uint32_t)(u[i].bits ^ (u[i].bits >> 32));
        u[i].bucket = (h ^ (h >> 16)) & (uint32_t)(cap - 1);
    }
    qsort(u, (size_t)k, sizeof *u, by_bucket);
    for (int64_t i = 0; i < k; i++)
        memcpy(&out[i], &u[i].bits, sizeof out[i]);
    return k;
}

/* unique(data, dir="RC"): the distinct values of the whole matrix (k x 1),
 * of each row (nrow x max count, zero-padded) or of each column. */
static Status bi_unique(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    const char *dir;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_string(I, a, 1, "RC", &dir));
    int d = strcasecmp(dir, "RC") == 0 ? 0 : strcasecmp(dir, "R") == 0 ? 1 : strcasecmp(dir, "C") == 0 ? 2 : -1;
    if (d < 0) {
        char up[64];
        size_t k = 0;
        for (; dir[k] && k + 1 < sizeof up; k++)
            up[k] = (char)(dir[k] >= 'a' && dir[k] <= 'z' ? dir[k] - 32 : dir[k]);
        up[k] = '\0';
        return err_set(I, "Invalid argument: %s is not recognized (unique(): dir must be \"R\", \"C\" or \"RC\")", up);
    }
    int64_t R = x->rows, C = x->cols, n = d == 0 ? R * C : d == 1 ? C : R;
    int64_t groups = d == 0 ? 1 : d == 1 ? R : C;
    UVal *u = malloc(sizeof *u * (size_t)(n > 0 ? n : 1));
    double *vals = malloc(sizeof *vals * (size_t)(n > 0 ? n : 1) * (size_t)(groups > 0 ? groups : 1));
    int64_t *cnt = malloc(sizeof *cnt * (size_t)(groups > 0 ? groups : 1));
    if (!u || !vals || !cnt) {
        free(u);
        free(vals);
        free(cnt);
        return err_oom(I, n, groups);
    }
    int64_t width = 0;
    for (int64_t g = 0; g < groups; g++) {
        const double *base = d == 0 ? x->data : d == 1 ? x->data + g * C : x->data + g;
        cnt[g] = distinct_java(base, n, d == 2 ? C : 1, u, vals + g * n);
        if (cnt[g] > width)
            width = cnt[g];
    }
    Matrix *m = d == 0 ? mat_alloc_zero(I, width, 1) : d == 1 ? mat_alloc_zero(I, R, width)
                                                              : mat_alloc_zero(I, width, C);
    if (m) {
        for (int64_t g = 0; g < groups; g++)
            for (int64_t i = 0; i < cnt[g]; i++) {
                double v = vals[g * n + i];
                if (d == 2)
                    m->data[i * C + g] = v;
                else
                    m->data[g * width + i] = v;
            }
    }
    free(u);
    free(vals);
    free(cnt);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ============================= cbind / rbind ============================= */

/* Copy of L with x appended (the list forms of append/cbind). Consumes *l. */
static Status list_append_one_take(Interp *I, List **lp, Value x)
{
    List *l = *lp;
    Value e = x;
    const char *name = NULL;
    if (x.kind == VAL_LIST && x.l->n == 1) {
        e = x.l->items[0];
        name = x.l->names && x.l->names[0] ? x.l->names[0]->s : NULL;
    }
    if (l->names && !name)
        return err_set(I, "Cannot add to a named list");
    if (!l->names && name && l->n == 0) {
        /* an empty list becomes named by its first named element */
        List *nl = list_new(4, true);
        if (!nl)
            return err_set(I, "out of memory");
        list_release(l);
        *lp = l = nl;
    }
    if (!list_push(l, e, l->names ? name : NULL))
        return err_set(I, "out of memory");
    return ST_OK;
}

static Status list_append_args(Interp *I, const BArgs *a, Value *out)
{
    List *l = list_clone(a->v[0].l);
    if (!l)
        return err_set(I, "out of memory");
    for (int i = 1; i < a->n; i++) {
        if (list_append_one_take(I, &l, a->v[i]) != ST_OK) {
            list_release(l);
            return ST_ERR;
        }
    }
    *out = val_list_take(l);
    return ST_OK;
}

/* Bind the matrices in v[0..n) (numbers count as 1x1) by columns or rows. */
/* cbind/rbind of ms[0..k) (shapes checked) into a sparse R x C result:
 * the dense inputs in CSR, then bound pairwise. */
static Status bind_sparse(Interp *I, const char *fname, Matrix **ms, int k, int64_t R, int64_t C, bool by_cols,
                          Value *out)
{
    SpMat *acc = NULL;
    for (int i = 0; i < k; i++) {
        const Matrix *x = ms[i];
        if (by_cols ? (x->cols == 0 || x->rows != R) : (x->rows == 0 || x->cols != C))
            continue;
        SpMat *own = x->sp ? NULL : sp_from_dense(x->data, x->rows, x->cols, -1);
        const SpMat *xs = x->sp ? x->sp : own;
        SpMat *next = !xs ? NULL : !acc ? sp_clone(xs) : by_cols ? sp_cbind(acc, xs) : sp_rbind(acc, xs);
        sp_free(own);
        sp_free(acc);
        if (!next)
            return err_set(I, "%s(): out of memory", fname);
        acc = next;
    }
    if (!acc)
        acc = sp_new(R, C, 0);
    Matrix *m = mat_from_sp_take(I, acc, fname);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

static Status bind_values(Interp *I, const char *fname, const Value *v, int n, bool by_cols, Value *out)
{
    Matrix **ms = malloc((size_t)(n ? n : 1) * sizeof *ms);
    Value *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    Status st = ST_OK;
    Matrix *m = NULL;
    if (!ms || !tmp) {
        st = err_set(I, "%s(): out of memory", fname);
        goto done;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (v[i].kind == VAL_MATRIX) {
            ms[k] = v[i].m;
        } else if (val_is_number(v[i]) || v[i].kind == VAL_BOOL) {
            Matrix *s = mat_alloc(I, 1, 1);
            if (!s) { st = ST_ERR; goto done; }
            s->data[0] = val_num(v[i]);
            tmp[i] = val_matrix_take(s);
            ms[k] = s;
        } else {
            st = err_set(I, "%s(): argument %d must be a matrix, got %s", fname, i + 1, val_kind_name(v[i].kind));
            goto done;
        }
        k++;
    }
    /* R-like leniency: a 0x0 matrix binds with anything (rbind(NULL, x)). */
    int first = -1;
    int64_t R = 0, C = 0;
    for (int i = 0; i < k; i++) {
        Matrix *x = ms[i];
        if (x->rows == 0 && x->cols == 0 && k > 1)
            continue;
        if (first < 0) {
            first = i;
            R = by_cols ? x->rows : 0;
            C = by_cols ? 0 : x->cols;
        }
        if (by_cols) {
            if (x->rows != R) {
                st = err_set(I, "inputs to %s must have same number of rows: input %d (%lldx%lld) vs input %d "
                             "(%lldx%lld)", fname, first + 1, LL(ms[first]->rows), LL(ms[first]->cols), i + 1,
                             LL(x->rows), LL(x->cols));
                goto done;
            }
            if (C > INT64_MAX - x->cols) { st = err_oom(I, R, C); goto done; }
            C += x->cols;
        } else {
            if (x->cols != C) {
                st = err_set(I, "inputs to %s must have same number of columns: input %d (%lldx%lld) vs input %d "
                             "(%lldx%lld)", fname, first + 1, LL(ms[first]->rows), LL(ms[first]->cols), i + 1,
                             LL(x->rows), LL(x->cols));
                goto done;
            }
            if (R > INT64_MAX - x->rows) { st = err_oom(I, R, C); goto done; }
            R += x->rows;
        }
    }
    if (k == 1 && tmp[0].kind == VAL_NONE) {
        *out = val_ref(v[0]);
        goto done;
    }
    bool any_sparse = false;
    int64_t nnz = 0;
    for (int i = 0; i < k; i++)
        any_sparse |= ms[i]->sp != NULL;
    for (int i = 0; any_sparse && i < k; i++)
        nnz += mat_nnz(ms[i]);
    if (any_sparse && sp_prefer_sparse(R, C, nnz)) {
        st = bind_sparse(I, fname, ms, k, R, C, by_cols, out);
        goto done;
    }
    for (int i = 0; any_sparse && i < k; i++)
        if (ms[i]->sp && !(ms[i] = mat_dense_m(I, ms[i], fname))) {
            st = ST_ERR;
            goto done;
        }
    if (!(m = mat_alloc(I, R, C))) {
        st = ST_ERR;
        goto done;
    }
    if (by_cols) {
        int64_t off = 0;
        for (int i = 0; i < k; i++) {
            Matrix *x = ms[i];
            if (x->cols == 0 || x->rows != R)
                continue;
            for (int64_t r = 0; r < R; r++)
                memcpy(m->data + r * C + off, x->data + r * x->cols, (size_t)x->cols * sizeof(double));
            off += x->cols;
        }
    } else {
        int64_t off = 0;
        for (int i = 0; i < k; i++) {
            Matrix *x = ms[i];
            if (x->rows == 0 || x->cols != C)
                continue;
            if (C)
                memcpy(m->data + off * C, x->data, (size_t)(x->rows * C) * sizeof(double));
            off += x->rows;
        }
    }
    *out = val_matrix_take(m);
done:
    if (tmp)
        for (int i = 0; i < n; i++)
            val_release(tmp[i]);
    free(tmp);
    free(ms);
    return st;
}

static Status bind_common(Interp *I, const BArgs *a, Value *out, bool by_cols)
{
    const char *fname = a->def->name;
    if (a->n == 0)
        return err_set(I, "%s(): expects at least one argument", fname);
    if (a->v[0].kind == VAL_LIST) {
        if (a->n == 1) {
            List *l = a->v[0].l;
            if (l->n == 0)
                return err_set(I, "%s(): cannot bind the elements of an empty list", fname);
            return bind_values(I, fname, l->items, (int)l->n, by_cols, out);
        }
        return list_append_args(I, a, out);
    }
    if (a->v[0].kind == VAL_FRAME) {
        BArgs d;
        TRY(bargs_densify(I, a, &d));
        Status st = frame_bind(I, fname, d.v, d.n, by_cols, out);
        bargs_dense_free(&d);
        return st;
    }
    if (a->n == 2 && a->v[0].kind == VAL_STRING && a->v[1].kind == VAL_STRING) {
        Str *s = str_printf("%s\n%s", a->v[0].s->s, a->v[1].s->s);
        if (!s)
            return err_set(I, "%s(): out of memory", fname);
        *out = val_str_take(s);
        return ST_OK;
    }
    return bind_values(I, fname, a->v, a->n, by_cols, out);
}

/* cbind(X1, X2, ...) / append(X1, X2, ...) / append(L, x) / append(s1, s2) */
static Status bi_cbind(Interp *I, const BArgs *a, Value *out) { return bind_common(I, a, out, true); }
/* rbind(X1, X2, ...) */
static Status bi_rbind(Interp *I, const BArgs *a, Value *out) { return bind_common(I, a, out, false); }

/* ============================== removeEmpty ============================= */

/* removeEmpty of a sparse x: the kept rows gathered (sp_gather_rows), or
 * the kept columns renumbered; the result by the format rule. */
static Status remove_empty_sparse(Interp *I, const BArgs *a, const Matrix *x, const Matrix *sel, bool rows,
                                  bool empty_ret, Value *out)
{
    const SpMat *S = x->sp;
    int64_t R = x->rows, C = x->cols, n = rows ? R : C;
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!keep)
        return err_set(I, "removeEmpty(): out of memory");
    int64_t cnt = 0;
    if (sel) {
        for (int64_t i = 0; i < n; i++)
            keep[i] = sel->data[i] != 0;
    } else if (rows) {
        for (int64_t i = 0; i < R; i++)
            keep[i] = S->rowptr[i + 1] > S->rowptr[i];
    } else {
        memset(keep, 0, sizeof(int64_t) * (size_t)n);
        for (int64_t p = 0; p < S->nnz; p++)
            keep[S->colidx[p]] = 1;
    }
    for (int64_t i = 0; i < n; i++)
        cnt += keep[i] != 0;
    Matrix *m = NULL;
    if (cnt == 0) {
        free(keep);
        m = rows ? mat_alloc_zero(I, empty_ret ? 1 : 0, C) : mat_alloc_zero(I, R, empty_ret ? 1 : 0);
        if (!m)
            return ST_ERR;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (cnt == n && !sel) {
        free(keep);
        *out = val_ref(a->v[0]);
        return ST_OK;
    }
    SpMat *r;
    if (rows) {
        int64_t k = 0;
        for (int64_t i = 0; i < R; i++)
            if (keep[i])
                keep[k++] = i;
        r = sp_gather_rows(S, keep, cnt);
    } else {
        /* keep[j] becomes column j's new index, or -1 */
        for (int64_t j = 0, k = 0; j < C; j++)
            keep[j] = keep[j] ? k++ : -1;
        int64_t nz = 0;
        for (int64_t p = 0; p < S->nnz; p++)
            nz += keep[S->colidx[p]] >= 0;
        r = sp_new(R, cnt, nz);
        if (r) {
            int64_t o = 0;
            for (int64_t i = 0; i < R; i++) {
                for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
                    if (keep[S->colidx[p]] >= 0) {
                        r->colidx[o] = (int32_t)keep[S->colidx[p]];
                        r->vals[o++] = S->vals[p];
                    }
                r->rowptr[i + 1] = o;
            }
            r->nnz = o;
        }
    }
    free(keep);
    m = mat_from_sp_take(I, r, "removeEmpty");
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

/* removeEmpty(target=M, margin="rows"|"cols", select=F, empty.return=TRUE) */
static Status bi_removeEmpty(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *sel = NULL;
    const char *margin;
    bool empty_ret;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (!arg_given(a, 1))
        return err_set(I, "Named parameter 'margin' missing. Please specify 'rows' or 'cols'.");
    TRY(arg_string(I, a, 1, NULL, &margin));
    bool rows = !strcmp(margin, "rows");
    if (!rows && strcmp(margin, "cols"))
        return err_set(I, "Named parameter 'margin' has an invalid value '%s'. Please specify 'rows' or 'cols'.",
                       margin);
    if (arg_given(a, 2))
        TRY(arg_matrix(I, a, 2, &sel));
    TRY(arg_bool(I, a, 3, true, &empty_ret));
    int64_t R = x->rows, C = x->cols, n = rows ? R : C;
    if (sel && mat_len(sel) != n)
        return err_set(I, "removeEmpty(): select must have %lld entries (one per %s), got %lldx%lld", LL(n),
                       rows ? "row" : "column", LL(sel->rows), LL(sel->cols));
    if (x->sp)
        return remove_empty_sparse(I, a, x, sel, rows, empty_ret, out);
    unsigned char *keep = malloc((size_t)(n ? n : 1));
    if (!keep)
        return err_set(I, "removeEmpty(): out of memory");
    int64_t cnt = 0;
    if (sel) {
        for (int64_t i = 0; i < n; i++)
            cnt += keep[i] = sel->data[i] != 0;
    } else if (rows) {
        for (int64_t i = 0; i < R; i++) {
            const double *r = x->data + i * C;
            int64_t j = 0;
            while (j < C && r[j] == 0) j++;
            cnt += keep[i] = j < C;
        }
    } else {
        memset(keep, 0, (size_t)(n ? n : 1));
        for (int64_t i = 0; i < R; i++) {
            const double *r = x->data + i * C;
            for (int64_t j = 0; j < C; j++)
                if (r[j] != 0) keep[j] = 1;
        }
        for (int64_t j = 0; j < C; j++) cnt += keep[j];
    }
    Matrix *m;
    if (cnt == 0) {
        m = rows ? mat_alloc_zero(I, empty_ret ? 1 : 0, C) : mat_alloc_zero(I, R, empty_ret ? 1 : 0);
    } else if (cnt == n && !sel) {
        free(keep);
        *out = val_ref(a->v[0]);
        return ST_OK;
    } else if (rows) {
        m = mat_alloc(I, cnt, C);
        if (m) {
            int64_t k = 0;
            for (int64_t i = 0; i < R; i++)
                if (keep[i]) {
                    if (C) memcpy(m->data + k * C, x->data + i * C, (size_t)C * sizeof(double));
                    k++;
                }
        }
    } else {
        m = mat_alloc(I, R, cnt);
        if (m)
            for (int64_t i = 0; i < R; i++) {
                const double *r = x->data + i * C;
                double *o = m->data + i * cnt;
                for (int64_t j = 0, k = 0; j < C; j++)
                    if (keep[j]) o[k++] = r[j];
            }
    }
    free(keep);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================= order ================================ */

typedef struct SortKey { double k; int64_t i; } SortKey;

/* NaN sorts last (as Double.compare); ties keep the original order. */
static int cmp_asc(const void *pa, const void *pb)
{
    const SortKey *x = pa, *y = pb;
    bool nx = isnan(x->k), ny = isnan(y->k);
    if (nx != ny) return nx ? 1 : -1;
    if (!nx && x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}
static int cmp_desc(const void *pa, const void *pb)
{
    const SortKey *x = pa, *y = pb;
    bool nx = isnan(x->k), ny = isnan(y->k);
    if (nx != ny) return nx ? -1 : 1;
    if (!nx && x->k != y->k) return x->k > y->k ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* order(target=M, by=1, decreasing=FALSE, index.return=FALSE) */
static Status bi_order(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    int64_t by;
    bool dec, idx;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_int(I, a, 1, 1, &by));
    TRY(arg_bool(I, a, 2, false, &dec));
    TRY(arg_bool(I, a, 3, false, &idx));
    int64_t R = x->rows, C = x->cols;
    if (by < 1 || by > C)
        return err_set(I, "order(): 'by' must be a column index between 1 and %lld, got %lld", LL(C), LL(by));
    SortKey *k = malloc((size_t)(R ? R : 1) * sizeof *k);
    if (!k)
        return err_set(I, "order(): out of memory");
    for (int64_t i = 0; i < R; i++) {
        k[i].k = x->data[i * C + by - 1];
        k[i].i = i;
    }
    qsort(k, (size_t)R, sizeof *k, dec ? cmp_desc : cmp_asc);
    Matrix *m = mat_alloc(I, R, idx ? 1 : C);
    if (m) {
        if (idx)
            for (int64_t i = 0; i < R; i++) m->data[i] = (double)(k[i].i + 1);
        else
            for (int64_t i = 0; i < R; i++)
                memcpy(m->data + i * C, x->data + k[i].i * C, (size_t)C * sizeof(double));
    }
    free(k);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

const BuiltinDef bi_reorg_table[] = {
    {"t", bi_t, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_FUSE_T | BF_PURE | BF_SPARSE},
    {"rev", bi_rev, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"unique", bi_unique, "data,dir", 1, BIND_NAMED, 1, 0},
    {"cbind", bi_cbind, "", 0, BIND_VARIADIC, 1, BF_RT(RT_BIND) | BF_PURE | BF_SPARSE},
    {"append", bi_cbind, "", 0, BIND_VARIADIC, 1, BF_SPARSE},
    {"rbind", bi_rbind, "", 0, BIND_VARIADIC, 1, BF_RT(RT_BIND) | BF_PURE | BF_SPARSE},
    {"removeEmpty", bi_removeEmpty, "target,margin,select,empty.return", 1, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX) | BF_SPARSE},
    {"order", bi_order, "target,by,decreasing,index.return", 1, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX)},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
