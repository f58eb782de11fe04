/* SPDX-License-Identifier: Apache-2.0
 * Frame storage (frame.h): allocation, copies, slices and cell access of the
 * column-wise FrameBlock. Invariants: a fresh frame has count 1; each column
 * array holds exactly 'rows' cells; string cells and names are owned Str
 * references or NULL. Thread-safe: no shared state; a frame is mutated only
 * by its sole owner. */
#include "frame.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "numparse.h"

static size_t cell_size(FrameType t)
{
    switch (t) {
    case FT_STRING: return sizeof(Str *);
    case FT_DOUBLE: return sizeof(double);
    case FT_INT: return sizeof(int64_t);
    case FT_BOOL: return sizeof(uint8_t);
    }
    return sizeof(double);
}

static void col_free(FrameCol *c, int64_t rows)
{
    if (c->type == FT_STRING && c->s)
        for (int64_t i = 0; i < rows; i++)
            str_release(c->s[i]);
    free(c->p);
    c->p = NULL;
}

/* Contract in frame.h. Also used on a partly built frame: columns not yet
 * allocated are NULL. */
void frame_free(FrameBlock *f)
{
    if (!f)
        return;
    for (int64_t j = 0; j < f->cols && f->col; j++)
        col_free(&f->col[j], f->rows);
    if (f->names)
        for (int64_t j = 0; j < f->cols; j++)
            str_release(f->names[j]);
    if (f->mv)
        for (int64_t j = 0; j < f->cols; j++)
            str_release(f->mv[j]);
    free(f->col);
    free(f->names);
    free(f->mv);
    free(f);
}

/* Contract in frame.h. calloc gives zero cells, FALSE and NULL strings. */
FrameBlock *frame_new_raw(int64_t rows, int64_t cols, const FrameType *types)
{
    if (rows < 0 || cols < 0 || (uint64_t)rows > SIZE_MAX / sizeof(double) ||
        (uint64_t)cols > SIZE_MAX / sizeof(FrameCol))
        return NULL;
    FrameBlock *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    atomic_init(&f->h.rc, 1);
    f->rows = rows;
    f->cols = cols;
    if (cols == 0)
        return f;
    f->col = calloc((size_t)cols, sizeof *f->col);
    if (!f->col) {
        free(f);
        return NULL;
    }
    for (int64_t j = 0; j < cols; j++) {
        FrameCol *c = &f->col[j];
        c->type = types ? types[j] : FT_STRING;
        if (rows > 0 && !(c->p = calloc((size_t)rows, cell_size(c->type)))) {
            frame_free(f);
            return NULL;
        }
    }
    return f;
}

static FrameType *types_of(const FrameBlock *f, int64_t c0, int64_t c1)
{
    FrameType *t = calloc((size_t)(c1 - c0) + 1, sizeof *t);
    if (t)
        for (int64_t j = c0; j < c1; j++)
            t[j - c0] = f->col[j].type;
    return t;
}

/* Contract in frame.h. */
FrameBlock *frame_slice_raw(const FrameBlock *f, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    FrameType *types = types_of(f, c0, c1);
    if (!types)
        return NULL;
    FrameBlock *r = frame_new_raw(r1 - r0, c1 - c0, types);
    free(types);
    if (!r)
        return NULL;
    for (int64_t j = c0; j < c1; j++) {
        const FrameCol *s = &f->col[j];
        FrameCol *d = &r->col[j - c0];
        d->narrow = s->narrow;
        if (r1 > r0)
            memcpy(d->p, (const char *)s->p + (size_t)r0 * cell_size(s->type),
                   (size_t)(r1 - r0) * cell_size(s->type));
        if (s->type == FT_STRING)
            for (int64_t i = 0; i < r1 - r0; i++)
                if (d->s[i])
                    obj_retain(&d->s[i]->h);
        if ((f->names && !frame_set_name(r, j - c0, f->names[j])) || (f->mv && !frame_set_mv(r, j - c0, f->mv[j]))) {
            frame_free(r);
            return NULL;
        }
    }
    return r;
}

/* Contract in frame.h. */
FrameBlock *frame_clone_raw(const FrameBlock *f)
{
    return frame_slice_raw(f, 0, f->rows, 0, f->cols);
}

