/* SPDX-License-Identifier: Apache-2.0
 * Core builtins: the statements print/stop/assert, toString, the as.*
 * conversions, shape queries (nrow, ncol, length), ifelse, time and the
 * NaN/Inf indicators. print() implements the Java String.format subset that
 * upstream scripts use. Thread-safe: all state comes from the Interp. */
#include "registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/frame.h"
#include "../runtime/ops.h"
#include "../runtime/fmt.h"
#include "../runtime/tostring.h"

/* ===================== Java-style number formatting ===================== */

/* Shortest decimal digits that round-trip x (x finite, > 0), as Java's
 * Double.toString finds them: x = 0.d1d2..dn * 10^(*e10 + 1), i.e. the first
 * digit has place value 10^(*e10). Returns n. */
static int shortest_digits(double x, char *dig, int *e10)
{
    char buf[40];
    for (int p = 0; p <= 16; p++) {
        snprintf(buf, sizeof buf, "%.*e", p, x);
        if (strtod(buf, NULL) == x || p == 16)
            break;
    }
    /* buf = "d.ddde[+-]XX" */
    int n = 0;
    char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            dig[n++] = *s;
    *e10 = *s == 'e' ? atoi(s + 1) : 0;
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    return n;
}

/* Round the digit string to 'keep' digits, half-up (Java's Formatter rounds
 * the shortest repr this way). Updates n and e10; keep may be <= 0. */
static void round_digits(char *dig, int *n, int *e10, int keep)
{
    if (keep >= *n)
        return;
    if (keep < 0) {
        dig[0] = '0'; dig[1] = '\0'; *n = 1;
        return;
    }
    bool up = dig[keep] >= '5';
    *n = keep;
    dig[keep] = '\0';
    if (!up) {
        if (keep == 0) { dig[0] = '0'; dig[1] = '\0'; *n = 1; *e10 = 0; }
        return;
    }
    int k = keep - 1;
    while (k >= 0 && dig[k] == '9') {
        dig[k] = '0';
        k--;
    }
    if (k >= 0) {
        dig[k]++;
    } else {
        memmove(dig + 1, dig, (size_t)keep + 1);
        dig[0] = '1';
        (*n)++;
        (*e10)++;
        dig[*n] = '\0';
    }
}

/* Digits of |x| in fixed notation with 'prec' fraction digits into sb. */
static void put_fixed(StrBuf *b, double ax, int prec)
{
    if (ax == 0) {
        sb_putn(b, "0", 1);
        if (prec > 0) {
            sb_putn(b, ".", 1);
            for (int i = 0; i < prec; i++) sb_putn(b, "0", 1);
        }
        return;
    }
    char dig[48];
    int e10;
    int n = shortest_digits(ax, dig, &e10);
    int keep = e10 + prec + 1;
    if (keep <= 0 && !(keep == 0 && dig[0] >= '5')) {
        n = 1; dig[0] = '0'; dig[1] = '\0'; e10 = 0;
    } else if (keep == 0) {
        /* rounds up to 10^-prec */
        dig[0] = '1'; dig[1] = '\0'; n = 1; e10 = -prec;
    } else {
        round_digits(dig, &n, &e10, keep);
    }
    /* integer part */
    if (e10 < 0) {
        sb_putn(b, "0", 1);
    } else {
        for (int k = 0; k <= e10; k++)
            sb_putn(b, k < n ? &dig[k] : "0", 1);
    }
    if (prec > 0) {
        sb_putn(b, ".", 1);
        for (int f = 1; f <= prec; f++) {
            int k = e10 + f;        /* index of the digit with place 10^-f */
            sb_putn(b, (k >= 0 && k < n) ? &dig[k] : "0", 1);
        }
    }
}

/* |x| as d.ddd(prec)e+XX (Java %e). */
static void put_sci(StrBuf *b, double ax, int prec, bool upper)
{
    char dig[48];
    int e10 = 0, n;
    if (ax == 0) {
        dig[0] = '0'; dig[1] = '\0'; n = 1;
    } else {
        n = shortest_digits(ax, dig, &e10);
        round_digits(dig, &n, &e10, prec + 1);
    }
    sb_putn(b, dig, 1);
    if (prec > 0) {
        sb_putn(b, ".", 1);
        for (int k = 1; k <= prec; k++)
            sb_putn(b, k < n ? &dig[k] : "0", 1);
    }
    sb_printf(b, "%c%c%02d", upper ? 'E' : 'e', e10 < 0 ? '-' : '+', abs(e10));
}

