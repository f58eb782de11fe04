/* SPDX-License-Identifier: Apache-2.0
 * CSV: the parser (dims inferred by scanning) and the writer. */
#include "internal.h"

#include <ctype.h>

void io_csv_opts_init(IoCsvOpts *o)
{
    memset(o, 0, sizeof *o);
    o->sep = ",";
    o->fill = true;
    o->fill_value = 0.0;
    o->rows = -1;
    o->cols = -1;
}

typedef struct CsvSep {
    const char *s;
    size_t n;
} CsvSep;

/* End of the field starting at p within a line ending at le: the position of
 * the next separator or le. A field whose first non-blank character is '"'
 * runs to its closing quote ("" inside is an escaped quote) first, so a
 * quoted field may contain the separator. */
static const char *field_end(const char *p, const char *le, CsvSep sep)
{
    const char *q = p;
    /* A blank separator (tab) ends the field: it is not leading space. */
    while (q < le && is_blank(*q) && !((size_t)(le - q) >= sep.n && memcmp(q, sep.s, sep.n) == 0))
        q++;
    if (q < le && *q == '"') {
        q++;
        while (q < le) {
            if (*q == '"') {
                if (q + 1 < le && q[1] == '"') {
                    q += 2;
                    continue;
                }
                q++;
                break;
            }
            q++;
        }
        p = q;
    }
    if (sep.n == 1) {
        char c = sep.s[0];
        while (p < le && *p != c)
            p++;
        return p;
    }
    while (p < le) {
        if ((size_t)(le - p) >= sep.n && memcmp(p, sep.s, sep.n) == 0)
            return p;
        p++;
    }
    return le;
}

const char *io_csv_field_end(const char *p, const char *le, const char *sep, size_t sepn)
{
    return field_end(p, le, (CsvSep){sep, sepn});
}

static int64_t count_fields(const char *ls, const char *le, CsvSep sep)
{
    int64_t n = 1;
    const char *p = ls;
    for (;;) {
        p = field_end(p, le, sep);
        if (p >= le)
            return n;
        p += sep.n;
        n++;
    }
}

int64_t io_csv_fields(const char *ls, const char *le, const char *sep, size_t sepn)
{
    return count_fields(ls, le, (CsvSep){sep, sepn});
}

/* Value of one CSV field [s, e): NA strings, quotes, fill, numbers. */
static bool csv_cell(const char *s, const char *e, const IoCsvOpts *o, const char *name, int64_t line,
                     int64_t col, double *out, DiagErr *err)
{
    while (s < e && is_blank(*s))
        s++;
    while (e > s && is_blank(e[-1]))
        e--;
    if (e - s >= 2 && *s == '"' && e[-1] == '"') {
        s++;
        e--;
        while (s < e && is_blank(*s))
            s++;
        while (e > s && is_blank(e[-1]))
            e--;
    }
    if (s == e) {
        if (!o->fill)
            return diag_fail(err, "%s:%lld: field %lld is empty and fill is FALSE", name, (long long)line,
                           (long long)col);
        *out = o->fill_value;
        return true;
    }
    for (int k = 0; k < o->nna; k++) {
        size_t n = strlen(o->na[k]);
        if (n == (size_t)(e - s) && memcmp(s, o->na[k], n) == 0) {
            *out = NAN;
            return true;
        }
    }
    if (io_parse_double(s, e, out))
        return true;
    char sn[64];
    return diag_fail(err, "%s:%lld: '%s' is not a number%s", name, (long long)line, io_snippet(s, e, sn, sizeof sn),
                   line == 1 && !o->header && (isalpha((unsigned char)*s) || *s == '_')
                       ? " (a header line? use header=TRUE)" : "");
}

int64_t io_csv_rows(const char *data, const char *end, int64_t declared, const char **rows_end)
{
    /* The last byte that is not a line break, then the lines up to it
     * (memchr keeps this pass cheap). */
    const char *last = end;
    while (last > data && (last[-1] == '\n' || last[-1] == '\r'))
        last--;
    int64_t rows = 0;
    if (last > data) {
        rows = 1;
        for (const char *q = data; (q = memchr(q, '\n', (size_t)(last - q))) != NULL; q++)
            rows++;
    }
    return io_csv_tail_rows(last, end, rows, declared, rows_end);
}

int64_t io_csv_tail_rows(const char *last, const char *end, int64_t rows, int64_t declared, const char **rows_end)
{
    *rows_end = last;
    if (declared <= rows)
        return rows;
    int64_t more = 0;   /* empty lines after 'last' */
    const char *q = last;
    if (rows > 0 && q < end && *q == '\r')
        q++;
    if (rows > 0 && q < end && *q == '\n')
        q++;            /* the end of the last non-empty row */
    for (const char *t = q; t < end; t++)
        more += *t == '\n';
    if (q < end && end[-1] != '\n')
        more++;
    if (rows + more < declared)
        return rows;
    *rows_end = end;
    return declared;
}

