/* SPDX-License-Identifier: Apache-2.0
 * The element-wise math functions of DML over arrays of doubles, one
 * implementation shared by the builtins (exp(X), ...) and the fused
 * element-wise evaluator (fuse.c), so a cell gets the same bits whichever
 * path computed it. exp and log go through glibc's libmvec with the widest
 * vector unit the CPU has (AVX-512, AVX2, SSE2), chosen at run time, except
 * exp on AVX2, which is our own table-free polynomial (vmath.c); the
 * result of a cell never depends on its position or the array length (the
 * tail is padded into a full vector). Thread-safe: no state after the one
 * dispatch decision. */
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
/* Name of the vector width in use for exp/log ("avx512", "avx2", "sse2",
 * "scalar"). */
const char *vm_isa(void);

#endif
