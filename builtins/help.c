/* SPDX-License-Identifier: Apache-2.0
 * help(), ls(), describe() and the reference they read: the Markdown of
 * doc/ embedded at build time (dml_doc_text). The entry format is defined in
 * doc/README.md: "### name, alias" heads an entry; its first paragraph is
 * the usage ("`f(x, n=1)` -> result"), then a description, then an
 * indented example. The index over the text is built once and never
 * changes, so every function here is thread-safe. */
#include "help.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/frame.h"
#include "../base/sparse.h"
#include "../runtime/fmt.h"
#include "../runtime/program.h"
#include "../runtime/suggest.h"
#include "registry.h"

extern const char dml_doc_text[];
extern const size_t dml_doc_len;

/* ==================================================================
 * the index
 * ================================================================== */

typedef struct Span { const char *p; size_t n; } Span;

typedef struct Entry {
    Span file;          /* "doc/builtins.md" */
    Span section;       /* the "## " heading above it ("" if none) */
    Span names;         /* the heading after "### ": "is.na, isNA" */
    Span body;          /* the lines after the heading, up to the next heading */
} Entry;

static Entry *entries;
static size_t nentries;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static bool starts(Span line, const char *s)
{
    size_t n = strlen(s);
    return line.n >= n && memcmp(line.p, s, n) == 0;
}

static void build_index(void)
{
    size_t cap = 0;
    const char *p = dml_doc_text, *end = dml_doc_text + dml_doc_len;
    Span file = {"", 0}, section = {"", 0};
    Entry *cur = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        Span line = {p, nl ? (size_t)(nl - p) : (size_t)(end - p)};
        const char *next = nl ? nl + 1 : end;
        bool heading = line.n && (line.p[0] == '\001' || starts(line, "# ") || starts(line, "## ") ||
                                  starts(line, "### "));
        if (heading && cur) {
            cur->body.n = (size_t)(p - cur->body.p);
            cur = NULL;
        }
        if (line.n && line.p[0] == '\001') {
            file = (Span){line.p + 1, line.n - 1};
            section = (Span){"", 0};
        } else if (starts(line, "## ")) {
            section = (Span){line.p + 3, line.n - 3};
        } else if (starts(line, "### ")) {
            if (nentries == cap) {
                cap = cap ? cap * 2 : 256;
                Entry *e = realloc(entries, cap * sizeof *e);
                if (!e)
                    return;     /* help then finds fewer topics; nothing breaks */
                entries = e;
            }
            cur = &entries[nentries++];
            cur->file = file;
            cur->section = section;
            cur->names = (Span){line.p + 4, line.n - 4};
            cur->body = (Span){next, 0};
        }
        p = next;
    }
    if (cur)
        cur->body.n = (size_t)(end - cur->body.p);
}

static void index_init(void)
{
    pthread_once(&index_once, build_index);
}

/* Calls fn on each name of the heading "a, b, c" (copied to a NUL-terminated
 * buffer); stops early when fn returns true. */
static bool each_heading_name(Span names, bool (*fn)(const char *name, void *ctx), void *ctx)
{
    const char *p = names.p, *end = names.p + names.n;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *stop = c ? c : end;
        const char *q = stop;
        while (q > p && q[-1] == ' ')
            q--;
        char buf[128];
        size_t n = (size_t)(q - p);
        if (n && n < sizeof buf) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            if (fn(buf, ctx))
                return true;
        }
        p = c ? c + 1 : end;
    }
    return false;
}

static bool name_equals(const char *name, void *ctx)
{
    return strcmp(name, ctx) == 0;
}

static bool entry_has(const Entry *e, const char *topic)
{
    return each_heading_name(e->names, name_equals, (void *)topic);
}

/* Does l contain the NUL-terminated 'needle'? */
static bool span_has(Span l, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= l.n; i++)
        if (memcmp(l.p + i, needle, n) == 0)
            return true;
    return false;
}