/* Insert ',' every three digits of the integer part of s (digits, then optional '.'). */
static void group_digits(StrBuf *out, const char *s)
{
    size_t ilen = strcspn(s, ".");
    for (size_t k = 0; k < ilen; k++) {
        if (k > 0 && (ilen - k) % 3 == 0)
            sb_putn(out, ",", 1);
        sb_putn(out, s + k, 1);
    }
    sb_puts(out, s + ilen);
}

typedef struct FmtSpec {
    bool left, plus, space, zero, comma, paren, alt;
    int width;              /* -1: none */
    int prec;               /* -1: none */
    char conv;
} FmtSpec;

/* Pad 'body' (sign separate) to the field width and append to b. */
static void emit_field(StrBuf *b, const FmtSpec *f, const char *sign, const char *body, const char *suffix,
                       bool numeric)
{
    size_t len = strlen(sign) + strlen(body) + strlen(suffix);
    size_t pad = (f->width > 0 && (size_t)f->width > len) ? (size_t)f->width - len : 0;
    if (f->left) {
        sb_puts(b, sign); sb_puts(b, body); sb_puts(b, suffix);
        for (size_t k = 0; k < pad; k++) sb_putn(b, " ", 1);
    } else if (f->zero && numeric) {
        sb_puts(b, sign);
        for (size_t k = 0; k < pad; k++) sb_putn(b, "0", 1);
        sb_puts(b, body); sb_puts(b, suffix);
    } else {
        for (size_t k = 0; k < pad; k++) sb_putn(b, " ", 1);
        sb_puts(b, sign); sb_puts(b, body); sb_puts(b, suffix);
    }
}

static const char *sign_for(const FmtSpec *f, bool neg)
{
    if (neg)
        return f->paren ? "(" : "-";
    return f->plus ? "+" : f->space ? " " : "";
}

/* Upstream's name of a non-scalar data type, for the print() errors. */
static const char *dt_upper(ValKind k)
{
    return k == VAL_LIST ? "LIST" : k == VAL_FRAME ? "FRAME" : "MATRIX";
}

/* Java String.valueOf of a DML scalar (booleans are lower case there). */
static Status java_string_of(Interp *I, Value v, StrBuf *b)
{
    char buf[40];
    switch (v.kind) {
    case VAL_BOOL: sb_puts(b, v.b ? "true" : "false"); return ST_OK;
    case VAL_INT: sb_printf(b, "%lld", (long long)v.i); return ST_OK;
    case VAL_DOUBLE: fmt_double_java(v.d, buf); sb_puts(b, buf); return ST_OK;
    case VAL_STRING: sb_puts(b, v.s->s); return ST_OK;
    default:
        return err_set(I, "Print statements can only print scalars. To print a %s, please wrap it in a "
                       "toString() function.", dt_upper(v.kind));
    }
}

static Status fmt_conv_error(Interp *I, const FmtSpec *f, Value v)
{
    return err_set(I, "print(): format specifier '%%%c' does not accept a %s argument", f->conv,
                   val_kind_name(v.kind));
}

