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
#include "dnn_winograd.h"

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

/* ---- single precision, one image per product ----
 * With --precision single, a layer whose im2col matrix is too thin to
 * batch images (CRS < DNN_BATCH_MIN_CRS: LeNet's conv1, 25 rows) builds it
 * in float and multiplies by sgemm: the plane is rounded to float as it is
 * copied into the zero-bordered plane (H*W conversions, not the R*S times
 * as many that rounding the double im2col matrix would take), and the
 * product widened as it is stored. The filter gradient adds each image's
 * float product into dW in double. blas_dgemm alone keeps these products
 * double: 14 multiply-adds per converted cell are too few to pay for the
 * conversions (runtime/blas.c, sgemm_pays). The data gradient (col2im)
 * stays double. Measured (bench/conv_precision.c, one thread, batch 64):
 * see bench/RESULTS.md. */

/* pad_fill into a float plane */
static void pad_fill_f(const DnnGeom *g, const double *plane, float *pad)
{
    const int64_t wp = g->W + 2 * g->pw;
    for (int64_t h = 0; h < g->H; h++)
        blas_round_float(plane + h * g->W, pad + (h + g->ph) * wp + g->pw, g->W);
}

/* im2col_padded on float planes (stride 1 rows copied whole) */
static void im2col_padded_f(const DnnGeom *g, const float *pad, float *rows, int64_t ld)
{
    const int64_t P = g->P, Q = g->Q, sw = g->sw, wp = g->W + 2 * g->pw, step = g->sh * wp;
    for (int64_t r = 0; r < g->R; r++)
        for (int64_t s = 0; s < g->S; s++) {
            float *dst = rows + (r * g->S + s) * ld;
            const float *src = pad + r * wp + s;
            for (int64_t p = 0; p < P; p++, dst += Q, src += step) {
                if (sw == 1)
                    memcpy(dst, src, (size_t)Q * sizeof(float));
                else
                    for (int64_t q = 0; q < Q; q++)
                        dst[q] = src[q * sw];
            }
        }
}

/* Whether the forward or filter-gradient pass takes the float path */
static bool conv_single(const Conv *cv)
{
    const DnnGeom *g = cv->g;
    return cv->op != CONV_BWD && blas_single() && g->batch <= 1 && g->C * g->R * g->S < DNN_BATCH_MIN_CRS &&
           padded_cells(g) >= 0;
}

/* The float path: 0, or -1 when out of memory. */
static int conv_run_f(Conv *cv)
{
    const DnnGeom *g = cv->g;
    const int64_t HW = g->H * g->W, CHW = g->C * HW, PQ = g->P * g->Q, FPQ = g->F * PQ;
    const int64_t RS = g->R * g->S, CRS = g->C * RS, cells = padded_cells(g);
    /* scratch: pad, cols (CRS x PQ), the filters or one image's dout (F x
     * CRS or F x PQ), the product (F x PQ or F x CRS) */
    const int64_t nw = cv->op == CONV_FWD ? g->F * CRS : FPQ, np = cv->op == CONV_FWD ? FPQ : g->F * CRS;
    float *pad = calloc((size_t)(cells + CRS * PQ + nw + np), sizeof(float));
    if (!pad)
        return -1;
    float *cols = pad + cells, *wf = cols + CRS * PQ, *prod = wf + nw;
    if (cv->op == CONV_FWD)
        blas_round_float(cv->Wt, wf, g->F * CRS);
    else
        memset(cv->res, 0, (size_t)(g->F * CRS) * sizeof(double));
    for (int64_t n = 0; n < g->N; n++) {
        const double *x = cv->X + n * CHW;
        for (int64_t c = 0; c < g->C; c++) {
            pad_fill_f(g, x + c * HW, pad);
            im2col_padded_f(g, pad, cols + c * RS * PQ, PQ);
        }
        if (cv->op == CONV_FWD) {   /* out (F x PQ) = W (F x CRS) * cols (CRS x PQ) */
            blas_sgemm(false, false, g->F, PQ, CRS, 1.0f, wf, CRS, cols, PQ, 0.0f, prod, PQ);
            blas_widen_float(prod, cv->res + n * FPQ, FPQ);
        } else {                    /* dW += dout (F x PQ) * cols^T */
            blas_round_float(cv->dout + n * FPQ, wf, FPQ);
            blas_sgemm(false, true, g->F, CRS, PQ, 1.0f, wf, PQ, cols, PQ, 0.0f, prod, CRS);
            for (int64_t i = 0; i < g->F * CRS; i++)
                cv->res[i] += prod[i];
        }
    }
    free(pad);
    return 0;
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
    if (conv_single(cv))
        return conv_run_f(cv);
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

/* Winograd first where it fits and pays (dnn_winograd.c), else im2col. */
int dnn_conv2d(const DnnGeom *g, const double *X, const double *Wt, double *out)
{
    int rc = dnn_wg_forward(g, X, Wt, out);
    if (rc <= 0)
        return rc;
    Conv cv = {.g = g, .op = CONV_FWD, .X = X, .Wt = Wt, .res = out};
    return conv_run(&cv);
}

int dnn_conv2d_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    int rc = dnn_wg_backward_filter(g, X, dout, dW);
    if (rc <= 0)
        return rc;
    Conv cv = {.g = g, .op = CONV_BWF, .X = X, .dout = dout, .res = dW};
    return conv_run(&cv);
}

