/* SPDX-License-Identifier: Apache-2.0
 * DNN kernels on row-major double arrays (see dnn_kernels.h for the layout
 * and the formula of each). Convolutions run on BLAS: a batch of images is
 * unrolled by im2col into a (C*R*S) x (B*P*Q) matrix so that one dgemm of
 * large n does the arithmetic; col2im folds the columns back for the data
 * gradient. Only the dgemm is multithreaded (by BLAS); the memory-bound
 * loops around it (im2col, col2im, the copies between per-image and batched
 * layouts, pooling) run on the calling thread (see 'Threads' below for why).
 * No global state: scratch is malloc'd per call and freed on every path, so
 * threads may call concurrently. */
#include "dnn_kernels.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"

/* Aim for an im2col buffer of about this many bytes per dgemm (about a
 * core's L2): large enough that dgemm sees hundreds of columns, small enough
 * that the columns im2col writes are still cached when dgemm packs them. */
#define DNN_COLS_TARGET_BYTES ((int64_t)1 << 20)
/* Batching images costs a copy of every dout/out cell (F*P*Q per image)
 * against 2*C*R*S flops per cell in the dgemm, so it pays only for deep
 * filters. Measured on the LeNet layers: with C*R*S = 25 one image per dgemm
 * was 5-40% faster (the copies cost as much as the dgemm). With C*R*S = 800
 * (1.25 MB of columns per image) three images per dgemm once beat one by
 * ~15%, but on a 2-core Zen 3 (1 MB L2) one image was 5-10% faster than
 * three, so the target above now gives one. Below this, always one image. */
#define DNN_BATCH_MIN_CRS 128
/* Threads. On the 2-vCPU dev VM, splitting im2col/col2im over 2 threads of
 * our own (tried and measured) left conv2d's time unchanged when the machine
 * was idle, and made these stages 2-8x slower whenever another process ran
 * (each stage ends in a join that waits for the thread that got no core).
 * On many cores the serial stages would weigh more next to a parallel
 * dgemm, but starting threads per stage (tens of microseconds each, dozens
 * of stages per call) would eat much of the gain: a persistent pool would
 * be needed first. */

bool dnn_geom_output(DnnGeom *g)
{
    int64_t hp = g->H + 2 * g->ph - g->R, wp = g->W + 2 * g->pw - g->S;
    if (hp < 0 || wp < 0) {
        g->P = g->Q = 0;
        return false;
    }
    g->P = hp / g->sh + 1;
    g->Q = wp / g->sw + 1;
    return true;
}

/* ---- im2col / col2im ----
 * Two ways to unroll a channel. The usual one first copies the channel into
 * a zero-bordered plane of (H+2ph) x (W+2pw) cells, so that every im2col row
 * is a plain strided copy out of it (and every col2im row a plain add into
 * it): no bounds per cell, and runs short enough (Q cells) that an inlined
 * loop beats a memcpy call. When that plane would be much larger than the
 * channel's share of the im2col matrix (huge padding next to huge strides,
 * which leave most of it unread), the clipped loops below work on the image
 * itself instead. */

/* Short runs (Q cells, 14 or 28 in LeNet) copied or added two cells at a
 * time: at -O2 gcc leaves these loops scalar (its cheap cost model will not
 * vectorise a loop of unknown count), and a memcpy call per run costs more
 * than the copy. The vector type is gcc's generic one (SSE2 on x86-64);
 * memcpy moves it in and out unaligned. gcc would turn the copy loop back
 * into a memcpy call per run (-ftree-loop-distribute-patterns, on at -O2):
 * DNN_NO_MEMCPY_IDIOM keeps it a loop where copy_run is used (about 1 ms
 * of conv2's 36 per batch of 64). */
typedef double DnnV2 __attribute__((vector_size(16)));
#if defined(__GNUC__) && !defined(__clang__)
#define DNN_NO_MEMCPY_IDIOM __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define DNN_NO_MEMCPY_IDIOM
#endif

/* d[i] = s[i] for i < n */
static inline void copy_run(double *restrict d, const double *restrict s, int64_t n)
{
    int64_t i = 0;
    for (; i + 2 <= n; i += 2)
        memcpy(d + i, s + i, sizeof(DnnV2));
    if (i < n)
        d[i] = s[i];
}

/* d[i] += s[i] for i < n */
static inline void add_run(double *restrict d, const double *restrict s, int64_t n)
{
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        DnnV2 a, b;
        memcpy(&a, d + i, sizeof a);
        memcpy(&b, s + i, sizeof b);
        a += b;
        memcpy(d + i, &a, sizeof a);
    }
    if (i < n)
        d[i] += s[i];
}

/* Cells of the zero-bordered plane, or -1 when it is not worth building. */
static int64_t padded_cells(const DnnGeom *g)
{
    int64_t hp = g->H + 2 * g->ph, wp = g->W + 2 * g->pw, cells, share;
    if (__builtin_mul_overflow(hp, wp, &cells) ||
        __builtin_mul_overflow(g->R * g->S, g->P * g->Q, &share) || cells > share + 4096)
        return -1;
    return cells;
}

/* Copies plane (H x W) into the interior of pad ((H+2ph) x (W+2pw)); the
 * border of pad is zero and stays so. */
static void pad_fill(const DnnGeom *g, const double *plane, double *pad)
{
    const int64_t wp = g->W + 2 * g->pw;
    for (int64_t h = 0; h < g->H; h++)
        memcpy(pad + (h + g->ph) * wp + g->pw, plane + h * g->W, (size_t)g->W * sizeof(double));
}

/* im2col of one channel out of its padded plane into the R*S rows of that
 * channel ('rows', ld apart):
 *     rows[r*S + s, p*Q + q] = pad[p*sh + r, q*sw + s]. */
DNN_NO_MEMCPY_IDIOM
static void im2col_padded(const DnnGeom *g, const double *pad, double *rows, int64_t ld)
{
    const int64_t P = g->P, Q = g->Q, sw = g->sw, wp = g->W + 2 * g->pw, step = g->sh * wp;
    for (int64_t r = 0; r < g->R; r++)
        for (int64_t s = 0; s < g->S; s++) {
            double *restrict dst = rows + (r * g->S + s) * ld;
            const double *restrict src = pad + r * wp + s;
            if (sw == 1) {
                for (int64_t p = 0; p < P; p++, dst += Q, src += step)
                    copy_run(dst, src, Q);
            } else {
                for (int64_t p = 0; p < P; p++, dst += Q, src += step)
                    for (int64_t q = 0; q < Q; q++)
                        dst[q] = src[q * sw];
            }
        }
}

/* d[i] += s[i], then s[i] = 0, for i < n */
static inline void add_run_clear(double *restrict d, double *restrict s, int64_t n)
{
    static const DnnV2 zero;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        DnnV2 a, b;
        memcpy(&a, d + i, sizeof a);
        memcpy(&b, s + i, sizeof b);
        a += b;
        memcpy(d + i, &a, sizeof a);
        memcpy(s + i, &zero, sizeof zero);
    }
    if (i < n) {
        d[i] += s[i];
        s[i] = 0.0;
    }
}

/* col2im of one channel into its padded plane, which the caller zeroed:
 *     pad[p*sh + r, q*sw + s] += rows[r*S + s, p*Q + q]
 * taken in (r, s, p, q) order, the order of the clipped loops below. Every
 * cell of the channel's rows (R*S rows of P*Q cells, ld apart) is read once
 * and set to zero behind the read: the next dgemm into these rows then adds
 * to zero (beta = 1) and BLAS skips its own zeroing pass over them. */
DNN_NO_MEMCPY_IDIOM
static void col2im_padded(const DnnGeom *g, double *rows, int64_t ld, double *pad)
{
    const int64_t P = g->P, Q = g->Q, sw = g->sw, wp = g->W + 2 * g->pw, step = g->sh * wp;
    for (int64_t r = 0; r < g->R; r++)
        for (int64_t s = 0; s < g->S; s++) {
            double *restrict src = rows + (r * g->S + s) * ld;
            double *restrict dst = pad + r * wp + s;
            if (sw == 1) {
                for (int64_t p = 0; p < P; p++, src += Q, dst += step)
                    add_run_clear(dst, src, Q);
            } else {
                for (int64_t p = 0; p < P; p++, src += Q, dst += step)
                    for (int64_t q = 0; q < Q; q++) {
                        dst[q * sw] += src[q];
                        src[q] = 0.0;
                    }
            }
        }
}

