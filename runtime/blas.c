/* SPDX-License-Identifier: Apache-2.0
 * The only includer of cblas.h. Wraps the BLAS calls the runtime needs and
 * picks the OpenBLAS kernel for this CPU, by measurement, before the
 * program runs. Its only mutable state is that choice, written before any
 * thread starts; the OpenBLAS thread count it sets is process-wide (that is
 * OpenBLAS's design, not ours). */
#define _GNU_SOURCE     /* RTLD_DEFAULT */
#include "blas.h"

#include <cblas.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Older cblas.h variants lack these OpenBLAS extensions; declaring them
 * again with the same prototypes is harmless where the header has them. */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char *openblas_get_corename(void);

/* Naive fallback for shapes whose sizes do not fit the BLAS int. Never hit
 * in practice (a dimension past 2^31), but must not corrupt memory. */
static void dgemm_naive(bool tA, bool tB, int64_t m, int64_t n, int64_t k, double alpha,
                        const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                        double *C, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (tA ? A[p * lda + i] : A[i * lda + p]) * (tB ? B[j * ldb + p] : B[p * ldb + j]);
            C[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * C[i * ldc + j]);
        }
}

/* ==================================================================
 * precision
 * ================================================================== */

/* Set once by main() before any thread starts (--precision /
 * DML_PRECISION), read by all after: process-wide, like the thread budget. */
static atomic_bool single_mode;

bool blas_precision_set(const char *name)
{
    if (strcmp(name, "double") == 0) {
        atomic_store(&single_mode, false);
        return true;
    }
    if (strcmp(name, "single") != 0)
        return false;
    atomic_store(&single_mode, true);
    blas_prefer_single();
    return true;
}

bool blas_single(void)
{
    return atomic_load_explicit(&single_mode, memory_order_relaxed);
}

/* Which products take sgemm in single mode: at least SGEMM_MIN
 * multiply-adds, and at least SGEMM_INTENSITY of them per cell converted
 * (m*n*k over m*k + k*n + m*n: the operands rounded to float, the product
 * widened back). Thinner products stay double: the conversions cost more
 * than sgemm saves. Measured on one thread (GFLOP/s double -> single, the
 * conversions included): 64x512x3136 (LeNet's affine layer, intensity 56)
 * 88 -> 131, 64x6272x800 (conv2 by im2col, 59) 76 -> 116, 256^3 (85) 101 ->
 * 168; Winograd's 64 products per call (intensity about 21) made conv2d
 * slower, 166 -> 128 effective GFLOP/s, so they stay double. */
enum { SGEMM_MIN = 1 << 15, SGEMM_INTENSITY = 32 };

static bool sgemm_pays(int64_t m, int64_t n, int64_t k)
{
    double mnk = (double)m * (double)n * (double)k;
    return mnk >= SGEMM_MIN && mnk >= SGEMM_INTENSITY * ((double)m * k + (double)k * n + (double)m * n);
}

/* The conversions of the sgemm path, 8 cells a step: gcc -O2 leaves the
 * plain loops scalar (a cell per instruction; the conversions were 4.4% of
 * LeNet's single-precision training, perf), and AVX2 converts 4 doubles per
 * instruction. Rounding and widening are exact operations: every ISA gives
 * the same bits. */
typedef double CvD __attribute__((vector_size(8 * sizeof(double)), aligned(sizeof(double)), may_alias));
typedef float CvF __attribute__((vector_size(8 * sizeof(float)), aligned(sizeof(float)), may_alias));

/* d[j] = (float)s[j], j < n */
static inline __attribute__((always_inline)) void to_float_body(const double *s, float *d, int64_t n)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        *(CvF *)(d + j) = __builtin_convertvector(*(const CvD *)(s + j), CvF);
    for (; j < n; j++)
        d[j] = (float)s[j];
}

/* c[j] = alpha * p[j] + beta * c[j], j < n, as blas_dgemm's contract
 * reads for beta = 0 (c not read) and alpha = 1 */
