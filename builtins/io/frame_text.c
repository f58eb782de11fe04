/* SPDX-License-Identifier: Apache-2.0
 * Frames as text ("i j value" per line, upstream's FrameWriterTextCell):
 * the parser and the writer. Pure functions over buffers and FILE*,
 * thread-safe; a failed parse returns no frame. */
#include "internal.h"

#include "../../base/frame.h"

/* A value that starts with '"' (at v, on the line L returned last) is a
 * quoted string when its closing quote ends a line ("" inside is a quote;
 * the string may span lines, as the writer puts one with a line break):
 * then *out is the string (malloc'd), *n its length, and L has moved past
 * its last line. Otherwise, as in a file upstream wrote, the value is the
 * line's text itself (*out stays NULL). False only when out of memory. */
static bool quoted_value(Lines *L, const char *v, char **out, size_t *n)
{
    const char *end = L->end, *q = v + 1;
    int64_t lines = 0;
    for (; q < end; q++) {
        if (*q == '\n')
            lines++;
        else if (*q == '"') {
            if (q + 1 < end && q[1] == '"') {
                q++;
                continue;
            }
            break;
        }
    }
    if (q >= end)
        return true;            /* never closed: the line's text */
    const char *close = q, *after = q + 1;
    if (after < end && *after == '\r')
        after++;
    if (after < end && *after != '\n')
        return true;            /* text after the quote: the line's text */
    char *t = malloc((size_t)(close - v));
    if (!t)
        return false;
    size_t k = 0;
    for (const char *p = v + 1; p < close; p++) {
        t[k++] = *p;
        if (*p == '"')
            p++;                /* "" is one quote */
    }
    *out = t;
    *n = k;
    L->p = after < end ? after + 1 : end;
    L->lineno += lines;
    return true;
}

FrameBlock *io_parse_frame_text(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                                const FrameType *schema, const bool *narrow, int64_t nschema, DiagErr *e)
{
    if (rows < 0 || cols < 0) {
        diag_fail(e, "%s: a text frame needs its dimensions: give rows= and cols= (or a .mtd file)", name);
        return NULL;
    }
    if (schema && nschema != cols) {
        diag_fail(e, "%s: the schema names %lld value types for %lld columns", name, (long long)nschema,
                  (long long)cols);
        return NULL;
    }
    FrameBlock *f = frame_new_raw(rows, cols, schema);
    if (!f) {
        diag_fail(e, "%s: out of memory for a %lld x %lld frame", name, (long long)rows, (long long)cols);
        return NULL;
    }
    if (schema)
        frame_set_narrow(f, narrow);
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    while (next_line(&L, &ls, &le)) {
        const char *ts[2], *te[2];
        int nt = split_blanks(ls, le, ts, te, 2);
        if (nt == 0)
            continue;
        int64_t i, j;
        if (nt < 2 || !io_parse_i64(ts[0], te[0], &i) || !io_parse_i64(ts[1], te[1], &j)) {
            diag_fail(e, "%s:%lld: expected 'i j value', found '%s'", name, (long long)L.lineno,
                      io_snippet(ls, le, sn, sizeof sn));
            goto fail;
        }
        if (i < 1)
            continue;   /* upstream's column metadata lines (-1 j ..., -2 j ...) */
        if (i > rows || j < 1 || j > cols) {
            diag_fail(e, "%s:%lld: cell (%lld, %lld) is outside the %lld x %lld frame", name, (long long)L.lineno,
                      (long long)i, (long long)j, (long long)rows, (long long)cols);
            goto fail;
        }
        /* the value is the rest of the line after one blank (a string may
         * hold blanks), or a quoted string that may span lines */
        const char *v = te[1] < le ? te[1] + 1 : le;
        char *unq = NULL;
        size_t vn = (size_t)(le - v);
        int64_t at = L.lineno;
        if (v < le && *v == '"' && !quoted_value(&L, v, &unq, &vn)) {
            diag_fail(e, "%s: out of memory", name);
            goto fail;
        }
        bool oom = false;
        bool put = frame_put_text(f, i - 1, j - 1, unq ? unq : v, vn, &oom);
        free(unq);
        if (!put) {
            if (oom)
                diag_fail(e, "%s: out of memory", name);
            else
                diag_fail(e, "%s:%lld: '%s' is not %s", name, (long long)at, io_snippet(v, le, sn, sizeof sn),
                          frame_col_type_name(&f->col[j - 1]));
            goto fail;
        }
    }
    return f;
fail:
    frame_release(f);
    return NULL;
}

/* A string as its own text, or in double quotes ("" for a quote) when it
 * holds a line break or starts with a quote, so that it reads back whole. */
static void out_text_value(Out *o, const char *s, size_t n)
{
    if (!(n && s[0] == '"') && !memchr(s, '\n', n) && !memchr(s, '\r', n)) {
        out_put(o, s, n);
        return;
    }
    out_put(o, "\"", 1);
    for (size_t k = 0; k < n; k++)
        out_put(o, s[k] == '"' ? "\"\"" : s + k, s[k] == '"' ? 2 : 1);
    out_put(o, "\"", 1);
}

bool io_write_frame_text(FILE *fp, const FrameBlock *fr)
{
    Out o;
    if (!out_init(&o, fp))
        return false;
    for (int64_t i = 0; i < fr->rows; i++)
        for (int64_t j = 0; j < fr->cols; j++) {
            const FrameCol *c = &fr->col[j];
            if (c->type == FT_STRING && !c->s[i])
                continue;   /* a missing cell is not written */
            out_int(&o, i + 1);
            out_put(&o, " ", 1);
            out_int(&o, j + 1);
            out_put(&o, " ", 1);
            if (c->type == FT_STRING)
                out_text_value(&o, c->s[i]->s, (size_t)c->s[i]->len);
            else
                out_cell_scalar(&o, c, i);
            out_put(&o, "\n", 1);
        }
    return out_done(&o);
}
