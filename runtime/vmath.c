/* SPDX-License-Identifier: Apache-2.0
 * Element-wise math over arrays (contract in vmath.h). */
#include "vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Java Math.round: floor(x + 0.5) done exactly; NaN -> 0; saturates at the
 * long range [quirk kept from upstream]. */
static inline double java_round(double v)
{
    if (isnan(v))
        return 0.0;
    if (v >= 9.223372036854775807e18)
        return 9.223372036854775807e18;
    if (v <= -9.223372036854775808e18)
        return -9.223372036854775808e18;
    double f = floor(v);
    return (v - f >= 0.5 ? f + 1.0 : f) + 0.0;
}

/* FastMath.signum: a zero (either sign) or NaN comes back unchanged */
static inline double sign_of(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v; }

/* One cell with the scalar libm functions. Inlined with a constant 'f' in
 * the loops of vm_unary. */
static inline __attribute__((always_inline)) double cell_fn(VmFn f, double v)
{
    switch (f) {
    case VM_EXP: return exp(v);
    case VM_SQRT: return sqrt(v);
    case VM_LOG: return log(v);
    case VM_ABS: return fabs(v);
    case VM_SIGN: return sign_of(v);
    case VM_ROUND: return java_round(v);
    case VM_FLOOR: return floor(v);
    case VM_CEIL: return ceil(v);
    case VM_SIN: return sin(v);
    case VM_COS: return cos(v);
    case VM_TAN: return tan(v);
    case VM_ASIN: return asin(v);
    case VM_ACOS: return acos(v);
    case VM_ATAN: return atan(v);
    case VM_SINH: return sinh(v);
    case VM_COSH: return cosh(v);
    case VM_TANH: return tanh(v);
    case VM_SIGMOID: return 1.0 / (1.0 + exp(-v));
    }
    return NAN;
}

double vm_scalar(VmFn f, double x)
{
    return cell_fn(f, x);
}

/* ---- exp and log: libmvec, widest vector first ---- */

/* The whole vectors of an array: y[i] = f(x[i]) for i < n rounded down to
 * the width. */
typedef void (*VecLoop)(const double *x, double *y, int64_t n);

/* A VecLoop 'name' over the vector routine F (libmvec's, or exp4_poly), W
 * doubles per call. */
#define VEC_LOOP(ATTR, name, F, W, LOAD, STORE)                     \
    ATTR static void name(const double *x, double *y, int64_t n)    \
    {                                                               \
        for (int64_t i = 0; i + (W) <= n; i += (W))                 \
            STORE(y + i, F(LOAD(x + i)));                           \
    }

