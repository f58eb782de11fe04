/* SPDX-License-Identifier: Apache-2.0
 * Matrices in the runtime: allocation that reports failure as a DML error,
 * then the dense kernels (products and transposition), for which callers
 * have checked shapes and allocated outputs, so that nothing there fails or
 * allocates. Safe from any thread (BLAS threads are set by the caller). */
#include "matrix.h"

#include <stdio.h>
#include <string.h>

#include "../base/sparse.h"
#include "blas.h"
#include "builtin_api.h"
#include "interp.h"

/* ---- allocation ---- */

Matrix *mat_alloc(Interp *I, int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0) {
        err_set(I, "invalid matrix dimensions %lldx%lld", (long long)rows, (long long)cols);
        return NULL;
    }
    Matrix *m = mat_new_raw(rows, cols);
    if (!m)
        err_oom(I, rows, cols);
    return m;
}

Matrix *mat_alloc_zero(Interp *I, int64_t rows, int64_t cols)
{
    Matrix *m = mat_alloc(I, rows, cols);
    if (m && m->data)
        memset(m->data, 0, sizeof(double) * (size_t)mat_len(m));
    return m;
}

Matrix *mat_clone(Interp *I, const Matrix *m)
{
    Matrix *c = mat_clone_raw(m);
    if (!c)
        err_oom(I, m->rows, m->cols);
    return c;
}

Matrix *mat_make_unique_take(Interp *I, Matrix *m)
{
    if (m->sp) {
        const double *d = mat_dense(I, m, "left indexing");
        Matrix *c = d ? mat_alloc(I, m->rows, m->cols) : NULL;
        if (c)
            memcpy(c->data, d, sizeof(double) * (size_t)mat_len(m));
        mat_release(m);
        return c;
    }
    if (obj_unique(&m->h))
        return m;
    Matrix *c = mat_clone(I, m);
    mat_release(m);
    return c;
}

/* ---- the sparse form ---- */

/* "1,234,567" into buf. */
static const char *group3(int64_t v, char *buf, size_t cap)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && tmp[i - 1] != '-' && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

/* "800.0 GB", "12.3 MB", "512 bytes" into buf. */
static const char *human_bytes(uint64_t b, char *buf, size_t cap)
{
    static const char *unit[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    if (b < 1000) {
        snprintf(buf, cap, "%llu bytes", (unsigned long long)b);
        return buf;
    }
    double x = (double)b / 1000;
    int u = 0;
    while (x >= 1000 && u < 5) {
        x /= 1000;
        u++;
    }
    snprintf(buf, cap, "%.1f %s", x, unit[u]);
    return buf;
}

Matrix *mat_dense_m(Interp *I, const Matrix *m, const char *op)
{
    if (!m->sp)
        return (Matrix *)m;
    Matrix *v = atomic_load_explicit(&((Matrix *)m)->dense_view, memory_order_acquire);
    if (v)
        return v;
    uint64_t need = sp_dense_bytes(m->rows, m->cols), live, peak;
    mat_mem_stats(&live, &peak);
    uint64_t cap = mat_cap_bytes();
    if (need == UINT64_MAX || need > cap || live > cap - need) {
        char nz[40], nb[40], cb[40];
        err_set(I, "%s: the sparse %lldx%lld matrix (%s non-zeros) needs %s as a dense matrix, over the %s "
                "allowed for matrices (physical memory, or DML_MAX_MATRIX_BYTES)", op ? op : "operation",
                (long long)m->rows, (long long)m->cols, group3(m->sp->nnz, nz, sizeof nz),
                need == UINT64_MAX ? "more than 16 EB" : human_bytes(need, nb, sizeof nb),
                human_bytes(cap, cb, sizeof cb));
        return NULL;
    }
    Matrix *d = mat_alloc(I, m->rows, m->cols);
    if (!d)
        return NULL;
    sp_to_dense(m->sp, d->data);
    Matrix *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&((Matrix *)m)->dense_view, &expected, d, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        mat_release(d);
        return expected;
    }
    return d;
}

const double *mat_dense(Interp *I, const Matrix *m, const char *op)
{
    if (!m->sp)
        return m->data;
    Matrix *d = mat_dense_m(I, m, op);
    return d ? d->data : NULL;
}

Matrix *mat_to_dense_take(Interp *I, Matrix *m, const char *op)
{
    if (!m->sp)
        return m;
    Matrix *d = mat_dense_m(I, m, op);
    if (d)
        obj_retain(&d->h);
    mat_release(m);
    return d;
}

