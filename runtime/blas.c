/* SPDX-License-Identifier: Apache-2.0
 * The only includer of cblas.h. Wraps the BLAS calls the runtime needs and
 * picks the OpenBLAS kernel for this CPU before anything else runs.
 * No mutable state of its own; the OpenBLAS thread count it sets is
 * process-wide (that is OpenBLAS's design, not ours). */
#define _GNU_SOURCE     /* RTLD_DEFAULT */
#include "blas.h"

#include <cblas.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
    /* BLAS insists on leading dimensions >= 1 even for empty operands. */
    cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
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
 * kernel selection
 * ================================================================== */

/* OpenBLAS built with DYNAMIC_ARCH picks its kernel in a library
 * constructor, before main(), from CPUID, and on some virtual machines
 * falls back to a generic SSE kernel (Prescott) although the guest has
 * AVX-512. The kernel cannot be switched once loaded, but the constructor
 * honours OPENBLAS_CORETYPE; so we set it and re-execute ourselves. */

/* Instruction-set tiers, in the order OpenBLAS's kernels need them. */
enum { TIER_SSE = 0, TIER_AVX = 1, TIER_AVX2 = 2, TIER_AVX512 = 3, TIER_UNKNOWN = 99 };

static const char *const TIER_CORE[] = {NULL, "SandyBridge", "Haswell", "SkylakeX"};

static unsigned long long read_xcr0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Best tier this CPU and OS support (the OS must save the wide registers:
 * XCR0 bits for YMM, and for ZMM/opmask with AVX-512). */
static int cpu_tier(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return TIER_SSE;
    if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
        return TIER_SSE;
    unsigned long long xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6)
        return TIER_SSE;
    int tier = TIER_AVX;
    unsigned int a7, b7, c7, d7;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7))
        return tier;
    if ((b7 & bit_AVX2) && (c & bit_FMA))
        tier = TIER_AVX2;
    const unsigned int avx512 = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
    if (tier == TIER_AVX2 && (b7 & avx512) == avx512 && (xcr0 & 0xe6) == 0xe6)
        tier = TIER_AVX512;
    return tier;
}

/* Tier of an OpenBLAS x86_64 core name; TIER_UNKNOWN for names we do not
 * know (then we leave the library's choice alone). */
static int core_tier(const char *name)
{
    static const struct { const char *name; int tier; } T[] = {
        {"SkylakeX", TIER_AVX512}, {"Cooperlake", TIER_AVX512}, {"SapphireRapids", TIER_AVX512},
        {"Haswell", TIER_AVX2}, {"Zen", TIER_AVX2}, {"Excavator", TIER_AVX2},
        {"SandyBridge", TIER_AVX}, {"Bulldozer", TIER_AVX}, {"Piledriver", TIER_AVX},
        {"Steamroller", TIER_AVX},
        {"Prescott", TIER_SSE}, {"Nehalem", TIER_SSE}, {"Core2", TIER_SSE}, {"Penryn", TIER_SSE},
        {"Dunnington", TIER_SSE}, {"Atom", TIER_SSE}, {"Katmai", TIER_SSE}, {"Coppermine", TIER_SSE},
        {"Northwood", TIER_SSE}, {"Banias", TIER_SSE}, {"Opteron", TIER_SSE},
        {"Opteron_SSE3", TIER_SSE}, {"Barcelona", TIER_SSE}, {"Nano", TIER_SSE}, {"Bobcat", TIER_SSE},
        {"Athlon", TIER_SSE},
    };
    if (!name)
        return TIER_UNKNOWN;
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strcasecmp(name, T[i].name) == 0)
            return T[i].tier;
    return TIER_UNKNOWN;
}

/* Under valgrind /proc/self/exe is the valgrind tool, not us: never
 * re-execute there. */
static bool under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && (strstr(p, "vgpreload") || strstr(p, "valgrind"));
}

/* The core to switch to, or NULL when the library's choice stands. */
static const char *reexec_target(void)
{
    if (getenv("DML_BLAS_NO_REEXEC") || under_valgrind())
        return NULL;
    const char *cur = blas_corename();
    const char *want = getenv("DML_BLAS_CORETYPE");
    if (want && *want)
        return strcasecmp(want, cur) == 0 ? NULL : want;
    if (getenv("OPENBLAS_CORETYPE"))
        return NULL;
    int tier = cpu_tier();
    if (tier == TIER_SSE || core_tier(cur) >= tier)
        return NULL;
    return TIER_CORE[tier];
}

/* Contract in blas.h. Returns only when no re-execution was needed or it
 * failed (then we run on with the library's choice). */
void blas_preinit_argv(char **argv)
{
    const char *want = reexec_target();
    if (!want || !argv || !argv[0])
        return;
    if (setenv("OPENBLAS_CORETYPE", want, 1) != 0 || setenv("DML_BLAS_NO_REEXEC", "1", 1) != 0)
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc?): carry on with the kernel we have. */
}

/* Same, reading our argv back from /proc/self/cmdline so that main() need
 * not pass it. */
void blas_preinit(void)
{
    if (!reexec_target())   /* the common case: nothing to read */
        return;
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    /* Invariant after the loop: len < cap, so buf[len] can hold a NUL. */
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!buf || len == 0) {
        free(buf);
        return;
    }
    if (buf[len - 1] != '\0')
        buf[len++] = '\0';  /* truncated last argument */
    size_t argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += buf[i] == '\0';
    char **argv = calloc(argc + 1, sizeof *argv);
    if (argv) {
        size_t k = 0;
        for (size_t i = 0; i < len; k++) {
            argv[k] = buf + i;
            i += strlen(buf + i) + 1;
        }
        blas_preinit_argv(argv);
    }
    /* Only reached when no exec happened. */
    free(argv);
    free(buf);
}
