/* SPDX-License-Identifier: Apache-2.0
 * Data partitioning of paramserv (PARAMSERV.md 6) and the list arithmetic
 * the server and workers share. Partitions copy each selected row once.
 * Unlike upstream, DISJOINT_CONTIGUOUS keeps the last rows (upstream drops a
 * final block that starts at row n), and the random schemes honour 'seed'. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps.h"
#include "../../runtime/pool.h"
#include "../../runtime/sparse_ops.h"

static Matrix *take_rows(Interp *I, const Matrix *M, const int64_t *rows, int64_t n)
{
    if (M->sp)  /* a sparse X: a sparse partition (or dense by the format rule) */
        return mat_from_sp_take(I, sp_gather_rows(M->sp, rows, n), "paramserv");
    Matrix *r = mat_alloc(I, n, M->cols);
    if (!r)
        return NULL;
    size_t bytes = sizeof(double) * (size_t)M->cols;
    for (int64_t i = 0; i < n; i++)
        if (bytes)
            memcpy(r->data + i * M->cols, M->data + rows[i] * M->cols, bytes);
    return r;
}

static Status make_part(Interp *I, const PsConfig *c, const int64_t *rows, int64_t n, PsPart *p)
{
    p->X = take_rows(I, c->X, rows, n);
    p->Y = p->X ? take_rows(I, c->Y, rows, n) : NULL;
    if (!p->X || !p->Y)
        return ST_ERR;
    return ST_OK;
}

/* Fisher-Yates permutation of 0..n-1 from stream 'k' of 'seed'. */
static void permutation(int64_t *perm, int64_t n, uint64_t seed, uint64_t k)
{
    Rng r;
    rng_seed_at(&r, seed, k);
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void ps_parts_free(PsPart *parts, int64_t np)
{
    if (!parts)
        return;
    for (int64_t i = 0; i < np; i++) {
        if (parts[i].X)
            mat_release(parts[i].X);
        if (parts[i].Y)
            mat_release(parts[i].Y);
    }
    free(parts);
}

Status ps_partition(Interp *I, const PsConfig *c, PsPart **out, int64_t *np)
{
    int64_t n = c->X->rows, k = c->k;
    PsPart *parts = calloc((size_t)k, sizeof *parts);
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!parts || !rows) {
        free(parts);
        free(rows);
        return err_set(I, "out of memory partitioning %lld rows", (long long)n);
    }
    int64_t cnt = 0;
    Status st = ST_OK;
    switch (c->scheme) {
    case PS_SCHEME_DC:
    case PS_SCHEME_DR: {
        int64_t step = (n + k - 1) / k;
        if (c->scheme == PS_SCHEME_DR)
            permutation(rows, n, c->seed, 0);
        else
            for (int64_t i = 0; i < n; i++)
                rows[i] = i;
        if (c->scheme == PS_SCHEME_DC && step >= n && n > 0) {
            /* One worker, all the rows in order: its partition is the data
             * itself (workers only read it), not a copy of it. */
            obj_retain(&c->X->h);
            obj_retain(&c->Y->h);
            parts[cnt++] = (PsPart){.X = c->X, .Y = c->Y};
            break;
        }
        for (int64_t start = 0; start < n && st == ST_OK; start += step) {
            int64_t len = start + step <= n ? step : n - start;
            st = make_part(I, c, rows + start, len, &parts[cnt++]);
        }
        break;
    }
    case PS_SCHEME_DRR:
        for (int64_t w = 0; w < k && w < n && st == ST_OK; w++) {
            int64_t len = 0;
            for (int64_t r = w; r < n; r += k)
                rows[len++] = r;
            st = make_part(I, c, rows, len, &parts[cnt++]);
        }
        break;
    case PS_SCHEME_OR:
        for (int64_t w = 0; w < k && n > 0 && st == ST_OK; w++) {
            permutation(rows, n, c->seed, (uint64_t)w + 1);
            st = make_part(I, c, rows, n, &parts[cnt++]);
        }
        break;
    }
    free(rows);
    if (st != ST_OK) {
        ps_parts_free(parts, cnt);
        return ST_ERR;
    }
    *out = parts;
    *np = cnt;
    return ST_OK;
}

/* ---- lists of matrices ---- */

