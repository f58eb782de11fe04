/* SPDX-License-Identifier: Apache-2.0
 * Building a CSR from (row, column, value) entries in any order, for the
 * readers of the coordinate formats (text/ijv, MatrixMarket): contract in
 * internal.h (IoCsr). Memory is proportional to the entries, never to
 * rows x cols (but for the row pointers). */
#include "internal.h"

#include "../../base/sparse.h"

bool io_csr_init(IoCsr *b, int64_t rows, int64_t cols, int64_t cap, const char *name, DiagErr *e)
{
    memset(b, 0, sizeof *b);
    b->rows = rows;
    b->cols = cols;
    b->last_i = b->last_j = -1;
    if (cols > INT32_MAX) {
        /* Only the dense form can hold it (CSR column indices are 32-bit);
         * no cells at all in practice, else the check below fails. */
        b->dense = io_matrix_zero(rows, cols, name, e);
        return b->dense != NULL;
    }
    if (cap < 0)
        cap = 0;
    if (!io_check_sparse(rows, cols, cap, name, e))
        return false;
    b->s = sp_new(rows, cols, cap);
    if (!b->s)
        return diag_fail(e, "%s: out of memory for a sparse %lld x %lld matrix", name, (long long)rows,
                         (long long)cols);
    return true;
}

void io_csr_free(IoCsr *b)
{
    sp_free(b->s);
    free(b->ti);
    free(b->tj);
    free(b->tv);
    if (b->dense)
        mat_release(b->dense);
    memset(b, 0, sizeof *b);
}

/* The entries appended so far become the first triples. */
static bool to_triples(IoCsr *b)
{
    SpMat *s = b->s;
    int64_t n = s->nnz, cap = s->cap > 16 ? s->cap : 16;
    b->ti = malloc((size_t)cap * sizeof *b->ti);
    if (!b->ti || !mat_cap_allows(8 * (uint64_t)cap))
        return false;
    /* Rows 0 .. last_i - 1 have their start recorded in rowptr; the rest
     * belong to row last_i. */
    int64_t r = 0;
    for (int64_t k = 0; k < n; k++) {
        while (r < b->last_i && s->rowptr[r + 1] <= k)
            r++;
        b->ti[k] = r;
    }
    if (cap > s->cap && !sp_reserve(s, cap))
        return false;
    b->tj = s->colidx;
    b->tv = s->vals;
    b->n = n;
    b->cap = s->cap;
    s->colidx = NULL;
    s->vals = NULL;
    s->cap = s->nnz = 0;
    b->triples = true;
    return true;
}

static bool grow_triples(IoCsr *b)
{
    int64_t cap = b->cap + b->cap / 2 + 16;
    if ((uint64_t)cap > SIZE_MAX / 16 || !mat_cap_allows(20 * (uint64_t)cap))
        return false;
    int64_t *ti = realloc(b->ti, (size_t)cap * sizeof *ti);
    if (!ti)
        return false;
    b->ti = ti;
    int32_t *tj = realloc(b->tj, (size_t)cap * sizeof *tj);
    if (!tj)
        return false;
    b->tj = tj;
    double *tv = realloc(b->tv, (size_t)cap * sizeof *tv);
    if (!tv)
        return false;
    b->tv = tv;
    b->cap = cap;
    return true;
}

bool io_csr_add(IoCsr *b, int64_t i, int64_t j, double v)
{
    if (b->dense) {
        b->dense->data[i * b->cols + j] = v;
        return true;
    }
    if (!b->triples) {
        if (i > b->last_i || (i == b->last_i && j > b->last_j)) {
            SpMat *s = b->s;
            for (int64_t r = b->last_i + 1; r <= i; r++)
                s->rowptr[r] = s->nnz;
            b->last_i = i;
            b->last_j = j;
            if (v == 0)
                return true;    /* an explicit zero, and nothing later can undo it in this mode */
            if (s->nnz == s->cap && !sp_reserve(s, s->cap + 1))
                return false;
            s->colidx[s->nnz] = (int32_t)j;
            s->vals[s->nnz++] = v;
            return true;
        }
        if (!to_triples(b))
            return false;
    }
    if (b->n == b->cap && !grow_triples(b))
        return false;
    b->ti[b->n] = i;
    b->tj[b->n] = (int32_t)j;
    b->tv[b->n++] = v;
    return true;
}