/* The clipped loops: bounds worked out per filter tap (tap_range). */


/* Outputs o in [*lo, *hi) read an in-image input cell for the filter tap
 * 'tap': 0 <= o*stride + tap - pad < size. Everything outside reads padding. */
static void tap_range(int64_t tap, int64_t pad, int64_t stride, int64_t size, int64_t nout,
                      int64_t *lo, int64_t *hi)
{
    int64_t off = tap - pad;    /* input index read by output 0 */
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = size - 1 - off < 0 ? 0 : (size - 1 - off) / stride + 1;
    if (h > nout)
        h = nout;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* im2col of channel c of one image x (C x H x W) into the rows of 'cols'
 * (rows ld apart) that belong to c:
 *     cols[(c*R + r)*S + s, p*Q + q] = Xpad[c, p*sh+r-ph, q*sw+s-pw]. */
static void im2col_channel(const DnnGeom *g, const double *x, int64_t c, double *cols, int64_t ld)
{
    const int64_t H = g->H, W = g->W, P = g->P, Q = g->Q;
    const double *plane = x + c * H * W;
    for (int64_t r = 0; r < g->R; r++) {
        int64_t plo, phi;
        tap_range(r, g->ph, g->sh, H, P, &plo, &phi);
        for (int64_t s = 0; s < g->S; s++) {
            double *row = cols + ((c * g->R + r) * g->S + s) * ld;
            int64_t qlo, qhi;
            tap_range(s, g->pw, g->sw, W, Q, &qlo, &qhi);
            memset(row, 0, (size_t)(plo * Q) * sizeof(double));
            for (int64_t p = plo; p < phi; p++) {
                double *dst = row + p * Q;
                /* src[q*sw] is the input cell for output q (q in range) */
                const double *src = plane + (p * g->sh + r - g->ph) * W + (s - g->pw);
                for (int64_t q = 0; q < qlo; q++)
                    dst[q] = 0.0;
                if (g->sw == 1) {
                    memcpy(dst + qlo, src + qlo, (size_t)(qhi - qlo) * sizeof(double));
                } else {
                    for (int64_t q = qlo; q < qhi; q++)
                        dst[q] = src[q * g->sw];
                }
                for (int64_t q = qhi; q < Q; q++)
                    dst[q] = 0.0;
            }
            memset(row + phi * Q, 0, (size_t)((P - phi) * Q) * sizeof(double));
        }
    }
}


/* col2im of channel c, accumulating into plane = dX[c] (H x W):
 *     plane[p*sh+r-ph, q*sw+s-pw] += cols[(c*R+r)*S+s, p*Q+q]
 * for every in-image target; columns that hit padding are dropped. */
static void col2im_channel(const DnnGeom *g, const double *cols, int64_t ld, int64_t c,
                           double *plane)
{
    const int64_t H = g->H, W = g->W, P = g->P, Q = g->Q;
    for (int64_t r = 0; r < g->R; r++) {
        int64_t plo, phi;
        tap_range(r, g->ph, g->sh, H, P, &plo, &phi);
        for (int64_t s = 0; s < g->S; s++) {
            const double *row = cols + ((c * g->R + r) * g->S + s) * ld;
            int64_t qlo, qhi;
            tap_range(s, g->pw, g->sw, W, Q, &qlo, &qhi);
            for (int64_t p = plo; p < phi; p++) {
                const double *src = row + p * Q;
                double *dst = plane + (p * g->sh + r - g->ph) * W + (s - g->pw);
                if (g->sw == 1) {
                    add_run(dst + qlo, src + qlo, qhi - qlo);
                } else {
                    for (int64_t q = qlo; q < qhi; q++)
                        dst[q * g->sw] += src[q];
                }
            }
        }
    }
}

/* ---- the three convolutions: one batched loop ----
 * For each batch of b images: prepare it (im2col, and/or gather the dout
 * rows into one F x (b*PQ) matrix whose columns line up with the im2col
 * columns), one dgemm on the whole batch, then finish it (scatter the
 * product into the per-image output rows, or col2im). With b == 1 the
 * per-image rows already have the batched layout and no copy is made. */

typedef enum ConvOp { CONV_FWD, CONV_BWF, CONV_BWD } ConvOp;

typedef struct Conv {
    const DnnGeom *g;
    ConvOp op;
    const double *X, *Wt, *dout;
    double *res;            /* out (FWD), dW (BWF) or dX (BWD) */
    double *cols;           /* CRS x (b*PQ) im2col matrix */
    double *buf;            /* F x (b*PQ): product (FWD) or gathered dout (BWF, BWD); b > 1 only */
    double *pad;            /* one zero-bordered channel plane, or NULL for the clipped loops */
    bool cols_zero;         /* BWD: col2im left every cell of cols that a batch uses at 0 */
} Conv;

/* Before the dgemm of images n0 .. n0+b-1. */
static void conv_prepare(const Conv *cv, int64_t n0, int64_t b)
{
    const DnnGeom *g = cv->g;
    const int64_t CHW = g->C * g->H * g->W, PQ = g->P * g->Q, FPQ = g->F * PQ, ld = b * PQ;
    const int64_t HW = g->H * g->W, RS = g->R * g->S;
    if (cv->op != CONV_BWD)
        for (int64_t i = 0; i < b; i++)
            for (int64_t c = 0; c < g->C; c++) {
                const double *x = cv->X + (n0 + i) * CHW;
                if (cv->pad) {
                    pad_fill(g, x + c * HW, cv->pad);
                    im2col_padded(g, cv->pad, cv->cols + c * RS * ld + i * PQ, ld);
                } else {
                    im2col_channel(g, x, c, cv->cols + i * PQ, ld);
                }
            }
    if (cv->op != CONV_FWD && b > 1)
        for (int64_t i = 0; i < b; i++)
            for (int64_t f = 0; f < g->F; f++)
                memcpy(cv->buf + f * ld + i * PQ, cv->dout + (n0 + i) * FPQ + f * PQ,
                       (size_t)PQ * sizeof(double));
}

/* The dgemm of images n0 .. n0+b-1. */
static void conv_gemm(const Conv *cv, int64_t n0, int64_t b)
{
    const DnnGeom *g = cv->g;
    const int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, FPQ = g->F * PQ, ld = b * PQ;
    /* one image's dout row already is F x PQ with leading dimension PQ */
    const double *d = b > 1 ? cv->buf : cv->dout ? cv->dout + n0 * FPQ : NULL;   /* forward: no dout (NULL + 0 is UB) */
    switch (cv->op) {
    case CONV_FWD:  /* out_B (F x bPQ) = W (F x CRS) * cols (CRS x bPQ); one image: straight into out */
        if (b == 1)
            blas_dgemm(false, false, g->F, PQ, CRS, 1.0, cv->Wt, CRS, cv->cols, ld, 0.0, cv->res + n0 * FPQ, PQ);
        else
            blas_dgemm(false, false, g->F, ld, CRS, 1.0, cv->Wt, CRS, cv->cols, ld, 0.0, cv->buf, ld);
        break;
    case CONV_BWF:  /* dW (+)= dout_B (F x bPQ) * cols^T; the first batch overwrites */
        blas_dgemm(false, true, g->F, CRS, ld, 1.0, d, ld, cv->cols, ld, n0 == 0 ? 0.0 : 1.0, cv->res, CRS);
        break;
    case CONV_BWD:  /* cols (CRS x bPQ) = W^T (CRS x F) * dout_B (F x bPQ), added to zeros once
                     * col2im_padded has cleared them (0 + x is x: the same bits as beta = 0) */
        blas_dgemm(true, false, CRS, ld, g->F, 1.0, cv->Wt, CRS, d, ld, cv->cols_zero ? 1.0 : 0.0,
                   cv->cols, ld);
        break;
    }
}

/* After the dgemm of images n0 .. n0+b-1. */
static void conv_finish(Conv *cv, int64_t n0, int64_t b)
{
    const DnnGeom *g = cv->g;
    const int64_t HW = g->H * g->W, CHW = g->C * HW, PQ = g->P * g->Q, FPQ = g->F * PQ, ld = b * PQ;
    const int64_t RS = g->R * g->S;
    if (cv->op == CONV_FWD && b > 1)
        for (int64_t i = 0; i < b; i++)
            for (int64_t f = 0; f < g->F; f++)
                memcpy(cv->res + (n0 + i) * FPQ + f * PQ, cv->buf + f * ld + i * PQ,
                       (size_t)PQ * sizeof(double));
    if (cv->op == CONV_BWD)
        for (int64_t i = 0; i < b; i++)
            for (int64_t c = 0; c < g->C; c++) {
                double *plane = cv->res + (n0 + i) * CHW + c * HW;
                if (cv->pad) {
                    const int64_t wp = g->W + 2 * g->pw;
                    memset(cv->pad, 0, (size_t)((g->H + 2 * g->ph) * wp) * sizeof(double));
                    col2im_padded(g, cv->cols + c * RS * ld + i * PQ, ld, cv->pad);
                    for (int64_t h = 0; h < g->H; h++)
                        memcpy(plane + h * g->W, cv->pad + (h + g->ph) * wp + g->pw,
                               (size_t)g->W * sizeof(double));
                } else {
                    memset(plane, 0, (size_t)HW * sizeof(double));
                    col2im_channel(g, cv->cols + i * PQ, ld, c, plane);
                }
            }
    /* the padded path cleared the batch's CRS x bPQ cells, a prefix of cols
     * that holds every later (as large or shorter) batch */
    if (cv->op == CONV_BWD)
        cv->cols_zero = cv->pad != NULL;
}

static int conv_run(Conv *cv)
{
    const DnnGeom *g = cv->g;
    const int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q;
    if (g->N == 0) {
        if (cv->op == CONV_BWF)
            memset(cv->res, 0, (size_t)(g->F * CRS) * sizeof(double));
        return 0;
    }
    /* the im2col matrix of one image must be addressable */
    int64_t per;
    if (__builtin_mul_overflow(CRS, PQ, &per) || per > INT64_MAX / 16)
        return -1;
    /* images per dgemm: the caller's choice, else as many as fit the target */
    int64_t nb = g->batch > 0 ? g->batch
                 : CRS < DNN_BATCH_MIN_CRS ? 1
                 : DNN_COLS_TARGET_BYTES / (per * (int64_t)sizeof(double));
    nb = nb > g->N ? g->N : nb < 1 ? 1 : nb;
    if (nb > (INT64_MAX / 16) / per)
        nb = 1;
    cv->cols = malloc((size_t)(per * nb) * sizeof(double));
    cv->buf = nb > 1 ? malloc((size_t)(g->F * nb * PQ) * sizeof(double)) : NULL;
    int64_t cells = padded_cells(g);
    cv->pad = cells >= 0 ? calloc((size_t)cells, sizeof(double)) : NULL;
    if (!cv->cols || (nb > 1 && !cv->buf) || (cells >= 0 && !cv->pad)) {
        free(cv->cols);
        free(cv->buf);
        free(cv->pad);
        return -1;
    }
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
        int64_t b = g->N - n0 < nb ? g->N - n0 : nb;
        conv_prepare(cv, n0, b);
        conv_gemm(cv, n0, b);
        conv_finish(cv, n0, b);
    }
    free(cv->cols);
    free(cv->buf);
    free(cv->pad);
    return 0;
}

