/* SPDX-License-Identifier: Apache-2.0
 * Heap objects behind Value: strings, dense matrices, lists. Owns their
 * allocation and destruction; the counting itself is inline in value.h.
 * Invariants: a fresh object has count 1; matrix data is 64-byte aligned
 * (or NULL when the matrix has no cells); a named list has a name per entry.
 * Thread-safe: no shared state; an object is only mutated by its sole owner. */
#include "value.h"

#include "frame.h"
#include "sparse.h"

#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Matrix data alignment: a cache line, and what AVX-512 loads like best. */
enum { MAT_ALIGN = 64 };

/* Matrix data is aligned by hand on top of plain malloc, the block's own
 * address kept in the 8 bytes below the data. Not posix_memalign: glibc
 * carves an aligned request out of a larger chunk and returns the pieces
 * separately, so a freed 8 MB block did not serve the next 8 MB request and
 * every large temporary faulted in fresh pages (2,000 faults per 1000x1000
 * result, ~12 us each in a VM; measured 55k faults for 20 matmuls). A plain
 * malloc chunk is reused whole, its pages already mapped. */
static void *data_alloc(size_t bytes)
{
    if (bytes > SIZE_MAX - MAT_ALIGN)
        return NULL;
    char *raw = malloc(bytes + MAT_ALIGN);
    if (!raw)
        return NULL;
    /* malloc aligns to 16, so there are 16..64 bytes below the data. */
    char *p = (char *)(((uintptr_t)raw + MAT_ALIGN) & ~(uintptr_t)(MAT_ALIGN - 1));
    memcpy(p - sizeof raw, &raw, sizeof raw);
    return p;
}

static void data_free(void *p)
{
    if (!p)
        return;
    char *raw;
    memcpy(&raw, (char *)p - sizeof raw, sizeof raw);
    free(raw);
}

static void str_release_name(Str *s)
{
    if (s)
        str_release(s);
}

/* Bytes of matrix data alive now and at most so far (--stats "peak matrix
 * memory"). Process-wide on purpose: a matrix made by one thread may be
 * freed by another, and the peak is of the whole process. Counted only
 * once mat_mem_track() turned it on (a locked add per matrix is not free);
 * a matrix made before and freed after that only lowers 'live' a little,
 * hence signed. */
static atomic_bool mem_on;
static _Atomic int64_t mat_live_bytes, mat_peak_bytes;
/* Sparse matrices alive (mat_sparse_live): always counted, one add per
 * sparse matrix, so that the gates cost nothing while none exists. */
static _Atomic int64_t sparse_live;

