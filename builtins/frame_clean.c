/* SPDX-License-Identifier: Apache-2.0
 * Frame cleaning natives (doc/frames.md, "Cleaning"): detectSchema,
 * dropInvalidType, dropInvalidLength, and map's error. They classify cell
 * text as upstream's FrameBlock.isType does. Thread-safe: all state comes
 * from the arguments. */
#include "registry.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/frame.h"

/* Upstream's value types in the order detectSchema widens them. */
typedef enum Vt { VT_UNKNOWN, VT_BOOLEAN, VT_INT32, VT_INT64, VT_FP32, VT_FP64, VT_STRING } Vt;

static const char *vt_name(Vt t)
{
    static const char *const names[] = {"UNKNOWN", "BOOLEAN", "INT32", "INT64", "FP32", "FP64", "STRING"};
    return names[t];
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* [-+]?[0-9]*\.?[0-9]*([eE][-+]?[0-9]+)? over the whole of s. */
static bool float_shape(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    while (isdigit((unsigned char)*s))
        s++;
    if (*s == '.')
        s++;
    while (isdigit((unsigned char)*s))
        s++;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return !*s;
}

/* The value type of a cell's text, as upstream's isType: the text trimmed,
 * without double quotes and in lower case; "true", "false", "t", "f", "0",
 * "1" are BOOLEAN, other integers INT32 or INT64 by range, decimals,
 * "infinity" and "nan" FP32 when within the float range (NaN and the
 * infinities are not: FP64), anything else STRING. 's' is scratch of
 * n + 1 bytes. */
static Vt is_type(const char *txt, size_t n, char *s)
{
    while (n && (unsigned char)*txt <= ' ')
        txt++, n--;
    while (n && (unsigned char)txt[n - 1] <= ' ')
        n--;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (txt[i] != '"')
            s[k++] = (char)tolower((unsigned char)txt[i]);
    s[k] = '\0';
    if (!strcmp(s, "true") || !strcmp(s, "false") || !strcmp(s, "t") || !strcmp(s, "f") || !strcmp(s, "0") ||
        !strcmp(s, "1"))
        return VT_BOOLEAN;
    const char *d = s + (*s == '-' || *s == '+');
    if (all_digits(d)) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == ERANGE)
            return VT_FP64;     /* beyond a long: upstream's parse fails; as a double */
        return v >= INT32_MIN && v <= INT32_MAX ? VT_INT32 : VT_INT64;
    }
    if (float_shape(s) || !strcmp(s, "infinity") || !strcmp(s, "-infinity") || !strcmp(s, "nan")) {
        char *e;
        double v = strtod(s, &e);
        if (e == s || *e)
            return VT_STRING;   /* ".", "-", "" have the shape but are no number */
        return v >= -FLT_MAX && v <= FLT_MAX ? VT_FP32 : VT_FP64;
    }
    return VT_STRING;
}

/* The type of cell (i, j) of f (VT_UNKNOWN for a missing string). */
static Vt cell_type(const FrameBlock *f, int64_t i, int64_t j, StrBuf *b, char **scratch, size_t *cap, bool *oom)
{
    const char *t;
    size_t n;
    if (f->col[j].type == FT_STRING) {
        const Str *x = f->col[j].s[i];
        if (!x)
            return VT_UNKNOWN;
        t = x->s;
        n = (size_t)x->len;
    } else {
        b->len = 0;
        frame_cell_text(b, f, i, j);
        t = b->p ? b->p : "";
        n = b->len;
        if (b->oom) {
            *oom = true;
            return VT_UNKNOWN;
        }
    }
    if (n + 1 > *cap) {
        char *g = realloc(*scratch, n + 1);
        if (!g) {
            *oom = true;
            return VT_UNKNOWN;
        }
        *scratch = g;
        *cap = n + 1;
    }
    return is_type(t, n, *scratch);
}

/* detectSchema(F): a 1 x ncol STRING frame of the narrowest value type that
 * holds every cell of each column (BOOLEAN < INT32 < INT64 < FP32 < FP64 <
 * STRING); a column of missing values only is STRING. */
