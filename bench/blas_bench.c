/* SPDX-License-Identifier: Apache-2.0
 * Reference numbers for bench/run.sh, from C directly:
 *   dgemm N T      cblas_dgemm on N x N with T OpenBLAS threads; prints
 *                  "dgemm N T <first GFLOP/s> <steady GFLOP/s> <kernel>
 *                  <best GFLOP/s>", first = the first call into a fresh
 *                  output (page faults and OpenBLAS start-up included),
 *                  steady = median of 11, best = the fastest of them
 *   sgemm N T      the same with cblas_sgemm (float32)
 *   elementwise    Z = exp(X) * Y + X, 1000x1000, a plain C loop (libm exp);
 *                  prints "elementwise <first s> <steady s>" (median of 11)
 * Build: cc -O2 -o build/bench/blas_bench bench/blas_bench.c $(pkg-config --cflags --libs openblas) -lm */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

enum { REPS = 11 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double *randm(size_t n, unsigned seed)
{
    double *a = malloc(n * sizeof *a);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        a[i] = rand() / (double)RAND_MAX;
    return a;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

int main(int argc, char **argv)
{
    if (argc >= 3 && (strcmp(argv[1], "dgemm") == 0 || strcmp(argv[1], "sgemm") == 0)) {
        bool single = argv[1][0] == 's';
        int n = atoi(argv[2]), threads = argc >= 4 ? atoi(argv[3]) : 0;
        if (threads > 0)
            openblas_set_num_threads(threads);
        double *A = randm((size_t)n * n, 1), *B = randm((size_t)n * n, 2);
        double *C = malloc((size_t)n * n * sizeof *C);
        float *As = malloc((size_t)n * n * sizeof *As), *Bs = malloc((size_t)n * n * sizeof *Bs);
        float *Cs = malloc((size_t)n * n * sizeof *Cs);
        for (size_t i = 0; i < (size_t)n * n; i++)
            As[i] = (float)A[i], Bs[i] = (float)B[i];
        double t[REPS + 1];
        for (int r = 0; r <= REPS; r++) {
            double t0 = now();
            if (single)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, As, n, Bs, n, 0, Cs, n);
            else
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C, n);
            t[r] = now() - t0;
        }
        double f = 2.0 * n * n * n / 1e9, med = median(t + 1, REPS);
        printf("%s %d %d %.3f %.3f %s %.3f\n", argv[1], n, threads, f / t[0], f / med,
               openblas_get_corename(), f / t[1]);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "elementwise") == 0) {
        size_t n = 1000 * 1000;
        double *X = randm(n, 1), *Y = randm(n, 2);
        double t[REPS + 1], s = 0;
        for (int r = 0; r <= REPS; r++) {
            double t0 = now();
            double *Z = malloc(n * sizeof *Z);
            for (size_t i = 0; i < n; i++)
                Z[i] = exp(X[i]) * Y[i] + X[i];
            t[r] = now() - t0;
            s += Z[n / 2];
            free(Z);
        }
        printf("elementwise %.6f %.6f check %g\n", t[0], median(t + 1, REPS), s);
        return 0;
    }
    fprintf(stderr, "usage: blas_bench dgemm|sgemm N [THREADS] | elementwise\n");
    return 2;
}
