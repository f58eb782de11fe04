/* SPDX-License-Identifier: Apache-2.0
 * Element-wise math over arrays (contract in vmath.h). */
#include "vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
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

/* ---- exp and log: the very bits of libm's ----
 * A cell of exp(X) or log(X) must equal exp or log of the same number as a
 * scalar, on every CPU. Vector versions (libmvec's, or a polynomial of our
 * own) differ from libm's by an ulp here and there, and from one vector
 * width to the next. So log goes through libm cell by cell, and exp too,
 * except on CPUs with AVX2 and FMA: there glibc's exp (2.28 and later) is
 * its FMA build of a table-driven algorithm (2^(k/128) times a degree-5
 * polynomial), and exp4_glibc below does the same operations, fused the
 * same way, four lanes at a time, so it gives the same bits. A check at
 * start-up compares the two on a few thousand numbers and keeps libm's
 * scalar exp should they ever disagree (another libm); the unit tests
 * compare them on millions. Costs, measured for issue 28 on 10^6 cells
 * (2-core EPYC VM, best of 30): exp 0.51 ms with libmvec on AVX-512 before,
 * 2.6 ms through libm cell by cell, ~0.9 ms with exp4_glibc; log 0.57 ms
 * with libmvec before, 2.15 ms now (doc/environment.md, DML_VMATH). */

