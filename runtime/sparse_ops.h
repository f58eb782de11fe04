/* SPDX-License-Identifier: Apache-2.0
 * Kernels on CSR matrices (base/sparse.h): products, transpose, aggregates,
 * sparse-safe element-wise operators, cbind/rbind, diag, slicing, and
 * rand(sparsity=) generated straight into CSR. Not yet reached from DML:
 * doc/sparse-plan.md says which builtin calls which kernel.
 *
 * Results are those of the dense path on the same values:
 * - Aggregates (sum, mean, row/col sums and means, min, max) give the same
 *   bits as builtins/aggregate.c: its Kahan sums are replayed with the
 *   implicit zeros stepped through (a zero step can fold the pending
 *   correction into the sum, so it cannot simply be skipped; the replay
 *   stops at the first step that changes nothing, usually at once).
 * - Products sum each output cell in ascending order of the inner index,
 *   which is a plain row-major triple loop's order, not BLAS's (blocked,
 *   FMA): against mat_matmul they agree to rounding, not to the bit. Two
 *   exceptions, for speed: X %*% v keeps four running sums per row (the
 *   row's k-th stored entry goes to sum k % 4; the result is
 *   (s0 + s1) + (s2 + s3)), and t(X) %*% y, t(X) %*% X on large inputs sum
 *   8 row blocks (below). Where a dense operand (or X itself in
 *   t(X) %*% X) holds Inf or NaN, a cell where it meets an implicit zero is
 *   NaN (0 * Inf), as in the triple loop (OpenBLAS gives NaN or Inf there,
 *   depending on its kernel).
 * - Element-wise results are those of ops_apply_d / vm_unary cell by cell,
 *   and X^2 is x*x as in ops.c's matrix kernel.
 * - A dense -0.0 is a zero in CSR (base/sparse.h): where a dense result
 *   holds -0.0 the sparse one holds +0.0.
 *
 * Threads: the kernels cut their work with pool_run (runtime/pool.h) into
 * parts of whole rows, or of whole output columns where every row scatters
 * into the output (colSums, transpose). t(X) %*% y and t(X) %*% X on large
 * inputs add 8 fixed row blocks into copies of the output, summed in block
 * order (so on large inputs their cells are sums of 8 partial sums, not the
 * triple loop's one running sum); where those copies would cost too much
 * memory they cut output columns instead. Every partition depends on the
 * sizes only, never on the thread count, so the result is the same to the
 * bit for any thread count. Small inputs run on one thread.
 *
 * Kernels that return an SpMat return NULL when memory runs out; dense
 * outputs are preallocated by the caller. Sizes are checked by the caller;
 * 'I' only supplies the thread budget (NULL: the process budget). */
#ifndef DML_RUNTIME_SPARSE_OPS_H
#define DML_RUNTIME_SPARSE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/sparse.h"
#include "interp.h"
#include "rng.h"
#include "vmath.h"

/* ---- products ---- */
/* C = X %*% B; B dense X->cols x n, C dense X->rows x n (row-major). n == 1
 * is X %*% v. */
void sp_mm_sd(const Interp *I, const SpMat *X, const double *B, int64_t n, double *C);
/* C = A %*% X; A dense m x X->rows, C dense m x X->cols. */
void sp_mm_ds(const Interp *I, const double *A, int64_t m, const SpMat *X, double *C);
/* X %*% Y as CSR (Gustavson, row by row). Requires both operands free of
 * Inf and NaN (sp_has_nonfinite): where they are not, 0 * Inf cells would
 * fill the result, and the caller takes the dense path. */
SpMat *sp_mm_ss(const Interp *I, const SpMat *X, const SpMat *Y);
/* C = t(X) %*% Y; Y dense X->rows x n, C dense X->cols x n. false when
 * the scratch memory is not there (C unspecified). */
bool sp_tmm_sd(const Interp *I, const SpMat *X, const double *Y, int64_t n, double *C);
/* C = t(X) %*% X, dense X->cols x X->cols (symmetric, both halves set);
 * false as sp_tmm_sd. */
bool sp_tsmm(const Interp *I, const SpMat *X, double *C);
/* t(X) as CSR. */
SpMat *sp_transpose(const Interp *I, const SpMat *X);
/* Whether a stored value is Inf or NaN. */
bool sp_has_nonfinite(const SpMat *X);

/* ---- aggregates (the builtins' results to the bit; empty matrices as the
 * dense loops give them: sum 0, mean NaN, max -Inf, min +Inf) ---- */
typedef enum SpAgg { SP_SUM, SP_MEAN, SP_MAX, SP_MIN } SpAgg;
/* sum, mean, max, min of all cells. */
double sp_full_agg(const SpMat *X, SpAgg op);
/* rowSums/rowMeans/rowMaxs/rowMins into out[0 .. X->rows). */
void sp_row_agg(const Interp *I, const SpMat *X, SpAgg op, double *out);
/* colSums/colMeans/colMaxs/colMins into out[0 .. X->cols). false when the
 * scratch memory is not there (out is then unspecified). */