static void exp1_n(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = exp(x[i]);
}
static void log1_n(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = log(x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
extern __m128d _ZGVbN2v_exp(__m128d x);
extern __m128d _ZGVbN2v_log(__m128d x);
VEC_LOOP(, exp_sse2_n, _ZGVbN2v_exp, 2, _mm_loadu_pd, _mm_storeu_pd)
VEC_LOOP(, log_sse2_n, _ZGVbN2v_log, 2, _mm_loadu_pd, _mm_storeu_pd)

/* Per-function target attributes, not '#pragma GCC target': clang (make
 * fuzz) ignores the pragma and then rejects the intrinsics; both compilers
 * accept the attributes. */
#define AVX2_FMA __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f")))
AVX2_FMA extern __m256d _ZGVdN4v_log(__m256d x);

/* exp on 4 lanes without table lookups. libmvec's AVX2 exp gathers from a
 * table, and gathers are slow on AMD Zen: 1.35 ns a cell there against
 * 0.98 ns for this (2-core EPYC dev VM, data in cache), which is bound by
 * its 15 multiplies and FMAs (two FMA pipes).
 *   x = n ln2 + r, |r| <= ln2/2 (Cody-Waite: LN2_HI has 11 trailing zero
 *   bits, so n * LN2_HI and x - n * LN2_HI are exact for |n| < 2^11);
 *   exp(r) = 1 + (r + r^2 q(r)), q a degree-9 fit of (exp(r) - 1 - r) / r^2
 *   on that interval (Chebyshev, error 1.1e-16, so 1.3e-17 after the r^2);
 *   exp(x) = 2^n exp(r), the 2^n added to the exponent bits.
 * Error under 1 ulp (tests/unit/test_fuse.c checks it against expl).
 * Lanes with |x| > 708 or NaN (overflow, subnormal results, inf, NaN) take
 * libm's exp, lane by lane, so a cell's bits never depend on its
 * neighbours. */
AVX2_FMA static inline __m256d exp4_poly(__m256d x)
{
    const __m256d L2E = _mm256_set1_pd(0x1.71547652b82fep0);
    const __m256d LN2_HI = _mm256_set1_pd(0x1.62e42fee00000p-1);
    const __m256d LN2_LO = _mm256_set1_pd(0x1.a39ef35793c76p-33);
    const __m256d SHIFT = _mm256_set1_pd(0x1.8p52);
    __m256d n = _mm256_round_pd(_mm256_mul_pd(x, L2E), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d rh = _mm256_fnmadd_pd(n, LN2_HI, x);
    __m256d r = _mm256_fnmadd_pd(n, LN2_LO, rh);
    /* What rounding r lost (rh - r is exact), added back after the
     * polynomial: a quarter ulp of the result at worst otherwise. */
    __m256d c = _mm256_fnmadd_pd(n, LN2_LO, _mm256_sub_pd(rh, r));
    /* q by Estrin's scheme (a shorter dependency chain than Horner's; the
     * same speed on Zen, where the FMA pipes are the limit). */
#define C_(v) _mm256_set1_pd(v)
    __m256d r2 = _mm256_mul_pd(r, r), r4 = _mm256_mul_pd(r2, r2);
    __m256d q01 = _mm256_fmadd_pd(C_(0x1.5555555555556p-3), r, C_(0x1.0000000000001p-1));
    __m256d q23 = _mm256_fmadd_pd(C_(0x1.11111111109b3p-7), r, C_(0x1.5555555553d63p-5));
    __m256d q45 = _mm256_fmadd_pd(C_(0x1.a01a01a7c41d5p-13), r, C_(0x1.6c16c1788bd90p-10));
    __m256d q67 = _mm256_fmadd_pd(C_(0x1.71de0dae63bb3p-19), r, C_(0x1.a019b90d2ae7ap-16));
    __m256d q89 = _mm256_fmadd_pd(C_(0x1.af38a9b0ec855p-26), r, C_(0x1.289185613a3d6p-22));
#undef C_
    __m256d q03 = _mm256_fmadd_pd(q23, r2, q01);
    __m256d q47 = _mm256_fmadd_pd(q67, r2, q45);
    __m256d q = _mm256_fmadd_pd(_mm256_fmadd_pd(q89, r4, q47), r4, q03);
    __m256d p = _mm256_add_pd(_mm256_set1_pd(1.0), _mm256_add_pd(r, _mm256_fmadd_pd(r2, q, c)));
    /* n + 1.5 * 2^52 holds n in its low mantissa bits; shifted up by 52
     * they are n * 2^52 modulo 2^64, which added to p's bits scales it. */
    __m256i e = _mm256_slli_epi64(_mm256_castpd_si256(_mm256_add_pd(n, SHIFT)), 52);
    __m256d y = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(p), e));
    const __m256d ABS = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d out = _mm256_cmp_pd(_mm256_and_pd(x, ABS), _mm256_set1_pd(708.0), _CMP_NLE_UQ);
    int m = _mm256_movemask_pd(out);
    if (__builtin_expect(m != 0, 0)) {
        double xs[4], ys[4];
        _mm256_storeu_pd(xs, x);
        _mm256_storeu_pd(ys, y);
        for (int k = 0; k < 4; k++)
            if (m >> k & 1)
                ys[k] = exp(xs[k]);
        y = _mm256_loadu_pd(ys);
    }
    return y;
}

VEC_LOOP(AVX2_FMA, exp_avx2_n, exp4_poly, 4, _mm256_loadu_pd, _mm256_storeu_pd)
VEC_LOOP(AVX2_FMA, log_avx2_n, _ZGVdN4v_log, 4, _mm256_loadu_pd, _mm256_storeu_pd)

AVX512 extern __m512d _ZGVeN8v_exp(__m512d x);
AVX512 extern __m512d _ZGVeN8v_log(__m512d x);
VEC_LOOP(AVX512, exp_avx512_n, _ZGVeN8v_exp, 8, _mm512_loadu_pd, _mm512_storeu_pd)
VEC_LOOP(AVX512, log_avx512_n, _ZGVeN8v_log, 8, _mm512_loadu_pd, _mm512_storeu_pd)


/* sqrt, abs, floor, ceil and sign four cells at a time: one instruction
 * each (two compares and blends for sign) that rounds exactly as libm's
 * scalar functions do, so a cell gets the same bits either way (sqrt of a
 * negative number is the default NaN in both). Returns how many cells it
 * did: whole vectors; the caller does the rest. */
#define AVX __attribute__((target("avx")))
AVX static int64_t simple_avx(VmFn f, const double *x, double *y, int64_t n)
{
    int64_t i = 0;
    switch (f) {
    case VM_SQRT:
        for (; i + 4 <= n; i += 4)
            _mm256_storeu_pd(y + i, _mm256_sqrt_pd(_mm256_loadu_pd(x + i)));
        break;
    case VM_ABS: {
        const __m256d mag = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
        for (; i + 4 <= n; i += 4)
            _mm256_storeu_pd(y + i, _mm256_and_pd(_mm256_loadu_pd(x + i), mag));
        break;
    }
    case VM_FLOOR:
        for (; i + 4 <= n; i += 4)
            _mm256_storeu_pd(y + i, _mm256_round_pd(_mm256_loadu_pd(x + i), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
        break;
    case VM_CEIL:
        for (; i + 4 <= n; i += 4)
            _mm256_storeu_pd(y + i, _mm256_round_pd(_mm256_loadu_pd(x + i), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
        break;
    case VM_SIGN: {
        const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), mone = _mm256_set1_pd(-1.0);
        for (; i + 4 <= n; i += 4) {
            __m256d v = _mm256_loadu_pd(x + i);
            v = _mm256_blendv_pd(v, one, _mm256_cmp_pd(v, zero, _CMP_GT_OQ));
            v = _mm256_blendv_pd(v, mone, _mm256_cmp_pd(v, zero, _CMP_LT_OQ));
            _mm256_storeu_pd(y + i, v);
        }
        break;
    }
    default:
        break;
    }
    return i;
}
#endif

static int64_t simple_none(VmFn f, const double *x, double *y, int64_t n)
{
    (void)f, (void)x, (void)y, (void)n;
    return 0;
}

/* The dispatch decision, made once. DML_VMATH=avx2|sse2|scalar caps the
 * width (for tests and comparisons). */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static struct {
    VecLoop exp, log;
    int w;
    const char *name;
    int64_t (*simple)(VmFn, const double *, double *, int64_t);
} isa = {exp1_n, log1_n, 1, "scalar", simple_none};

static void isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const char *cap = getenv("DML_VMATH");
    int max = 3;
    if (cap && strcmp(cap, "scalar") == 0)
        max = 0;
    else if (cap && strcmp(cap, "sse2") == 0)
        max = 1;
    else if (cap && strcmp(cap, "avx2") == 0)
        max = 2;
    __builtin_cpu_init();
    if (max >= 2 && __builtin_cpu_supports("avx"))
        isa.simple = simple_avx;
    if (max >= 3 && __builtin_cpu_supports("avx512f")) {
        isa.exp = exp_avx512_n, isa.log = log_avx512_n;
        isa.w = 8, isa.name = "avx512";
    } else if (max >= 2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        isa.exp = exp_avx2_n, isa.log = log_avx2_n;
        isa.w = 4, isa.name = "avx2";
    } else if (max >= 1) {
        isa.exp = exp_sse2_n, isa.log = log_sse2_n;
        isa.w = 2, isa.name = "sse2";
    }
#endif
}

const char *vm_isa(void)
{
    pthread_once(&isa_once, isa_init);
    return isa.name;
}

/* y = f(x) over n cells, whole vectors, then the tail padded with 1.0 (a
 * value both exp and log take quietly) as one more vector. */
static void vec_apply(VecLoop f, int w, const double *x, double *y, int64_t n)
{
    int64_t i = n / w * w;
    f(x, y, i);
    if (i < n) {
        double tx[8], ty[8];
        for (int k = 0; k < 8; k++)
            tx[k] = 1.0;
        memcpy(tx, x + i, (size_t)(n - i) * sizeof *x);
        f(tx, ty, w);
        memcpy(y + i, ty, (size_t)(n - i) * sizeof *y);
    }
}

void vm_unary(VmFn f, const double *x, double *y, int64_t n)
{
    if (n <= 0)
        return;
#define U_LOOP(expr) for (int64_t i = 0; i < n; i++) { double v = x[i]; y[i] = (expr); } break
#define CASE(F) case F: U_LOOP(cell_fn(F, v));
    switch (f) {
    case VM_EXP:
    case VM_LOG:
        pthread_once(&isa_once, isa_init);
        if (f == VM_EXP)
            vec_apply(isa.exp, isa.w, x, y, n);
        else
            vec_apply(isa.log, isa.w, x, y, n);
        break;
    case VM_SIGMOID: {
        /* 1 / (1 + exp(-v)) with the vector exp, a block at a time. */
        pthread_once(&isa_once, isa_init);
        double t[256];
        for (int64_t i0 = 0; i0 < n; i0 += 256) {
            int64_t m = n - i0 < 256 ? n - i0 : 256;
            for (int64_t i = 0; i < m; i++)
                t[i] = -x[i0 + i];
            vec_apply(isa.exp, isa.w, t, t, m);
            for (int64_t i = 0; i < m; i++)
                y[i0 + i] = 1.0 / (1.0 + t[i]);
        }
        break;
    }
    case VM_SQRT: case VM_ABS: case VM_SIGN: case VM_FLOOR: case VM_CEIL: {
        pthread_once(&isa_once, isa_init);
        int64_t i0 = isa.simple(f, x, y, n);
        x += i0, y += i0, n -= i0;
        switch (f) {            /* the cells after the whole vectors */
        CASE(VM_SQRT) CASE(VM_ABS) CASE(VM_SIGN) CASE(VM_FLOOR) CASE(VM_CEIL)
        default: break;
        }
        break;
    }
    CASE(VM_ROUND)
    CASE(VM_SIN) CASE(VM_COS) CASE(VM_TAN) CASE(VM_ASIN) CASE(VM_ACOS) CASE(VM_ATAN)
    CASE(VM_SINH) CASE(VM_COSH) CASE(VM_TANH)
#undef CASE
    }
#undef U_LOOP
}

double vm_unary1(VmFn f, double x)
{
    double y;
    vm_unary(f, &x, &y, 1);
    return y;
}