/* Sets entry j of the per-column array *a (allocated on first use). */
static bool set_col_str(Str ***a, int64_t cols, int64_t j, Str *s)
{
    if (!*a) {
        if (!s)
            return true;
        *a = calloc((size_t)cols, sizeof **a);
        if (!*a)
            return false;
    }
    if (s)
        obj_retain(&s->h);
    str_release((*a)[j]);
    (*a)[j] = s;
    return true;
}

/* Contract in frame.h. */
bool frame_set_name(FrameBlock *f, int64_t j, Str *name)
{
    return set_col_str(&f->names, f->cols, j, name);
}

/* Contract in frame.h. */
bool frame_set_mv(FrameBlock *f, int64_t j, Str *mv)
{
    return set_col_str(&f->mv, f->cols, j, mv);
}

/* Contract in frame.h. */
const char *frame_col_name(const FrameBlock *f, int64_t j, char *buf, size_t cap)
{
    if (f->names && f->names[j])
        snprintf(buf, cap, "%s", f->names[j]->s);
    else
        snprintf(buf, cap, "C%lld", (long long)j + 1);
    return buf;
}

/* Contract in frame.h. */
bool frame_default_names(const FrameBlock *f)
{
    if (!f->names)
        return true;
    for (int64_t j = 0; j < f->cols; j++)
        if (f->names[j])
            return false;
    return true;
}

/* Contract in frame.h. */
const char *frame_type_name(FrameType t)
{
    switch (t) {
    case FT_STRING: return "STRING";
    case FT_DOUBLE: return "FP64";
    case FT_INT: return "INT64";
    case FT_BOOL: return "BOOLEAN";
    }
    return "STRING";
}

/* Contract in frame.h. */
const char *frame_col_type_name(const FrameCol *c)
{
    if (c->narrow && c->type == FT_DOUBLE)
        return "FP32";
    if (c->narrow && c->type == FT_INT)
        return "INT32";
    return frame_type_name(c->type);
}

/* Contract in frame.h. */
bool frame_type_parse(const char *s, size_t n, FrameType *out, bool *narrow)
{
    static const struct { const char *w; FrameType t; bool narrow; } words[] = {
        {"STRING", FT_STRING, false}, {"STR", FT_STRING, false}, {"FP64", FT_DOUBLE, false},
        {"FP32", FT_DOUBLE, true}, {"DOUBLE", FT_DOUBLE, false}, {"INT64", FT_INT, false},
        {"INT32", FT_INT, true}, {"INT", FT_INT, false}, {"BOOLEAN", FT_BOOL, false}, {"BOOL", FT_BOOL, false},
    };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (strlen(words[k].w) == n && strncasecmp(words[k].w, s, n) == 0) {
            *out = words[k].t;
            if (narrow)
                *narrow = words[k].narrow;
            return true;
        }
    return false;
}

/* Contract in frame.h. Beyond the float range the conversion is done by
 * hand (C leaves it undefined; Java rounds to the largest float or to the
 * infinity, at half an ulp past it). */
double frame_narrow_double(const FrameCol *c, double d)
{
    if (!c->narrow || d != d)
        return d;
    double a = fabs(d);
    if (a > FLT_MAX)
        return copysign(a >= 0x1.ffffffp127 ? INFINITY : FLT_MAX, d);
    return (double)(float)d;
}

/* An INT32 column's integer wrapped to 32 bits as Java's cast does. */
static int64_t frame_narrow_int(const FrameCol *c, int64_t v)
{
    return c->narrow ? (int64_t)(int32_t)(uint32_t)(uint64_t)v : v;
}

/* Contract in frame.h. */
void frame_set_narrow(FrameBlock *f, const bool *narrow)
{
    for (int64_t j = 0; narrow && j < f->cols; j++)
        f->col[j].narrow = narrow[j] && (f->col[j].type == FT_DOUBLE || f->col[j].type == FT_INT);
}