bool sp_col_agg(const Interp *I, const SpMat *X, SpAgg op, double *out);

/* ---- element-wise ---- */
/* Whether f(0) == 0, so that f keeps a matrix sparse (abs, sqrt, round,
 * sign, floor, ceil, sin, tan, ...; not exp, cos, sigmoid). */
bool sp_unary_safe(VmFn f);
/* f applied to the non-zeros (vm_unary's bits), new zeros dropped.
 * Requires sp_unary_safe(f). */
SpMat *sp_unary(const Interp *I, const SpMat *X, VmFn f);
/* Whether X op s (or s op X when scalar_left) leaves the zeros zero:
 * ops_apply_d(op, 0, s) == 0 (e.g. X * 2, X != 0, X & s, X / 3, but not
 * X * Inf, X + 1, X != 1). */
bool sp_scalar_safe(BinOp op, double s, bool scalar_left);
/* X op s cell by cell on the non-zeros, new zeros dropped. Requires
 * sp_scalar_safe. */
SpMat *sp_binop_scalar(const Interp *I, const SpMat *X, BinOp op, double s, bool scalar_left);
/* Whether X op v leaves the zeros zero for every value of the vector
 * v[0..n): sp_scalar_safe for each. */
bool sp_vector_safe(BinOp op, const double *v, int64_t n);
/* X op v with v broadcast as ops.c does (the vector on the right only, as
 * upstream): a column vector (col_vec: one value per row of X,
 * v[0 .. X->rows)) or a row vector (one per column, v[0 .. X->cols)). Row
 * and column scaling (X * w, X / s) in lm, glm, l2svm. Requires
 * sp_vector_safe. */
SpMat *sp_binop_vector(const Interp *I, const SpMat *X, BinOp op, const double *v, bool col_vec);
/* X op Y for two sparse matrices of one shape, over the union of their
 * structures (a missing cell is 0). Requires ops_apply_d(op, 0, 0) == 0
 * (*, &, |, +, -, !=, <, >, min/max-like ops: not ==, <=, >=, /, ^). */
SpMat *sp_binop_ss(const Interp *I, const SpMat *X, BinOp op, const SpMat *Y);
/* X op D (or D op X when dense_left) with D dense of X's shape, every cell
 * evaluated, the non-zero results kept: sparse for *, & (a cell where X is
 * 0 stays 0 unless D is Inf/NaN there and op is *). */
SpMat *sp_binop_sd(const Interp *I, const SpMat *X, BinOp op, const double *D, bool dense_left);

/* ---- reorganisation ---- */
/* cbind(A, B) (same rows) and rbind(A, B) (same cols). */
SpMat *sp_cbind(const SpMat *A, const SpMat *B);
SpMat *sp_rbind(const SpMat *A, const SpMat *B);
/* diag(v) for an n x 1 or 1 x n v: the n x n diagonal matrix. */
SpMat *sp_diag_from_vector(const SpMat *v);
/* diag(X) for a square X: its diagonal as an n x 1 matrix. */
SpMat *sp_diag_of_matrix(const SpMat *X);
/* X[r0:r1, c0:c1] with 0-based half-open bounds inside X (a row range is
 * [r0, r1), a whole column range is [0, cols)). */
SpMat *sp_slice(const SpMat *X, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/* Rows rows[0..n) of X in that order (repeats allowed; every index in
 * [0, X->rows)): paramserv's partitions, removeEmpty, X[s, ] with a
 * selection vector, P %*% X for a selection matrix P. */
SpMat *sp_gather_rows(const SpMat *X, const int64_t *rows, int64_t n);

/* ---- rand(rows, cols, pdf, min, max, sparsity, lambda) into CSR ---- */
typedef enum SpPdf { SP_PDF_UNIFORM, SP_PDF_NORMAL, SP_PDF_POISSON } SpPdf;
typedef struct SpRandArgs {
    int64_t rows, cols;
    SpPdf pdf;
    double min, max, sparsity, lambda;
} SpRandArgs;
/* The draws of builtins/construct.c's dense rand, cell by cell (a uniform
 * per cell decides whether it is a non-zero, then the value's draws), so
 * the same Rng state gives the same matrix as the dense path; time grows
 * with rows*cols, memory with the non-zeros only. NULL (both generators)
 * when memory runs out or rows*cols does not fit an int64. */
SpMat *sp_rand_cellwise(Rng *g, const SpRandArgs *a);
/* The same distribution in time proportional to the non-zeros: the gaps
 * between non-zeros are drawn (geometric, one uniform per non-zero) instead
 * of a uniform per cell. A different stream from the dense path's:
 * sp_rand_skip_dense fills a dense matrix from this stream, so the dense
 * rand can switch to it and both forms agree (doc/sparse-plan.md). */
SpMat *sp_rand_skip(Rng *g, const SpRandArgs *a);
/* The stream of sp_rand_skip written into dense out[0 .. rows*cols). */
void sp_rand_skip_dense(Rng *g, const SpRandArgs *a, double *out);

#endif