/* Format one argument according to spec f. */
static Status format_one(Interp *I, StrBuf *b, const FmtSpec *f, Value v)
{
    StrBuf t;
    sb_init(&t);
    Status st = ST_OK;
    char c = f->conv;
    switch (c) {
    case 'd': {
        if (v.kind != VAL_INT) { st = fmt_conv_error(I, f, v); break; }
        bool neg = v.i < 0;
        char digits[32];
        snprintf(digits, sizeof digits, "%llu",
                 neg ? (unsigned long long)0 - (unsigned long long)v.i : (unsigned long long)v.i);
        if (f->comma) group_digits(&t, digits); else sb_puts(&t, digits);
        emit_field(b, f, sign_for(f, neg), t.p ? t.p : "", neg && f->paren ? ")" : "", true);
        break;
    }
    case 'x': case 'X': case 'o': {
        if (v.kind != VAL_INT) { st = fmt_conv_error(I, f, v); break; }
        char digits[40];
        const char *pre = "";
        if (c == 'o') { snprintf(digits, sizeof digits, "%llo", (unsigned long long)v.i); if (f->alt) pre = "0"; }
        else if (c == 'x') { snprintf(digits, sizeof digits, "%llx", (unsigned long long)v.i); if (f->alt) pre = "0x"; }
        else { snprintf(digits, sizeof digits, "%llX", (unsigned long long)v.i); if (f->alt) pre = "0X"; }
        emit_field(b, f, pre, digits, "", true);
        break;
    }
    case 'f': case 'e': case 'E': case 'g': case 'G': {
        if (v.kind != VAL_DOUBLE) { st = fmt_conv_error(I, f, v); break; }
        double x = v.d;
        if (isnan(x)) { emit_field(b, f, "", "NaN", "", false); break; }
        bool neg = signbit(x) != 0;
        double ax = fabs(x);
        if (isinf(x)) {
            emit_field(b, f, sign_for(f, neg), "Infinity", neg && f->paren ? ")" : "", false);
            break;
        }
        int prec = f->prec < 0 ? 6 : f->prec;
        if (c == 'f') {
            StrBuf raw; sb_init(&raw);
            put_fixed(&raw, ax, prec);
            if (f->comma) group_digits(&t, raw.p ? raw.p : "0"); else sb_puts(&t, raw.p ? raw.p : "0");
            sb_free(&raw);
        } else if (c == 'e' || c == 'E') {
            put_sci(&t, ax, prec, c == 'E');
        } else {
            if (prec == 0) prec = 1;
            /* exponent after rounding to 'prec' significant digits */
            int e10 = 0;
            if (ax != 0) {
                char dig[48]; int n = shortest_digits(ax, dig, &e10);
                round_digits(dig, &n, &e10, prec);
            }
            if (ax != 0 && (ax < 1e-4 || e10 >= prec)) {
                put_sci(&t, ax, prec - 1, c == 'G');
            } else {
                StrBuf raw; sb_init(&raw);
                put_fixed(&raw, ax, prec - 1 - e10 > 0 ? prec - 1 - e10 : 0);
                if (f->comma) group_digits(&t, raw.p ? raw.p : "0"); else sb_puts(&t, raw.p ? raw.p : "0");
                sb_free(&raw);
            }
        }
        emit_field(b, f, sign_for(f, neg), t.p ? t.p : "", neg && f->paren ? ")" : "", true);
        break;
    }
    case 's': case 'S': {
        st = java_string_of(I, v, &t);
        if (st) break;
        if (t.p && f->prec >= 0 && (size_t)f->prec < t.len) t.p[f->prec] = '\0';
        if (c == 'S' && t.p) for (char *p = t.p; *p; p++) if (*p >= 'a' && *p <= 'z') *p -= 32;
        emit_field(b, f, "", t.p ? t.p : "", "", false);
        break;
    }
    case 'b': case 'B': {
        const char *s = v.kind == VAL_BOOL ? (v.b ? "true" : "false") : "true";
        sb_puts(&t, c == 'B' ? (s[0] == 't' ? "TRUE" : "FALSE") : s);
        if (t.p && f->prec >= 0 && (size_t)f->prec < t.len) t.p[f->prec] = '\0';
        emit_field(b, f, "", t.p, "", false);
        break;
    }
    case 'c': {
        if (v.kind != VAL_INT || v.i < 0 || v.i > 0x10FFFF) { st = fmt_conv_error(I, f, v); break; }
        char u[5] = {0};
        uint32_t cp = (uint32_t)v.i;
        if (cp < 0x80) u[0] = (char)cp;
        else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 63)); }
        else if (cp < 0x10000) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 63)); u[2] = (char)(0x80 | (cp & 63)); }
        else { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 63)); u[2] = (char)(0x80 | ((cp >> 6) & 63)); u[3] = (char)(0x80 | (cp & 63)); }
        emit_field(b, f, "", u, "", false);
        break;
    }
    default:
        st = err_set(I, "print(): unknown format conversion '%%%c'", c);
    }
    sb_free(&t);
    return st;
}

