/* SPDX-License-Identifier: Apache-2.0
 * Kernels on CSR matrices (contract in sparse_ops.h). Thread-safe: no
 * shared state; the parts of one call write disjoint outputs. */
#include "sparse_ops.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "pool.h"
#include "sparse_parts.h"

bool sp_has_nonfinite(const SpMat *X)
{
    for (int64_t p = 0; p < X->nnz; p++)
        if (!isfinite(X->vals[p]))
            return true;
    return false;
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

/* ---- rowSums, rowMeans: the non-zeros alone ----
 * A row's sum is aggregate.c's ksum over the row's non-zeros, packed in
 * column order (as if its zeros were removed): four Kahan lanes when there
 * are 16 or more (lane l takes the l-th, (l+4)-th, ... non-zero), combined
 * with compensation, then the last n % 4; a single Kahan sum below 16; the
 * guarded steps, then the plain sum, when that is not finite. The dense
 * kernel's lanes go by column instead (a zero cell is a step of its lane),
 * so the two agree to the bit on rows without zeros, and otherwise to the
 * rounding of a compensated sum (doc/sparse.md). Replaying the dense
 * kernel's lanes over the non-zeros costs a read of every column index and
 * a masked step per non-zero: measured at 1.3x scipy.sparse's time on one
 * thread; the packed sum reads only the values. */
typedef double RV4 __attribute__((vector_size(32)));

/* One Kahan step of all four lanes, without the guard (kahan_add_fast). */
#define RS_KSTEP(S, C, V) do { \
        RV4 cc_ = (V) + (C), t_ = (S) + cc_; \
        (C) = cc_ - (t_ - (S)); \
        (S) = t_; \
    } while (0)

/* The guarded pass and the plain sum of row i's entries [p0, p1), each
 * divided by 'scale' (a mean's fallback: no lanes, no plain sum). */
