/* SPDX-License-Identifier: Apache-2.0
 * einsum(equation, A, B, ...) (doc/builtins.md, "einsum"): Einstein
 * summation over matrices, as numpy.einsum for operands of at most two
 * indices. "ij,jk->ik" is A %*% B, "ij->ji" t(A), "ii->" trace(A),
 * "ij,ij->" sum(A * B); without "->" the result keeps the indices that
 * occur once, in ASCII order (numpy's implicit mode).
 *
 * The result is always a matrix: no index 1x1, one index a column vector,
 * two indices rows x cols in the output's order. Each operand first sums
 * away the indices only it has (and takes its diagonal). More than two operands
 * are contracted pairwise, cheapest pair first, while a pair's result keeps
 * at most two indices. A pair shaped as a matrix multiplication (transposes
 * included) goes to BLAS; any other runs one loop over the values of the
 * indices it spans. Thread-safe: all state comes from the arguments. */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/matrix.h"

#define FN "einsum"
#define NLETTERS 52     /* a-z, A-Z */

/* One operand: its term (0..2 letter slots) and its row-major data. */
typedef struct EinOp {
    int idx[2];         /* letter slots of the term */
    int nidx;
    const Matrix *m;
    int64_t stride[NLETTERS];   /* data offset per unit step of each letter */
} EinOp;

typedef struct Ein {
    EinOp *op;
    int nop;
    int out[2], nout;           /* output letter slots */
    int64_t size[NLETTERS];     /* -1 until an operand fixes it */
    int count[NLETTERS];        /* occurrences in the input terms */
    int from[NLETTERS];         /* the operand (0-based) that fixed size[] */
} Ein;

