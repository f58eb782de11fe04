/* SPDX-License-Identifier: Apache-2.0
 * The Winograd F(4x4, 5x5) tile code for one element type, included by
 * dnn_winograd.c once per type (no include guard on purpose). Before the
 * include the includer defines:
 *     WG_T        the element type of tiles, transforms and products
 *                 (double, or float in single precision)
 *     WG_SFX      the suffix of this instance's names (d, f)
 *     WG_UINT     the unsigned integer of WG_T's width, and WG_EXPBITS its
 *                 exponent field (all ones: Inf or NaN)
 *     WG_GEMM     blas_dgemm or blas_sgemm
 *     WG_FILTERS(g, Wt, turn, U)  the transformed filters into U (WG_T)
 *     WG_CHECK_FILTERS  1 when they may leave WG_T's range (float), else 0
 *     WG_QUAD     1 to add the four-plane transforms (AVX-512, see WgQ)
 * The header undefines them at its end, ready for the next instance.
 * The operands and results stay double: the planes are rounded to WG_T as
 * wg_split copies them (the one pass over them the tiles need anyway), the
 * outputs widened as the output transform stores them. For double every
 * conversion is the identity and the code is the one dnn_kernels.c had. */

/* this instance's names */
#define WgV WG_N(wgv_)
#define WgVu WG_N(wgvu_)
#define WgV2u WG_N(wgv2u_)
#define WgU WG_N(wgu_)
#define WgIsa WG_N(wgisa_)
#define WgTiles WG_N(wgtiles_)
#define wg_transpose4 WG_N(wg_transpose4_)
#define wg_store64 WG_N(wg_store64_)
#define wg_btv WG_N(wg_btv_)
#define wg_at4v WG_N(wg_at4v_)
#define wg_g4v WG_N(wg_g4v_)
#define wg_input_body WG_N(wg_input_body_)
#define wg_output_body WG_N(wg_output_body_)
#define wg_dout_body WG_N(wg_dout_body_)
#define wg_input_plane_body WG_N(wg_input_plane_body_)
#define wg_output_plane_body WG_N(wg_output_plane_body_)
#define wg_dout_plane_body WG_N(wg_dout_plane_body_)
#define wg_input_base WG_N(wg_input_base_)
#define wg_output_base WG_N(wg_output_base_)
#define wg_dout_base WG_N(wg_dout_base_)
#define wg_input_avx2 WG_N(wg_input_avx2_)
#define wg_output_avx2 WG_N(wg_output_avx2_)
#define wg_dout_avx2 WG_N(wg_dout_avx2_)
#define wg_isa WG_N(wg_isa_)
#define wg_isa_once WG_N(wg_isa_once_)
#define wg_isa_init WG_N(wg_isa_init_)
#define wg_pad_alloc WG_N(wg_pad_alloc_)
#define wg_tiles_init WG_N(wg_tiles_init_)
#define wg_split WG_N(wg_split_)
#define wg_input WG_N(wg_input_)
#define wg_output WG_N(wg_output_)
#define wg_alloc WG_N(wg_alloc_)
#define wg_dout WG_N(wg_dout_)
#define wg_corr WG_N(wg_corr_)
#define wg_filter_grad WG_N(wg_filter_grad_)
#define wg_dpad_cells WG_N(wg_dpad_cells_)

/* a constant of the transforms, as WG_T */
#define K(x) ((WG_T)(x))

typedef WG_T WgV __attribute__((vector_size(WG_L * sizeof(WG_T))));
/* Unaligned vector load and store through a type that may alias WG_T
 * (as the intrinsics' own unaligned types); macros, as a vector passed by
 * value would change the base build's ABI, which gcc warns about */
typedef WG_T WgVu __attribute__((vector_size(WG_L * sizeof(WG_T)), aligned(sizeof(WG_T)), may_alias));
#define WG_LD(v, p) ((v) = *(const WgVu *)(p))
#define WG_ST(p, v) (*(WgVu *)(p) = (v))
/* the same for half a vector */
typedef WG_T WgV2u __attribute__((vector_size(WG_L / 2 * sizeof(WG_T)), aligned(sizeof(WG_T)), may_alias));
#define WG_ST2(p, v) (*(WgV2u *)(p) = (v))
/* a vector of doubles (the operands, the results) loaded as WG_T, and
 * stored from WG_T (WgSu: dnn_winograd.c) */
