/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/dnn_kernels.c: every kernel against reference loops
 * written straight from the formulas of doc/builtins.md, "Deep learning", on many
 * shapes (strides 1-3, padding 0-2, C > 1, non-square images and filters,
 * N = 1 and 3, P or Q = 1) and with 1, 2 and automatic images per dgemm;
 * larger shapes with short last batches; plus centred finite-difference
 * checks of every backward pass; Winograd F(4x4,5x5) against an error bound.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/dnn_kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Tally {
    int passed, failed;
} Tally;

static void check(Tally *t, int ok, const char *what, const char *shape)
{
    if (ok) {
        t->passed++;
    } else {
        t->failed++;
        printf("FAIL: %s [%s]\n", what, shape);
    }
}

/* Small deterministic generator (xorshift64*): uniform in [-1, 1). */
static double rnd(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return (double)((*st * 2685821657736338717ULL) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double *rnd_array(uint64_t *st, int64_t n)
{
    double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        a[i] = rnd(st);
    return a;
}

/* max |a-b| / max(1, max |b|) <= tol */
static int close_rel(const double *a, const double *b, int64_t n, double tol)
{
    double diff = 0.0, scale = 1.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= diff))
            diff = d;   /* also catches NaN */
        if (fabs(b[i]) > scale)
            scale = fabs(b[i]);
    }
    return diff <= tol * scale;
}

/* ---- reference implementations, index by index from the formulas ---- */

/* Xpad[n,c,h,w] with zero padding outside the image */
static double xpad(const DnnGeom *g, const double *X, int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (h < 0 || h >= g->H || w < 0 || w >= g->W)
        return 0.0;
    return X[n * g->C * g->H * g->W + c * g->H * g->W + h * g->W + w];
}

static void ref_conv2d(const DnnGeom *g, const double *X, const double *Wt, double *out)
{
    int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t f = 0; f < g->F; f++)
            for (int64_t p = 0; p < g->P; p++)
                for (int64_t q = 0; q < g->Q; q++) {
                    double sum = 0.0;
                    for (int64_t c = 0; c < g->C; c++)
                        for (int64_t r = 0; r < g->R; r++)
                            for (int64_t s = 0; s < g->S; s++)
                                sum += Wt[f * CRS + (c * g->R + r) * g->S + s] *
                                       xpad(g, X, n, c, p * g->sh + r - g->ph, q * g->sw + s - g->pw);
                    out[n * g->F * PQ + f * PQ + p * g->Q + q] = sum;
                }
}

static void ref_conv2d_bf(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q;
    for (int64_t f = 0; f < g->F; f++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t r = 0; r < g->R; r++)
                for (int64_t s = 0; s < g->S; s++) {
                    double sum = 0.0;
                    for (int64_t n = 0; n < g->N; n++)
                        for (int64_t p = 0; p < g->P; p++)
                            for (int64_t q = 0; q < g->Q; q++)
                                sum += dout[n * g->F * PQ + f * PQ + p * g->Q + q] *
                                       xpad(g, X, n, c, p * g->sh + r - g->ph, q * g->sw + s - g->pw);
                    dW[f * CRS + (c * g->R + r) * g->S + s] = sum;
                }
}

static void ref_conv2d_bd(const DnnGeom *g, const double *Wt, const double *dout, double *dX)
{
    int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, CHW = g->C * g->H * g->W;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t h = 0; h < g->H; h++)
                for (int64_t w = 0; w < g->W; w++) {
                    double sum = 0.0;
                    for (int64_t f = 0; f < g->F; f++)
                        for (int64_t p = 0; p < g->P; p++)
                            for (int64_t q = 0; q < g->Q; q++)
                                for (int64_t r = 0; r < g->R; r++)
                                    for (int64_t s = 0; s < g->S; s++)
                                        if (p * g->sh + r - g->ph == h && q * g->sw + s - g->pw == w)
                                            sum += Wt[f * CRS + (c * g->R + r) * g->S + s] *
                                                   dout[n * g->F * PQ + f * PQ + p * g->Q + q];
                    dX[n * CHW + c * g->H * g->W + h * g->W + w] = sum;
                }
}

/* Pool references: 'mode' 0 = max, 1 = avg. Backward takes the max position
 * as the first strictly greater cell scanning the window row by row. */
static void ref_pool(const DnnGeom *g, const double *X, double *out, int mode)
{
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t p = 0; p < g->P; p++)
                for (int64_t q = 0; q < g->Q; q++) {
                    double m = -DBL_MAX, sum = 0.0;
                    for (int64_t r = 0; r < g->R; r++)
                        for (int64_t s = 0; s < g->S; s++) {
                            int64_t h = p * g->sh + r - g->ph, w = q * g->sw + s - g->pw;
                            if (h < 0 || h >= g->H || w < 0 || w >= g->W)
                                continue;
                            double v = xpad(g, X, n, c, h, w);
                            sum += v;
                            if (v > m)
                                m = v;
                        }
                    out[((n * g->C + c) * g->P + p) * g->Q + q] = mode == 0 ? m : sum / (double)(g->R * g->S);
                }
}

