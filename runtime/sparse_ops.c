/* SPDX-License-Identifier: Apache-2.0
 * Kernels on CSR matrices (contract in sparse_ops.h). Thread-safe: no
 * shared state; the parts of one call write disjoint outputs. */
#include "sparse_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "pool.h"

/* Work (non-zeros plus rows) below which a kernel stays on one thread:
 * starting two threads costs ~20-40 us (pool.c), this much work ~100 us. */
enum { SP_PAR_MIN = 1 << 17, SP_MAX_PARTS = 64 };

/* Parts for 'work' units on I's threads: 1 when small, else a few per
 * thread so that a late helper does not hold up the call (pool.h). */
static int n_parts(const Interp *I, int64_t work)
{
    if (work < SP_PAR_MIN)
        return 1;
    int t = pool_threads(I);
    if (t <= 1)
        return 1;
    int p = 4 * t;
    return p > SP_MAX_PARTS ? SP_MAX_PARTS : p;
}

/* Parts for kernels split by output columns: one per thread, as every part
 * walks all the row pointers. */
static int n_col_parts(const Interp *I, int64_t work)
{
    return n_parts(I, work) == 1 ? 1 : pool_threads(I);
}

/* Row bounds b[0..parts] cutting X into parts of about equal rows + nnz. */
static void row_cuts(const SpMat *X, int parts, int64_t *b)
{
    int64_t R = X->rows, total = X->nnz + R;
    b[0] = 0;
    for (int k = 1; k < parts; k++) {
        int64_t want = total / parts * k, lo = b[k - 1], hi = R;
        while (lo < hi) {      /* first row i with rowptr[i] + i >= want */
            int64_t mid = lo + (hi - lo) / 2;
            if (X->rowptr[mid] + mid < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        b[k] = lo;
    }
    b[parts] = R;
}

/* Column bounds b[0..parts] cutting [0, n) evenly. */
static void col_cuts(int64_t n, int parts, int64_t *b)
{
    for (int k = 0; k <= parts; k++)
        b[k] = n / parts * k + (n % parts) * k / parts;
}

/* First entry of row i (entries [p0, p1)) whose column is >= c. */
static inline int64_t lower_col(const int32_t *ci, int64_t p0, int64_t p1, int64_t c)
{
    while (p0 < p1) {
        int64_t mid = p0 + (p1 - p0) / 2;
        if (ci[mid] < c)
            p0 = mid + 1;
        else
            p1 = mid;
    }
    return p0;
}

/* lower_col for a part's first entry in a row: the search starts where c
 * would fall if the row's columns were spread evenly over [0, ncols) (the
 * usual case: a step or two away) and gallops from there, so it costs
 * O(log distance) instead of a search over the whole row. */
static inline int64_t part_start(const int32_t *ci, int64_t p0, int64_t p1, int64_t c, int64_t ncols)
{
    if (p0 >= p1)
        return p0;
    int64_t g = p0 + (int64_t)((double)c / (double)ncols * (double)(p1 - p0));
    if (g >= p1)
        g = p1 - 1;
    int64_t lo, hi, step = 1;
    if (ci[g] < c) {            /* the answer is in (g, p1] */
        lo = g + 1;
        while (g + step < p1 && ci[g + step] < c) {
            lo = g + step + 1;
            step *= 2;
        }
        hi = g + step < p1 ? g + step : p1;
    } else {                    /* the answer is in [p0, g] */
        hi = g;
        while (g - step >= p0 && ci[g - step] >= c) {
            hi = g - step;
            step *= 2;
        }
        lo = g - step >= p0 ? g - step + 1 : p0;
    }
    return lower_col(ci, lo, hi, c);
}

/* Whether row i of X stores column c. */
static inline bool has_col(const SpMat *X, int64_t i, int64_t c)
{
    int64_t p = lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], c);
    return p < X->rowptr[i + 1] && X->colidx[p] == c;
}

bool sp_has_nonfinite(const SpMat *X)
{
    for (int64_t p = 0; p < X->nnz; p++)
        if (!isfinite(X->vals[p]))
            return true;
    return false;
}

/* ============================== products ============================== */

typedef struct MmCtx {
    const SpMat *X;
    const double *B;
    int64_t n;
    double *C;
    const int64_t *cut;
} MmCtx;

/* Rows [cut[part], cut[part+1]) of C = X %*% B. */
static void mm_sd_part(void *vctx, int part)
{
    const MmCtx *c = vctx;
    const SpMat *X = c->X;
    const int64_t *rp = X->rowptr;
    const int32_t *ci = X->colidx;
    const double *xv = X->vals, *B = c->B;
    int64_t n = c->n;
    for (int64_t i = c->cut[part]; i < c->cut[part + 1]; i++) {
        if (n == 1) {
            /* Four running sums, entry k of the row going to sum k % 4, then
             * (s0 + s1) + (s2 + s3): one chain of dependent additions would
             * bound the loop; the order is in sparse_ops.h. */
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            int64_t p = rp[i], end = rp[i + 1];
            for (; p + 4 <= end; p += 4) {
                s0 += xv[p] * B[ci[p]];
                s1 += xv[p + 1] * B[ci[p + 1]];
                s2 += xv[p + 2] * B[ci[p + 2]];
                s3 += xv[p + 3] * B[ci[p + 3]];
            }
            if (p < end)
                s0 += xv[p] * B[ci[p]];
            if (p + 1 < end)
                s1 += xv[p + 1] * B[ci[p + 1]];
            if (p + 2 < end)
                s2 += xv[p + 2] * B[ci[p + 2]];
            c->C[i] = (s0 + s1) + (s2 + s3);
            continue;
        }
        double *restrict out = c->C + i * n;
        for (int64_t k = 0; k < n; k++)
            out[k] = 0;
        for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
            double a = xv[p];
            const double *restrict b = B + ci[p] * n;
            for (int64_t k = 0; k < n; k++)
                out[k] += a * b[k];
        }
    }
}

void sp_mm_sd(const Interp *I, const SpMat *X, const double *B, int64_t n, double *C)
{
    int64_t R = X->rows, K = X->cols;
    if (R == 0 || n == 0)
        return;
    int parts = n_parts(I, (X->nnz + R) * n);
    int64_t cut[SP_MAX_PARTS + 1];
    row_cuts(X, parts, cut);
    MmCtx ctx = {.X = X, .B = B, .n = n, .C = C, .cut = cut};
    pool_run(I, mm_sd_part, &ctx, parts);
    /* 0 * Inf, as in the triple loop: C[i,k] is NaN where B[j,k] is not
     * finite and X[i,j] is an implicit zero. */
    for (int64_t j = 0; j < K; j++)
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(B[j * n + k]))
                for (int64_t i = 0; i < R; i++)
                    if (!has_col(X, i, j))
                        C[i * n + k] = NAN;
}

typedef struct DsCtx {
    const double *A;
    int64_t m;
    const SpMat *X;
    double *C;
    const int64_t *cut;
} DsCtx;

