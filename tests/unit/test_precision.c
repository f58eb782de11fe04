/* SPDX-License-Identifier: Apache-2.0
 * Single precision (--precision single, runtime/blas.c): every product that
 * takes the sgemm path (blas_dgemm with each transpose, alpha and beta;
 * conv2d and both gradients by im2col and by Winograd, at LeNet's shapes)
 * against the same call in double precision.
 *
 * The documented tolerance: per output cell,
 *     |single - double| <= TOL * (the sum of |terms| of that cell) + 1e-300
 * with TOL = 2^-23 * (k + 2) for a product of inner dimension k (the
 * rounding of both operands to float and float accumulation, with 2x
 * slack over the classic (k + 2) u bound, u = 2^-24), and for the
 * convolutions TOL = 1e-4: im2col's products as above (conv1's forward
 * and filter gradient by float im2col and sgemm, each image's filter
 * gradient added in double), and Winograd
 * (builtins/dnn_winograd.c) wholly in float, whose transforms scale terms
 * by up to 2^6 before they cancel (measured worst about 1e-5 here, printed
 * at the end). The sum of |terms| is the double computation on |operands|.
 * Below the size threshold the products stay in double, bit for bit
 * (runtime/blas.c, sgemm_pays); bad precision names are refused. Single
 * precision conv2d is also checked to repeat its bits, to leave operands
 * with an Inf, or beyond float's range, to the im2col path (as double
 * does for Inf), and on odd plane sizes and several batches. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/dnn_kernels.h"
#include "check.h"
#include "runtime/blas.h"

static uint64_t rs = 0x2545F4914F6CDD1DULL;

static double urand(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0 * 2 - 1;
}

static double *filled(int64_t n)
{
    double *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    for (int64_t i = 0; i < n; i++)
        a[i] = urand();
    return a;
}

static double *absd(const double *a, int64_t n)
{
    double *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    for (int64_t i = 0; i < n; i++)
        b[i] = fabs(a[i]);
    return b;
}

static double worst;    /* the largest |single - double| / bound seen */
static double worst_conv;   /* the same over the convolutions, / sum |terms| */

/* Every cell within tol * bound[i]; records the worst ratio. */
static bool within(const double *s, const double *d, const double *bound, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(s[i] - d[i]), b = tol * bound[i] + 1e-300;
        if (e / b > worst)
            worst = e / b;
        if (!(e <= b))
            return false;
    }
    return true;
}

static void test_gemm(bool tA, bool tB, int64_t m, int64_t n, int64_t k, double alpha, double beta)
{
    int64_t lda = (tA ? m : k) + 3, ldb = (tB ? k : n) + 1, ldc = n + 2;
    int64_t ar = tA ? k : m, br = tB ? n : k;
    double *A = filled(ar * lda), *B = filled(br * ldb), *C0 = filled(m * ldc);
    double *Cs = malloc((size_t)(m * ldc) * sizeof *Cs), *Cd = malloc((size_t)(m * ldc) * sizeof *Cd);
    double *bound = calloc((size_t)(m * ldc), sizeof *bound);
    double *aA = absd(A, ar * lda), *aB = absd(B, br * ldb);
    memcpy(Cs, C0, (size_t)(m * ldc) * sizeof *Cs);
    memcpy(Cd, C0, (size_t)(m * ldc) * sizeof *Cd);
    CHECK(blas_precision_set("single"));
    blas_dgemm(tA, tB, m, n, k, alpha, A, lda, B, ldb, beta, Cs, ldc);
    CHECK(blas_precision_set("double"));
    blas_dgemm(tA, tB, m, n, k, alpha, A, lda, B, ldb, beta, Cd, ldc);
    blas_dgemm(tA, tB, m, n, k, fabs(alpha), aA, lda, aB, ldb, 0.0, bound, ldc);
    for (int64_t i = 0; i < m * ldc; i++)   /* beta * C is formed in double */
        bound[i] += fabs(beta * C0[i]) * 1e-9;
    double mnk = (double)m * n * k;     /* runtime/blas.c's sgemm_pays */
    bool small = mnk < (1 << 15) || mnk < 32 * ((double)m * k + (double)k * n + (double)m * n);
    if (small)
        check_report_(memcmp(Cs, Cd, (size_t)(m * ldc) * sizeof *Cs) == 0, __FILE__, __LINE__,
                      "dgemm %c%c %lldx%lldx%lld below the threshold: not the double result", tA ? 'T' : 'N',
                      tB ? 'T' : 'N', (long long)m, (long long)n, (long long)k);
    else
        check_report_(within(Cs, Cd, bound, m * ldc, ldexp(1.0, -23) * (double)(k + 2)), __FILE__, __LINE__,
                      "dgemm %c%c %lldx%lldx%lld alpha %g beta %g: single off the double result by more than "
                      "the tolerance", tA ? 'T' : 'N', tB ? 'T' : 'N', (long long)m, (long long)n, (long long)k,
                      alpha, beta);
    /* and single precision really rounds (else the test above proves nothing) */
    if (!small)
        CHECK(memcmp(Cs, Cd, (size_t)(m * ldc) * sizeof *Cs) != 0);
    free(A), free(B), free(C0), free(Cs), free(Cd), free(bound), free(aA), free(aB);
}