/* Java String.format(fmt, args...) over DML scalars. */
static Status java_format(Interp *I, const char *fmt, const Value *args, int nargs, StrBuf *b)
{
    int next = 0, last = -1;
    for (const char *p = fmt; *p;) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            sb_putn(b, p, n);
            p += n;
            continue;
        }
        const char *start = p++;
        FmtSpec f = {.width = -1, .prec = -1};
        int index = -1;
        bool relative = false;
        /* explicit index 'n$' or '<' */
        const char *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if (q > p && *q == '$') {
            index = atoi(p) - 1;
            p = q + 1;
        } else if (*p == '<') {
            relative = true;
            p++;
        }
        for (;; p++) {
            if (*p == '-') f.left = true;
            else if (*p == '+') f.plus = true;
            else if (*p == ' ') f.space = true;
            else if (*p == '0') f.zero = true;
            else if (*p == ',') f.comma = true;
            else if (*p == '(') f.paren = true;
            else if (*p == '#') f.alt = true;
            else break;
        }
        if (*p >= '1' && *p <= '9') {
            f.width = 0;
            while (*p >= '0' && *p <= '9') f.width = f.width * 10 + (*p++ - '0');
        }
        if (*p == '.') {
            p++;
            if (!(*p >= '0' && *p <= '9'))
                return err_set(I, "print(): bad format specifier '%.*s'", (int)(p - start), start);
            f.prec = 0;
            while (*p >= '0' && *p <= '9') f.prec = f.prec * 10 + (*p++ - '0');
        }
        if (!*p)
            return err_set(I, "print(): incomplete format specifier '%s'", start);
        f.conv = *p++;
        if (f.conv == '%') {
            FmtSpec g = f;
            emit_field(b, &g, "", "%", "", false);
            continue;
        }
        if (f.conv == 'n') {
            sb_putn(b, "\n", 1);
            continue;
        }
        if (f.width > 10000 || f.prec > 1000)
            return err_set(I, "print(): format width or precision too large in '%.*s'", (int)(p - start), start);
        int ai;
        if (relative) ai = last;
        else if (index >= 0) ai = index;
        else ai = next++;
        if (ai < 0 || ai >= nargs)
            return err_set(I, "print(): missing argument for format specifier '%.*s'", (int)(p - start), start);
        last = ai;
        TRY(format_one(I, b, &f, args[ai]));
    }
    return ST_OK;
}

/* ============================== statements ============================== */

static Status write_line(Interp *I, const char *s, size_t n)
{
    FILE *f = I->out ? I->out : stdout;
    flockfile(f);
    fwrite(s, 1, n, f);     /* flockfile keeps the line whole across threads */
    putc('\n', f);
    funlockfile(f);
    fflush(f);
    return ST_OK;
}

/* The DML string form (doc/language.md, "types") of a scalar; matrices and lists are the
 * upstream print error. */
static Status dml_string_of(Interp *I, Value v, StrBuf *b)
{
    if (!val_is_scalar(v))
        return err_set(I, "Print statements can only print scalars. To print a %s, please wrap it in a "
                       "toString() function.", dt_upper(v.kind));
    Str *s = NULL;
    TRY(ops_to_str(I, v, &s));
    sb_putn(b, s->s, (size_t)s->len);
    str_release(s);
    return ST_OK;
}

/* print(x) / print(fmt, a1, ...) */
static Status bi_print(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    if (a->n == 0)
        return err_set(I, "print() must have more than 0 parameters");
    StrBuf b;
    sb_init(&b);
    Status st;
    if (a->n == 1) {
        st = dml_string_of(I, a->v[0], &b);
    } else {
        if (a->v[0].kind != VAL_STRING) {
            sb_free(&b);
            return err_set(I, "printf-style functionality requires first print parameter to be a string");
        }
        for (int i = 1; i < a->n; i++)
            if (!val_is_scalar(a->v[i])) {
                sb_free(&b);
                return err_set(I, "Print statements can only print scalars. To print a %s, please wrap it in "
                               "a toString() function.", dt_upper(a->v[i].kind));
            }
        st = java_format(I, a->v[0].s->s, a->v + 1, a->n - 1, &b);
    }
    if (st == ST_OK && b.oom)
        st = err_set(I, "print(): out of memory");
    if (st == ST_OK)
        st = write_line(I, b.p ? b.p : "", b.len);
    sb_free(&b);
    return st;
}