static inline __attribute__((always_inline)) void widen_body(const float *p, double *c, int64_t n, double alpha,
                                                             double beta)
{
    int64_t j = 0;
    if (beta == 0 && alpha == 1) {
        for (; j + 8 <= n; j += 8)
            *(CvD *)(c + j) = __builtin_convertvector(*(const CvF *)(p + j), CvD);
        for (; j < n; j++)
            c[j] = p[j];
    } else if (beta == 0) {
        for (; j < n; j++)
            c[j] = alpha * p[j];
    } else {
        for (; j < n; j++)
            c[j] = alpha * p[j] + beta * c[j];
    }
}

static void to_float_base(const double *s, float *d, int64_t n) { to_float_body(s, d, n); }
static void widen_base(const float *p, double *c, int64_t n, double alpha, double beta)
{
    widen_body(p, c, n, alpha, beta);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void to_float_avx2(const double *s, float *d, int64_t n)
{
    to_float_body(s, d, n);
}
__attribute__((target("avx2"))) static void widen_avx2(const float *p, double *c, int64_t n, double alpha,
                                                       double beta)
{
    widen_body(p, c, n, alpha, beta);
}
#endif

static void (*to_float)(const double *, float *, int64_t) = to_float_base;
static void (*widen)(const float *, double *, int64_t, double, double) = widen_base;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;

static void cv_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        to_float = to_float_avx2;
        widen = widen_avx2;
    }
#endif
}

/* Contract in blas.h. */
void blas_round_float(const double *s, float *d, int64_t n)
{
    pthread_once(&cv_once, cv_init);
    to_float(s, d, n);
}

void blas_widen_float(const float *f, double *w, int64_t n)
{
    pthread_once(&cv_once, cv_init);
    widen(f, w, n, 1.0, 0.0);
}

/* Packs op-less rows x cols of src (leading dimension ld) into dst,
 * contiguous, as float. */
static void pack_float(const double *src, int64_t rows, int64_t cols, int64_t ld, float *dst)
{
    if (ld == cols) {
        to_float(src, dst, rows * cols);
        return;
    }
    for (int64_t i = 0; i < rows; i++)
        to_float(src + i * ld, dst + i * cols, cols);
}

/* blas_dgemm in single precision: the operands rounded to float, the
 * product by sgemm (float accumulation), then C = alpha * P + beta * C in
 * double. False when the buffers cannot be had (then dgemm runs). */
static bool sgemm_path(bool tA, bool tB, int m, int n, int k, double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta, double *C, int64_t ldc)
{
    /* stored shapes: A is (tA ? k x m : m x k), B is (tB ? n x k : k x n) */
    int64_t ar = tA ? k : m, ac = tA ? m : k, br = tB ? n : k, bc = tB ? k : n;
    float *buf = malloc(((size_t)ar * ac + (size_t)br * bc + (size_t)m * n) * sizeof *buf);
    if (!buf)
        return false;
    float *fa = buf, *fb = fa + ar * ac, *fc = fb + br * bc;
    pthread_once(&cv_once, cv_init);
    pack_float(A, ar, ac, lda, fa);
    pack_float(B, br, bc, ldb, fb);
    cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                fa, (int)(ac > 0 ? ac : 1), fb, (int)(bc > 0 ? bc : 1), 0.0f, fc, n);
    for (int64_t i = 0; i < m; i++)
        widen(fc + i * n, C + i * ldc, n, alpha, beta);
    free(buf);
    return true;
}

/* Contract in blas.h. m, n or k may be 0 (then C is only scaled by beta,
 * or left alone when m or n is 0). */
void blas_dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                double *C, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
        dgemm_naive(transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (blas_single() && sgemm_pays(m, n, k) &&
        sgemm_path(transA, transB, (int)m, (int)n, (int)k, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    /* BLAS insists on leading dimensions >= 1 even for empty operands. */
    cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)(lda > 0 ? lda : 1), B, (int)(ldb > 0 ? ldb : 1),
                beta, C, (int)(ldc > 0 ? ldc : 1));
}

/* Contract in blas.h: float operands, sgemm whatever the precision
 * setting. Beyond int's range a plain loop (float accumulation, as sgemm). */
