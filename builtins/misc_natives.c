/* SPDX-License-Identifier: Apache-2.0
 * Small upstream natives that real SystemDS scripts call:
 *   roll(X, shift)            rows rotated down by shift (negative: up)
 *   ppred(X, Y, op)           the deprecated cell-wise comparison
 *   compress(X), decompress(X), local(X)
 * compress/decompress/local are execution hints upstream (compressed
 * storage, forced single-node execution): for an in-memory interpreter
 * they are the identity, and return X unchanged. Thread-safe. */
#include "registry.h"

#include <string.h>

#include "../runtime/matrix.h"
#include "../runtime/ops.h"

/* roll(X, shift): row i of X becomes row (i + shift) mod nrow, as upstream's
 * LibMatrixReorg.roll (numpy.roll along axis 0). */
static Status bi_roll(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    int64_t shift;
    TRY(arg_matrix(I, a, 0, &x));
    if (arg_given(a, 1) && a->v[1].kind == VAL_MATRIX)
        return arg_type_error(I, a, 1, "a scalar");
    TRY(arg_int(I, a, 1, 0, &shift));
    int64_t R = x->rows, C = x->cols;
    Matrix *m = mat_alloc(I, R, C);
    if (!m)
        return ST_ERR;
    if (R && C) {
        int64_t s = shift % R;
        if (s < 0)
            s += R;
        /* rows [0, R-s) move down to [s, R); rows [R-s, R) wrap to [0, s) */
        memcpy(m->data + s * C, x->data, sizeof(double) * (size_t)((R - s) * C));
        memcpy(m->data, x->data + (R - s) * C, sizeof(double) * (size_t)(s * C));
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ppred(X, Y, op): X op Y cell-wise with op one of == != < <= > >=, as the
 * operator itself (broadcasting, scalar operands). Deprecated upstream
 * ("ppred() has been deprecated. Please use the operator directly."), which
 * only warns; we accept it silently. */
static Status bi_ppred(Interp *I, const BArgs *a, Value *out)
{
    const char *op;
    for (int i = 0; i < 2; i++)
        if (a->v[i].kind != VAL_MATRIX && !val_is_number(a->v[i]) && a->v[i].kind != VAL_BOOL)
            return arg_type_error(I, a, i, "a matrix or a number");
    TRY(arg_string(I, a, 2, NULL, &op));
    static const struct { const char *s; BinOp op; } ops[] = {
        {"==", OP_EQ}, {"!=", OP_NE}, {"<", OP_LT}, {"<=", OP_LE}, {">", OP_GT}, {">=", OP_GE},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(op, ops[k].s) == 0)
            return ops_binary(I, ops[k].op, a->v[0], a->v[1], out);
    return err_set(I, "ppred(): unknown relational operator '%s' (expected ==, !=, <, <=, >, >=)", op);
}

/* compress(X), decompress(X), local(X): X itself. */
static Status bi_identity_hint(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    *out = val_ref(a->v[0]);
    return ST_OK;
}

const BuiltinDef bi_misc_natives_table[] = {
    {"roll", bi_roll, "X,shift", 2, BIND_POS, 1, 0},
    {"ppred", bi_ppred, "X,Y,op", 3, BIND_POS, 1, 0},
    {"compress", bi_identity_hint, "X", 1, BIND_POS, 1, 0},
    {"decompress", bi_identity_hint, "X", 1, BIND_POS, 1, 0},
    {"local", bi_identity_hint, "X", 1, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
