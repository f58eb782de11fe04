/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/paramserv/wire.c, the byte format of values sent
 * between Open MPI ranks: scalars, strings, matrices (bit for bit: -0, NaN,
 * denormals), named and nested lists, entries left out round-trip; a layout plus the cells
 * sent apart rebuilds the same value; every truncation of a valid buffer
 * and garbage in it are refused ('bad'), never a crash or a leak; a failed
 * allocation is 'bad' and 'oom', a malformed buffer never 'oom'; a
 * truncated scalar is NONE; a layout's matrices are refused past its byte
 * budget before they are allocated. Prints
 * "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/paramserv/wire.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/failalloc.h"
#include "../../base/sparse.h"
#include "check.h"

static bool same_value(Value a, Value b);

static bool same_list(const List *a, const List *b)
{
    if (a->n != b->n || (a->names == NULL) != (b->names == NULL))
        return false;
    for (int64_t i = 0; i < a->n; i++) {
        if (a->names && strcmp(a->names[i]->s, b->names[i]->s) != 0)
            return false;
        if (!same_value(a->items[i], b->items[i]))
            return false;
    }
    return true;
}

static bool same_value(Value a, Value b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case VAL_NONE: return true;
    case VAL_BOOL: return a.b == b.b;
    case VAL_INT: return a.i == b.i;
    case VAL_DOUBLE: return memcmp(&a.d, &b.d, sizeof a.d) == 0;
    case VAL_STRING: return a.s->len == b.s->len && memcmp(a.s->s, b.s->s, (size_t)a.s->len) == 0;
    case VAL_MATRIX:
        if (a.m->sp || b.m->sp)     /* sparse crosses sparse (wire.c): the same CSR arrays */
            return a.m->sp && b.m->sp && a.m->rows == b.m->rows && a.m->cols == b.m->cols &&
                   a.m->sp->nnz == b.m->sp->nnz &&
                   memcmp(a.m->sp->rowptr, b.m->sp->rowptr, sizeof(int64_t) * (size_t)(a.m->rows + 1)) == 0 &&
                   (a.m->sp->nnz == 0 ||
                    (memcmp(a.m->sp->colidx, b.m->sp->colidx, sizeof(int32_t) * (size_t)a.m->sp->nnz) == 0 &&
                     memcmp(a.m->sp->vals, b.m->sp->vals, sizeof(double) * (size_t)a.m->sp->nnz) == 0));
        return a.m->rows == b.m->rows && a.m->cols == b.m->cols &&
               (mat_len(a.m) == 0 || memcmp(a.m->data, b.m->data, sizeof(double) * (size_t)mat_len(a.m)) == 0);
    case VAL_LIST: return same_list(a.l, b.l);
    case VAL_FRAME: return false; /* paramserv refuses frames before anything is sent (args.c) */
    }
    return false;
}

/* A model-like value: named list of matrices with awkward doubles, a
 * scalar of each kind, a string, an empty matrix, an entry left out and a
 * nested list. */
static Value sample(void)
{
    List *l = list_new(8, true);
    Matrix *m = mat_new_raw(3, 2);
    double cells[6] = {-0.0, NAN, 4.9e-324, 1e308, -1.5, 0.1};
    memcpy(m->data, cells, sizeof cells);
    list_push_take(l, val_matrix_take(m), "W");
    list_push_take(l, val_matrix_take(mat_new_raw(0, 5)), "empty");
    list_push_take(l, val_int(-9007199254740993LL), "i");
    list_push_take(l, val_double(-0.0), "d");
    list_push_take(l, val_bool(true), "b");
    list_push_take(l, val_str_take(str_from("lr=0.01, \"quoted\"")), "s");
    list_push_take(l, val_none(), "left out");      /* an entry a pull does not carry (readset.c) */
    List *inner = list_new(2, false);
    Matrix *v = mat_new_raw(1, 1);
    v->data[0] = 42;
    list_push_take(inner, val_matrix_take(v), NULL);
    list_push_take(inner, val_str_take(str_from("")), NULL);
    list_push_take(l, val_list_take(inner), "nested");
    return val_list_take(l);
}

/* Every strict prefix of b is refused as malformed (not out of memory)
 * and yields nothing to free. */
static bool prefixes_refused(const WBuf *b)
{
    size_t refused = 0;
    for (size_t n = 0; n < b->len; n++) {
        WRead t = {.p = b->p, .len = n};
        Value x = wr_value(&t);
        refused += t.bad && !t.oom && x.kind == VAL_NONE;
        val_release(x);
    }
    return refused == b->len;
}