static void mem_add(int64_t bytes)
{
    int64_t now = atomic_fetch_add_explicit(&mat_live_bytes, bytes, memory_order_relaxed) + bytes;
    int64_t peak = atomic_load_explicit(&mat_peak_bytes, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&mat_peak_bytes, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void mat_mem_add(int64_t bytes)
{
    if (atomic_load_explicit(&mem_on, memory_order_relaxed))
        mem_add(bytes);
}

int64_t mat_sparse_live(void)
{
    return atomic_load_explicit(&sparse_live, memory_order_relaxed);
}

void mat_mem_track(bool on)
{
    atomic_store_explicit(&mem_on, on, memory_order_relaxed);
}

void mat_mem_stats(uint64_t *live, uint64_t *peak)
{
    int64_t l = atomic_load_explicit(&mat_live_bytes, memory_order_relaxed);
    int64_t p = atomic_load_explicit(&mat_peak_bytes, memory_order_relaxed);
    *live = l > 0 ? (uint64_t)l : 0;
    *peak = p > 0 ? (uint64_t)p : 0;
}


/* Drops one reference to a list and says whether it was the last (then the
 * caller owns the dead list). The same ordering as val_release. */
static bool list_release_last(List *l)
{
    if (atomic_load_explicit(&l->h.rc, memory_order_relaxed) >= OBJ_IMMORTAL)
        return false;
    return atomic_fetch_sub_explicit(&l->h.rc, 1, memory_order_acq_rel) == 1;
}

/* Frees a list whose count reached zero, and every list that dies with it,
 * without recursion: a list nested 10^6 deep (L = list(L) in a loop) must
 * not overflow the C stack. A dead list is emptied from its end; a dead
 * child becomes the current list, linked back to its parent through
 * 'dying_parent', so the walk needs no memory of its own. */
static void list_free(List *l)
{
    l->dying_parent = NULL;
    while (l) {
        if (l->n > 0) {
            int64_t i = --l->n;
            Value v = l->items[i];
            if (l->names)
                str_release_name(l->names[i]);
            if (v.kind == VAL_LIST) {
                if (list_release_last(v.l)) {
                    v.l->dying_parent = l;
                    l = v.l;
                }
            } else {
                val_release(v);
            }
            continue;
        }
        List *up = l->dying_parent;
        free(l->items);
        free(l->names);
        free(l);
        l = up;
    }
}

/* Called by val_release when the last reference goes. */
void obj_free(ValKind kind, Obj *o)
{
    switch (kind) {
    case VAL_STRING:
        free(o);
        break;
    case VAL_MATRIX: {
        Matrix *m = (Matrix *)o;
        if (m->data && atomic_load_explicit(&mem_on, memory_order_relaxed))
            atomic_fetch_sub_explicit(&mat_live_bytes, mat_len(m) * (int64_t)sizeof(double), memory_order_relaxed);
        data_free(m->data);
        if (m->sp) {
            if (atomic_load_explicit(&mem_on, memory_order_relaxed))
                atomic_fetch_sub_explicit(&mat_live_bytes, (int64_t)sp_bytes(m->sp->rows, m->sp->cap),
                                          memory_order_relaxed);
            sp_free(m->sp);
            atomic_fetch_sub_explicit(&sparse_live, 1, memory_order_relaxed);
        }
        mat_release(atomic_load_explicit(&m->dense_view, memory_order_acquire));
        free(m);
        break;
    }
    case VAL_LIST:
        list_free((List *)o);
        break;
    case VAL_FRAME:
        frame_free((FrameBlock *)o);
        break;
    default:
        break;
    }
}

/* ==================================================================
 * strings
 * ================================================================== */

/* Uninitialised string of n bytes (plus the NUL, which is set). */
static Str *str_raw(size_t n)
{
    if (n > (size_t)INT64_MAX - sizeof(Str) - 1)
        return NULL;
    Str *s = malloc(sizeof(Str) + n + 1);
    if (!s)
        return NULL;
    atomic_init(&s->h.rc, 1);
    s->len = (int64_t)n;
    s->s[n] = '\0';
    return s;
}

/* Copy of s[0..n); NULL on allocation failure. 's' may be NULL when n == 0. */
Str *str_new(const char *s, size_t n)
{
    Str *r = str_raw(n);
    if (r && n)
        memcpy(r->s, s, n);
    return r;
}

/* Copy of the NUL-terminated 's'; NULL on allocation failure. */
Str *str_from(const char *s)
{
    return str_new(s, strlen(s));
}

/* x followed by y; NULL on allocation failure. */
Str *str_concat(const char *x, size_t nx, const char *y, size_t ny)
{
    if (nx > SIZE_MAX / 2 || ny > SIZE_MAX / 2)
        return NULL;
    Str *r = str_raw(nx + ny);
    if (!r)
        return NULL;
    if (nx)
        memcpy(r->s, x, nx);
    if (ny)
        memcpy(r->s + nx, y, ny);
    return r;
}

/* Formatted like printf into a new string; NULL on allocation failure or
 * an encoding error. */
Str *str_printf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    Str *r = n < 0 ? NULL : str_raw((size_t)n);
    if (r)
        vsnprintf(r->s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return r;
}

/* ==================================================================
 * matrices
 * ================================================================== */

/* The largest matrix we try to allocate: physical memory, or
 * DML_MAX_MATRIX_BYTES when set. Linux overcommits, so without this cap a
 * matrix(0, 1e6, 1e6) would "succeed" and the process be killed later
 * instead of reporting an error. Set once, read-only afterwards. */
static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static uint64_t cap_bytes = UINT64_MAX;

static void cap_init(void)
{
    const char *env = getenv("DML_MAX_MATRIX_BYTES");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == '\0' && v > 0) {
            cap_bytes = v;
            return;
        }
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        cap_bytes = (uint64_t)pages * (uint64_t)psize;
}

/* Number of bytes for rows x cols doubles, or false if negative,
 * overflowing, or larger than the allocation cap. */
static bool mat_bytes(int64_t rows, int64_t cols, size_t *bytes)
{
    int64_t n, b;
    if (rows < 0 || cols < 0)
        return false;
    if (__builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, (int64_t)sizeof(double), &b))
        return false;
    pthread_once(&cap_once, cap_init);
    if ((uint64_t)b > SIZE_MAX || (uint64_t)b > cap_bytes)
        return false;
    *bytes = (size_t)b;
    return true;
}

