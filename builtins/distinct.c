/* SPDX-License-Identifier: Apache-2.0
 * Distinct-value counts as upstream's natives:
 *   countDistinct(data, dir="RC")                 exact
 *   countDistinctApprox(data, dir="RC", type="KMV")
 *   rowCountDistinct(X), colCountDistinct(X)
 *   rowCountDistinctApprox(data, type="KMV"), colCountDistinctApprox(...)
 * dir "RC" gives an integer scalar, "R" an nrow x 1 and "C" a 1 x ncol
 * matrix. Values are equal as Java's HashSet<Double> sees them (one NaN,
 * -0 apart from 0), so countDistinct(X) == nrow(unique(X)). Upstream's
 * approximate variants estimate with KMV (or HLL) sketches; we count
 * exactly, which is inside any error bound of theirs. The data comes
 * unnamed, as data= or as target= (spec/BUILTINS.md names target=).
 * Thread-safe: all state comes from the Interp. */
#include "registry.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/matrix.h"
#include "../runtime/rng.h"

enum { DIR_RC, DIR_R, DIR_C };

/* Marker of an empty slot: a NaN bit pattern no cell maps to (all NaNs are
 * folded into the one quiet NaN below). */
#define EMPTY_SLOT UINT64_MAX

/* Distinct count of the n cells v[0], v[step], ..., in the open-addressing
 * set 'tab' of 'cap' slots (a power of two > n), which it clears first. */
static int64_t count_distinct(const double *v, int64_t n, int64_t step, uint64_t *tab, uint64_t cap)
{
    memset(tab, 0xff, sizeof *tab * (size_t)cap);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = v[i * step];
        uint64_t b = 0x7ff8000000000000ULL;     /* every NaN is one value */
        if (d == d)
            memcpy(&b, &d, sizeof d);
        /* doubles of small integers differ in their top bits only, so
         * every bit must reach the slot index */
        uint64_t h = rng_mix64(b);
        for (uint64_t s = h;; s++) {
            s &= cap - 1;
            if (tab[s] == b)
                break;
            if (tab[s] == EMPTY_SLOT) {
                tab[s] = b;
                k++;
                break;
            }
        }
    }
    return k;
}