#define WG_LDS(v, p) ((v) = __builtin_convertvector(*(const WgSu *)(p), WgV))
#define WG_STS(p, v) (*(WgSu *)(p) = __builtin_convertvector((v), WgS))

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
WG_INLINE void wg_store64(const WgV *v, bool full, int n, WG_T *o, int64_t ldxi)
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

/* the point transforms on WgV */
#define XF_V WgV
#define XF_BTV wg_btv
#define XF_AT4V wg_at4v
#define XF_G4V wg_g4v
#include "dnn_winograd_xf.h"

/* Input tiles (ty, tx0 .. tx0+WG_L-1) of the split padded plane 'pe'
 * (rows of wp cells: four phases of wp/4) into o[k*ldxi + lane], k < 64;
 * see wg_store64 for 'full' and n. */
WG_INLINE void wg_input_body(const WG_T *pe, int64_t wp, int64_t ty, int64_t tx0, bool full, int n, WG_T *o,
                             int64_t ldxi)
{
    const int64_t qw = wp / 4;
    WgV d[64], t[64], v[64];
    for (int i = 0; i < 8; i++) {
        const WG_T *row = pe + (4 * ty + i) * wp + tx0;
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
WG_INLINE void wg_output_body(WG_T *m, int64_t ldxi, int64_t TX, int64_t Ho, int64_t Wo, int64_t ty,
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
                m[k * ldxi + l] = 0;
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
                WG_STS(dst + a * Wo, q[4 * a + l]);
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
WG_INLINE void wg_dout_body(const WG_T *pe, int64_t hq, int64_t ty, int64_t tx0, bool full, int n,
                            WG_T *o, int64_t ldxi)
{
    WgV d[16], t[32], v[64];
    for (int a = 0; a < 4; a++) {
        const WG_T *row = pe + (4 * ty + a) * 4 * hq + tx0;
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
WG_INLINE void wg_input_plane_body(const WG_T *pe, int64_t wp, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wg_input_body(pe, wp, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                          o + t, ldxi);
        }
}

WG_INLINE void wg_output_plane_body(WG_T *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
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

WG_INLINE void wg_dout_plane_body(const WG_T *pe, int64_t hq, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wg_dout_body(pe, hq, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                         o + t, ldxi);
        }
}

#if WG_QUAD
/* Four planes side by side: lane g * WG_L + l of a WgQ holds lane l of
 * plane g (four channels of an image, each with its own split plane, or
 * four output channels), so that one AVX-512 vector runs the transforms of
 * 4 * WG_L tiles where a WgV ran WG_L: a quarter of the arithmetic and of
 * the spills of the 64-vector tiles, while the loads and stores of the
 * planes stay one per WG_L tiles (the layout of V, M and D is unchanged).
 * Each lane computes the same expressions as the WG_L-lane code; where
 * the compiler fuses a product into a sum may differ between the two, so
 * the bits are this code's own (the same on every run of a machine). */
typedef WG_T WgQ __attribute__((vector_size(4 * WG_L * sizeof(WG_T))));
#if defined(__x86_64__) && defined(__GNUC__)
#define WGQ_TARGET __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))
#define XF_V WgQ
#define XF_BTV wgq_btv
#define XF_AT4V wgq_at4v
#define XF_G4V wgq_g4v
#include "dnn_winograd_xf.h"

/* v = the WG_L cells at p, p + ps, p + 2 ps and p + 3 ps */
#define WGQ_LD(v, p, ps)                                                                       \
    do {                                                                                       \
        WgV a_, b_, c_, d_;                                                                    \
        WG_LD(a_, (p));                                                                        \
        WG_LD(b_, (p) + (ps));                                                                 \
        WG_LD(c_, (p) + 2 * (ps));                                                             \
        WG_LD(d_, (p) + 3 * (ps));                                                             \
        (v) = __builtin_shufflevector(__builtin_shufflevector(a_, b_, 0, 1, 2, 3, 4, 5, 6, 7),   \
                                      __builtin_shufflevector(c_, d_, 0, 1, 2, 3, 4, 5, 6, 7),   \
                                      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);    \
    } while (0)
/* plane g's WG_L lanes of the WgQ at q (the tile vectors live in memory) */
#define WGQ_PART(v, q, g) WG_LD(v, (const WG_T *)(q) + (g) * WG_L)

/* wg_split with AVX-512: 16 cells a step, the row's last step masked
 * (loads past the row read nothing, stores past it write nothing), the
 * cells dealt to the four phases by one permutation. The same roundings
 * and the same finiteness test (on the cells as float) as wg_split. */
WGQ_TARGET static bool wgq_split_avx512(const double *src, int64_t lds, int64_t rows, int64_t cols, WG_T *dst,
                                        int64_t ldd, int64_t qw, int64_t c0)
{
    _Static_assert(sizeof(WG_T) == 4 && WG_L == 4, "the split is written for float tiles");
    const __m512i deal = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i expb = _mm512_set1_epi32((int)WG_EXPBITS);
    __mmask16 bad = 0;
    for (int64_t h = 0; h < rows; h++) {
        const double *s = src + h * lds;
        WG_T *d = dst + h * ldd, *dq[4];
        for (int j = 0; j < 4; j++)
            dq[j] = d + ((c0 + j) & 3) * qw + ((c0 + j) >> 2);
        for (int64_t x = 0; x < cols; x += 16) {
            const int r = cols - x < 16 ? (int)(cols - x) : 16;
            const __mmask8 mlo = (__mmask8)(r >= 8 ? 0xff : (1u << r) - 1);
            const __mmask8 mhi = (__mmask8)(r >= 16 ? 0xff : r > 8 ? (1u << (r - 8)) - 1 : 0);
            const __m512d lo = _mm512_maskz_loadu_pd(mlo, s + x), hi = _mm512_maskz_loadu_pd(mhi, s + x + 8);
            const __m512 f = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
            bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(f), expb), expb);
            const __m512 p = _mm512_permutexvar_ps(deal, f);
            /* phase j takes the cells x + j, x + 4 + j, ...: (r - j + 3) / 4 of them */
#define WGQ_PHASE(j)                                                                                    \
    _mm_mask_storeu_ps(dq[j] + x / 4, (__mmask8)(r > (j) ? (1u << ((r - (j) + 3) / 4)) - 1 : 0),        \
                       _mm512_extractf32x4_ps(p, j))
            WGQ_PHASE(0);
            WGQ_PHASE(1);
            WGQ_PHASE(2);
            WGQ_PHASE(3);
#undef WGQ_PHASE
        }
    }
    return bad == 0;
}

/* wg_store64 for four planes, os cells apart */
WGQ_TARGET WG_INLINE void wgq_store64(const WgQ *v, bool full, int n, WG_T *o, int64_t os, int64_t ldxi)
{
    for (int k = 0; k < 64; k++)
        for (int g = 0; g < 4; g++) {
            WG_T *p = o + g * os + k * ldxi;
            if (full) {
                WgV x;
                WGQ_PART(x, &v[k], g);
                WG_ST(p, x);
            } else {
                for (int l = 0; l < n; l++)
                    p[l] = v[k][g * WG_L + l];
            }
        }
}

/* wg_input_body for the split planes pe + g * ps, into o + g * os */
WGQ_TARGET WG_INLINE void wgq_input_body(const WG_T *pe, int64_t ps, int64_t wp, int64_t ty, int64_t tx0, bool full, int n,
                              WG_T *o, int64_t os, int64_t ldxi)
{
    const int64_t qw = wp / 4;
    WgQ d[64], t[64], v[64];
    for (int i = 0; i < 8; i++) {
        const WG_T *row = pe + (4 * ty + i) * wp + tx0;
        for (int j = 0; j < 8; j++)
            WGQ_LD(d[i * 8 + j], row + (j & 3) * qw + (j >> 2), ps);
    }
    for (int j = 0; j < 8; j++)
        wgq_btv(d + j, 8, t + j, 8);
    for (int i = 0; i < 8; i++)
        wgq_btv(t + 8 * i, 1, v + 8 * i, 1);
    wgq_store64(v, full, n, o, os, ldxi);
}

/* wg_output_body for the planes m + g * mc, into y + g * ys */
WGQ_TARGET WG_INLINE void wgq_output_body(WG_T *m, int64_t mc, int64_t ldxi, int64_t TX, int64_t Ho, int64_t Wo, int64_t ty0,
                               int64_t tx0, int n, double *y, int64_t ys)
{
    WgQ mv[64], t[32], r[16];
    if (n == WG_L) {
        const WgV zero = {0};
        for (int k = 0; k < 64; k++) {
            WG_T *p = m + k * ldxi;
            WGQ_LD(mv[k], p, mc);
            for (int g = 0; g < 4; g++)
                WG_ST(p + g * mc, zero);
        }
    } else {
        for (int k = 0; k < 64; k++) {
            WgQ x = {0};
            for (int g = 0; g < 4; g++)
                for (int l = 0; l < n; l++) {
                    x[g * WG_L + l] = m[g * mc + k * ldxi + l];
                    m[g * mc + k * ldxi + l] = 0;
                }
            mv[k] = x;
        }
    }
    for (int j = 0; j < 8; j++)
        wgq_at4v(mv + j, 8, t + j, 8);
    for (int a = 0; a < 4; a++)
        wgq_at4v(t + 8 * a, 1, r + 4 * a, 1);
    for (int g = 0; g < 4; g++) {
        /* as wg_output_body, for plane g's lanes */
        WgV rg[16], q[16];
        for (int j = 0; j < 16; j++)
            WGQ_PART(rg[j], &r[j], g);
        for (int a = 0; a < 4; a++)
            wg_transpose4(rg + 4 * a, q + 4 * a);
        int64_t tx = tx0, ty = ty0;
        for (int l = 0; l < n; l++, tx = tx + 1 < TX ? tx + 1 : 0, ty += tx == 0) {
            const int64_t h = 4 * ty, x = 4 * tx;
            const int64_t rows = Ho - h < 4 ? Ho - h : 4, cols = Wo - x < 4 ? Wo - x : 4;
            double *dst = y + g * ys + h * Wo + x;
            /* the tile's first 'cols' columns: a masked store */
            const __mmask8 keep = (__mmask8)((1u << cols) - 1);
            for (int64_t a = 0; a < rows; a++)
                _mm256_mask_storeu_pd(dst + a * Wo, keep, _mm256_cvtps_pd((__m128)q[4 * a + l]));
        }
    }
}

/* wg_dout_body for the split planes pe + g * ps, into o + g * os */
WGQ_TARGET WG_INLINE void wgq_dout_body(const WG_T *pe, int64_t ps, int64_t hq, int64_t ty, int64_t tx0, bool full, int n,
                             WG_T *o, int64_t os, int64_t ldxi)
{
    WgQ d[16], t[32], v[64];
    for (int a = 0; a < 4; a++) {
        const WG_T *row = pe + (4 * ty + a) * 4 * hq + tx0;
        for (int c = 0; c < 4; c++)
            WGQ_LD(d[a * 4 + c], row + c * hq, ps);
    }
    for (int c = 0; c < 4; c++)
        wgq_g4v(d + c, 4, t + c, 4);
    for (int k = 0; k < 8; k++)
        wgq_g4v(t + 4 * k, 1, v + 8 * k, 1);
    wgq_store64(v, full, n, o, os, ldxi);
}

WGQ_TARGET static void wgq_input_avx512(const WG_T *pe, int64_t ps, int64_t wp, int64_t TY, int64_t TX, WG_T *o,
                                        int64_t os, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wgq_input_body(pe, ps, wp, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                           o + t, os, ldxi);
        }
}

WGQ_TARGET static void wgq_output_avx512(WG_T *m, int64_t mc, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho,
                                         int64_t Wo, double *y, int64_t ys)
{
    int64_t ty = 0, tx = 0;
    for (int64_t t = 0; t < TT; t += WG_L) {
        wgq_output_body(m + t, mc, ldxi, TX, Ho, Wo, ty, tx, TT - t < WG_L ? (int)(TT - t) : WG_L, y, ys);
        tx += WG_L;
        for (; tx >= TX; tx -= TX)
            ty++;
    }
}

WGQ_TARGET static void wgq_dout_avx512(const WG_T *pe, int64_t ps, int64_t hq, int64_t TY, int64_t TX, WG_T *o,
                                       int64_t os, int64_t ldxi)
{
    for (int64_t ty = 0; ty < TY; ty++)
        for (int64_t tx = 0; tx < TX; tx += WG_L) {
            const int64_t t = ty * TX + tx;
            wgq_dout_body(pe, ps, hq, ty, tx, t + WG_L <= TY * TX, TX - tx < WG_L ? (int)(TX - tx) : WG_L,
                          o + t, os, ldxi);
        }
}
#undef WGQ_TARGET
#endif
#endif /* WG_QUAD */

typedef struct WgIsa {
    void (*input)(const WG_T *, int64_t, int64_t, int64_t, WG_T *, int64_t);
    void (*output)(WG_T *, int64_t, int64_t, int64_t, int64_t, int64_t, double *);
    void (*dout)(const WG_T *, int64_t, int64_t, int64_t, WG_T *, int64_t);
    bool (*split)(const double *, int64_t, int64_t, int64_t, WG_T *, int64_t, int64_t, int64_t);
    /* four planes at a time (WG_QUAD), NULL where the CPU cannot */
    void (*input4)(const WG_T *, int64_t, int64_t, int64_t, int64_t, WG_T *, int64_t, int64_t);
    void (*output4)(WG_T *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, double *, int64_t);
    void (*dout4)(const WG_T *, int64_t, int64_t, int64_t, int64_t, WG_T *, int64_t, int64_t);
} WgIsa;

static void wg_input_base(const WG_T *pe, int64_t wp, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    wg_input_plane_body(pe, wp, TY, TX, o, ldxi);
}
static void wg_output_base(WG_T *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
                           double *y)
{
    wg_output_plane_body(m, ldxi, TX, TT, Ho, Wo, y);
}
static void wg_dout_base(const WG_T *pe, int64_t hq, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    wg_dout_plane_body(pe, hq, TY, TX, o, ldxi);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma")))
static void wg_input_avx2(const WG_T *pe, int64_t wp, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    wg_input_plane_body(pe, wp, TY, TX, o, ldxi);
}
__attribute__((target("avx2,fma")))
static void wg_output_avx2(WG_T *m, int64_t ldxi, int64_t TX, int64_t TT, int64_t Ho, int64_t Wo,
                           double *y)
{
    wg_output_plane_body(m, ldxi, TX, TT, Ho, Wo, y);
}
__attribute__((target("avx2,fma")))
static void wg_dout_avx2(const WG_T *pe, int64_t hq, int64_t TY, int64_t TX, WG_T *o, int64_t ldxi)
{
    wg_dout_plane_body(pe, hq, TY, TX, o, ldxi);
}
#endif

static bool wg_split(const double *src, int64_t lds, int64_t rows, int64_t cols, WG_T *dst, int64_t ldd,
                     int64_t qw, int64_t c0);
static WgIsa wg_isa = {wg_input_base, wg_output_base, wg_dout_base, wg_split, NULL, NULL, NULL};
static pthread_once_t wg_isa_once = PTHREAD_ONCE_INIT;

static void wg_isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        wg_isa = (WgIsa){wg_input_avx2, wg_output_avx2, wg_dout_avx2, wg_split, NULL, NULL, NULL};
#if WG_QUAD
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && wg_isa.input == wg_input_avx2) {
        wg_isa.split = wgq_split_avx512;
        wg_isa.input4 = wgq_input_avx512;
        wg_isa.output4 = wgq_output_avx512;
        wg_isa.dout4 = wgq_dout_avx512;
    }
#endif
#endif
}