/* stop(message) */
static Status bi_stop(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    if (a->n == 0)
        return err_set(I, "stop() must have more than 0 parameters");
    if (a->n > 1)
        return err_set(I, "stop(): expects exactly one argument, got %d", a->n);
    StrBuf b;
    sb_init(&b);
    Status st = dml_string_of(I, a->v[0], &b);
    if (st == ST_OK)
        st = err_set(I, "%s", (b.p && b.len) ? b.p : "Stop Called");
    sb_free(&b);
    return st;
}

/* assert(cond) */
static Status bi_assert(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    if (a->n == 0)
        return err_set(I, "assert() must have more than 0 parameters");
    if (a->n > 1)
        return err_set(I, "assert(): expects exactly one argument, got %d", a->n);
    Value c = a->v[0];
    bool ok;
    if (c.kind == VAL_MATRIX) {
        if (mat_len(c.m) != 1)
            return err_set(I, "assert(): condition must be a scalar, got a %lldx%lld matrix",
                           (long long)c.m->rows, (long long)c.m->cols);
        ok = c.m->data[0] != 0;
    } else if (c.kind == VAL_LIST) {
        return err_set(I, "assert(): condition must be a scalar, got list");
    } else {
        TRY(ops_to_bool(I, c, &ok));
    }
    if (ok)
        return ST_OK;
    if (!a->loc)
        return err_set(I, "assertion failed");
    const Loc *l = a->loc;
    return err_set(I, "assertion failed at %s %d:%d-%d:%d", l->file ? l->file : "", l->line, l->col,
                   l->end_line, l->end_col);
}

/* toString(target, rows=100, cols=100, decimal=3, sparse=FALSE, sep=" ", linesep="\n") */
static Status bi_toString(Interp *I, const BArgs *a, Value *out)
{
    if (!arg_given(a, 0))
        return arg_type_error(I, a, 0, "a value");
    ToStringOpts o;
    tostring_defaults(&o);
    int64_t dec;
    TRY(arg_int(I, a, 1, o.rows, &o.rows));
    TRY(arg_int(I, a, 2, o.cols, &o.cols));
    TRY(arg_int(I, a, 3, o.decimal, &dec));
    TRY(arg_bool(I, a, 4, o.sparse, &o.sparse));
    TRY(arg_string(I, a, 5, o.sep, &o.sep));
    TRY(arg_string(I, a, 6, o.linesep, &o.linesep));
    /* As upstream's DataConverter: a negative rows/cols prints them all; a
     * negative decimal leaves DecimalFormat's minimum at 0, and Java caps
     * fraction digits at 340. */
    if (o.rows < 0)
        o.rows = INT64_MAX;
    if (o.cols < 0)
        o.cols = INT64_MAX;
    o.decimal = dec < 0 ? 0 : dec > 340 ? 340 : (int)dec;
    Str *s = NULL;
    TRY(tostring_value(I, a->v[0], &o, &s));
    *out = val_str_take(s);
    return ST_OK;
}

/* ============================== conversions ============================== */

/* The scalar inside x for as.integer/as.double/as.logical: x itself, the
 * cell of a 1x1 matrix, or the element of a 1-element list. Borrowed. */
static Status scalar_of(Interp *I, const BArgs *a, Value *sv)
{
    Value v = a->v[0];
    if (v.kind == VAL_LIST) {
        if (v.l->n < 1)
            return err_set(I, "%s(): cannot convert an empty list", a->def->name);
        v = v.l->items[0];
    }
    if (v.kind == VAL_MATRIX) {
        if (mat_len(v.m) != 1)
            return err_set(I, "%s(): expects a scalar, got a %lldx%lld matrix", a->def->name,
                           (long long)v.m->rows, (long long)v.m->cols);
        *sv = val_double(v.m->data[0]);
        return ST_OK;
    }
    if (!val_is_scalar(v))
        return arg_type_error(I, a, 0, "a scalar");
    *sv = v;
    return ST_OK;
}

