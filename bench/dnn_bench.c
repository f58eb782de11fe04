/* SPDX-License-Identifier: Apache-2.0
 * Standalone benchmark of the conv2d kernels (builtins/dnn_kernels.c) on the
 * two LeNet layer shapes, against plain dgemm in the same run:
 *   layer 1: N=64, 1x28x28 -> 32 filters 5x5, pad 2, stride 1
 *   layer 2: N=64, 32x14x14 -> 64 filters 5x5, pad 2, stride 1
 * For each it reports GFLOP/s of conv2d, conv2d_backward_filter,
 * conv2d_backward_data and of the three together (2*N*F*C*R*S*P*Q flops
 * each), the GFLOP/s of a dgemm of the same m,n,k as one conv pass
 * (F x CRS times CRS x N*P*Q), of a square 1536 dgemm (the machine's dgemm
 * rate), and the ratios; then the same over both layers together. Also
 * times max_pool 2x2/2 on the conv outputs.
 *
 * The shared 2-vCPU dev VM changes speed from one second to the next (other
 * processes take a core), so every repetition times all the ops and
 * the reference dgemms back to back, and the ratios reported are medians of
 * per-repetition ratios.
 *
 * Build and run from the repository root:
 *   cc -O2 -std=gnu11 -I. $(pkg-config --cflags openblas) -o /tmp/dnn_bench \
 *      bench/dnn_bench.c builtins/dnn_kernels.c builtins/dnn_winograd.c $(pkg-config --libs openblas || echo -lopenblas) -lm
 *   OPENBLAS_CORETYPE=SkylakeX /tmp/dnn_bench [images-per-dgemm (default: the kernels' choice)]
 * blas_dgemm comes from bench/kernel_shim.h, so it needs nothing else from the tree. */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "builtins/dnn_kernels.h"
#include "kernel_shim.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define REPS 15

typedef struct Layer {
    const char *name;
    DnnGeom g;
    double flops;               /* one conv pass */
    double *X, *Wt, *dout, *out, *dW, *dX, *pool, *B, *C;
    double t[5][REPS];          /* fwd, bwf, bwd, same-shape dgemm, max_pool */
} Layer;

static void layer_init(Layer *L, const char *name, int64_t N, int64_t C, int64_t H, int64_t W,
                       int64_t F, int64_t R, int64_t pad, int64_t batch)
{
    L->name = name;
    L->g = (DnnGeom){.N = N, .C = C, .H = H, .W = W, .F = F, .R = R, .S = R, .sh = 1, .sw = 1,
                     .ph = pad, .pw = pad, .batch = batch};
    dnn_geom_output(&L->g);
    int64_t CHW = C * H * W, CRS = C * R * R, PQ = L->g.P * L->g.Q;
    L->flops = 2.0 * (double)N * (double)F * (double)CRS * (double)PQ;
    L->X = bench_filled(N * CHW, 4, "dnn_bench");
    L->Wt = bench_filled(F * CRS, 5, "dnn_bench");
    L->dout = bench_filled(N * F * PQ, 6, "dnn_bench");
    L->out = bench_filled(N * F * PQ, 7, "dnn_bench");
    L->dW = bench_filled(F * CRS, 8, "dnn_bench");
    L->dX = bench_filled(N * CHW, 9, "dnn_bench");
    L->pool = bench_filled(N * F * PQ, 10, "dnn_bench");
    L->B = bench_filled(CRS * N * PQ, 11, "dnn_bench");
    L->C = bench_filled(F * N * PQ, 12, "dnn_bench");
}

static void layer_free(Layer *L)
{
    free(L->X);
    free(L->Wt);
    free(L->dout);
    free(L->out);
    free(L->dW);
    free(L->dX);
    free(L->pool);
    free(L->B);
    free(L->C);
}

/* One repetition of every op of the layer; times go to column 'rep'. */
static void layer_rep(Layer *L, int rep)
{
    const DnnGeom *g = &L->g;
    int64_t CRS = g->C * g->R * g->S, n = g->N * g->P * g->Q;
    DnnGeom pg = {.N = g->N, .C = g->F, .H = g->P, .W = g->Q, .R = 2, .S = 2, .sh = 2, .sw = 2};
    dnn_geom_output(&pg);
    double t0 = now();
    dnn_conv2d(g, L->X, L->Wt, L->out);
    double t1 = now();
    dnn_conv2d_backward_filter(g, L->X, L->dout, L->dW);
    double t2 = now();
    dnn_conv2d_backward_data(g, L->Wt, L->dout, L->dX);
    double t3 = now();
    blas_dgemm(false, false, g->F, n, CRS, 1.0, L->Wt, CRS, L->B, n, 0.0, L->C, n);
    double t4 = now();
    dnn_max_pool(&pg, L->out, L->pool);
    double t5 = now();
    L->t[0][rep] = t1 - t0;
    L->t[1][rep] = t2 - t1;
    L->t[2][rep] = t3 - t2;
    L->t[3][rep] = t4 - t3;
    L->t[4][rep] = t5 - t4;
}

