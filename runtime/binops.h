/* SPDX-License-Identifier: Apache-2.0
 * The cell-wise binary operators, described once. The evaluator's scalar
 * fast paths (eval.c), the matrix loops (ops.c) and the fused loops
 * (fuse.c) all expand this list; a new cell-wise operator is one row here
 * (and its BinOp in parser/ast.h, its token in the grammar).
 *
 * X(op, kind, expr, fast)
 *   op     the BinOp
 *   kind   ARITH  expr is the result, and has a SIMD form (the same
 *                 expression over vectors)
 *          CMP    expr is a truth value; the result is 1 or 0 (SIMD too)
 *          CALL   expr calls a function per cell (no SIMD form, no scalar
 *                 fast path)
 *   expr   over the operands x and y; Z is the operands' zero
 *   fast   the evaluator's fast path for two scalars (eval.c): add/sub/mul
 *          (doubles: expr; integers: that __builtin_*_overflow, the general
 *          path on overflow), fdiv (expr; integers: the double quotient),
 *          cmp (a boolean), none (always the general path)
 * %*% is no cell-wise operator, and && || do not get past the resolver. */
#ifndef DML_RUNTIME_BINOPS_H
#define DML_RUNTIME_BINOPS_H

#include "../parser/ast.h"

#define BINOPS(X) \
    X(OP_ADD, ARITH, (x) + (y), add) \
    X(OP_SUB, ARITH, (x) - (y), sub) \
    X(OP_MUL, ARITH, (x) * (y), mul) \
    X(OP_DIV, ARITH, (x) / (y), fdiv) \
    X(OP_POW, CALL, java_pow(x, y), none) \
    X(OP_INTDIV, CALL, intdiv_d(x, y), none) \
    X(OP_MOD, CALL, mod_d(x, y), none) \
    X(OP_LT, CMP, (x) < (y), cmp) \
    X(OP_LE, CMP, (x) <= (y), cmp) \
    X(OP_GT, CMP, (x) > (y), cmp) \
    X(OP_GE, CMP, (x) >= (y), cmp) \
    X(OP_EQ, CMP, (x) == (y), cmp) \
    X(OP_NE, CMP, (x) != (y), cmp) \
    X(OP_AND, CMP, ((x) != Z) & ((y) != Z), none) \
    X(OP_OR, CMP, ((x) != Z) | ((y) != Z), none)

/* Does op have a SIMD form (kind ARITH or CMP)? */
static inline __attribute__((always_inline)) bool binop_has_simd(BinOp op)
{
    switch (op) {
#define BINOP_SIMD_ARITH(OP) case OP: return true;
#define BINOP_SIMD_CMP(OP) case OP: return true;
#define BINOP_SIMD_CALL(OP)
#define BINOP_SIMD_CASE(OP, KIND, EXPR, FAST) BINOP_SIMD_##KIND(OP)
    BINOPS(BINOP_SIMD_CASE)
#undef BINOP_SIMD_CASE
#undef BINOP_SIMD_ARITH
#undef BINOP_SIMD_CMP
#undef BINOP_SIMD_CALL
    default: return false;
    }
}

/* The cases of a switch on a BinOp over vector operands x, y (zero Z):
 * each operator with a SIMD form returns its value, a comparison's truth
 * made a number by BOOLV(mask). */
#define BINOP_VEC_ARITH(OP, EXPR, BOOLV) case OP: return EXPR;
#define BINOP_VEC_CMP(OP, EXPR, BOOLV) case OP: return BOOLV(EXPR);
#define BINOP_VEC_CALL(OP, EXPR, BOOLV)

#endif