int dnn_conv2d_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX)
{
    int rc = dnn_wg_backward_data(g, Wt, dout, dX);
    if (rc <= 0)
        return rc;
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

/* Four 2x2 windows side by side: a vector of their top-left, top-right,
 * bottom-left or bottom-right cells, and the lanes' masks (all ones where
 * a comparison holds, as the vector comparisons give them). The
 * comparisons, selections and masks are the scalar code's, lane by lane, so
 * the bits are the same. */
typedef double PoolV __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)), may_alias));
typedef int64_t PoolM __attribute__((vector_size(4 * sizeof(int64_t))));

#define POOL_INLINE static inline __attribute__((always_inline))

/* the even and odd cells of the 8 at s: a window row's left and right cells */
POOL_INLINE void pool_split(const double *s, PoolV *l, PoolV *r)
{
    PoolV u = *(const PoolV *)s, w = *(const PoolV *)(s + 4);
    *l = __builtin_shufflevector(u, w, 0, 2, 4, 6);
    *r = __builtin_shufflevector(u, w, 1, 3, 5, 7);
}

/* the inverse of pool_split (macros: a vector passed by value would change
 * the base build's ABI, which gcc warns about) */
#define POOL_JOIN(l, r, d)                                                   \
    do {                                                                     \
        *(PoolV *)(d) = __builtin_shufflevector((l), (r), 0, 4, 1, 5);       \
        *(PoolV *)((d) + 4) = __builtin_shufflevector((l), (r), 2, 6, 3, 7); \
    } while (0)

/* a where m, else v */
#define POOL_SEL(m, a, v) ((PoolV)(((PoolM)(a) & (m)) | ((PoolM)(v) & ~(m))))

/* max_pool_plane_2x2's windows q .. q+3 of output row p */
POOL_INLINE void max_pool_2x2_v4(const double *x0, const double *x1, double *op)
{
    PoolV a, b, c, e;
    pool_split(x0, &a, &b);
    pool_split(x1, &c, &e);
    PoolV m = {-DBL_MAX, -DBL_MAX, -DBL_MAX, -DBL_MAX};
    m = POOL_SEL(a > m, a, m);
    m = POOL_SEL(b > m, b, m);
    m = POOL_SEL(c > m, c, m);
    m = POOL_SEL(e > m, e, m);
    const PoolV qnan = {NAN, NAN, NAN, NAN};
    PoolM nan = (a != a) | (b != b) | (c != c) | (e != e);
    *(PoolV *)op = POOL_SEL(nan, qnan, m);
}

/* max_pool_backward_tiled's 2x2 windows q .. q+3 of output row p */
POOL_INLINE void max_pool_bwd_2x2_v4(const double *x0, const double *x1, const double *dp, double *dx0,
                                     double *dx1)
{
    PoolV a, b, c, e;
    pool_split(x0, &a, &b);
    pool_split(x1, &c, &e);
    PoolV m = a;
    PoolM gb = b > m;
    m = POOL_SEL(gb, b, m);
    PoolM gc = c > m;
    m = POOL_SEL(gc, c, m);
    PoolM ge = e > m;
    PoolM v = (PoolM)(*(const PoolV *)dp + 0.0);
    PoolV oa = (PoolV)(v & ~(gb | gc | ge)), ob = (PoolV)(v & (gb & ~(gc | ge)));
    PoolV oc = (PoolV)(v & (gc & ~ge)), oe = (PoolV)(v & ge);
    POOL_JOIN(oa, ob, dx0);
    POOL_JOIN(oc, oe, dx1);
}

/* max_pool_plane for 2x2 tiles: the same operations in the same order,
 * without the window loops; four windows a step (gcc -O2 leaves the scalar
 * loop as it is). */