/* ---- Winograd F(4x4, 5x5) ----
 * A stride-1 5x5 convolution computed on 4x4 output tiles: each tile needs
 * an 8x8 input tile, and in the transformed domain one product per point, 64
 * per tile instead of 4*4*25 = 400: the dgemms do 0.16 times im2col's flops
 * (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 * With the points 0, 1, -1, 2, -2, 1/2, -1/2 and infinity, a correlation of
 * 4 outputs y[i] = sum_k d[i+k] g[k] is y = A^T ((G g) .* (B^T d)), and in
 * 2-D
 *     Y = A^T ((G g G^T) .* (B^T d B)) A,
 * A^T (4x8) evaluating the output polynomial at the points (row i: p^i; the
 * point at infinity feeds the last output only), G (8x5) evaluating the
 * filter, B^T (8x8) the transpose of the interpolation at the points. Each
 * point's row of B^T is scaled to small integers, and its row of G by the
 * inverse:
 *     B^T = [4 0 -21 0 21 0 -4 0;   0 -4 -4 17 17 -4 -4 0;
 *            0 4 -4 -17 17 4 -4 0;  0 2 1 -10 -5 8 4 0;
 *            0 -2 1 10 -5 -8 4 0;   0 4 8 -5 -10 1 2 0;
 *            0 -4 8 5 -10 -1 2 0;   0 -4 0 21 0 -21 0 4]
 *     G row k = (1, p, p^2, p^3, p^4) / s_k, s = 4, 18, 18, 360, 360,
 *               45/16, 45/16 (and (0 0 0 0 1/4) at infinity)
 * Summing over the C input channels is, point by point, a product of an
 * F x C matrix (transformed filters) by a C x T one (transformed tiles):
 * 64 dgemms per batch of images. Against F(2x2, 5x5) (6x6 tiles, 36
 * points per 4 outputs) it moves 4 transformed cells per output cell
 * instead of 9, and does 0.44 times the point products, for planes whose
 * sides are multiples of 4 (a 14x14 plane: 16 tiles of 64 points against
 * 49 of 36, 0.58 times).
 * The data gradient of a 5x5 stride-1 convolution with padding p is a 5x5
 * stride-1 correlation of dout with the filters turned by 180 degrees (and
 * C, F swapped), padding 4 - p: the same code. The filter gradient
 * dW[r,s] = sum_{p,q} dout[p,q] Xpad[p+r,q+s] is, tile by tile, F(5x5, 4x4)
 * (5 outputs, the 4x4 dout tile as the filter) on the same 8x8 input tiles
 * with the same B^T and points: G4 (8x4) evaluates the dout tile, A5^T
 * (5x8) the outputs; its sum over tiles is again a dgemm per point, and the
 * output transform runs once at the end.
 * In double precision the transforms lose some bits (the points 2 and 1/2
 * scale terms by up to 2^6 before they cancel): the error stays within
 * about 1e-14 of the sum of |terms| (tests/unit/test_dnn.c holds it to
 * 1e-13). */

/* Winograd pays off when the dgemms dominate the transforms, that is for
 * deep layers: below these channel counts im2col keeps the call. */
#define WG_MIN_CHANNELS 8
/* Aim for transformed tiles (input and output) of about this many bytes per
 * batch of images: T = tiles per dgemm should be a few hundred, and two
 * workers' batches should sit in L3 beside their activations. LeNet's conv2
 * (786 KB of tiles an image): 3 images a batch took 44.4-46.7 ms for its
 * three passes, 4 images 47.0-55.3 (4 interleaved rounds, load 6). */
#define WG_TARGET_BYTES ((int64_t)5 << 19)

bool dnn_winograd_fits(const DnnGeom *g)
{
    return g->R == 5 && g->S == 5 && g->sh == 1 && g->sw == 1 && g->ph <= 4 && g->pw <= 4;
}

static bool wg_use(const DnnGeom *g)
{
    if (g->winograd < 0 || !dnn_winograd_fits(g))
        return false;
    /* one image's transformed tiles (64 per 4x4 output tile and channel)
     * must be addressable with room to spare */
    int64_t tiles, per;
    if (__builtin_mul_overflow((g->H + 3) / 4 + 2, (g->W + 3) / 4 + 2, &tiles) ||
        __builtin_mul_overflow(tiles, 64 * (g->C + g->F), &per) || per > INT64_MAX / 64)
        return false;
    return g->winograd > 0 || (g->C >= WG_MIN_CHANNELS && g->F >= WG_MIN_CHANNELS);
}

/* o[k*os] = (A5^T m)[k], k < 5, for the 8 values m[k*s]: the output
 * transform of F(5, 4) */
static inline void wg_at5(const double *m, int64_t s, double *o, int64_t os)
{
    double a = m[s] + m[2 * s], b = m[s] - m[2 * s], c = m[3 * s] + m[4 * s], d = m[3 * s] - m[4 * s];
    double e = m[5 * s] + m[6 * s], f = m[5 * s] - m[6 * s];
    o[0] = m[0] + a + c + e;
    o[os] = b + 2.0 * d + 0.5 * f;
    o[2 * os] = a + 4.0 * c + 0.25 * e;
    o[3 * os] = b + 8.0 * d + 0.125 * f;
    o[4 * os] = a + 16.0 * c + 0.0625 * e + m[7 * s];
}

