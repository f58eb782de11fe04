/* SPDX-License-Identifier: Apache-2.0
 * conv2d's three passes on LeNet's two layers (batch 64, 5x5 filters, pad 2):
 * conv1 1x28x28 -> 32, conv2 32x14x14 -> 64, in each algorithm and
 * precision: im2col or Winograd (DnnGeom.winograd -1 / 1), double or single
 * (blas_precision_set). Milliseconds of process CPU time per pass (steadier
 * than wall time on a shared machine), best of R interleaved rounds, on the
 * BLAS thread count OPENBLAS_NUM_THREADS gives (1 for the table in
 * bench/RESULTS.md).
 *   cc -O2 -std=gnu11 -I. $(pkg-config --cflags openblas) -o /tmp/conv_precision bench/conv_precision.c \
 *      builtins/dnn_kernels.c builtins/dnn_winograd.c runtime/blas.c \
 *      $(pkg-config --libs openblas || echo -lopenblas) -lm -ldl -lpthread
 *   OPENBLAS_NUM_THREADS=1 /tmp/conv_precision [rounds] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "builtins/dnn_kernels.h"
#include "runtime/blas.h"

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static double *filled(int64_t n, unsigned seed)
{
    double *a = malloc((size_t)n * sizeof *a);
    if (!a) {
        fprintf(stderr, "conv_precision: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (double)(seed >> 8) / 16777216.0 - 0.5;
    }
    return a;
}

enum { LAYERS = 2, MODES = 4, PASSES = 3 };
static const char *mode_name[MODES] = {"double im2col", "double Winograd", "single im2col", "single Winograd"};
static const char *pass_name[PASSES] = {"forward", "filter grad", "data grad"};

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const int64_t N = 64, C[LAYERS] = {1, 32}, HW[LAYERS] = {28, 14}, F[LAYERS] = {32, 64};
    double best[LAYERS][MODES][PASSES];
    for (int l = 0; l < LAYERS; l++)
        for (int m = 0; m < MODES; m++)
            for (int p = 0; p < PASSES; p++)
                best[l][m][p] = 1e300;
    for (int r = 0; r < rounds; r++)
        for (int l = 0; l < LAYERS; l++) {
            DnnGeom g = {.N = N, .C = C[l], .H = HW[l], .W = HW[l], .F = F[l], .R = 5, .S = 5, .sh = 1, .sw = 1,
                         .ph = 2, .pw = 2};
            dnn_geom_output(&g);
            const int64_t CHW = g.C * g.H * g.W, FPQ = g.F * g.P * g.Q, CRS = g.C * 25;
            double *X = filled(N * CHW, 1), *W = filled(g.F * CRS, 2), *D = filled(N * FPQ, 3);
            double *o = malloc((size_t)(N * FPQ) * sizeof *o), *dW = malloc((size_t)(g.F * CRS) * sizeof *dW);
            double *dX = malloc((size_t)(N * CHW) * sizeof *dX);
            /* one untimed pass first: the first call on fresh arrays was
             * 3x slower for conv1's forward, whichever mode ran it */
            g.winograd = -1;
            if (!blas_precision_set("double") || dnn_conv2d(&g, X, W, o) || dnn_conv2d_backward_filter(&g, X, D, dW) ||
                dnn_conv2d_backward_data(&g, W, D, dX))
                return 1;
            for (int m = 0; m < MODES; m++) {
                g.winograd = m & 1 ? 1 : -1;
                if (!blas_precision_set(m & 2 ? "single" : "double"))
                    return 1;
                double t[PASSES + 1];
                t[0] = cpu_ms();
                int rc = dnn_conv2d(&g, X, W, o);
                t[1] = cpu_ms();
                rc |= dnn_conv2d_backward_filter(&g, X, D, dW);
                t[2] = cpu_ms();
                rc |= dnn_conv2d_backward_data(&g, W, D, dX);
                t[3] = cpu_ms();
                if (rc)
                    return 1;
                for (int p = 0; p < PASSES; p++)
                    if (t[p + 1] - t[p] < best[l][m][p])
                        best[l][m][p] = t[p + 1] - t[p];
            }
            free(X), free(W), free(D), free(o), free(dW), free(dX);
        }
    printf("ms of CPU per pass, best of %d, N = 64\n", rounds);
    for (int l = 0; l < LAYERS; l++)
        for (int m = 0; m < MODES; m++) {
            double sum = 0;
            printf("conv%d %-16s", l + 1, mode_name[m]);
            for (int p = 0; p < PASSES; p++) {
                printf("  %s %7.2f", pass_name[p], best[l][m][p]);
                sum += best[l][m][p];
            }
            printf("  all %7.2f\n", sum);
        }
    return 0;
}
