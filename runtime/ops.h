/* SPDX-License-Identifier: Apache-2.0
 * The operators of DML on values: scalar/scalar, matrix/scalar, matrix/matrix
 * with row- and column-vector broadcasting (doc/language.md, "operators"), and unary
 * minus/not. Used by the evaluator and by builtins such as min/max/ifelse.
 *
 * The _take functions consume both operands. When an operand matrix is
 * unshared (count 1) and has the result's shape, its storage is reused, so
 * `exp(X) * Y + X` allocates one matrix, not three. */
#ifndef DML_RUNTIME_OPS_H
#define DML_RUNTIME_OPS_H

#include "interp.h"

/* a op b; consumes a and b; *out owned. Errors (set in I->err, no position):
 *   "Arithmetic '-' not supported over string inputs."
 *   "Block sizes are not matched for binary cell operations: 2x3 vs 3x2"
 *   "invalid dimensions for matrix multiplication (k1=3, k2=2)"
 *   "Integer operation created numerical result overflow" */
Status ops_binary_take(Interp *I, BinOp op, Value a, Value b, Value *out);
/* Same, operands borrowed. */
Status ops_binary(Interp *I, BinOp op, Value a, Value b, Value *out);
/* -a, +a, !a; consumes a. */
Status ops_unary_take(Interp *I, UnOp op, Value a, Value *out);

/* Scalar double kernel of a cell-wise operator (used by outer(), min/max). */
double ops_apply_d(BinOp op, double x, double y);

/* max and min of two numbers as the min/max builtins compute them cell by
 * cell (Java's Math.max/min: NaN when either is NaN), shared with the fused
 * evaluator so both give the same bits. A select plus a NaN fix-up, so
 * that the loops using them vectorise. */
static inline double ops_max2(double a, double b)
{
    double r = a > b ? a : b;
    return (a != a || b != b) ? a + b : r;
}
static inline double ops_min2(double a, double b)
{
    double r = a < b ? a : b;
    return (a != a || b != b) ? a + b : r;
}

/* Conversions of doc/language.md, "types". */
int64_t ops_d2i(double d);                 /* truncation after adding 2^-53 to |d| */
/* Scalar to boolean/int/double/string; errors for non-scalars or non-numeric strings. */
Status ops_to_bool(Interp *I, Value v, bool *out);
Status ops_to_int(Interp *I, Value v, int64_t *out);
Status ops_to_double(Interp *I, Value v, double *out);
/* Java's Double.parseDouble: true and *out set when s is a number in its
 * syntax (trimmed, NaN/Infinity, hex with a p exponent, f/d suffix). */
bool ops_parse_java_double(const char *s, double *out);
/* String form (doc/language.md, "types") of a scalar; owned Str. */
Status ops_to_str(Interp *I, Value v, Str **out);
/* Convert scalar v to value type 'vt' (int/double/boolean/string) for
 * parameter binding; consumes v. */
Status ops_convert_take(Interp *I, Value v, ScalarType vt, Value *out);

#endif