/* The tiles of one correlation: 'Ci' planes of Hi x Wi in, padding ph, pw,
 * Ho x Wo out, covered by TY x TX tiles of 4x4 outputs. 'pad' holds a
 * plane's padded input, split (wg_input): (4*TY+4) rows of 4*TX+4 cells,
 * zero where no input cell lands, and WG_PAD_SPARE cells more that the
 * spare lanes of the last tiles read; four such planes, 'ps' cells apart,
 * for the four-plane transforms. */
typedef struct WgTiles {
    int64_t Ci, Hi, Wi, ph, pw, Ho, Wo, TY, TX, ps;
    WG_T *pad;
} WgTiles;

/* Four zeroed split planes for w (see WgTiles), or NULL */
static WG_T *wg_pad_alloc(const WgTiles *w)
{
    return calloc((size_t)(4 * w->ps), sizeof(WG_T));
}

static void wg_tiles_init(WgTiles *w, int64_t Ci, int64_t Hi, int64_t Wi, int64_t ph, int64_t pw,
                          int64_t Ho, int64_t Wo)
{
    *w = (WgTiles){.Ci = Ci, .Hi = Hi, .Wi = Wi, .ph = ph, .pw = pw, .Ho = Ho, .Wo = Wo,
                   .TY = (Ho + 3) / 4, .TX = (Wo + 3) / 4};
    w->ps = ((4 * w->TY + 4) * (4 * w->TX + 4) + WG_PAD_SPARE + 15) & ~(int64_t)15;
}