uint64_t mat_cap_bytes(void)
{
    pthread_once(&cap_once, cap_init);
    return cap_bytes;
}

bool mat_cap_allows(uint64_t bytes)
{
    pthread_once(&cap_once, cap_init);
    return bytes <= cap_bytes;
}

/* Contract in value.h. The header and the data are separate allocations so
 * that the data can be aligned and, later, handed over or swapped. */
Matrix *mat_new_raw(int64_t rows, int64_t cols)
{
    size_t bytes;
    if (!mat_bytes(rows, cols, &bytes))
        return NULL;
    Matrix *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->h.rc, 1);
    m->rows = rows;
    m->cols = cols;
    m->data = NULL;
    m->sp = NULL;
    atomic_init(&m->dense_view, NULL);
    m->nnz = -1;
    if (bytes) {
        void *p = data_alloc(bytes);
        if (!p) {
            free(m);
            return NULL;
        }
        m->data = p;
        if (atomic_load_explicit(&mem_on, memory_order_relaxed))
            mem_add((int64_t)bytes);
    }
    return m;
}

/* As mat_new_raw, with every cell 0.0. */
Matrix *mat_new_zero_raw(int64_t rows, int64_t cols)
{
    Matrix *m = mat_new_raw(rows, cols);
    if (m && m->data)
        memset(m->data, 0, (size_t)mat_len(m) * sizeof(double));
    return m;
}

/* Contract in value.h. */
Matrix *mat_new_sparse_take(SpMat *s)
{
    if (!s)
        return NULL;
    if (s->rows == 0 || s->cols == 0) {
        Matrix *m = mat_new_raw(s->rows, s->cols);
        if (m)
            m->nnz = 0;
        sp_free(s);
        return m;
    }
    Matrix *m = malloc(sizeof *m);
    if (!m) {
        sp_free(s);
        return NULL;
    }
    atomic_init(&m->h.rc, 1);
    m->rows = s->rows;
    m->cols = s->cols;
    m->data = NULL;
    m->sp = s;
    atomic_init(&m->dense_view, NULL);
    m->nnz = s->nnz;
    atomic_fetch_add_explicit(&sparse_live, 1, memory_order_relaxed);
    if (atomic_load_explicit(&mem_on, memory_order_relaxed))
        mem_add((int64_t)sp_bytes(s->rows, s->cap));
    return m;
}

