/* SPDX-License-Identifier: Apache-2.0
 * Frames as csv: the parser (column names from a header, a type per column
 * from the schema, dims inferred) and the writer. Pure functions over
 * buffers and FILE*, thread-safe; a failed parse returns no frame. */
#include "internal.h"

#include "../../base/frame.h"

/* [*s, *e) without surrounding blanks and, when it is "...", without the
 * quotes; *quoted says whether "" inside must become ". */
static void field_bounds(const char **s, const char **e, bool *quoted)
{
    const char *p = *s, *q = *e;
    while (p < q && is_blank(*p))
        p++;
    while (q > p && is_blank(q[-1]))
        q--;
    *quoted = q - p >= 2 && *p == '"' && q[-1] == '"';
    if (*quoted) {
        p++;
        q--;
    }
    *s = p;
    *e = q;
}

/* The text of a field: [s, e) itself, or, quoted with "" inside, a copy in
 * *tmp (malloc'd, caller frees) with each "" made ". NULL on allocation
 * failure. */
static const char *field_text(const char *s, const char *e, bool quoted, char **tmp, size_t *n)
{
    *tmp = NULL;
    *n = (size_t)(e - s);
    if (!quoted || !memchr(s, '"', *n))
        return s;
    char *t = malloc(*n + 1);
    if (!t)
        return NULL;
    size_t k = 0;
    for (const char *p = s; p < e; p++) {
        t[k++] = *p;
        if (*p == '"' && p + 1 < e && p[1] == '"')
            p++;
    }
    *n = k;
    *tmp = t;
    return t;
}

static bool is_na(const char *s, size_t n, const IoFrameCsvOpts *o)
{
    for (int k = 0; k < o->nna; k++)
        if (strlen(o->na[k]) == n && memcmp(s, o->na[k], n) == 0)
            return true;
    return false;
}

/* Splits the header line into the frame's column names. */
static bool read_names(FrameBlock *f, const char *ls, const char *le, const char *sep, size_t sepn,
                       const char *name, DiagErr *e)
{
    const char *p = ls;
    for (int64_t j = 0; j < f->cols; j++) {
        const char *fe = io_csv_field_end(p, le, sep, sepn);
        const char *s = p, *t = fe;
        bool quoted;
        field_bounds(&s, &t, &quoted);
        char *tmp;
        size_t n;
        const char *txt = field_text(s, t, quoted, &tmp, &n);
        Str *nm = txt ? str_new(txt, n) : NULL;
        free(tmp);
        bool ok = nm && frame_set_name(f, j, nm);
        str_release(nm);
        if (!ok)
            return diag_fail(e, "%s: out of memory reading the header", name);
        p = fe < le ? fe + sepn : le;
    }
    return true;
}

/* Reads the fields of one data line into row r. */
static bool read_row(FrameBlock *f, int64_t r, const char *ls, const char *le, int64_t line, const char *sep,
                     size_t sepn, const IoFrameCsvOpts *o, const char *name, DiagErr *e)
{
    const char *p = ls;
    int64_t c = 0;
    for (;;) {
        const char *fe = io_csv_field_end(p, le, sep, sepn);
        if (c < f->cols) {
            const char *s = p, *t = fe;
            bool quoted;
            field_bounds(&s, &t, &quoted);
            if (s == t && !quoted && !o->fill)
                return diag_fail(e, "%s:%lld: field %lld is empty and fill is FALSE", name, (long long)line,
                               (long long)c + 1);
            /* Empty and NA fields stay as allocated: missing, 0 or FALSE. */
            if (!(s == t && !quoted) && !is_na(s, (size_t)(t - s), o)) {
                char *tmp;
                size_t n;
                const char *txt = field_text(s, t, quoted, &tmp, &n);
                bool oom = !txt;
                bool ok = txt && frame_put_text(f, r, c, txt, n, &oom);
                free(tmp);
                if (!ok) {
                    if (oom)
                        return diag_fail(e, "%s:%lld: out of memory", name, (long long)line);
                    char sn[64];
                    return diag_fail(e, "%s:%lld: field %lld ('%s') is not %s", name, (long long)line,
                                   (long long)c + 1, io_snippet(s, t, sn, sizeof sn),
                                   frame_col_type_name(&f->col[c]));
                }
            }
        }
        c++;
        if (fe >= le)
            break;
        p = fe + sepn;
    }
    if (c != f->cols)
        return diag_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)line, (long long)f->cols,
                       (long long)c);
    return true;
}

/* ---- records: lines, except inside a quoted field (RFC 4180) ---- */

typedef struct Records {
    const char *p, *end;
    const char *sep;
    size_t sepn;
    int64_t lineno;         /* the line the record last returned starts on */
    int64_t next_line;      /* the line the next record starts on */
    bool plain;             /* no '"' in the text: records are lines */
} Records;