static void ref_pool_bw(const DnnGeom *g, const double *X, const double *dout, double *dX, int mode)
{
    int64_t HW = g->H * g->W;
    memset(dX, 0, (size_t)(g->N * g->C * HW) * sizeof(double));
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t p = 0; p < g->P; p++)
                for (int64_t q = 0; q < g->Q; q++) {
                    double d = dout[((n * g->C + c) * g->P + p) * g->Q + q];
                    int64_t best = -1;
                    double m = 0.0;
                    for (int64_t r = 0; r < g->R; r++)
                        for (int64_t s = 0; s < g->S; s++) {
                            int64_t h = p * g->sh + r - g->ph, w = q * g->sw + s - g->pw;
                            if (h < 0 || h >= g->H || w < 0 || w >= g->W)
                                continue;
                            int64_t at = (n * g->C + c) * HW + h * g->W + w;
                            if (mode == 1)
                                dX[at] += d / (double)(g->R * g->S);
                            else if (best < 0 || X[at] > m) {
                                best = at;
                                m = X[at];
                            }
                        }
                    if (mode == 0 && best >= 0)
                        dX[best] += d;
                }
}

/* ---- the tests ---- */

typedef struct Shape {
    int64_t N, C, H, W, F, R, S, sh, sw, ph, pw;
} Shape;

static const Shape shapes[] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0},
    {3, 2, 7, 6, 4, 3, 2, 1, 1, 1, 1},      /* non-square image and filter */
    {3, 3, 9, 8, 2, 3, 3, 2, 2, 1, 0},      /* stride 2 */
    {2, 2, 6, 7, 3, 2, 3, 2, 1, 2, 1},      /* mixed strides, padding 2/1 */
    {1, 1, 4, 9, 2, 4, 3, 1, 3, 0, 0},      /* P = 1 */
    {3, 2, 5, 3, 3, 2, 3, 1, 1, 0, 0},      /* Q = 1 */
    {3, 2, 5, 5, 3, 5, 5, 1, 1, 2, 2},      /* "same" padding, LeNet-like */
    {2, 1, 7, 7, 2, 2, 2, 3, 3, 0, 0},      /* stride larger than filter */
    {3, 2, 8, 6, 2, 3, 3, 2, 2, 2, 2},      /* stride 2, padding 2 */
    {1, 3, 3, 4, 2, 3, 4, 1, 1, 0, 0},      /* P = Q = 1 */
    {3, 1, 6, 6, 2, 2, 2, 2, 2, 0, 0},      /* pool fast shape */
    {2, 2, 3, 3, 2, 1, 1, 40, 40, 40, 40},  /* padded plane too big: the clipped loops */
    {2, 2, 4, 5, 2, 3, 2, 3, 2, 1, 2},      /* strides 3/2 with padding */
    {2, 2, 5, 7, 2, 2, 2, 2, 2, 0, 0},      /* 2x2 pool tiles, a row and a column left over */
    {2, 2, 7, 8, 2, 3, 2, 3, 2, 0, 0},      /* 3x2 pool tiles, a row left over */
    {2, 2, 7, 7, 2, 3, 3, 2, 2, 0, 0},      /* overlapping pool windows */
    {2, 3, 6, 10, 2, 2, 2, 2, 2, 0, 0},     /* 2x2 tiles, 5 a row: four windows a step and one */
    {1, 2, 5, 19, 2, 2, 2, 2, 2, 0, 0},     /* 2x2 tiles, 9 a row, a row and a column left over */
};

static void shape_name(const Shape *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "N=%ld C=%ld H=%ld W=%ld F=%ld R=%ld S=%ld stride=%ld,%ld pad=%ld,%ld",
             (long)s->N, (long)s->C, (long)s->H, (long)s->W, (long)s->F, (long)s->R, (long)s->S,
             (long)s->sh, (long)s->sw, (long)s->ph, (long)s->pw);
}

static DnnGeom geom_of(const Shape *s, int64_t batch)
{
    DnnGeom g = {.N = s->N, .C = s->C, .H = s->H, .W = s->W, .F = s->F, .R = s->R, .S = s->S,
                 .sh = s->sh, .sw = s->sw, .ph = s->ph, .pw = s->pw, .batch = batch};
    dnn_geom_output(&g);
    return g;
}

