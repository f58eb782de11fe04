/* SPDX-License-Identifier: Apache-2.0
 * Values: the scalars (int, double, boolean) travel unboxed inside a Value;
 * strings, matrices, lists and frames (frame.h) are heap objects with an
 * atomic reference count.
 *
 * Ownership rule, written once: ARGUMENTS ARE BORROWED, RESULTS ARE OWNED,
 * and a function whose name ends in _take consumes the argument it names.
 * val_retain() adds a reference, val_release() drops one.
 *
 * Objects are immutable once shared: a mutation happens in place only when
 * the count is 1 (then no other thread can see the object, so no lock is
 * needed), otherwise on a copy. DML values cannot form cycles (a list holds
 * values, never a reference to itself), so counting frees everything.
 * Objects made at parse time are immortal: retain/release are no-ops on them. */
#ifndef DML_BASE_VALUE_H
#define DML_BASE_VALUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ValKind {
    VAL_NONE = 0,   /* unbound slot / missing argument; never a DML value */
    VAL_BOOL,
    VAL_INT,
    VAL_DOUBLE,
    VAL_STRING,
    VAL_MATRIX,
    VAL_LIST,
    VAL_FRAME,      /* FrameBlock (frame.h) */
} ValKind;

/* Reference count at or above this value marks an immortal object. */
#define OBJ_IMMORTAL (INT32_MAX / 2)

typedef struct Obj {
    _Atomic int32_t rc;
} Obj;

typedef struct Str {
    Obj h;
    int64_t len;
    char s[];          /* NUL-terminated; may contain no embedded NULs */
} Str;

struct SpMat;                             /* sparse.h */

/* Matrix of doubles, held in one of two forms (doc/sparse-plan.md):
 * - dense: 'data' row-major, separately allocated (64-byte aligned), NULL
 *   when rows*cols == 0; 'sp' NULL;
 * - sparse: 'sp' (CSR, base/sparse.h) and 'data' NULL. Code without a
 *   sparse branch never reads 'data' of such a matrix: it goes through the
 *   gate (mat_dense / mat_dense_m in runtime/matrix.h, arg_matrix for
 *   builtins), which makes 'dense_view', a dense copy kept with the matrix.
 * 'nnz' is sp->nnz for a sparse matrix; -1 for a dense one (dense cells
 * are mutated in place by their sole owner, so a count kept with them would
 * go stale: nnz(X) counts). */
typedef struct Matrix {
    Obj h;
    int64_t rows, cols;
    double *data;
    struct SpMat *sp;
    struct Matrix *_Atomic dense_view;   /* sparse only: the gate's dense copy, or NULL */
    int64_t nnz;
} Matrix;

typedef struct Value Value;
typedef struct FrameBlock FrameBlock;     /* frame.h */

/* Ordered list; 'names' is NULL for an unnamed list, else n entries. */
typedef struct List {
    Obj h;
    int64_t n, cap;
    Value *items;
    Str **names;
    struct List *dying_parent;  /* obj_free's own: the list to go on freeing after this one */
} List;

struct Value {
    ValKind kind;
    union {
        bool b;
        int64_t i;
        double d;
        Obj *o;
        Str *s;
        Matrix *m;
        List *l;
        FrameBlock *f;
    };
};

/* ---- constructors (scalars: no allocation) ---- */
static inline Value val_none(void) { Value v = {.kind = VAL_NONE}; v.i = 0; return v; }
static inline Value val_bool(bool b) { Value v = {.kind = VAL_BOOL}; v.i = 0; v.b = b; return v; }
static inline Value val_int(int64_t i) { Value v = {.kind = VAL_INT}; v.i = i; return v; }
static inline Value val_double(double d) { Value v = {.kind = VAL_DOUBLE}; v.d = d; return v; }
/* Wrap an owned object (the Value takes the reference). */
static inline Value val_str_take(Str *s) { Value v = {.kind = VAL_STRING}; v.s = s; return v; }
static inline Value val_matrix_take(Matrix *m) { Value v = {.kind = VAL_MATRIX}; v.m = m; return v; }
static inline Value val_list_take(List *l) { Value v = {.kind = VAL_LIST}; v.l = l; return v; }
static inline Value val_frame_take(FrameBlock *f) { Value v = {.kind = VAL_FRAME}; v.f = f; return v; }

static inline bool val_is_obj(Value v) { return v.kind >= VAL_STRING; }
static inline bool val_is_scalar(Value v) { return v.kind >= VAL_BOOL && v.kind <= VAL_STRING; }
static inline bool val_is_number(Value v) { return v.kind == VAL_INT || v.kind == VAL_DOUBLE; }
/* int/double/bool as double (bool TRUE = 1). */
static inline double val_num(Value v)
{
    return v.kind == VAL_DOUBLE ? v.d : v.kind == VAL_INT ? (double)v.i : v.kind == VAL_BOOL ? (double)v.b : 0.0;
}

void obj_free(ValKind kind, Obj *o);