/* Rows [cut[part], cut[part+1]) of C = A %*% X: row i of C is the sum over
 * p of A[i,p] * X[p,:], in ascending p. */
static void mm_ds_part(void *vctx, int part)
{
    const DsCtx *c = vctx;
    const SpMat *X = c->X;
    int64_t K = X->rows, N = X->cols;
    for (int64_t i = c->cut[part]; i < c->cut[part + 1]; i++) {
        const double *a = c->A + i * K;
        double *restrict out = c->C + i * N;
        for (int64_t k = 0; k < N; k++)
            out[k] = 0;
        for (int64_t p = 0; p < K; p++) {
            double s = a[p];
            for (int64_t q = X->rowptr[p]; q < X->rowptr[p + 1]; q++)
                out[X->colidx[q]] += s * X->vals[q];
        }
    }
}

void sp_mm_ds(const Interp *I, const double *A, int64_t m, const SpMat *X, double *C)
{
    int64_t K = X->rows, N = X->cols;
    if (m == 0 || N == 0)
        return;
    int parts = n_parts(I, m * (X->nnz + K));
    if (parts > m)
        parts = (int)m;
    int64_t cut[SP_MAX_PARTS + 1];
    col_cuts(m, parts, cut);
    DsCtx ctx = {.A = A, .m = m, .X = X, .C = C, .cut = cut};
    pool_run(I, mm_ds_part, &ctx, parts);
    /* A[i,p] not finite meets X[p,k] == 0: NaN, as in the triple loop. */
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < K; p++)
            if (!isfinite(A[i * K + p]))
                for (int64_t k = 0; k < N; k++)
                    if (!has_col(X, p, k))
                        C[i * N + k] = NAN;
}

/* The scatter kernels (t(X) %*% Y, t(X) %*% X), where every row of X adds
 * into many output cells, run in one of two ways:
 * - in SP_BLOCKS fixed row blocks, each adding into its own copy of the
 *   output, the copies then summed in block order: any thread takes any
 *   block (a loaded machine does not stall the call), and the bits do not
 *   depend on the thread count because the blocks do not;
 * - when the copies would cost too much memory (or the input is small: one
 *   block), in output column ranges, one per thread, each walking all rows:
 *   every cell is then summed over the rows in order, the bits of one
 *   thread.
 * Which way depends on the sizes only (scatter_blocks). */
enum { SP_BLOCKS = 8 };

static int scatter_blocks(int64_t work, int64_t out_cells, int64_t nnz)
{
    if (work < SP_PAR_MIN)
        return 1;
    double extra = (double)(SP_BLOCKS - 1) * (double)out_cells * 8;
    if (extra > 64.0 * (1 << 20) && extra > 6.0 * (double)nnz)
        return 1;
    return SP_BLOCKS;
}

typedef struct ScatterCtx {
    const SpMat *X;
    const double *Y;        /* t(X) %*% Y: X->rows x n */
    int64_t n;
    double *C;
    double **buf;           /* row blocks: block k's output (buf[0] == C); NULL: column ranges */
    const int64_t *cut;     /* row blocks: row cuts; else output row (= X column) cuts */
    int64_t len;            /* reduce: cells of the output */
} ScatterCtx;

/* The part's rows, columns and output. */
static double *scatter_span(const ScatterCtx *c, int part, int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1)
{
    if (c->buf) {
        *r0 = c->cut[part];
        *r1 = c->cut[part + 1];
        *c0 = 0;
        *c1 = c->X->cols;
        return c->buf[part];
    }
    *r0 = 0;
    *r1 = c->X->rows;
    *c0 = c->cut[part];
    *c1 = c->cut[part + 1];
    return c->C;
}

/* Output cells [part*len/parts ...) of C += buf[1] + buf[2] + ... in order. */
static void scatter_reduce_part(void *vctx, int part)
{
    const ScatterCtx *c = vctx;
    int64_t k0 = c->len / SP_BLOCKS * part + (c->len % SP_BLOCKS) * part / SP_BLOCKS;
    int64_t k1 = c->len / SP_BLOCKS * (part + 1) + (c->len % SP_BLOCKS) * (part + 1) / SP_BLOCKS;
    for (int b = 1; b < SP_BLOCKS; b++) {
        const double *restrict src = c->buf[b];
        double *restrict dst = c->C;
        for (int64_t k = k0; k < k1; k++)
            dst[k] += src[k];
    }
}

/* Runs fn over 'blocks' row blocks (buffers of 'len' cells) or, with one
 * block, over output column ranges cut by cut_fn; then sums the blocks.
 * false when the block buffers cannot be had. */
static bool scatter_run(const Interp *I, ScatterCtx *ctx, void (*fn)(void *, int), int blocks, int64_t len,
                        void (*cut_fn)(int64_t, int, int64_t *))
{
    int64_t cut[SP_MAX_PARTS + 1];
    const SpMat *X = ctx->X;
    if (blocks == 1) {
        int parts = n_col_parts(I, X->nnz + X->rows);
        if (parts > X->cols)
            parts = (int)X->cols;
        cut_fn(X->cols, parts, cut);
        ctx->buf = NULL;
        ctx->cut = cut;
        pool_run(I, fn, ctx, parts);
        return true;
    }
    double *buf[SP_BLOCKS] = {ctx->C};
    bool ok = true;
    for (int b = 1; b < SP_BLOCKS; b++)
        ok = ok && (buf[b] = malloc((size_t)len * sizeof(double) + 8)) != NULL;
    if (ok) {
        row_cuts(X, SP_BLOCKS, cut);
        ctx->buf = buf;
        ctx->cut = cut;
        ctx->len = len;
        pool_run(I, fn, ctx, SP_BLOCKS);
        if (len >= SP_PAR_MIN)
            pool_run(I, scatter_reduce_part, ctx, SP_BLOCKS);
        else
            for (int k = 0; k < SP_BLOCKS; k++)
                scatter_reduce_part(ctx, k);
    }
    for (int b = 1; b < SP_BLOCKS; b++)
        free(buf[b]);
    return ok;
}

/* t(X) %*% Y over one part: rows [r0, r1) scatter their entries in columns
 * [c0, c1), rows in ascending order. */
static void tmm_sd_part(void *vctx, int part)
{
    const ScatterCtx *c = vctx;
    const SpMat *X = c->X;
    const int32_t *ci = X->colidx;
    const double *xv = X->vals;
    int64_t r0, r1, c0, c1, n = c->n;
    double *C = scatter_span(c, part, &r0, &r1, &c0, &c1);
    for (int64_t k = c0 * n; k < c1 * n; k++)
        C[k] = 0;
    for (int64_t i = r0; i < r1; i++) {
        int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
        if (c0 > 0)
            p = part_start(ci, p, end, c0, X->cols);
        if (n == 1) {
            double y = c->Y[i];
            if (c1 == X->cols)  /* the whole row: no column test */
                for (; p < end; p++)
                    C[ci[p]] += xv[p] * y;
            else
                for (; p < end && ci[p] < c1; p++)
                    C[ci[p]] += xv[p] * y;
            continue;
        }
        const double *restrict y = c->Y + i * n;
        for (; p < end && ci[p] < c1; p++) {
            double a = xv[p];
            double *restrict out = C + (int64_t)ci[p] * n;
            for (int64_t k = 0; k < n; k++)
                out[k] += a * y[k];
        }
    }
}

