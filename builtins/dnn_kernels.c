/* SPDX-License-Identifier: Apache-2.0
 * DNN kernels on row-major double arrays (see dnn_kernels.h for the layout
 * and the formula of each). Convolutions run on BLAS: a batch of images is
 * unrolled by im2col into a (C*R*S) x (B*P*Q) matrix so that one dgemm of
 * large n does the arithmetic; col2im folds the columns back for the data
 * gradient. The memory-bound loops around the dgemm (im2col, col2im, the
 * copies between per-image and batched layouts, pooling) are split over up
 * to g->threads threads of our own. No global state: scratch is malloc'd per
 * call and freed on every path, so threads may call concurrently. */
#include "dnn_kernels.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"

/* Aim for an im2col buffer of about this many bytes per dgemm: large enough
 * that dgemm sees thousands of columns, small enough to stay in the last-level
 * cache between im2col writing it and dgemm reading it. */
#define DNN_COLS_TARGET_BYTES ((int64_t)4 << 20)
/* Below this many cells touched, one thread does a loop: creating a thread
 * costs tens of microseconds. */
#define DNN_MIN_CELLS_PER_THREAD ((int64_t)32768)
#define DNN_MAX_THREADS 64

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

/* ---- running a loop in parts on several threads ---- */

/* One part of a split loop: does slice 'part' of 'nparts' of the work in ctx. */
typedef void (*PartFn)(void *ctx, int part, int nparts);

typedef struct PartArg {
    PartFn fn;
    void *ctx;
    int part, nparts;
} PartArg;

static void *part_main(void *p)
{
    PartArg *a = p;
    a->fn(a->ctx, a->part, a->nparts);
    return NULL;
}

/* Runs fn(ctx, t, nparts) for every t < nparts: part 0 on the calling thread,
 * the others on new threads, and returns when all are done. A part whose
 * thread cannot be created runs on the caller, so this cannot fail. */