static double rs_slow(const double *v, int64_t p0, int64_t p1, double scale)
{
    int64_t n = p1 - p0, m = n >= 16 && scale == 1 ? n / 4 * 4 : 0;
    KS main = {0, 0};
    if (m) {
        KS lane[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        for (int64_t k = 0; k < m; k++)
            kadd(&lane[k & 3], v[p0 + k]);
        for (int l = 0; l < 4; l++) {
            kadd(&main, lane[l].s);
            kadd(&main, lane[l].c);
        }
    }
    for (int64_t k = m; k < n; k++)
        kadd(&main, scale == 1 ? v[p0 + k] : v[p0 + k] / scale);
    if (scale != 1 || isfinite(main.s))
        return main.s;
    return plain_sum(v, p0, p1);
}

/* The end of a row: lanes (S, C) combined, entries [p, p1) added, the
 * result checked (not finite: rs_slow). */
static inline double rs_finish(const double *v, int64_t p0, int64_t p, int64_t p1, const double *s,
                               const double *c, bool lanes)
{
    KS main = {0, 0};
    if (lanes)
        for (int l = 0; l < 4; l++) {
            kadd_raw(&main, s[l]);
            kadd_raw(&main, c[l]);
        }
    for (; p < p1; p++)
        kadd_raw(&main, v[p]);
    return isfinite(main.s) ? main.s : rs_slow(v, p0, p1, 1);
}

enum { RS_STREAMS = 8 };

/* Stream k: rows [b[k], b[k+1]); row i's lanes cover entries [p0, e)
 * (e == p0: fewer than 16 entries), p the next quad. */
#define RS_DECL(k) RV4 s##k = {0, 0, 0, 0}, c##k = {0, 0, 0, 0}; \
    int64_t i##k = b[k], p0##k = rp[i##k], p##k = p0##k, e##k = i##k < b[k + 1] ? rs_lanes_end(rp, i##k) : p##k
/* One step of stream k: its next four entries, or the end of its row (the
 * result stored, the next row begun), or nothing when it is done. */
#define RS_STEP(k) do { \
        if (p##k < e##k) { \
            RV4 v_; \
            memcpy(&v_, xv + p##k, sizeof v_); \
            RS_KSTEP(s##k, c##k, v_); \
            p##k += 4; \
        } else if (i##k < b[k + 1]) { \
            double sv_[4] = {s##k[0], s##k[1], s##k[2], s##k[3]}; \
            double cv_[4] = {c##k[0], c##k[1], c##k[2], c##k[3]}; \
            out[i##k] = rs_finish(xv, p0##k, p##k, rp[i##k + 1], sv_, cv_, e##k > p0##k); \
            s##k = c##k = (RV4){0, 0, 0, 0}; \
            if (++i##k < b[k + 1]) { \
                p0##k = p##k = rp[i##k]; \
                e##k = rs_lanes_end(rp, i##k); \
            } \
        } else \
            live &= ~(1u << k); \
    } while (0)

static inline int64_t rs_lanes_end(const int64_t *rp, int64_t i)
{
    int64_t n = rp[i + 1] - rp[i];
    return rp[i] + (n >= 16 ? n / 4 * 4 : 0);
}

/* Rows [b[0], b[RS_STREAMS]) in eight streams, side by side: eight chains
 * of dependent additions overlap. */
static inline __attribute__((always_inline)) void rs_body(const SpMat *X, const int64_t *b, double *out)
{
    const int64_t *rp = X->rowptr;
    const double *xv = X->vals;
    RS_DECL(0);
    RS_DECL(1);
    RS_DECL(2);
    RS_DECL(3);
    RS_DECL(4);
    RS_DECL(5);
    RS_DECL(6);
    RS_DECL(7);
    unsigned live = 255;
    while (live) {
        RS_STEP(0);
        RS_STEP(1);
        RS_STEP(2);
        RS_STEP(3);
        RS_STEP(4);
        RS_STEP(5);
        RS_STEP(6);
        RS_STEP(7);
    }
}
#undef RS_STEP
#undef RS_DECL

static void rs_base(const SpMat *X, const int64_t *b, double *out) { rs_body(X, b, out); }
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void rs_avx2(const SpMat *X, const int64_t *b, double *out)
{
    rs_body(X, b, out);
}
#endif

static pthread_once_t rs_once = PTHREAD_ONCE_INIT;
static void col_sums_base(const SpMat *X, int64_t r0, int64_t r1, int64_t c0, int64_t c1, KS *ks);
#if defined(__x86_64__) && defined(__GNUC__)
static void col_sums_avx2(const SpMat *X, int64_t r0, int64_t r1, int64_t c0, int64_t c1, KS *ks);
#endif
static void (*col_sums_part)(const SpMat *, int64_t, int64_t, int64_t, int64_t, KS *) = col_sums_base;
static void (*rs_rows)(const SpMat *, const int64_t *, double *) = rs_base;

static void rs_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        rs_rows = rs_avx2;
        col_sums_part = col_sums_avx2;
    }
#endif
}

/* Sums of rows [r0, r1) into out: RS_STREAMS streams of about equal
 * entries + rows. */
static void row_sums(const SpMat *X, int64_t r0, int64_t r1, double *out)
{
    int64_t b[RS_STREAMS + 1];
    row_cuts_range(X, r0, r1, RS_STREAMS, b);
    pthread_once(&rs_once, rs_init);
    rs_rows(X, b, out);
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
    struct ColState *col;   /* column min/max: per column */
    KS *ks;                 /* column sums: per column; blocked: the total, part 0's block, the
                             * later parts' blocks */
    int64_t block_rows;     /* column sums in blocks of rows (sp_col_block_rows), or 0 */
    int64_t nblocks;        /* the blocks of rows */
    int nparts;             /* the parts the blocks are cut into, in order */
} AggCtx;

/* A column's entries seen (min/max: whether a zero is among its cells). */
typedef struct ColState {
    int64_t last;
} ColState;

static void row_agg_part(void *vctx, int part)
{
    const AggCtx *c = vctx;
    const SpMat *X = c->X;
    int64_t r0 = c->cut[part], r1 = c->cut[part + 1];
    if (c->op == SP_SUM || c->op == SP_MEAN) {
        row_sums(X, r0, r1, c->out);
        /* a mean: the sum / cols, or when that is not finite (1e308 +
         * 1e308), the compensated sum of x / cols (kmean_strided's rule) */
        if (c->op == SP_MEAN)
            for (int64_t i = r0; i < r1; i++) {
                c->out[i] /= (double)X->cols;
                if (!isfinite(c->out[i]) && X->cols > 0)
                    c->out[i] = rs_slow(X->vals, X->rowptr[i], X->rowptr[i + 1], (double)X->cols);
            }
        return;
    }
    for (int64_t i = r0; i < r1; i++) {
        double v = c->op == SP_MAX ? -INFINITY : INFINITY;
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            v = agg_minmax(c->op, v, X->vals[p]);
        if (X->rowptr[i + 1] - X->rowptr[i] < X->cols)
            v = agg_minmax(c->op, v, 0.0);
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

/* Columns [c0, c1) of rows [r0, r1): col_ksums' per-column compensated
 * sums of the non-zero cells, rows in order, from (0, 0) in ks[c0..c1)
 * (aggregate.c's dense kernel takes no step for a zero cell either: the
 * same bits). */
static inline __attribute__((always_inline)) void col_sums_body(const SpMat *X, int64_t r0, int64_t r1, int64_t c0,
                                                                int64_t c1, KS *ks)
{
    const int32_t *ci = X->colidx;
    const double *xv = X->vals;
    const int64_t *rp = X->rowptr;
    for (int64_t j = c0; j < c1; j++)
        ks[j] = (KS){0, 0};
    if (c0 == 0 && c1 == X->cols) {
        /* all columns: the entries of rows [r0, r1) in one run (row
         * order, then column order, is their order in memory) */
#pragma GCC unroll 8
        for (int64_t p = rp[r0], end = rp[r1]; p < end; p++) {
            KS *k = ks + ci[p];
            double s = k->s, cc = xv[p] + k->c, t = s + cc, r = cc - (t - s);
            k->s = t;
            k->c = r;
        }
        return;
    }
    for (int64_t i = r0; i < r1; i++) {
        int64_t p = rp[i], end = rp[i + 1];
        if (c0 > 0)
            p = part_start(ci, p, end, c0, X->cols);
        if (c1 < X->cols)
            end = lower_col(ci, p, end, c1);
        for (; p < end; p++) {
            KS *k = ks + ci[p];
            double s = k->s, cc = xv[p] + k->c, t = s + cc, r = cc - (t - s);
            k->s = t;
            k->c = r;
        }
    }
}

/* col_sums_body compiled for the base ISA and for AVX2 (three-operand
 * instructions: no register copies in the loop; the same additions, the
 * same bits), picked at run time. */
static void col_sums_base(const SpMat *X, int64_t r0, int64_t r1, int64_t c0, int64_t c1, KS *ks)
{
    col_sums_body(X, r0, r1, c0, c1, ks);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void col_sums_avx2(const SpMat *X, int64_t r0, int64_t r1, int64_t c0,
                                                          int64_t c1, KS *ks)
{
    col_sums_body(X, r0, r1, c0, c1, ks);
}
#endif

/* tot[j] += block (s[j], c[j]), compensated: col_ksums' sum of the blocks,
 * a block's sum and then its correction. */
static void col_fold(KS *restrict tot, const KS *restrict blk, int64_t C)
{
    for (int64_t j = 0; j < C; j++) {
        kadd_raw(&tot[j], blk[j].s);
        kadd_raw(&tot[j], blk[j].c);
    }
}

/* The blocks of rows a part of a blocked column sum takes: [b0, b1), the
 * first parts the larger (the blocks after part 0's are added up after
 * the parts end, on one thread). */
static int64_t col_part_first_block(int64_t nblocks, int nparts, int part)
{
    return (nblocks * part + nparts - 1) / nparts;
}

static void col_part_blocks(const AggCtx *c, int part, int64_t *b0, int64_t *b1)
{
    *b0 = col_part_first_block(c->nblocks, c->nparts, part);
    *b1 = col_part_first_block(c->nblocks, c->nparts, part + 1);
}

/* Column sums: with block_rows, part p's blocks of rows, all columns, in
 * order; part 0 adds each block into the total as it finishes, using one
 * block's room, and the later parts keep their blocks for sp_col_agg to
 * add after them. Else all rows of columns [cut[part], cut[part+1]).
 * Column min/max: all rows of the part's columns. */
static void col_agg_part(void *vctx, int part)
{
    const AggCtx *c = vctx;
    const SpMat *X = c->X;
    int64_t C = X->cols;
    if ((c->op == SP_SUM || c->op == SP_MEAN) && c->block_rows) {
        int64_t b0, b1, first1;
        col_part_blocks(c, part, &b0, &b1);
        first1 = col_part_first_block(c->nblocks, c->nparts, 1);
        for (int64_t b = b0; b < b1; b++) {
            int64_t r0 = b * c->block_rows, r1 = r0 + c->block_rows < X->rows ? r0 + c->block_rows : X->rows;
            KS *dst = part == 0 ? c->ks + C : c->ks + C * (2 + b - first1);
            col_sums_part(X, r0, r1, 0, C, dst);
            if (part == 0)
                col_fold(c->ks, dst, C);
        }
        return;
    }
    int64_t c0 = c->cut[part], c1 = c->cut[part + 1];
    if (c->op == SP_SUM || c->op == SP_MEAN) {
        col_sums_part(X, 0, X->rows, c0, c1, c->ks);
        for (int64_t j = c0; j < c1; j++)
            c->out[j] = c->ks[j].s;     /* not finite: sp_col_agg re-sums it plainly */
        return;
    }
    ColState *st = c->col;
    for (int64_t j = c0; j < c1; j++) {
        st[j].last = 0;
        c->out[j] = c->op == SP_MAX ? -INFINITY : INFINITY;
    }
    for (int64_t i = 0; i < X->rows; i++) {
        int64_t p = X->rowptr[i], end = X->rowptr[i + 1];
        if (c0 > 0)
            p = part_start(X->colidx, p, end, c0, X->cols);
        for (; p < end && X->colidx[p] < c1; p++) {
            int64_t j = X->colidx[p];
            c->out[j] = agg_minmax(c->op, c->out[j], X->vals[p]);
            st[j].last++;
        }
    }
    for (int64_t j = c0; j < c1; j++)
        if (st[j].last < X->rows)
            c->out[j] = agg_minmax(c->op, c->out[j], 0.0);
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
    bool sums = op == SP_SUM || op == SP_MEAN;
    int64_t br = sp_col_block_rows(X->rows, C), nb = sums && X->rows > br ? (X->rows + br - 1) / br : 1;
    int parts = n_col_parts(I, X->nnz + X->rows);
    int bparts = nb < parts ? (int)nb : parts;
    /* blocked: the total, part 0's block, and the blocks of parts 1.. (from first1 on) */
    int64_t first1 = col_part_first_block(nb, bparts, 1);
    int64_t nks = !sums ? 0 : nb > 1 ? 2 + nb - first1 : 1;
    ColState *col = sums ? NULL : malloc((size_t)C * sizeof *col);
    KS *ks = sums ? malloc((size_t)C * (size_t)nks * sizeof *ks) : NULL;
    if (sums ? !ks : !col)
        return false;
    if (parts > C)
        parts = (int)C;
    int64_t cut[SP_MAX_PARTS + 1];
    col_cuts(C, parts, cut);
    AggCtx ctx = {.X = X, .op = op, .out = out, .cut = cut, .col = col, .ks = ks};
    pthread_once(&rs_once, rs_init);
    if (nb > 1) {
        /* the blocks of rows on the threads, then per column the blocks'
         * sums and corrections added in order, compensated (as
         * aggregate.c's col_ksums does) */
        ctx.block_rows = br;
        ctx.nblocks = nb;
        ctx.nparts = bparts;
        for (int64_t j = 0; j < C; j++)
            ks[j] = (KS){0, 0};
        pool_run(I, col_agg_part, &ctx, bparts);
        for (int64_t b = first1; b < nb; b++)
            col_fold(ks, ks + C * (2 + b - first1), C);
        for (int64_t j = 0; j < C; j++)
            out[j] = ks[j].s;
    } else {
        pool_run(I, col_agg_part, &ctx, parts);
    }
    free(col);
    free(ks);
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

/* X * s (or s * X) with |s| >= 1: no non-zero times s rounds to zero (the
 * product's magnitude is at least the operand's; an overflow is Inf), so
 * Z has X's structure: the index arrays are shared with X (sp_new_like) or
 * else copied, the values scaled, no squeeze. The same products as
 * map_part's, so the same bits. */
static void scale_part(void *vctx, int part)
{
    const MapCtx *c = vctx;
    const SpMat *X = c->X;
    SpMat *Z = c->Z;
    int64_t p0 = X->rowptr[c->cut[part]], p1 = X->rowptr[c->cut[part + 1]];
    double s = c->s;
    if (p1 == p0)
        return;                 /* the arrays may be NULL (no entries at all) */
    if (Z->colidx != X->colidx)
        memcpy(Z->colidx + p0, X->colidx + p0, (size_t)(p1 - p0) * sizeof *Z->colidx);
    const double *xv = X->vals;
    double *zv = Z->vals;
    for (int64_t p = p0; p < p1; p++)
        zv[p] = xv[p] * s;
}

static SpMat *map(const Interp *I, const SpMat *X, const MapCtx *proto)
{
    bool scale = proto->kind == MAP_SCALAR && proto->op == OP_MUL && fabs(proto->s) >= 1;
    SpMat *Z = scale ? sp_new_like(X) : NULL;
    if (!Z)
        Z = sp_new(X->rows, X->cols, X->nnz);
    if (!Z)
        return NULL;
    MapCtx ctx = *proto;
    ctx.X = X;
    ctx.Z = Z;
    int parts = n_parts(I, X->nnz + X->rows);
    int64_t cut[SP_MAX_PARTS + 1];
    row_cuts(X, parts, cut);
    ctx.cut = cut;
    if (scale) {
        pool_run(I, scale_part, &ctx, parts);
        if (Z->rowptr != X->rowptr)
            memcpy(Z->rowptr, X->rowptr, (size_t)(X->rows + 1) * sizeof *Z->rowptr);
        Z->nnz = X->nnz;
        return Z;
    }
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