bool sp_tmm_sd(const Interp *I, const SpMat *X, const double *Y, int64_t n, double *C)
{
    int64_t R = X->rows, K = X->cols;
    if (K == 0 || n == 0)
        return true;
    ScatterCtx ctx = {.X = X, .Y = Y, .n = n, .C = C};
    if (!scatter_run(I, &ctx, tmm_sd_part, scatter_blocks((X->nnz + R) * n, K * n, X->nnz), K * n, col_cuts))
        return false;
    /* Y[i,k] not finite meets X[i,a] == 0: C[a,k] is NaN, as in the triple loop. */
    for (int64_t i = 0; i < R; i++)
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(Y[i * n + k]))
                for (int64_t a = 0; a < K; a++)
                    if (!has_col(X, i, a))
                        C[a * n + k] = NAN;
    return true;
}

/* The upper triangle of t(X) %*% X over one part: C[a,b] (a <= b, a in
 * [c0, c1)) sums X[i,a] * X[i,b] over rows [r0, r1) in ascending order. */
static void tsmm_part(void *vctx, int part)
{
    const ScatterCtx *c = vctx;
    const SpMat *X = c->X;
    const int32_t *ci = X->colidx;
    const double *xv = X->vals;
    int64_t K = X->cols, r0, r1, c0, c1;
    double *C = scatter_span(c, part, &r0, &r1, &c0, &c1);
    if (c1 > c0)
        memset(C + c0 * K, 0, (size_t)((c1 - c0) * K) * sizeof(double));
    for (int64_t i = r0; i < r1; i++) {
        int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
        if (c0 > 0)
            p = part_start(ci, p, end, c0, X->cols);
        for (; p < end && ci[p] < c1; p++) {
            double va = xv[p];
            double *restrict row = C + (int64_t)ci[p] * K;
            for (int64_t q = p; q < end; q++)
                row[ci[q]] += va * xv[q];
        }
    }
}

/* Cuts of [0, K) for the triangle: part k's rows hold about 1/parts of the
 * K(K+1)/2 cells (row a holds K - a). */
static void tri_cuts(int64_t K, int parts, int64_t *b)
{
    b[0] = 0;
    for (int k = 1; k < parts; k++) {
        int64_t a = (int64_t)((double)K * (1.0 - sqrt(1.0 - (double)k / parts)));
        b[k] = a < b[k - 1] ? b[k - 1] : a > K ? K : a;
    }
    b[parts] = K;
}

bool sp_tsmm(const Interp *I, const SpMat *X, double *C)
{
    int64_t K = X->cols;
    if (K == 0)
        return true;
    int64_t avg = X->rows ? X->nnz / X->rows + 1 : 1;
    ScatterCtx ctx = {.X = X, .C = C};
    if (!scatter_run(I, &ctx, tsmm_part, scatter_blocks(X->nnz * avg + X->rows, K * K, X->nnz), K * K, tri_cuts))
        return false;
    /* X[i,a] not finite meets X[i,b] == 0: C[a,b] and C[b,a] are NaN. */
    for (int64_t i = 0; i < X->rows; i++)
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            if (!isfinite(X->vals[p])) {
                int64_t a = X->colidx[p];
                for (int64_t b = 0; b < K; b++)
                    if (!has_col(X, i, b)) {
                        if (a <= b)
                            C[a * K + b] = NAN;
                        else
                            C[b * K + a] = NAN;
                    }
            }
    for (int64_t a = 0; a < K; a++)
        for (int64_t b = 0; b < a; b++)
            C[a * K + b] = C[b * K + a];
    return true;
}

typedef struct SsCtx {
    const SpMat *X, *Y;
    SpMat *Z;               /* rowptr holds each row's upper bound of entries */
    int64_t *len;           /* entries written per row */
    const int64_t *cut;
    double **acc;           /* per part: Y->cols accumulators */
    int64_t **mark;         /* per part: last row that touched a column, + 1 */
    int32_t **list;         /* per part: the columns touched in this row */
} SsCtx;

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Rows of Z = X %*% Y for one part (Gustavson: a dense accumulator per
 * part, the touched columns sorted for the output). */
static void mm_ss_part(void *vctx, int part)
{
    const SsCtx *c = vctx;
    const SpMat *X = c->X, *Y = c->Y;
    double *acc = c->acc[part];
    int64_t *mark = c->mark[part];
    int32_t *list = c->list[part];
    for (int64_t i = c->cut[part]; i < c->cut[part + 1]; i++) {
        int64_t nl = 0;
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++) {
            double a = X->vals[p];
            int64_t j = X->colidx[p];
            for (int64_t q = Y->rowptr[j]; q < Y->rowptr[j + 1]; q++) {
                int32_t k = Y->colidx[q];
                if (mark[k] != i + 1) {
                    mark[k] = i + 1;
                    acc[k] = 0;
                    list[nl++] = k;
                }
                acc[k] += a * Y->vals[q];
            }
        }
        qsort(list, (size_t)nl, sizeof *list, cmp_i32);
        int64_t o = c->Z->rowptr[i];
        for (int64_t t = 0; t < nl; t++)
            if (acc[list[t]] != 0) {
                c->Z->colidx[o] = list[t];
                c->Z->vals[o++] = acc[list[t]];
            }
        c->len[i] = o - c->Z->rowptr[i];
    }
}

