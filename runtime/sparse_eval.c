/* SPDX-License-Identifier: Apache-2.0
 * Operators on sparse matrices (contract in sparse_eval.h). */
#include "sparse_eval.h"

#include <math.h>
#include <string.h>

#include "../base/sparse.h"
#include "builtin_api.h"
#include "ops.h"
#include "sparse_ops.h"

static bool op_is_arith_op(BinOp op) { return op <= OP_MOD; }

static const char *op_name(BinOp op)
{
    static const char *const names[] = {
        [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_POW] = "^", [OP_INTDIV] = "%/%",
        [OP_MOD] = "%%", [OP_MATMUL] = "%*%", [OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=",
        [OP_EQ] = "==", [OP_NE] = "!=", [OP_AND] = "&", [OP_OR] = "|",
    };
    return (unsigned)op < sizeof names / sizeof names[0] && names[op] ? names[op] : "operator";
}

/* The dense path: both operands through the gate, then ops.c. */
static Status dense_binary_take(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    if (val_densify(I, &a, op_name(op)) != ST_OK || val_densify(I, &b, op_name(op)) != ST_OK) {
        val_release(a);
        val_release(b);
        return ST_ERR;
    }
    return ops_binary_take(I, op, a, b, out);
}

static Status put_sp(Interp *I, SpMat *s, BinOp op, Value *out)
{
    Matrix *m = mat_from_sp_take(I, s, op_name(op));
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

/* X op s (or s op X) with X sparse: the kernel when zeros stay zeros. */
static Status sparse_scalar(Interp *I, BinOp op, const Matrix *X, double s, bool scalar_left, Value *out,
                            bool *done)
{
    *done = false;
    if (!sp_scalar_safe(op, s, scalar_left))
        return ST_OK;
    *done = true;
    return put_sp(I, sp_binop_scalar(I, X->sp, op, s, scalar_left), op, out);
}

Status sparse_binary_take(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    if (op == OP_MATMUL) {
        Status st = a.kind == VAL_MATRIX && b.kind == VAL_MATRIX ? sparse_matmul(I, a.m, false, b.m, false, out)
                                                                  : dense_binary_take(I, op, val_ref(a), val_ref(b), out);
        val_release(a);
        val_release(b);
        return st;
    }
    /* Booleans in arithmetic are ops.c's error, scalars on both sides its
     * business too: hand those over as they are. */
    if (op_is_arith_op(op) && (a.kind == VAL_BOOL || b.kind == VAL_BOOL))
        return dense_binary_take(I, op, a, b, out);
    Status st = ST_OK;
    bool done = false;
    if (a.kind != VAL_MATRIX) {
        st = sparse_scalar(I, op, b.m, val_num(a), true, out, &done);
    } else if (b.kind != VAL_MATRIX) {
        st = sparse_scalar(I, op, a.m, val_num(b), false, out, &done);
    } else {
        const Matrix *A = a.m, *B = b.m;
        if (A->rows == B->rows && A->cols == B->cols) {
            if (A->sp && B->sp) {
                if (ops_apply_d(op, 0, 0) == 0) {
                    done = true;
                    st = put_sp(I, sp_binop_ss(I, A->sp, op, B->sp), op, out);
                }
            } else if (op == OP_MUL || op == OP_AND) {
                /* one side dense: the sparse side's zeros decide */
                done = true;
                if (A->sp)
                    st = put_sp(I, sp_binop_sd(I, A->sp, op, B->data, false), op, out);
                else
                    st = put_sp(I, sp_binop_sd(I, B->sp, op, A->data, true), op, out);
            }
        } else if (A->sp && B->rows == 1 && B->cols == 1) {
            st = sparse_scalar(I, op, A, mat_get(B, 0, 0), false, out, &done);
        } else if (A->sp && ((B->cols == 1 && B->rows == A->rows) || (B->rows == 1 && B->cols == A->cols))) {
            bool col = B->cols == 1 && B->rows == A->rows;
            const double *v = mat_dense(I, B, op_name(op));
            if (!v && mat_len(B) > 0) {
                st = ST_ERR;
                done = true;
            } else if (sp_vector_safe(op, v, mat_len(B))) {
                done = true;
                st = put_sp(I, sp_binop_vector(I, A->sp, op, v, col), op, out);
            }
        }
    }
    if (!done)
        return dense_binary_take(I, op, a, b, out);
    val_release(a);
    val_release(b);
    return st;
}

/* ---- %*% ---- */

/* t(A) as a new matrix in A's form (a sparse transpose stays sparse). */
static Matrix *transposed(Interp *I, const Matrix *A)
{
    if (A->sp) {
        Matrix *t = mat_new_sparse_take(sp_transpose(I, A->sp));
        if (!t)
            err_oom(I, A->cols, A->rows);
        return t;
    }
    Matrix *t = mat_alloc(I, A->cols, A->rows);
    if (t)
        mat_transpose(A, t);
    return t;
}

static Status out_dense(Interp *I, int64_t r, int64_t c, Matrix **C)
{
    *C = mat_alloc_zero(I, r, c);
    return *C ? ST_OK : ST_ERR;
}

/* A %*% B, no transposes, at least one sparse. */
static Status mm_plain(Interp *I, const Matrix *A, const Matrix *B, Value *out)
{
    Matrix *C;
    if (A->sp && !B->sp) {
        TRY(out_dense(I, A->rows, B->cols, &C));
        if (mat_len(C) > 0 && A->cols > 0)
            sp_mm_sd(I, A->sp, B->data, B->cols, C->data);
    } else if (!A->sp && B->sp) {
        TRY(out_dense(I, A->rows, B->cols, &C));
        if (mat_len(C) > 0 && A->cols > 0)
            sp_mm_ds(I, A->data, A->rows, B->sp, C->data);
    } else if (!sp_has_nonfinite(A->sp) && !sp_has_nonfinite(B->sp)) {
        C = mat_from_sp_take(I, sp_mm_ss(I, A->sp, B->sp), "%*%");
        if (!C)
            return ST_ERR;
    } else {
        /* 0 * Inf cells would fill the result: the smaller side dense */
        bool dense_b = mat_len(B) <= mat_len(A);
        Matrix *D = mat_dense_m(I, dense_b ? B : A, "%*%");
        if (!D)
            return ST_ERR;
        return dense_b ? mm_plain(I, A, D, out) : mm_plain(I, D, B, out);
    }
    *out = val_matrix_take(C);
    return ST_OK;
}

Status sparse_matmul(Interp *I, const Matrix *A, bool ta, const Matrix *B, bool tb, Value *out)
{
    int64_t m = ta ? A->cols : A->rows, k1 = ta ? A->rows : A->cols;
    int64_t k2 = tb ? B->cols : B->rows, n = tb ? B->rows : B->cols;
    if (k1 != k2)
        return err_set(I, "invalid dimensions for matrix multiplication (k1=%lld, k2=%lld)", (long long)k1,
                       (long long)k2);
    if (ta && !tb && A->sp && (B == A || (B->sp && B->sp == A->sp))) {
        /* t(X) %*% X: dense when its cols^2 cells fit, else sparse */
        if (mat_cap_allows(sp_dense_bytes(m, n))) {
            Matrix *C;
            TRY(out_dense(I, m, n, &C));
            if (mat_len(C) > 0 && !sp_tsmm(I, A->sp, C->data)) {
                mat_release(C);
                return err_set(I, "%%*%%: out of memory");
            }
            *out = val_matrix_take(C);
            return ST_OK;
        }
    }
    if (ta && !tb && A->sp && !B->sp) {
        Matrix *C;
        TRY(out_dense(I, m, n, &C));
        if (mat_len(C) > 0 && k1 > 0 && !sp_tmm_sd(I, A->sp, B->data, n, C->data)) {
            mat_release(C);
            return err_set(I, "%%*%%: out of memory");
        }
        *out = val_matrix_take(C);
        return ST_OK;
    }
    Matrix *At = NULL, *Bt = NULL;
    if (ta && !(At = transposed(I, A)))
        return ST_ERR;
    if (tb && !(Bt = transposed(I, B))) {
        mat_release(At);
        return ST_ERR;
    }
    const Matrix *L = At ? At : A, *R = Bt ? Bt : B;
    Status st = L->sp || R->sp ? mm_plain(I, L, R, out) : ST_OK;
    if (!L->sp && !R->sp) {
        Matrix *C = mat_alloc(I, L->rows, R->cols);
        if (!C)
            st = ST_ERR;
        else {
            mat_matmul(L, R, C);
            *out = val_matrix_take(C);
        }
    }
    mat_release(At);
    mat_release(Bt);
    return st;
}

Status sparse_unary_take(Interp *I, UnOp op, Value a, Value *out)
{
    if (op == UOP_NEG) {
        /* -X is X * -1 (ops.c); a zero stays +0.0 (doc/sparse.md) */
        Status st = put_sp(I, sp_binop_scalar(I, a.m->sp, OP_MUL, -1.0, false), OP_MUL, out);
        val_release(a);
        return st;
    }
    if (op == UOP_PLUS) {
        *out = a;
        return ST_OK;
    }
    TRY(val_densify(I, &a, "!"));
    return ops_unary_take(I, op, a, out);
}