/* The exponent all ones: Inf or NaN. The Winograd transforms add and
 * subtract values that direct convolution never combines: an Inf input
 * becomes Inf - Inf = NaN in outputs that should read +-Inf (and a NaN
 * spreads across its tile), so such operands take the im2col path. The
 * test runs on the cells as WG_T, so in single precision a double beyond
 * float's range (Inf once rounded) takes the im2col path too. The tests
 * are integer ops, so they vectorise (a floating-point sum would run at
 * the add's latency). */
#define WG_EXP ((WG_UINT)WG_EXPBITS)
typedef WG_UINT WgU __attribute__((vector_size(WG_L * sizeof(WG_UINT))));

/* the lanes of v that are not finite, as all ones (a macro: see WG_LD) */
#define WG_BAD(v) ((WgU)(((WgU)(v) & (WgU){WG_EXP, WG_EXP, WG_EXP, WG_EXP}) == (WgU){WG_EXP, WG_EXP, WG_EXP, WG_EXP}))

/* Copies the rows x cols cells of src (a row every lds cells) into the
 * split rows of dst (a row every ldd cells: the columns 0, 4, 8, .. first,
 * then phases 1, 2 and 3, each qw cells), starting at row 0 and column c0.
 * Returns whether every cell copied is finite: the planes' one pass that
 * tells whether the Winograd path may keep them. */