SpMat *sp_mm_ss(const Interp *I, const SpMat *X, const SpMat *Y)
{
    int64_t R = X->rows, N = Y->cols;
    /* Upper bound of each row's entries: the products it forms, at most N. */
    int64_t *bound = malloc(((size_t)R + 1) * sizeof *bound);
    if (!bound)
        return NULL;
    int64_t total = 0, flops = 0;
    for (int64_t i = 0; i < R; i++) {
        int64_t f = 0;
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            f += Y->rowptr[X->colidx[p] + 1] - Y->rowptr[X->colidx[p]];
        flops += f;
        bound[i] = total;
        total += f < N ? f : N;
    }
    bound[R] = total;
    SpMat *Z = sp_new(R, N, total);
    int parts = n_parts(I, flops + R);
    if (parts > R)
        parts = R > 0 ? (int)R : 1;
    double *acc[SP_MAX_PARTS] = {0};
    int64_t *mark[SP_MAX_PARTS] = {0};
    int32_t *list[SP_MAX_PARTS] = {0};
    bool ok = Z != NULL;
    for (int k = 0; ok && k < parts; k++) {
        acc[k] = malloc(((size_t)N + 1) * sizeof(double));
        mark[k] = calloc((size_t)N + 1, sizeof(int64_t));
        list[k] = malloc(((size_t)N + 1) * sizeof(int32_t));
        ok = acc[k] && mark[k] && list[k];
    }
    int64_t *len = ok ? malloc(((size_t)R + 1) * sizeof *len) : NULL;
    if (ok && len) {
        memcpy(Z->rowptr, bound, ((size_t)R + 1) * sizeof *bound);
        int64_t cut[SP_MAX_PARTS + 1];
        row_cuts(X, parts, cut);
        SsCtx ctx = {.X = X, .Y = Y, .Z = Z, .len = len, .cut = cut, .acc = acc, .mark = mark, .list = list};
        pool_run(I, mm_ss_part, &ctx, parts);
        /* Close the gaps left by rows shorter than their bound. */
        int64_t o = 0;
        for (int64_t i = 0; i < R; i++) {
            int64_t from = bound[i];
            if (o != from && len[i]) {
                memmove(Z->colidx + o, Z->colidx + from, (size_t)len[i] * sizeof *Z->colidx);
                memmove(Z->vals + o, Z->vals + from, (size_t)len[i] * sizeof *Z->vals);
            }
            Z->rowptr[i] = o;
            o += len[i];
        }
        Z->rowptr[R] = o;
        Z->nnz = o;
        sp_shrink(Z);
    } else {
        sp_free(Z);
        Z = NULL;
    }
    for (int k = 0; k < parts; k++) {
        free(acc[k]);
        free(mark[k]);
        free(list[k]);
    }
    free(len);
    free(bound);
    return Z;
}

typedef struct TrCtx {
    const SpMat *X;
    SpMat *T;
    int64_t *next;          /* per column of X: next free slot in T */
    const int64_t *cut;
} TrCtx;

/* Rows [cut[part], cut[part+1]) of T = t(X), i.e. those columns of X. */
static void transpose_part(void *vctx, int part)
{
    const TrCtx *c = vctx;
    const SpMat *X = c->X;
    int64_t c0 = c->cut[part], c1 = c->cut[part + 1];
    for (int64_t i = 0; i < X->rows; i++) {
        int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
        if (c0 > 0)
            p = part_start(X->colidx, p, end, c0, X->cols);
        for (; p < end && X->colidx[p] < c1; p++) {
            int64_t o = c->next[X->colidx[p]]++;
            c->T->colidx[o] = (int32_t)i;
            c->T->vals[o] = X->vals[p];
        }
    }
}

SpMat *sp_transpose(const Interp *I, const SpMat *X)
{
    if (X->rows > INT32_MAX)
        return NULL;
    SpMat *T = sp_new(X->cols, X->rows, X->nnz);
    int64_t *next = malloc(((size_t)X->cols + 1) * sizeof *next);
    if (!T || !next) {
        sp_free(T);
        free(next);
        return NULL;
    }
    for (int64_t p = 0; p < X->nnz; p++)
        T->rowptr[X->colidx[p] + 1]++;
    for (int64_t j = 0; j < X->cols; j++) {
        T->rowptr[j + 1] += T->rowptr[j];
        next[j] = T->rowptr[j];
    }
    T->nnz = X->nnz;
    int parts = n_col_parts(I, X->nnz + X->rows);
    if (parts > X->cols)
        parts = X->cols > 0 ? (int)X->cols : 1;
    int64_t cut[SP_MAX_PARTS + 1];
    col_cuts(X->cols, parts, cut);
    TrCtx ctx = {.X = X, .T = T, .next = next, .cut = cut};
    pool_run(I, transpose_part, &ctx, parts);
    free(next);
    return T;
}

/* ============================== aggregates ============================== */

/* One Kahan sum as builtins/aggregate.c's kahan_add keeps it. */
typedef struct KS {
    double s, c;
} KS;

/* aggregate.c's kahan_add: the correction is dropped once the sum is not
 * finite. */
static inline void kadd(KS *k, double v)
{
    double c = v + k->c;
    double t = k->s + c;
    k->c = isfinite(t) ? c - (t - k->s) : 0.0;
    k->s = t;
}

/* aggregate.c's col_ksums step: no such check. */
static inline void kadd_raw(KS *k, double v)
{
    double c = v + k->c;
    double t = k->s + c;
    k->c = c - (t - k->s);
    k->s = t;
}

/* n steps of adding 0.0. A step changes nothing when s + c == s (then the
 * correction is kept and the sum too; the sum is never -0.0: it starts at
 * +0.0, and round-to-nearest gives -0.0 only for -0.0 + -0.0), nor does
 * any step after one that changed nothing; a non-finite sum stays
 * non-finite and is replaced by the plain sum. After a Kahan step s + c
 * rounds to s almost always, so the test up front (off the chain of
 * dependent additions, and predicted) is usually all a gap costs. */
static inline void kzeros(KS *k, int64_t n, bool raw)
{
    if (n <= 0 || k->s + k->c == k->s)
        return;
    while (n-- > 0 && k->c != 0 && isfinite(k->s)) {
        double s0 = k->s, c0 = k->c;
        if (raw)
            kadd_raw(k, 0.0);
        else
            kadd(k, 0.0);
        if (k->s == s0 && k->c == c0)
            break;
    }
}

/* aggregate.c's ksum_strided(x, n, s) over n cells of which only the
 * non-zeros are given, at ascending positions: four lanes when the cells
 * are contiguous (s == 1) and n >= 16, else one sum. The caller replaces a
 * sum that is not finite by the plain sum (kept out of this loop: one more
 * chain of dependent additions per entry). */
typedef struct KDense {
    int64_t n, m;           /* cells; cells in the four lanes (0: no lanes) */
    KS lane[4];
    int64_t next[4];        /* next lane position (cell / 4) not stepped yet */
    KS main;
    int64_t mnext;          /* next cell of main not stepped yet */
    bool combined;          /* lanes folded into main */
} KDense;

static void kd_init(KDense *k, int64_t n, bool contiguous)
{
    memset(k, 0, sizeof *k);
    k->n = n;
    k->m = contiguous && n >= 16 ? n / 4 * 4 : 0;
    k->combined = k->m == 0;
}

static void kd_combine(KDense *k)
{
    for (int l = 0; l < 4; l++) {
        kzeros(&k->lane[l], k->m / 4 - k->next[l], false);
        kadd(&k->main, k->lane[l].s);
        kadd(&k->main, k->lane[l].c);
    }
    k->mnext = k->m;
    k->combined = true;
}

static inline void kd_add(KDense *k, int64_t pos, double v)
{
    if (pos < k->m) {
        int l = (int)(pos & 3);
        int64_t q = pos >> 2;
        kzeros(&k->lane[l], q - k->next[l], false);
        kadd(&k->lane[l], v);
        k->next[l] = q + 1;
        return;
    }
    if (!k->combined)
        kd_combine(k);
    kzeros(&k->main, pos - k->mnext, false);
    kadd(&k->main, v);
    k->mnext = pos + 1;
}