static Status bi_detectSchema(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[0].kind != VAL_FRAME)
        return arg_type_error(I, a, 0, "a frame");
    const FrameBlock *f = a->v[0].f;
    FrameBlock *r = frame_alloc(I, 1, f->cols, NULL);
    if (!r)
        return ST_ERR;
    StrBuf b;
    sb_init(&b);
    char *scratch = NULL;
    size_t cap = 0;
    bool oom = false;
    for (int64_t j = 0; j < f->cols && !oom; j++) {
        Vt state = VT_UNKNOWN;
        for (int64_t i = 0; i < f->rows && state != VT_STRING && !oom; i++) {
            Vt t = cell_type(f, i, j, &b, &scratch, &cap, &oom);
            state = t > state ? t : state;
        }
        r->col[j].s[0] = str_from(vt_name(state == VT_UNKNOWN ? VT_STRING : state));
        oom = oom || !r->col[j].s[0];
    }
    sb_free(&b);
    free(scratch);
    if (oom) {
        frame_release(r);
        return err_set(I, "detectSchema(): out of memory");
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* Makes cell (i, j) of the unshared f missing: NULL for a string, NaN for
 * FP64, 0 (FALSE) otherwise, as a missing value reads from csv. */
static void set_missing(FrameBlock *f, int64_t i, int64_t j)
{
    FrameCol *c = &f->col[j];
    switch (c->type) {
    case FT_STRING:
        str_release(c->s[i]);
        c->s[i] = NULL;
        break;
    case FT_DOUBLE: c->d[i] = NAN; break;
    case FT_INT: c->i[i] = 0; break;
    case FT_BOOL: c->b[i] = 0; break;
    }
}

/* Whether a value of type t belongs in a column whose schema names 'want'
 * (FP, INT or the type's name): its name contains it, or it is a BOOLEAN
 * in an INT or FP column, or an integer in an FP column, as upstream's
 * valueSwap allows. */
static bool type_fits(Vt t, const char *want)
{
    const char *name = vt_name(t);
    if (strstr(name, want))
        return true;
    if (t == VT_BOOLEAN && (!strcmp(want, "INT") || !strcmp(want, "FP")))
        return true;
    return (t == VT_INT32 || t == VT_INT64) && !strcmp(want, "FP");
}

/* dropInvalidType(F, S): F with every cell that is not of its column's type
 * in the 1 x ncol schema frame S made missing; STRING columns are kept. */
static Status bi_dropInvalidType(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[0].kind != VAL_FRAME)
        return arg_type_error(I, a, 0, "a frame");
    if (a->v[1].kind != VAL_FRAME)
        return arg_type_error(I, a, 1, "a frame (1 x ncol, of value type names)");
    const FrameBlock *f = a->v[0].f, *s = a->v[1].f;
    if (f->cols != s->cols || s->rows < 1)
        return err_set(I, "dropInvalidType(): mismatch in number of columns in frame and its schema %lld != %lld",
                       (long long)f->cols, (long long)(s->rows < 1 ? 0 : s->cols));
    FrameBlock *r = frame_clone_raw(f);
    if (!r)
        return err_set(I, "dropInvalidType(): out of memory");
    StrBuf b, w;
    sb_init(&b);
    sb_init(&w);
    char *scratch = NULL;
    size_t cap = 0;
    bool oom = false;
    for (int64_t j = 0; j < f->cols && !oom; j++) {
        w.len = 0;
        frame_cell_text(&w, s, 0, j);
        if (w.oom) {
            oom = true;
            break;
        }
        char empty[1] = "";
        char *want = w.p ? w.p : empty;
        for (char *p = want; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        if (strstr(want, "STRING"))
            continue;
        const char *type = strstr(want, "FP") ? "FP" : strstr(want, "INT") ? "INT" : want;
        for (int64_t i = 0; i < f->rows && !oom; i++) {
            Vt t = cell_type(f, i, j, &b, &scratch, &cap, &oom);
            if (t != VT_UNKNOWN && !type_fits(t, type))
                set_missing(r, i, j);
        }
    }
    sb_free(&b);
    sb_free(&w);
    free(scratch);
    if (oom) {
        frame_release(r);
        return err_set(I, "dropInvalidType(): out of memory");
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* Characters of UTF-8 text (code points; Java counts UTF-16 units, the
 * same outside the astral planes). */
static int64_t text_length(const char *s, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* dropInvalidLength(F, L): F with every cell whose text is longer than its
 * column's entry of the 1 x ncol matrix L made missing; -1 keeps a column
 * as it is. */
static Status bi_dropInvalidLength(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[0].kind != VAL_FRAME)
        return arg_type_error(I, a, 0, "a frame");
    Matrix *L;
    TRY(arg_matrix(I, a, 1, &L));
    const FrameBlock *f = a->v[0].f;
    if (L->cols != f->cols || L->rows < 1)
        return err_set(I, "dropInvalidLength(): mismatch in number of columns in frame and corresponding "
                       "feature-length vector (%lld != %lld)", (long long)f->cols, (long long)L->cols);
    FrameBlock *r = frame_clone_raw(f);
    if (!r)
        return err_set(I, "dropInvalidLength(): out of memory");
    StrBuf b;
    sb_init(&b);
    for (int64_t j = 0; j < f->cols && !b.oom; j++) {
        double lim = L->data[j];
        if (lim == -1)
            continue;
        for (int64_t i = 0; i < f->rows && !b.oom; i++) {
            if (f->col[j].type == FT_STRING && !f->col[j].s[i])
                continue;
            b.len = 0;
            frame_cell_text(&b, f, i, j);
            if (!b.oom && (double)text_length(b.p ? b.p : "", b.len) > trunc(lim))
                set_missing(r, i, j);
        }
    }
    bool oom = b.oom;
    sb_free(&b);
    if (oom) {
        frame_release(r);
        return err_set(I, "dropInvalidLength(): out of memory");
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* map(F, "x -> ...") applies a Java lambda upstream; dml runs no Java. */
static Status bi_map(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    if (a->v[0].kind != VAL_FRAME && a->v[0].kind != VAL_MATRIX)
        return arg_type_error(I, a, 0, "a frame");
    if (a->v[1].kind != VAL_STRING)
        return arg_type_error(I, a, 1, "a string (a Java lambda expression)");
    return err_set(I, "map(): Java lambda expressions ('%.60s') are not supported by dml: use DML's string "
                   "builtins in a loop over the cells", a->v[1].s->s);
}

const BuiltinDef bi_frame_clean_table[] = {
    {"detectSchema", bi_detectSchema, "target", 1, BIND_POS, 1, 0},
    {"dropInvalidType", bi_dropInvalidType, "target,schema", 2, BIND_POS, 1, 0},
    {"dropInvalidLength", bi_dropInvalidLength, "target,lengths", 2, BIND_POS, 1, 0},
    {"map", bi_map, "target,expression,margin", 2, BIND_POS, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