/* G of F(4, 5): row k holds the powers of point k over s_k (see above) */
static const double wg_G[8][5] = {
    {1.0 / 4, 0, 0, 0, 0},
    {1.0 / 18, 1.0 / 18, 1.0 / 18, 1.0 / 18, 1.0 / 18},
    {1.0 / 18, -1.0 / 18, 1.0 / 18, -1.0 / 18, 1.0 / 18},
    {1.0 / 360, 2.0 / 360, 4.0 / 360, 8.0 / 360, 16.0 / 360},
    {1.0 / 360, -2.0 / 360, 4.0 / 360, -8.0 / 360, 16.0 / 360},
    {16.0 / 45, 8.0 / 45, 4.0 / 45, 2.0 / 45, 1.0 / 45},
    {16.0 / 45, -8.0 / 45, 4.0 / 45, -2.0 / 45, 1.0 / 45},
    {0, 0, 0, 0, 1.0 / 4},
};

/* U[xi][o][i] = (G g G^T)[xi] for the 5x5 filter g of output channel o and
 * input channel i, U holding 64 planes of O x I. Forward: o = f, i = c,
 * g = Wt[f, c]; data gradient ('turn'): o = c, i = f, g = Wt[f, c] turned
 * by 180 degrees. */
static void wg_filters(const DnnGeom *g, const double *Wt, bool turn, double *U)
{
    const int64_t F = g->F, C = g->C, O = turn ? C : F, I = turn ? F : C;
    for (int64_t f = 0; f < F; f++)
        for (int64_t c = 0; c < C; c++) {
            const double *w = Wt + (f * C + c) * 25;
            double k[25], t[8][5];
            for (int64_t i = 0; i < 25; i++)
                k[i] = turn ? w[24 - i] : w[i];
            for (int64_t a = 0; a < 8; a++)      /* t = G k (8x5) */
                for (int64_t s = 0; s < 5; s++) {
                    double acc = 0.0;
                    for (int64_t r = 0; r < 5; r++)
                        acc += wg_G[a][r] * k[r * 5 + s];
                    t[a][s] = acc;
                }
            const int64_t o = turn ? c : f, i = turn ? f : c;
            for (int64_t a = 0; a < 8; a++)      /* U = t G^T (8x8) */
                for (int64_t b = 0; b < 8; b++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < 5; s++)
                        acc += t[a][s] * wg_G[b][s];
                    U[(a * 8 + b) * O * I + o * I + i] = acc;
                }
        }
}

/* The tile transforms run on WG_L tiles at once, one per vector lane (the
 * tiles of an image are contiguous in V, M and D, so the lanes load and
 * store side by side). The input and dout transforms take WG_L tiles of one
 * tile row, read from a copy of the plane whose rows hold the columns
 * 0, 4, 8, .., then 1, 5, 9, .., then 2, .. and 3, .. (four phases): tile tx
 * starts at column 4tx, so column 4tx+j of the lanes' tiles is one plain
 * vector load at tx + j/4 of phase j%4, where the lanes would otherwise be
 * gathered cell by cell. The vector is gcc's generic one: the base build
 * splits it into SSE2 halves, the AVX2 copies below (picked at run time, as
 * in runtime/fuse.c) use it whole. */
#define WG_L 4
typedef double WgV __attribute__((vector_size(WG_L * sizeof(double))));

#define WG_INLINE static inline __attribute__((always_inline))

/* Unaligned vector load and store through a type that may alias double
 * (as the intrinsics' own unaligned types); macros, as a vector passed by
 * value would change the base build's ABI, which gcc warns about */
typedef double WgVu __attribute__((vector_size(WG_L * sizeof(double)), aligned(sizeof(double)), may_alias));
#define WG_LD(v, p) ((v) = *(const WgVu *)(p))
#define WG_ST(p, v) (*(WgVu *)(p) = (v))
/* the same for half a vector */
typedef double WgV2u __attribute__((vector_size(WG_L / 2 * sizeof(double)), aligned(sizeof(double)), may_alias));
#define WG_ST2(p, v) (*(WgV2u *)(p) = (v))

/* o[j][l] = v[l][j]: four vectors transposed. __builtin_shufflevector:
 * GCC 12 and clang (the fuzz build) both have it; GCC's __builtin_shuffle
 * is GCC's alone. */
WG_INLINE void wg_transpose4(const WgV *v, WgV *o)
{
    _Static_assert(WG_L == 4, "the transpose is written for 4 lanes");
    WgV t0 = __builtin_shufflevector(v[0], v[1], 0, 4, 1, 5), t1 = __builtin_shufflevector(v[2], v[3], 0, 4, 1, 5);
    WgV t2 = __builtin_shufflevector(v[0], v[1], 2, 6, 3, 7), t3 = __builtin_shufflevector(v[2], v[3], 2, 6, 3, 7);
    o[0] = __builtin_shufflevector(t0, t1, 0, 1, 4, 5);
    o[1] = __builtin_shufflevector(t0, t1, 2, 3, 6, 7);
    o[2] = __builtin_shufflevector(t2, t3, 0, 1, 4, 5);
    o[3] = __builtin_shufflevector(t2, t3, 2, 3, 6, 7);
}

/* Stores the 64 vectors v[k] at o[k*ldxi]: whole when 'full', else their
 * first n lanes. */
WG_INLINE void wg_store64(const WgV *v, bool full, int n, double *o, int64_t ldxi)
{
    if (full) {
        for (int k = 0; k < 64; k++)
            WG_ST(o + k * ldxi, v[k]);
    } else {
        for (int k = 0; k < 64; k++)
            for (int l = 0; l < n; l++)
                o[k * ldxi + l] = v[k][l];
    }
}

/* o[k*os] = (B^T d)[k] for the 8 vectors d[k*s]: the rows of B^T pair up
 * as p + q and p - q (points +-1, +-2, +-1/2) */
WG_INLINE void wg_btv(const WgV *d, int s, WgV *o, int os)
{
    WgV d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s], d6 = d[6 * s],
        d7 = d[7 * s];
    WgV p, q;
    o[0] = 4.0 * (d0 - d6) + 21.0 * (d4 - d2);
    p = 17.0 * d4 - 4.0 * (d2 + d6);
    q = 17.0 * d3 - 4.0 * (d1 + d5);
    o[os] = p + q;
    o[2 * os] = p - q;
    p = d2 - 5.0 * d4 + 4.0 * d6;
    q = 2.0 * d1 - 10.0 * d3 + 8.0 * d5;
    o[3 * os] = p + q;
    o[4 * os] = p - q;
    p = 8.0 * d2 - 10.0 * d4 + 2.0 * d6;
    q = 4.0 * d1 - 5.0 * d3 + d5;
    o[5 * os] = p + q;
    o[6 * os] = p - q;
    o[7 * os] = 4.0 * (d7 - d1) + 21.0 * (d3 - d5);
}

/* o[k*os] = (A^T m)[k], k < 4, for the 8 vectors m[k*s] */
WG_INLINE void wg_at4v(const WgV *m, int s, WgV *o, int os)
{
    WgV a = m[s] + m[2 * s], b = m[s] - m[2 * s], c = m[3 * s] + m[4 * s], d = m[3 * s] - m[4 * s];
    WgV e = m[5 * s] + m[6 * s], f = m[5 * s] - m[6 * s];
    o[0] = m[0] + a + c + e;
    o[os] = b + 2.0 * d + 0.5 * f;
    o[2 * os] = a + 4.0 * c + 0.25 * e;
    o[3 * os] = b + 8.0 * d + 0.125 * f + m[7 * s];
}

/* o[k*os] = (G4 g)[k], k < 8, for the 4 vectors g[k*s]: G4 is G for a
 * 4-tap filter (the dout tile of the filter gradient) */
WG_INLINE void wg_g4v(const WgV *g, int s, WgV *o, int os)
{
    WgV g0 = g[0], g1 = g[s], g2 = g[2 * s], g3 = g[3 * s];
    WgV p = g0 + g2, q = g1 + g3;
    o[0] = 0.25 * g0;
    o[os] = (1.0 / 18) * (p + q);
    o[2 * os] = (1.0 / 18) * (p - q);
    p = g0 + 4.0 * g2;
    q = 2.0 * g1 + 8.0 * g3;
    o[3 * os] = (1.0 / 360) * (p + q);
    o[4 * os] = (1.0 / 360) * (p - q);
    p = 16.0 * g0 + 4.0 * g2;
    q = 8.0 * g1 + 2.0 * g3;
    o[5 * os] = (1.0 / 45) * (p + q);
    o[6 * os] = (1.0 / 45) * (p - q);
    o[7 * os] = 0.25 * g3;
}

