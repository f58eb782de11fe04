/* SPDX-License-Identifier: Apache-2.0
 * Matrices in the runtime: allocation that reports failure as a DML error,
 * and the dense kernels on row-major double matrices. The storage itself
 * (mat_new_raw and friends, which only return NULL) is in value.h, the layer
 * below; the arithmetic of DML's operators in ops.h. interp.h includes this
 * header, so every runtime file sees it.
 *
 * The kernels do no error reporting: all sizes are checked by the callers
 * (ops.c, builtins), which pass preallocated outputs. BLAS is reached only
 * through blas.h. */
#ifndef DML_RUNTIME_MATRIX_H
#define DML_RUNTIME_MATRIX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../base/value.h"

typedef struct Interp Interp;

/* ---- allocation that reports failure as a DML error (in I->err) ---- */
Matrix *mat_alloc(Interp *I, int64_t rows, int64_t cols);       /* uninitialised */
Matrix *mat_alloc_zero(Interp *I, int64_t rows, int64_t cols);
Matrix *mat_clone(Interp *I, const Matrix *m);
/* Takes 'm'; returns a dense matrix safe to mutate: 'm' itself when unshared
 * and dense, else a dense copy (and 'm' is released). NULL (error set) on
 * allocation failure, or when a sparse m's dense form does not fit. */
Matrix *mat_make_unique_take(Interp *I, Matrix *m);

/* ---- the sparse form (doc/sparse-plan.md) ----
 * 'op' names the DML operation in errors ("rowSums", "%*%"). */

/* The gate: the dense cells of m. m->data for a dense matrix; for a sparse
 * one a dense copy made on first use and kept with the matrix (published
 * with a compare-and-swap, so two threads densifying at once keep one).
 * NULL with an error naming op and both sizes when the dense form does not
 * fit next to the matrices alive now (DML_MAX_MATRIX_BYTES or physical
 * memory). A matrix without cells gives NULL with no error: check
 * mat_len() first, as for m->data. */
const double *mat_dense(Interp *I, const Matrix *m, const char *op);
/* The gate as a Matrix: m itself when dense, else its dense copy (a dense
 * Matrix owned by m: borrowed, valid while m lives). NULL with the error. */
Matrix *mat_dense_m(Interp *I, const Matrix *m, const char *op);
/* Takes m; returns it in dense form (m itself when dense). NULL, m released,
 * with the error. */
Matrix *mat_to_dense_take(Interp *I, Matrix *m, const char *op);
/* val_densify (a Status) is in builtin_api.h. */
/* Whether v is or holds (in a list, at any depth) a sparse matrix. */
bool val_has_sparse(Value v);
/* The format decision for a result computed in CSR: a sparse matrix when
 * sp_prefer_sparse says so, else dense. Takes s; NULL s (a kernel out of
 * memory) or a failed conversion give NULL with an error naming op. */
Matrix *mat_from_sp_take(Interp *I, struct SpMat *s, const char *op);
/* The format decision for a dense result whose non-zeros the producer
 * counts anyway (rand, table, readers): m itself, or its CSR form when
 * sp_prefer_sparse says so (m released). nnz < 0: counted here. Never
 * fails: when the CSR form cannot be made, m stays dense. */
Matrix *mat_maybe_sparse_take(Matrix *m, int64_t nnz);
/* Non-zeros of m (counted for a dense matrix). */
int64_t mat_nnz(const Matrix *m);
/* Row i of m written densely into out[0 .. m->cols): the row iterator of
 * print, toString and the csv writer, which must not densify a large
 * sparse matrix. */
void mat_row_get(const Matrix *m, int64_t i, double *out);

/* ---- dense kernels ---- */

/* C = A %*% B; C is A->rows x B->cols, not aliased with A or B. */
void mat_matmul(const Matrix *A, const Matrix *B, Matrix *C);
/* C = op(A) %*% op(B), op(X) = t(X) when the flag is set; C is preallocated
 * with op(A)'s rows and op(B)'s columns and not aliased with A or B.
 * Inner dimension 0 gives a zero C. Vector products use dgemv, the rest
 * dgemm. */
void mat_matmul_t(const Matrix *A, bool tA, const Matrix *B, bool tB, Matrix *C);
/* mat_matmul_t that stops early, returning false, once *stop is set (NULL:
 * never): a large product (both run it so) goes in row panels of
 * panel_rows (0: sized for tens of milliseconds each, when the product is
 * large) with a look at the flag between them; C is then only partly
 * written. With panel_rows 0 the bits of C are those of mat_matmul_t. */
bool mat_matmul_stop(const Matrix *A, bool tA, const Matrix *B, bool tB, Matrix *C, const atomic_int *stop,
                     int64_t panel_rows);
/* T = t(A); T is preallocated A->cols x A->rows, not aliased with A. */
void mat_transpose(const Matrix *A, Matrix *T);

#endif
