/* SPDX-License-Identifier: Apache-2.0
 * libsvm: "label idx:val ..." lines; the parser and the writer. */
#include "internal.h"

/* Splits "idx<indsep>val" and parses both parts. */
static bool svm_pair(const char *s, const char *e, const char *indsep, int64_t *idx, double *v)
{
    size_t il = strlen(indsep);
    const char *colon = NULL;
    for (const char *q = s; q + il <= e && !colon; q++)
        if (memcmp(q, indsep, il) == 0)
            colon = q;
    return colon && io_parse_i64(s, colon, idx) && io_parse_double(colon + il, e, v);
}

/* Entries of a libsvm line are split by blanks or by the separator (upstream
 * writes ',' by default, other tools a space). */
static bool svm_sep(char c, char sep)
{
    return is_space(c) || c == sep;
}

/* The next entry of a line: [*t, *p) once *p is moved past it; false at
 * the end of the line. */
static bool svm_token(const char **p, const char *le, char sep, const char **t)
{
    const char *q = *p;
    while (q < le && svm_sep(*q, sep))
        q++;
    *t = q;
    while (q < le && !svm_sep(*q, sep))
        q++;
    *p = q;
    return *t < le;
}

Matrix *io_parse_libsvm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    return io_parse_libsvm_sep(buf, len, name, rows, cols, ",", ":", e);
}

Matrix *io_parse_libsvm_sep(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                            const char *sepstr, const char *indsep, DiagErr *e)
{
    char sep = sepstr && sepstr[0] ? sepstr[0] : ',';
    if (!indsep || !*indsep)
        indsep = ":";
    /* Pass 1: count the rows and, when cols is not given, find the largest
     * feature index; also validates every token, so pass 2 cannot fail. */
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    int64_t nrows = 0, maxidx = 0;
    while (next_line(&L, &ls, &le)) {
        if (line_is_blank(ls, le))
            continue;
        const char *p = ls, *t;
        bool first = true;
        while (svm_token(&p, le, sep, &t)) {
            double v;
            if (first) {
                if (!io_parse_double(t, p, &v)) {
                    diag_fail(e, "%s:%lld: label '%s' is not a number", name, (long long)L.lineno,
                            io_snippet(t, p, sn, sizeof sn));
                    return NULL;
                }
                first = false;
                continue;
            }
            int64_t idx;
            if (!svm_pair(t, p, indsep, &idx, &v)) {
                diag_fail(e, "%s:%lld: expected 'index%svalue', found '%s'", name, (long long)L.lineno, indsep,
                        io_snippet(t, p, sn, sizeof sn));
                return NULL;
            }
            if (idx < 1 || (cols >= 0 && idx > cols - 1)) {
                diag_fail(e, "%s:%lld: feature index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)idx, (long long)(cols >= 0 ? cols - 1 : INT64_MAX - 1));
                return NULL;
            }
            if (idx > maxidx)
                maxidx = idx;
        }
        nrows++;
    }
    if (!io_dim_agrees(name, "rows", rows, nrows, e))
        return NULL;
    if (cols < 0)
        cols = maxidx + 1;
    if (cols < 1) {
        diag_fail(e, "%s: a libsvm matrix needs at least the label column", name);
        return NULL;
    }
    Matrix *m = io_matrix_zero(nrows, cols, name, e);
    if (!m)
        return NULL;
    L = (Lines){buf, buf + len, 0};
    int64_t r = 0;
    while (next_line(&L, &ls, &le)) {
        if (line_is_blank(ls, le))
            continue;
        double *row = m->data + r * cols;
        const char *p = ls, *t;
        bool first = true;
        while (svm_token(&p, le, sep, &t)) {
            double v = 0;
            int64_t idx = 0;
            if (first) {
                io_parse_double(t, p, &v);
                row[cols - 1] = v;
                first = false;
            } else {
                svm_pair(t, p, indsep, &idx, &v);
                row[idx - 1] = v;
            }
        }
        r++;
    }
    return m;
}

bool io_write_libsvm(FILE *f, const Matrix *m)
{
    return io_write_libsvm_sep(f, m, ",", ":");
}

bool io_write_libsvm_sep(FILE *f, const Matrix *m, const char *sep, const char *indsep)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    size_t sl = strlen(sep), il = strlen(indsep);
    for (int64_t i = 0; i < m->rows && m->cols > 0; i++) {
        const double *row = m->data + i * m->cols;
        out_double(&o, row[m->cols - 1]);
        for (int64_t j = 0; j + 1 < m->cols; j++) {
            if (row[j] == 0.0)
                continue;
            out_put(&o, sep, sl);
            out_int(&o, j + 1);
            out_put(&o, indsep, il);
            out_double(&o, row[j]);
        }
        out_put(&o, "\n", 1);
    }
    return out_done(&o);
}