/* Nesting bound of the list walks below (a list nested deeper than this
 * is refused rather than walked on the C stack). */
enum { DENSIFY_MAX_DEPTH = 1000 };

static bool has_sparse(Value v, int depth)
{
    if (v.kind == VAL_MATRIX)
        return v.m->sp != NULL;
    if (v.kind != VAL_LIST)
        return false;
    if (depth > DENSIFY_MAX_DEPTH)
        return true;    /* too deep to look: densify() refuses it */
    for (int64_t i = 0; i < v.l->n; i++)
        if (has_sparse(v.l->items[i], depth + 1))
            return true;
    return false;
}

bool val_has_sparse(Value v)
{
    return mat_sparse_live() > 0 && has_sparse(v, 0);
}

static Status densify(Interp *I, Value *v, const char *op, int depth)
{
    if (v->kind == VAL_MATRIX) {
        if (!v->m->sp)
            return ST_OK;
        Matrix *d = mat_to_dense_take(I, v->m, op);
        *v = d ? val_matrix_take(d) : val_none();
        return d ? ST_OK : ST_ERR;
    }
    if (v->kind != VAL_LIST || !has_sparse(*v, depth))
        return ST_OK;
    if (depth >= DENSIFY_MAX_DEPTH)
        return err_set(I, "%s: list nested more than %d deep", op ? op : "operation", DENSIFY_MAX_DEPTH);
    List *c = list_clone(v->l);
    if (!c)
        return err_set(I, "out of memory");
    for (int64_t i = 0; i < c->n; i++)
        if (densify(I, &c->items[i], op, depth + 1) != ST_OK) {
            list_release(c);
            return ST_ERR;
        }
    val_release(*v);
    *v = val_list_take(c);
    return ST_OK;
}

Status val_densify(Interp *I, Value *v, const char *op)
{
    if (mat_sparse_live() == 0)
        return ST_OK;
    return densify(I, v, op, 0);
}

Matrix *mat_from_sp_take(Interp *I, SpMat *s, const char *op)
{
    if (!s) {
        err_set(I, "%s: out of memory", op ? op : "operation");
        return NULL;
    }
    int64_t r = s->rows, c = s->cols;
    if (sp_prefer_sparse(r, c, s->nnz)) {
        sp_shrink(s);
        Matrix *m = mat_new_sparse_take(s);
        if (!m)
            err_oom(I, r, c);
        return m;
    }
    Matrix *m = mat_alloc(I, r, c);
    if (m && m->data)
        sp_to_dense(s, m->data);
    sp_free(s);
    return m;
}

Matrix *mat_maybe_sparse_take(Matrix *m, int64_t nnz)
{
    if (m->sp || mat_len(m) == 0)
        return m;
    if (nnz < 0)
        nnz = sp_count_nnz(m->data, mat_len(m));
    if (!sp_prefer_sparse(m->rows, m->cols, nnz))
        return m;
    Matrix *s = mat_new_sparse_take(sp_from_dense(m->data, m->rows, m->cols, nnz));
    if (!s)
        return m;
    mat_release(m);
    return s;
}

int64_t mat_nnz(const Matrix *m)
{
    if (m->sp)
        return m->sp->nnz;
    return mat_len(m) ? sp_count_nnz(m->data, mat_len(m)) : 0;
}

void mat_row_get(const Matrix *m, int64_t i, double *out)
{
    if (!m->sp) {
        memcpy(out, m->data + i * m->cols, sizeof(double) * (size_t)m->cols);
        return;
    }
    const SpMat *s = m->sp;
    memset(out, 0, sizeof(double) * (size_t)m->cols);
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++)
        out[s->colidx[k]] = s->vals[k];
}

/* ---- dense kernels ---- */

/* No plain-loop path for small products: OpenBLAS 0.3.21's small-matrix
 * kernels beat a straightforward i-p-j loop 6-10x even at 8x8x8 (50 ns vs
 * 320 ns, measured on the 2-core dev VM). Vector shapes go to dgemv, which
 * streams the matrix once instead of packing it: 3-6x faster than dgemm at
 * 4000x4000 times a vector, never slower single-threaded. */

/* Contract in matrix.h. */
void mat_matmul_t(const Matrix *A, bool tA, const Matrix *B, bool tB, Matrix *C)
{
    (void)mat_matmul_stop(A, tA, B, tB, C, NULL, 0);
}