static bool wg_split(const double *src, int64_t lds, int64_t rows, int64_t cols, WG_T *dst, int64_t ldd,
                     int64_t qw, int64_t c0)
{
    WgU bad = {0};
    uint64_t sbad = 0;
    /* cell x = 4k + j of a row goes to cell k of the phase of column c0 + j:
     * 16 cells at a time, four vectors transposed, then 8 (two halves) */
    for (int64_t h = 0; h < rows; h++) {
        const double *s = src + h * lds;
        WG_T *d = dst + h * ldd, *dq[4];
        for (int j = 0; j < 4; j++)
            dq[j] = d + ((c0 + j) & 3) * qw + ((c0 + j) >> 2);
        int64_t x = 0;
        for (; x + 4 * WG_L <= cols; x += 4 * WG_L) {
            WgV v[4], o[4];
            for (int j = 0; j < 4; j++) {
                WG_LDS(v[j], s + x + j * WG_L);
                bad |= WG_BAD(v[j]);
            }
            wg_transpose4(v, o);
            for (int j = 0; j < 4; j++)
                WG_ST(dq[j] + x / 4, o[j]);
        }
        if (x + 2 * WG_L <= cols) {
            WgV a, b;
            WG_LDS(a, s + x);
            WG_LDS(b, s + x + WG_L);
            bad |= WG_BAD(a) | WG_BAD(b);
            WgV lo = __builtin_shufflevector(a, b, 0, 4, 1, 5), hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
            WG_ST2(dq[0] + x / 4, __builtin_shufflevector(lo, lo, 0, 1));
            WG_ST2(dq[1] + x / 4, __builtin_shufflevector(lo, lo, 2, 3));
            WG_ST2(dq[2] + x / 4, __builtin_shufflevector(hi, hi, 0, 1));
            WG_ST2(dq[3] + x / 4, __builtin_shufflevector(hi, hi, 2, 3));
            x += 2 * WG_L;
        }
        for (; x < cols; x++) {
            const WG_T v = (WG_T)s[x];
            WG_UINT u;
            memcpy(&u, &v, sizeof u);
            sbad |= (u & WG_EXP) == WG_EXP;
            dq[x & 3][x >> 2] = v;
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
static bool wg_input(WgTiles *w, const double *x, int64_t b, WG_T *V, int64_t ldxi, int64_t ldc)
{
    const int64_t hp = 4 * w->TY + 4, wp = 4 * w->TX + 4, HW = w->Hi * w->Wi, TT = w->TY * w->TX;
    const int64_t rows = w->Hi < hp - w->ph ? w->Hi : hp - w->ph;
    const int64_t cols = w->Wi < wp - w->pw ? w->Wi : wp - w->pw;
    int64_t c = 0;
    if (wg_isa.input4)
        for (; c + 4 <= w->Ci; c += 4)
            for (int64_t i = 0; i < b; i++) {
                for (int64_t g = 0; g < 4; g++)
                    if (!wg_isa.split(x + (i * w->Ci + c + g) * HW, w->Wi, rows, cols, w->pad + g * w->ps + w->ph * wp,
                                  wp, wp / 4, w->pw))
                        return false;
                wg_isa.input4(w->pad, w->ps, wp, w->TY, w->TX, V + c * ldc + i * TT, ldc, ldxi);
            }
    for (; c < w->Ci; c++)
        for (int64_t i = 0; i < b; i++) {
            if (!wg_isa.split(x + (i * w->Ci + c) * HW, w->Wi, rows, cols, w->pad + w->ph * wp, wp, wp / 4, w->pw))
                return false;
            wg_isa.input(w->pad, wp, w->TY, w->TX, V + c * ldc + i * TT, ldxi);
        }
    return true;
}

/* The inverse of wg_input for the Co output planes of b images y:
 * y[i, o, 4ty+a, 4tx+b] = (A^T M A)[a][b] with M[xi] = M[o][xi][i * TT + tile],
 * the cells past Ho x Wo dropped; the cells of M read are left 0. */
static void wg_output(const WgTiles *w, WG_T *M, int64_t ldxi, int64_t ldc, int64_t b, int64_t Co, double *y)
{
    const int64_t HW = w->Ho * w->Wo, TT = w->TY * w->TX;
    int64_t o = 0;
    if (wg_isa.output4)
        for (; o + 4 <= Co; o += 4)
            for (int64_t i = 0; i < b; i++)
                wg_isa.output4(M + o * ldc + i * TT, ldc, ldxi, w->TX, TT, w->Ho, w->Wo, y + (i * Co + o) * HW, HW);
    for (; o < Co; o++)
        for (int64_t i = 0; i < b; i++)
            wg_isa.output(M + o * ldc + i * TT, ldxi, w->TX, TT, w->Ho, w->Wo, y + (i * Co + o) * HW);
}

/* A buffer of n WG_T aligned for vectors, zeroed when 'zero'; NULL when
 * out of memory. */
static WG_T *wg_alloc(int64_t n, bool zero)
{
    size_t bytes = ((size_t)n * sizeof(WG_T) + 63) & ~(size_t)63;
    WG_T *p = aligned_alloc(64, bytes);
    if (p && zero)
        memset(p, 0, bytes);
    return p;
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
    const int64_t nb = wg_batch(g, 64 * TT * (Ci + Co) * (int64_t)sizeof(WG_T));
    WG_T *U = malloc((size_t)(64 * Ci * Co) * sizeof(WG_T));
    WG_T *V = wg_alloc(Ci * wg_ldc(TT * nb), false);
    /* M starts at 0 and wg_output clears what it reads, so every dgemm adds
     * into zeros (beta = 1): OpenBLAS then skips its pass that zeroes C
     * for beta = 0 (with K = Ci = 32 in LeNet, a sixth of the dgemm's
     * memory traffic). Its kernel adds the product to C either way, so
     * 0 + x gives the same bits as beta = 0. */
    WG_T *M = wg_alloc(Co * wg_ldc(TT * nb), true);
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
    WG_FILTERS(g, Wt, turn, U);
#if WG_CHECK_FILTERS
    /* a filter beyond WG_T's range (Inf once rounded): im2col */
    bool ok = true;
    for (int64_t i = 0; i < 64 * Ci * Co; i++) {
        WG_UINT u;
        memcpy(&u, &U[i], sizeof u);
        ok &= (u & WG_EXP) != WG_EXP;
    }
    if (!ok) {
        free(U);
        free(V);
        free(M);
        free(w.pad);
        return 1;
    }
#endif
    const int64_t inper = Ci * w.Hi * w.Wi, outper = Co * w.Ho * w.Wo;
    int rc = 0;
    for (int64_t n0 = 0; n0 < g->N; n0 += nb) {
        const int64_t b = g->N - n0 < nb ? g->N - n0 : nb, T = b * TT, ld = wg_ld(T), ldc = wg_ldc(T);
        if (!wg_input(&w, in + n0 * inper, b, V, ld, ldc)) {
            rc = 1;
            break;
        }
        for (int64_t k = 0; k < 64; k++)
            WG_GEMM(false, false, Co, T, Ci, 1.0, U + k * Co * Ci, Ci, V + k * ld, ldc, 1.0, M + k * ld, ldc);
        wg_output(&w, M, ld, ldc, b, Co, out + n0 * outper);
    }
    free(U);
    free(V);
    free(M);
    free(w.pad);
    return rc;
}

/* the cells of one split dout plane of TT tiles, rounded up to whole
 * cache lines */
static int64_t wg_dpad_cells(int64_t TT)
{
    return (16 * TT + WG_PAD_SPARE + 15) & ~(int64_t)15;
}

/* D[f][xi][i * TT + tile] = (G4 d G4^T)[xi] for the 4x4 tiles d of the F
 * planes of b images' dout (P x Q; cells past it read as 0), a channel at a
 * time as wg_input. 'dpad' is four zeroed split planes (wg_dpad_cells apart) of 4*TY rows of 4*TX
 * cells and WG_PAD_SPARE more. False, and D unfinished, when dout holds an
 * Inf or NaN. */
static bool wg_dout(const WgTiles *w, int64_t F, const double *dout, int64_t b, WG_T *dpad, WG_T *D,
                    int64_t ldxi, int64_t ldf)
{
    const int64_t HW = w->Ho * w->Wo, TT = w->TY * w->TX, ps = wg_dpad_cells(TT);
    int64_t f = 0;
    if (wg_isa.dout4)
        for (; f + 4 <= F; f += 4)
            for (int64_t i = 0; i < b; i++) {
                for (int64_t g = 0; g < 4; g++)
                    if (!wg_isa.split(dout + (i * F + f + g) * HW, w->Wo, w->Ho, w->Wo, dpad + g * ps, 4 * w->TX, w->TX, 0))
                        return false;
                wg_isa.dout4(dpad, ps, w->TX, w->TY, w->TX, D + f * ldf + i * TT, ldf, ldxi);
            }
    for (; f < F; f++)
        for (int64_t i = 0; i < b; i++) {
            if (!wg_isa.split(dout + (i * F + f) * HW, w->Wo, w->Ho, w->Wo, dpad, 4 * w->TX, w->TX, 0))
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
    const int64_t nb = wg_batch(g, 64 * TT * (C + F) * (int64_t)sizeof(WG_T));
    WG_T *V = wg_alloc(C * wg_ldc(TT * nb), false);
    WG_T *D = wg_alloc(F * wg_ldc(TT * nb), false);
    WG_T *Mw = malloc((size_t)(64 * F * C) * sizeof(WG_T));
    WG_T *dpad = calloc((size_t)(4 * wg_dpad_cells(TT)), sizeof(WG_T));
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
            WG_GEMM(false, true, F, C, T, 1.0, D + k * ld, ldc, V + k * ld, ldc, n0 == 0 ? 0.0 : 1.0,
                       Mw + k * F * C, C);
    }
    const int64_t FC = rc == 0 ? F * C : 0;
    for (int64_t fc = 0; fc < FC; fc++) {
        double m[64], t[40];    /* the output transform in double */
        for (int64_t j = 0; j < 64; j++)
            m[j] = Mw[j * FC + fc];
        for (int64_t j = 0; j < 8; j++)        /* t = A5^T M: 5 x 8 */
            wg_at5(m + j, 8, t + j, 8);
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

#undef WgV
#undef WgVu
#undef WgV2u
#undef WgU
#undef WgIsa
#undef WgTiles
#undef wg_transpose4
#undef wg_store64
#undef wg_btv
#undef wg_at4v
#undef wg_g4v
#undef wg_input_body
#undef wg_output_body
#undef wg_dout_body
#undef wg_input_plane_body
#undef wg_output_plane_body
#undef wg_dout_plane_body
#undef wg_input_base
#undef wg_output_base
#undef wg_dout_base
#undef wg_input_avx2
#undef wg_output_avx2
#undef wg_dout_avx2
#undef wg_isa
#undef wg_isa_once
#undef wg_isa_init
#undef wg_pad_alloc
#undef wg_tiles_init
#undef wg_split
#undef wg_input
#undef wg_output
#undef wg_alloc
#undef wg_dout
#undef wg_corr
#undef wg_filter_grad
#undef wg_dpad_cells
#undef WGQ_LD
#undef WGQ_PART
#undef WG_QUAD
#undef K
#undef WG_LD
#undef WG_ST
#undef WG_ST2
#undef WG_LDS
#undef WG_STS
#undef WG_EXP
#undef WG_BAD
#undef WG_T
#undef WG_SFX
#undef WG_UINT
#undef WG_EXPBITS
#undef WG_GEMM
#undef WG_FILTERS
#undef WG_CHECK_FILTERS