static void test_conv_vs_ref(Tally *t, const Shape *sh, uint64_t *st)
{
    char name[160];
    shape_name(sh, name, sizeof name);
    DnnGeom g = geom_of(sh, 0);
    int64_t CHW = g.C * g.H * g.W, CRS = g.C * g.R * g.S, FPQ = g.F * g.P * g.Q;
    double *X = rnd_array(st, g.N * CHW), *Wt = rnd_array(st, g.F * CRS);
    double *dout = rnd_array(st, g.N * FPQ);
    double *ref = malloc((size_t)(g.N * (FPQ > CHW ? FPQ : CHW) + g.F * CRS) * sizeof(double));
    double *got = malloc((size_t)(g.N * (FPQ > CHW ? FPQ : CHW) + g.F * CRS) * sizeof(double));
    const int64_t batches[] = {0, 1, 2};
    for (int bi = 0; bi < 3; bi++) {
        g.batch = batches[bi];
        char what[64];
        ref_conv2d(&g, X, Wt, ref);
        memset(got, 0xff, (size_t)(g.N * FPQ) * sizeof(double));   /* NaN garbage */
        snprintf(what, sizeof what, "conv2d batch=%ld", (long)g.batch);
        check(t, dnn_conv2d(&g, X, Wt, got) == 0 && close_rel(got, ref, g.N * FPQ, 1e-10), what, name);

        ref_conv2d_bf(&g, X, dout, ref);
        memset(got, 0xff, (size_t)(g.F * CRS) * sizeof(double));
        snprintf(what, sizeof what, "conv2d_backward_filter batch=%ld", (long)g.batch);
        check(t, dnn_conv2d_backward_filter(&g, X, dout, got) == 0 && close_rel(got, ref, g.F * CRS, 1e-10),
              what, name);

        ref_conv2d_bd(&g, Wt, dout, ref);
        memset(got, 0xff, (size_t)(g.N * CHW) * sizeof(double));
        snprintf(what, sizeof what, "conv2d_backward_data batch=%ld", (long)g.batch);
        check(t, dnn_conv2d_backward_data(&g, Wt, dout, got) == 0 && close_rel(got, ref, g.N * CHW, 1e-10),
              what, name);
    }
    free(X);
    free(Wt);
    free(dout);
    free(ref);
    free(got);
}