static bool span_is(Span s, const char *str)
{
    return str == NULL || (strlen(str) == s.n && memcmp(s.p, str, s.n) == 0);
}

/* The entries named 'topic'; with "x::f" (a function of an nn file) also
 * those named x. Writes up to 'cap' pointers; returns how many. */
static int find_entries(const char *topic, const Entry **out, int cap)
{
    index_init();
    int k = 0;
    for (size_t i = 0; i < nentries && k < cap; i++)
        if (entry_has(&entries[i], topic))
            out[k++] = &entries[i];
    const char *sep = strstr(topic, "::");
    if (k == 0 && sep && (size_t)(sep - topic) < 256) {
        char base[256];
        memcpy(base, topic, (size_t)(sep - topic));
        base[sep - topic] = '\0';
        for (size_t i = 0; i < nentries && k < cap; i++)
            if (entry_has(&entries[i], base))
                out[k++] = &entries[i];
    }
    return k;
}

/* ==================================================================
 * formatting an entry
 * ================================================================== */

/* The next line of s (without '\n'); advances s. */
static Span next_line(Span *s)
{
    const char *nl = memchr(s->p, '\n', s->n);
    Span line = {s->p, nl ? (size_t)(nl - s->p) : s->n};
    size_t adv = nl ? line.n + 1 : s->n;
    s->p += adv;
    s->n -= adv;
    return line;
}

static bool blank(Span l)
{
    for (size_t i = 0; i < l.n; i++)
        if (l.p[i] != ' ' && l.p[i] != '\t')
            return false;
    return true;
}

/* Markdown text as plain text: backticks and ** go. */
static void put_plain(StrBuf *b, Span l)
{
    for (size_t i = 0; i < l.n; i++) {
        if (l.p[i] == '`')
            continue;
        if (l.p[i] == '*' && i + 1 < l.n && l.p[i + 1] == '*') {
            i++;
            continue;
        }
        sb_putn(b, &l.p[i], 1);
    }
}

/* Appends the words of a paragraph (plain text in 'para') wrapped to 76
 * columns, each line indented by two spaces. */
static void put_wrapped(StrBuf *b, const char *para)
{
    size_t col = 0;
    const char *p = para;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, " ");
        if (col && col + 1 + n > 76) {
            sb_puts(b, "\n");
            col = 0;
        }
        sb_puts(b, col ? " " : "  ");
        sb_putn(b, p, n);
        col += (col ? 1 : 2) + n;
        p += n;
    }
    if (col)
        sb_puts(b, "\n");
}

/* Layout: the topic names and where they come from, the usage lines, the
 * description reflowed, "Example:" and the indented code as written. */
static void format_entry(StrBuf *b, const Entry *e)
{
    sb_printf(b, "%.*s  (%.*s", (int)e->names.n, e->names.p, (int)e->file.n, e->file.p);
    if (e->section.n)
        sb_printf(b, ": %.*s", (int)e->section.n, e->section.p);
    sb_puts(b, ")\n\n");
    Span s = e->body;
    while (s.n) {       /* leading blank lines */
        Span peek = s;
        if (!blank(next_line(&peek)))
            break;
        next_line(&s);
    }
    /* The usage paragraph, one line per form. */
    while (s.n) {
        Span l = next_line(&s);
        if (blank(l))
            break;
        sb_puts(b, "  ");
        put_plain(b, l);
        sb_puts(b, "\n");
    }
    bool in_example = false;
    StrBuf para;
    sb_init(&para);
    while (s.n) {
        Span l = next_line(&s);
        bool code = l.n >= 4 && memcmp(l.p, "    ", 4) == 0;
        if (blank(l) || code) {
            if (para.len) {
                sb_puts(b, "\n");
                put_wrapped(b, para.p);
                sb_free(&para);
            }
            if (code) {
                if (!in_example)
                    sb_puts(b, "\n  Example:\n");
                in_example = true;
                sb_putn(b, l.p, l.n);
                sb_puts(b, "\n");
            }
            continue;
        }
        in_example = false;
        if (para.len)
            sb_puts(&para, " ");
        put_plain(&para, l);
    }
    if (para.len) {
        sb_puts(b, "\n");
        put_wrapped(b, para.p);
    }
    sb_free(&para);
}