/* Input tiles (ty, tx0 .. tx0+WG_L-1) of the split padded plane 'pe'
 * (rows of wp cells: four phases of wp/4) into o[k*ldxi + lane], k < 64;
 * see wg_store64 for 'full' and n. */
WG_INLINE void wg_input_body(const double *pe, int64_t wp, int64_t ty, int64_t tx0, bool full, int n, double *o,
                             int64_t ldxi)
{
    const int64_t qw = wp / 4;
    WgV d[64], t[64], v[64];
    for (int i = 0; i < 8; i++) {
        const double *row = pe + (4 * ty + i) * wp + tx0;
        for (int j = 0; j < 8; j++)
            WG_LD(d[i * 8 + j], row + (j & 3) * qw + (j >> 2));
    }
    for (int j = 0; j < 8; j++)
        wg_btv(d + j, 8, t + j, 8);
    for (int i = 0; i < 8; i++)
        wg_btv(t + 8 * i, 1, v + 8 * i, 1);
    wg_store64(v, full, n, o, ldxi);
}

/* Output tiles t0 .. t0+n-1 (the first at tile row ty, column tx) of
 * m[k*ldxi + lane] into the Ho x Wo plane y; the cells of m read are set
 * to 0 (see wg_corr). */
WG_INLINE void wg_output_body(double *m, int64_t ldxi, int64_t TX, int64_t Ho, int64_t Wo, int64_t ty,
                              int64_t tx, int n, double *y)
{
    WgV mv[64], t[32], r[16];
    if (n == WG_L) {
        const WgV zero = {0};
        for (int k = 0; k < 64; k++) {
            WG_LD(mv[k], m + k * ldxi);
            WG_ST(m + k * ldxi, zero);
        }
    } else {
        for (int k = 0; k < 64; k++) {
            WgV x = {0};
            for (int l = 0; l < n; l++) {
                x[l] = m[k * ldxi + l];
                m[k * ldxi + l] = 0.0;
            }
            mv[k] = x;
        }
    }
    for (int j = 0; j < 8; j++)
        wg_at4v(mv + j, 8, t + j, 8);
    for (int a = 0; a < 4; a++)
        wg_at4v(t + 8 * a, 1, r + 4 * a, 1);
    /* r[4a+b][l] is row a, column b of lane l's tile: turned into rows */
    WgV q[16];
    for (int a = 0; a < 4; a++)
        wg_transpose4(r + 4 * a, q + 4 * a);
    for (int l = 0; l < n; l++, tx = tx + 1 < TX ? tx + 1 : 0, ty += tx == 0) {
        const int64_t h = 4 * ty, x = 4 * tx;
        const int64_t rows = Ho - h < 4 ? Ho - h : 4, cols = Wo - x < 4 ? Wo - x : 4;
        double *dst = y + h * Wo + x;
        if (cols == 4) {
            for (int64_t a = 0; a < rows; a++)
                WG_ST(dst + a * Wo, q[4 * a + l]);
        } else {
            for (int64_t a = 0; a < rows; a++)
                for (int64_t b = 0; b < cols; b++)
                    dst[a * Wo + b] = q[4 * a + l][b];
        }
    }
}

/* dout tiles (ty, tx0 .. tx0+WG_L-1) of the split plane 'pe' (rows of four
 * phases of hq cells, zero past the P x Q plane) into o[k*ldxi + lane];
 * see wg_store64 for 'full' and n. */
WG_INLINE void wg_dout_body(const double *pe, int64_t hq, int64_t ty, int64_t tx0, bool full, int n,
                            double *o, int64_t ldxi)
{
    WgV d[16], t[32], v[64];
    for (int a = 0; a < 4; a++) {
        const double *row = pe + (4 * ty + a) * 4 * hq + tx0;
        for (int c = 0; c < 4; c++)
            WG_LD(d[a * 4 + c], row + c * hq);
    }
    for (int c = 0; c < 4; c++)      /* t = G4 d: 8 x 4 */
        wg_g4v(d + c, 4, t + c, 4);
    for (int k = 0; k < 8; k++)
        wg_g4v(t + 4 * k, 1, v + 8 * k, 1);
    wg_store64(v, full, n, o, ldxi);
}

/* The loops over a plane's tiles, compiled for each ISA. A vector store of
 * a tile row's last, partial group of tiles writes its spare lanes over
 * the next row's first tiles, which are written (right) later: only the
 * plane's last tiles are stored lane by lane. */
WG_INLINE void wg_input_plane_body(const double *pe, int64_t wp, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wg_input_body(pe, wp, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                          o + t, ldxi);
        }
}

WG_INLINE void wg_output_plane_body(double *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
                                    double *y)
{
    int64_t ty = 0, tx = 0;
    for (int64_t t = 0; t < TT; t += WG_L) {
        wg_output_body(m + t, ldxi, TX, Ho, Wo, ty, tx, TT - t < WG_L ? (int)(TT - t) : WG_L, y);
        tx += WG_L;
        for (; tx >= TX; tx -= TX)
            ty++;
    }
}

WG_INLINE void wg_dout_plane_body(const double *pe, int64_t hq, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wg_dout_body(pe, hq, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                         o + t, ldxi);
        }
}

typedef struct WgIsa {
    void (*input)(const double *, int64_t, int64_t, int64_t, double *, int64_t);
    void (*output)(double *, int64_t, int64_t, int64_t, int64_t, int64_t, double *);
    void (*dout)(const double *, int64_t, int64_t, int64_t, double *, int64_t);
} WgIsa;

static void wg_input_base(const double *pe, int64_t wp, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    wg_input_plane_body(pe, wp, TY, TX, o, ldxi);
}
static void wg_output_base(double *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
                           double *y)
{
    wg_output_plane_body(m, ldxi, TX, TT, Ho, Wo, y);
}
static void wg_dout_base(const double *pe, int64_t hq, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    wg_dout_plane_body(pe, hq, TY, TX, o, ldxi);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma")))
static void wg_input_avx2(const double *pe, int64_t wp, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    wg_input_plane_body(pe, wp, TY, TX, o, ldxi);
}
__attribute__((target("avx2,fma")))
static void wg_output_avx2(double *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
                           double *y)
{
    wg_output_plane_body(m, ldxi, TX, TT, Ho, Wo, y);
}
__attribute__((target("avx2,fma")))
static void wg_dout_avx2(const double *pe, int64_t hq, int64_t TY, int64_t TX, double *o, int64_t ldxi)
{
    wg_dout_plane_body(pe, hq, TY, TX, o, ldxi);
}
#endif

static WgIsa wg_isa = {wg_input_base, wg_output_base, wg_dout_base};
static pthread_once_t wg_isa_once = PTHREAD_ONCE_INIT;

static void wg_isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        wg_isa = (WgIsa){wg_input_avx2, wg_output_avx2, wg_dout_avx2};
#endif
}

/* The tiles of one correlation: 'Ci' planes of Hi x Wi in, padding ph, pw,
 * Ho x Wo out, covered by TY x TX tiles of 4x4 outputs. 'pad' holds a
 * plane's padded input, split (wg_input): (4*TY+4) rows of 4*TX+4 cells,
 * zero where no input cell lands, and WG_PAD_SPARE cells more that the
 * spare lanes of the last tiles read. */
typedef struct WgTiles {
    int64_t Ci, Hi, Wi, ph, pw, Ho, Wo, TY, TX;
    double *pad;
} WgTiles;

#define WG_PAD_SPARE 8

/* A zeroed split plane for w (see WgTiles), or NULL */
static double *wg_pad_alloc(const WgTiles *w)
{
    return calloc((size_t)((4 * w->TY + 4) * (4 * w->TX + 4) + WG_PAD_SPARE), sizeof(double));
}

static void wg_tiles_init(WgTiles *w, int64_t Ci, int64_t Hi, int64_t Wi, int64_t ph, int64_t pw,
                          int64_t Ho, int64_t Wo)
{
    *w = (WgTiles){.Ci = Ci, .Hi = Hi, .Wi = Wi, .ph = ph, .pw = pw, .Ho = Ho, .Wo = Wo,
                   .TY = (Ho + 3) / 4, .TX = (Wo + 3) / 4};
}