static void layer_report(Layer *L, const double *sq_rate)
{
    const DnnGeom *g = &L->g;
    double ratio_same[REPS], ratio_sq[REPS], all[REPS], med[5];
    for (int r = 0; r < REPS; r++) {
        all[r] = L->t[0][r] + L->t[1][r] + L->t[2][r];
        ratio_same[r] = (3.0 * L->flops / all[r]) / (L->flops / L->t[3][r]);
        ratio_sq[r] = (3.0 * L->flops / all[r]) * 1e-9 / sq_rate[r];
    }
    for (int k = 0; k < 5; k++)
        med[k] = median(L->t[k], REPS);
    double mall = median(all, REPS);
    printf("%s: N=%ld %ldx%ldx%ld -> %ld filters %ldx%ld pad %ld (P=Q=%ld, %.0f MFLOP per pass)\n",
           L->name, (long)g->N, (long)g->C, (long)g->H, (long)g->W, (long)g->F, (long)g->R,
           (long)g->S, (long)g->ph, (long)g->P, L->flops * 1e-6);
    const char *names[3] = {"conv2d", "conv2d_backward_filter", "conv2d_backward_data"};
    for (int k = 0; k < 3; k++)
        printf("  %-22s %7.2f ms  %6.1f GFLOP/s\n", names[k], med[k] * 1e3, L->flops / med[k] * 1e-9);
    printf("  %-22s %7.2f ms  %6.1f GFLOP/s\n", "all three", mall * 1e3, 3.0 * L->flops / mall * 1e-9);
    printf("  dgemm %ldx%ldx%ld (same shape) %6.1f GFLOP/s\n", (long)g->F, (long)(g->C * g->R * g->S),
           (long)(g->N * g->P * g->Q), L->flops / med[3] * 1e-9);
    printf("  median ratio: all three / same-shape dgemm = %.2f, / square dgemm = %.2f\n",
           median(ratio_same, REPS), median(ratio_sq, REPS));
    printf("  max_pool 2x2 stride 2 on the output: %.2f ms (%.2f GB/s read)\n", med[4] * 1e3,
           (double)(g->N * g->F * g->P * g->Q) * 8.0 / med[4] * 1e-9);
}

int main(int argc, char **argv)
{
    int64_t batch = argc > 1 ? atoll(argv[1]) : 0;
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS: %s, core %s (OPENBLAS_CORETYPE=%s), %d threads; images per dgemm: %s\n",
           openblas_get_config(), openblas_get_corename(), core ? core : "(unset)",
           openblas_get_num_threads(), batch > 0 ? argv[1] : "auto");
    Layer L1, L2;
    layer_init(&L1, "LeNet conv1", 64, 1, 28, 28, 32, 5, 2, batch);
    layer_init(&L2, "LeNet conv2", 64, 32, 14, 14, 64, 5, 2, batch);
    const int64_t sq = 1536;
    double *A = bench_filled(sq * sq, 1, "dnn_bench"), *B = bench_filled(sq * sq, 2, "dnn_bench"), *C = bench_filled(sq * sq, 3, "dnn_bench");
    double sq_rate[REPS], both[REPS];
    layer_rep(&L1, 0);  /* warm-up: page in buffers, start BLAS threads */
    layer_rep(&L2, 0);
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        blas_dgemm(false, false, sq, sq, sq, 1.0, A, sq, B, sq, 0.0, C, sq);
        sq_rate[r] = 2.0 * (double)sq * (double)sq * (double)sq / (now() - t0) * 1e-9;
        layer_rep(&L1, r);
        layer_rep(&L2, r);
        double t = L1.t[0][r] + L1.t[1][r] + L1.t[2][r] + L2.t[0][r] + L2.t[1][r] + L2.t[2][r];
        both[r] = 3.0 * (L1.flops + L2.flops) / t * 1e-9 / sq_rate[r];
    }
    double sq_copy[REPS];
    for (int r = 0; r < REPS; r++)
        sq_copy[r] = sq_rate[r];
    printf("square dgemm %ld: median %.1f GFLOP/s\n", (long)sq, median(sq_copy, REPS));
    layer_report(&L1, sq_rate);
    layer_report(&L2, sq_rate);
    printf("both layers, all three passes: median ratio to square dgemm = %.2f\n", median(both, REPS));
    free(A);
    free(B);
    free(C);
    layer_free(&L1);
    layer_free(&L2);
    return 0;
}