typedef int (*ConvFn)(const DnnGeom *g, const double *a, const double *b, double *out);

/* One conv pass in single and double, and on |operands| for the bound. */
static void conv_pass(const char *what, const DnnGeom *g, ConvFn f, int64_t na, int64_t nb, int64_t nout)
{
    double *a = filled(na), *b = filled(nb), *aa = absd(a, na), *ab = absd(b, nb);
    double *s = malloc((size_t)nout * sizeof *s), *d = malloc((size_t)nout * sizeof *d);
    double *bound = malloc((size_t)nout * sizeof *bound);
    CHECK(blas_precision_set("single"));
    CHECK(f(g, a, b, s) == 0);
    CHECK(blas_precision_set("double"));
    CHECK(f(g, a, b, d) == 0);
    CHECK(f(g, aa, ab, bound) == 0);
    double w0 = worst;
    worst = 0;
    within(s, d, bound, nout, 1.0);
    worst_conv = worst > worst_conv ? worst : worst_conv;
    worst = w0;
    check_report_(within(s, d, bound, nout, 1e-4), __FILE__, __LINE__,
                  "%s (N %lld, C %lld, %lldx%lld, F %lld, %s): single off the double result by more than 1e-4 "
                  "of the sum of |terms|", what, (long long)g->N, (long long)g->C, (long long)g->H, (long long)g->W,
                  (long long)g->F, g->winograd > 0 ? "Winograd" : "im2col");
    /* single precision really rounds (Winograd always, im2col at conv2's
     * shape, and conv1's forward and filter gradient, whose thin im2col
     * matrix builtins/dnn_kernels.c builds in float), except conv1's data
     * gradient by im2col (1 channel: 25 multiply-adds per cell), whose
     * products stay double (runtime/blas.c, sgemm_pays); the small im2col
     * shapes may go either way */
    bool same = memcmp(s, d, (size_t)nout * sizeof *s) == 0;
    bool bwd_data = strcmp(what, "conv2d_backward_data") == 0;
    bool want_same = g->C == 1 && g->winograd < 0 && bwd_data;
    bool want_diff = g->winograd > 0 || g->C == 32 || (g->C == 1 && !bwd_data);
    check_report_(want_same ? same : want_diff ? !same : true, __FILE__, __LINE__, "%s (C %lld, %s): single and "
                  "double %s", what, (long long)g->C, g->winograd > 0 ? "Winograd" : "im2col", same ? "agree" : "differ");
    free(a), free(b), free(aa), free(ab), free(s), free(d), free(bound);
}

static int fwd(const DnnGeom *g, const double *X, const double *W, double *o) { return dnn_conv2d(g, X, W, o); }
static int bwf(const DnnGeom *g, const double *X, const double *D, double *o)
{
    return dnn_conv2d_backward_filter(g, X, D, o);
}
static int bwd(const DnnGeom *g, const double *W, const double *D, double *o)
{
    return dnn_conv2d_backward_data(g, W, D, o);
}

static void test_conv(int64_t N, int64_t C, int64_t HW, int64_t F, int winograd, int64_t pad, int64_t batch)
{
    DnnGeom g = {.N = N, .C = C, .H = HW, .W = HW, .F = F, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = pad, .pw = pad,
                 .winograd = winograd, .batch = batch};
    CHECK(dnn_geom_output(&g));
    int64_t CHW = C * HW * HW, CRS = C * 25, FPQ = F * g.P * g.Q;
    conv_pass("conv2d", &g, fwd, N * CHW, F * CRS, N * FPQ);
    conv_pass("conv2d_backward_filter", &g, bwf, N * CHW, N * FPQ, F * CRS);
    conv_pass("conv2d_backward_data", &g, bwd, F * CRS, N * FPQ, N * CHW);
}