void blas_sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float acc = 0;
                for (int64_t l = 0; l < k; l++)
                    acc += (transA ? A[l * lda + i] : A[i * lda + l]) * (transB ? B[j * ldb + l] : B[l * ldb + j]);
                C[i * ldc + j] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i * ldc + j];
            }
        return;
    }
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)(lda > 0 ? lda : 1), B, (int)(ldb > 0 ? ldb : 1),
                beta, C, (int)(ldc > 0 ? ldc : 1));
}

/* Row-major y[m] = alpha * op(A) x + beta * y, A stored m x n (lda). */
void blas_dgemv(bool transA, int64_t m, int64_t n, double alpha, const double *A, int64_t lda,
                const double *x, double beta, double *y)
{
    int64_t ylen = transA ? n : m, xlen = transA ? m : n;
    if (ylen <= 0)
        return;
    if (m > INT_MAX || n > INT_MAX || lda > INT_MAX || xlen <= 0) {
        for (int64_t i = 0; i < ylen; i++) {
            double s = 0;
            for (int64_t p = 0; p < xlen; p++)
                s += (transA ? A[p * lda + i] : A[i * lda + p]) * x[p];
            y[i] = alpha * s + (beta == 0 ? 0 : beta * y[i]);
        }
        return;
    }
    cblas_dgemv(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, (int)m, (int)n, alpha, A,
                (int)(lda > 0 ? lda : 1), x, 1, beta, y, 1);
}

void blas_set_threads(int n)
{
    if (n < 1)
        n = 1;
    openblas_set_num_threads(n);
}

int blas_get_threads(void)
{
    return openblas_get_num_threads();
}

/* ==================================================================
 * the thread budget
 * ================================================================== */

/* How long an idle OpenBLAS thread spins before it sleeps.
 *
 * After each parallel call OpenBLAS's threads busy-wait (sched_yield in a
 * loop) for 2^OPENBLAS_THREAD_TIMEOUT TSC cycles, 2^28 by default: 0.1 s
 * here. Meanwhile they hold cores that paramserv and parfor workers, or our
 * own element-wise threads, want: at paramserv k=1 the second BLAS thread
 * spent ~60% of its time in sched_yield. 2^21 cycles is 0.5-1 ms: long
 * enough that the back-to-back calls of a training step find the threads
 * awake, short enough that they leave the core to the interpreter work in
 * between.
 *
 * OpenBLAS reads the variable when the library loads (before main) and uses
 * it when it starts its threads. So we set it, have the library read its
 * environment again, and restart its threads: the same path OpenBLAS takes
 * after fork(). The three entry points are OpenBLAS internals, looked up at
 * run time: a BLAS without them (another implementation, the OpenMP build)
 * keeps its defaults. A timeout the user set is left alone. */
enum { BLAS_IDLE_TIMEOUT = 21 };

static void blas_idle_setup(void)
{
    void (*read_env)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "openblas_read_env");
    int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_init");
    if (!read_env || !shutdown || !init || getenv("OPENBLAS_THREAD_TIMEOUT"))
        return;
    char v[16];
    snprintf(v, sizeof v, "%d", BLAS_IDLE_TIMEOUT);
    if (setenv("OPENBLAS_THREAD_TIMEOUT", v, 0) != 0)
        return;
    read_env();
    shutdown();
    init();
}

/* Threads the process may keep busy; 0 until set (then: online cores).
 * Written once by main() before any thread starts, read by all after:
 * process-wide like OpenBLAS's own thread count, which it governs. */
static atomic_int budget_total;

void blas_budget_set(int total)
{
    blas_idle_setup();
    if (total < 1) {
        /* OpenBLAS's own default: the cores, or OPENBLAS_NUM_THREADS. */
        atomic_store(&budget_total, blas_get_threads() > 0 ? blas_get_threads() : 1);
        return;
    }
    atomic_store(&budget_total, total);
    blas_set_threads(total);
}