static void run_parts(int nparts, PartFn fn, void *ctx)
{
    if (nparts <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_t tid[DNN_MAX_THREADS];
    PartArg arg[DNN_MAX_THREADS];
    bool started[DNN_MAX_THREADS];
    for (int t = 1; t < nparts; t++) {
        arg[t] = (PartArg){fn, ctx, t, nparts};
        started[t] = pthread_create(&tid[t], NULL, part_main, &arg[t]) == 0;
    }
    fn(ctx, 0, nparts);
    for (int t = 1; t < nparts; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            fn(ctx, t, nparts);
    }
}

/* How many parts to split a loop touching 'cells' doubles into. */
static int parts_for(const DnnGeom *g, int64_t cells)
{
    int64_t t = g->threads < 1 ? 1 : g->threads;
    if (t > DNN_MAX_THREADS)
        t = DNN_MAX_THREADS;
    if (t > cells / DNN_MIN_CELLS_PER_THREAD)
        t = cells / DNN_MIN_CELLS_PER_THREAD;
    return t < 1 ? 1 : (int)t;
}

/* Part t of T of the units [0, n): [*lo, *hi). */
static inline void slice(int64_t n, int t, int T, int64_t *lo, int64_t *hi)
{
    *lo = n * t / T;
    *hi = n * (t + 1) / T;
}

/* ---- im2col / col2im ---- */

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

/* d[i] += s[i]; 'restrict' lets the compiler vectorise without an overlap test. */
static inline void add_run(double *restrict d, const double *restrict s, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] += s[i];
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

/* ---- the three convolutions: one batched pipeline ----
 * For each batch of b images: a stage (split over threads) prepares it
 * (im2col and/or gathering dout into F x (b*PQ)) and, in the same stage,
 * finishes the previous batch (scattering the product into the output rows,
 * or col2im); then one dgemm on the whole batch. Preparing batch k and
 * finishing batch k-1 touch different buffers, so they can share a stage. */

typedef enum ConvOp { CONV_FWD, CONV_BWF, CONV_BWD } ConvOp;

typedef struct Conv {
    const DnnGeom *g;
    ConvOp op;
    const double *X, *Wt, *dout;
    double *res;            /* out (FWD), dW (BWF) or dX (BWD) */
    double *cols;           /* CRS x (b*PQ) im2col matrix */
    double *buf;            /* F x (b*PQ): product (FWD) or gathered dout (BWF, BWD); b > 1 only */
    int64_t pre_n0, pre_b;  /* batch to prepare in this stage (pre_b == 0: none) */
    int64_t post_n0, post_b;    /* batch to finish in this stage */
} Conv;

static void conv_stage(void *ctx, int t, int T)
{
    const Conv *cv = ctx;
    const DnnGeom *g = cv->g;
    const int64_t C = g->C, F = g->F, HW = g->H * g->W, CHW = C * HW;
    const int64_t PQ = g->P * g->Q, FPQ = F * PQ;
    const size_t row_bytes = (size_t)PQ * sizeof(double);
    int64_t lo, hi;
    if (cv->pre_b > 0) {
        int64_t n0 = cv->pre_n0, b = cv->pre_b, ld = b * PQ;
        if (cv->op != CONV_BWD) {   /* units: (image, channel) */
            slice(b * C, t, T, &lo, &hi);
            for (int64_t u = lo; u < hi; u++)
                im2col_channel(g, cv->X + (n0 + u / C) * CHW, u % C, cv->cols + (u / C) * PQ, ld);
        }
        if (cv->op != CONV_FWD && b > 1) {  /* units: (image, filter) */
            slice(b * F, t, T, &lo, &hi);
            for (int64_t u = lo; u < hi; u++)
                memcpy(cv->buf + (u % F) * ld + (u / F) * PQ, cv->dout + (n0 + u / F) * FPQ + (u % F) * PQ,
                       row_bytes);
        }
    }
    if (cv->post_b > 0) {
        int64_t n0 = cv->post_n0, b = cv->post_b, ld = b * PQ;
        if (cv->op == CONV_FWD && b > 1) {  /* units: (image, filter) */
            slice(b * F, t, T, &lo, &hi);
            for (int64_t u = lo; u < hi; u++)
                memcpy(cv->res + (n0 + u / F) * FPQ + (u % F) * PQ, cv->buf + (u % F) * ld + (u / F) * PQ,
                       row_bytes);
        }
        if (cv->op == CONV_BWD) {   /* units: (image, channel); each owns one dX plane */
            slice(b * C, t, T, &lo, &hi);
            for (int64_t u = lo; u < hi; u++) {
                double *plane = cv->res + (n0 + u / C) * CHW + (u % C) * HW;
                memset(plane, 0, (size_t)HW * sizeof(double));
                col2im_channel(g, cv->cols + (u / C) * PQ, ld, u % C, plane);
            }
        }
    }
}

/* The dgemm of one batch (n0, b) after its stage. */
static void conv_gemm(const Conv *cv, int64_t n0, int64_t b)
{
    const DnnGeom *g = cv->g;
    const int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, FPQ = g->F * PQ, ld = b * PQ;
    /* one image's dout row already is F x PQ with leading dimension PQ */
    const double *d = b > 1 ? cv->buf : cv->dout + n0 * FPQ;
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
    case CONV_BWD:  /* cols (CRS x bPQ) = W^T (CRS x F) * dout_B (F x bPQ) */
        blas_dgemm(true, false, CRS, ld, g->F, 1.0, cv->Wt, CRS, d, ld, 0.0, cv->cols, ld);
        break;
    }
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
    int64_t nb = g->batch > 0 ? g->batch : DNN_COLS_TARGET_BYTES / (per * (int64_t)sizeof(double));
    nb = nb > g->N ? g->N : nb < 1 ? 1 : nb;
    if (nb > (INT64_MAX / 16) / per)
        nb = 1;
    cv->cols = malloc((size_t)(per * nb) * sizeof(double));
    cv->buf = nb > 1 ? malloc((size_t)(g->F * nb * PQ) * sizeof(double)) : NULL;
    if (!cv->cols || (nb > 1 && !cv->buf)) {
        free(cv->cols);
        free(cv->buf);
        return -1;
    }
    const int parts = parts_for(g, (CRS + g->F) * nb * PQ);
    cv->post_b = 0;
    for (int64_t n0 = 0;; n0 += nb) {
        int64_t b = g->N - n0 < nb ? g->N - n0 : nb;
        cv->pre_n0 = n0;
        cv->pre_b = b > 0 ? b : 0;
        if (cv->pre_b == 0 && cv->post_b == 0)
            break;
        run_parts(parts, conv_stage, cv);
        if (cv->pre_b == 0)
            break;
        conv_gemm(cv, n0, b);
        cv->post_n0 = n0;
        cv->post_b = b;
    }
    free(cv->cols);
    free(cv->buf);
    return 0;
}