static bool offer_name(const char *name, void *ctx)
{
    suggest_offer(ctx, name);
    return false;
}

bool help_topic(const char *topic, StrBuf *b)
{
    const Entry *found[8];
    int k = find_entries(topic, found, 8);
    if (k == 0) {
        Suggest s;
        suggest_init(&s, topic);
        for (size_t i = 0; i < nentries; i++)
            each_heading_name(entries[i].names, offer_name, &s);
        sb_printf(b, "no help for '%s'", topic);
        if (suggest_best(&s))
            sb_printf(b, " (did you mean %s?)", suggest_best(&s));
        sb_puts(b, "; help() lists the topics\n");
        return false;
    }
    format_entry(b, found[0]);
    for (int i = 1; i < k; i++) {
        sb_puts(b, "\nAlso ");
        format_entry(b, found[i]);
    }
    return true;
}

/* ==================================================================
 * the topic list
 * ================================================================== */

typedef struct Wrap { StrBuf *b; size_t col; } Wrap;

static bool wrap_name(const char *name, void *ctx)
{
    Wrap *w = ctx;
    size_t n = strlen(name);
    if (strchr(name, '/'))
        return false;       /* nn files are listed by their short name */
    if (w->col + 1 + n > 78) {
        sb_puts(w->b, "\n   ");
        w->col = 3;
    }
    sb_printf(w->b, " %s", name);
    w->col += 1 + n;
    return false;
}

void help_index(StrBuf *b)
{
    index_init();
    sb_puts(b, "help(name) or ?name shows one topic; the reference is also in doc/*.md.\n");
    Span file = {"", 0}, section = {"", 0};
    Wrap w = {b, 0};
    for (size_t i = 0; i < nentries; i++) {
        const Entry *e = &entries[i];
        if (e->file.p != file.p) {
            if (w.col)
                sb_puts(b, "\n");
            sb_printf(b, "\n%.*s\n", (int)e->file.n, e->file.p);
            file = e->file;
            section = (Span){NULL, 0};
            w.col = 0;
        }
        if (e->section.p != section.p) {
            if (w.col)
                sb_puts(b, "\n");
            sb_printf(b, "  %.*s:\n   ", (int)e->section.n, e->section.p);
            section = e->section;
            w.col = 3;
        }
        each_heading_name(e->names, wrap_name, &w);
    }
    if (w.col)
        sb_puts(b, "\n");
}

typedef struct EachCtx { void (*fn)(const char *, void *); void *ctx; } EachCtx;

static bool each_cb(const char *name, void *ctx)
{
    EachCtx *c = ctx;
    c->fn(name, c->ctx);
    return false;
}

void help_each_name(const char *file, void (*fn)(const char *name, void *ctx), void *ctx)
{
    index_init();
    EachCtx c = {fn, ctx};
    for (size_t i = 0; i < nentries; i++)
        if (span_is(entries[i].file, file))
            each_heading_name(entries[i].names, each_cb, &c);
}

const char *help_check(const char *topic, const char *needle)
{
    const Entry *e;
    if (find_entries(topic, &e, 1) == 0)
        return "no entry";
    Span s = e->body;
    Span l = {NULL, 0};
    while (s.n && blank(l = next_line(&s)))
        ;
    bool arrow = false, has_needle = needle == NULL;
    for (;;) {
        if (blank(l))
            break;
        if (span_has(l, "->"))
            arrow = true;
        if (needle && span_has(l, needle))
            has_needle = true;
        if (!s.n)
            break;
        l = next_line(&s);
    }
    if (!arrow)
        return "the usage paragraph has no '->' (what it returns)";
    if (!has_needle)
        return "the usage paragraph does not show this function";
    bool desc = false, example = false;
    while (s.n) {
        l = next_line(&s);
        if (blank(l))
            continue;
        if (l.n >= 4 && memcmp(l.p, "    ", 4) == 0)
            example = true;
        else
            desc = true;
    }
    if (!desc)
        return "no description";
    if (!example)
        return "no example (an indented code block)";
    return NULL;
}