/* Single-precision Winograd at conv2's shape: the same bits twice; an Inf
 * in the planes, or a cell of the planes or filters beyond float's range
 * (Inf once rounded), sends the call to im2col: the result is single im2col's bits, without the NaN
 * that Inf - Inf in the transforms would give. */
static void test_conv_edges(void)
{
    DnnGeom g = {.N = 2, .C = 32, .H = 14, .W = 14, .F = 64, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2,
                 .winograd = 1};
    CHECK(dnn_geom_output(&g));
    const int64_t nx = g.N * g.C * 196, nw = g.F * g.C * 25, no = g.N * g.F * g.P * g.Q;
    double *X = filled(nx), *W = filled(nw), *a = malloc((size_t)no * sizeof *a), *b = malloc((size_t)no * sizeof *b);
    CHECK(blas_precision_set("single"));
    CHECK(dnn_conv2d(&g, X, W, a) == 0);
    CHECK(dnn_conv2d(&g, X, W, b) == 0);
    CHECK(memcmp(a, b, (size_t)no * sizeof *a) == 0);
    for (int k = 0; k < 2; k++) {
        X[333] = k == 0 ? INFINITY : 1e300;     /* Inf, and Inf once rounded to float */
        g.winograd = 1;
        CHECK(dnn_conv2d(&g, X, W, a) == 0);
        g.winograd = -1;
        CHECK(dnn_conv2d(&g, X, W, b) == 0);
        CHECK(memcmp(a, b, (size_t)no * sizeof *a) == 0);
        int64_t bad = 0;
        for (int64_t i = 0; i < no; i++)
            bad += isnan(a[i]);
        check_report_(bad == 0, __FILE__, __LINE__, "single conv2d with %s in a plane: %lld NaN cells",
                      k == 0 ? "Inf" : "1e300", (long long)bad);
    }
    /* the same for a filter beyond float's range, forward and data gradient */
    X[333] = 0.5;
    W[77] = 1e300;
    g.winograd = 1;
    CHECK(dnn_conv2d(&g, X, W, a) == 0);
    g.winograd = -1;
    CHECK(dnn_conv2d(&g, X, W, b) == 0);
    CHECK(memcmp(a, b, (size_t)no * sizeof *a) == 0);
    double *D = filled(no), *dx1 = malloc((size_t)nx * sizeof *dx1), *dx2 = malloc((size_t)nx * sizeof *dx2);
    g.winograd = 1;
    CHECK(dnn_conv2d_backward_data(&g, W, D, dx1) == 0);
    g.winograd = -1;
    CHECK(dnn_conv2d_backward_data(&g, W, D, dx2) == 0);
    CHECK(memcmp(dx1, dx2, (size_t)nx * sizeof *dx1) == 0);
    CHECK(blas_precision_set("double"));
    free(X), free(W), free(a), free(b), free(D), free(dx1), free(dx2);
}

int main(void)
{
    CHECK(!blas_precision_set("half"));
    CHECK(!blas_precision_set(""));
    CHECK(!blas_precision_set("Single"));
    CHECK(!blas_single());
    static const struct { int64_t m, n, k; } S[] = {
        {64, 500, 800}, {128, 128, 128}, {137, 161, 129}, {64, 512, 3136}, {100, 300, 257},
        {1, 4096, 64}, {300, 7, 40}, {10, 10, 10}, {4096, 4096, 1}, {2, 3, 5}, {64, 3000, 32},
    };
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++)
        for (int t = 0; t < 4; t++) {
            test_gemm(t & 1, t & 2, S[i].m, S[i].n, S[i].k, 1.0, 0.0);
            test_gemm(t & 1, t & 2, S[i].m, S[i].n, S[i].k, -0.5, 1.0);
        }
    /* LeNet's conv1 (1 -> 32 channels) and conv2 (32 -> 64), both paths */
    for (int w = -1; w <= 1; w += 2) {
        test_conv(8, 1, 28, 32, w, 2, 0);
        test_conv(4, 32, 14, 64, w, 2, 0);
        test_conv(5, 9, 11, 10, w, 1, 2);   /* odd planes, three batches */
        test_conv(3, 8, 13, 12, w, 4, 0);
        test_conv(2, 5, 23, 6, w, 2, 0);    /* planes wider than one 16-cell split step; 4 + 1 channels */
    }
    test_conv_edges();
    CHECK(!blas_single());
    printf("worst |single - double| / tolerance: %.3g (products); conv2d: %.3g of the sum of |terms|\n", worst,
           worst_conv);
    return CHECK_DONE();
}