int dnn_conv2d(const DnnGeom *g, const double *X, const double *Wt, double *out)
{
    Conv cv = {.g = g, .op = CONV_FWD, .X = X, .Wt = Wt, .res = out};
    return conv_run(&cv);
}

int dnn_conv2d_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    Conv cv = {.g = g, .op = CONV_BWF, .X = X, .dout = dout, .res = dW};
    return conv_run(&cv);
}

int dnn_conv2d_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX)
{
    Conv cv = {.g = g, .op = CONV_BWD, .Wt = Wt, .dout = dout, .res = dX};
    return conv_run(&cv);
}

/* ---- pooling: direct loops, split over (image, channel) planes ---- */

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
 * into the zeroed plane dx. */
static void max_pool_backward_plane(const DnnGeom *g, const double *x, const double *d, double *dx)
{
    for (int64_t p = 0; p < g->P; p++)
        for (int64_t q = 0; q < g->Q; q++) {
            int64_t h0, h1, w0, w1;
            pool_window(g, p, q, &h0, &h1, &w0, &w1);
            if (h0 >= h1 || w0 >= w1)
                continue;   /* window wholly in the padding: no input cell */
            /* strict '>' keeps the first maximum in row-major order; selects,
             * not a branch (see max_pool_plane) */
            int64_t best = h0 * g->W + w0;
            double m = x[best];
            for (int64_t h = h0; h < h1; h++)
                for (int64_t w = w0; w < w1; w++) {
                    double v = x[h * g->W + w];
                    int gt = v > m;
                    m = gt ? v : m;
                    best = gt ? h * g->W + w : best;
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

typedef enum PoolOp { POOL_MAX, POOL_MAX_BW, POOL_AVG, POOL_AVG_BW } PoolOp;

typedef struct Pool {
    const DnnGeom *g;
    PoolOp op;
    const double *X, *dout;
    double *res;
} Pool;

/* (n,c) planes are contiguous in X, dout and the result alike, so one index
 * walks all three. */
static void pool_part(void *ctx, int t, int T)
{
    const Pool *pl = ctx;
    const DnnGeom *g = pl->g;
    const int64_t HW = g->H * g->W, PQ = g->P * g->Q;
    int64_t lo, hi;
    slice(g->N * g->C, t, T, &lo, &hi);
    for (int64_t nc = lo; nc < hi; nc++) {
        switch (pl->op) {
        case POOL_MAX:
            max_pool_plane(g, pl->X + nc * HW, pl->res + nc * PQ);
            break;
        case POOL_AVG:
            avg_pool_plane(g, pl->X + nc * HW, pl->res + nc * PQ);
            break;
        case POOL_MAX_BW:
            memset(pl->res + nc * HW, 0, (size_t)HW * sizeof(double));
            max_pool_backward_plane(g, pl->X + nc * HW, pl->dout + nc * PQ, pl->res + nc * HW);
            break;
        case POOL_AVG_BW:
            memset(pl->res + nc * HW, 0, (size_t)HW * sizeof(double));
            avg_pool_backward_plane(g, pl->dout + nc * PQ, pl->res + nc * HW);
            break;
        }
    }
}

static void pool_run(const DnnGeom *g, PoolOp op, const double *X, const double *dout, double *res)
{
    Pool pl = {.g = g, .op = op, .X = X, .dout = dout, .res = res};
    run_parts(parts_for(g, g->N * g->C * (g->H * g->W + g->P * g->Q)), pool_part, &pl);
}

void dnn_max_pool(const DnnGeom *g, const double *X, double *out)
{
    pool_run(g, POOL_MAX, X, NULL, out);
}

void dnn_max_pool_backward(const DnnGeom *g, const double *X, const double *dout, double *dX)
{
    pool_run(g, POOL_MAX_BW, X, dout, dX);
}

void dnn_avg_pool(const DnnGeom *g, const double *X, double *out)
{
    pool_run(g, POOL_AVG, X, NULL, out);
}

void dnn_avg_pool_backward(const DnnGeom *g, const double *dout, double *dX)
{
    pool_run(g, POOL_AVG_BW, NULL, dout, dX);
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