static void test_pool_vs_ref(Tally *t, const Shape *sh, uint64_t *st)
{
    char name[160];
    shape_name(sh, name, sizeof name);
    DnnGeom g = geom_of(sh, 0);
    int64_t CHW = g.C * g.H * g.W, CPQ = g.C * g.P * g.Q;
    /* values from {-1, 0, 1} make ties common, exercising "first maximum" */
    double *X = rnd_array(st, g.N * CHW);
    for (int64_t i = 0; i < g.N * CHW; i++)
        X[i] = floor(X[i] * 1.5 + 0.5);
    double *dout = rnd_array(st, g.N * CPQ);
    double *ref = malloc((size_t)(g.N * (CHW > CPQ ? CHW : CPQ)) * sizeof(double));
    double *got = malloc((size_t)(g.N * (CHW > CPQ ? CHW : CPQ)) * sizeof(double));
    for (int mode = 0; mode < 2; mode++) {
        const char *fw = mode ? "avg_pool" : "max_pool";
        const char *bw = mode ? "avg_pool_backward" : "max_pool_backward";
        ref_pool(&g, X, ref, mode);
        memset(got, 0xff, (size_t)(g.N * CPQ) * sizeof(double));
        if (mode)
            dnn_avg_pool(&g, X, got);
        else
            dnn_max_pool(&g, X, got);
        check(t, close_rel(got, ref, g.N * CPQ, 1e-10), fw, name);
        if (!mode) /* max_pool picks values: bit for bit */
            check(t, memcmp(got, ref, (size_t)(g.N * CPQ) * sizeof(double)) == 0, "max_pool exact", name);
        ref_pool_bw(&g, X, dout, ref, mode);
        memset(got, 0xff, (size_t)(g.N * CHW) * sizeof(double));
        if (mode)
            dnn_avg_pool_backward(&g, dout, got);
        else
            dnn_max_pool_backward(&g, X, dout, got);
        check(t, close_rel(got, ref, g.N * CHW, 1e-10), bw, name);
        if (!mode)
            check(t, memcmp(got, ref, (size_t)(g.N * CHW) * sizeof(double)) == 0, "max_pool_backward exact",
                  name);
    }
    free(X);
    free(dout);
    free(ref);
    free(got);
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Gradient checks: L = sum(op(...) .* G) for random G; d L / d v by centred
 * differences, against the backward kernel's value, for every input cell. */
static void test_conv_gradients(Tally *t, const Shape *sh, uint64_t *st)
{
    char name[160];
    shape_name(sh, name, sizeof name);
    DnnGeom g = geom_of(sh, 0);
    int64_t CHW = g.C * g.H * g.W, CRS = g.C * g.R * g.S, FPQ = g.F * g.P * g.Q;
    double *X = rnd_array(st, g.N * CHW), *Wt = rnd_array(st, g.F * CRS);
    double *G = rnd_array(st, g.N * FPQ), *out = malloc((size_t)(g.N * FPQ) * sizeof(double));
    double *dW = malloc((size_t)(g.F * CRS) * sizeof(double));
    double *dX = malloc((size_t)(g.N * CHW) * sizeof(double));
    const double eps = 1e-5;
    dnn_conv2d_backward_filter(&g, X, G, dW);
    dnn_conv2d_backward_data(&g, Wt, G, dX);
    double worst = 0.0;
    for (int64_t i = 0; i < g.F * CRS; i++) {
        double keep = Wt[i];
        Wt[i] = keep + eps;
        dnn_conv2d(&g, X, Wt, out);
        double lp = dot(out, G, g.N * FPQ);
        Wt[i] = keep - eps;
        dnn_conv2d(&g, X, Wt, out);
        double lm = dot(out, G, g.N * FPQ);
        Wt[i] = keep;
        double e = fabs((lp - lm) / (2 * eps) - dW[i]) / fmax(1.0, fabs(dW[i]));
        worst = fmax(worst, e);
    }
    check(t, worst < 1e-6, "conv2d_backward_filter gradient check", name);
    worst = 0.0;
    for (int64_t i = 0; i < g.N * CHW; i++) {
        double keep = X[i];
        X[i] = keep + eps;
        dnn_conv2d(&g, X, Wt, out);
        double lp = dot(out, G, g.N * FPQ);
        X[i] = keep - eps;
        dnn_conv2d(&g, X, Wt, out);
        double lm = dot(out, G, g.N * FPQ);
        X[i] = keep;
        double e = fabs((lp - lm) / (2 * eps) - dX[i]) / fmax(1.0, fabs(dX[i]));
        worst = fmax(worst, e);
    }
    check(t, worst < 1e-6, "conv2d_backward_data gradient check", name);
    free(X);
    free(Wt);
    free(G);
    free(out);
    free(dW);
    free(dX);
}

static void test_pool_gradients(Tally *t, const Shape *sh, uint64_t *st)
{
    char name[160];
    shape_name(sh, name, sizeof name);
    DnnGeom g = geom_of(sh, 0);
    int64_t CHW = g.C * g.H * g.W, CPQ = g.C * g.P * g.Q;
    /* distinct values (random doubles) keep each window's argmax stable
     * under a perturbation of eps */
    double *X = rnd_array(st, g.N * CHW), *G = rnd_array(st, g.N * CPQ);
    double *out = malloc((size_t)(g.N * CPQ) * sizeof(double));
    double *dX = malloc((size_t)(g.N * CHW) * sizeof(double));
    const double eps = 1e-7;
    for (int mode = 0; mode < 2; mode++) {
        if (mode)
            dnn_avg_pool_backward(&g, G, dX);
        else
            dnn_max_pool_backward(&g, X, G, dX);
        double worst = 0.0;
        for (int64_t i = 0; i < g.N * CHW; i++) {
            double keep = X[i], lp, lm;
            X[i] = keep + eps;
            mode ? dnn_avg_pool(&g, X, out) : dnn_max_pool(&g, X, out);
            lp = dot(out, G, g.N * CPQ);
            X[i] = keep - eps;
            mode ? dnn_avg_pool(&g, X, out) : dnn_max_pool(&g, X, out);
            lm = dot(out, G, g.N * CPQ);
            X[i] = keep;
            double e = fabs((lp - lm) / (2 * eps) - dX[i]) / fmax(1.0, fabs(dX[i]));
            worst = fmax(worst, e);
        }
        check(t, worst < 1e-6, mode ? "avg_pool_backward gradient check" : "max_pool_backward gradient check",
              name);
    }
    free(X);
    free(G);
    free(out);
    free(dX);
}

/* Larger shapes, one and several images per dgemm, with a short last batch:
 * results must match the references. */
static const Shape big_shapes[] = {
    {8, 3, 32, 30, 4, 3, 3, 1, 1, 1, 1},
    {16, 2, 20, 21, 3, 5, 4, 2, 2, 2, 1},
    {20, 4, 40, 40, 2, 2, 2, 2, 2, 0, 0},
    {6, 8, 10, 9, 4, 4, 4, 1, 1, 1, 1},     /* C*R*S = 128: the kernels batch images themselves */
};

static void test_big(Tally *t, const Shape *sh, uint64_t *st)
{
    char name[160];
    shape_name(sh, name, sizeof name);
    DnnGeom g = geom_of(sh, 0);
    int64_t CHW = g.C * g.H * g.W, CRS = g.C * g.R * g.S, FPQ = g.F * g.P * g.Q, CPQ = g.C * g.P * g.Q;
    int64_t big = g.N * (FPQ > CHW ? FPQ : CHW);
    double *X = rnd_array(st, g.N * CHW), *Wt = rnd_array(st, g.F * CRS);
    double *dout = rnd_array(st, g.N * (FPQ > CPQ ? FPQ : CPQ));
    double *ref[3], *one[3], *many[3];
    for (int k = 0; k < 3; k++) {
        ref[k] = malloc((size_t)big * sizeof(double));
        one[k] = malloc((size_t)big * sizeof(double));
        many[k] = malloc((size_t)big * sizeof(double));
    }
    int64_t len[3] = {g.N * FPQ, g.F * CRS, g.N * CHW};
    ref_conv2d(&g, X, Wt, ref[0]);
    ref_conv2d_bf(&g, X, dout, ref[1]);
    ref_conv2d_bd(&g, Wt, dout, ref[2]);
    const int64_t batches[] = {0, 3, 5};
    g.batch = 1;
    dnn_conv2d(&g, X, Wt, one[0]);
    dnn_conv2d_backward_filter(&g, X, dout, one[1]);
    dnn_conv2d_backward_data(&g, Wt, dout, one[2]);
    const char *what[3] = {"conv2d", "conv2d_backward_filter", "conv2d_backward_data"};
    for (int k = 0; k < 3; k++) {
        char w[96];
        snprintf(w, sizeof w, "%s batch=1 vs reference", what[k]);
        check(t, close_rel(one[k], ref[k], len[k], 1e-10), w, name);
    }
    for (int bi = 0; bi < 3; bi++) {
        g.batch = batches[bi];
        dnn_conv2d(&g, X, Wt, many[0]);
        dnn_conv2d_backward_filter(&g, X, dout, many[1]);
        dnn_conv2d_backward_data(&g, Wt, dout, many[2]);
        for (int k = 0; k < 3; k++) {
            char w[96];
            snprintf(w, sizeof w, "%s batch=%ld vs reference", what[k], (long)g.batch);
            check(t, close_rel(many[k], ref[k], len[k], 1e-10), w, name);
        }
    }
    /* pooling against the references */
    for (int mode = 0; mode < 2; mode++) {
        ref_pool(&g, X, ref[0], mode);
        ref_pool_bw(&g, X, dout, ref[1], mode);
        if (mode) {
            dnn_avg_pool(&g, X, one[0]);
            dnn_avg_pool_backward(&g, dout, one[1]);
        } else {
            dnn_max_pool(&g, X, one[0]);
            dnn_max_pool_backward(&g, X, dout, one[1]);
        }
        check(t, close_rel(one[0], ref[0], g.N * CPQ, 1e-10), mode ? "avg_pool" : "max_pool", name);
        check(t, close_rel(one[1], ref[1], g.N * CHW, 1e-10), mode ? "avg_pool_backward" : "max_pool_backward",
              name);
    }
    for (int k = 0; k < 3; k++) {
        free(ref[k]);
        free(one[k]);
        free(many[k]);
    }
    free(X);
    free(Wt);
    free(dout);
}

static void test_pool_edges(Tally *t)
{
    /* A window wholly in the padding: max_pool gives -DBL_MAX and the
     * backward pass drops its dout; a NaN in a window gives NaN. */
    DnnGeom g = {.N = 1, .C = 1, .H = 1, .W = 1, .R = 1, .S = 1, .sh = 1, .sw = 1, .ph = 1, .pw = 1};
    dnn_geom_output(&g);   /* P = Q = 3, only the centre window holds the pixel */
    double X[1] = {5.0}, out[9], dout[9], dX[1];
    dnn_max_pool(&g, X, out);
    check(t, g.P == 3 && out[0] == -DBL_MAX && out[4] == 5.0, "max_pool padding-only window", "1x1 pad 1");
    for (int i = 0; i < 9; i++)
        dout[i] = 1.0;
    dnn_max_pool_backward(&g, X, dout, dX);
    check(t, dX[0] == 1.0, "max_pool_backward padding-only window", "1x1 pad 1");
    dnn_avg_pool(&g, X, out);
    check(t, out[0] == 0.0 && out[4] == 5.0, "avg_pool padding-only window", "1x1 pad 1");

    DnnGeom h = {.N = 1, .C = 1, .H = 2, .W = 2, .R = 2, .S = 2, .sh = 2, .sw = 2};
    dnn_geom_output(&h);
    double Y[4] = {1.0, NAN, 3.0, 2.0}, o[1];
    dnn_max_pool(&h, Y, o);
    check(t, isnan(o[0]), "max_pool NaN propagates", "2x2");

    /* NaN in a window and -0.0 in dout, on the 2x2 tiles, on 3x3 tiles and
     * on overlapping windows (three kernels): as the reference, bit for bit.
     * A NaN first in its window keeps the gradient; a later NaN never
     * beats the running maximum. */
    const int64_t geo[3][4] = {{2, 2, 2, 2}, {3, 3, 3, 3}, {3, 3, 2, 2}};
    for (int k = 0; k < 3; k++) {
        DnnGeom q = {.N = 2, .C = 1, .H = 6, .W = 6, .R = geo[k][0], .S = geo[k][1], .sh = geo[k][2],
                     .sw = geo[k][3]};
        dnn_geom_output(&q);
        double Z[72], dz[2 * 9], want[72], got[72];
        for (int i = 0; i < 72; i++)
            Z[i] = (double)((i * 7) % 5);
        Z[0] = NAN;          /* first cell of the first window */
        Z[8] = NAN;          /* inside a later window */
        Z[43] = -0.0;
        for (int i = 0; i < 2 * 9; i++)
            dz[i] = i % 3 == 0 ? -0.0 : (double)i;
        ref_pool_bw(&q, Z, dz, want, 0);
        dnn_max_pool_backward(&q, Z, dz, got);
        check(t, memcmp(want, got, sizeof want) == 0, "max_pool_backward NaN and -0.0", "6x6");
        double po[18];
        dnn_max_pool(&q, Z, po);
        check(t, isnan(po[0]) && !isnan(po[q.P * q.Q]), "max_pool NaN window", "6x6");
    }

    /* The same on 2x2 tiles 5 to a row (the vector steps of four windows,
     * then one): NaN, Inf, -0.0 and ties in every lane position, against the
     * reference bit for bit, forward and backward. */
    {
        DnnGeom q = {.N = 2, .C = 2, .H = 4, .W = 10, .R = 2, .S = 2, .sh = 2, .sw = 2};
        dnn_geom_output(&q);
        enum { NX = 2 * 2 * 4 * 10, ND = 2 * 2 * 2 * 5 };
        double Z[NX], dz[ND], want[NX], got[NX], pw[ND], pg[ND];
        const double pick[8] = {NAN, 1.0, -0.0, 0.0, INFINITY, -INFINITY, 1.0, -2.0};
        for (int i = 0; i < NX; i++)
            Z[i] = pick[(i * 5 + i / 7) % 8];
        for (int i = 0; i < ND; i++)
            dz[i] = i % 4 == 0 ? -0.0 : i % 4 == 1 ? NAN : (double)i - 7.5;
        ref_pool_bw(&q, Z, dz, want, 0);
        memset(got, 0xff, sizeof got);
        dnn_max_pool_backward(&q, Z, dz, got);
        check(t, memcmp(want, got, sizeof want) == 0, "max_pool_backward NaN, Inf, -0.0, ties", "4x10");
        ref_pool(&q, Z, pw, 0);
        /* the reference skips NaN; max_pool gives NaN for a window holding one */
        for (int64_t nc = 0; nc < q.N * q.C; nc++)
            for (int64_t p = 0; p < q.P; p++)
                for (int64_t w = 0; w < q.Q; w++) {
                    const double *z = Z + nc * 40 + 2 * p * 10 + 2 * w;
                    if (isnan(z[0]) || isnan(z[1]) || isnan(z[10]) || isnan(z[11]))
                        pw[(nc * q.P + p) * q.Q + w] = NAN;
                }
        dnn_max_pool(&q, Z, pg);
        check(t, memcmp(pw, pg, sizeof pw) == 0, "max_pool NaN, Inf, -0.0, ties", "4x10");
    }

    DnnGeom bad = {.N = 1, .C = 1, .H = 2, .W = 5, .R = 3, .S = 3, .sh = 1, .sw = 1};
    check(t, !dnn_geom_output(&bad), "window larger than image is rejected", "2x5 window 3x3");
}

static void test_bias(Tally *t, uint64_t *st)
{
    const int64_t rows = 3, C = 4, HW = 5, cols = C * HW;
    double *X = rnd_array(st, rows * cols), *b = rnd_array(st, C);
    double *got = malloc((size_t)(rows * cols) * sizeof(double));
    int ok_add = 1, ok_mul = 1;
    dnn_bias_add(X, rows, cols, b, C, got);
    for (int64_t n = 0; n < rows; n++)
        for (int64_t j = 0; j < cols; j++)
            ok_add &= got[n * cols + j] == X[n * cols + j] + b[j / HW];
    dnn_bias_multiply(X, rows, cols, b, C, got);
    for (int64_t n = 0; n < rows; n++)
        for (int64_t j = 0; j < cols; j++)
            ok_mul &= got[n * cols + j] == X[n * cols + j] * b[j / HW];
    check(t, ok_add, "bias_add", "3x20, C=4");
    check(t, ok_mul, "bias_multiply", "3x20, C=4");
    /* in place (out aliases X) */
    double keep0 = X[7];
    dnn_bias_add(X, rows, cols, b, C, X);
    check(t, X[7] == keep0 + b[1], "bias_add in place", "3x20, C=4");
    free(X);
    free(b);
    free(got);
}

/* conv2d_backward_data clears its im2col columns as col2im reads them, and
 * every dgemm after the first adds into those zeros (beta = 1) instead of
 * having BLAS zero them: image n of an N-image call must give the same bits
 * as a call on image n alone (always beta = 0), padded path with stride 1
 * and 2, and the reference; and a second call must not see the first's
 * columns. */
static void test_bwd_cleared_columns(Tally *t, uint64_t *st)
{
    static const Shape sh[] = {
        {5, 3, 9, 9, 4, 5, 5, 1, 1, 2, 2},     /* LeNet-like "same" padding */
        {4, 2, 9, 8, 3, 3, 3, 2, 2, 1, 1},     /* stride 2 */
    };
    for (size_t k = 0; k < sizeof sh / sizeof sh[0]; k++) {
        char name[160];
        shape_name(&sh[k], name, sizeof name);
        DnnGeom g = geom_of(&sh[k], 1), g1 = geom_of(&sh[k], 1);
        g1.N = 1;
        int64_t CHW = g.C * g.H * g.W, CRS = g.C * g.R * g.S, FPQ = g.F * g.P * g.Q;
        double *Wt = rnd_array(st, g.F * CRS), *dout = rnd_array(st, g.N * FPQ);
        double *all = malloc((size_t)(g.N * CHW) * sizeof(double));
        double *one = malloc((size_t)CHW * sizeof(double));
        double *ref = malloc((size_t)(g.N * CHW) * sizeof(double));
        ref_conv2d_bd(&g, Wt, dout, ref);
        for (int pass = 0; pass < 2; pass++) {
            int same = dnn_conv2d_backward_data(&g, Wt, dout, all) == 0;
            for (int64_t n = 0; n < g.N; n++) {
                same &= dnn_conv2d_backward_data(&g1, Wt, dout + n * FPQ, one) == 0;
                same &= memcmp(one, all + n * CHW, (size_t)CHW * sizeof(double)) == 0;
            }
            check(t, same, pass ? "conv2d_backward_data again: image by image, same bits"
                                : "conv2d_backward_data: image by image, same bits", name);
            check(t, close_rel(all, ref, g.N * CHW, 1e-10), "conv2d_backward_data cleared columns vs reference",
                  name);
        }
        free(Wt);
        free(dout);
        free(all);
        free(one);
        free(ref);
    }
}

/* Winograd F(4x4,5x5) (dnn_winograd_fits shapes): the largest error against
 * the reference loops within 1e-13 of the largest sum of the magnitudes of an
 * output's terms (the reference run on |X|, |W|, |dout|; normwise, as an
 * output whose terms cancel exactly, 0 in the reference, gets the rounding
 * of its tile's transforms); forced on, chosen by the kernels
 * (C, F >= 8), with 1, 3 and the kernels' images per batch; ragged tiles
 * (P, Q not multiples of 4), padding 0-4, a 1x1 image, planes 1 and 2 tiles
 * wide, rows of 2 and 3 groups of 4 tiles (rows of 16 cells and more are
 * split by whole vectors). Shapes that do not fit fall back to
 * im2col even when asked for Winograd. */
static int within_bound(const double *a, const double *ref, const double *bound, int64_t n, double tol)
{
    double err = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - ref[i]);
        if (!(d <= err))
            err = d;    /* also catches NaN */
        if (bound[i] > scale)
            scale = bound[i];
    }
    return err <= tol * scale;
}