Status ps_check_model(Interp *I, const List *l, const char *what)
{
    for (int64_t i = 0; i < l->n; i++)
        if (l->items[i].kind != VAL_MATRIX)
            return err_set(I, "Copy list: does not support list or frame. (%s entry %lld is a %s; paramserv models and "
                           "gradients must be lists of matrices)", what, (long long)i + 1,
                           val_kind_name(l->items[i].kind));
    return ST_OK;
}

double ps_process_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t ps_list_bytes(const List *l)
{
    uint64_t b = 0;
    for (int64_t i = 0; i < l->n; i++)
        if (l->items[i].kind == VAL_MATRIX)
            b += (uint64_t)mat_len(l->items[i].m) * sizeof(double);
    return b;
}

/* The list in l (taken) made safe to change: itself when unshared, else a
 * copy. NULL (error set) when out of memory. */
static List *list_unique_take(Interp *I, Value l)
{
    if (obj_unique(&l.l->h))
        return l.l;
    List *c = list_clone(l.l);
    val_release(l);
    if (!c)
        err_set(I, "out of memory");
    return c;
}

/* Matrix entry i of a, taken out of the list (its slot is NONE until the
 * caller puts it back) and made safe to change. NULL (error set) when out
 * of memory, and then 'a' is released. */
static Matrix *item_unique_take(Interp *I, List *a, int64_t i)
{
    Matrix *x = a->items[i].m;
    a->items[i] = val_none();
    x = mat_make_unique_take(I, x);
    if (!x)
        list_release(a);
    return x;
}

/* ---- adding lists of matrices ---- */

enum {
    SUM_BLOCK = 512,            /* cells added list by list while they stay in L1 */
    SUM_PAR_MIN = 1 << 16,      /* cells below which one thread does it all */
    SUM_PARTS_PER_THREAD = 4,   /* as runtime/fuse.c: a late helper leaves its parts to the others */
};

typedef struct SumJob {
    double *x;
    const double *const *ys;
    int ny;
    int64_t len;
    int parts;
} SumJob;

/* Cells [lo, hi) of x += ys[0] + ... in list order: cell j gets
 * ((x[j] + ys[0][j]) + ys[1][j]) + ..., the bits of adding the lists one
 * after the other, whatever the blocking and the threads. */
static void sum_range(const SumJob *J, int64_t lo, int64_t hi)
{
    for (int64_t b = lo; b < hi; b += SUM_BLOCK) {
        int64_t e = b + SUM_BLOCK < hi ? b + SUM_BLOCK : hi;
        double *x = J->x;
        for (int l = 0; l < J->ny; l++) {
            const double *y = J->ys[l];
            for (int64_t j = b; j < e; j++)
                x[j] += y[j];
        }
    }
}

static void sum_part(void *ctx, int part)
{
    const SumJob *J = ctx;
    sum_range(J, J->len * part / J->parts, J->len * (part + 1) / J->parts);
}

void ps_add_into(const Interp *I, double *x, const double *const *ys, int ny, int64_t len)
{
    SumJob J = {.x = x, .ys = ys, .ny = ny, .len = len, .parts = 1};
    int threads = pool_threads(I);
    if (len >= SUM_PAR_MIN && threads > 1) {
        int64_t want = (int64_t)threads * SUM_PARTS_PER_THREAD;
        J.parts = want < len / SUM_BLOCK ? (int)want : (int)(len / SUM_BLOCK);
    }
    if (J.parts > 1)
        pool_run(I, sum_part, &J, J.parts);
    else
        sum_range(&J, 0, len);
}

/* Checks that g can be added to a (both lists of matrices): the same length
 * and the same shapes, in the words of the first push that differs. */
static Status check_addable(Interp *I, const List *a, const List *g)
{
    if (a->n != g->n)
        return err_set(I, "paramserv: cannot add gradient lists of lengths %lld and %lld", (long long)a->n,
                       (long long)g->n);
    for (int64_t i = 0; i < a->n; i++) {
        const Matrix *x = a->items[i].m, *y = g->items[i].m;
        if (x->rows != y->rows || x->cols != y->cols)
            return err_set(I, "paramserv: gradient %lld is %lldx%lld in one push and %lldx%lld in another",
                           (long long)i + 1, (long long)x->rows, (long long)x->cols, (long long)y->rows,
                           (long long)y->cols);
    }
    return ST_OK;
}