static void exp1_n(const double *x, double *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = exp(x[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 2^(k/128) for k = 0..127 as two words each: the bits of T, then those of
 * H less (k << 45), where H = 2^(k/128) rounded and T = 2^(k/128)/H - 1
 * rounded. Made by tools/exp_table.py. */
static const uint64_t exp_tab[256] = {
    0x0000000000000000ULL, 0x3ff0000000000000ULL, 0x3c9b3b4f1a88bf6eULL, 0x3feff63da9fb3335ULL,
    0xbc7160139cd8dc5dULL, 0x3fefec9a3e778061ULL, 0xbc905e7a108766d1ULL, 0x3fefe315e86e7f85ULL,
    0x3c8cd2523567f613ULL, 0x3fefd9b0d3158574ULL, 0xbc8bce8023f98efaULL, 0x3fefd06b29ddf6deULL,
    0x3c60f74e61e6c861ULL, 0x3fefc74518759bc8ULL, 0x3c90a3e45b33d399ULL, 0x3fefbe3ecac6f383ULL,
    0x3c979aa65d837b6dULL, 0x3fefb5586cf9890fULL, 0x3c8eb51a92fdeffcULL, 0x3fefac922b7247f7ULL,
    0x3c3ebe3d702f9cd1ULL, 0x3fefa3ec32d3d1a2ULL, 0xbc6a033489906e0bULL, 0x3fef9b66affed31bULL,
    0xbc9556522a2fbd0eULL, 0x3fef9301d0125b51ULL, 0xbc5080ef8c4eea55ULL, 0x3fef8abdc06c31ccULL,
    0xbc91c923b9d5f416ULL, 0x3fef829aaea92de0ULL, 0x3c80d3e3e95c55afULL, 0x3fef7a98c8a58e51ULL,
    0xbc801b15eaa59348ULL, 0x3fef72b83c7d517bULL, 0xbc8f1ff055de323dULL, 0x3fef6af9388c8deaULL,
    0x3c8b898c3f1353bfULL, 0x3fef635beb6fcb75ULL, 0xbc96d99c7611eb26ULL, 0x3fef5be084045cd4ULL,
    0x3c9aecf73e3a2f60ULL, 0x3fef54873168b9aaULL, 0xbc8fe782cb86389dULL, 0x3fef4d5022fcd91dULL,
    0x3c8a6f4144a6c38dULL, 0x3fef463b88628cd6ULL, 0x3c807a05b0e4047dULL, 0x3fef3f49917ddc96ULL,
    0x3c968efde3a8a894ULL, 0x3fef387a6e756238ULL, 0x3c875e18f274487dULL, 0x3fef31ce4fb2a63fULL,
    0x3c80472b981fe7f2ULL, 0x3fef2b4565e27cddULL, 0xbc96b87b3f71085eULL, 0x3fef24dfe1f56381ULL,
    0x3c82f7e16d09ab31ULL, 0x3fef1e9df51fdee1ULL, 0xbc3d219b1a6fbffaULL, 0x3fef187fd0dad990ULL,
    0x3c8b3782720c0ab4ULL, 0x3fef1285a6e4030bULL, 0x3c6e149289cecb8fULL, 0x3fef0cafa93e2f56ULL,
    0x3c834d754db0abb6ULL, 0x3fef06fe0a31b715ULL, 0x3c864201e2ac744cULL, 0x3fef0170fc4cd831ULL,
    0x3c8fdd395dd3f84aULL, 0x3feefc08b26416ffULL, 0xbc86a3803b8e5b04ULL, 0x3feef6c55f929ff1ULL,
    0xbc924aedcc4b5068ULL, 0x3feef1a7373aa9cbULL, 0xbc9907f81b512d8eULL, 0x3feeecae6d05d866ULL,
    0xbc71d1e83e9436d2ULL, 0x3feee7db34e59ff7ULL, 0xbc991919b3ce1b15ULL, 0x3feee32dc313a8e5ULL,
    0x3c859f48a72a4c6dULL, 0x3feedea64c123422ULL, 0xbc9312607a28698aULL, 0x3feeda4504ac801cULL,
    0xbc58a78f4817895bULL, 0x3feed60a21f72e2aULL, 0xbc7c2c9b67499a1bULL, 0x3feed1f5d950a897ULL,
    0x3c4363ed60c2ac11ULL, 0x3feece086061892dULL, 0x3c9666093b0664efULL, 0x3feeca41ed1d0057ULL,
    0x3c6ecce1daa10379ULL, 0x3feec6a2b5c13cd0ULL, 0x3c93ff8e3f0f1230ULL, 0x3feec32af0d7d3deULL,
    0x3c7690cebb7aafb0ULL, 0x3feebfdad5362a27ULL, 0x3c931dbdeb54e077ULL, 0x3feebcb299fddd0dULL,
    0xbc8f94340071a38eULL, 0x3feeb9b2769d2ca7ULL, 0xbc87deccdc93a349ULL, 0x3feeb6daa2cf6642ULL,
    0xbc78dec6bd0f385fULL, 0x3feeb42b569d4f82ULL, 0xbc861246ec7b5cf6ULL, 0x3feeb1a4ca5d920fULL,
    0x3c93350518fdd78eULL, 0x3feeaf4736b527daULL, 0x3c7b98b72f8a9b05ULL, 0x3feead12d497c7fdULL,
    0x3c9063e1e21c5409ULL, 0x3feeab07dd485429ULL, 0x3c34c7855019c6eaULL, 0x3feea9268a5946b7ULL,
    0x3c9432e62b64c035ULL, 0x3feea76f15ad2148ULL, 0xbc8ce44a6199769fULL, 0x3feea5e1b976dc09ULL,
    0xbc8c33c53bef4da8ULL, 0x3feea47eb03a5585ULL, 0xbc845378892be9aeULL, 0x3feea34634ccc320ULL,
    0xbc93cedd78565858ULL, 0x3feea23882552225ULL, 0x3c5710aa807e1964ULL, 0x3feea155d44ca973ULL,
    0xbc93b3efbf5e2228ULL, 0x3feea09e667f3bcdULL, 0xbc6a12ad8734b982ULL, 0x3feea012750bdabfULL,
    0xbc6367efb86da9eeULL, 0x3fee9fb23c651a2fULL, 0xbc80dc3d54e08851ULL, 0x3fee9f7df9519484ULL,
    0xbc781f647e5a3ecfULL, 0x3fee9f75e8ec5f74ULL, 0xbc86ee4ac08b7db0ULL, 0x3fee9f9a48a58174ULL,
    0xbc8619321e55e68aULL, 0x3fee9feb564267c9ULL, 0x3c909ccb5e09d4d3ULL, 0x3feea0694fde5d3fULL,
    0xbc7b32dcb94da51dULL, 0x3feea11473eb0187ULL, 0x3c94ecfd5467c06bULL, 0x3feea1ed0130c132ULL,
    0x3c65ebe1abd66c55ULL, 0x3feea2f336cf4e62ULL, 0xbc88a1c52fb3cf42ULL, 0x3feea427543e1a12ULL,
    0xbc9369b6f13b3734ULL, 0x3feea589994cce13ULL, 0xbc805e843a19ff1eULL, 0x3feea71a4623c7adULL,
    0xbc94d450d872576eULL, 0x3feea8d99b4492edULL, 0x3c90ad675b0e8a00ULL, 0x3feeaac7d98a6699ULL,
    0x3c8db72fc1f0eab4ULL, 0x3feeace5422aa0dbULL, 0xbc65b6609cc5e7ffULL, 0x3feeaf3216b5448cULL,
    0x3c7bf68359f35f44ULL, 0x3feeb1ae99157736ULL, 0xbc93091fa71e3d83ULL, 0x3feeb45b0b91ffc6ULL,
    0xbc5da9b88b6c1e29ULL, 0x3feeb737b0cdc5e5ULL, 0xbc6c23f97c90b959ULL, 0x3feeba44cbc8520fULL,
    0xbc92434322f4f9aaULL, 0x3feebd829fde4e50ULL, 0xbc85ca6cd7668e4bULL, 0x3feec0f170ca07baULL,
    0x3c71affc2b91ce27ULL, 0x3feec49182a3f090ULL, 0x3c6dd235e10a73bbULL, 0x3feec86319e32323ULL,
    0xbc87c50422622263ULL, 0x3feecc667b5de565ULL, 0x3c8b1c86e3e231d5ULL, 0x3feed09bec4a2d33ULL,
    0xbc91bbd1d3bcbb15ULL, 0x3feed503b23e255dULL, 0x3c90cc319cee31d2ULL, 0x3feed99e1330b358ULL,
    0x3c8469846e735ab3ULL, 0x3feede6b5579fdbfULL, 0xbc82dfcd978e9db4ULL, 0x3feee36bbfd3f37aULL,
    0x3c8c1a7792cb3387ULL, 0x3feee89f995ad3adULL, 0xbc907b8f4ad1d9faULL, 0x3feeee07298db666ULL,
    0xbc55c3d956dcaebaULL, 0x3feef3a2b84f15fbULL, 0xbc90a40e3da6f640ULL, 0x3feef9728de5593aULL,
    0xbc68d6f438ad9334ULL, 0x3feeff76f2fb5e47ULL, 0xbc91eee26b588a35ULL, 0x3fef05b030a1064aULL,
    0x3c74ffd70a5fddcdULL, 0x3fef0c1e904bc1d2ULL, 0xbc91bdfbfa9298acULL, 0x3fef12c25bd71e09ULL,
    0x3c736eae30af0cb3ULL, 0x3fef199bdd85529cULL, 0x3c8ee3325c9ffd94ULL, 0x3fef20ab5fffd07aULL,
    0x3c84e08fd10959acULL, 0x3fef27f12e57d14bULL, 0x3c63cdaf384e1a67ULL, 0x3fef2f6d9406e7b5ULL,
    0x3c676b2c6c921968ULL, 0x3fef3720dcef9069ULL, 0xbc808a1883ccb5d2ULL, 0x3fef3f0b555dc3faULL,
    0xbc8fad5d3ffffa6fULL, 0x3fef472d4a07897cULL, 0xbc900dae3875a949ULL, 0x3fef4f87080d89f2ULL,
    0x3c74a385a63d07a7ULL, 0x3fef5818dcfba487ULL, 0xbc82919e2040220fULL, 0x3fef60e316c98398ULL,
    0x3c8e5a50d5c192acULL, 0x3fef69e603db3285ULL, 0x3c843a59ac016b4bULL, 0x3fef7321f301b460ULL,
    0xbc82d52107b43e1fULL, 0x3fef7c97337b9b5fULL, 0xbc892ab93b470dc9ULL, 0x3fef864614f5a129ULL,
    0x3c74b604603a88d3ULL, 0x3fef902ee78b3ff6ULL, 0x3c83c5ec519d7271ULL, 0x3fef9a51fbc74c83ULL,
    0xbc8ff7128fd391f0ULL, 0x3fefa4afa2a490daULL, 0xbc8dae98e223747dULL, 0x3fefaf482d8e67f1ULL,
    0x3c8ec3bc41aa2008ULL, 0x3fefba1bee615a27ULL, 0x3c842b94c3a9eb32ULL, 0x3fefc52b376bba97ULL,
    0x3c8a64a931d185eeULL, 0x3fefd0765b6e4540ULL, 0xbc8e37bae43be3edULL, 0x3fefdbfdad9cbe14ULL,
    0x3c77893b4d91cd9dULL, 0x3fefe7c1819e90d8ULL, 0x3c5305c14160cc89ULL, 0x3feff3c22b8f71f1ULL,
};

/* Per-function target attributes, not '#pragma GCC target': clang (make
 * fuzz) ignores the pragma and then rejects the intrinsics; both compilers
 * accept the attributes. */
#define AVX2_FMA __attribute__((target("avx2,fma")))

/* exp of four lanes, as glibc's FMA build computes it:
 *   kd = round(x * 128/ln2) (through the 1.5 * 2^52 shift), ki its bits;
 *   r = x - kd ln2/128 (two fused steps, ln2/128 split in two);
 *   exp(x) = scale (1 + tmp), scale = 2^(ki/128) from the table and ki,
 *   tmp = tail + r + r^2 (C2 + r C3) + r^4 (C4 + r C5).
 * Lanes outside 2^-54 <= |x| < 512 (tiny, huge, overflowing, inf, NaN) take
 * libm's exp itself. */
AVX2_FMA static inline __m256d exp4_glibc(__m256d x)
{
#define D_(v) _mm256_set1_pd(v)
    __m256i xi = _mm256_castpd_si256(x);
    /* the top 12 bits less the sign, less those of 2^-54, unsigned: at
     * least those of 512 less those of 2^-54 is a special lane */
    __m256i abstop = _mm256_and_si256(_mm256_srli_epi64(xi, 52), _mm256_set1_epi64x(0x7ff));
    __m256i off = _mm256_sub_epi64(abstop, _mm256_set1_epi64x(0x3c9));
    /* unsigned compare off >= 0x3f: off > 0x3e with the sign flipped */
    const __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    __m256i special = _mm256_cmpgt_epi64(_mm256_xor_si256(off, flip),
                                         _mm256_xor_si256(_mm256_set1_epi64x(0x3e), flip));
    __m256d kd = _mm256_fmadd_pd(D_(0x1.71547652b82fep7), x, D_(0x1.8p52));
    __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, D_(0x1.8p52));
    __m256d r = _mm256_fmadd_pd(kd, D_(-0x1.cf79abc9e3b3ap-47), _mm256_fmadd_pd(kd, D_(-0x1.62e42fefa0000p-8), x));
    __m256i idx = _mm256_slli_epi64(_mm256_and_si256(ki, _mm256_set1_epi64x(127)), 1);
    __m256d tail = _mm256_i64gather_pd((const double *)exp_tab, idx, 8);
    __m256i sb = _mm256_i64gather_epi64((const long long *)exp_tab + 1, idx, 8);
    __m256i sbits = _mm256_add_epi64(sb, _mm256_slli_epi64(ki, 45));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d p1 = _mm256_fmadd_pd(r, D_(0x1.555555555543cp-3), D_(0x1.ffffffffffdbdp-2));
    __m256d p2 = _mm256_fmadd_pd(r, D_(0x1.1111167a4d017p-7), D_(0x1.55555cf172b91p-5));
    __m256d tmp = _mm256_fmadd_pd(r2, p1, _mm256_add_pd(tail, r));
    tmp = _mm256_fmadd_pd(_mm256_mul_pd(r2, r2), p2, tmp);
    __m256d scale = _mm256_castsi256_pd(sbits);
    __m256d y = _mm256_fmadd_pd(scale, tmp, scale);
#undef D_
    int m = _mm256_movemask_pd(_mm256_castsi256_pd(special));
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

AVX2_FMA static void exp_avx2_n(const double *x, double *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(y + i, exp4_glibc(_mm256_loadu_pd(x + i)));
    for (; i < n; i++)
        y[i] = exp(x[i]);
}

/* True when exp4_glibc gives libm's bits on numbers over the whole range
 * (ordinary, near the edges of the fast lanes, special): run once. */
static bool exp_avx2_agrees(void)
{
    enum { N = 4096 };
    double x[N], y[N];
    uint64_t st = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < N; i++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        double u = (double)(st >> 11) * 0x1p-53;
        switch (i % 4) {
        case 0: x[i] = u * 1400 - 700; break;
        case 1: x[i] = u * 40 - 20; break;
        case 2: x[i] = u * 2 - 1; break;
        default: x[i] = (u - 0.5) * 1e-12; break;
        }
    }
    x[0] = 0, x[1] = -0.0, x[2] = 1, x[3] = NAN, x[4] = INFINITY, x[5] = -INFINITY, x[6] = 511.9, x[7] = 512;
    exp_avx2_n(x, y, N);
    for (int i = 0; i < N; i++) {
        double r = exp(x[i]);
        if (memcmp(&r, &y[i], sizeof r) != 0)
            return false;
    }
    return true;
}

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

/* The dispatch decision, made once. DML_VMATH=sse2 or scalar turns the
 * AVX loops off (for tests and comparisons; the bits are the same). */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static struct {
    const char *name;
    int64_t (*simple)(VmFn, const double *, double *, int64_t);
    void (*exp)(const double *, double *, int64_t);
} isa = {"scalar", simple_none, exp1_n};

static void isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const char *cap = getenv("DML_VMATH");
    bool off = cap && (strcmp(cap, "scalar") == 0 || strcmp(cap, "sse2") == 0);
    __builtin_cpu_init();
    if (!off && __builtin_cpu_supports("avx")) {
        isa.simple = simple_avx;
        isa.name = "avx";
    }
    /* exp: glibc takes its FMA build on exactly these CPUs */
    if (!off && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && exp_avx2_agrees()) {
        isa.exp = exp_avx2_n;
        isa.name = "avx2";
    }
#endif
}

const char *vm_isa(void)
{
    pthread_once(&isa_once, isa_init);
    return isa.name;
}

void vm_unary(VmFn f, const double *x, double *y, int64_t n)
{
    if (n <= 0)
        return;
#define U_LOOP(expr) for (int64_t i = 0; i < n; i++) { double v = x[i]; y[i] = (expr); } break
#define CASE(F) case F: U_LOOP(cell_fn(F, v));
    switch (f) {
    case VM_EXP:
        pthread_once(&isa_once, isa_init);
        isa.exp(x, y, n);
        break;
    case VM_SIGMOID: {
        /* 1 / (1 + exp(-v)) with the vector exp, a block at a time */
        pthread_once(&isa_once, isa_init);
        double t[256];
        for (int64_t i0 = 0; i0 < n; i0 += 256) {
            int64_t m = n - i0 < 256 ? n - i0 : 256;
            for (int64_t i = 0; i < m; i++)
                t[i] = -x[i0 + i];
            isa.exp(t, t, m);
            for (int64_t i = 0; i < m; i++)
                y[i0 + i] = 1.0 / (1.0 + t[i]);
        }
        break;
    }
    CASE(VM_LOG)
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
