/* SPDX-License-Identifier: Apache-2.0
 * DML's operators on sparse matrices: the branch ops.c and fuse.c take when
 * an operand is held sparse (doc/sparse.md lists what stays sparse). Each
 * picks the kernel of runtime/sparse_ops.h where there is one, and goes
 * through the densify gate (mat_dense, matrix.h) where there is none, so
 * results equal the dense path's (doc/sparse.md says where the bits can
 * differ). Thread-safe: no state. */
#ifndef DML_RUNTIME_SPARSE_EVAL_H
#define DML_RUNTIME_SPARSE_EVAL_H

#include "interp.h"

/* Whether v is a matrix held sparse. */
static inline bool val_is_sparse(Value v) { return v.kind == VAL_MATRIX && v.m->sp != NULL; }
/* a op b, cell-wise, for numbers and matrices with at least one sparse
 * matrix among them (ops.c has checked the kinds); consumes a and b. */
Status sparse_binary_take(Interp *I, BinOp op, Value a, Value b, Value *out);
/* op(A) %*% op(B), op(X) = t(X) when the flag is set, with at least one
 * operand sparse; borrowed operands. */
Status sparse_matmul(Interp *I, const Matrix *A, bool ta, const Matrix *B, bool tb, Value *out);
/* -X and !X of a sparse X; consumes a. */
Status sparse_unary_take(Interp *I, UnOp op, Value a, Value *out);

#endif