/* as.scalar(x) / castAsScalar(x) */
static Status bi_as_scalar(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_LIST) {
        /* upstream: the first element, whatever the list's length */
        if (v.l->n < 1)
            return err_set(I, "as.scalar(): cannot cast an empty list to scalar");
        v = v.l->items[0];
        if (v.kind == VAL_LIST)
            return err_set(I, "as.scalar(): the first list element is a list, not a scalar");
    }
    if (v.kind == VAL_MATRIX) {
        if (v.m->rows != 1 || v.m->cols != 1)
            return err_set(I, "Dimension mismatch - unable to cast matrix of dimension (%lld x %lld) to scalar.",
                           (long long)v.m->rows, (long long)v.m->cols);
        *out = val_double(mat_get(v.m, 0, 0));
        return ST_OK;
    }
    if (v.kind == VAL_FRAME) {
        if (v.f->rows != 1 || v.f->cols != 1)
            return err_set(I, "Dimension mismatch - unable to cast frame of dimension (%lld x %lld) to scalar.",
                           (long long)v.f->rows, (long long)v.f->cols);
        *out = frame_get(v.f, 0, 0);
        return out->kind == VAL_NONE ? err_set(I, "as.scalar(): out of memory") : ST_OK;
    }
    if (!val_is_scalar(v))
        return arg_type_error(I, a, 0, "a matrix, frame, list or scalar");
    *out = val_ref(v);
    return ST_OK;
}

/* as.matrix(x) */
static Status bi_as_matrix(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    Matrix *m;
    if (v.kind == VAL_MATRIX) {
        *out = val_ref(v);
        return ST_OK;
    }
    if (v.kind == VAL_FRAME) {
        TRY(frame_to_matrix(I, v.f, "as.matrix", &m));
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (v.kind == VAL_LIST) {
        List *l = v.l;
        if (l->n == 1) {
            Value e = l->items[0];
            if (e.kind == VAL_MATRIX) {
                *out = val_ref(e);
                return ST_OK;
            }
            if (e.kind == VAL_STRING || !val_is_scalar(e))
                return err_set(I, "as.matrix(): cannot convert a list element of type %s to a matrix",
                               val_kind_name(e.kind));
            if (!(m = mat_alloc(I, 1, 1)))
                return ST_ERR;
            m->data[0] = val_num(e);
            *out = val_matrix_take(m);
            return ST_OK;
        }
        for (int64_t i = 0; i < l->n; i++)
            if (!val_is_scalar(l->items[i]) || l->items[i].kind == VAL_STRING)
                return err_set(I, "as.matrix over multi-entry list only allows scalars.");
        if (!(m = mat_alloc(I, l->n, 1)))
            return ST_ERR;
        for (int64_t i = 0; i < l->n; i++)
            m->data[i] = val_num(l->items[i]);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (v.kind == VAL_STRING) {
        double d;
        if (!ops_parse_java_double(v.s->s, &d))     /* the rule as.double and the readers follow */
            return err_set(I, "as.matrix(): cannot convert the string '%s' to a number", v.s->s);
        v = val_double(d);
    }
    if (!val_is_scalar(v))
        return arg_type_error(I, a, 0, "a scalar, matrix or list");
    if (!(m = mat_alloc(I, 1, 1)))
        return ST_ERR;
    m->data[0] = val_num(v);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* as.integer(x) */
static Status bi_as_integer(Interp *I, const BArgs *a, Value *out)
{
    Value v;
    int64_t i;
    TRY(scalar_of(I, a, &v));
    TRY(ops_to_int(I, v, &i));
    *out = val_int(i);
    return ST_OK;
}

/* as.double(x) */
static Status bi_as_double(Interp *I, const BArgs *a, Value *out)
{
    Value v;
    double d;
    TRY(scalar_of(I, a, &v));
    TRY(ops_to_double(I, v, &d));
    *out = val_double(d);
    return ST_OK;
}

/* as.logical(x) / as.boolean(x) */
static Status bi_as_logical(Interp *I, const BArgs *a, Value *out)
{
    Value v;
    bool b;
    TRY(scalar_of(I, a, &v));
    TRY(ops_to_bool(I, v, &b));
    *out = val_bool(b);
    return ST_OK;
}

/* as.list(x): unnest a 1-element list holding a list; wrap a non-list. */
static Status bi_as_list(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_LIST) {
        if (v.l->n == 1 && v.l->items[0].kind == VAL_LIST)
            *out = val_ref(v.l->items[0]);
        else
            *out = val_ref(v);
        return ST_OK;
    }
    List *l = list_new(1, false);
    if (!l || !list_push(l, v, NULL)) {
        if (l)
            list_release(l);
        return err_set(I, "as.list(): out of memory");
    }
    *out = val_list_take(l);
    return ST_OK;
}

/* ============================ shape and misc ============================ */

/* nrow(X) */
static Status bi_nrow(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_MATRIX) *out = val_int(v.m->rows);
    else if (v.kind == VAL_FRAME) *out = val_int(v.f->rows);
    else if (v.kind == VAL_LIST) *out = val_int(v.l->n);
    else return arg_type_error(I, a, 0, "a matrix, frame or list");
    return ST_OK;
}

/* ncol(X) */
static Status bi_ncol(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_MATRIX) *out = val_int(v.m->cols);
    else if (v.kind == VAL_FRAME) *out = val_int(v.f->cols);
    else if (v.kind == VAL_LIST) *out = val_int(1);
    else return arg_type_error(I, a, 0, "a matrix, frame or list");
    return ST_OK;
}

