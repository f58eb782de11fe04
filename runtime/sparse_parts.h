/* SPDX-License-Identifier: Apache-2.0
 * How the sparse kernels (sparse_ops.c, sparse_mm.c) cut their work into
 * parts for the thread pool, and the column searches within a CSR row.
 * Private to those two files. The cuts depend only on the sizes, never on
 * the thread count's effect on order, so results are the same on any
 * number of threads. */
#ifndef DML_RUNTIME_SPARSE_PARTS_H
#define DML_RUNTIME_SPARSE_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/sparse.h"
#include "interp.h"
#include "pool.h"

/* Work (non-zeros plus rows) below which a kernel stays on one thread:
 * starting two threads costs ~20-40 us (pool.c), this much work ~100 us. */
enum { SP_PAR_MIN = 1 << 17, SP_MAX_PARTS = 64 };

/* Parts for 'work' units on I's threads: 1 when small, else a few per
 * thread so that a late helper does not hold up the call (pool.h). */
static inline int n_parts(const Interp *I, int64_t work)
{
    if (work < SP_PAR_MIN)
        return 1;
    int t = pool_threads(I);
    if (t <= 1)
        return 1;
    int p = 4 * t;
    return p > SP_MAX_PARTS ? SP_MAX_PARTS : p;
}

/* Parts for kernels split by output columns: one per thread, as every part
 * walks all the row pointers. */
static inline int n_col_parts(const Interp *I, int64_t work)
{
    return n_parts(I, work) == 1 ? 1 : pool_threads(I);
}

/* Row bounds b[0..parts] cutting rows [r0, r1) of X into parts of about
 * equal rows + nnz. */
static inline void row_cuts_range(const SpMat *X, int64_t r0, int64_t r1, int parts, int64_t *b)
{
    int64_t base = X->rowptr[r0] + r0, total = X->rowptr[r1] + r1 - base;
    b[0] = r0;
    for (int k = 1; k < parts; k++) {
        int64_t want = base + total / parts * k, lo = b[k - 1], hi = r1;
        while (lo < hi) {      /* first row i with rowptr[i] + i >= want */
            int64_t mid = lo + (hi - lo) / 2;
            if (X->rowptr[mid] + mid < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        b[k] = lo;
    }
    b[parts] = r1;
}

/* The same over all of X's rows. */
static inline void row_cuts(const SpMat *X, int parts, int64_t *b)
{
    row_cuts_range(X, 0, X->rows, parts, b);
}

/* Column bounds b[0..parts] cutting [0, n) evenly. */
static inline void col_cuts(int64_t n, int parts, int64_t *b)
{
    for (int k = 0; k <= parts; k++)
        b[k] = n / parts * k + (n % parts) * k / parts;
}

/* First entry of row i (entries [p0, p1)) whose column is >= c. */
static inline int64_t lower_col(const int32_t *ci, int64_t p0, int64_t p1, int64_t c)
{
    while (p0 < p1) {
        int64_t mid = p0 + (p1 - p0) / 2;
        if (ci[mid] < c)
            p0 = mid + 1;
        else
            p1 = mid;
    }
    return p0;
}

/* lower_col for a part's first entry in a row: the search starts where c
 * would fall if the row's columns were spread evenly over [0, ncols) (the
 * usual case: a step or two away) and gallops from there, so it costs
 * O(log distance) instead of a search over the whole row. */
static inline int64_t part_start(const int32_t *ci, int64_t p0, int64_t p1, int64_t c, int64_t ncols)
{
    if (p0 >= p1)
        return p0;
    int64_t g = p0 + (int64_t)((double)c / (double)ncols * (double)(p1 - p0));
    if (g >= p1)
        g = p1 - 1;
    int64_t lo, hi, step = 1;
    if (ci[g] < c) {            /* the answer is in (g, p1] */
        lo = g + 1;
        while (g + step < p1 && ci[g + step] < c) {
            lo = g + step + 1;
            step *= 2;
        }
        hi = g + step < p1 ? g + step : p1;
    } else {                    /* the answer is in [p0, g] */
        hi = g;
        while (g - step >= p0 && ci[g - step] >= c) {
            hi = g - step;
            step *= 2;
        }
        lo = g - step >= p0 ? g - step + 1 : p0;
    }
    return lower_col(ci, lo, hi, c);
}

/* Whether row i of X stores column c. */
static inline bool has_col(const SpMat *X, int64_t i, int64_t c)
{
    int64_t p = lower_col(X->colidx, X->rowptr[i], X->rowptr[i + 1], c);
    return p < X->rowptr[i + 1] && X->colidx[p] == c;
}

#endif
