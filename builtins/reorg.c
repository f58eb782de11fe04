/* SPDX-License-Identifier: Apache-2.0
 * Reorganisation builtins: t (transpose, via mat_transpose) and rev (reverse
 * the row order). Results are fresh matrices. Thread-safe. */
#include "registry.h"

#include <string.h>

#include "../runtime/matrix.h"

/* t(X) */
static Status bi_t(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    if (x->rows == 1 || x->cols == 1) {
        /* a vector's transpose has the same cell order */
        Matrix *m = mat_alloc(I, x->cols, x->rows);
        if (!m)
            return ST_ERR;
        if (mat_len(x))
            memcpy(m->data, x->data, (size_t)mat_len(x) * sizeof(double));
        *out = val_matrix_take(m);
        return ST_OK;
    }
    Matrix *m = mat_alloc(I, x->cols, x->rows);
    if (!m)
        return ST_ERR;
    if (mat_len(x))
        mat_transpose(x, m);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* rev(X): rows in reverse order */
static Status bi_rev(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return ST_ERR;
    if (C)
        for (int64_t i = 0; i < R; i++)
            memcpy(m->data + i * C, x->data + (R - 1 - i) * C, (size_t)C * sizeof(double));
    *out = val_matrix_take(m);
    return ST_OK;
}

const BuiltinDef bi_reorg_table[] = {
    {"t", bi_t, "x", 1, BIND_POS, 1, 0},
    {"rev", bi_rev, "x", 1, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
