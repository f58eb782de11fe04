/* SPDX-License-Identifier: Apache-2.0
 * CSR storage (contract in sparse.h): allocation against the matrix memory
 * cap, dense <-> CSR, the format rule and the size estimate. */
#include "sparse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "value.h"

/* Header bytes counted in sp_bytes: the SpMat itself. */
enum { SP_HEADER = (int)sizeof(SpMat) };

uint64_t sp_bytes(int64_t rows, int64_t nnz)
{
    if (rows < 0 || nnz < 0 || (uint64_t)rows >= UINT64_MAX / 16 || (uint64_t)nnz >= UINT64_MAX / 16)
        return UINT64_MAX;
    return SP_HEADER + 8 * ((uint64_t)rows + 1) + 12 * (uint64_t)nnz;
}

uint64_t sp_dense_bytes(int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0)
        return UINT64_MAX;
    if (rows && (uint64_t)cols > UINT64_MAX / 8 / (uint64_t)rows)
        return UINT64_MAX;
    return 8 * (uint64_t)rows * (uint64_t)cols;
}

/* SP_MIN_CELLS, or DML_SPARSE_MIN_CELLS when set (doc/environment.md): a
 * debug switch; 0 makes every matrix below the turn point sparse, however
 * small, so that the test suite runs its scripts through the sparse paths.
 * Read once. */
static pthread_once_t min_once = PTHREAD_ONCE_INIT;
static int64_t min_cells = SP_MIN_CELLS;

static void min_init(void)
{
    const char *env = getenv("DML_SPARSE_MIN_CELLS");
    if (env && *env) {
        char *end;
        long long v = strtoll(env, &end, 10);
        if (*end == '\0' && v >= 0)
            min_cells = v;
    }
}

int64_t sp_min_cells(void)
{
    pthread_once(&min_once, min_init);
    return min_cells;
}

bool sp_prefer_sparse(int64_t rows, int64_t cols, int64_t nnz)
{
    if (rows <= 0 || cols <= 0 || cols > INT32_MAX || nnz < 0)
        return false;
    double cells = (double)rows * (double)cols;
    int64_t min = sp_min_cells();
    if (cells < (double)min)
        return false;
    if ((double)nnz / cells >= SP_SPARSITY_TURN_POINT)
        return false;
    /* the debug setting 0 skips the size comparison, which tiny matrices
     * (a header and a row pointer per row) would fail */
    return min == 0 || sp_bytes(rows, nnz) < sp_dense_bytes(rows, cols);
}

/* The entry arrays for 'cap' entries; false when they do not fit. */
static bool entries_fit(int64_t cap)
{
    return cap >= 0 && (uint64_t)cap <= (SIZE_MAX / 16) && mat_cap_allows(12 * (uint64_t)cap);
}

/* Large arrays ask for transparent huge pages (the kernel's "madvise"
 * mode, Debian's default): a fresh 1.2 GB CSR otherwise faults in 300,000
 * 4 KiB pages as a kernel first writes it (X * 2 on 10^8 non-zeros:
 * measured in bench/sparse_bench.c). Only advice: nothing changes if the
 * kernel says no. */
