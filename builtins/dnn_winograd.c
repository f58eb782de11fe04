/* SPDX-License-Identifier: Apache-2.0
 * Winograd F(4x4, 5x5) for the three passes of conv2d (dnn_winograd.h).
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
 * 1e-13).
 * In single precision (blas_single()) the tiles, their transforms and the
 * 64 products are float (sgemm): the planes are rounded to float as they
 * are copied for the tiles, the filters transformed in double and then
 * rounded, the outputs widened as they are stored; the filter gradient's
 * last transform runs in double. The error is then about 2^6 float
 * roundings of the sum of |terms| (tests/unit/test_precision.c bounds it).
 * The tile code is written once, for an element type, in
 * dnn_winograd_tmpl.h, and included below for double and for float. */
#include "dnn_winograd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "../runtime/blas.h"


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
 * by 180 degrees. Computed in double, stored into U, or rounded into Uf
 * when U is NULL.
 * WG_FJ filters at a time, side by side in the order of U's columns
 * (o * I + i), so that every step is one operation over WG_FJ lanes and the
 * 64 points are stored as runs of WG_FJ cells: the filters one by one wrote
 * each of their 64 values into a different plane of U, and ran at 3.5% of
 * LeNet's single-precision training (perf). Each cell is the same sums in
 * the same order as one filter at a time gave (0 plus five products, left
 * to right), so the bits are unchanged; the AVX2 instance has no FMA, so no
 * product is fused into its sum. */
enum { WG_FJ = 64 };
/* four filters' cells (gcc -O2 leaves the plain loops scalar) */
typedef double WgF4 __attribute__((vector_size(4 * sizeof(double))));

typedef struct WgFilt {
    _Alignas(64) double k[25][WG_FJ];
    _Alignas(64) double t[8][5][WG_FJ];
    _Alignas(64) double u[WG_FJ];
} WgFilt;

static inline __attribute__((always_inline)) void wg_filters_body(const DnnGeom *g, const double *Wt, bool turn, double *U, float *Uf, WgFilt *w)
{
    const int64_t F = g->F, C = g->C, I = turn ? F : C, OI = F * C;
    for (int64_t j0 = 0; j0 < OI; j0 += WG_FJ) {
        const int64_t nj = OI - j0 < WG_FJ ? OI - j0 : WG_FJ;
        for (int64_t j = 0; j < WG_FJ; j++) {
            if (j >= nj) {
                for (int r = 0; r < 25; r++)
                    w->k[r][j] = 0.0;
                continue;
            }
            const int64_t o = (j0 + j) / I, i = (j0 + j) % I;
            const double *src = Wt + ((turn ? i : o) * C + (turn ? o : i)) * 25;
            for (int r = 0; r < 25; r++)
                w->k[r][j] = turn ? src[24 - r] : src[r];
        }
        for (int a = 0; a < 8; a++)      /* t = G k (8x5) */
            for (int s = 0; s < 5; s++) {
                WgF4 *t = (WgF4 *)w->t[a][s];
                for (int j = 0; j < WG_FJ / 4; j++)
                    t[j] = (WgF4){0.0, 0.0, 0.0, 0.0};
                for (int r = 0; r < 5; r++) {
                    const double gr = wg_G[a][r];
                    const WgF4 *k = (const WgF4 *)w->k[r * 5 + s];
                    for (int j = 0; j < WG_FJ / 4; j++)
                        t[j] += gr * k[j];
                }
            }
        for (int a = 0; a < 8; a++)      /* U = t G^T (8x8) */
            for (int b = 0; b < 8; b++) {
                WgF4 *uv = (WgF4 *)w->u;
                for (int j = 0; j < WG_FJ / 4; j++)
                    uv[j] = (WgF4){0.0, 0.0, 0.0, 0.0};
                for (int s = 0; s < 5; s++) {
                    const double gs = wg_G[b][s];
                    const WgF4 *t = (const WgF4 *)w->t[a][s];
                    for (int j = 0; j < WG_FJ / 4; j++)
                        uv[j] += t[j] * gs;
                }
                const double *u = w->u;
                const int64_t at = (a * 8 + b) * OI + j0;
                if (U)
                    for (int64_t j = 0; j < nj; j++)
                        U[at + j] = u[j];
                else
                    for (int64_t j = 0; j < nj; j++)
                        Uf[at + j] = (float)u[j];
            }
    }
}