/* ==================================================================
 * did you mean (functions)
 * ================================================================== */

static void offer_cb(const char *name, void *ctx)
{
    suggest_offer(ctx, name);
}

const char *help_suggest_function(const Module *m, const char *name, char *buf, size_t cap)
{
    buf[0] = '\0';
    Suggest s;
    suggest_init(&s, name);
    if (m)
        for (int i = 0; i < m->nfuncs; i++)
            suggest_offer(&s, m->funcs[i]->name);
    builtin_each(offer_cb, &s);
    help_each_name("doc/builtins.md", offer_cb, &s);   /* DML-bodied builtins too */
    if (suggest_best(&s))
        snprintf(buf, cap, " (did you mean %s?)", suggest_best(&s));
    return buf;
}

/* ==================================================================
 * help(), ls(), describe()
 * ================================================================== */

static Status write_out(Interp *I, StrBuf *b)
{
    if (b->oom) {
        sb_free(b);
        return err_set(I, "out of memory");
    }
    FILE *out = I->out ? I->out : stdout;
    if (b->len)
        fwrite(b->p, 1, b->len, out);
    fflush(out);
    sb_free(b);
    return ST_OK;
}

/* help() lists the topics; help("name") prints one. A topic that does not
 * exist is not an error: the message says so and names the closest. */
static Status bi_help(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    StrBuf b;
    sb_init(&b);
    if (!arg_given(a, 0)) {
        help_index(&b);
    } else {
        const char *topic;
        TRY(arg_string(I, a, 0, NULL, &topic));
        help_topic(topic, &b);
    }
    return write_out(I, &b);
}

/* The one-line summary of a value (the describe entry of doc/builtins.md):
 * type and shape; for a matrix also its range, mean, zeros and NaN cells;
 * for a list its entries, one level deep. */