/* A product of this many flops or more runs in row panels, with a look at
 * the stop flag between them: one dgemm cannot be interrupted, and a
 * 4000^3 one takes seconds. A panel aims at 2^33 flops (0.1-0.3 s on the
 * 2-core dev VM) but keeps 512 rows (256 for the largest products, whose
 * 512 rows would take over a second): each dgemm packs all of B again,
 * which a 64-row panel pays for with twice the time of the whole product
 * (3000^3, measured: 8.9 s against 4.4 s; 512 rows 4.6 s). Multithreaded
 * OpenBLAS rounds a panel's cells a little differently than the same cells
 * of one whole product, so the split depends on the shape alone, never on
 * whether a flag is given: every caller gets the same bits. */
#define MATMUL_SPLIT_FLOPS 2e9
#define MATMUL_PANEL_FLOPS 8589934592.0         /* 2^33 */
#define MATMUL_PANEL_MAX_FLOPS 34359738368.0    /* 2^35 */

/* Contract in matrix.h. */
bool mat_matmul_stop(const Matrix *A, bool tA, const Matrix *B, bool tB, Matrix *C, const atomic_int *stop,
                     int64_t panel_rows)
{
    int64_t m = tA ? A->cols : A->rows;
    int64_t k = tA ? A->rows : A->cols;
    int64_t n = tB ? B->rows : B->cols;
    if (m == 0 || n == 0)
        return true;
    if (k == 0) {
        memset(C->data, 0, (size_t)(m * n) * sizeof(double));
        return true;
    }
    if (n == 1) {
        /* op(B) is k x 1, and B (k x 1 or 1 x k) is that vector in memory. */
        blas_dgemv(tA, A->rows, A->cols, 1.0, A->data, A->cols, B->data, 0.0, C->data);
        return true;
    }
    if (m == 1) {
        /* op(A) is 1 x k, contiguous as above; c (1 x n) = op(B)' a. */
        blas_dgemv(!tB, B->rows, B->cols, 1.0, B->data, B->cols, A->data, 0.0, C->data);
        return true;
    }
    double flops = 2.0 * (double)m * (double)n * (double)k;
    if (panel_rows <= 0) {
        if (flops < MATMUL_SPLIT_FLOPS) {
            blas_dgemm(tA, tB, m, n, k, 1.0, A->data, A->cols, B->data, B->cols, 0.0, C->data, n);
            return true;
        }
        double row_flops = 2.0 * (double)n * (double)k;
        panel_rows = (int64_t)(MATMUL_PANEL_FLOPS / row_flops);
        if (panel_rows < 512) {
            int64_t most = (int64_t)(MATMUL_PANEL_MAX_FLOPS / row_flops);
            panel_rows = most < 256 ? 256 : most > 512 ? 512 : most;
        }
    }
    /* Rows i0.. of op(A): rows of A, or (transposed) its columns. */
    for (int64_t i0 = 0; i0 < m; i0 += panel_rows) {
        if (stop && atomic_load_explicit(stop, memory_order_relaxed))
            return false;
        int64_t rows = m - i0 < panel_rows ? m - i0 : panel_rows;
        const double *a = tA ? A->data + i0 : A->data + i0 * A->cols;
        blas_dgemm(tA, tB, rows, n, k, 1.0, a, A->cols, B->data, B->cols, 0.0, C->data + i0 * n, n);
    }
    return !(stop && atomic_load_explicit(stop, memory_order_relaxed));
}

void mat_matmul(const Matrix *A, const Matrix *B, Matrix *C)
{
    mat_matmul_t(A, false, B, false, C);
}

/* Tile edge for the transpose: two 32x32 tiles of doubles (16 KiB) sit in L1. */
enum { TR_TILE = 32 };

void mat_transpose(const Matrix *A, Matrix *T)
{
    int64_t r = A->rows, c = A->cols;
    if (r == 0 || c == 0)
        return;
    if (r == 1 || c == 1) {
        /* A vector's transpose has the same memory layout. */
        memcpy(T->data, A->data, (size_t)(r * c) * sizeof(double));
        return;
    }
    const double *a = A->data;
    double *t = T->data;
    for (int64_t i0 = 0; i0 < r; i0 += TR_TILE) {
        int64_t i1 = i0 + TR_TILE < r ? i0 + TR_TILE : r;
        for (int64_t j0 = 0; j0 < c; j0 += TR_TILE) {
            int64_t j1 = j0 + TR_TILE < c ? j0 + TR_TILE : c;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++)
                    t[j * r + i] = a[i * c + j];
        }
    }
}