/* The compensated sum. */
static double kd_finish(KDense *k)
{
    if (!k->combined)
        kd_combine(k);
    kzeros(&k->main, k->n - k->mnext, false);
    return k->main.s;
}

/* Plain sum of entries [p0, p1): the dense kernels' fallback (adding the
 * zeros in between changes nothing: the sum is never -0.0). */
static double plain_sum(const double *v, int64_t p0, int64_t p1)
{
    double s = 0;
    for (int64_t p = p0; p < p1; p++)
        s += v[p];
    return s;
}

/* ksum_strided over row i's X->cols cells (contiguous: ksum's four lanes),
 * each value divided by 'scale'; with 'fallback' the plain sum when the
 * compensated one is not finite. KDense's steps, unrolled for a row. */
static double row_ksum(const SpMat *X, int64_t i, bool contiguous, double scale, bool fallback)
{
    const int32_t *ci = X->colidx;
    const double *xv = X->vals;
    int64_t n = X->cols, m = contiguous && n >= 16 ? n / 4 * 4 : 0;
    int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
    KS main = {0, 0};
    int64_t mnext = 0;
    if (m) {
        /* Lane states in a small array: keeping them in registers (entries
         * sorted into per-lane lists, lanes stepped together) measured 40%
         * slower, the sorting costing more than the chains it overlaps. */
        KS lane[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        int64_t next[4] = {0, 0, 0, 0};
        for (; p < end && ci[p] < m; p++) {
            int l = ci[p] & 3;
            int64_t q = ci[p] >> 2;
            kzeros(&lane[l], q - next[l], false);
            kadd(&lane[l], scale == 1 ? xv[p] : xv[p] / scale);
            next[l] = q + 1;
        }
        for (int l = 0; l < 4; l++) {
            kzeros(&lane[l], m / 4 - next[l], false);
            kadd(&main, lane[l].s);
            kadd(&main, lane[l].c);
        }
        mnext = m;
    }
    for (; p < end; p++) {
        kzeros(&main, ci[p] - mnext, false);
        kadd(&main, scale == 1 ? xv[p] : xv[p] / scale);
        mnext = ci[p] + 1;
    }
    kzeros(&main, n - mnext, false);
    if (fallback && !isfinite(main.s))
        return plain_sum(xv, X->rowptr[i], end);
    return main.s;
}

/* aggregate.c's kmean_strided on row i: the sum / n, or when that is not
 * finite, the compensated sum of x / n (no lanes, no fallback). */
static double row_kmean(const SpMat *X, int64_t i)
{
    double n = (double)X->cols;
    double mu = row_ksum(X, i, true, 1, true) / n;
    if (isfinite(mu) || X->cols == 0)
        return mu;
    return row_ksum(X, i, false, n, false);
}

static inline double agg_minmax(SpAgg op, double a, double b)
{
    return op == SP_MAX ? ops_max2(a, b) : ops_min2(a, b);
}

double sp_full_agg(const SpMat *X, SpAgg op)
{
    int64_t R = X->rows, C = X->cols, n = R * C;
    if (op == SP_MAX || op == SP_MIN) {
        double v = op == SP_MAX ? -INFINITY : INFINITY;
        for (int64_t p = 0; p < X->nnz; p++)
            v = agg_minmax(op, v, X->vals[p]);
        return X->nnz < n ? agg_minmax(op, v, 0.0) : v;
    }
    /* ksum / kmean_strided over all R*C cells, row-major positions. */
    KDense k;
    kd_init(&k, n, true);
    for (int64_t i = 0; i < R; i++)
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            kd_add(&k, i * C + X->colidx[p], X->vals[p]);
    double s = kd_finish(&k);
    if (!isfinite(s))
        s = plain_sum(X->vals, 0, X->nnz);
    if (op == SP_SUM)
        return s;
    double mu = s / (double)n;
    if (isfinite(mu) || n == 0)
        return mu;
    kd_init(&k, n, false);
    for (int64_t i = 0; i < R; i++)
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            kd_add(&k, i * C + X->colidx[p], X->vals[p] / (double)n);
    return kd_finish(&k);
}

typedef struct AggCtx {
    const SpMat *X;
    SpAgg op;
    double *out;
    const int64_t *cut;
    struct ColState *col;   /* column kernels: per column */
} AggCtx;

/* A column's running sums, in one place (one cache line for two columns). */
typedef struct ColState {
    KS ks;
    int64_t last;           /* sums: the next row not stepped yet; min/max: entries seen */
} ColState;

static void row_agg_part(void *vctx, int part)
{
    const AggCtx *c = vctx;
    const SpMat *X = c->X;
    for (int64_t i = c->cut[part]; i < c->cut[part + 1]; i++) {
        double v;
        switch (c->op) {
        case SP_SUM: v = row_ksum(X, i, true, 1, true); break;
        case SP_MEAN: v = row_kmean(X, i); break;
        default:
            v = c->op == SP_MAX ? -INFINITY : INFINITY;
            for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
                v = agg_minmax(c->op, v, X->vals[p]);
            if (X->rowptr[i + 1] - X->rowptr[i] < X->cols)
                v = agg_minmax(c->op, v, 0.0);
            break;
        }
        c->out[i] = v;
    }
}

void sp_row_agg(const Interp *I, const SpMat *X, SpAgg op, double *out)
{
    int parts = n_parts(I, X->nnz + X->rows);
    int64_t cut[SP_MAX_PARTS + 1];
    row_cuts(X, parts, cut);
    AggCtx ctx = {.X = X, .op = op, .out = out, .cut = cut};
    pool_run(I, row_agg_part, &ctx, parts);
}

/* Columns [cut[part], cut[part+1]): col_ksums' per-column compensated sums
 * (rows in order, zero rows stepped through), or the min/max. */
static void col_agg_part(void *vctx, int part)
{
    const AggCtx *c = vctx;
    const SpMat *X = c->X;
    ColState *st = c->col;
    int64_t c0 = c->cut[part], c1 = c->cut[part + 1];
    bool mm = c->op == SP_MAX || c->op == SP_MIN;
    for (int64_t j = c0; j < c1; j++) {
        st[j] = (ColState){{0, 0}, 0};
        c->out[j] = c->op == SP_MAX ? -INFINITY : c->op == SP_MIN ? INFINITY : 0;
    }
    for (int64_t i = 0; i < X->rows; i++) {
        int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
        if (c0 > 0)
            p = part_start(X->colidx, p, end, c0, X->cols);
        for (; p < end && X->colidx[p] < c1; p++) {
            int64_t j = X->colidx[p];
            double v = X->vals[p];
            ColState *s = st + j;
            if (mm) {
                c->out[j] = agg_minmax(c->op, c->out[j], v);
                s->last++;
            } else {
                kzeros(&s->ks, i - s->last, true);
                kadd_raw(&s->ks, v);
                s->last = i + 1;
            }
        }
    }
    for (int64_t j = c0; j < c1; j++) {
        if (mm) {
            if (st[j].last < X->rows)
                c->out[j] = agg_minmax(c->op, c->out[j], 0.0);
            continue;
        }
        kzeros(&st[j].ks, X->rows - st[j].last, true);
        c->out[j] = st[j].ks.s;     /* not finite: sp_col_agg re-sums it plainly */
    }
}

/* aggregate.c's kmean_strided(x->data + j, R, C) for column j. */
static double col_kmean(const SpMat *X, int64_t j)
{
    int64_t R = X->rows;
    KDense k;
    for (int pass = 0; pass < 2; pass++) {
        double plain = 0;
        kd_init(&k, R, pass == 0 && X->cols == 1);
        for (int64_t i = 0; i < R; i++)
            if (has_col(X, i, j)) {
                double v = X->vals[lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], j)];
                kd_add(&k, i, pass == 0 ? v : v / (double)R);
                plain += v;
            }
        double s = kd_finish(&k);
        if (pass == 1)
            return s;
        if (!isfinite(s))
            s = plain;
        double mu = s / (double)R;
        if (isfinite(mu) || R == 0)
            return mu;
    }
    return NAN;     /* not reached */
}

