/* SPDX-License-Identifier: Apache-2.0
 * Construction builtins: matrix, rand, seq, sample, diag, table/ctable,
 * outer, replace, lower.tri/upper.tri, toOneHot. Results are fresh matrices (or a
 * new reference to an input when nothing changes). Thread-safe. */
#include "registry.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/frame.h"
#include "../runtime/ops.h"
#include "../runtime/sparse_ops.h"

#define LL(x) ((long long)(x))

/* The RNG for a call: the interpreter's stream for seed -1, else 'local'
 * seeded with 'seed' (reproducible). */
static Rng *pick_rng(Interp *I, int64_t seed, Rng *local)
{
    if (seed == -1)
        return &I->rng;
    rng_seed(local, (uint64_t)seed);
    return local;
}

/* ================================ matrix ================================ */

/* Parse the numbers of a matrix("1 2 3", ...) literal into *vals (malloc'd). */
static Status parse_matrix_string(Interp *I, const char *s, double **vals, int64_t *n)
{
    int64_t cap = 16, k = 0;
    double *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return err_set(I, "matrix(): out of memory");
    const char *p = s;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *tok = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        char buf[128];
        size_t len = (size_t)(p - tok);
        if (len >= sizeof buf) {
            free(v);
            return err_set(I, "matrix(): invalid number '%.40s...' in matrix string", tok);
        }
        memcpy(buf, tok, len);
        buf[len] = '\0';
        double d;
        /* cells are read with Java's Double.parseDouble upstream: "3d" and
         * "Infinity" are numbers, C's "inf" and "nan" are not */
        if (!ops_parse_java_double(buf, &d)) {
            free(v);
            return err_set(I, "matrix(): invalid number '%s' in matrix string", buf);
        }
        if (k == cap) {
            cap *= 2;
            double *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                free(v);
                return err_set(I, "matrix(): out of memory");
            }
            v = nv;
        }
        v[k++] = d;
    }
    *vals = v;
    *n = k;
    return ST_OK;
}

/* Fill in a missing dimension from the cell count K. */
static Status infer_dims(Interp *I, bool hr, bool hc, int64_t *r, int64_t *c, int64_t K)
{
    if (hr && hc)
        return ST_OK;
    if (!hr && !hc)
        return err_set(I, "matrix(): rows or cols must be given");
    int64_t g = hr ? *r : *c;
    if (g == 0 ? K != 0 : K % g != 0)
        return err_set(I, "matrix(): %lld cells cannot be arranged in %lld %s", LL(K), LL(g), hr ? "rows" : "cols");
    int64_t o = g == 0 ? 0 : K / g;
    if (hr) *c = o; else *r = o;
    return ST_OK;
}

