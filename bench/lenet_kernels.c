/* SPDX-License-Identifier: Apache-2.0
 * Per-batch cost of every DNN kernel of one LeNet worker step
 * (scripts/mnist_lenet.dml, batch 64, one BLAS thread as each of paramserv's
 * k=2 workers has on 2 cores), next to the dgemms that bound them:
 *   conv1 1x28x28 -> 32 5x5 pad 2;  conv2 32x14x14 -> 64 5x5 pad 2;
 *   max_pool 2x2/2 after each;  affine 3136 -> 512 (three dgemms).
 * Times are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), best of
 * REPS runs, so that a shared, loaded machine still gives steady figures
 * (only cache contention leaks in); compare builds side by side.
 *
 * Build and run from the repository root:
 *   cc -O2 -std=gnu11 -I. $(pkg-config --cflags openblas) -o /tmp/lenet_kernels \
 *      bench/lenet_kernels.c builtins/dnn_kernels.c builtins/dnn_winograd.c $(pkg-config --libs openblas || echo -lopenblas) -lm
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /tmp/lenet_kernels [reps (default 7)]
 * blas_dgemm comes from bench/kernel_shim.h (as dnn_bench.c). */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "builtins/dnn_kernels.h"
#include "kernel_shim.h"

void openblas_set_num_threads(int n);

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int reps = 7;
static double total;

/* Times 'stmt' (best of reps) and prints it; 'sum' adds it to the total. */
#define TIME(name, sum, stmt)                                               \
    do {                                                                    \
        double best = 1e30;                                                 \
        for (int r_ = 0; r_ < reps; r_++) {                                 \
            double t0_ = cpu_now();                                         \
            stmt;                                                           \
            double t_ = cpu_now() - t0_;                                    \
            best = t_ < best ? t_ : best;                                   \
        }                                                                   \
        if (sum)                                                            \
            total += best;                                                  \
        printf("%-40s %8.2f ms\n", name, best * 1e3);                       \
    } while (0)