static void test_winograd(Tally *t, uint64_t *st)
{
    static const Shape sh[] = {
        {2, 8, 9, 9, 8, 5, 5, 1, 1, 2, 2},      /* LeNet conv2 in small: "same" padding */
        {2, 3, 7, 9, 4, 5, 5, 1, 1, 0, 1},      /* odd P and Q: ragged tiles */
        {2, 2, 6, 5, 3, 5, 5, 1, 1, 4, 3},      /* padding 4: the data gradient has none */
        {1, 9, 1, 1, 9, 5, 5, 1, 1, 2, 2},      /* 1x1 image */
        {3, 8, 11, 13, 8, 5, 5, 1, 1, 3, 2},
        {2, 3, 6, 3, 5, 5, 5, 1, 1, 2, 2},      /* narrow planes: a tile row's spare lanes run over the next rows */
        {2, 4, 12, 22, 5, 5, 5, 1, 1, 2, 1},    /* 5 tiles a row: two groups, the second partial */
        {1, 2, 17, 35, 3, 5, 5, 1, 1, 1, 2},    /* 9 tiles a row, 36-cell rows: every split path */
        {2, 2, 9, 9, 2, 5, 5, 1, 1, 5, 5},      /* padding 5: does not fit, im2col */
        {2, 2, 9, 9, 2, 5, 5, 2, 2, 2, 2},      /* stride 2: does not fit, im2col */
    };
    for (size_t k = 0; k < sizeof sh / sizeof sh[0]; k++) {
        char name[160];
        shape_name(&sh[k], name, sizeof name);
        DnnGeom g = geom_of(&sh[k], 0);
        const int64_t CHW = g.C * g.H * g.W, CRS = g.C * g.R * g.S, FPQ = g.F * g.P * g.Q;
        const int64_t len[3] = {g.N * FPQ, g.F * CRS, g.N * CHW};
        double *X = rnd_array(st, g.N * CHW), *Wt = rnd_array(st, g.F * CRS), *dout = rnd_array(st, g.N * FPQ);
        double *aX = malloc((size_t)(g.N * CHW) * sizeof(double)), *aW = malloc((size_t)(g.F * CRS) * sizeof(double));
        double *ad = malloc((size_t)(g.N * FPQ) * sizeof(double));
        for (int64_t i = 0; i < g.N * CHW; i++)
            aX[i] = fabs(X[i]);
        for (int64_t i = 0; i < g.F * CRS; i++)
            aW[i] = fabs(Wt[i]);
        for (int64_t i = 0; i < g.N * FPQ; i++)
            ad[i] = fabs(dout[i]);
        double *ref[3], *bound[3], *got = malloc((size_t)(len[0] + len[1] + len[2]) * sizeof(double));
        for (int op = 0; op < 3; op++) {
            ref[op] = malloc((size_t)len[op] * sizeof(double));
            bound[op] = malloc((size_t)len[op] * sizeof(double));
        }
        ref_conv2d(&g, X, Wt, ref[0]);
        ref_conv2d(&g, aX, aW, bound[0]);
        ref_conv2d_bf(&g, X, dout, ref[1]);
        ref_conv2d_bf(&g, aX, ad, bound[1]);
        ref_conv2d_bd(&g, Wt, dout, ref[2]);
        ref_conv2d_bd(&g, aW, ad, bound[2]);
        const bool fits = dnn_winograd_fits(&g);
        check(t, fits == (k < 8), "dnn_winograd_fits", name);
        const int modes[2] = {1, 0};
        const int64_t batches[3] = {0, 1, 3};
        for (int mi = 0; mi < 2; mi++)
            for (int bi = 0; bi < 3; bi++) {
                g.winograd = modes[mi];
                g.batch = batches[bi];
                const char *ops[3] = {"conv2d", "conv2d_backward_filter", "conv2d_backward_data"};
                for (int op = 0; op < 3; op++) {
                    memset(got, 0xff, (size_t)len[op] * sizeof(double));     /* NaN garbage */
                    int rc = op == 0 ? dnn_conv2d(&g, X, Wt, got)
                             : op == 1 ? dnn_conv2d_backward_filter(&g, X, dout, got)
                             : dnn_conv2d_backward_data(&g, Wt, dout, got);
                    char what[96];
                    snprintf(what, sizeof what, "winograd=%d %s batch=%ld within 1e-13 of max sum |terms|",
                             g.winograd, ops[op], (long)g.batch);
                    check(t, rc == 0 && within_bound(got, ref[op], bound[op], len[op], 1e-13), what, name);
                }
            }
        for (int op = 0; op < 3; op++) {
            free(ref[op]);
            free(bound[op]);
        }
        free(got);
        free(X);
        free(Wt);
        free(dout);
        free(aX);
        free(aW);
        free(ad);
    }
}