int blas_budget_total(void)
{
    int t = atomic_load(&budget_total);
    if (t > 0)
        return t;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 1024 ? n : 1024) : 1;
}

int blas_budget_share(int workers)
{
    int total = blas_budget_total();
    if (workers < 1)
        workers = 1;
    return total / workers > 1 ? total / workers : 1;
}

int blas_budget_enter(int workers)
{
    int before = blas_get_threads();
    blas_set_threads(blas_budget_share(workers));
    return before;
}

void blas_budget_leave(int saved)
{
    blas_set_threads(saved);
}

const char *blas_corename(void)
{
    const char *s = openblas_get_corename();
    return s ? s : "unknown";
}

/* ==================================================================
 * kernel choice, by measurement
 * ================================================================== */

/* OpenBLAS built with DYNAMIC_ARCH picks its kernel ("core") from CPUID in
 * a library constructor, before main(). It does not know every CPU: on some
 * virtual machines it falls back to its generic SSE kernel, and where it
 * does know one it may not pick the fastest of the kernels the CPU can run
 * (on an Emerald Rapids Xeon, SkylakeX where Cooperlake is 1.3x faster).
 *
 * So dml measures. Every core of the library that the CPU can execute is
 * tried on a 256 x 256 dgemm and sgemm on one thread (thread CPU time, the
 * best of a few calls, cores interleaved), and the fastest is kept; the
 * library's own pick wins ties within 3%. The result is cached per CPU and
 * library (blas_cache_path) so a run pays the ~20 ms once per machine.
 *
 * Cores are switched in process: OpenBLAS's exported gotoblas_dynamic_quit
 * and gotoblas_dynamic_init reselect the kernel table, honouring
 * OPENBLAS_CORETYPE as at start-up. That is safe only while no BLAS call
 * is in flight: blas_choose_core runs in main() before any thread of ours
 * starts. The table of what each core needs (core_runs) is a safety check
 * (running a kernel the CPU lacks instructions for is SIGILL), not the
 * choice: the choice is the measurement. */

enum { CORE_MAX = 12, MEASURE_N = 256, MEASURE_ROUNDS = 5 };

typedef struct CoreChoice {
    char lib[24];               /* the library's own pick */
    char dcore[24], score[24];  /* fastest for dgemm, for sgemm */
    const char *how;            /* how dcore was chosen, for --stats */
    int n;                      /* measured cores */
    char name[CORE_MAX][24];
    double dgf[CORE_MAX], sgf[CORE_MAX];    /* GFLOP/s, 1 thread */
} CoreChoice;

static CoreChoice choice;       /* written by blas_choose_core before threads start */

static unsigned long long read_xcr0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* What the CPU and OS support, as the cores need it. */
typedef struct CpuIsa {
    bool avx, avx2fma, avx512, bf16, fma4;
} CpuIsa;

static CpuIsa cpu_isa(void)
{
    CpuIsa c = {0};
    unsigned int a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d) || !(cx & bit_OSXSAVE) || !(cx & bit_AVX))
        return c;
    unsigned long long xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6)
        return c;
    c.avx = true;
    bool fma = cx & bit_FMA;
    unsigned int a8, b8, c8, d8;
    if (__get_cpuid(0x80000001, &a8, &b8, &c8, &d8))
        c.fma4 = c8 & bit_FMA4;
    unsigned int a7, b7, c7, d7;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7))
        return c;
    c.avx2fma = (b7 & bit_AVX2) && fma;
    const unsigned int avx512 = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL | bit_AVX512CD;
    c.avx512 = c.avx2fma && (b7 & avx512) == avx512 && (xcr0 & 0xe6) == 0xe6;
    unsigned int a71, b71, c71, d71;
    if (c.avx512 && a7 >= 1 && __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71))
        c.bf16 = a71 & (1u << 5);
    return c;
}

/* Can this CPU run the core's kernels? Cores of other architectures and
 * names we do not know: no (the library's own pick is measured anyway). */