Matrix *io_parse_csv(const char *buf, size_t len, const char *name, const IoCsvOpts *o, DiagErr *e)
{
    CsvSep sep = {o->sep ? o->sep : ",", 0};
    sep.n = strlen(sep.s);
    if (sep.n == 0) {
        diag_fail(e, "%s: the csv separator must not be empty", name);
        return NULL;
    }
    Lines L = {buf, buf + len, 0};
    const char *ls = NULL, *le = NULL;   /* set by next_line; gcc cannot see it once count_fields is inlined */
    int64_t header_cols = 0;    /* a header with no rows under it still gives the width */
    if (o->header) {
        if (next_line(&L, &ls, &le) && !line_is_blank(ls, le))
            header_cols = count_fields(ls, le, sep);
    }
    const char *data = L.p;
    int64_t first_line = L.lineno + 1;
    const char *last;
    int64_t rows = io_csv_rows(data, buf + len, o->rows, &last);
    int64_t cols = 0;
    if (rows > 0) {
        Lines F = {data, last, 0};
        next_line(&F, &ls, &le);
        cols = count_fields(ls, le, sep);
    } else {
        cols = o->cols >= 0 ? o->cols : header_cols;
    }
    if (o->cols >= 0 && rows > 0 && cols != o->cols) {
        diag_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)first_line, (long long)o->cols,
                (long long)cols);
        return NULL;
    }
    if (!io_dim_agrees(name, "rows", o->rows, rows, e))
        return NULL;
    Matrix *m = io_matrix_raw(rows, cols, name, e);
    if (!m)
        return NULL;
    Lines D = {data, last, first_line - 1};
    double *dst = m->data;
    /* Fast path for the common cell: a plain decimal "[-]digits[.digits]"
     * of at most 15 digits right before the separator (pixels, labels,
     * zeros, what write() produces). Exact, as in io_parse_double: m < 2^53
     * and one division by a power of ten. NA strings might look like such
     * numbers, so their presence turns it off. */
    bool fast = sep.n == 1 && o->nna == 0;
    char sep0 = sep.s[0];
    for (int64_t r = 0; r < rows; r++) {
        next_line(&D, &ls, &le);
        const char *p = ls;
        int64_t c = 0;
        for (;;) {
            if (fast && c < cols) {
                const char *q = p;
                bool neg = q < le && *q == '-';
                q += neg;
                const char *digits = q;
                uint64_t v = 0;
                unsigned d;
                int frac = 0;
                bool dot = false;
                while (q < le && (d = (unsigned)(*q - '0')) < 10) {
                    v = v * 10 + d;
                    q++;
                }
                if (q < le && *q == '.') {
                    const char *f = ++q;
                    dot = true;
                    while (q < le && (d = (unsigned)(*q - '0')) < 10) {
                        v = v * 10 + d;
                        q++;
                    }
                    frac = (int)(q - f);
                }
                int64_t ndig = (int64_t)(q - digits) - dot;   /* v may have wrapped if > 15 */
                if (ndig > 0 && ndig <= 15 && (q == le || *q == sep0)) {
                    double x = frac ? (double)v / io_pow10[frac] : (double)v;
                    dst[c++] = neg ? -x : x;
                    if (q == le)
                        break;
                    p = q + 1;
                    continue;
                }
            }
            const char *fe = field_end(p, le, sep);
            if (c < cols) {
                if (!csv_cell(p, fe, o, name, D.lineno, c + 1, dst + c, e)) {
                    mat_release(m);
                    return NULL;
                }
            }
            c++;
            if (fe >= le)
                break;
            p = fe + sep.n;
        }
        if (c != cols) {
            diag_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)D.lineno, (long long)cols,
                    (long long)c);
            mat_release(m);
            return NULL;
        }
        dst += cols;
    }
    return m;
}

bool io_write_csv(FILE *f, const Matrix *m, const IoCsvWriteOpts *opt)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    const char *sep = opt->sep ? opt->sep : ",";
    size_t sl = strlen(sep);
    if (opt->header) {
        for (int64_t j = 0; j < m->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            out_put(&o, "C", 1);
            out_int(&o, j + 1);
        }
        out_put(&o, "\n", 1);
    }
    /* a sparse matrix is written a row at a time, expanded into 'buf' */
    double *buf = NULL;
    if (m->sp && m->rows && !(buf = malloc((size_t)m->cols * sizeof *buf))) {
        out_done(&o);
        errno = ENOMEM;
        return false;
    }
    for (int64_t i = 0; i < m->rows; i++) {
        const double *row = buf ? buf : m->data + i * m->cols;
        if (buf)
            io_row_get(m, i, buf);
        for (int64_t j = 0; j < m->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            if (row[j] != 0.0)
                out_double(&o, row[j]);
            else if (!opt->sparse)
                out_put(&o, "0", 1);
        }
        out_put(&o, "\n", 1);
    }
    free(buf);
    return out_done(&o);
}