static void test_roundtrip(void)
{
    Value v = sample();
    WBuf b = {0};
    wb_value(&b, v);
    CHECK(!b.oom);
    WRead r = {.p = b.p, .len = b.len};
    Value w = wr_value(&r);
    CHECK(!r.bad);
    CHECK(r.pos == r.len);
    CHECK(same_value(v, w));
    val_release(w);

    /* Every strict prefix is refused, and yields nothing to free. */
    CHECK(prefixes_refused(&b));

    /* Garbage in the kind word and in a matrix's shape. */
    char *g = malloc(b.len);
    memcpy(g, b.p, b.len);
    int64_t bogus = 99;
    memcpy(g, &bogus, sizeof bogus);
    WRead t = {.p = g, .len = b.len};
    Value x = wr_value(&t);
    CHECK(t.bad && x.kind == VAL_NONE);
    memcpy(g, b.p, b.len);
    /* List header: kind, n, named; then the first name and the matrix kind,
     * rows: make rows enormous. */
    size_t rows_at = 3 * 8 + 8 + 1 + 8;     /* "W" is one byte */
    int64_t huge = INT64_MAX / 4;
    memcpy(g + rows_at, &huge, sizeof huge);
    t = (WRead){.p = g, .len = b.len};
    x = wr_value(&t);
    CHECK(t.bad && x.kind == VAL_NONE);
    free(g);
    wb_free(&b);
    val_release(v);
}

/* A sparse matrix (a sparse partition, issue 31) crosses in its CSR form,
 * inline in a layout too (its cells are not among wire_matrices'); every
 * strict prefix and a broken invariant (a column out of range, columns not
 * ascending) are refused. */
static void test_sparse(void)
{
    double cells[4 * 5] = {0, 1.5, 0, 0, -2, 0, 0, 0, 0, 0, NAN, 0, 0, 3, 0, 0, 0, 0, 0, 1e-300};
    SpMat *sp = sp_from_dense(cells, 4, 5, -1);
    CHECK(sp != NULL);
    List *l = list_new(2, false);
    list_push_take(l, val_matrix_take(mat_new_sparse_take(sp)), NULL);
    Matrix *d = mat_new_raw(2, 2);
    for (int i = 0; i < 4; i++)
        d->data[i] = i;
    list_push_take(l, val_matrix_take(d), NULL);
    Value v = val_list_take(l);
    CHECK(wire_matrices(v, NULL, 0) == 1);      /* only the dense one travels apart */

    WBuf b = {0};
    wb_value(&b, v);
    WRead r = {.p = b.p, .len = b.len};
    Value w = wr_value(&r);
    CHECK(!r.bad && r.pos == r.len && same_value(v, w));
    val_release(w);
    CHECK(prefixes_refused(&b));

    /* list kind, n, named; then the sparse kind, rows, cols, nnz, rowptr
     * (5 int64), colidx (5 int32). */
    size_t col_at = 3 * 8 + 4 * 8 + 5 * 8;
    char *g = malloc(b.len);
    int32_t bad_cols[2] = {7, 0};               /* out of range; then not ascending */
    for (int i = 0; i < 2; i++) {
        memcpy(g, b.p, b.len);
        memcpy(g + col_at + (size_t)i * 4, &bad_cols[i], sizeof bad_cols[i]);
        WRead t = {.p = g, .len = b.len};
        Value x = wr_value(&t);
        CHECK(t.bad && !t.oom && x.kind == VAL_NONE);
    }
    free(g);
    wb_free(&b);

    WBuf lb = {0};
    wb_value_layout(&lb, v);
    WRead lr = {.p = lb.p, .len = lb.len};
    Value lw = wr_value_layout(&lr, 1 << 20);
    CHECK(!lr.bad && lr.pos == lr.len && lw.kind == VAL_LIST && lw.l->n == 2 &&
          same_value(v.l->items[0], lw.l->items[0]));
    val_release(lw);
    wb_free(&lb);
    val_release(v);
}

static void test_layout(void)
{
    Value v = sample();
    WBuf b = {0};
    wb_value_layout(&b, v);
    WRead r = {.p = b.p, .len = b.len};
    Value w = wr_value_layout(&r, UINT64_MAX);
    CHECK(!r.bad);
    Matrix *src[8], *dst[8];
    int64_t n = wire_matrices(v, src, 8);
    CHECK(n == 3);
    CHECK(wire_matrices(w, dst, 8) == n);
    for (int64_t i = 0; i < n && i < 8; i++) {
        CHECK(src[i]->rows == dst[i]->rows && src[i]->cols == dst[i]->cols);
        if (mat_len(src[i]))
            memcpy(dst[i]->data, src[i]->data, sizeof(double) * (size_t)mat_len(src[i]));
    }
    CHECK(same_value(v, w));
    val_release(w);
    wb_free(&b);
    val_release(v);
}

/* One walk over a record's fields (WIO) writes it and reads it back the
 * same; a truncated record reads as 'bad' and leaks nothing. */
typedef struct Rec {
    int64_t i;
    uint64_t u;
    double d;
    const char *s, *absent, *text;
    size_t len;
    Value v;
} Rec;