int main(int argc, char **argv)
{
    if (argc > 1)
        reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : reps;
    openblas_set_num_threads(1);
    const int64_t N = 64;
    DnnGeom c1 = {.N = N, .C = 1, .H = 28, .W = 28, .F = 32, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2};
    DnnGeom c2 = {.N = N, .C = 32, .H = 14, .W = 14, .F = 64, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2};
    DnnGeom p1 = {.N = N, .C = 32, .H = 28, .W = 28, .R = 2, .S = 2, .sh = 2, .sw = 2};
    DnnGeom p2 = {.N = N, .C = 64, .H = 14, .W = 14, .R = 2, .S = 2, .sh = 2, .sw = 2};
    dnn_geom_output(&c1);
    dnn_geom_output(&c2);
    dnn_geom_output(&p1);
    dnn_geom_output(&p2);
    DnnGeom c2i = c2;       /* conv2 by im2col + dgemm, as before Winograd */
    c2i.winograd = -1;
    if (argc > 2)
        c2.batch = atoi(argv[2]);   /* images per Winograd batch (default: the kernels' choice) */
    double *X1 = bench_filled(N * 784, 1, "lenet_kernels"), *W1 = bench_filled(32 * 25, 2, "lenet_kernels"), *O1 = bench_filled(N * 32 * 784, 3, "lenet_kernels");
    double *dX1 = bench_filled(N * 784, 4, "lenet_kernels"), *dW1 = bench_filled(32 * 25, 5, "lenet_kernels"), *Q1 = bench_filled(N * 32 * 784, 6, "lenet_kernels");
    double *X2 = bench_filled(N * 32 * 196, 7, "lenet_kernels"), *W2 = bench_filled(64 * 800, 8, "lenet_kernels"), *O2 = bench_filled(N * 64 * 196, 9, "lenet_kernels");
    double *dX2 = bench_filled(N * 32 * 196, 10, "lenet_kernels"), *dW2 = bench_filled(64 * 800, 11, "lenet_kernels"), *Q2 = bench_filled(N * 64 * 196, 12, "lenet_kernels");
    double *P1 = bench_filled(N * 32 * 196, 13, "lenet_kernels"), *P2 = bench_filled(N * 64 * 49, 14, "lenet_kernels");
    double *A = bench_filled(N * 3136, 15, "lenet_kernels"), *B = bench_filled(3136 * 512, 16, "lenet_kernels"), *C = bench_filled(N * 512, 17, "lenet_kernels");
    double *G = bench_filled(800 * 196, 18, "lenet_kernels");     /* one image's conv2 columns, as the kernels keep them */

    printf("LeNet kernels, batch %lld, 1 BLAS thread, thread CPU time, best of %d\n", (long long)N, reps);
    TIME("conv1 conv2d", 1, dnn_conv2d(&c1, X1, W1, O1));
    TIME("conv1 conv2d_backward_filter", 1, dnn_conv2d_backward_filter(&c1, X1, O1, dW1));
    TIME("conv1 conv2d_backward_data (unused)", 0, dnn_conv2d_backward_data(&c1, W1, O1, dX1));
    TIME("conv2 conv2d", 1, dnn_conv2d(&c2, X2, W2, O2));
    TIME("conv2 conv2d_backward_filter", 1, dnn_conv2d_backward_filter(&c2, X2, O2, dW2));
    TIME("conv2 conv2d_backward_data", 1, dnn_conv2d_backward_data(&c2, W2, O2, dX2));
    TIME("conv2 conv2d (im2col)", 0, dnn_conv2d(&c2i, X2, W2, O2));
    TIME("conv2 conv2d_backward_filter (im2col)", 0, dnn_conv2d_backward_filter(&c2i, X2, O2, dW2));
    TIME("conv2 conv2d_backward_data (im2col)", 0, dnn_conv2d_backward_data(&c2i, W2, O2, dX2));
    TIME("pool1 max_pool", 1, dnn_max_pool(&p1, O1, P1));
    TIME("pool1 max_pool_backward", 1, dnn_max_pool_backward(&p1, O1, P1, Q1));
    TIME("pool2 max_pool", 1, dnn_max_pool(&p2, O2, P2));
    TIME("pool2 max_pool_backward", 1, dnn_max_pool_backward(&p2, O2, P2, Q2));
    TIME("conv1 bias_add", 1, dnn_bias_add(O1, N, 32 * 784, W1, 32, Q1));
    TIME("conv2 bias_add", 1, dnn_bias_add(O2, N, 64 * 196, W2, 64, Q2));
    TIME("affine3 X %*% W", 1, blas_dgemm(false, false, N, 512, 3136, 1.0, A, 3136, B, 512, 0.0, C, 512));
    TIME("affine3 t(X) %*% dout", 1, blas_dgemm(true, false, 3136, 512, N, 1.0, A, 3136, C, 512, 0.0, B, 512));
    TIME("affine3 dout %*% t(W)", 1, blas_dgemm(false, true, N, 3136, 512, 1.0, C, 512, B, 512, 0.0, A, 3136));
    printf("%-40s %8.2f ms\n", "sum of the counted rows", total * 1e3);
    /* the bound: conv2's three products as plain dgemms of one image each */
    TIME("dgemm bound: conv2's 3 products", 0, for (int64_t i = 0; i < N; i++) {
        blas_dgemm(false, false, 64, 196, 800, 1.0, W2, 800, G, 196, 0.0, O2 + i * 64 * 196, 196);
        blas_dgemm(false, true, 64, 800, 196, 1.0, O2 + i * 64 * 196, 196, G, 196, 1.0, dW2, 800);
        blas_dgemm(true, false, 800, 196, 64, 1.0, W2, 800, O2 + i * 64 * 196, 196, 0.0, G, 196);
    });
    free(X1); free(W1); free(O1); free(dX1); free(dW1); free(Q1);
    free(X2); free(W2); free(O2); free(dX2); free(dW2); free(Q2);
    free(P1); free(P2); free(A); free(B); free(C); free(G);
    return 0;
}