static void describe_sb(StrBuf *b, Value v, int depth)
{
    char num[32];
    switch (v.kind) {
    case VAL_BOOL:
        sb_printf(b, "boolean %s", v.b ? "TRUE" : "FALSE");
        break;
    case VAL_INT:
        sb_printf(b, "int %lld", (long long)v.i);
        break;
    case VAL_DOUBLE:
        fmt_double_java(v.d, num);
        sb_printf(b, "double %s", num);
        break;
    case VAL_STRING:
        if (v.s->len > 40)
            sb_printf(b, "string \"%.37s...\" (%zu chars)", v.s->s, (size_t)v.s->len);
        else
            sb_printf(b, "string \"%s\"", v.s->s);
        break;
    case VAL_MATRIX: {
        const Matrix *m = v.m;
        sb_printf(b, "matrix %lldx%lld", (long long)m->rows, (long long)m->cols);
        if (m->sp)
            sb_printf(b, " (sparse, %lld non-zeros)", (long long)m->sp->nnz);
        int64_t n = m->rows * m->cols;
        if (n == 0 || depth > 0)
            break;
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        int64_t nan = 0, nz = 0;
        /* a sparse matrix: its stored values, and a zero if any is implicit */
        const double *cells = m->sp ? m->sp->vals : m->data;
        int64_t ncells = m->sp ? m->sp->nnz : n;
        if (m->sp && m->sp->nnz < n) {
            lo = hi = 0;
        }
        for (int64_t i = 0; i < ncells; i++) {
            double x = cells[i];
            if (isnan(x)) {
                nan++;
                continue;
            }
            if (x < lo)
                lo = x;
            if (x > hi)
                hi = x;
            sum += x;
            nz += x != 0;
        }
        if (nan < n) {
            fmt_double_java(lo, num);
            sb_printf(b, ", min %s", num);
            fmt_double_java(hi, num);
            sb_printf(b, ", max %s", num);
            double mean = sum / (double)(n - nan);
            if (!isfinite(mean) && isfinite(lo) && isfinite(hi)) {
                /* finite cells whose sum overflows: the sum of x/count,
                 * which cannot, as mean() does */
                mean = 0;
                for (int64_t i = 0; i < ncells; i++)
                    if (!isnan(cells[i]))
                        mean += cells[i] / (double)(n - nan);
            }
            if (isfinite(mean)) {
                sb_printf(b, ", mean %.4g", mean);
            } else {
                fmt_double_java(mean, num);
                sb_printf(b, ", mean %s", num);
            }
        }
        if (nz < n - nan)
            sb_printf(b, ", %lld zero%s", (long long)(n - nan - nz), n - nan - nz > 1 ? "s" : "");
        if (nan)
            sb_printf(b, ", %lld NaN", (long long)nan);
        break;
    }
    case VAL_FRAME:
        sb_printf(b, "frame %lldx%lld", (long long)v.f->rows, (long long)v.f->cols);
        break;
    case VAL_LIST: {
        const List *l = v.l;
        sb_printf(b, "list of %lld", (long long)l->n);
        if (depth > 0 || l->n == 0)
            break;
        sb_puts(b, ": [");
        for (int64_t i = 0; i < l->n && i < 8; i++) {
            if (i)
                sb_puts(b, ", ");
            if (l->names && l->names[i])
                sb_printf(b, "%s=", l->names[i]->s);
            describe_sb(b, l->items[i], depth + 1);
        }
        if (l->n > 8)
            sb_printf(b, ", ... %lld more", (long long)(l->n - 8));
        sb_puts(b, "]");
        break;
    }
    default:
        sb_puts(b, "(no value)");
        break;
    }
}

/* describe(x): the one-line summary of x as a string. */
static Status bi_describe(Interp *I, const BArgs *a, Value *out)
{
    StrBuf b;
    sb_init(&b);
    describe_sb(&b, a->v[0], 0);
    Str *s = sb_to_str(&b);
    if (!s)
        return err_set(I, "out of memory in describe()");
    *out = val_str_take(s);
    return ST_OK;
}

static int cmp_names(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* ls(): the variables of the current scope, sorted, one per line with
 * their describe() summary. */
static Status bi_ls(Interp *I, const BArgs *a, Value *out)
{
    (void)a;
    (void)out;
    const CallFrame *f = I->frame;
    StrBuf b;
    sb_init(&b);
    int n = f && f->names ? (f->names->n < f->nslots ? f->names->n : f->nslots) : 0;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names)
        return err_set(I, "out of memory in ls()");
    int k = 0;
    size_t width = 0;
    for (int i = 0; i < n; i++)
        if (f->slots[i].kind != VAL_NONE) {
            names[k++] = f->names->names[i];
            if (strlen(f->names->names[i]) > width)
                width = strlen(f->names->names[i]);
        }
    qsort(names, (size_t)k, sizeof *names, cmp_names);
    if (width > 24)
        width = 24;
    for (int i = 0; i < k; i++) {
        int s = slots_find(f->names, names[i]);
        sb_printf(&b, "%-*s  ", (int)width, names[i]);
        describe_sb(&b, f->slots[s], 0);
        sb_puts(&b, "\n");
    }
    if (k == 0)
        sb_puts(&b, "(no variables)\n");
    free(names);
    return write_out(I, &b);
}

const BuiltinDef bi_help_table[] = {
    {"help", bi_help, "topic", 0, BIND_POS, 1, BF_STATEMENT},
    {"ls", bi_ls, "", 0, BIND_POS, 1, BF_STATEMENT | BF_READS_VARS},
    {"describe", bi_describe, "x", 1, BIND_POS, 1, BF_SPARSE},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