static void xfer_rec(WIO *x, Rec *r)
{
    wio_i64(x, &r->i);
    wio_u64(x, &r->u);
    wio_f64(x, &r->d);
    wio_str(x, &r->s);
    wio_str(x, &r->absent);
    wio_text(x, &r->text, &r->len);
    wio_value(x, &r->v);
}

static void rec_free(Rec *r)
{
    free((char *)r->s);
    free((char *)r->absent);
    free((char *)r->text);
    val_release(r->v);
}

static void test_wio(void)
{
    Rec a = {.i = -5, .u = UINT64_MAX, .d = -0.0, .s = "upd", .text = "a\0b", .len = 3, .v = sample()};
    WBuf b = {0};
    xfer_rec(&(WIO){.w = &b}, &a);
    CHECK(!b.oom);
    WRead r = {.p = b.p, .len = b.len};
    Rec c = {0};
    xfer_rec(&(WIO){.r = &r}, &c);
    CHECK(!r.bad && r.pos == r.len);
    CHECK(c.i == -5 && c.u == UINT64_MAX && signbit(c.d) && c.d == 0);
    CHECK(c.s && strcmp(c.s, "upd") == 0 && c.absent == NULL);
    CHECK(c.len == 3 && c.text && memcmp(c.text, "a\0b", 4) == 0);
    CHECK(same_value(a.v, c.v));
    rec_free(&c);
    int refused = 0;
    for (size_t n = 0; n < b.len; n++) {
        WRead t = {.p = b.p, .len = n};
        Rec d = {.v = val_none()};
        xfer_rec(&(WIO){.r = &t}, &d);
        refused += t.bad && !t.oom && d.v.kind == VAL_NONE;
        rec_free(&d);
    }
    CHECK(refused == (int)b.len);

    /* A failed allocation at any point of the read is 'bad' and 'oom' (out
     * of memory, not a malformed message: a worker rank says which). */
    int oom = 0;
    long n;
    for (n = 1; n < 10000; n++) {
        WRead t = {.p = b.p, .len = b.len};
        Rec d = {.v = val_none()};
        failalloc_set(n);
        xfer_rec(&(WIO){.r = &t}, &d);
        bool fired = failalloc_fired();
        failalloc_set(0);
        rec_free(&d);
        if (!fired)
            break;
        oom += t.bad && t.oom;
    }
    CHECK(n > 1 && n < 10000);
    CHECK(oom == n - 1);
    wb_free(&b);
    val_release(a.v);
}

/* A scalar cut short is refused and yields NONE, as the header promises
 * (the fuzz target found wr_value returning the scalar 0 with 'bad' set). */
static void test_truncated_scalar_is_none(void)
{
    static const int64_t kinds[] = {1, 2, 3};     /* WIRE_BOOL, WIRE_INT, WIRE_DOUBLE */
    for (int i = 0; i < 3; i++) {
        char buf[12];
        memcpy(buf, &kinds[i], 8);
        memset(buf + 8, 0, 4);
        WRead r = {.p = buf, .len = sizeof buf};
        Value v = wr_value(&r);
        CHECK(r.bad && !r.oom && v.kind == VAL_NONE);
        r = (WRead){.p = buf, .len = sizeof buf};
        v = wr_value_layout(&r, UINT64_MAX);
        CHECK(r.bad && !r.oom && v.kind == VAL_NONE);
    }
}

/* A layout's matrices may claim at most its budget of cell bytes in all;
 * past it the layout is malformed (not out of memory: nothing was tried). */
static void test_layout_budget(void)
{
    WBuf b = {0};
    wb_i64(&b, 6);      /* WIRE_LIST of three 16x16 matrices (2 KiB each) */
    wb_i64(&b, 3);
    wb_i64(&b, 0);
    for (int i = 0; i < 3; i++) {
        wb_i64(&b, 5);
        wb_i64(&b, 16);
        wb_i64(&b, 16);
    }
    WRead r = {.p = b.p, .len = b.len};
    Value v = wr_value_layout(&r, 3 * 2048);
    CHECK(!r.bad && v.kind == VAL_LIST && v.l->n == 3);
    val_release(v);
    r = (WRead){.p = b.p, .len = b.len};
    v = wr_value_layout(&r, 3 * 2048 - 1);
    CHECK(r.bad && !r.oom && v.kind == VAL_NONE);
    wb_free(&b);
    /* One matrix of 2^40 cells, with the budget of a large host. */
    wb_i64(&b, 5);
    wb_i64(&b, (int64_t)1 << 20);
    wb_i64(&b, (int64_t)1 << 20);
    r = (WRead){.p = b.p, .len = b.len};
    v = wr_value_layout(&r, (uint64_t)1 << 40);
    CHECK(r.bad && !r.oom && v.kind == VAL_NONE);
    wb_free(&b);
}

int main(void)
{
    test_truncated_scalar_is_none();
    test_layout_budget();
    test_roundtrip();
    test_layout();
    test_sparse();
    test_wio();
    return CHECK_DONE();
}