static bool at_sep(const char *q, const char *end, const Records *R)
{
    return (size_t)(end - q) >= R->sepn && memcmp(q, R->sep, R->sepn) == 0;
}

/* The next record as [*rs, *re), without its line break (nor a '\r' before
 * it): up to the first '\n' outside double quotes. A field is quoted when
 * its first character after blanks is '"' (as io_csv_field_end reads it),
 * and then runs to its closing quote ("" inside is a quote) over any line
 * breaks. Returns 0 at the end, 1 for a record, -1 when a quoted field is
 * never closed (*rs then points at its quote). */
static int next_record(Records *R, const char **rs, const char **re)
{
    if (R->p >= R->end)
        return 0;
    const char *q = R->p, *end = R->end;
    if (R->plain) {
        const char *e = memchr(q, '\n', (size_t)(end - q));
        q = e ? e : end;
        *rs = R->p;
        *re = q > R->p && q[-1] == '\r' ? q - 1 : q;
        R->p = q < end ? q + 1 : end;
        R->lineno = R->next_line++;
        return 1;
    }
    int64_t nl = 0;
    for (;;) {
        /* the start of a field */
        while (q < end && is_blank(*q) && !at_sep(q, end, R))
            q++;
        if (q < end && *q == '"') {
            const char *open = q;
            int64_t open_nl = nl;
            for (q++;; q++) {
                if (q >= end) {
                    *rs = open;
                    R->lineno = R->next_line + open_nl;
                    return -1;
                }
                if (*q == '\n')
                    nl++;
                else if (*q == '"') {
                    if (q + 1 < end && q[1] == '"')
                        q++;
                    else
                        break;
                }
            }
            q++;
        }
        /* the rest of the field, raw */
        while (q < end && *q != '\n' && !at_sep(q, end, R))
            q++;
        if (q < end && *q != '\n') {
            q += R->sepn;
            continue;
        }
        break;
    }
    *rs = R->p;
    *re = q > R->p && q[-1] == '\r' ? q - 1 : q;
    R->p = q < end ? q + 1 : end;
    R->lineno = R->next_line;
    R->next_line += nl + 1;
    return 1;
}

/* The rows of a frame csv body [data, end), as io_csv_rows counts them but
 * in records: every record up to the last non-empty one, and trailing empty
 * lines too when the declared count (-1: none) reaches them. *rows_end is
 * where the rows stop. -1 when a quoted field is never closed (an error
 * already in *e). */
static int64_t frame_csv_rows(const char *data, const char *end, int64_t first_line, int64_t declared,
                              const char *sep, size_t sepn, const char **rows_end, const char *name, DiagErr *e)
{
    /* Trailing line breaks are outside any quoted field that closes. */
    const char *last = end;
    while (last > data && (last[-1] == '\n' || last[-1] == '\r'))
        last--;
    int64_t rows = 0;
    if (!memchr(data, '"', (size_t)(last - data))) {
        rows = io_csv_rows(data, end, declared, rows_end);
        return rows;
    }
    Records R = {data, last, sep, sepn, first_line, first_line, false};
    const char *rs, *re;
    int k;
    while ((k = next_record(&R, &rs, &re)) > 0)
        rows++;
    if (k < 0) {
        diag_fail(e, "%s:%lld: the quoted field opened here is never closed", name, (long long)R.lineno);
        return -1;
    }
    /* The empty lines after 'last', as io_csv_rows counts them. */
    return io_csv_tail_rows(last, end, rows, declared, rows_end);
}

