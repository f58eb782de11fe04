/* SPDX-License-Identifier: Apache-2.0
 * Reference numbers for bench/run.sh, from C directly:
 *   dgemm N        best-of-5 GFLOP/s of cblas_dgemm on N x N
 *   elementwise    best-of-10 seconds of Z = exp(X) * Y + X, 1000x1000
 * Build: cc -O2 -o build/bench/blas_bench bench/blas_bench.c $(pkg-config --cflags --libs openblas) -lm */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "dgemm") == 0) {
        int n = atoi(argv[2]);
        double *A = randm((size_t)n * n, 1), *B = randm((size_t)n * n, 2), *C = calloc((size_t)n * n, sizeof *C);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C, n);
        double best = 1e30;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C, n);
            double t = now() - t0;
            if (t < best)
                best = t;
        }
        printf("dgemm %d %.3f\n", n, 2.0 * n * n * n / best / 1e9);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "elementwise") == 0) {
        size_t n = 1000 * 1000;
        double *X = randm(n, 1), *Y = randm(n, 2);
        double best = 1e30, s = 0;
        for (int r = 0; r < 10; r++) {
            double t0 = now();
            double *Z = malloc(n * sizeof *Z);
            for (size_t i = 0; i < n; i++)
                Z[i] = exp(X[i]) * Y[i] + X[i];
            double t = now() - t0;
            s += Z[n / 2];
            free(Z);
            if (t < best)
                best = t;
        }
        printf("elementwise %.6f check %g\n", best, s);
        return 0;
    }
    fprintf(stderr, "usage: blas_bench dgemm N | elementwise\n");
    return 2;
}