static bool core_runs(const char *name, CpuIsa c)
{
    static const struct { const char *name; int need; } T[] = {
        /* need: 1 AVX, 2 AVX2+FMA, 3 AVX-512, 4 AVX-512 with BF16, 5 FMA4 */
        {"Sandybridge", 1}, {"Haswell", 2}, {"Zen", 2}, {"SkylakeX", 3}, {"Cooperlake", 4},
        {"SapphireRapids", 4}, {"Bulldozer", 5}, {"Piledriver", 5}, {"Steamroller", 5}, {"Excavator", 5},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strcasecmp(name, T[i].name) == 0)
            switch (T[i].need) {
            case 1: return c.avx;
            case 2: return c.avx2fma;
            case 3: return c.avx512;
            case 4: return c.avx512 && c.bf16;
            default: return c.avx && c.fma4;
            }
    return false;
}

typedef void (*VoidFn)(void);
static VoidFn dyn_quit, dyn_init;

/* Switch OpenBLAS to core 'name' (no BLAS call in flight). Returns true
 * when the library now runs it (an unknown name leaves its CPUID pick). */
static bool core_switch(const char *name)
{
    if (!dyn_quit || !dyn_init)
        return false;
    const char *old = getenv("OPENBLAS_CORETYPE");
    char *saved = old ? strdup(old) : NULL;
    if (setenv("OPENBLAS_CORETYPE", name, 1) != 0) {
        free(saved);
        return false;
    }
    dyn_quit();
    dyn_init();
    if (saved)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    free(saved);
    return strcasecmp(blas_corename(), name) == 0;
}

static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Measures every core in choice.name[0..n) and fills dgf/sgf. */
static void measure_cores(void)
{
    const int n = MEASURE_N;
    size_t cells = (size_t)n * n;
    double *A = malloc(3 * cells * sizeof *A);
    float *F = malloc(3 * cells * sizeof *F);
    if (!A || !F) {
        free(A);
        free(F);
        return;
    }
    for (size_t i = 0; i < 2 * cells; i++) {
        A[i] = (double)((i * 2654435761u) % 1000) / 1000.0 - 0.5;
        F[i] = (float)A[i];
    }
    int threads = blas_get_threads();
    openblas_set_num_threads(1);
    double flop = 2.0 * n * n * n;
    for (int r = 0; r < MEASURE_ROUNDS; r++)
        for (int c = 0; c < choice.n; c++) {
            if (!core_switch(choice.name[c]))
                continue;
            for (int k = 0; k < 3; k++) {    /* the first call warms up */
                double t0 = thread_seconds();
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, A + cells, n, 0,
                            A + 2 * cells, n);
                double t1 = thread_seconds();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, F, n, F + cells, n, 0,
                            F + 2 * cells, n);
                double t2 = thread_seconds();
                if (k > 0 && t1 > t0 && flop / (t1 - t0) / 1e9 > choice.dgf[c])
                    choice.dgf[c] = flop / (t1 - t0) / 1e9;
                if (k > 0 && t2 > t1 && flop / (t2 - t1) / 1e9 > choice.sgf[c])
                    choice.sgf[c] = flop / (t2 - t1) / 1e9;
            }
        }
    openblas_set_num_threads(threads);
    free(A);
    free(F);
}

/* Drops the names the library does not run as themselves (it maps
 * SapphireRapids to Cooperlake in 0.3.21): nothing was measured. */
static void drop_unmeasured(void)
{
    int k = 0;
    for (int c = 0; c < choice.n; c++)
        if (choice.dgf[c] > 0 || c == 0) {
            memmove(choice.name[k], choice.name[c], sizeof choice.name[k]);
            choice.dgf[k] = choice.dgf[c];
            choice.sgf[k++] = choice.sgf[c];
        }
    choice.n = k;
}

/* The fastest core by gf[], the library's pick when within 3% of it. */
static const char *fastest(const double *gf)
{
    int best = -1;
    for (int c = 0; c < choice.n; c++)
        if (gf[c] > 0 && (best < 0 || gf[c] > gf[best]))
            best = c;
    if (best < 0)
        return choice.lib;
    for (int c = 0; c < choice.n; c++)
        if (strcasecmp(choice.name[c], choice.lib) == 0 && gf[c] >= 0.97 * gf[best])
            return choice.lib;
    return choice.name[best];
}

