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
/* Takes 'm'; returns a matrix safe to mutate: 'm' itself when unshared, else
 * a copy (and 'm' is released). NULL (error set) on allocation failure. */
Matrix *mat_make_unique_take(Interp *I, Matrix *m);

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