/* The exponent all ones: Inf or NaN. The Winograd transforms add and
 * subtract values that direct convolution never combines: an Inf input
 * becomes Inf - Inf = NaN in outputs that should read +-Inf (and a NaN
 * spreads across its tile), so such operands take the im2col path. The
 * tests are integer ops, so they vectorise (a floating-point sum would run
 * at the add's latency). */
#define WG_EXP (0x7ffULL << 52)
typedef uint64_t WgU __attribute__((vector_size(WG_L * sizeof(uint64_t))));

/* the lanes of v that are not finite, as all ones (a macro: see WG_LD) */
#define WG_BAD(v) ((WgU)(((WgU)(v) & (WgU){WG_EXP, WG_EXP, WG_EXP, WG_EXP}) == (WgU){WG_EXP, WG_EXP, WG_EXP, WG_EXP}))

/* Copies the rows x cols cells of src (a row every lds cells) into the
 * split rows of dst (a row every ldd cells: the columns 0, 4, 8, .. first,
 * then phases 1, 2 and 3, each qw cells), starting at row 0 and column c0.
 * Returns whether every cell copied is finite: the planes' one pass that
 * tells whether the Winograd path may keep them. */
static bool wg_split(const double *src, int64_t lds, int64_t rows, int64_t cols, double *dst, int64_t ldd,
                     int64_t qw, int64_t c0)
{
    WgU bad = {0};
    uint64_t sbad = 0;
    /* cell x = 4k + j of a row goes to cell k of the phase of column c0 + j:
     * 16 cells at a time, four vectors transposed, then 8 (two halves) */
    for (int64_t h = 0; h < rows; h++) {
        const double *s = src + h * lds;
        double *d = dst + h * ldd, *dq[4];
        for (int j = 0; j < 4; j++)
            dq[j] = d + ((c0 + j) & 3) * qw + ((c0 + j) >> 2);
        int64_t x = 0;
        for (; x + 4 * WG_L <= cols; x += 4 * WG_L) {
            WgV v[4], o[4];
            for (int j = 0; j < 4; j++) {
                WG_LD(v[j], s + x + j * WG_L);
                bad |= WG_BAD(v[j]);
            }
            wg_transpose4(v, o);
            for (int j = 0; j < 4; j++)
                WG_ST(dq[j] + x / 4, o[j]);
        }
        if (x + 2 * WG_L <= cols) {
            WgV a, b;
            WG_LD(a, s + x);
            WG_LD(b, s + x + WG_L);
            bad |= WG_BAD(a) | WG_BAD(b);
            WgV lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
            WG_ST2(dq[0] + x / 4, __builtin_shufflevector(lo, lo, 0, 1));
            WG_ST2(dq[1] + x / 4, __builtin_shufflevector(lo, lo, 2, 3));
            WG_ST2(dq[2] + x / 4, __builtin_shufflevector(hi, hi, 0, 1));
            WG_ST2(dq[3] + x / 4, __builtin_shufflevector(hi, hi, 2, 3));
            x += 2 * WG_L;
        }
        for (; x < cols; x++) {
            uint64_t u;
            memcpy(&u, &s[x], sizeof u);
            sbad |= (u & WG_EXP) == WG_EXP;
            dq[x & 3][x >> 2] = s[x];
        }
    }
    return !(sbad | bad[0] | bad[1] | bad[2] | bad[3]);
}

/* Transforms the Ci planes of the b images x (Ci * Hi * Wi cells each)
 * into V[c][xi][i * TT + tile] (points ldxi apart, channels ldc apart), a
 * channel at a time, so that its block of V is written whole before the
 * next. The cells of pad that planes are copied into are the same for every
 * plane; the rest stays zero. False, and V unfinished, when x holds an Inf
 * or NaN. */
static bool wg_input(WgTiles *w, const double *x, int64_t b, double *V, int64_t ldxi, int64_t ldc)
{
    const int64_t hp = 4 * w->TY + 4, wp = 4 * w->TX + 4, HW = w->Hi * w->Wi, TT = w->TY * w->TX;
    const int64_t rows = w->Hi < hp - w->ph ? w->Hi : hp - w->ph;
    const int64_t cols = w->Wi < wp - w->pw ? w->Wi : wp - w->pw;
    for (int64_t c = 0; c < w->Ci; c++)
        for (int64_t i = 0; i < b; i++) {
            if (!wg_split(x + (i * w->Ci + c) * HW, w->Wi, rows, cols, w->pad + w->ph * wp, wp, wp / 4, w->pw))
                return false;
            wg_isa.input(w->pad, wp, w->TY, w->TX, V + c * ldc + i * TT, ldxi);
        }
    return true;
}

/* The inverse of wg_input for the Co output planes of b images y:
 * y[i, o, 4ty+a, 4tx+b] = (A^T M A)[a][b] with M[xi] = M[o][xi][i * TT + tile],
 * the cells past Ho x Wo dropped; the cells of M read are left 0. */
static void wg_output(const WgTiles *w, double *M, int64_t ldxi, int64_t ldc, int64_t b, int64_t Co, double *y)
{
    const int64_t HW = w->Ho * w->Wo, TT = w->TY * w->TX;
    for (int64_t o = 0; o < Co; o++)
        for (int64_t i = 0; i < b; i++)
            wg_isa.output(M + o * ldc + i * TT, ldxi, w->TX, TT, w->Ho, w->Wo, y + (i * Co + o) * HW);
}

/* The layout of V, M and D for T tiles: a channel's points are wg_ld(T)
 * apart (T rounded up to whole vectors, so that a tile group's vectors are
 * aligned as their first tile is) and its channels wg_ldc(T) apart. A
 * point's dgemm operand has rows wg_ldc apart; 64 whole vectors would be
 * a multiple of 2 KiB, and the rows would then fall into two sets of L1
 * lines that the packing of 32 rows overruns (a stride of 4 KiB, from
 * T = 64, measured 2x slower): the extra vector spreads them. */
static int64_t wg_ld(int64_t T)
{
    return (T + 3) & ~(int64_t)3;
}

static int64_t wg_ldc(int64_t T)
{
    return 64 * wg_ld(T) + 4;
}

/* A buffer of n doubles aligned for vectors, zeroed when 'zero'; NULL when
 * out of memory. */
static double *wg_alloc(int64_t n, bool zero)
{
    size_t bytes = ((size_t)n * sizeof(double) + 63) & ~(size_t)63;
    double *p = aligned_alloc(64, bytes);
    if (p && zero)
        memset(p, 0, bytes);
    return p;
}

/* Images per batch: the caller's choice, else about WG_TARGET_BYTES of
 * transformed tiles ('per' doubles per image). */
static int64_t wg_batch(const DnnGeom *g, int64_t per)
{
    int64_t nb = g->batch > 0 ? g->batch : WG_TARGET_BYTES / (per * (int64_t)sizeof(double));
    return nb > g->N ? g->N : nb < 1 ? 1 : nb;
}

/* Forward (turn = false: Ci = C, Co = F, in = X, out: N x FPQ) or data
 * gradient (turn = true: Ci = F, Co = C, in = dout, out: N x CHW).
 * Returns 0, -1 when out of memory, or 1 when 'in' holds an Inf or NaN (out
 * then holds garbage: the caller takes the im2col path). */