/* An Inf or NaN in X, dout or the filters sends every Winograd pass to
 * im2col, whose bits it then gives, also when the bad value sits in a
 * later batch of images than the first (the Winograd path finds it as it
 * copies the planes, after writing the earlier batches' outputs). */
static void test_winograd_nonfinite(Tally *t, uint64_t *st)
{
    const Shape s = {3, 8, 11, 13, 8, 5, 5, 1, 1, 3, 2};
    char name[160];
    shape_name(&s, name, sizeof name);
    DnnGeom g = geom_of(&s, 0);
    const int64_t CHW = g.C * g.H * g.W, FPQ = g.F * g.P * g.Q, CRS = g.C * 25;
    const int64_t len[3] = {g.N * FPQ, g.F * CRS, g.N * CHW};
    const double bad[2] = {INFINITY, NAN};
    for (int which = 0; which < 3; which++)         /* X, dout, filters */
        for (int v = 0; v < 2; v++) {
            double *X = rnd_array(st, g.N * CHW), *Wt = rnd_array(st, g.F * CRS), *dout = rnd_array(st, g.N * FPQ);
            if (which == 0)
                X[2 * CHW + 5 * g.W + 7] = bad[v];          /* image 3 */
            else if (which == 1)
                dout[2 * FPQ + FPQ / 2] = -bad[v];
            else
                Wt[3 * CRS + 12] = bad[v];
            for (int op = 0; op < 3; op++) {
                if (op == (which == 0 ? 2 : which == 1 ? 0 : 1))
                    continue;           /* not one of this pass's operands */
                double *got[2];
                for (int m = 0; m < 2; m++) {
                    got[m] = malloc((size_t)len[op] * sizeof(double));
                    memset(got[m], 0xff, (size_t)len[op] * sizeof(double));
                    g.winograd = m == 0 ? 1 : -1;
                    g.batch = 1;
                    int rc = op == 0 ? dnn_conv2d(&g, X, Wt, got[m])
                             : op == 1 ? dnn_conv2d_backward_filter(&g, X, dout, got[m])
                             : dnn_conv2d_backward_data(&g, Wt, dout, got[m]);
                    check(t, rc == 0, "non-finite operand: rc 0", name);
                }
                char what[96];
                snprintf(what, sizeof what, "non-finite %s (%s) op %d: the im2col bits",
                         which == 0 ? "X" : which == 1 ? "dout" : "W", v ? "NaN" : "Inf", op);
                check(t, memcmp(got[0], got[1], (size_t)len[op] * sizeof(double)) == 0, what, name);
                free(got[0]);
                free(got[1]);
            }
            free(X);
            free(Wt);
            free(dout);
        }
}

int main(void)
{
    Tally t = {0, 0};
    uint64_t st = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        test_conv_vs_ref(&t, &shapes[i], &st);
        test_pool_vs_ref(&t, &shapes[i], &st);
        test_conv_gradients(&t, &shapes[i], &st);
        test_pool_gradients(&t, &shapes[i], &st);
    }
    for (size_t i = 0; i < sizeof big_shapes / sizeof big_shapes[0]; i++)
        test_big(&t, &big_shapes[i], &st);
    test_pool_edges(&t);
    test_bias(&t, &st);
    test_bwd_cleared_columns(&t, &st);
    test_winograd(&t, &st);
    test_winograd_nonfinite(&t, &st);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
