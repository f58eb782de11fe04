/* SPDX-License-Identifier: Apache-2.0
 * Products and the transpose of CSR matrices (contract in sparse_ops.h):
 * sparse x dense, dense x sparse, t(X) %*% Y, t(X) %*% X, sparse x sparse.
 * Thread-safe: the parts of one call write disjoint outputs. */
#include "sparse_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "pool.h"
#include "sparse_parts.h"

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