/* matrix(data, rows=, cols=, byrow=TRUE) */
static Status bi_matrix(Interp *I, const BArgs *a, Value *out)
{
    Value d = a->v[0];
    bool hr = arg_given(a, 1), hc = arg_given(a, 2), byrow;
    int64_t r = -1, c = -1;
    TRY(arg_int(I, a, 1, -1, &r));
    TRY(arg_int(I, a, 2, -1, &c));
    TRY(arg_bool(I, a, 3, true, &byrow));
    if ((hr && r < 0) || (hc && c < 0))
        return err_set(I, "matrix(): dimensions must be non-negative, got rows=%lld, cols=%lld", LL(r), LL(c));
    Matrix *m;
    if (d.kind == VAL_INT || d.kind == VAL_DOUBLE || d.kind == VAL_BOOL) {
        if (!hr || !hc)
            return err_set(I, "matrix(): rows and cols must both be given when data is a scalar");
        if (!(m = mat_alloc(I, r, c)))
            return ST_ERR;
        double x = val_num(d);
        int64_t n = mat_len(m);
        for (int64_t i = 0; i < n; i++)
            m->data[i] = x;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (d.kind == VAL_STRING) {
        double *vals = NULL;
        int64_t K = 0;
        TRY(parse_matrix_string(I, d.s->s, &vals, &K));
        if (infer_dims(I, hr, hc, &r, &c, K) != ST_OK) {
            free(vals);
            return ST_ERR;
        }
        if (r * c != K) {
            free(vals);
            return err_set(I, "Invalid matrix string intialization: dimensions=[%lldx%lld] vs numValues=%lld",
                           LL(r), LL(c), LL(K));
        }
        m = mat_alloc(I, r, c);
        if (m && K)
            memcpy(m->data, vals, (size_t)K * sizeof *vals);
        free(vals);
        if (!m)
            return ST_ERR;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (d.kind != VAL_MATRIX)
        return arg_type_error(I, a, 0, "a scalar, string or matrix");
    const Matrix *x = d.m;
    int64_t K = mat_len(x);
    if (!hr && !hc) {
        r = x->rows;
        c = x->cols;
    }
    TRY(infer_dims(I, hr, hc, &r, &c, K));
    if (r != 0 && c > INT64_MAX / r)
        return err_oom(I, r, c);
    if (r * c != K)
        return err_set(I, "Reshape matrix requires consistent numbers of input/output cells (%lld:%lld).",
                       LL(K), LL(r * c));
    if (r == x->rows && c == x->cols) {
        *out = val_ref(d);
        return ST_OK;
    }
    if (!(m = mat_alloc(I, r, c)))
        return ST_ERR;
    if (byrow) {
        if (K)
            memcpy(m->data, x->data, (size_t)K * sizeof(double));
        *out = val_matrix_take(m);
        return ST_OK;
    }
    /* column-major read and write: cell k (column-major) of the output is
     * cell k (column-major) of the input */
    int64_t xr = x->rows;
    for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < r; i++) {
            int64_t k = j * r + i;
            m->data[i * c + j] = x->data[(k % xr) * x->cols + k / xr];
        }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================= rand ================================= */

/* Cells up to which a sparse rand draws per cell (time ~1 s here). */
#define RAND_CELLWISE_MAX ((double)(1 << 27))

/* rand(rows=1, cols=1, min=0.0, max=1.0, pdf="uniform", sparsity=1.0, seed=-1, lambda=1.0) */
static Status bi_rand(Interp *I, const BArgs *a, Value *out)
{
    int64_t r, c, seed;
    double lo, hi, sp, lambda;
    const char *pdf;
    TRY(arg_int(I, a, 0, 1, &r));
    TRY(arg_int(I, a, 1, 1, &c));
    TRY(arg_double(I, a, 2, 0.0, &lo));
    TRY(arg_double(I, a, 3, 1.0, &hi));
    TRY(arg_string(I, a, 4, "uniform", &pdf));
    TRY(arg_double(I, a, 5, 1.0, &sp));
    TRY(arg_int(I, a, 6, -1, &seed));
    TRY(arg_double(I, a, 7, 1.0, &lambda));
    if (r < 0 || c < 0)
        return err_set(I, "rand(): dimensions must be non-negative, got rows=%lld, cols=%lld", LL(r), LL(c));
    if (!(sp >= 0.0 && sp <= 1.0))
        return err_set(I, "rand(): sparsity must be between 0 and 1, got %g", sp);
    /* Upstream's names (ProbabilityDistribution, matched case-insensitively):
     * UNIFORM, NORMAL, POISSON, and the counter-based CB_UNIFORM, CB_NORMAL,
     * whose cell values depend only on the seed and the cell's position. */
    int kind;
    if (!strcasecmp(pdf, "uniform")) kind = 0;
    else if (!strcasecmp(pdf, "normal")) kind = 1;
    else if (!strcasecmp(pdf, "poisson")) kind = 2;
    else if (!strcasecmp(pdf, "cb_uniform")) kind = 3;
    else if (!strcasecmp(pdf, "cb_normal")) kind = 4;
    else return err_set(I, "rand(): pdf must be \"uniform\", \"normal\", \"poisson\", \"cb_uniform\" or "
                           "\"cb_normal\", got \"%s\"", pdf);
    if (kind == 2 && !(lambda > 0 && isfinite(lambda)))
        return err_set(I, "rand(): lambda must be positive for pdf=\"poisson\", got %g", lambda);
    Rng local;
    if (kind < 3 && sp < 1.0) {
        /* Held sparse when the expected count says so (doc/sparse.md):
         * generated straight into CSR, with the dense loop's draws (one
         * uniform per cell, so a seed gives the same matrix in either
         * form) up to RAND_CELLWISE_MAX cells; above, the gaps between
         * non-zeros are drawn (one uniform per non-zero: the issue's
         * 10^10-cell example in about a second), a stream of its own
         * (doc/sparse-plan.md 7.). */
        SpRandArgs ra = {.rows = r, .cols = c, .pdf = kind == 0 ? SP_PDF_UNIFORM : kind == 1 ? SP_PDF_NORMAL
                                                                                            : SP_PDF_POISSON,
                         .min = lo, .max = hi, .sparsity = sp, .lambda = lambda};
        double cells = (double)r * (double)c, expect = sp * cells;
        if (r > 0 && c > 0 && expect < 9e18 && sp_prefer_sparse(r, c, (int64_t)expect)) {
            Rng *g = pick_rng(I, seed, &local);
            Matrix *m = mat_from_sp_take(I, cells > RAND_CELLWISE_MAX ? sp_rand_skip(g, &ra)
                                                                      : sp_rand_cellwise(g, &ra), "rand");
            if (!m)
                return ST_ERR;
            *out = val_matrix_take(m);
            return ST_OK;
        }
    }
    Matrix *m = mat_alloc(I, r, c);
    if (!m)
        return ST_ERR;
    Rng *g = pick_rng(I, seed, &local);
    int64_t n = mat_len(m);
    /* min > max is not checked, as upstream: cells are min + (max - min) * u,
     * between max and min (COMPAT.md 11). */
    double *x = m->data, w = hi - lo;
    if (kind >= 3) {
        uint64_t key = rng_next(g);
        for (int64_t i = 0; i < n; i++) {
            uint64_t b = rng_mix3(key, (uint64_t)i, 0);
            if (sp < 1.0 && !((double)(rng_mix3(key, (uint64_t)i, 1) >> 11) * 0x1.0p-53 < sp)) {
                x[i] = 0.0;
                continue;
            }
            double u = (double)(b >> 11) * 0x1.0p-53;
            if (kind == 3) {
                x[i] = w == 0 ? lo : lo + w * u;
            } else {    /* Box-Muller over two counter-based uniforms */
                double v = (double)(rng_mix3(key, (uint64_t)i, 2) >> 11) * 0x1.0p-53;
                x[i] = sqrt(-2.0 * log1p(-u)) * cos(2.0 * M_PI * v);
            }
        }
        *out = val_matrix_take(sp < 1.0 ? mat_maybe_sparse_take(m, -1) : m);
        return ST_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        if (sp < 1.0 && !(rng_uniform(g) < sp)) {
            x[i] = 0.0;
            continue;
        }
        switch (kind) {
        case 0: x[i] = w == 0 ? lo : lo + w * rng_uniform(g); break;   /* min == max: no draw */
        case 1: x[i] = rng_normal(g); break;
        default: x[i] = rng_poisson(g, lambda); break;
        }
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================= seq ================================== */

/* seq(from, to[, incr]) */
static Status bi_seq(Interp *I, const BArgs *a, Value *out)
{
    double from, to, incr;
    TRY(arg_double(I, a, 0, 0, &from));
    TRY(arg_double(I, a, 1, 0, &to));
    TRY(arg_double(I, a, 2, from <= to ? 1.0 : -1.0, &incr));
    if (!isfinite(from) || !isfinite(to) || !isfinite(incr))
        return err_set(I, "seq(): arguments must be finite numbers (from=%g, to=%g, incr=%g)", from, to, incr);
    int64_t n;
    if (from == to) {
        n = 1;
    } else {
        if ((from > to && incr >= 0) || (from < to && incr <= 0))
            return err_set(I, "Wrong sign for the increment in a call to seq()");
        /* Upstream (LibMatrixDatagen.generateSequence) takes no round-off
         * slack: seq(0, 0.3, 0.1) has 3 cells, as (0.3-0)/0.1 < 3. */
        double len = floor((to - from) / incr) + 1;
        if (len > 9.0e15)
            return err_set(I, "seq(): sequence too long (%g elements)", len);
        n = (int64_t)len;
    }
    Matrix *m = mat_alloc(I, n, 1);
    if (!m)
        return ST_ERR;
    /* Cumulative, as upstream: cell i is from + incr + ... + incr, so
     * seq(0, 1, 0.1) holds 0.7999999999999999 where from + 8*incr is 0.8. */
    double cur = from;
    for (int64_t i = 0; i < n; i++) {
        m->data[i] = cur;
        cur += incr;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================ sample ================================ */

/* sample(range, size[, replace=FALSE][, seed]) */
static Status bi_sample(Interp *I, const BArgs *a, Value *out)
{
    int64_t range, size, seed = -1;
    bool replace = false;
    TRY(arg_int(I, a, 0, 0, &range));
    TRY(arg_int(I, a, 1, 0, &size));
    if (arg_given(a, 2)) {
        if (a->v[2].kind == VAL_BOOL) {
            replace = a->v[2].b;
            TRY(arg_int(I, a, 3, -1, &seed));
        } else {
            if (arg_given(a, 3))
                return err_set(I, "sample(): the third argument must be a boolean (replace) when a seed follows");
            TRY(arg_int(I, a, 2, -1, &seed));
        }
    }
    if (range < 0 || size < 0)
        return err_set(I, "sample(): range and size must be non-negative, got range=%lld, size=%lld",
                       LL(range), LL(size));
    if (!replace && size > range)
        return err_set(I, "Sample (size=%lld) larger than population (size=%lld) can only be generated "
                       "with replacement.", LL(size), LL(range));
    if (replace && size > 0 && range == 0)
        return err_set(I, "sample(): cannot draw from an empty range");
    Matrix *m = mat_alloc(I, size, 1);
    if (!m)
        return ST_ERR;
    Rng local;
    Rng *g = pick_rng(I, seed, &local);
    double *x = m->data;
    if (replace) {
        for (int64_t i = 0; i < size; i++)
            x[i] = (double)(1 + rng_below(g, (uint64_t)range));
    } else if (range <= 4 * size || range <= (1 << 20)) {
        /* partial Fisher-Yates over 1..range */
        int64_t *p = malloc((size_t)(range ? range : 1) * sizeof *p);
        if (!p) {
            mat_release(m);
            return err_set(I, "sample(): out of memory");
        }
        for (int64_t i = 0; i < range; i++)
            p[i] = i + 1;
        for (int64_t i = 0; i < size; i++) {
            int64_t j = i + (int64_t)rng_below(g, (uint64_t)(range - i));
            int64_t t = p[i]; p[i] = p[j]; p[j] = t;
            x[i] = (double)p[i];
        }
        free(p);
    } else {
        /* Floyd's algorithm with a hash set, then a shuffle */
        uint64_t cap = 16;
        while (cap < (uint64_t)size * 2) cap <<= 1;
        int64_t *set = calloc(cap, sizeof *set);
        if (!set) {
            mat_release(m);
            return err_set(I, "sample(): out of memory");
        }
        int64_t k = 0;
        for (int64_t j = range - size + 1; j <= range; j++) {
            int64_t t = 1 + (int64_t)rng_below(g, (uint64_t)j);
            for (int pass = 0; pass < 2; pass++) {
                uint64_t h = ((uint64_t)t * 0x9E3779B97F4A7C15ULL) & (cap - 1);
                bool found = false;
                while (set[h]) {
                    if (set[h] == t) { found = true; break; }
                    h = (h + 1) & (cap - 1);
                }
                if (!found) {
                    set[h] = t;
                    x[k++] = (double)t;
                    break;
                }
                t = j;      /* t taken: take j instead (never taken before) */
            }
        }
        free(set);
        for (int64_t i = size - 1; i > 0; i--) {
            int64_t j = (int64_t)rng_below(g, (uint64_t)i + 1);
            double t = x[i]; x[i] = x[j]; x[j] = t;
        }
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================= diag ================================= */

/* diag(M) */
static Status bi_diag(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *m;
    TRY(arg_matrix_any(I, a, 0, &x));
    if (x->cols == 1 || x->rows == x->cols) {
        /* sparse: a sparse input, or a vector whose n x n result is sparse
         * by the format rule (at most n non-zeros) */
        bool vec = x->cols == 1;
        if (x->sp || (vec && sp_prefer_sparse(x->rows, x->rows, mat_nnz(x)))) {
            SpMat *own = x->sp ? NULL : sp_from_dense(x->data, x->rows, x->cols, -1);
            const SpMat *xs = x->sp ? x->sp : own;
            SpMat *r = !xs ? NULL : vec ? sp_diag_from_vector(xs) : sp_diag_of_matrix(xs);
            sp_free(own);
            if (!(m = mat_from_sp_take(I, r, "diag")))
                return ST_ERR;
            *out = val_matrix_take(m);
            return ST_OK;
        }
    }
    if (x->cols == 1) {
        int64_t n = x->rows;
        if (!(m = mat_alloc_zero(I, n, n)))
            return ST_ERR;
        for (int64_t i = 0; i < n; i++)
            m->data[i * n + i] = x->data[i];
    } else if (x->rows == x->cols) {
        int64_t n = x->rows;
        if (!(m = mat_alloc(I, n, 1)))
            return ST_ERR;
        for (int64_t i = 0; i < n; i++)
            m->data[i] = x->data[i * n + i];
    } else {
        return err_set(I, "diag can either: (1) create diagonal matrix from (n x 1) matrix, or (2) take diagonal "
                       "from a square matrix. Error invoking diag on matrix with %lld rows and %lld columns.",
                       LL(x->rows), LL(x->cols));
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ================================= table ================================ */

/* A matrix-or-scalar operand of table(): data (NULL for a scalar), its row
 * stride, and the value of a scalar. */
typedef struct Opnd { const double *p; int64_t ld; double s; } Opnd;
/* Cell (i, j) of the walk over the first matrix operand's cells. */
static inline double opnd_at(const Opnd *o, int64_t i, int64_t j) { return o->p ? o->p[i * o->ld + j] : o->s; }

/* Entry k of table()'s operands (k = row * ncol + col): false when it does
 * not count (a NaN index, or an index past the output's d1 x d2); else its
 * 1-based indices and its weight. One rule for the dense and the sparse
 * result. */
static inline bool table_entry(const Opnd *o, int64_t k, int64_t ncol, int64_t d1, int64_t d2, int64_t *ia,
                               int64_t *ib, double *w)
{
    int64_t ci = k / ncol, cc = k % ncol;
    double x = opnd_at(&o[0], ci, cc), y = opnd_at(&o[1], ci, cc);
    if (isnan(x) || isnan(y))
        return false;
    *ia = (int64_t)x;
    *ib = (int64_t)y;
    if (*ia > d1 || *ib > d2)
        return false;
    *w = opnd_at(&o[2], ci, cc);
    return true;
}

/* table_core's result built as CSR: the (row, column, weight) entries in
 * the walk's order, sorted by row and column with a stable counting sort,
 * so that a cell's weights are added in the order the dense loop adds
 * them; cells that sum to zero are not stored. */
static Status table_sparse(Interp *I, const char *fname, const Opnd *o, int64_t L, int64_t ncol, int64_t d1,
                           int64_t d2, Value *out)
{
    int64_t *ri = malloc(sizeof(int64_t) * (size_t)(L ? L : 1)), *cnt = calloc((size_t)d2 + 1, sizeof(int64_t));
    int64_t *rcnt = calloc((size_t)d1 + 1, sizeof(int64_t)), *ord = malloc(sizeof(int64_t) * (size_t)(L ? L : 1));
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(L ? L : 1));
    int32_t *cj = malloc(sizeof(int32_t) * (size_t)(L ? L : 1));
    double *w = malloc(sizeof(double) * (size_t)(L ? L : 1));
    SpMat *S = NULL;
    Status st = ST_OK;
    if (!ri || !cnt || !rcnt || !ord || !tmp || !cj || !w) {
        st = err_set(I, "%s(): out of memory", fname);
        goto done;
    }
    int64_t n = 0;
    for (int64_t k = 0; k < L; k++) {
        int64_t ia, ib;
        if (!table_entry(o, k, ncol, d1, d2, &ia, &ib, &w[n]))
            continue;
        ri[n] = ia - 1;
        cj[n] = (int32_t)(ib - 1);
        n++;
    }
    /* stable sort by column, then by row: entries of a cell stay in order */
    for (int64_t k = 0; k < n; k++)
        cnt[cj[k] + 1]++;
    for (int64_t j = 0; j < d2; j++)
        cnt[j + 1] += cnt[j];
    for (int64_t k = 0; k < n; k++)
        tmp[cnt[cj[k]]++] = k;
    for (int64_t k = 0; k < n; k++)
        rcnt[ri[k] + 1]++;
    for (int64_t i = 0; i < d1; i++)
        rcnt[i + 1] += rcnt[i];
    for (int64_t k = 0; k < n; k++)
        ord[rcnt[ri[tmp[k]]]++] = tmp[k];
    if (!(S = sp_new(d1, d2, n))) {
        st = err_set(I, "%s(): out of memory", fname);
        goto done;
    }
    int64_t e = 0, k = 0;
    for (int64_t i = 0; i < d1; i++) {
        while (k < n && ri[ord[k]] == i) {
            int32_t c = cj[ord[k]];
            double sum = 0;
            while (k < n && ri[ord[k]] == i && cj[ord[k]] == c)
                sum += w[ord[k++]];
            if (sum != 0) {
                S->colidx[e] = c;
                S->vals[e++] = sum;
            }
        }
        S->rowptr[i + 1] = e;
    }
    S->nnz = e;
done:
    free(ri);
    free(cnt);
    free(rcnt);
    free(ord);
    free(tmp);
    free(cj);
    free(w);
    if (st != ST_OK)
        return st;
    Matrix *m = mat_from_sp_take(I, S, fname);
    if (!m)
        return ST_ERR;
    *out = val_matrix_take(m);
    return ST_OK;
}

static Status table_core(Interp *I, const char *fname, Value va, Value vb, Value vw, bool has_w, int64_t od1,
                         int64_t od2, bool has_od, Value *out)
{
    Value vs[3] = {va, vb, vw};
    Opnd o[3];
    int64_t R = -1, C = -1;
    const char *what[3] = {"A", "B", "W"};
    for (int k = 0; k < 3; k++) {
        if (k == 2 && !has_w) {
            o[k].p = NULL;
            o[k].ld = 0;
            o[k].s = 1.0;
            continue;
        }
        Value v = vs[k];
        if (v.kind == VAL_MATRIX) {
            /* The walk covers the first matrix operand's cells, reading the
             * others at the same (i, j), as upstream's ctable does at run
             * time: an operand with more rows or columns is fine (upstream's
             * builtins pass such), one with fewer is refused. */
            if (R < 0) {
                R = v.m->rows;
                C = v.m->cols;
            } else if (v.m->rows < R || v.m->cols < C) {
                return err_set(I, "Mismatch in matrix dimensions of parameters for function TABLE: %s(): "
                               "%lldx%lld vs %lldx%lld (%s)", fname,
                               LL(R), LL(C), LL(v.m->rows), LL(v.m->cols), what[k]);
            }
            o[k].p = v.m->data;
            o[k].ld = v.m->cols;
        } else if (val_is_number(v) || v.kind == VAL_BOOL) {
            o[k].p = NULL;
            o[k].ld = 0;
            o[k].s = val_num(v);
        } else {
            return err_set(I, "%s(): argument %s must be a matrix or a number, got %s", fname, what[k],
                           val_kind_name(v.kind));
        }
    }
    int64_t L = R < 0 ? 1 : R * C, ncol = R < 0 ? 1 : C;
    int64_t maxa = 0, maxb = 0;
    for (int64_t k = 0; k < L; k++) {
        int64_t ci = k / ncol, cj = k % ncol;
        double x = opnd_at(&o[0], ci, cj), y = opnd_at(&o[1], ci, cj);
        if (isnan(x) || isnan(y))
            continue;
        if (!(x >= 1) || !(y >= 1))     /* truncates to a value <= 0 */
            return err_set(I, "Erroneous input while computing the contingency table (one of the value <= zero): "
                           "%.0f %.0f", trunc(x) + 0.0, trunc(y) + 0.0);
        if (x >= 9.2e18 || y >= 9.2e18)
            return err_set(I, "%s(): value too large for a contingency table index: %g %g", fname, x, y);
        int64_t ia = (int64_t)x, ib = (int64_t)y;
        if (ia > maxa) maxa = ia;
        if (ib > maxb) maxb = ib;
    }
    int64_t d1 = has_od ? od1 : maxa, d2 = has_od ? od2 : maxb;
    if (d1 > 0 && d2 > 0 && sp_prefer_sparse(d1, d2, d2 > INT64_MAX / d1 || L < d1 * d2 ? L : d1 * d2))
        return table_sparse(I, fname, o, L, ncol, d1, d2, out);
    Matrix *m = mat_alloc_zero(I, d1, d2);
    if (!m)
        return ST_ERR;
    for (int64_t k = 0; k < L; k++) {
        int64_t ia, ib;
        double w;
        if (table_entry(o, k, ncol, d1, d2, &ia, &ib, &w))
            m->data[(ia - 1) * d2 + (ib - 1)] += w;
    }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* table(A, B[, W][, odim1, odim2][, outputEmptyBlocks]) / ctable(...) */
static Status bi_table(Interp *I, const BArgs *a, Value *out)
{
    int n = 0;
    while (n < a->n && arg_given(a, n))
        n++;
    for (int k = n; k < a->n; k++)
        if (arg_given(a, k))
            return err_set(I, "%s(): unexpected missing argument before argument %d", a->def->name, k + 1);
    if (n >= 3 && a->v[n - 1].kind == VAL_BOOL)
        n--;    /* outputEmptyBlocks: no effect for dense results */
    int64_t od1 = 0, od2 = 0;
    switch (n) {
    case 2: return table_core(I, a->def->name, a->v[0], a->v[1], val_none(), false, 0, 0, false, out);
    case 3: return table_core(I, a->def->name, a->v[0], a->v[1], a->v[2], true, 0, 0, false, out);
    case 4:
        TRY(arg_int(I, a, 2, 0, &od1));
        TRY(arg_int(I, a, 3, 0, &od2));
        if (od1 < 0 || od2 < 0)
            return err_set(I, "%s(): output dimensions must be non-negative", a->def->name);
        return table_core(I, a->def->name, a->v[0], a->v[1], val_none(), false, od1, od2, true, out);
    case 5:
        TRY(arg_int(I, a, 3, 0, &od1));
        TRY(arg_int(I, a, 4, 0, &od2));
        if (od1 < 0 || od2 < 0)
            return err_set(I, "%s(): output dimensions must be non-negative", a->def->name);
        return table_core(I, a->def->name, a->v[0], a->v[1], a->v[2], true, od1, od2, true, out);
    default: return err_set(I, "%s(): expects 2 to 6 arguments, got %d", a->def->name, a->n);
    }
}

/* toOneHot(X, numClasses) */
static Status bi_toOneHot(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    int64_t nc;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_int(I, a, 1, 0, &nc));
    int64_t n = mat_len(x);
    for (int64_t i = 0; i < n; i++)
        if (x->data[i] > (double)nc)
            return err_set(I, "numClasses must be >= largest value in X to prevent cropping");
    Matrix *s = mat_alloc(I, n, 1);
    if (!s)
        return ST_ERR;
    for (int64_t i = 0; i < n; i++)
        s->data[i] = (double)(i + 1);
    Value vs = val_matrix_take(s);
    Status st = table_core(I, "toOneHot", vs, a->v[0], val_none(), false, n, nc, true, out);
    val_release(vs);
    return st;
}

/* ================================= outer ================================ */

/* double -> int64 without undefined behaviour (NaN -> 0, saturating). */
static inline int64_t d2l(double d)
{
    if (isnan(d)) return 0;
    if (d >= 9.223372036854775807e18) return INT64_MAX;
    if (d <= -9.223372036854775808e18) return INT64_MIN;
    return (int64_t)d;
}

/* outer(a, b, "op") */
static Status bi_outer(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *y;
    Value ox, oy;
    const char *op;
    TRY(arg_string(I, a, 2, NULL, &op));
    TRY(arg_matrix_or_scalar(I, a, 0, &x, &ox));
    if (arg_matrix_or_scalar(I, a, 1, &y, &oy) != ST_OK) {
        val_release(ox);
        return ST_ERR;
    }
    Status st = ST_OK;
    Matrix *m = NULL;
    static const struct { const char *s; BinOp op; } ops[] = {
        {"+", OP_ADD}, {"-", OP_SUB}, {"*", OP_MUL}, {"/", OP_DIV}, {"^", OP_POW}, {"%%", OP_MOD},
        {"%/%", OP_INTDIV}, {"<", OP_LT}, {"<=", OP_LE}, {">", OP_GT}, {">=", OP_GE}, {"==", OP_EQ},
        {"!=", OP_NE}, {"&", OP_AND}, {"|", OP_OR}, {"&&", OP_AND}, {"||", OP_OR},
    };
    /* >= 0: BinOp; 100+: min max bitwAnd bitwOr bitwXor bitwShiftL bitwShiftR xor log (the
     * last two are upstream OpOp2 opcodes too) */
    int kind = -1;
    static const char *const extra[] = {"min",        "max",        "bitwAnd", "bitwOr", "bitwXor",
                                        "bitwShiftL", "bitwShiftR", "xor",     "log"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (!strcmp(op, ops[k].s))
            kind = (int)ops[k].op;
    for (int k = 0; k < (int)(sizeof extra / sizeof extra[0]); k++)
        if (!strcmp(op, extra[k]))
            kind = 100 + k;
    if (kind < 0) {
        st = err_set(I, "outer(): unsupported operator \"%s\"", op);
        goto done;
    }
    if (x->cols != 1 || y->rows != 1) {
        st = err_set(I, "Outer vector operations require a common dimension of one: %lldx%lld o %lldx%lld.",
                     LL(x->rows), LL(x->cols), LL(y->rows), LL(y->cols));
        goto done;
    }
    int64_t R = x->rows, C = y->cols;
    if (!(m = mat_alloc(I, R, C))) {
        st = ST_ERR;
        goto done;
    }
    for (int64_t i = 0; i < R; i++) {
        double u = x->data[i];
        double *row = m->data + i * C;
        const double *w = y->data;
        switch (kind) {
        case OP_ADD: for (int64_t j = 0; j < C; j++) row[j] = u + w[j]; break;
        case OP_SUB: for (int64_t j = 0; j < C; j++) row[j] = u - w[j]; break;
        case OP_MUL: for (int64_t j = 0; j < C; j++) row[j] = u * w[j]; break;
        case OP_DIV: for (int64_t j = 0; j < C; j++) row[j] = u / w[j]; break;
        case 100: for (int64_t j = 0; j < C; j++) row[j] = (isnan(u) || isnan(w[j])) ? NAN : (u < w[j] ? u : w[j]); break;
        case 101: for (int64_t j = 0; j < C; j++) row[j] = (isnan(u) || isnan(w[j])) ? NAN : u > w[j] ? u : w[j]; break;
        case 102: for (int64_t j = 0; j < C; j++) row[j] = (double)(d2l(u) & d2l(w[j])); break;
        case 103: for (int64_t j = 0; j < C; j++) row[j] = (double)(d2l(u) | d2l(w[j])); break;
        case 104: for (int64_t j = 0; j < C; j++) row[j] = (double)(d2l(u) ^ d2l(w[j])); break;
        case 105: for (int64_t j = 0; j < C; j++) row[j] = (double)(int64_t)((uint64_t)d2l(u) << (d2l(w[j]) & 63)); break;
        case 106: for (int64_t j = 0; j < C; j++) row[j] = (double)(d2l(u) >> (d2l(w[j]) & 63)); break;
        case 107: for (int64_t j = 0; j < C; j++) row[j] = (u != 0) != (w[j] != 0); break;
        case 108: for (int64_t j = 0; j < C; j++) row[j] = log(u) / log(w[j]); break;
        default: for (int64_t j = 0; j < C; j++) row[j] = ops_apply_d((BinOp)kind, u, w[j]); break;
        }
    }
    *out = val_matrix_take(m);
done:
    val_release(ox);
    val_release(oy);
    return st;
}

/* ================================ replace =============================== */

/* replace(target=M, pattern=s, replacement=s); a frame target replaces
 * cells by their text (frame_replace). */
static Status bi_replace(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    double pat, rep;
    if (a->v[0].kind != VAL_FRAME)
        TRY(arg_matrix(I, a, 0, &x));
    if (!arg_given(a, 1))
        return err_set(I, "replace(): named parameter 'pattern' missing");
    if (!arg_given(a, 2))
        return err_set(I, "replace(): named parameter 'replacement' missing");
    if (a->v[0].kind == VAL_FRAME)
        return frame_replace(I, a->v[0].f, a->v[1], a->v[2], out);
    TRY(arg_double(I, a, 1, 0, &pat));
    TRY(arg_double(I, a, 2, 0, &rep));
    Matrix *m = mat_alloc(I, x->rows, x->cols);
    if (!m)
        return ST_ERR;
    int64_t n = mat_len(x);
    if (isnan(pat))
        for (int64_t i = 0; i < n; i++) m->data[i] = isnan(x->data[i]) ? rep : x->data[i];
    else
        for (int64_t i = 0; i < n; i++) m->data[i] = x->data[i] == pat ? rep : x->data[i];
    *out = val_matrix_take(m);
    return ST_OK;
}

/* ============================ lower/upper.tri =========================== */

static Status tri(Interp *I, const BArgs *a, Value *out, bool lower)
{
    Matrix *x;
    bool dg, vals;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_bool(I, a, 1, false, &dg));
    TRY(arg_bool(I, a, 2, false, &vals));
    Matrix *m = mat_alloc(I, x->rows, x->cols);
    if (!m)
        return ST_ERR;
    int64_t R = x->rows, C = x->cols;
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) {
            bool keep = lower ? (j < i || (dg && j == i)) : (j > i || (dg && j == i));
            m->data[i * C + j] = keep ? (vals ? x->data[i * C + j] : 1.0) : 0.0;
        }
    *out = val_matrix_take(m);
    return ST_OK;
}

/* lower.tri(target=M, diag=FALSE, values=FALSE) */
static Status bi_lower_tri(Interp *I, const BArgs *a, Value *out) { return tri(I, a, out, true); }
/* upper.tri(target=M, diag=FALSE, values=FALSE) */
static Status bi_upper_tri(Interp *I, const BArgs *a, Value *out) { return tri(I, a, out, false); }

const BuiltinDef bi_construct_table[] = {
    {"matrix", bi_matrix, "data,rows,cols,byrow", 1, BIND_NAMED, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"rand", bi_rand, "rows,cols,min,max,pdf,sparsity,seed,lambda", 0, BIND_NAMED, 1, BF_ANY_CASE | BF_RT(RT_MATRIX) | BF_SPARSE},
    {"seq", bi_seq, "from,to,incr", 2, BIND_NAMED, 1, BF_RT(RT_MATRIX)},
    {"sample", bi_sample, "range,size,replace,seed", 2, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"diag", bi_diag, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"table", bi_table, "A,B,C,D,E,F", 2, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"ctable", bi_table, "A,B,C,D,E,F", 2, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"toOneHot", bi_toOneHot, "X,numClasses", 2, BIND_POS, 1, BF_RT(RT_MATRIX)},
    {"outer", bi_outer, "a,b,op", 3, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE},
    {"replace", bi_replace, "target,pattern,replacement", 1, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX)},
    {"lower.tri", bi_lower_tri, "target,diag,values", 1, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX)},
    {"upper.tri", bi_upper_tri, "target,diag,values", 1, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX)},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
