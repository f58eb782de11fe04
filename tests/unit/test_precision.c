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
 * convolutions TOL = 1e-4 (Winograd's transforms in double, its products
 * in float: measured worst 3e-6 here). The sum of |terms| is the double
 * computation on |operands|. Below the size threshold the products stay in
 * double, bit for bit (runtime/blas.c, sgemm_pays); bad precision names
 * are refused. */
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
    check_report_(within(s, d, bound, nout, 1e-4), __FILE__, __LINE__,
                  "%s (N %lld, C %lld, %lldx%lld, F %lld, %s): single off the double result by more than 1e-4 "
                  "of the sum of |terms|", what, (long long)g->N, (long long)g->C, (long long)g->H, (long long)g->W,
                  (long long)g->F, g->winograd > 0 ? "Winograd" : "im2col");
    /* single precision really rounds, except im2col's products for conv1
     * (1 channel: 25 multiply-adds per cell), which stay double
     * (runtime/blas.c, sgemm_pays) */
    check_report_(g->C < 8 && g->winograd < 0 ? memcmp(s, d, (size_t)nout * sizeof *s) == 0
                                              : memcmp(s, d, (size_t)nout * sizeof *s) != 0,
                  __FILE__, __LINE__, "%s (C %lld, %s): single and double %s", what, (long long)g->C,
                  g->winograd > 0 ? "Winograd" : "im2col", g->C < 8 && g->winograd < 0 ? "differ" : "agree");
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

static void test_conv(int64_t N, int64_t C, int64_t HW, int64_t F, int winograd)
{
    DnnGeom g = {.N = N, .C = C, .H = HW, .W = HW, .F = F, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2,
                 .winograd = winograd};
    CHECK(dnn_geom_output(&g));
    int64_t CHW = C * HW * HW, CRS = C * 25, FPQ = F * g.P * g.Q;
    conv_pass("conv2d", &g, fwd, N * CHW, F * CRS, N * FPQ);
    conv_pass("conv2d_backward_filter", &g, bwf, N * CHW, N * FPQ, F * CRS);
    conv_pass("conv2d_backward_data", &g, bwd, F * CRS, N * FPQ, N * CHW);
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
        test_conv(8, 1, 28, 32, w);
        test_conv(4, 32, 14, 64, w);
    }
    CHECK(!blas_single());
    printf("worst |single - double| / tolerance: %.3g\n", worst);
    return CHECK_DONE();
}