static int letter_slot(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

static char slot_letter(int s) { return (char)(s < 26 ? 'a' + s : 'A' + s - 26); }

/* Parses one term (spaces already removed) of operand k (0-based; -1 for
 * the output) into slots. */
static Status parse_term(Interp *I, const char *t, size_t n, int k, int *slots, int *nslots)
{
    char what[32];
    if (k < 0)
        snprintf(what, sizeof what, "the output");
    else
        snprintf(what, sizeof what, "operand %d", k + 1);
    for (size_t i = 0; i < n; i++) {
        if (letter_slot(t[i]) < 0)
            return err_set(I, FN "(): invalid character '%c' in the term of %s (indices are the letters a-z, A-Z)",
                           t[i], what);
    }
    if (n > 2)
        return err_set(I, FN "(): the term '%.*s' of %s has %zu indices; a matrix has at most 2", (int)n, t, what, n);
    for (size_t i = 0; i < n; i++)
        slots[i] = letter_slot(t[i]);
    *nslots = (int)n;
    return ST_OK;
}

/* The data offset per unit step of each index of o's term (a repeated
 * index steps along the diagonal). */
static void op_strides(EinOp *o)
{
    memset(o->stride, 0, sizeof o->stride);
    if (o->nidx == 1) {
        o->stride[o->idx[0]] += 1;
    } else if (o->nidx == 2) {
        o->stride[o->idx[0]] += o->m->cols;
        o->stride[o->idx[1]] += 1;
    }
}

/* Binds index sizes from operand k's shape, checking them against what the
 * other operands fixed. */
static Status bind_sizes(Interp *I, Ein *e, int k)
{
    EinOp *o = &e->op[k];
    const Matrix *m = o->m;
    int64_t dims[2];
    if (o->nidx == 0) {
        if (m->rows != 1 || m->cols != 1)
            return err_set(I, FN "(): operand %d has an empty term but is %lldx%lld (1x1 expected)", k + 1,
                           (long long)m->rows, (long long)m->cols);
        return ST_OK;
    }
    if (o->nidx == 1) {
        if (m->rows != 1 && m->cols != 1)
            return err_set(I, FN "(): operand %d has the one-index term '%c' but is %lldx%lld (a vector expected)",
                           k + 1, slot_letter(o->idx[0]), (long long)m->rows, (long long)m->cols);
        dims[0] = m->rows * m->cols;
    } else {
        dims[0] = m->rows;
        dims[1] = m->cols;
    }
    op_strides(o);
    for (int d = 0; d < o->nidx; d++) {
        int s = o->idx[d];
        if (e->size[s] >= 0 && e->size[s] != dims[d]) {
            if (e->from[s] == k)
                return err_set(I, FN "(): operand %d is %lldx%lld, but its term '%c%c' needs a square matrix", k + 1,
                               (long long)m->rows, (long long)m->cols, slot_letter(s), slot_letter(s));
            return err_set(I, FN "(): index '%c' is %lld in operand %d but %lld in operand %d (the dimensions must "
                           "agree)", slot_letter(s), (long long)e->size[s], e->from[s] + 1, (long long)dims[d], k + 1);
        }
        e->size[s] = dims[d];
        e->from[s] = k;
    }
    return ST_OK;
}

/* Parses the equation against the operands in e->op (whose m are set). */
static Status parse_equation(Interp *I, Ein *e, const char *eq)
{
    size_t len = strlen(eq);
    char *s = malloc(len + 1);
    if (!s)
        return err_set(I, FN "(): out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (eq[i] != ' ')
            s[n++] = eq[i];
    s[n] = '\0';
    Status st = ST_OK;
    char *arrow = strstr(s, "->");
    size_t in_len = arrow ? (size_t)(arrow - s) : n;
    if (arrow && strstr(arrow + 2, "->"))
        st = err_set(I, FN "(): the equation '%s' has more than one '->'", eq);
    /* terms of the inputs */
    int nterms = 1;
    for (size_t i = 0; i < in_len; i++)
        nterms += s[i] == ',';
    if (st == ST_OK && nterms != e->nop)
        st = err_set(I, FN "(): the equation '%s' has %d operand term%s but %d matri%s given", eq, nterms,
                     nterms == 1 ? "" : "s", e->nop, e->nop == 1 ? "x was" : "ces were");
    size_t start = 0;
    for (int k = 0; st == ST_OK && k < e->nop; k++) {
        size_t end = start;
        while (end < in_len && s[end] != ',')
            end++;
        EinOp *o = &e->op[k];
        st = parse_term(I, s + start, end - start, k, o->idx, &o->nidx);
        if (st == ST_OK)
            st = bind_sizes(I, e, k);
        for (int d = 0; st == ST_OK && d < o->nidx; d++)
            e->count[o->idx[d]]++;
        start = end + 1;
    }
    if (st == ST_OK && arrow) {
        const char *t = arrow + 2;
        st = parse_term(I, t, strlen(t), -1, e->out, &e->nout);
        if (st == ST_OK && e->nout == 2 && e->out[0] == e->out[1])
            st = err_set(I, FN "(): the output index '%c' is repeated", t[0]);
        for (int d = 0; st == ST_OK && d < e->nout; d++)
            if (!e->count[e->out[d]])
                st = err_set(I, FN "(): the output index '%c' occurs in no operand", slot_letter(e->out[d]));
    } else if (st == ST_OK) {
        /* implicit output: the indices that occur once, in ASCII order
         * (uppercase first), as numpy */
        int order[NLETTERS], no = 0;
        for (int c = 'A'; c <= 'Z'; c++)
            order[no++] = letter_slot((char)c);
        for (int c = 'a'; c <= 'z'; c++)
            order[no++] = letter_slot((char)c);
        e->nout = 0;
        int once = 0;
        for (int k = 0; k < no; k++)
            if (e->count[order[k]] == 1) {
                if (e->nout < 2)
                    e->out[e->nout++] = order[k];
                once++;
            }
        if (once > 2)
            st = err_set(I, FN "(): the equation '%s' leaves %d indices that occur once, and a matrix has at most 2: "
                         "give the output with '->'", eq, once);
    }
    free(s);
    return st;
}

/* The BLAS case: two two-index operands sharing exactly one index that is
 * summed away, the output being their other two (in either order). */
static bool matmul_shaped(const Ein *e, bool *tA, bool *tB, bool *swap)
{
    if (e->nop != 2 || e->nout != 2)
        return false;
    const EinOp *A = &e->op[0], *B = &e->op[1];
    if (A->nidx != 2 || B->nidx != 2 || A->idx[0] == A->idx[1] || B->idx[0] == B->idx[1])
        return false;
    for (int ca = 0; ca < 2; ca++)
        for (int cb = 0; cb < 2; cb++) {
            int c = A->idx[ca];
            int a = A->idx[1 - ca], b = B->idx[1 - cb];
            if (B->idx[cb] != c || a == b || a == c || b == c)
                continue;
            if (e->out[0] == a && e->out[1] == b)
                *swap = false;
            else if (e->out[0] == b && e->out[1] == a)
                *swap = true;
            else
                return false;
            *tA = ca == 0;      /* A is c x a: use t(A) */
            *tB = cb == 1;      /* B is b x c: use t(B) */
            return true;
        }
    return false;
}

/* The general case: for each output cell, the sum over the summed indices
 * of the product of the operands' cells. */
static Status einsum_loop(Interp *I, const Ein *e, Matrix *R)
{
    int sum[NLETTERS], nsum = 0;
    for (int s = 0; s < NLETTERS; s++)
        if (e->count[s] && !(e->nout > 0 && e->out[0] == s) && !(e->nout > 1 && e->out[1] == s))
            sum[nsum++] = s;
    int64_t inner = 1;
    for (int k = 0; k < nsum; k++) {
        if (e->size[sum[k]] == 0) {
            inner = 0;
            break;
        }
        if (inner > INT64_MAX / e->size[sum[k]])
            return err_set(I, FN "(): the summed indices span more than 2^63 terms");
        inner *= e->size[sum[k]];
    }
    int64_t R0 = e->nout > 0 ? e->size[e->out[0]] : 1, R1 = e->nout > 1 ? e->size[e->out[1]] : 1;
    int64_t off[64], idx[NLETTERS];
    int64_t work = 0;
    for (int64_t i = 0; i < R0; i++)
        for (int64_t j = 0; j < R1; j++) {
            for (int k = 0; k < e->nop; k++) {
                off[k] = 0;
                if (e->nout > 0)
                    off[k] += i * e->op[k].stride[e->out[0]];
                if (e->nout > 1)
                    off[k] += j * e->op[k].stride[e->out[1]];
            }
            for (int k = 0; k < nsum; k++)
                idx[k] = 0;
            double acc = 0;
            for (int64_t t = 0; t < inner; t++) {
                double p = 1;
                for (int k = 0; k < e->nop; k++)
                    p *= e->op[k].m->data[off[k]];
                acc += p;
                /* odometer step over the summed indices, last fastest */
                for (int d = nsum - 1; d >= 0; d--) {
                    int s = sum[d];
                    if (++idx[d] < e->size[s]) {
                        for (int k = 0; k < e->nop; k++)
                            off[k] += e->op[k].stride[s];
                        break;
                    }
                    idx[d] = 0;
                    for (int k = 0; k < e->nop; k++)
                        off[k] -= (e->size[s] - 1) * e->op[k].stride[s];
                }
                if (++work == (1 << 22)) {
                    work = 0;
                    if (interp_interrupted(I))
                        return eval_raise_interrupt(I, NULL);
                }
            }
            R->data[i * R1 + j] = acc;
        }
    return ST_OK;
}

/* A new matrix holding the einsum of ops[0..nop) with output out[0..nout),
 * index sizes from 'size': BLAS for a matmul-shaped pair, else the loop. */
static Status einsum_eval(Interp *I, const int64_t *size, EinOp *ops, int nop, const int *out, int nout,
                          Matrix **res)
{
    Ein e;
    memset(&e, 0, sizeof e);
    memcpy(e.size, size, sizeof e.size);
    e.op = ops;
    e.nop = nop;
    e.nout = nout;
    for (int d = 0; d < nout; d++)
        e.out[d] = out[d];
    for (int k = 0; k < nop; k++)
        for (int d = 0; d < ops[k].nidx; d++)
            e.count[ops[k].idx[d]]++;
    int64_t rows = nout > 0 ? size[out[0]] : 1, cols = nout > 1 ? size[out[1]] : 1;
    bool tA, tB, swap;
    Matrix *R;
    if (matmul_shaped(&e, &tA, &tB, &swap)) {
        if (!(R = mat_alloc(I, rows, cols)))
            return ST_ERR;
        if (!swap)
            mat_matmul_t(ops[0].m, tA, ops[1].m, tB, R);
        else    /* t(op(A) op(B)) = t(op(B)) t(op(A)) */
            mat_matmul_t(ops[1].m, !tB, ops[0].m, !tA, R);
    } else {
        if (!(R = mat_alloc_zero(I, rows, cols)))
            return ST_ERR;
        Status st = einsum_loop(I, &e, R);
        if (st != ST_OK) {
            mat_release(R);
            return st;
        }
    }
    *res = R;
    return ST_OK;
}

static uint64_t term_mask(const EinOp *o)
{
    uint64_t m = 0;
    for (int d = 0; d < o->nidx; d++)
        m |= (uint64_t)1 << o->idx[d];
    return m;
}

/* Operand o becomes R (owned through *hold, whose old matrix is released),
 * a result with the n (<= 2) indices idx. */
static void op_become(EinOp *o, Value *hold, Matrix *R, const int *idx, int n)
{
    val_release(*hold);
    o->m = R;
    o->nidx = n;
    o->idx[0] = idx[0];
    o->idx[1] = idx[1];
    op_strides(o);
    *hold = val_matrix_take(R);
}

/* While more than two operands remain, contracts the cheapest pair (the
 * product of the sizes of the indices it spans) whose result keeps at most
 * two indices: those the output or another operand still needs. "ij,jk,kl"
 * then costs two matrix products instead of one loop over i, j, k and l.
 * hold[k] owns operand k's matrix when it is not borrowed (VAL_NONE). */
static Status einsum_plan(Interp *I, Ein *e, Value *hold)
{
    /* First each operand on its own sums away the indices that neither the
     * output nor another operand needs, and a repeated index takes the
     * diagonal: "ab,cd->" is then sum(A) * sum(B), not a loop over a, b,
     * c and d (n^4 products for n x n operands). */
    for (int k = 0; k < e->nop && e->nop > 1; k++) {
        EinOp *o = &e->op[k];
        uint64_t keep = 0;
        for (int d = 0; d < e->nout; d++)
            keep |= (uint64_t)1 << e->out[d];
        for (int j = 0; j < e->nop; j++)
            if (j != k)
                keep |= term_mask(&e->op[j]);
        int res[2] = {0, 0}, n = 0;
        for (int d = 0; d < o->nidx; d++) {
            int l = o->idx[d];
            if ((keep >> l & 1) && !(n == 1 && res[0] == l))
                res[n++] = l;
        }
        if (n == o->nidx)
            continue;   /* nothing to sum, no diagonal */
        Matrix *R;
        TRY(einsum_eval(I, e->size, o, 1, res, n, &R));
        op_become(o, &hold[k], R, res, n);
    }
    while (e->nop > 2) {
        int bx = -1, by = -1, bres[2] = {0, 0}, bn = 0;
        double bcost = 0;
        for (int x = 0; x < e->nop; x++)
            for (int y = x + 1; y < e->nop; y++) {
                uint64_t keep = 0;
                for (int d = 0; d < e->nout; d++)
                    keep |= (uint64_t)1 << e->out[d];
                for (int k = 0; k < e->nop; k++)
                    if (k != x && k != y)
                        keep |= term_mask(&e->op[k]);
                int res[2], n = 0;
                uint64_t seen = 0;
                bool wide = false;
                const EinOp *xy[2] = {&e->op[x], &e->op[y]};
                for (int p = 0; p < 2; p++)
                    for (int d = 0; d < xy[p]->nidx; d++) {
                        int l = xy[p]->idx[d];
                        if (!(keep >> l & 1) || (seen >> l & 1))
                            continue;
                        seen |= (uint64_t)1 << l;
                        if (n == 2)
                            wide = true;
                        else
                            res[n++] = l;
                    }
                if (wide)
                    continue;
                double cost = 1;
                uint64_t span = term_mask(xy[0]) | term_mask(xy[1]);
                for (int l = 0; l < NLETTERS; l++)
                    if (span >> l & 1)
                        cost *= (double)e->size[l];
                if (bx < 0 || cost < bcost) {
                    bx = x, by = y, bcost = cost, bn = n;
                    bres[0] = res[0], bres[1] = res[1];
                }
            }
        if (bx < 0)
            return ST_OK;   /* every pair would keep three indices or more: one loop over all */
        EinOp pair[2] = {e->op[bx], e->op[by]};
        Matrix *R;
        TRY(einsum_eval(I, e->size, pair, 2, bres, bn, &R));
        val_release(hold[by]);
        op_become(&e->op[bx], &hold[bx], R, bres, bn);
        for (int k = by; k + 1 < e->nop; k++) {
            e->op[k] = e->op[k + 1];
            hold[k] = hold[k + 1];
        }
        hold[--e->nop] = val_none();
    }
    return ST_OK;
}

/* einsum(equation, A, B, ...) */
static Status bi_einsum(Interp *I, const BArgs *a, Value *out)
{
    for (int k = 0; k < a->n; k++)
        if (a->names && a->names[k])
            return err_set(I, FN "(): arguments are positional, einsum(equation, A, B, ...); got the named "
                           "argument '%s'", a->names[k]);
    if (a->n < 1 || a->v[0].kind != VAL_STRING)
        return err_set(I, FN "(): the first argument must be the equation, a string such as \"ij,jk->ik\"; got %s",
                       a->n < 1 ? "nothing" : val_kind_name(a->v[0].kind));
    const char *eq = a->v[0].s->s;
    int nop = a->n - 1;
    if (nop > 64)
        return err_set(I, FN "(): at most 64 operands, got %d", nop);
    Ein e;
    memset(&e, 0, sizeof e);
    for (int l = 0; l < NLETTERS; l++)
        e.size[l] = -1;
    Value owned[64];
    EinOp ops[64];
    memset(ops, 0, sizeof ops);
    for (int k = 0; k < 64; k++)
        owned[k] = val_none();
    e.op = ops;
    e.nop = nop;
    Status st = ST_OK;
    for (int k = 0; k < nop && st == ST_OK; k++) {
        Value v = a->v[k + 1];
        if (v.kind != VAL_MATRIX && !val_is_number(v) && v.kind != VAL_BOOL) {
            st = err_set(I, FN "(): operand %d must be a matrix or a number, got %s", k + 1, val_kind_name(v.kind));
            break;
        }
        Matrix *m;
        st = arg_matrix_or_scalar(I, a, k + 1, &m, &owned[k]);
        if (st == ST_OK)
            ops[k].m = m;
    }
    if (st == ST_OK)
        st = parse_equation(I, &e, eq);
    if (st == ST_OK)
        st = einsum_plan(I, &e, owned);
    Matrix *R = NULL;
    if (st == ST_OK)
        st = einsum_eval(I, e.size, e.op, e.nop, e.out, e.nout, &R);
    for (int k = 0; k < 64; k++)
        val_release(owned[k]);
    if (st != ST_OK)
        return st;
    *out = val_matrix_take(R);
    return ST_OK;
}

const BuiltinDef bi_einsum_table[] = {
    {"einsum", bi_einsum, "", 1, BIND_VARIADIC, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