Status ps_list_sum_take(Interp *I, Value *lists, int n, Value *out)
{
    if (n < 1)
        return err_set(I, "paramserv: internal error: a sum of no gradient lists");
    Status st = ST_OK;
    for (int l = 0; l < n && st == ST_OK; l++) {
        st = ps_check_model(I, lists[l].l, "gradients");
        if (st == ST_OK && l > 0)
            st = check_addable(I, lists[0].l, lists[l].l);
    }
    if (st == ST_OK && n == 1) {
        *out = lists[0];
        lists[0] = val_none();
        return ST_OK;
    }
    List *a = NULL;
    if (st == ST_OK) {
        a = list_unique_take(I, lists[0]);
        lists[0] = val_none();
        if (!a)
            st = ST_ERR;
    }
    const double *ys_small[8];
    const double **ys = n - 1 <= 8 ? ys_small : malloc(sizeof *ys * (size_t)(n - 1));
    if (st == ST_OK && !ys)
        st = err_set(I, "out of memory");
    for (int64_t i = 0; st == ST_OK && i < a->n; i++) {
        Matrix *x = item_unique_take(I, a, i);
        if (!x) {
            a = NULL;       /* released by item_unique_take */
            st = ST_ERR;
            break;
        }
        for (int l = 1; l < n; l++)
            ys[l - 1] = lists[l].l->items[i].m->data;
        ps_add_into(I, x->data, ys, n - 1, mat_len(x));
        a->items[i] = val_matrix_take(x);
    }
    if (ys && ys != ys_small)
        free(ys);
    for (int l = 0; l < n; l++) {
        val_release(lists[l]);
        lists[l] = val_none();
    }
    if (st != ST_OK) {
        if (a)
            list_release(a);
        return ST_ERR;
    }
    *out = val_list_take(a);
    return ST_OK;
}

Status ps_list_add_take(Interp *I, Value acc, const List *g, Value *out)
{
    if (acc.kind == VAL_NONE) {
        if (ps_check_model(I, g, "gradients") != ST_OK)
            return ST_ERR;
        List *c = list_clone(g);
        if (!c)
            return err_set(I, "out of memory");
        *out = val_list_take(c);
        return ST_OK;
    }
    Value lists[2] = {acc, val_ref(val_list_take((List *)g))};
    return ps_list_sum_take(I, lists, 2, out);
}

Status ps_list_scale_take(Interp *I, Value l, double s, Value *out)
{
    List *a = list_unique_take(I, l);
    if (!a)
        return ST_ERR;
    for (int64_t i = 0; i < a->n; i++) {
        Matrix *x = item_unique_take(I, a, i);
        if (!x)
            return ST_ERR;
        int64_t len = mat_len(x);
        for (int64_t j = 0; j < len; j++)
            x->data[j] *= s;
        a->items[i] = val_matrix_take(x);
    }
    *out = val_list_take(a);
    return ST_OK;
}

/* ---- epoch bookkeeping ---- */

void ps_epochs_init(PsEpochs *p, int64_t needed, int64_t first_epoch)
{
    *p = (PsEpochs){.needed = needed, .base = first_epoch};
}

Status ps_epochs_push(Interp *I, PsEpochs *p, int64_t e, int64_t *first, int64_t *ndone)
{
    *first = p->base;
    *ndone = 0;
    int64_t i = e - p->base;
    if (i < 0)
        return err_set(I, "paramserv: a push for epoch %lld arrived after that epoch was complete", (long long)e + 1);
    if (i >= p->cap) {
        int64_t cap = p->cap ? p->cap : 4;
        while (cap <= i)
            cap *= 2;
        int64_t *nc = realloc(p->count, sizeof *nc * (size_t)cap);
        if (!nc)
            return err_set(I, "paramserv: out of memory counting pushes");
        p->count = nc;
        p->cap = cap;
    }
    for (; p->len <= i; p->len++)
        p->count[p->len] = 0;
    ++p->count[i];
    /* The finished epochs leave from the front, in order: with STATIC
     * dispatch every worker pushes epoch e before e+1, so they finish in
     * order anyway; with DYNAMIC, tasks of epoch e+1 may all be applied
     * while one of epoch e still runs, and e+1 then ends right after e. */
    int64_t drop = 0;
    while (drop < p->len && p->count[drop] == p->needed)
        drop++;
    if (drop) {
        memmove(p->count, p->count + drop, sizeof *p->count * (size_t)(p->len - drop));
        p->len -= drop;
        p->base += drop;
    }
    *ndone = drop;
    return ST_OK;
}

void ps_epochs_free(PsEpochs *p)
{
    free(p->count);
    p->count = NULL;
    p->len = p->cap = 0;
}