/* The cache: $XDG_CACHE_HOME/dml/blas-core, else ~/.cache/dml/blas-core.
 * One line per CPU and library: KEY \t dgemm core \t sgemm core \t the
 * measurements. The key names the CPU (vendor, signature, brand), the
 * library (openblas_get_config) and the cores measured, so a CPU seen
 * under valgrind (which hides AVX-512) or another OpenBLAS measures anew. */
static bool cache_path(char *buf, size_t cap)
{
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int k;
    if (x && *x == '/')
        k = snprintf(buf, cap, "%s/dml/blas-core", x);
    else if (h && *h == '/')
        k = snprintf(buf, cap, "%s/.cache/dml/blas-core", h);
    else
        return false;
    return k > 0 && (size_t)k < cap;
}

char *openblas_get_config(void);

static void cache_key(char *key, size_t cap)
{
    unsigned int r[12] = {0}, a, b, c, d;
    char brand[49] = "";
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004)
        for (unsigned int i = 0; i < 3; i++)
            __get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    memcpy(brand, r, 48);
    unsigned int sig = 0;
    if (__get_cpuid(1, &a, &b, &c, &d))
        sig = a;
    const char *cfg = openblas_get_config();
    size_t k = (size_t)snprintf(key, cap, "%s|%08x|%s|", brand, sig, cfg ? cfg : "");
    for (int i = 0; i < choice.n && k < cap; i++)
        k += (size_t)snprintf(key + k, cap - k, "%s%s", i ? "," : "", choice.name[i]);
    for (char *p = key; *p; p++)
        if (*p == '\t' || *p == '\n' || (unsigned char)*p < ' ')
            *p = ' ';
}

/* Reads the cached choice for key; true when found (cores filled). */
static bool cache_read(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[2048];
    bool found = false;
    size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || line[kl] != '\t')
            continue;
        char *dc = line + kl + 1, *sc = strchr(dc, '\t');
        if (!sc)
            break;
        *sc++ = '\0';
        char *rest = strchr(sc, '\t');
        if (rest)
            *rest++ = '\0';
        if (strlen(dc) >= sizeof choice.dcore || strlen(sc) >= sizeof choice.score)
            break;
        strcpy(choice.dcore, dc);
        strcpy(choice.score, sc);
        for (int c = 0; rest && c < choice.n; c++) {     /* "name=dgf/sgf ..." */
            const char *p = strstr(rest, choice.name[c]);
            if (p && p[strlen(choice.name[c])] == '=')
                sscanf(p + strlen(choice.name[c]) + 1, "%lf/%lf", &choice.dgf[c], &choice.sgf[c]);
        }
        found = true;
    }
    fclose(f);
    return found;
}

/* Rewrites the cache with this key's line replaced (a temporary file
 * renamed over it: a reader sees the old file or the new one). Failure to
 * write is silent: the next run measures again. */
static void cache_write(const char *path, const char *key)
{
    char dir[4096], tmp[4200];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out)
        return;
    FILE *in = fopen(path, "r");
    char line[2048];
    size_t kl = strlen(key);
    while (in && fgets(line, sizeof line, in))
        if (!(strncmp(line, key, kl) == 0 && line[kl] == '\t') && strchr(line, '\n'))
            fputs(line, out);
    if (in)
        fclose(in);
    fprintf(out, "%s\t%s\t%s\t", key, choice.dcore, choice.score);
    for (int c = 0; c < choice.n; c++)
        fprintf(out, "%s%s=%.1f/%.1f", c ? " " : "", choice.name[c], choice.dgf[c], choice.sgf[c]);
    fputc('\n', out);
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        remove(tmp);
}

