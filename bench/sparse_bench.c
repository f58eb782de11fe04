/* SPDX-License-Identifier: Apache-2.0
 * Sparse kernels (runtime/sparse_ops.c) against SuiteSparse:GraphBLAS on
 * the cases of issue 31; the peers (scipy.sparse, R's Matrix) are
 * bench/sparse_peers.py and bench/sparse_peers.R, and bench/sparse_bench.sh
 * builds this program and runs them all, interleaved.
 *
 *   sparse_bench [rows cols density threads reps [graphblas]]
 *
 * X is rows x cols at the given density (rand's skip stream, uniform
 * values); v a dense vector. Each line: "impl op threads wall_ms cpu_ms",
 * the medians of the repetitions' wall-clock and process CPU times (on a
 * shared machine the CPU time of a 1-thread run is the steadier number; a
 * 2-thread run's CPU time adds both threads'). The
 * t(X) %*% X case runs on X's first 1000 columns at 10x the density: on the
 * whole 100,000 columns its result has ~63% of 10^10 cells (~75 GB in any
 * format). Without -DHAVE_GRAPHBLAS only dml's kernels run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sparse.h"
#include "runtime/interp.h"
#include "runtime/rng.h"
#include "runtime/sparse_ops.h"

#ifdef HAVE_GRAPHBLAS
#include <GraphBLAS.h>
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Resident memory of this process in MB. */
static double rss_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (double)rss * 4096 / 1e6;
}

#define TIME(impl, name, threads, reps, ...) do { \
        double t_[64], c_[64]; \
        for (int r_ = 0; r_ < (reps); r_++) { \
            double t0_ = now_ms(), c0_ = cpu_ms(); \
            __VA_ARGS__; \
            t_[r_] = now_ms() - t0_; \
            c_[r_] = cpu_ms() - c0_; \
        } \
        printf("%s %s %d %.2f %.2f\n", (impl), (name), (threads), median(t_, (reps)), median(c_, (reps))); \
        fflush(stdout); \
    } while (0)

/* X %*% v with 64-bit column indices: what the index width costs. */
static void spmv_i64(const SpMat *X, const int64_t *ci64, const double *v, double *y)
{
    for (int64_t i = 0; i < X->rows; i++) {
        double s = 0;
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++)
            s += X->vals[p] * v[ci64[p]];
        y[i] = s;
    }
}

static double checksum(const double *x, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

#ifdef HAVE_GRAPHBLAS
static GrB_Matrix to_grb(const SpMat *X)
{
    GrB_Index *I = malloc((size_t)X->nnz * sizeof *I), *J = malloc((size_t)X->nnz * sizeof *J);
    for (int64_t i = 0; i < X->rows; i++)
        for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++) {
            I[p] = (GrB_Index)i;
            J[p] = (GrB_Index)X->colidx[p];
        }
    GrB_Matrix A;
    GrB_Matrix_new(&A, GrB_FP64, (GrB_Index)X->rows, (GrB_Index)X->cols);
    GrB_Matrix_build_FP64(A, I, J, X->vals, (GrB_Index)X->nnz, GrB_PLUS_FP64);
    GrB_Matrix_wait(A, GrB_MATERIALIZE);
    free(I);
    free(J);
    return A;
}

static GrB_Vector grb_dense_vec(int64_t n, const double *x)
{
    GrB_Vector v;
    GrB_Vector_new(&v, GrB_FP64, (GrB_Index)n);
    GrB_Index *ix = malloc((size_t)n * sizeof *ix);
    for (int64_t i = 0; i < n; i++)
        ix[i] = (GrB_Index)i;
    GrB_Vector_build_FP64(v, ix, x, (GrB_Index)n, GrB_PLUS_FP64);
    GrB_Vector_wait(v, GrB_MATERIALIZE);
    free(ix);
    return v;
}

static void run_grb(const SpMat *X, const SpMat *Xn, const double *v, const double *u, int threads, int reps)
{
    GxB_Global_Option_set(GxB_NTHREADS, threads);
    double m0 = rss_mb();
    GrB_Matrix A = to_grb(X), An = to_grb(Xn);
    printf("graphblas mem_per_nnz %d %.2f\n", threads, (rss_mb() - m0) * 1e6 / (double)(X->nnz + Xn->nnz));
    GrB_Vector gv = grb_dense_vec(X->cols, v), gu = grb_dense_vec(X->rows, u);
    GrB_Vector y, z, rs, cs;
    GrB_Vector_new(&y, GrB_FP64, (GrB_Index)X->rows);
    GrB_Vector_new(&z, GrB_FP64, (GrB_Index)X->cols);
    GrB_Vector_new(&rs, GrB_FP64, (GrB_Index)X->rows);
    GrB_Vector_new(&cs, GrB_FP64, (GrB_Index)X->cols);
    TIME("graphblas", "X%*%v", threads, reps,
         (GrB_mxv(y, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP64, A, gv, GrB_DESC_R), GrB_Vector_wait(y, GrB_MATERIALIZE)));
    TIME("graphblas", "t(X)%*%v", threads, reps,
         (GrB_mxv(z, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP64, A, gu, GrB_DESC_RT0), GrB_Vector_wait(z, GrB_MATERIALIZE)));
    TIME("graphblas", "rowSums", threads, reps,
         (GrB_Matrix_reduce_Monoid(rs, NULL, NULL, GrB_PLUS_MONOID_FP64, A, GrB_DESC_R), GrB_Vector_wait(rs, GrB_MATERIALIZE)));
    TIME("graphblas", "colSums", threads, reps,
         (GrB_Matrix_reduce_Monoid(cs, NULL, NULL, GrB_PLUS_MONOID_FP64, A, GrB_DESC_RT0), GrB_Vector_wait(cs, GrB_MATERIALIZE)));
    TIME("graphblas", "X*2", threads, reps, {
        GrB_Matrix C;
        GrB_Matrix_new(&C, GrB_FP64, (GrB_Index)X->rows, (GrB_Index)X->cols);
        GrB_Matrix_apply_BinaryOp2nd_FP64(C, NULL, NULL, GrB_TIMES_FP64, A, 2.0, NULL);
        GrB_Matrix_wait(C, GrB_MATERIALIZE);
        GrB_Matrix_free(&C);
    });
    TIME("graphblas", "t(X)%*%X", threads, reps, {
        GrB_Matrix C;
        GrB_Matrix_new(&C, GrB_FP64, (GrB_Index)Xn->cols, (GrB_Index)Xn->cols);
        GrB_mxm(C, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP64, An, An, GrB_DESC_T0);
        GrB_Matrix_wait(C, GrB_MATERIALIZE);
        GrB_Matrix_free(&C);
    });
    GrB_Vector_free(&gv);
    GrB_Vector_free(&gu);
    GrB_Vector_free(&y);
    GrB_Vector_free(&z);
    GrB_Vector_free(&rs);
    GrB_Vector_free(&cs);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&An);
}
#endif

