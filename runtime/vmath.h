/* SPDX-License-Identifier: Apache-2.0
 * The element-wise math functions of DML over arrays of doubles, one
 * implementation shared by the builtins (exp(X), ...) and the fused
 * element-wise evaluator (fuse.c), so a cell gets the same bits whichever
 * path computed it, and the same bits as the function on a scalar on every
 * CPU: log is libm's cell by cell, exp libm's or, with AVX2 and FMA, a
 * four-lane copy of glibc's exp that gives its bits (vmath.c). sqrt, abs,
 * sign, floor and ceil, exact either way, take four cells at a time with
 * AVX. Thread-safe: no state after the one dispatch decision. */
#ifndef DML_RUNTIME_VMATH_H
#define DML_RUNTIME_VMATH_H

#include <stdint.h>

typedef enum VmFn {
    VM_EXP, VM_SQRT, VM_LOG, VM_ABS, VM_SIGN, VM_ROUND, VM_FLOOR, VM_CEIL, VM_SIN, VM_COS, VM_TAN,
    VM_ASIN, VM_ACOS, VM_ATAN, VM_SINH, VM_COSH, VM_TANH, VM_SIGMOID,
} VmFn;

/* y[i] = f(x[i]) for i < n. y may be exactly x. */
void vm_unary(VmFn f, const double *x, double *y, int64_t n);
/* f of one number with the scalar libm functions (the builtins on scalars). */
double vm_scalar(VmFn f, double x);
/* f of one number: the same bits as vm_unary on an array holding it. */
double vm_unary1(VmFn f, double x);
/* The vector unit in use: "avx2" (exp as well), "avx" (sqrt, abs, sign,
 * floor and ceil) or "scalar". */
const char *vm_isa(void);

#endif