double mat_get(const Matrix *m, int64_t i, int64_t j)
{
    if (!m->sp)
        return m->data[i * m->cols + j];
    const SpMat *s = m->sp;
    int64_t lo = s->rowptr[i], hi = s->rowptr[i + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (s->colidx[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->rowptr[i + 1] && s->colidx[lo] == j ? s->vals[lo] : 0.0;
}

/* Deep copy with count 1, whatever m's count, in the form m has; NULL on
 * allocation failure. */
Matrix *mat_clone_raw(const Matrix *m)
{
    if (m->sp)
        return mat_new_sparse_take(sp_clone(m->sp));
    Matrix *c = mat_new_raw(m->rows, m->cols);
    if (c && c->data)
        memcpy(c->data, m->data, (size_t)mat_len(m) * sizeof(double));
    return c;
}

/* ==================================================================
 * lists
 * ================================================================== */

/* Empty list (count 1) with room for 'cap' entries, at least 4; 'named'
 * gives it a names array. NULL on allocation failure. */
List *list_new(int64_t cap, bool named)
{
    if (cap < 4)
        cap = 4;
    if ((uint64_t)cap > SIZE_MAX / sizeof(Value))
        return NULL;
    List *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    atomic_init(&l->h.rc, 1);
    l->cap = cap;
    l->items = malloc((size_t)cap * sizeof(Value));
    if (named)
        l->names = calloc((size_t)cap, sizeof(Str *));
    if (!l->items || (named && !l->names)) {
        free(l->items);
        free(l->names);
        free(l);
        return NULL;
    }
    return l;
}

static bool list_grow(List *l)
{
    if (l->n < l->cap)
        return true;
    if ((uint64_t)l->cap > SIZE_MAX / (2 * sizeof(Value)))
        return false;
    int64_t cap = l->cap * 2;
    Value *items = realloc(l->items, (size_t)cap * sizeof(Value));
    if (!items)
        return false;
    l->items = items;
    if (l->names) {
        Str **names = realloc(l->names, (size_t)cap * sizeof(Str *));
        if (!names)
            return false;   /* items grew, names did not: cap stays, still consistent */
        l->names = names;
    }
    l->cap = cap;
    return true;
}

/* Gives an unnamed, still empty list a names array (first named push). */
static bool list_make_named(List *l)
{
    if (l->names)
        return true;
    l->names = calloc((size_t)l->cap, sizeof(Str *));
    if (!l->names)
        return false;
    /* Earlier entries (if any) get empty names, keeping "a name per entry". */
    for (int64_t i = 0; i < l->n; i++) {
        l->names[i] = str_new("", 0);
        if (!l->names[i]) {
            for (int64_t j = 0; j < i; j++)
                str_release_name(l->names[j]);
            free(l->names);
            l->names = NULL;
            return false;
        }
    }
    return true;
}

/* Contract in value.h. On failure v is released (the reference was given). */
bool list_push_take(List *l, Value v, const char *name)
{
    if (!list_grow(l) || (name && !list_make_named(l)))
        goto fail;
    if (l->names) {
        Str *s = str_from(name ? name : "");
        if (!s)
            goto fail;
        l->names[l->n] = s;
    }
    l->items[l->n++] = v;
    return true;
fail:
    val_release(v);
    return false;
}

/* Borrowing form of list_push_take: v gets one more reference, which the
 * list owns. On failure nothing is retained. Only the list's sole owner may
 * push (lists are immutable once shared). */
bool list_push(List *l, Value v, const char *name)
{
    return list_push_take(l, val_ref(v), name);
}

/* Shallow copy (count 1): items and names are new references to the same
 * objects, so copying a list of big matrices copies no cells. NULL on
 * allocation failure. */
List *list_clone(const List *l)
{
    List *c = list_new(l->n, l->names != NULL);
    if (!c)
        return NULL;
    for (int64_t i = 0; i < l->n; i++) {
        c->items[i] = val_ref(l->items[i]);
        if (l->names) {
            c->names[i] = l->names[i];
            if (c->names[i])
                obj_retain(&c->names[i]->h);
        }
    }
    c->n = l->n;
    return c;
}

/* Index of the first entry named 'name'; -1 when absent or unnamed. Linear:
 * DML lists are short (model parameters, hyperparameters). */
int64_t list_find(const List *l, const char *name)
{
    if (!l->names)
        return -1;
    for (int64_t i = 0; i < l->n; i++)
        if (l->names[i] && strcmp(l->names[i]->s, name) == 0)
            return i;
    return -1;
}

/* ==================================================================
 * type names
 * ================================================================== */

/* Static strings for messages; "none" for VAL_NONE. */
const char *val_kind_name(ValKind k)
{
    switch (k) {
    case VAL_BOOL: return "boolean";
    case VAL_INT: return "int";
    case VAL_DOUBLE: return "double";
    case VAL_STRING: return "string";
    case VAL_MATRIX: return "matrix";
    case VAL_LIST: return "list";
    case VAL_FRAME: return "frame";
    default: return "none";
    }
}

/* The DML data type of a kind: "scalar", "matrix", "list" (or "none"). */
const char *val_data_type_name(ValKind k)
{
    switch (k) {
    case VAL_BOOL:
    case VAL_INT:
    case VAL_DOUBLE:
    case VAL_STRING: return "scalar";
    case VAL_MATRIX: return "matrix";
    case VAL_LIST: return "list";
    case VAL_FRAME: return "frame";
    default: return "none";
    }
}