/* Contract in blas.h. */
void blas_choose_core(void)
{
    snprintf(choice.lib, sizeof choice.lib, "%s", blas_corename());
    snprintf(choice.dcore, sizeof choice.dcore, "%s", choice.lib);
    snprintf(choice.score, sizeof choice.score, "%s", choice.lib);
    choice.how = "OpenBLAS's own pick";
    const char *want = getenv("DML_BLAS_CORETYPE");
    if (getenv("OPENBLAS_CORETYPE") && !(want && *want)) {
        choice.how = "OPENBLAS_CORETYPE";
        return;
    }
    if (want && strcasecmp(want, "library") == 0)
        return;
    dyn_quit = (VoidFn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    dyn_init = (VoidFn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    if (!dyn_quit || !dyn_init)     /* not a DYNAMIC_ARCH OpenBLAS */
        return;
    CpuIsa isa = cpu_isa();
    bool remeasure = want && strcasecmp(want, "measure") == 0;
    if (want && *want && !remeasure) {
        if (core_runs(want, isa) || strcasecmp(want, choice.lib) == 0) {
            core_switch(want);
            snprintf(choice.dcore, sizeof choice.dcore, "%s", blas_corename());
            snprintf(choice.score, sizeof choice.score, "%s", choice.dcore);
            choice.how = "DML_BLAS_CORETYPE";
        } else {
            fprintf(stderr, "dml: DML_BLAS_CORETYPE=%s: not a core this CPU can run; keeping %s\n", want,
                    choice.lib);
        }
        return;
    }
    /* The candidates: the library's pick, then the cores the CPU runs. */
    static const char *const CORES[] = {"SapphireRapids", "Cooperlake", "SkylakeX", "Zen", "Haswell",
                                        "Excavator", "Steamroller", "Piledriver", "Bulldozer", "Sandybridge"};
    choice.n = 0;
    snprintf(choice.name[choice.n++], sizeof choice.name[0], "%s", choice.lib);
    for (size_t i = 0; i < sizeof CORES / sizeof CORES[0] && choice.n < CORE_MAX; i++)
        if (core_runs(CORES[i], isa) && strcasecmp(CORES[i], choice.lib) != 0)
            snprintf(choice.name[choice.n++], sizeof choice.name[0], "%s", CORES[i]);
    if (choice.n < 2)
        return;
    char path[4096], key[1024];
    bool cached = cache_path(path, sizeof path);
    cache_key(key, sizeof key);
    if (!remeasure && cached && cache_read(path, key) && core_runs(choice.dcore, isa) &&
        core_runs(choice.score, isa)) {
        choice.how = "fastest measured, cached";
        drop_unmeasured();
    } else {
        measure_cores();
        drop_unmeasured();
        /* a name the library maps to another core (SapphireRapids ->
         * Cooperlake in 0.3.21) is measured as that core: keep the library's */
        snprintf(choice.dcore, sizeof choice.dcore, "%s", fastest(choice.dgf));
        snprintf(choice.score, sizeof choice.score, "%s", fastest(choice.sgf));
        choice.how = "fastest measured";
        if (cached)
            cache_write(path, key);
    }
    if (strcasecmp(choice.dcore, blas_corename()) != 0 && !core_switch(choice.dcore))
        core_switch(choice.lib);
}

/* Contract in blas.h. */
void blas_prefer_single(void)
{
    if (choice.n >= 2 && strcasecmp(choice.score, blas_corename()) != 0 && core_switch(choice.score))
        choice.how = "fastest sgemm measured";
}

/* Contract in blas.h. */
void blas_core_report(char *buf, size_t cap)
{
    int k = snprintf(buf, cap, "%s (%s", blas_corename(), choice.how ? choice.how : "OpenBLAS's own pick");
    for (int c = 0; c < choice.n && k > 0 && (size_t)k < cap; c++)
        k += snprintf(buf + k, cap - (size_t)k, "%s %s %.0f/%.0f", c ? "," : ";", choice.name[c], choice.dgf[c],
                      choice.sgf[c]);
    if (k > 0 && (size_t)k < cap)
        snprintf(buf + k, cap - (size_t)k, "%s)%s", choice.n ? " GFLOP/s dgemm/sgemm, 1 thread" : "",
                 blas_single() ? "; products in single precision" : "");
}