/* The count of X in direction dir into *out (an integer or a matrix). */
static Status distinct_dir(Interp *I, const Matrix *X, int dir, Value *out)
{
    int64_t R = X->rows, C = X->cols;
    int64_t n = dir == DIR_RC ? R * C : dir == DIR_R ? C : R;
    uint64_t cap = 16;
    while (cap <= (uint64_t)n * 2)      /* load at most 1/2 */
        cap *= 2;
    uint64_t *tmp = cap <= SIZE_MAX / sizeof *tmp ? malloc(sizeof *tmp * (size_t)cap) : NULL;
    if (!tmp)
        return err_oom(I, R, C);
    if (dir == DIR_RC) {
        *out = val_int(count_distinct(X->data, n, 1, tmp, cap));
        free(tmp);
        return ST_OK;
    }
    Matrix *m = dir == DIR_R ? mat_alloc(I, R, 1) : mat_alloc(I, 1, C);
    if (!m) {
        free(tmp);
        return ST_ERR;
    }
    if (dir == DIR_R)
        for (int64_t i = 0; i < R; i++)
            m->data[i] = (double)count_distinct(X->data + i * C, C, 1, tmp, cap);
    else
        for (int64_t j = 0; j < C; j++)
            m->data[j] = (double)count_distinct(X->data + j, R, C, tmp, cap);
    free(tmp);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* The data argument: slot 0 (unnamed or data=) or the target= alias. */
static Status distinct_data(Interp *I, const BArgs *a, int target_slot, Matrix **x)
{
    const char *fn = a->def->name;
    if (arg_given(a, 0) && arg_given(a, target_slot))
        return err_set(I, "%s(): the matrix is given twice (as data and as target)", fn);
    int i = arg_given(a, target_slot) ? target_slot : 0;
    if (!arg_given(a, i))
        return err_set(I, "%s(): argument 'data' is missing (expected a matrix)", fn);
    return arg_matrix(I, a, i, x);
}

/* dir as upstream's Direction: R, C or RC, any case. */
static Status distinct_parse_dir(Interp *I, const BArgs *a, int slot, int *dir)
{
    const char *s;
    TRY(arg_string(I, a, slot, "RC", &s));
    if (strcasecmp(s, "RC") == 0)
        *dir = DIR_RC;
    else if (strcasecmp(s, "R") == 0)
        *dir = DIR_R;
    else if (strcasecmp(s, "C") == 0)
        *dir = DIR_C;
    else {
        char up[64];
        size_t k = 0;
        for (; s[k] && k + 1 < sizeof up; k++)
            up[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 32 : s[k]);
        up[k] = '\0';
        return err_set(I, "Invalid argument: %s is not recognized (%s(): dir must be \"R\", \"C\" or \"RC\")", up,
                       a->def->name);
    }
    return ST_OK;
}

/* type: the sketch upstream estimates with; we count exactly under either. */
static Status distinct_parse_type(Interp *I, const BArgs *a, int slot)
{
    const char *s;
    TRY(arg_string(I, a, slot, "KMV", &s));
    if (strcasecmp(s, "KMV") != 0 && strcasecmp(s, "HLL") != 0) {
        char up[64];
        size_t k = 0;
        for (; s[k] && k + 1 < sizeof up; k++)
            up[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 32 : s[k]);
        up[k] = '\0';
        return err_set(I, "Unrecognized type for optional parameter %s (%s(): type must be \"KMV\" or \"HLL\")", up,
                       a->def->name);
    }
    return ST_OK;
}

/* countDistinct(data, dir="RC", target=) */
static Status bi_count_distinct(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    int dir;
    TRY(distinct_data(I, a, 2, &x));
    TRY(distinct_parse_dir(I, a, 1, &dir));
    return distinct_dir(I, x, dir, out);
}

/* countDistinctApprox(data, dir="RC", type="KMV", target=) */
static Status bi_count_distinct_approx(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    int dir;
    TRY(distinct_data(I, a, 3, &x));
    TRY(distinct_parse_dir(I, a, 1, &dir));
    TRY(distinct_parse_type(I, a, 2));
    return distinct_dir(I, x, dir, out);
}

static Status bi_row_count_distinct(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    return distinct_dir(I, x, DIR_R, out);
}

static Status bi_col_count_distinct(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(arg_matrix(I, a, 0, &x));
    return distinct_dir(I, x, DIR_C, out);
}

/* row/colCountDistinctApprox(data, type="KMV", target=) */
static Status bi_row_count_distinct_approx(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(distinct_data(I, a, 2, &x));
    TRY(distinct_parse_type(I, a, 1));
    return distinct_dir(I, x, DIR_R, out);
}

static Status bi_col_count_distinct_approx(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    TRY(distinct_data(I, a, 2, &x));
    TRY(distinct_parse_type(I, a, 1));
    return distinct_dir(I, x, DIR_C, out);
}

const BuiltinDef bi_distinct_table[] = {
    {"countDistinct", bi_count_distinct, "data,dir,target", 0, BIND_NAMED, 1, 0},
    {"countDistinctApprox", bi_count_distinct_approx, "data,dir,type,target", 0, BIND_NAMED, 1, 0},
    {"rowCountDistinct", bi_row_count_distinct, "X", 1, BIND_POS, 1, 0},
    {"colCountDistinct", bi_col_count_distinct, "X", 1, BIND_POS, 1, 0},
    {"rowCountDistinctApprox", bi_row_count_distinct_approx, "data,type,target", 0, BIND_NAMED, 1, 0},
    {"colCountDistinctApprox", bi_col_count_distinct_approx, "data,type,target", 0, BIND_NAMED, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
