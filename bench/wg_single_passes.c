/* SPDX-License-Identifier: Apache-2.0
 * One conv2d pass at LeNet's conv2 (batch 64, 32x14x14 -> 64, 5x5, pad 2),
 * run 60 times in one process, in the precision given: the loop that
 * bench/RESULTS.md times with `perf stat -e task-clock` (best of 5
 * processes) to compare builds of the Winograd code pass by pass.
 *   cc -O2 -std=gnu11 -I. $(pkg-config --cflags openblas) -o /tmp/wg_single_passes bench/wg_single_passes.c \
 *      builtins/dnn_kernels.c builtins/dnn_winograd.c runtime/blas.c \
 *      $(pkg-config --libs openblas || echo -lopenblas) -lm -ldl -lpthread
 *   OPENBLAS_CORETYPE=Cooperlake OPENBLAS_NUM_THREADS=1 perf stat -e task-clock \
 *      /tmp/wg_single_passes single|double 0|1|2 [images per Winograd batch]
 * 0 is the forward pass, 1 the filter gradient, 2 the data gradient. */
#include <stdio.h>
#include <stdlib.h>

#include "builtins/dnn_kernels.h"
#include "runtime/blas.h"

int main(int argc, char **argv)
{
    if (argc < 3 || !blas_precision_set(argv[1])) {
        fprintf(stderr, "usage: wg_single_passes single|double 0|1|2 [batch]\n");
        return 2;
    }
    const int which = atoi(argv[2]);
    DnnGeom g = {.N = 64, .C = 32, .H = 14, .W = 14, .F = 64, .R = 5, .S = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2};
    dnn_geom_output(&g);
    if (argc > 3)
        g.batch = atoi(argv[3]);
    const int64_t nx = g.N * g.C * 196, no = g.N * g.F * 196, nw = g.F * g.C * 25;
    double *X = malloc((size_t)nx * sizeof *X), *W = malloc((size_t)nw * sizeof *W);
    double *O = malloc((size_t)no * sizeof *O), *dW = malloc((size_t)nw * sizeof *dW);
    if (!X || !W || !O || !dW) {
        fprintf(stderr, "wg_single_passes: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < nx; i++)
        X[i] = (double)(i % 17) * 0.1 - 0.8;
    for (int64_t i = 0; i < no; i++)
        O[i] = (double)(i % 13) * 0.1 - 0.6;
    for (int64_t i = 0; i < nw; i++)
        W[i] = (double)(i % 7) * 0.1 - 0.3;
    int rc = 0;
    for (int r = 0; r < 60 && rc == 0; r++)
        rc = which == 0 ? dnn_conv2d(&g, X, W, O)
           : which == 1 ? dnn_conv2d_backward_filter(&g, X, O, dW)
                        : dnn_conv2d_backward_data(&g, W, O, X);
    free(X);
    free(W);
    free(O);
    free(dW);
    return rc == 0 ? 0 : 1;
}