FrameBlock *io_parse_frame_csv(const char *buf, size_t len, const char *name, const IoFrameCsvOpts *o, DiagErr *e)
{
    const char *sep = o->sep ? o->sep : ",";
    size_t sepn = strlen(sep);
    if (sepn == 0) {
        diag_fail(e, "%s: the csv separator must not be empty", name);
        return NULL;
    }
    /* Strings hold no NUL byte (value.h); a text file has none either. */
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        int64_t line = 1;
        for (const char *q = buf; (q = memchr(q, '\n', (size_t)(nul - q))) != NULL; q++)
            line++;
        diag_fail(e, "%s:%lld: a NUL byte (this is no csv text)", name, (long long)line);
        return NULL;
    }
    bool plain = !memchr(buf, '"', len);
    Records L = {buf, buf + len, sep, sepn, 1, 1, plain};
    const char *hs = NULL, *he = NULL, *ls = NULL, *le = NULL;
    bool have_header = false;
    if (o->header) {
        int k = next_record(&L, &hs, &he);
        if (k < 0) {
            diag_fail(e, "%s:%lld: the quoted field opened here is never closed", name, (long long)L.lineno);
            return NULL;
        }
        have_header = k > 0;
    }
    const char *data = L.p;
    int64_t first_line = L.next_line;
    const char *last;
    int64_t rows = frame_csv_rows(data, buf + len, first_line, o->rows, sep, sepn, &last, name, e);
    if (rows < 0)
        return NULL;
    int64_t cols;
    if (rows > 0) {
        Records F = {data, last, sep, sepn, 1, 1, plain};
        next_record(&F, &ls, &le);
        cols = io_csv_fields(ls, le, sep, sepn);
    } else if (have_header && !line_is_blank(hs, he)) {
        cols = io_csv_fields(hs, he, sep, sepn);
    } else {
        cols = o->cols >= 0 ? o->cols : o->schema ? o->nschema : 0;
    }
    if (o->cols >= 0 && cols != o->cols) {
        diag_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)(rows > 0 ? first_line : 1),
                (long long)o->cols, (long long)cols);
        return NULL;
    }
    if (!io_dim_agrees(name, "rows", o->rows, rows, e))
        return NULL;
    if (o->schema && o->nschema != cols) {
        diag_fail(e, "%s: the schema has %lld value types but the file has %lld columns", name,
                (long long)o->nschema, (long long)cols);
        return NULL;
    }
    /* Each row costs at least a line break in the file, so 'rows' cells per
     * column are bounded by the input; the column count too. */
    FrameBlock *f = frame_new_raw(rows, cols, o->schema);
    if (!f) {
        diag_fail(e, "%s: out of memory reading a %lldx%lld frame", name, (long long)rows, (long long)cols);
        return NULL;
    }
    if (o->schema)
        frame_set_narrow(f, o->narrow);
    if (have_header && !line_is_blank(hs, he)) {
        int64_t hc = io_csv_fields(hs, he, sep, sepn);
        if (hc != cols) {
            diag_fail(e, "%s:1: the header has %lld fields but the rows have %lld", name, (long long)hc,
                    (long long)cols);
            frame_release(f);
            return NULL;
        }
        if (!read_names(f, hs, he, sep, sepn, name, e)) {
            frame_release(f);
            return NULL;
        }
    }
    Records D = {data, last, sep, sepn, first_line, first_line, plain};
    for (int64_t r = 0; r < rows; r++) {
        if (next_record(&D, &ls, &le) <= 0)
            ls = le = last;     /* cannot happen: the records were counted */
        if (!read_row(f, r, ls, le, D.lineno, sep, sepn, o, name, e)) {
            frame_release(f);
            return NULL;
        }
    }
    return f;
}

/* A string goes in quotes when it is empty (an empty field reads as a
 * missing value), holds a character of the separator (with a separator
 * of several characters, "::", a cell ":" next to one would split
 * differently), a quote or a line break, or has blanks at its ends (which
 * reading would trim). */
static bool needs_quotes(const char *s, size_t n, const char *sep)
{
    /* is_space: a header of "\v" alone would read as a blank line */
    if (n == 0 || is_space(s[0]) || is_space(s[n - 1]))
        return true;
    return strpbrk(s, sep) || strpbrk(s, "\"\n\r");
}

static void out_text(Out *o, const char *s, size_t n, const char *sep)
{
    if (!needs_quotes(s, n, sep)) {
        out_put(o, s, n);
        return;
    }
    out_put(o, "\"", 1);
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '"')
            out_put(o, "\"\"", 2);
        else
            out_put(o, s + k, 1);
    }
    out_put(o, "\"", 1);
}

static void out_cell(Out *o, const FrameBlock *fr, int64_t i, int64_t j, const char *sep)
{
    const FrameCol *c = &fr->col[j];
    if (c->type != FT_STRING)
        out_cell_scalar(o, c, i);
    else if (c->s[i])
        out_text(o, c->s[i]->s, (size_t)c->s[i]->len, sep);
}

bool io_write_frame_csv(FILE *f, const FrameBlock *fr, const IoCsvWriteOpts *opt)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    const char *sep = opt->sep ? opt->sep : ",";
    size_t sl = strlen(sep);
    if (opt->header) {
        for (int64_t j = 0; j < fr->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            if (fr->names && fr->names[j]) {
                out_text(&o, fr->names[j]->s, (size_t)fr->names[j]->len, sep);
            } else {
                out_put(&o, "C", 1);
                out_int(&o, j + 1);
            }
        }
        out_put(&o, "\n", 1);
    }
    for (int64_t i = 0; i < fr->rows; i++) {
        for (int64_t j = 0; j < fr->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            out_cell(&o, fr, i, j, sep);
        }
        out_put(&o, "\n", 1);
    }
    return out_done(&o);
}
