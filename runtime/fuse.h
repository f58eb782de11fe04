/* SPDX-License-Identifier: Apache-2.0
 * Fused element-wise evaluation: a tree of cell-wise operators (+ - * / ^
 * %/% %% < <= > >= == != & |, unary - and !), unary math builtins (exp,
 * log, sqrt, abs, sigmoid, tanh, ...) and max/min of two arguments over
 * matrices is computed in one pass over the cells, a cache-sized block at a
 * time, instead of one pass and one temporary matrix per operator.
 * `exp(X) * Y + X` reads X and Y once and writes Z once.
 *
 * Same results as the operator-at-a-time walk, bit for bit: the same cell
 * kernels (vmath.c for the functions), the same broadcasting (DML.md 4.3),
 * and the same errors in the same order. Anything unusual (strings, an
 * outer-product broadcast, a shape mismatch, a scalar-only tree) is
 * evaluated by the ordinary operators from the already evaluated operands.
 * Operands are evaluated left to right exactly once; a tree is only fused
 * when no operand after its first operator can fail or have side effects
 * (variables and literals), so no error or output can change order. */
#ifndef DML_RUNTIME_FUSE_H
#define DML_RUNTIME_FUSE_H

#include "interp.h"

/* Cheap test for the evaluator: could 'n' root a fused tree? Two or more
 * operators are fused to save passes; one alone only when it reads a large
 * matrix variable and there are several threads to split it over (the
 * ordinary kernels use one). */
static inline bool fuse_candidate(const Node *n)
{
    switch (n->kind) {
    case N_BINARY: return n->binary.op != OP_MATMUL && n->binary.op < OP_ANDAND;
    case N_UNARY: return n->unary.op != UOP_PLUS;
    case N_CALL: return n->call.bi && (n->call.nargs == 1 || n->call.nargs == 2);
    default: return false;
    }
}

/* Evaluate 'n' fused if that pays. Returns false when it did not (then the
 * caller evaluates n as usual; nothing was evaluated). Returns true when it
 * did, with *st the status and, on ST_OK, *out the owned result. */
bool fuse_eval(Interp *I, const Node *n, Value *out, Status *st);

/* t(A) %*% B, A %*% t(B), t(A) %*% t(B): one BLAS call with the transpose
 * flags instead of materialising t(A). Same results and errors as the
 * plain walk (the transposes are exact copies). */
static inline bool fuse_matmul_candidate(const Node *n)
{
    if (n->kind != N_BINARY || n->binary.op != OP_MATMUL)
        return false;
    const Node *l = n->binary.lhs, *r = n->binary.rhs;
    return (l->kind == N_CALL && l->call.bi && l->call.nargs == 1) ||
           (r->kind == N_CALL && r->call.bi && r->call.nargs == 1);
}
/* Returns false when n is not such a product (nothing evaluated). */
bool fuse_matmul(Interp *I, const Node *n, Value *out, Status *st);

#endif
