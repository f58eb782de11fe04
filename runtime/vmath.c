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

/* ---- exp and log: libm's, cell by cell ----
 * They were vectorised (libmvec, or a polynomial of ours on AVX2), whose
 * results differ from libm's scalar exp and log by an ulp here and there,
 * and from one vector width to the next: exp(matrix(1, 8, 1)) was not
 * exp(1), and a result depended on the CPU. A cell now gets exactly the
 * scalar's bits on every path. The cost, measured for issue 28 on a
 * 1000 x 1000 matrix, is in doc/environment.md (DML_VMATH). */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

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
} isa = {"scalar", simple_none};

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
    CASE(VM_EXP) CASE(VM_LOG) CASE(VM_SIGMOID)
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