bool sp_col_agg(const Interp *I, const SpMat *X, SpAgg op, double *out)
{
    int64_t C = X->cols;
    if (C == 0)
        return true;
    ColState *col = malloc((size_t)C * sizeof *col);
    if (!col)
        return false;
    int parts = n_col_parts(I, X->nnz + X->rows);
    if (parts > C)
        parts = (int)C;
    int64_t cut[SP_MAX_PARTS + 1];
    col_cuts(C, parts, cut);
    AggCtx ctx = {.X = X, .op = op, .out = out, .cut = cut, .col = col};
    pool_run(I, col_agg_part, &ctx, parts);
    free(col);
    if (op == SP_SUM || op == SP_MEAN) {
        /* col_ksums' fallback: a column whose compensated sum is not finite
         * is summed plainly (rare: a column with Inf, NaN or overflow). */
        bool any = false;
        for (int64_t j = 0; j < C && !any; j++)
            any = !isfinite(out[j]);
        if (any) {
            double *plain = calloc((size_t)C, sizeof *plain);
            if (!plain)
                return false;
            for (int64_t p = 0; p < X->nnz; p++)
                plain[X->colidx[p]] += X->vals[p];
            for (int64_t j = 0; j < C; j++)
                if (!isfinite(out[j]))
                    out[j] = plain[j];
            free(plain);
        }
    }
    if (op == SP_MEAN)
        for (int64_t j = 0; j < C; j++) {
            out[j] /= (double)X->rows;
            if (!isfinite(out[j]))     /* rare: a column with Inf, NaN or overflow */
                out[j] = col_kmean(X, j);
        }
    return true;
}

/* ============================ element-wise ============================ */

bool sp_unary_safe(VmFn f)
{
    return vm_unary1(f, 0.0) == 0;
}

bool sp_scalar_safe(BinOp op, double s, bool scalar_left)
{
    if (op >= OP_ANDAND || op == OP_MATMUL)
        return false;
    return (scalar_left ? ops_apply_d(op, s, 0.0) : ops_apply_d(op, 0.0, s)) == 0;
}

/* How a map kernel computes its values. */
typedef enum MapKind { MAP_UNARY, MAP_SCALAR, MAP_VECTOR } MapKind;

typedef struct MapCtx {
    const SpMat *X;
    SpMat *Z;               /* Z's arrays have X's size; rowptr[i+1] = kept count of row i */
    MapKind kind;
    VmFn f;
    BinOp op;
    double s;
    bool left;
    const double *vec;      /* MAP_VECTOR: one value per row (col_vec) or per column */
    bool col_vec;
    const int64_t *cut;
} MapCtx;

/* Rows of one part: values computed into Z at X's positions, then the
 * zeros dropped within the part's own range. */
/* The part's rows with value expression EXPR (of x = the input value):
 * each result and its column written at o, o advanced past non-zeros only
 * (one pass, no branch on the value). */
#define MAP_ROWS(EXPR) do { \
        for (int64_t i = r0; i < r1; i++) { \
            int64_t start = o; \
            for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++) { \
                double x = src[p]; \
                double v = (EXPR); \
                zv[o] = v; \
                zc[o] = xc[p]; \
                o += v != 0; \
            } \
            Z->rowptr[i + 1] = o - start;   /* a count until map() closes the gaps */ \
        } \
    } while (0)

static void map_part(void *vctx, int part)
{
    const MapCtx *c = vctx;
    const SpMat *X = c->X;
    SpMat *Z = c->Z;
    int64_t r0 = c->cut[part], r1 = c->cut[part + 1];
    int64_t p0 = X->rowptr[r0], p1 = X->rowptr[r1], o = p0;
    double *zv = Z->vals;
    int32_t *zc = Z->colidx;
    const int32_t *xc = X->colidx;
    const double *src = X->vals;
    double s = c->s;
    if (c->kind == MAP_UNARY) {
        /* the vector kernel first (same bits as the dense builtins), then
         * the zeros squeezed out in place */
        vm_unary(c->f, src + p0, zv + p0, p1 - p0);
        src = zv;
        MAP_ROWS(x);
    } else if (c->kind == MAP_VECTOR) {
        const double *w = c->vec;
        if (c->op == OP_MUL && c->col_vec)
            MAP_ROWS(x * w[i]);
        else if (c->op == OP_MUL)
            MAP_ROWS(x * w[xc[p]]);
        else if (c->col_vec)
            MAP_ROWS(ops_apply_d(c->op, x, w[i]));
        else
            MAP_ROWS(ops_apply_d(c->op, x, w[xc[p]]));
    } else if (c->op == OP_MUL) {
        MAP_ROWS(x * s);
    } else if (c->op == OP_POW && s == 2.0 && !c->left) {
        /* ops.c's matrix kernel computes X^2 as x*x (glibc's pow(x, 2) is
         * not always the correctly rounded product) */
        MAP_ROWS(x * x);
    } else if (c->left) {
        MAP_ROWS(ops_apply_d(c->op, s, x));
    } else {
        MAP_ROWS(ops_apply_d(c->op, x, s));
    }
}
#undef MAP_ROWS