static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    enum { HUGE_MIN = 8 << 20 };
    if (!p || bytes < HUGE_MIN)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~((uintptr_t)pg - 1);
    if (e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

struct SpIdx {
    atomic_long owners;
};

SpMat *sp_new(int64_t rows, int64_t cols, int64_t cap)
{
    if (rows < 0 || cols < 0 || cols > INT32_MAX || cap < 0 || (uint64_t)rows >= SIZE_MAX / 16 ||
        !mat_cap_allows(8 * ((uint64_t)rows + 1)) || !entries_fit(cap))
        return NULL;
    SpMat *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rows = rows;
    s->cols = cols;
    s->rowptr = calloc((size_t)rows + 1, sizeof *s->rowptr);
    s->idx = malloc(sizeof *s->idx);
    if (!s->rowptr || !s->idx) {
        free(s->rowptr);
        free(s->idx);
        free(s);
        return NULL;
    }
    atomic_init(&s->idx->owners, 1);
    advise_huge(s->rowptr, ((size_t)rows + 1) * sizeof *s->rowptr);
    if (cap && !sp_reserve(s, cap)) {
        sp_free(s);
        return NULL;
    }
    return s;
}

void sp_free(SpMat *s)
{
    if (!s)
        return;
    if (!s->idx || atomic_fetch_sub_explicit(&s->idx->owners, 1, memory_order_acq_rel) == 1) {
        free(s->rowptr);
        free(s->colidx);
        free(s->idx);
    }
    free(s->vals);
    free(s);
}

SpMat *sp_new_like(const SpMat *s)
{
    if (!s->idx || !entries_fit(s->nnz))
        return NULL;
    SpMat *z = calloc(1, sizeof *z);
    if (!z)
        return NULL;
    if (s->nnz) {
        z->vals = malloc((size_t)s->nnz * sizeof *z->vals);
        if (!z->vals) {
            free(z);
            return NULL;
        }
        advise_huge(z->vals, (size_t)s->nnz * sizeof *z->vals);
    }
    z->rows = s->rows;
    z->cols = s->cols;
    z->nnz = z->cap = s->nnz;
    z->rowptr = s->rowptr;
    z->colidx = s->colidx;
    z->idx = s->idx;
    atomic_fetch_add_explicit(&s->idx->owners, 1, memory_order_relaxed);
    return z;
}

/* Gives s its own copy of shared index arrays, before they change; false
 * when the memory is not there. */
static bool unshare(SpMat *s)
{
    if (!s->idx || atomic_load_explicit(&s->idx->owners, memory_order_acquire) == 1)
        return true;
    struct SpIdx *idx = malloc(sizeof *idx);
    int64_t *rp = malloc(((size_t)s->rows + 1) * sizeof *rp);
    int32_t *ci = s->cap ? malloc((size_t)s->cap * sizeof *ci) : NULL;
    if (!idx || !rp || (s->cap && !ci)) {
        free(idx);
        free(rp);
        free(ci);
        return false;
    }
    memcpy(rp, s->rowptr, ((size_t)s->rows + 1) * sizeof *rp);
    if (s->nnz)
        memcpy(ci, s->colidx, (size_t)s->nnz * sizeof *ci);
    atomic_init(&idx->owners, 1);
    if (atomic_fetch_sub_explicit(&s->idx->owners, 1, memory_order_acq_rel) == 1) {
        /* the other owners went meanwhile: the arrays were ours after all */
        free(s->rowptr);
        free(s->colidx);
        free(s->idx);
    }
    s->rowptr = rp;
    s->colidx = ci;
    s->idx = idx;
    return true;
}

/* Both arrays resized to exactly 'cap' entries (cap > 0). */
static bool resize(SpMat *s, int64_t cap)
{
    if (!unshare(s))
        return false;
    int32_t *ci = realloc(s->colidx, (size_t)cap * sizeof *ci);
    if (!ci)
        return false;
    s->colidx = ci;
    advise_huge(ci, (size_t)cap * sizeof *ci);
    double *v = realloc(s->vals, (size_t)cap * sizeof *v);
    if (!v)
        return false;   /* colidx is larger than needed, which is allowed */
    s->vals = v;
    advise_huge(v, (size_t)cap * sizeof *v);
    s->cap = cap;
    return true;
}

bool sp_reserve(SpMat *s, int64_t cap)
{
    if (cap <= s->cap)
        return true;
    int64_t want = s->cap + s->cap / 2;
    if (want < cap)
        want = cap;
    if (!entries_fit(want))
        want = cap;
    if (!entries_fit(want))
        return false;
    return resize(s, want);
}

void sp_shrink(SpMat *s)
{
    if (s->cap == s->nnz || !unshare(s))
        return;
    if (s->nnz == 0) {
        free(s->colidx);
        free(s->vals);
        s->colidx = NULL;
        s->vals = NULL;
        s->cap = 0;
        return;
    }
    /* A failed shrink keeps the larger (still valid) block of that array;
     * cap stays the smaller of what the two arrays hold. */
    int32_t *ci = realloc(s->colidx, (size_t)s->nnz * sizeof *ci);
    if (ci)
        s->colidx = ci;
    double *v = realloc(s->vals, (size_t)s->nnz * sizeof *v);
    if (v)
        s->vals = v;
    if (ci && v)
        s->cap = s->nnz;
}

SpMat *sp_clone(const SpMat *s)
{
    SpMat *c = sp_new(s->rows, s->cols, s->nnz);
    if (!c)
        return NULL;
    memcpy(c->rowptr, s->rowptr, ((size_t)s->rows + 1) * sizeof *c->rowptr);
    if (s->nnz) {
        memcpy(c->colidx, s->colidx, (size_t)s->nnz * sizeof *c->colidx);
        memcpy(c->vals, s->vals, (size_t)s->nnz * sizeof *c->vals);
    }
    c->nnz = s->nnz;
    return c;
}

int64_t sp_count_nnz(const double *x, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += x[i] != 0;
    return k;
}

SpMat *sp_from_dense(const double *x, int64_t rows, int64_t cols, int64_t nnz)
{
    if (rows < 0 || cols < 0 || cols > INT32_MAX)
        return NULL;
    if (nnz < 0)
        nnz = rows && cols ? sp_count_nnz(x, rows * cols) : 0;
    SpMat *s = sp_new(rows, cols, nnz);
    if (!s)
        return NULL;
    int64_t k = 0;
    for (int64_t i = 0; i < rows && cols > 0; i++) {   /* x is NULL when cols == 0 */
        const double *r = x + i * cols;
        for (int64_t j = 0; j < cols; j++)
            if (r[j] != 0) {
                if (k == nnz) {     /* the caller's count was short */
                    sp_free(s);
                    return NULL;
                }
                s->colidx[k] = (int32_t)j;
                s->vals[k++] = r[j];
            }
        s->rowptr[i + 1] = k;
    }
    s->nnz = k;
    sp_shrink(s);
    return s;
}

void sp_to_dense(const SpMat *s, double *out)
{
    int64_t C = s->cols;
    if (s->rows && C)
        memset(out, 0, (size_t)(s->rows * C) * sizeof *out);
    for (int64_t i = 0; i < s->rows && C > 0; i++) {  /* out may be NULL when C == 0 */
        double *r = out + i * C;
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
            r[s->colidx[p]] = s->vals[p];
    }
}

const char *sp_check(const SpMat *s)
{
    if (!s->rowptr)
        return "rowptr is NULL";
    if (s->rowptr[0] != 0)
        return "rowptr[0] is not 0";
    if (s->rowptr[s->rows] != s->nnz)
        return "rowptr[rows] is not nnz";
    if (s->nnz > s->cap)
        return "nnz exceeds the capacity";
    /* The row pointers first, all of them: a row reaching past nnz is
     * caught before its entries are read. */
    for (int64_t i = 0; i < s->rows; i++)
        if (s->rowptr[i + 1] < s->rowptr[i])
            return "rowptr decreases";
    for (int64_t i = 0; i < s->rows; i++) {
        for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) {
            if (s->colidx[p] < 0 || s->colidx[p] >= s->cols)
                return "column index out of range";
            if (p > s->rowptr[i] && s->colidx[p] <= s->colidx[p - 1])
                return "column indices not ascending in a row";
            if (s->vals[p] == 0)
                return "a stored zero";
        }
    }
    return NULL;
}