/* Contract in frame.h. */
Value frame_get(const FrameBlock *f, int64_t i, int64_t j)
{
    const FrameCol *c = &f->col[j];
    switch (c->type) {
    case FT_DOUBLE: return val_double(c->d[i]);
    case FT_INT: return val_int(c->i[i]);
    case FT_BOOL: return val_bool(c->b[i] != 0);
    case FT_STRING:
        break;
    }
    Str *s = c->s[i];
    if (s) {
        obj_retain(&s->h);
        return val_str_take(s);
    }
    s = str_new("", 0);
    return s ? val_str_take(s) : val_none();
}

/* Contract in frame.h. */
void frame_copy_cell(FrameBlock *dst, int64_t di, int64_t dj, const FrameBlock *src, int64_t si, int64_t sj)
{
    FrameCol *d = &dst->col[dj];
    const FrameCol *s = &src->col[sj];
    switch (d->type) {
    case FT_DOUBLE: d->d[di] = frame_narrow_double(d, s->d[si]); break;
    case FT_INT: d->i[di] = frame_narrow_int(d, s->i[si]); break;
    case FT_BOOL: d->b[di] = s->b[si]; break;
    case FT_STRING: {
        Str *v = s->s[si];
        if (v)
            obj_retain(&v->h);
        str_release(d->s[di]);
        d->s[di] = v;
        break;
    }
    }
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* s[0..n) without the blanks around it. */
static void trim_blanks(const char **s, size_t *n)
{
    while (*n && is_blank(**s))
        (*s)++, (*n)--;
    while (*n && is_blank((*s)[*n - 1]))
        (*n)--;
}

/* The number in s[0..n) (blanks around it allowed), by Java's
 * Double.parseDouble as upstream's frames parse; false if it is not one. */
static bool parse_double(const char *s, size_t n, double *out)
{
    trim_blanks(&s, &n);
    return n > 0 && num_parse_double(s, n, out);
}

/* An INT64 cell from text: [+-]digits by Long.parseLong's rule, exact to
 * 2^63 - 1 (never through a double, which would round the last digits
 * away); else an integral number such as "3.0" or "1e3". */
static bool parse_int(const char *s, size_t n, int64_t *out)
{
    trim_blanks(&s, &n);
    size_t k = n && (*s == '+' || *s == '-');
    bool digits = k < n;
    for (size_t q = k; q < n && digits; q++)
        digits = s[q] >= '0' && s[q] <= '9';
    if (digits)
        return num_parse_long(s, n, out);   /* out of range: not INT64 */
    double d;
    /* 2^63 itself is out of range */
    if (!parse_double(s, n, &d) || d != d || d < -9223372036854775808.0 || d >= 9223372036854775808.0 ||
        d != (double)(int64_t)d)
        return false;
    *out = (int64_t)d;
    return true;
}

/* Contract in frame.h. */
bool frame_put_text(FrameBlock *f, int64_t i, int64_t j, const char *s, size_t n, bool *oom)
{
    FrameCol *c = &f->col[j];
    double d;
    switch (c->type) {
    case FT_STRING: {
        Str *v = str_new(s, n);
        if (!v) {
            *oom = true;
            return false;
        }
        str_release(c->s[i]);
        c->s[i] = v;
        return true;
    }
    case FT_DOUBLE:
        if (!parse_double(s, n, &d))
            return false;
        c->d[i] = frame_narrow_double(c, d);
        return true;
    case FT_INT: {
        int64_t v;
        if (!parse_int(s, n, &v))
            return false;
        if (c->narrow && (v < INT32_MIN || v > INT32_MAX))
            return false;   /* upstream's Integer.parseInt fails */
        c->i[i] = v;
        return true;
    }
    case FT_BOOL: {
        while (n && is_blank(*s))
            s++, n--;
        while (n && is_blank(s[n - 1]))
            n--;
        static const char *const yes[] = {"true", "t", "1", "1.0"}, *const no[] = {"false", "f", "0", "0.0"};
        for (int k = 0; k < 4; k++) {
            if (strlen(yes[k]) == n && strncasecmp(yes[k], s, n) == 0) {
                c->b[i] = 1;
                return true;
            }
            if (strlen(no[k]) == n && strncasecmp(no[k], s, n) == 0) {
                c->b[i] = 0;
                return true;
            }
        }
        return false;
    }
    }
    return false;
}