/* length(X) */
static Status bi_length(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind == VAL_MATRIX) *out = val_int(mat_len(v.m));
    else if (v.kind == VAL_FRAME) *out = val_int(v.f->rows * v.f->cols);
    else if (v.kind == VAL_LIST) *out = val_int(v.l->n);
    else return arg_type_error(I, a, 0, "a matrix, frame or list");
    return ST_OK;
}

/* time() */
static Status bi_time(Interp *I, const BArgs *a, Value *out)
{
    (void)I; (void)a;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *out = val_int((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return ST_OK;
}

/* ifelse(test, yes, no) */
static Status bi_ifelse(Interp *I, const BArgs *a, Value *out)
{
    Value v[3] = {a->v[0], a->v[1], a->v[2]};
    int64_t R = -1, C = -1;
    for (int k = 0; k < 3; k++) {
        if (v[k].kind == VAL_LIST)
            return arg_type_error(I, a, k, "a scalar or matrix");
        if (v[k].kind == VAL_MATRIX) {
            if (R < 0) { R = v[k].m->rows; C = v[k].m->cols; }
            else if (v[k].m->rows != R || v[k].m->cols != C)
                return err_set(I, "ifelse(): matrix arguments must have the same dimensions: %lldx%lld vs %lldx%lld",
                               (long long)R, (long long)C, (long long)v[k].m->rows, (long long)v[k].m->cols);
        }
    }
    if (R < 0 || v[0].kind != VAL_MATRIX) {
        /* scalar condition: the chosen value, broadcast if the other is a matrix */
        bool t = false;
        TRY(ops_to_bool(I, v[0], &t));
        Value ch = t ? v[1] : v[2];
        if (R < 0 && v[1].kind != v[2].kind && v[1].kind <= VAL_DOUBLE && v[2].kind <= VAL_DOUBLE) {
            /* scalar result: upstream types it with the highest common value
             * type of yes and no (ifelse(c, 1, 2.5) is a double either way) */
            if (v[1].kind == VAL_DOUBLE || v[2].kind == VAL_DOUBLE)
                *out = val_double(val_num(ch));
            else
                *out = val_int((int64_t)val_num(ch));
            return ST_OK;
        }
        if (R < 0 || ch.kind == VAL_MATRIX) {
            *out = val_ref(ch);
            return ST_OK;
        }
        if (ch.kind == VAL_STRING)
            return err_set(I, "ifelse(): a string cannot be combined with a matrix");
        Matrix *m = mat_alloc(I, R, C);
        if (!m) return ST_ERR;
        double d = val_num(ch);
        for (int64_t i = 0; i < R * C; i++) m->data[i] = d;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    for (int k = 1; k < 3; k++)
        if (v[k].kind == VAL_STRING)
            return err_set(I, "ifelse(): a string cannot be combined with a matrix");
    Matrix *m = mat_alloc(I, R, C);
    if (!m) return ST_ERR;
    const double *c = v[0].m->data;
    const double *y = v[1].kind == VAL_MATRIX ? v[1].m->data : NULL;
    const double *n = v[2].kind == VAL_MATRIX ? v[2].m->data : NULL;
    double ys = y ? 0 : val_num(v[1]), ns = n ? 0 : val_num(v[2]);
    for (int64_t i = 0; i < R * C; i++)
        m->data[i] = c[i] != 0 ? (y ? y[i] : ys) : (n ? n[i] : ns);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* Indicator kinds for is.na / is.nan / is.infinite. */
static Status indicator(Interp *I, const BArgs *a, Value *out, int kind)
{
    Value v = a->v[0];
    if (v.kind == VAL_MATRIX) {
        Matrix *m = mat_alloc(I, v.m->rows, v.m->cols);
        if (!m) return ST_ERR;
        const double *x = v.m->data;
        int64_t n = mat_len(m);
        if (kind == 2)
            for (int64_t i = 0; i < n; i++) m->data[i] = isinf(x[i]) ? 1.0 : 0.0;
        else
            for (int64_t i = 0; i < n; i++) m->data[i] = isnan(x[i]) ? 1.0 : 0.0;
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (v.kind == VAL_DOUBLE) {
        *out = val_bool(kind == 2 ? isinf(v.d) != 0 : isnan(v.d) != 0);
        return ST_OK;
    }
    if (v.kind == VAL_INT || v.kind == VAL_BOOL) {
        *out = val_bool(false);
        return ST_OK;
    }
    return arg_type_error(I, a, 0, "a number or matrix");
}

/* is.na(X) / isNA(X) */
static Status bi_is_na(Interp *I, const BArgs *a, Value *out) { return indicator(I, a, out, 0); }
/* is.nan(X) / isNaN(X) */
static Status bi_is_nan(Interp *I, const BArgs *a, Value *out) { return indicator(I, a, out, 1); }
/* is.infinite(X) / isInf(X) */
static Status bi_is_infinite(Interp *I, const BArgs *a, Value *out) { return indicator(I, a, out, 2); }

const BuiltinDef bi_core_table[] = {
    {"print", bi_print, "", 0, BIND_VARIADIC, 1, BF_STATEMENT | BF_STMT_FIRST | BF_SPARSE},
    {"stop", bi_stop, "", 0, BIND_VARIADIC, 1, BF_STATEMENT | BF_STMT_FIRST | BF_CONTROL},
    {"assert", bi_assert, "", 0, BIND_VARIADIC, 1, BF_STATEMENT | BF_NEEDS_LOC | BF_STMT_FIRST | BF_CONTROL},
    {"toString", bi_toString, "target,rows,cols,decimal,sparse,sep,linesep", 1, BIND_NAMED, 1, BF_RT(RT_SCALAR) | BF_SPARSE},
    {"as.scalar", bi_as_scalar, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"castAsScalar", bi_as_scalar, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_SPARSE},
    {"as.matrix", bi_as_matrix, "x", 1, BIND_POS, 1, BF_RT(RT_MATRIX) | BF_PURE | BF_SPARSE},
    {"as.integer", bi_as_integer, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE},
    {"as.double", bi_as_double, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE},
    {"as.logical", bi_as_logical, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"as.boolean", bi_as_logical, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"as.list", bi_as_list, "x", 1, BIND_POS, 1, 0},
    {"nrow", bi_nrow, "x", 1, BIND_POS, 1, BF_DIM_ONLY | BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"ncol", bi_ncol, "x", 1, BIND_POS, 1, BF_DIM_ONLY | BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"length", bi_length, "x", 1, BIND_POS, 1, BF_RT(RT_SCALAR) | BF_PURE | BF_SPARSE},
    {"time", bi_time, "", 0, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"ifelse", bi_ifelse, "test,yes,no", 3, BIND_POS, 1, BF_PURE},
    {"is.na", bi_is_na, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {"isNA", bi_is_na, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {"is.nan", bi_is_nan, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {"isNaN", bi_is_nan, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {"is.infinite", bi_is_infinite, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {"isInf", bi_is_infinite, "x", 1, BIND_POS, 1, BF_RT(RT_SAME)},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