static SpMat *map(const Interp *I, const SpMat *X, const MapCtx *proto)
{
    SpMat *Z = sp_new(X->rows, X->cols, X->nnz);
    if (!Z)
        return NULL;
    MapCtx ctx = *proto;
    ctx.X = X;
    ctx.Z = Z;
    int parts = n_parts(I, X->nnz + X->rows);
    int64_t cut[SP_MAX_PARTS + 1];
    row_cuts(X, parts, cut);
    ctx.cut = cut;
    pool_run(I, map_part, &ctx, parts);
    /* Each part kept its entries from its first input position on; move the
     * blocks down in part order (a block never moves up, so nothing still
     * to move is overwritten), then turn the row counts into offsets. */
    int64_t o = 0;
    for (int k = 0; k < parts; k++) {
        int64_t src = X->rowptr[cut[k]], cnt = 0;
        for (int64_t i = cut[k]; i < cut[k + 1]; i++)
            cnt += Z->rowptr[i + 1];
        if (cnt && src != o) {
            memmove(Z->colidx + o, Z->colidx + src, (size_t)cnt * sizeof *Z->colidx);
            memmove(Z->vals + o, Z->vals + src, (size_t)cnt * sizeof *Z->vals);
        }
        o += cnt;
    }
    for (int64_t i = 0; i < X->rows; i++)
        Z->rowptr[i + 1] += Z->rowptr[i];
    Z->rowptr[X->rows] = o;
    Z->nnz = o;
    sp_shrink(Z);
    return Z;
}

SpMat *sp_unary(const Interp *I, const SpMat *X, VmFn f)
{
    MapCtx c = {.kind = MAP_UNARY, .f = f};
    return map(I, X, &c);
}

SpMat *sp_binop_scalar(const Interp *I, const SpMat *X, BinOp op, double s, bool scalar_left)
{
    MapCtx c = {.kind = MAP_SCALAR, .op = op, .s = s, .left = scalar_left};
    return map(I, X, &c);
}

bool sp_vector_safe(BinOp op, const double *v, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (!sp_scalar_safe(op, v[k], false))
            return false;
    return true;
}

SpMat *sp_binop_vector(const Interp *I, const SpMat *X, BinOp op, const double *v, bool col_vec)
{
    MapCtx c = {.kind = MAP_VECTOR, .op = op, .vec = v, .col_vec = col_vec};
    return map(I, X, &c);
}

/* Appends (col, v) to Z when v != 0; false when memory runs out. */
static inline bool push(SpMat *Z, int64_t col, double v)
{
    if (v == 0)
        return true;
    if (Z->nnz == Z->cap && !sp_reserve(Z, Z->nnz + 1))
        return false;
    Z->colidx[Z->nnz] = (int32_t)col;
    Z->vals[Z->nnz++] = v;
    return true;
}

SpMat *sp_binop_ss(const Interp *I, const SpMat *X, BinOp op, const SpMat *Y)
{
    (void)I;
    SpMat *Z = sp_new(X->rows, X->cols, X->nnz > Y->nnz ? X->nnz : Y->nnz);
    if (!Z)
        return NULL;
    for (int64_t i = 0; i < X->rows; i++) {
        int64_t p = X->rowptr[i], pe = X->rowptr[i + 1];
        int64_t q = Y->rowptr[i], qe = Y->rowptr[i + 1];
        while (p < pe || q < qe) {
            int64_t cx = p < pe ? X->colidx[p] : INT64_MAX, cy = q < qe ? Y->colidx[q] : INT64_MAX;
            int64_t col = cx < cy ? cx : cy;
            double x = cx == col ? X->vals[p++] : 0.0;
            double y = cy == col ? Y->vals[q++] : 0.0;
            if (!push(Z, col, ops_apply_d(op, x, y))) {
                sp_free(Z);
                return NULL;
            }
        }
        Z->rowptr[i + 1] = Z->nnz;
    }
    sp_shrink(Z);
    return Z;
}

SpMat *sp_binop_sd(const Interp *I, const SpMat *X, BinOp op, const double *D, bool dense_left)
{
    (void)I;
    SpMat *Z = sp_new(X->rows, X->cols, X->nnz);
    if (!Z)
        return NULL;
    int64_t C = X->cols;
    for (int64_t i = 0; i < X->rows; i++) {
        int64_t p = X->rowptr[i], pe = X->rowptr[i + 1];
        const double *d = D + i * C;
        for (int64_t j = 0; j < C; j++) {
            double x = p < pe && X->colidx[p] == j ? X->vals[p++] : 0.0;
            double v = dense_left ? ops_apply_d(op, d[j], x) : ops_apply_d(op, x, d[j]);
            if (!push(Z, j, v)) {
                sp_free(Z);
                return NULL;
            }
        }
        Z->rowptr[i + 1] = Z->nnz;
    }
    sp_shrink(Z);
    return Z;
}

/* =========================== reorganisation =========================== */

SpMat *sp_cbind(const SpMat *A, const SpMat *B)
{
    if (A->rows != B->rows || A->cols + B->cols > INT32_MAX)
        return NULL;
    SpMat *Z = sp_new(A->rows, A->cols + B->cols, A->nnz + B->nnz);
    if (!Z)
        return NULL;
    int64_t o = 0;
    for (int64_t i = 0; i < A->rows; i++) {
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++, o++) {
            Z->colidx[o] = A->colidx[p];
            Z->vals[o] = A->vals[p];
        }
        for (int64_t p = B->rowptr[i]; p < B->rowptr[i + 1]; p++, o++) {
            Z->colidx[o] = (int32_t)(B->colidx[p] + A->cols);
            Z->vals[o] = B->vals[p];
        }
        Z->rowptr[i + 1] = o;
    }
    Z->nnz = o;
    return Z;
}

SpMat *sp_rbind(const SpMat *A, const SpMat *B)
{
    if (A->cols != B->cols)
        return NULL;
    SpMat *Z = sp_new(A->rows + B->rows, A->cols, A->nnz + B->nnz);
    if (!Z)
        return NULL;
    if (A->nnz) {
        memcpy(Z->colidx, A->colidx, (size_t)A->nnz * sizeof *Z->colidx);
        memcpy(Z->vals, A->vals, (size_t)A->nnz * sizeof *Z->vals);
    }
    if (B->nnz) {
        memcpy(Z->colidx + A->nnz, B->colidx, (size_t)B->nnz * sizeof *Z->colidx);
        memcpy(Z->vals + A->nnz, B->vals, (size_t)B->nnz * sizeof *Z->vals);
    }
    memcpy(Z->rowptr, A->rowptr, ((size_t)A->rows + 1) * sizeof *Z->rowptr);
    for (int64_t i = 1; i <= B->rows; i++)
        Z->rowptr[A->rows + i] = A->nnz + B->rowptr[i];
    Z->nnz = A->nnz + B->nnz;
    return Z;
}

SpMat *sp_diag_from_vector(const SpMat *v)
{
    int64_t n = v->rows * v->cols;
    if ((v->rows != 1 && v->cols != 1) || n > INT32_MAX)
        return NULL;
    SpMat *Z = sp_new(n, n, v->nnz);
    if (!Z)
        return NULL;
    for (int64_t i = 0; i < v->rows; i++)
        for (int64_t p = v->rowptr[i]; p < v->rowptr[i + 1]; p++) {
            int64_t k = v->cols == 1 ? i : v->colidx[p];
            Z->colidx[Z->nnz] = (int32_t)k;
            Z->vals[Z->nnz++] = v->vals[p];
            Z->rowptr[k + 1] = 1;
        }
    for (int64_t k = 0; k < n; k++)
        Z->rowptr[k + 1] += Z->rowptr[k];
    return Z;
}