POOL_INLINE void max_pool_plane_2x2_body(const DnnGeom *g, const double *x, double *o)
{
    for (int64_t p = 0; p < g->P; p++) {
        const double *x0 = x + 2 * p * g->W, *x1 = x0 + g->W;
        double *op = o + p * g->Q;
        int64_t q = 0;
        for (; q + 4 <= g->Q; q += 4)
            max_pool_2x2_v4(x0 + 2 * q, x1 + 2 * q, op + q);
        for (; q < g->Q; q++) {
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

static void max_pool_plane_2x2_base(const DnnGeom *g, const double *x, double *o)
{
    max_pool_plane_2x2_body(g, x, o);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void max_pool_plane_2x2_avx2(const DnnGeom *g, const double *x, double *o)
{
    max_pool_plane_2x2_body(g, x, o);
}
#endif

/* max_pool_backward_plane where the windows tile the image (pool_tiles):
 * each window's cells are written once, d to the first maximum and zero to
 * the others (d + 0.0, as the zeroed plane plus d would give, so that -0.0
 * reads the same), and the cells past the last window are zeroed; so dx
 * needs no clearing first. The maximum is picked by the same comparisons as
 * max_pool_backward_plane. */
POOL_INLINE void max_pool_backward_tiled_body(const DnnGeom *g, const double *x, const double *d, double *dx)
{
    const int64_t W = g->W, R = g->R, S = g->S, P = g->P, Q = g->Q;
    for (int64_t p = 0; p < P; p++) {
        const double *xp = x + p * R * W, *dp = d + p * Q;
        double *dxp = dx + p * R * W;
        if (R == 2 && S == 2) {
            const double *x1 = xp + W;
            double *dx1 = dxp + W;
            int64_t q = 0;
            for (; q + 4 <= Q; q += 4)
                max_pool_bwd_2x2_v4(xp + 2 * q, x1 + 2 * q, dp + q, dxp + 2 * q, dx1 + 2 * q);
            for (; q < Q; q++) {
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

static void max_pool_backward_tiled_base(const DnnGeom *g, const double *x, const double *d, double *dx)
{
    max_pool_backward_tiled_body(g, x, d, dx);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void max_pool_backward_tiled_avx2(const DnnGeom *g, const double *x,
                                                                         const double *d, double *dx)
{
    max_pool_backward_tiled_body(g, x, d, dx);
}
#endif

/* The pooling planes' code for the CPU: AVX2 where it has it */
typedef struct PoolIsa {
    void (*fwd2x2)(const DnnGeom *, const double *, double *);
    void (*bwd_tiled)(const DnnGeom *, const double *, const double *, double *);
} PoolIsa;
static PoolIsa pool_isa;
static pthread_once_t pool_isa_once = PTHREAD_ONCE_INIT;

static void pool_isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        pool_isa = (PoolIsa){max_pool_plane_2x2_avx2, max_pool_backward_tiled_avx2};
        return;
    }
#endif
    pool_isa = (PoolIsa){max_pool_plane_2x2_base, max_pool_backward_tiled_base};
}

void dnn_max_pool(const DnnGeom *g, const double *X, double *out)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    const bool fast = pool_tiles(g) && g->R == 2 && g->S == 2;
    pthread_once(&pool_isa_once, pool_isa_init);
    /* (n,c) planes are contiguous in X and in out alike */
    for (int64_t nc = 0; nc < g->N * g->C; nc++) {
        if (fast)
            pool_isa.fwd2x2(g, X + nc * HW, out + nc * PQ);
        else
            max_pool_plane(g, X + nc * HW, out + nc * PQ);
    }
}

void dnn_max_pool_backward(const DnnGeom *g, const double *X, const double *dout, double *dX)
{
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    if (pool_tiles(g)) {
        pthread_once(&pool_isa_once, pool_isa_init);
        for (int64_t nc = 0; nc < g->N * g->C; nc++)
            pool_isa.bwd_tiled(g, X + nc * HW, dout + nc * PQ, dX + nc * HW);
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

/* Four cells a step (gcc -O2 leaves the plain loop scalar); out may be X. */
typedef double BiasV __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)), may_alias));

void dnn_bias_add(const double *X, int64_t rows, int64_t cols, const double *b, int64_t C,
                  double *out)
{
    const int64_t HW = cols / C;
    for (int64_t n = 0; n < rows; n++)
        for (int64_t c = 0; c < C; c++) {
            const double *x = X + n * cols + c * HW;
            double *o = out + n * cols + c * HW, bc = b[c];
            int64_t k = 0;
            for (; k + 4 <= HW; k += 4)
                *(BiasV *)(o + k) = *(const BiasV *)(x + k) + bc;
            for (; k < HW; k++)
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