/* One entry of a row being sorted: its column, its place in the file (ties
 * keep file order, so the last of equal columns wins) and its value. */
typedef struct Ent {
    int64_t seq;
    double v;
    int32_t j;
} Ent;

static int ent_cmp(const void *a, const void *b)
{
    const Ent *x = a, *y = b;
    if (x->j != y->j)
        return x->j < y->j ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The triples into s: a counting sort by row (stable: file order inside a
 * row), then each row sorted by column where it is not already, the last of
 * equal positions kept and zeros dropped. */
static bool triples_to_csr(IoCsr *b)
{
    SpMat *s = b->s;
    int64_t n = b->n, rows = b->rows;
    int64_t *rp = s->rowptr;
    memset(rp, 0, ((size_t)rows + 1) * sizeof *rp);
    if (n && !sp_reserve(s, n))
        return false;
    for (int64_t k = 0; k < n; k++)
        rp[b->ti[k] + 1]++;
    for (int64_t r = 0; r < rows; r++)
        rp[r + 1] += rp[r];
    /* rp[r] is now row r's start; advance a copy while placing. */
    int64_t *pos = malloc(((size_t)rows + 1) * sizeof *pos);
    if (!pos)
        return false;
    memcpy(pos, rp, ((size_t)rows + 1) * sizeof *pos);
    for (int64_t k = 0; k < n; k++) {
        int64_t p = pos[b->ti[k]]++;
        s->colidx[p] = b->tj[k];
        s->vals[p] = b->tv[k];
    }
    free(pos);
    free(b->ti);
    free(b->tj);
    free(b->tv);
    b->ti = NULL;
    b->tj = NULL;
    b->tv = NULL;
    b->triples = false;
    Ent *scratch = NULL;
    int64_t scap = 0, w = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t a = rp[r], z = rp[r + 1];
        bool sorted = true;
        for (int64_t p = a + 1; p < z && sorted; p++)
            sorted = s->colidx[p] > s->colidx[p - 1];
        if (!sorted) {
            if (z - a > scap) {
                free(scratch);
                scap = z - a;
                scratch = malloc((size_t)scap * sizeof *scratch);
                if (!scratch)
                    return false;
            }
            for (int64_t p = a; p < z; p++)
                scratch[p - a] = (Ent){p, s->vals[p], s->colidx[p]};
            qsort(scratch, (size_t)(z - a), sizeof *scratch, ent_cmp);
            for (int64_t p = a; p < z; p++) {
                s->colidx[p] = scratch[p - a].j;
                s->vals[p] = scratch[p - a].v;
            }
        }
        rp[r] = w;
        for (int64_t p = a; p < z; p++) {
            if (p + 1 < z && s->colidx[p + 1] == s->colidx[p])
                continue;   /* a later entry of the file sets this cell */
            if (s->vals[p] == 0)
                continue;
            s->colidx[w] = s->colidx[p];
            s->vals[w++] = s->vals[p];
        }
    }
    free(scratch);
    rp[rows] = w;
    s->nnz = w;
    return true;
}

Matrix *io_csr_finish(IoCsr *b, const char *name, DiagErr *e)
{
    if (b->dense) {
        Matrix *m = b->dense;
        b->dense = NULL;
        io_csr_free(b);
        return m;
    }
    if (b->triples) {
        if (!triples_to_csr(b)) {
            diag_fail(e, "%s: out of memory sorting the entries of a %lld x %lld matrix", name, (long long)b->rows,
                      (long long)b->cols);
            io_csr_free(b);
            return NULL;
        }
    } else {
        SpMat *s = b->s;
        for (int64_t r = b->last_i + 1; r <= b->rows; r++)
            s->rowptr[r] = s->nnz;
    }
    SpMat *s = b->s;
    b->s = NULL;
    io_csr_free(b);
    sp_shrink(s);
    return io_matrix_from_csr(s, name, e);
}