int main(int argc, char **argv)
{
    int64_t rows = argc > 1 ? atoll(argv[1]) : 1000000, cols = argc > 2 ? atoll(argv[2]) : 100000;
    double dens = argc > 3 ? atof(argv[3]) : 0.001;
    int threads = argc > 4 ? atoi(argv[4]) : 1, reps = argc > 5 ? atoi(argv[5]) : 5;
    bool grb = argc > 6 && !strcmp(argv[6], "graphblas");
    if (reps < 1 || reps > 64)
        reps = 5;
    Interp I;
    memset(&I, 0, sizeof I);
    I.blas_threads = threads;
    Rng g;
    rng_seed(&g, 1);
    double m0 = rss_mb(), t0 = now_ms();
    SpRandArgs a = {.rows = rows, .cols = cols, .pdf = SP_PDF_UNIFORM, .min = 0, .max = 1, .sparsity = dens};
    SpMat *X = sp_rand_skip(&g, &a);
    double tgen = now_ms() - t0;
    if (!X) {
        fprintf(stderr, "out of memory generating X\n");
        return 1;
    }
    double mem = rss_mb() - m0;
    SpRandArgs an = {.rows = rows, .cols = 1000, .pdf = SP_PDF_UNIFORM, .min = 0, .max = 1, .sparsity = 10 * dens};
    SpMat *Xn = sp_rand_skip(&g, &an);
    double *v = malloc((size_t)cols * sizeof *v), *u = malloc((size_t)rows * sizeof *u);
    double *y = malloc((size_t)rows * sizeof *y), *z = malloc((size_t)cols * sizeof *z);
    double *C = malloc((size_t)1000 * 1000 * sizeof *C);
    for (int64_t j = 0; j < cols; j++)
        v[j] = rng_uniform(&g);
    for (int64_t i = 0; i < rows; i++)
        u[i] = rng_uniform(&g);
    printf("# X %lldx%lld nnz %lld; narrow %lldx1000 nnz %lld; threads %d; rand %.0f ms\n", (long long)rows,
           (long long)cols, (long long)X->nnz, (long long)rows, (long long)Xn->nnz, threads, tgen);
    printf("dml mem_per_nnz %d %.2f\n", threads, mem * 1e6 / (double)X->nnz);
    printf("dml bytes_per_nnz_formula %d %.2f\n", threads, (double)sp_bytes(rows, X->nnz) / (double)X->nnz);
    if (grb) {
#ifdef HAVE_GRAPHBLAS
        GrB_init(GrB_NONBLOCKING);
        run_grb(X, Xn, v, u, threads, reps);
        GrB_finalize();
#else
        fprintf(stderr, "built without GraphBLAS\n");
        return 2;
#endif
    } else {
        TIME("dml", "X%*%v", threads, reps, sp_mm_sd(&I, X, v, 1, y));
        TIME("dml", "t(X)%*%v", threads, reps, sp_tmm_sd(&I, X, u, 1, z));
        TIME("dml", "rowSums", threads, reps, sp_row_agg(&I, X, SP_SUM, y));
        TIME("dml", "colSums", threads, reps, sp_col_agg(&I, X, SP_SUM, z));
        TIME("dml", "X*2", threads, reps, sp_free(sp_binop_scalar(&I, X, OP_MUL, 2.0, false)));
        TIME("dml", "t(X)%*%X", threads, reps, sp_tsmm(&I, Xn, C));
        if (threads == 1) {
            int64_t *ci64 = malloc((size_t)X->nnz * sizeof *ci64);
            for (int64_t p = 0; p < X->nnz; p++)
                ci64[p] = X->colidx[p];
            TIME("dml-int64-index", "X%*%v", threads, reps, spmv_i64(X, ci64, v, y));
            free(ci64);
        }
        printf("# checksum %.6g\n", checksum(y, rows) + checksum(z, cols));
    }
    free(v);
    free(u);
    free(y);
    free(z);
    free(C);
    sp_free(X);
    sp_free(Xn);
    return 0;
}