static void wg_filters_base(const DnnGeom *g, const double *Wt, bool turn, double *U, float *Uf, WgFilt *w)
{
    wg_filters_body(g, Wt, turn, U, Uf, w);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2")))
static void wg_filters_avx2(const DnnGeom *g, const double *Wt, bool turn, double *U, float *Uf, WgFilt *w)
{
    wg_filters_body(g, Wt, turn, U, Uf, w);
}
#endif

/* -1 when the scratch cannot be had */
static int wg_filters(const DnnGeom *g, const double *Wt, bool turn, double *U, float *Uf)
{
    WgFilt *w = aligned_alloc(64, sizeof *w);
    if (!w)
        return -1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        wg_filters_avx2(g, Wt, turn, U, Uf, w);
    else
#endif
        wg_filters_base(g, Wt, turn, U, Uf, w);
    free(w);
    return 0;
}

/* The tile code's vectors: WG_L lanes (see dnn_winograd_tmpl.h). */
#define WG_L 4
#define WG_INLINE static inline __attribute__((always_inline))
/* WG_L doubles, and the same unaligned and aliasing (the operands' cells,
 * loaded and stored by the tile code of either type) */
typedef double WgS __attribute__((vector_size(WG_L * sizeof(double))));
typedef double WgSu __attribute__((vector_size(WG_L * sizeof(double)), aligned(sizeof(double)), may_alias));
/* cells past a split plane that the spare lanes of its last tiles read */
#define WG_PAD_SPARE 8

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

/* Images per batch: the caller's choice, else about WG_TARGET_BYTES of
 * transformed tiles ('per' bytes per image). */
static int64_t wg_batch(const DnnGeom *g, int64_t per)
{
    int64_t nb = g->batch > 0 ? g->batch : WG_TARGET_BYTES / per;
    return nb > g->N ? g->N : nb < 1 ? 1 : nb;
}

/* an instance's names: x followed by its WG_SFX */
#define WG_N2(a, b) a##b
#define WG_N1(a, b) WG_N2(a, b)
#define WG_N(x) WG_N1(x, WG_SFX)

#define WG_T double
#define WG_SFX d
#define WG_UINT uint64_t
#define WG_EXPBITS (0x7ffULL << 52)
#define WG_GEMM blas_dgemm
#define WG_FILTERS(g, Wt, turn, U) wg_filters(g, Wt, turn, U, NULL)
#define WG_CHECK_FILTERS 0
#define WG_QUAD 0
#include "dnn_winograd_tmpl.h"

#define WG_T float
#define WG_SFX f
#define WG_UINT uint32_t
#define WG_EXPBITS (0xffU << 23)
#define WG_GEMM blas_sgemm
#define WG_FILTERS(g, Wt, turn, U) wg_filters(g, Wt, turn, NULL, U)
#define WG_CHECK_FILTERS 1
#define WG_QUAD 1
#include "dnn_winograd_tmpl.h"

/* Whether a[0..n) holds no Inf or NaN (the exponent all ones) */
static bool all_finite(const double *a, int64_t n)
{
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, &a[i], sizeof b);
        bad |= (b & (0x7ffULL << 52)) == (0x7ffULL << 52);
    }
    return !bad;
}

/* The filters are checked up front (they are small); the planes, as the
 * tile code copies them: it answers 1 when one is not finite. */
int dnn_wg_forward(const DnnGeom *g, const double *X, const double *Wt, double *out)
{
    if (g->N <= 0 || !wg_use(g) || !all_finite(Wt, g->F * g->C * 25))
        return 1;
    return blas_single() ? wg_corr_f(g, false, Wt, X, out) : wg_corr_d(g, false, Wt, X, out);
}

int dnn_wg_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW)
{
    if (g->N <= 0 || !wg_use(g))
        return 1;
    return blas_single() ? wg_filter_grad_f(g, X, dout, dW) : wg_filter_grad_d(g, X, dout, dW);
}

int dnn_wg_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX)
{
    if (g->N <= 0 || !wg_use(g) || !all_finite(Wt, g->F * g->C * 25))
        return 1;
    return blas_single() ? wg_corr_f(g, true, Wt, dout, dX) : wg_corr_d(g, true, Wt, dout, dX);
}