SpMat *sp_diag_of_matrix(const SpMat *X)
{
    if (X->rows != X->cols)
        return NULL;
    int64_t n = X->rows;
    SpMat *Z = sp_new(n, 1, 0);
    if (!Z)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        if (has_col(X, i, i)) {
            double v = X->vals[lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], i)];
            if (!push(Z, 0, v)) {
                sp_free(Z);
                return NULL;
            }
        }
        Z->rowptr[i + 1] = Z->nnz;
    }
    return Z;
}

SpMat *sp_slice(const SpMat *X, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    if (r0 < 0 || r1 < r0 || r1 > X->rows || c0 < 0 || c1 < c0 || c1 > X->cols)
        return NULL;
    bool all_cols = c0 == 0 && c1 == X->cols;
    int64_t cnt = 0;
    for (int64_t i = r0; i < r1; i++)
        cnt += all_cols ? X->rowptr[i + 1] - X->rowptr[i]
                        : lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], c1) -
                              lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], c0);
    SpMat *Z = sp_new(r1 - r0, c1 - c0, cnt);
    if (!Z)
        return NULL;
    int64_t o = 0;
    for (int64_t i = r0; i < r1; i++) {
        int64_t p = all_cols ? X->rowptr[i] : lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], c0);
        int64_t pe = all_cols ? X->rowptr[i + 1] : lower_col(X->colidx, p, X->rowptr[i + 1], c1);
        for (; p < pe; p++, o++) {
            Z->colidx[o] = (int32_t)(X->colidx[p] - c0);
            Z->vals[o] = X->vals[p];
        }
        Z->rowptr[i - r0 + 1] = o;
    }
    Z->nnz = o;
    return Z;
}

SpMat *sp_gather_rows(const SpMat *X, const int64_t *rows, int64_t n)
{
    int64_t cnt = 0;
    for (int64_t k = 0; k < n; k++) {
        if (rows[k] < 0 || rows[k] >= X->rows)
            return NULL;
        cnt += X->rowptr[rows[k] + 1] - X->rowptr[rows[k]];
    }
    SpMat *Z = sp_new(n, X->cols, cnt);
    if (!Z)
        return NULL;
    int64_t o = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t p0 = X->rowptr[rows[k]], len = X->rowptr[rows[k] + 1] - p0;
        if (len) {
            memcpy(Z->colidx + o, X->colidx + p0, (size_t)len * sizeof *Z->colidx);
            memcpy(Z->vals + o, X->vals + p0, (size_t)len * sizeof *Z->vals);
        }
        o += len;
        Z->rowptr[k + 1] = o;
    }
    Z->nnz = o;
    return Z;
}

/* ================================ rand ================================ */

/* One value as construct.c's rand draws it. */
static inline double rand_value(Rng *g, const SpRandArgs *a)
{
    switch (a->pdf) {
    case SP_PDF_UNIFORM: {
        double w = a->max - a->min;
        return w == 0 ? a->min : a->min + w * rng_uniform(g);
    }
    case SP_PDF_NORMAL: return rng_normal(g);
    default: return rng_poisson(g, a->lambda);
    }
}

/* Room for about the expected non-zeros (the arrays grow if the draw has
 * more). */
static SpMat *rand_new(const SpRandArgs *a)
{
    int64_t n;
    if (a->rows < 0 || a->cols < 0 || __builtin_mul_overflow(a->rows, a->cols, &n))
        return NULL;    /* cell positions must fit an int64 */
    double cells = (double)a->rows * (double)a->cols;
    double want = cells * (a->sparsity < 1 ? a->sparsity : 1.0);
    want += 4 * sqrt(want) + 16;
    if (want > cells)
        want = cells;
    return sp_new(a->rows, a->cols, (int64_t)want);
}

SpMat *sp_rand_cellwise(Rng *g, const SpRandArgs *a)
{
    SpMat *Z = rand_new(a);
    if (!Z)
        return NULL;
    double sp = a->sparsity;
    for (int64_t i = 0; i < a->rows; i++) {
        for (int64_t j = 0; j < a->cols; j++) {
            if (sp < 1.0 && !(rng_uniform(g) < sp))
                continue;
            if (!push(Z, j, rand_value(g, a))) {
                sp_free(Z);
                return NULL;
            }
        }
        Z->rowptr[i + 1] = Z->nnz;
    }
    sp_shrink(Z);
    return Z;
}

/* The skip stream: calls emit(ctx, cell, value) for the non-zero cells in
 * ascending row-major order; false when emit fails. With sparsity 1 every
 * cell is drawn as the cell-wise stream does (no gap draws). */
static bool skip_stream(Rng *g, const SpRandArgs *a, bool (*emit)(void *ctx, int64_t cell, double v), void *ctx)
{
    int64_t cells = a->rows * a->cols;
    double sp = a->sparsity;
    if (!(sp > 0))
        return true;
    if (sp >= 1) {
        for (int64_t k = 0; k < cells; k++)
            if (!emit(ctx, k, rand_value(g, a)))
                return false;
        return true;
    }
    double l1p = log1p(-sp);
    int64_t pos = -1;
    for (;;) {
        /* Failures before the next success of a Bernoulli(sp) sequence:
         * floor(log(U) / log(1 - sp)), U = 1 - u in (0, 1]. */
        double gap = floor(log1p(-rng_uniform(g)) / l1p);
        if (!(gap < (double)(cells - pos - 1)))
            return true;
        pos += (int64_t)gap + 1;
        if (!emit(ctx, pos, rand_value(g, a)))
            return false;
    }
}

typedef struct SkipCsr {
    SpMat *Z;
    int64_t row;            /* rows before this one are closed */
} SkipCsr;

static bool emit_csr(void *vctx, int64_t cell, double v)
{
    SkipCsr *c = vctx;
    SpMat *Z = c->Z;
    int64_t i = cell / Z->cols;
    while (c->row < i)
        Z->rowptr[++c->row] = Z->nnz;
    return push(Z, cell % Z->cols, v);
}

SpMat *sp_rand_skip(Rng *g, const SpRandArgs *a)
{
    SpMat *Z = rand_new(a);
    if (!Z)
        return NULL;
    SkipCsr c = {.Z = Z, .row = 0};
    if (a->rows && a->cols && !skip_stream(g, a, emit_csr, &c)) {
        sp_free(Z);
        return NULL;
    }
    while (c.row < a->rows)
        Z->rowptr[++c.row] = Z->nnz;
    sp_shrink(Z);
    return Z;
}

static bool emit_dense(void *vctx, int64_t cell, double v)
{
    ((double *)vctx)[cell] = v;
    return true;
}

void sp_rand_skip_dense(Rng *g, const SpRandArgs *a, double *out)
{
    int64_t cells = a->rows * a->cols;      /* the caller holds rows*cols doubles */
    if (cells)
        memset(out, 0, (size_t)cells * sizeof *out);
    if (cells)
        skip_stream(g, a, emit_dense, out);
}