static inline void obj_retain(Obj *o)
{
    if (atomic_load_explicit(&o->rc, memory_order_relaxed) < OBJ_IMMORTAL)
        atomic_fetch_add_explicit(&o->rc, 1, memory_order_relaxed);
}
static inline void val_retain(Value v)
{
    if (val_is_obj(v))
        obj_retain(v.o);
}
static inline void val_release(Value v)
{
    if (!val_is_obj(v))
        return;
    if (atomic_load_explicit(&v.o->rc, memory_order_relaxed) >= OBJ_IMMORTAL)
        return;
    if (atomic_fetch_sub_explicit(&v.o->rc, 1, memory_order_acq_rel) == 1)
        obj_free(v.kind, v.o);
}
/* Drop the caller's reference to a bare object (val_release of the wrapped
 * value); NULL is allowed and does nothing, as with free(). */
static inline void str_release(Str *s) { if (s) val_release(val_str_take(s)); }
static inline void mat_release(Matrix *m) { if (m) val_release(val_matrix_take(m)); }
static inline void list_release(List *l) { if (l) val_release(val_list_take(l)); }
static inline void frame_release(FrameBlock *f) { if (f) val_release(val_frame_take(f)); }
/* Returns v with one more reference (for storing a borrowed value). */
static inline Value val_ref(Value v) { val_retain(v); return v; }
/* True when the caller holds the only reference (safe to mutate in place). */
static inline bool obj_unique(const Obj *o)
{
    return atomic_load_explicit((_Atomic int32_t *)&o->rc, memory_order_acquire) == 1;
}
/* Make an object immortal (parse-time constants shared by all threads). */
static inline void obj_make_immortal(Obj *o) { atomic_store(&o->rc, OBJ_IMMORTAL + 1000); }

/* ---- strings ---- */
/* NULL on allocation failure. */
Str *str_new(const char *s, size_t n);
Str *str_from(const char *s);
Str *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* x[0..nx) followed by y[0..ny) as a new string; NULL on allocation failure. */
Str *str_concat(const char *x, size_t nx, const char *y, size_t ny);

/* ---- matrices (storage only; arithmetic is in ops.h, kernels in matrix.h) ----
 * mat_ names the Matrix in two files, one per layer: here the storage (no
 * Interp; NULL on failure), in matrix.c the runtime's (an Interp first;
 * failures are DML errors). */
/* New matrix with uninitialised cells; NULL if the size overflows or memory
 * runs out. Use mat_alloc() (matrix.h) where a DML error should be raised. */
Matrix *mat_new_raw(int64_t rows, int64_t cols);
/* Whether 'bytes' of working memory fit under the cap that matrices are
 * allocated against (physical memory, or DML_MAX_MATRIX_BYTES): for
 * structures that grow piecemeal, which Linux would let overcommit. */
bool mat_cap_allows(uint64_t bytes);
Matrix *mat_new_zero_raw(int64_t rows, int64_t cols);
/* Deep copy; NULL on allocation failure. */
Matrix *mat_clone_raw(const Matrix *m);
/* Bytes of matrix data allocated and not yet freed, now and at the peak,
 * over the whole process, counted from the time mat_mem_track(true) was
 * called (--stats calls it before the script runs). Thread-safe. */
void mat_mem_track(bool on);
void mat_mem_stats(uint64_t *live, uint64_t *peak);
/* Adds (or with a negative count removes) bytes of matrix storage that do
 * not come from mat_new_raw (a CSR form's arrays), for the counters above. */
void mat_mem_add(int64_t bytes);
/* The cap mat_cap_allows() checks against, in bytes. */
uint64_t mat_cap_bytes(void);
/* A matrix in sparse form wrapping 's' (taken: freed on failure too); NULL
 * when memory runs out. A matrix without cells is made dense (data NULL)
 * whatever 's' is. The format decision is the caller's (runtime/matrix.h:
 * mat_from_sp_take decides by sp_prefer_sparse). */
Matrix *mat_new_sparse_take(struct SpMat *s);
/* Sparse matrices alive in the process (0: no sparse matrix exists, and
 * the gates have nothing to do). Thread-safe. */
int64_t mat_sparse_live(void);
/* Cell (i, j) of either form (a binary search in a sparse row). */
double mat_get(const Matrix *m, int64_t i, int64_t j);
static inline bool mat_is_sparse(const Matrix *m) { return m->sp != NULL; }
static inline double *mat_row(Matrix *m, int64_t r) { return m->data + r * m->cols; }
static inline int64_t mat_len(const Matrix *m) { return m->rows * m->cols; }

/* ---- lists ---- */
List *list_new(int64_t cap, bool named);
/* Appends a reference to v (retained); name may be NULL for unnamed lists.
 * Returns false on allocation failure. */
bool list_push(List *l, Value v, const char *name);
/* Appends v, taking the caller's reference. */
bool list_push_take(List *l, Value v, const char *name);
/* Shallow copy: new list whose items are new references to the same values. */
List *list_clone(const List *l);
/* Index of the entry named 'name', or -1. */
int64_t list_find(const List *l, const char *name);

/* Human-readable type name for messages: "int", "double", "boolean",
 * "string", "matrix", "list", "frame". */
const char *val_kind_name(ValKind k);
/* "scalar", "matrix", "list", "frame" (the DML data type). */
const char *val_data_type_name(ValKind k);

#endif