static int wg_corr(const DnnGeom *g, bool turn, const double *Wt, const double *in, double *out)
{
    pthread_once(&wg_isa_once, wg_isa_init);
    WgTiles w;
    if (turn)
        wg_tiles_init(&w, g->F, g->P, g->Q, 4 - g->ph, 4 - g->pw, g->H, g->W);
    else
        wg_tiles_init(&w, g->C, g->H, g->W, g->ph, g->pw, g->P, g->Q);
    const int64_t Ci = w.Ci, Co = turn ? g->C : g->F, TT = w.TY * w.TX;
    const int64_t nb = wg_batch(g, 64 * TT * (Ci + Co));
    double *U = malloc((size_t)(64 * Ci * Co) * sizeof(double));
    double *V = wg_alloc(Ci * wg_ldc(TT * nb), false);
    /* M starts at 0 and wg_output clears what it reads, so every dgemm adds
     * into zeros (beta = 1): OpenBLAS then skips its pass that zeroes C
     * for beta = 0 (with K = Ci = 32 in LeNet, a sixth of the dgemm's
     * memory traffic). Its kernel adds the product to C either way, so
     * 0 + x gives the same bits as beta = 0. */
    double *M = wg_alloc(Co * wg_ldc(TT * nb), true);
    /* V and M hold a channel's 64 points side by side (V[c][xi][tile],
     * M[o][xi][tile]; a point's dgemm operand then has rows wg_ldc apart):
     * a channel's transform writes (input) or reads (output) one block of
     * 64 x T cells instead of 64 blocks spread over all of V or M, which
     * measured 35-55% faster for the transforms. */
    w.pad = wg_pad_alloc(&w);
    if (!U || !V || !M || !w.pad) {
        free(U);
        free(V);
        free(M);
        free(w.pad);
        return -1;
    }
    wg_filters(g, Wt, turn, U);
    const int64_t inper = Ci * w.Hi * w.Wi, outper = Co * w.Ho * w.Wo;
    int rc = 0;
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
        const int64_t b = g->N - n0 < nb ? g->N - n0 : nb, T = b * TT, ld = wg_ld(T), ldc = wg_ldc(T);
        if (!wg_input(&w, in + n0 * inper, b, V, ld, ldc)) {
            rc = 1;
            break;
        }
        for (int64_t k = 0; k < 64; k++)
            blas_dgemm(false, false, Co, T, Ci, 1.0, U + k * Co * Ci, Ci, V + k * ld, ldc, 1.0, M + k * ld, ldc);
        wg_output(&w, M, ld, ldc, b, Co, out + n0 * outper);
    }
    free(U);
    free(V);
    free(M);
    free(w.pad);
    return rc;
}

/* D[f][xi][i * TT + tile] = (G4 d G4^T)[xi] for the 4x4 tiles d of the F
 * planes of b images' dout (P x Q; cells past it read as 0), a channel at a
 * time as wg_input. 'dpad' is a zeroed split plane of 4*TY rows of 4*TX
 * cells and WG_PAD_SPARE more. False, and D unfinished, when dout holds an
 * Inf or NaN. */
static bool wg_dout(const WgTiles *w, int64_t F, const double *dout, int64_t b, double *dpad, double *D,
                    int64_t ldxi, int64_t ldf)
{
    const int64_t HW = w->Ho * w->Wo, TT = w->TY * w->TX;
    for (int64_t f = 0; f < F; f++)
        for (int64_t i = 0; i < b; i++) {
            if (!wg_split(dout + (i * F + f) * HW, w->Wo, w->Ho, w->Wo, dpad, 4 * w->TX, w->TX, 0))
                return false;
            wg_isa.dout(dpad, w->TX, w->TY, w->TX, D + f * ldf + i * TT, ldxi);
        }
    return true;
}

/* Filter gradient: dW (F x C*25) = sum over images and tiles of F(5x5, 4x4).
 * Returns as wg_corr. */
static int wg_filter_grad(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    pthread_once(&wg_isa_once, wg_isa_init);
    WgTiles w;
    wg_tiles_init(&w, g->C, g->H, g->W, g->ph, g->pw, g->P, g->Q);
    const int64_t C = g->C, F = g->F, TT = w.TY * w.TX;
    const int64_t nb = wg_batch(g, 64 * TT * (C + F));
    double *V = wg_alloc(C * wg_ldc(TT * nb), false);
    double *D = wg_alloc(F * wg_ldc(TT * nb), false);
    double *Mw = malloc((size_t)(64 * F * C) * sizeof(double));
    double *dpad = calloc((size_t)(16 * TT + WG_PAD_SPARE), sizeof(double));
    w.pad = wg_pad_alloc(&w);
    if (!V || !D || !Mw || !dpad || !w.pad) {
        free(V);
        free(D);
        free(Mw);
        free(dpad);
        free(w.pad);
        return -1;
    }
    const int64_t CHW = C * g->H * g->W, FPQ = F * g->P * g->Q;
    int rc = 0;
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
        const int64_t b = g->N - n0 < nb ? g->N - n0 : nb, T = b * TT, ld = wg_ld(T), ldc = wg_ldc(T);
        if (!wg_input(&w, X + n0 * CHW, b, V, ld, ldc) || !wg_dout(&w, F, dout + n0 * FPQ, b, dpad, D, ld, ldc)) {
            rc = 1;
            break;
        }
        /* Mw[xi] (F x C) (+)= D[xi] (F x T) * V[xi]^T; the first batch overwrites */
        for (int64_t k = 0; k < 64; k++)
            blas_dgemm(false, true, F, C, T, 1.0, D + k * ld, ldc, V + k * ld, ldc, n0 == 0 ? 0.0 : 1.0,
                       Mw + k * F * C, C);
    }
    const int64_t FC = rc == 0 ? F * C : 0;
    for (int64_t fc = 0; fc < FC; fc++) {
        double t[40];
        for (int64_t j = 0; j < 8; j++)        /* t = A5^T M: 5 x 8 */
            wg_at5(Mw + j * FC + fc, 8 * FC, t + j, 8);
        for (int64_t r = 0; r < 5; r++)        /* dW = t A5: 5 x 5 */
            wg_at5(t + 8 * r, 1, dW + fc * 25 + r * 5, 1);
    }
    free(V);
    free(D);
    free(Mw);
    free(dpad);
    free(w.pad);
    return rc;
}

/* Whether a[0..n) holds no Inf or NaN (see WG_EXP) */
static bool all_finite(const double *a, int64_t n)
{
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, &a[i], sizeof b);
        bad |= (b & WG_EXP) == WG_EXP;
    }
    return !bad;
}

/* The filters are checked up front (they are small); the planes, as the
 * Winograd path copies them: it answers 1 when one is not finite. */
int dnn_conv2d(const DnnGeom *g, const double *X, const double *Wt, double *out)
{
    if (g->N > 0 && wg_use(g) && all_finite(Wt, g->F * g->C * 25)) {
        int rc = wg_corr(g, false, Wt, X, out);
        if (rc <= 0)
            return rc;
    }
    Conv cv = {.g = g, .op = CONV_FWD, .X = X, .Wt = Wt, .res = out};
    return conv_run(&cv);
}

int dnn_conv2d_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    if (g->N > 0 && wg_use(g)) {
        int rc = wg_filter_grad(g, X, dout, dW);
        if (rc <= 0)
            return rc;
    }
    Conv cv = {.g = g, .op = CONV_BWF, .X = X, .dout = dout, .res = dW};
    return conv_run(&cv);
}

int dnn_conv2d_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX)
{
    if (g->N > 0 && wg_use(g) && all_finite(Wt, g->F * g->C * 25)) {
        int rc = wg_corr(g, true, Wt, dout, dX);
        if (rc <= 0)
            return rc;
    }
    Conv cv = {.g = g, .op = CONV_BWD, .Wt = Wt, .dout = dout, .res = dX};
    return conv_run(&cv);
}

/* ---- pooling: direct loops over the (image, channel) planes ---- */

/* In-image window of output (p,q): rows [*h0,*h1), columns [*w0,*w1). */
static inline void pool_window(const DnnGeom *g, int64_t p, int64_t q, int64_t *h0, int64_t *h1,
                               int64_t *w0, int64_t *w1)
{
    int64_t hs = p * g->sh - g->ph, ws = q * g->sw - g->pw;
    int64_t he = hs + g->R, we = ws + g->S;
    *h0 = hs < 0 ? 0 : hs;
    *h1 = he > g->H ? g->H : he;
    *w0 = ws < 0 ? 0 : ws;
    *w1 = we > g->W ? g->W : we;
}

/* Max pooling of one H x W plane x into the P x Q plane o. */
static void max_pool_plane(const DnnGeom *g, const double *x, double *o)
{
    for (int64_t p = 0; p < g->P; p++)
        for (int64_t q = 0; q < g->Q; q++) {
            int64_t h0, h1, w0, w1;
            pool_window(g, p, q, &h0, &h1, &w0, &w1);
            /* upstream starts from -Double.MAX_VALUE and uses Math.max, which
             * propagates NaN. The NaN test is kept apart from the comparison
             * so both compile to branch-free code: a data-dependent branch
             * here mispredicts on about every other cell. */
            double m = -DBL_MAX;
            int nan = 0;
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++) {
                    double v = x[h * g->W + w];
                    m = v > m ? v : m;
                    nan |= v != v;
                }
            o[p * g->Q + q] = nan ? NAN : m;
        }
}

/* Routes each d[p,q] to the first maximum of its window in plane x, adding
 * into the (zeroed) plane dx. */
