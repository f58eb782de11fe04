/* SPDX-License-Identifier: Apache-2.0
 * Dense kernels on row-major double matrices. All sizes are checked by the
 * callers (ops.c, builtins); these functions do no error reporting. Callers
 * pass preallocated outputs. BLAS is reached only through blas.h. */
#ifndef DML_RUNTIME_MATRIX_H
#define DML_RUNTIME_MATRIX_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/value.h"

/* C = A %*% B; C is A->rows x B->cols, not aliased with A or B. */
void mat_matmul(const Matrix *A, const Matrix *B, Matrix *C);
/* C = op(A) %*% op(B), op(X) = t(X) when the flag is set; C is preallocated
 * with op(A)'s rows and op(B)'s columns and not aliased with A or B.
 * Inner dimension 0 gives a zero C. Vector products use dgemv, the rest
 * dgemm. */
void mat_matmul_t(const Matrix *A, bool tA, const Matrix *B, bool tB, Matrix *C);
/* T = t(A); T is preallocated A->cols x A->rows, not aliased with A. */
void mat_transpose(const Matrix *A, Matrix *T);

#endif
