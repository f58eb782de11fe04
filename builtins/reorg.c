/* SPDX-License-Identifier: Apache-2.0
 * Reorganisation builtins: t (transpose, via mat_transpose), rev (reverse
 * the row order) and unique (distinct values). Results are fresh matrices.
 * Thread-safe. */
#include "registry.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* ---- unique ----
 * Upstream collects the distinct values in a java.util.HashSet<Double> and
 * emits them in its iteration order, which is deterministic: buckets in
 * index order, insertion order inside a bucket. We reproduce that order so
 * results match upstream cell for cell. */

typedef struct UVal { uint64_t bits; int64_t first; uint32_t bucket; } UVal;

static uint64_t java_bits(double d)
{
    if (d != d)
        return 0x7ff8000000000000ULL;   /* Double.doubleToLongBits: one NaN */
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static int by_bits(const void *x, const void *y)
{
    const UVal *a = x, *b = y;
    if (a->bits != b->bits)
        return a->bits < b->bits ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

static int by_bucket(const void *x, const void *y)
{
    const UVal *a = x, *b = y;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Distinct values of the n cells v[0], v[step], ... in HashSet order, into
 * out[0..); returns their count. 'u' is scratch for n entries. */
static int64_t distinct_java(const double *v, int64_t n, int64_t step, UVal *u, double *out)
{
    for (int64_t i = 0; i < n; i++)
        u[i] = (UVal){.bits = java_bits(v[i * step]), .first = i};
    qsort(u, (size_t)n, sizeof *u, by_bits);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (k == 0 || u[k - 1].bits != u[i].bits)
            u[k++] = u[i];
    /* HashMap: 16 buckets, doubled whenever size exceeds 3/4 of them. */
    uint64_t cap = 16;
    while ((uint64_t)k > cap / 4 * 3)
        cap *= 2;
    for (int64_t i = 0; i < k; i++) {
        uint32_t h = (uint32_t)(u[i].bits ^ (u[i].bits >> 32));
        u[i].bucket = (h ^ (h >> 16)) & (uint32_t)(cap - 1);
    }
    qsort(u, (size_t)k, sizeof *u, by_bucket);
    for (int64_t i = 0; i < k; i++)
        memcpy(&out[i], &u[i].bits, sizeof out[i]);
    return k;
}

/* unique(data, dir="RC"): the distinct values of the whole matrix (k x 1),
 * of each row (nrow x max count, zero-padded) or of each column. */
static Status bi_unique(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    const char *dir;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_string(I, a, 1, "RC", &dir));
    int d = strcasecmp(dir, "RC") == 0 ? 0 : strcasecmp(dir, "R") == 0 ? 1 : strcasecmp(dir, "C") == 0 ? 2 : -1;
    if (d < 0) {
        char up[64];
        size_t k = 0;
        for (; dir[k] && k + 1 < sizeof up; k++)
            up[k] = (char)(dir[k] >= 'a' && dir[k] <= 'z' ? dir[k] - 32 : dir[k]);
        up[k] = '\0';
        return err_set(I, "Invalid argument: %s is not recognized (unique(): dir must be \"R\", \"C\" or \"RC\")", up);
    }
    int64_t R = x->rows, C = x->cols, n = d == 0 ? R * C : d == 1 ? C : R;
    int64_t groups = d == 0 ? 1 : d == 1 ? R : C;
    UVal *u = malloc(sizeof *u * (size_t)(n > 0 ? n : 1));
    double *vals = malloc(sizeof *vals * (size_t)(n > 0 ? n : 1) * (size_t)(groups > 0 ? groups : 1));
    int64_t *cnt = malloc(sizeof *cnt * (size_t)(groups > 0 ? groups : 1));
    if (!u || !vals || !cnt) {
        free(u);
        free(vals);
        free(cnt);
        return err_oom(I, n, groups);
    }
    int64_t width = 0;
    for (int64_t g = 0; g < groups; g++) {
        const double *base = d == 0 ? x->data : d == 1 ? x->data + g * C : x->data + g;
        cnt[g] = distinct_java(base, n, d == 2 ? C : 1, u, vals + g * n);
        if (cnt[g] > width)
            width = cnt[g];
    }
    Matrix *m = d == 0 ? mat_alloc_zero(I, width, 1) : d == 1 ? mat_alloc_zero(I, R, width)
                                                              : mat_alloc_zero(I, width, C);
    if (m) {
        for (int64_t g = 0; g < groups; g++)
            for (int64_t i = 0; i < cnt[g]; i++) {
                double v = vals[g * n + i];
                if (d == 2)
                    m->data[i * C + g] = v;
                else
                    m->data[g * width + i] = v;
            }
    }
    free(u);
    free(vals);
    free(cnt);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

const BuiltinDef bi_reorg_table[] = {
    {"t", bi_t, "x", 1, BIND_POS, 1, 0},
    {"rev", bi_rev, "x", 1, BIND_POS, 1, 0},
    {"unique", bi_unique, "data,dir", 1, BIND_NAMED, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