static void max_pool_backward_plane(const DnnGeom *g, const double *x, const double *d, double *dx)
{
    for (int64_t p = 0; p < g->P; p++)
        for (int64_t q = 0; q < g->Q; q++) {
            int64_t h0, h1, w0, w1;
            pool_window(g, p, q, &h0, &h1, &w0, &w1);
            if (h0 >= h1 || w0 >= w1)
                continue;   /* window wholly in the padding: no input cell */
            /* strict '>' keeps the first maximum in row-major order; the
             * index is chosen by a mask, as gcc turned a select on the
             * comparison into a branch that mispredicts on about every
             * other cell */
            int64_t best = h0 * g->W + w0;
            double m = x[best];
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++) {
                    double v = x[h * g->W + w];
                    int64_t gt = -(int64_t)(v > m);
                    m = v > m ? v : m;
                    best = (best & ~gt) | ((h * g->W + w) & gt);
                }
            dx[best] += d[p * g->Q + q];
        }
}

static void avg_pool_plane(const DnnGeom *g, const double *x, double *o)
{
    const double scale = 1.0 / (double)(g->R * g->S);
    for (int64_t p = 0; p < g->P; p++)
        for (int64_t q = 0; q < g->Q; q++) {
            int64_t h0, h1, w0, w1;
            pool_window(g, p, q, &h0, &h1, &w0, &w1);
            double sum = 0.0;
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++)
                    sum += x[h * g->W + w];
            o[p * g->Q + q] = sum * scale;
        }
}

static void avg_pool_backward_plane(const DnnGeom *g, const double *d, double *dx)
{
    const double scale = 1.0 / (double)(g->R * g->S);
    for (int64_t p = 0; p < g->P; p++)
        for (int64_t q = 0; q < g->Q; q++) {
            int64_t h0, h1, w0, w1;
            pool_window(g, p, q, &h0, &h1, &w0, &w1);
            double v = d[p * g->Q + q] * scale;
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++)
                    dx[h * g->W + w] += v;
        }
}

/* v where cond holds, else +0.0, without a branch. */
static inline double keep_if(double v, int cond)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= -(uint64_t)(cond != 0);
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The windows tile the image: R x S windows at stride R x S, no padding.
 * Then no window is clipped and every cell lies in at most one window. */
static bool pool_tiles(const DnnGeom *g)
{
    return g->sh == g->R && g->sw == g->S && g->ph == 0 && g->pw == 0;
}

/* max_pool_plane for 2x2 tiles: the same operations in the same order,
 * without the window loops. */
static void max_pool_plane_2x2(const DnnGeom *g, const double *x, double *o)
{
    for (int64_t p = 0; p < g->P; p++) {
        const double *x0 = x + 2 * p * g->W, *x1 = x0 + g->W;
        double *op = o + p * g->Q;
        for (int64_t q = 0; q < g->Q; q++) {
            double a = x0[2 * q], b = x0[2 * q + 1], c = x1[2 * q], e = x1[2 * q + 1];
            double m = -DBL_MAX;
            m = a > m ? a : m;
            m = b > m ? b : m;
            m = c > m ? c : m;
            m = e > m ? e : m;
            int nan = (a != a) | (b != b) | (c != c) | (e != e);
            op[q] = nan ? NAN : m;
        }
    }
}

/* max_pool_backward_plane where the windows tile the image (pool_tiles):
 * each window's cells are written once, d to the first maximum and zero to
 * the others (d + 0.0, as the zeroed plane plus d would give, so that -0.0
 * reads the same), and the cells past the last window are zeroed; so dx
 * needs no clearing first. The maximum is picked by the same comparisons as
 * max_pool_backward_plane. */
static void max_pool_backward_tiled(const DnnGeom *g, const double *x, const double *d, double *dx)
{
    const int64_t W = g->W, R = g->R, S = g->S, P = g->P, Q = g->Q;
    for (int64_t p = 0; p < P; p++) {
        const double *xp = x + p * R * W, *dp = d + p * Q;
        double *dxp = dx + p * R * W;
        if (R == 2 && S == 2) {
            const double *x1 = xp + W;
            double *dx1 = dxp + W;
            for (int64_t q = 0; q < Q; q++) {
                double a = xp[2 * q], b = xp[2 * q + 1], c = x1[2 * q], e = x1[2 * q + 1];
                double m = a;
                int gb = b > m;
                m = gb ? b : m;
                int gc = c > m;
                m = gc ? c : m;
                int ge = e > m;
                /* the last cell that beat the running maximum wins */
                double v = dp[q] + 0.0;
                dxp[2 * q] = keep_if(v, !(gb | gc | ge));
                dxp[2 * q + 1] = keep_if(v, gb & !(gc | ge));
                dx1[2 * q] = keep_if(v, gc & !ge);
                dx1[2 * q + 1] = keep_if(v, ge);
            }
        } else {
            for (int64_t q = 0; q < Q; q++) {
                const double *xw = xp + q * S;
                int64_t best = 0;
                double m = xw[0];
                for (int64_t h = 0; h < R; h++)
                    for (int64_t w = 0; w < S; w++) {
                        double v = xw[h * W + w];
                        int64_t gt = -(int64_t)(v > m);
                        m = v > m ? v : m;
                        best = (best & ~gt) | ((h * W + w) & gt);
                    }
                double v = dp[q] + 0.0;
                double *dxw = dxp + q * S;
                for (int64_t h = 0; h < R; h++)
                    for (int64_t w = 0; w < S; w++)
                        dxw[h * W + w] = keep_if(v, h * W + w == best);
            }
        }
        if (Q * S < W)
            for (int64_t h = 0; h < R; h++)
                memset(dxp + h * W + Q * S, 0, (size_t)(W - Q * S) * sizeof(double));
    }
    if (P * R < g->H)
        memset(dx + P * R * W, 0, (size_t)((g->H - P * R) * W) * sizeof(double));
}

void dnn_max_pool(const DnnGeom *g, const double *X, double *out)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    const bool fast = pool_tiles(g) && g->R == 2 && g->S == 2;
    /* (n,c) planes are contiguous in X and in out alike */
    for (int64_t nc = 0; nc < g->N * g->C; nc++) {
        if (fast)
            max_pool_plane_2x2(g, X + nc * HW, out + nc * PQ);
        else
            max_pool_plane(g, X + nc * HW, out + nc * PQ);
    }
}

void dnn_max_pool_backward(const DnnGeom *g, const double *X, const double *dout, double *dX)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    if (pool_tiles(g)) {
        for (int64_t nc = 0; nc < g->N * g->C; nc++)
            max_pool_backward_tiled(g, X + nc * HW, dout + nc * PQ, dX + nc * HW);
        return;
    }
    memset(dX, 0, (size_t)(g->N * g->C * HW) * sizeof(double));
    for (int64_t nc = 0; nc < g->N * g->C; nc++)
        max_pool_backward_plane(g, X + nc * HW, dout + nc * PQ, dX + nc * HW);
}

void dnn_avg_pool(const DnnGeom *g, const double *X, double *out)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    for (int64_t nc = 0; nc < g->N * g->C; nc++)
        avg_pool_plane(g, X + nc * HW, out + nc * PQ);
}

void dnn_avg_pool_backward(const DnnGeom *g, const double *dout, double *dX)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    memset(dX, 0, (size_t)(g->N * g->C * HW) * sizeof(double));
    for (int64_t nc = 0; nc < g->N * g->C; nc++)
        avg_pool_backward_plane(g, dout + nc * PQ, dX + nc * HW);
}

/* ---- bias ---- */

void dnn_bias_add(const double *X, int64_t rows, int64_t cols, const double *b, int64_t C,
                  double *out)
{
    const int64_t HW = cols / C;
    for (int64_t n = 0; n < rows; n++)
        for (int64_t c = 0; c < C; c++) {
            const double *x = X + n * cols + c * HW;
            double *o = out + n * cols + c * HW, bc = b[c];
            for (int64_t k = 0; k < HW; k++)
                o[k] = x[k] + bc;
        }
}

void dnn_bias_multiply(const double *X, int64_t rows, int64_t cols, const double *b, int64_t C,
                       double *out)
{
    const int64_t HW = cols / C;
    for (int64_t n = 0; n < rows; n++)
        for (int64_t c = 0; c < C; c++) {
            const double *x = X + n * cols + c * HW;
            double *o = out + n * cols + c * HW, bc = b[c];
            for (int64_t k = 0; k < HW; k++)
                o[k] = x[k] * bc;
        }
}
