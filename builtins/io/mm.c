/* SPDX-License-Identifier: Apache-2.0
 * MatrixMarket: the parser (coordinate and array, general, symmetric and
 * skew-symmetric) and the writer. */
#include "internal.h"

/* Next line that is neither blank nor a '%' comment. */
static bool next_data_line(Lines *L, const char **ls, const char **le)
{
    while (next_line(L, ls, le)) {
        const char *s = *ls;
        while (s < *le && is_space(*s))
            s++;
        if (s < *le && *s != '%')
            return true;
    }
    return false;
}

enum { SYM_GENERAL, SYM_SYMMETRIC, SYM_SKEW };

Matrix *io_parse_mm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    Lines L = {buf, buf + len, 0};
    const char *ls, *le, *ts[6], *te[6];
    char sn[64];
    if (!next_line(&L, &ls, &le) || split_blanks(ls, le, ts, te, 6) < 1 || !tok_is(ts[0], te[0], "%%matrixmarket")) {
        diag_fail(e, "%s:1: missing '%%%%MatrixMarket' header", name);
        return NULL;
    }
    int nt = split_blanks(ls, le, ts, te, 6);
    if (nt != 5 || !tok_is(ts[1], te[1], "matrix")) {
        diag_fail(e, "%s:1: expected '%%%%MatrixMarket matrix <format> <field> <symmetry>'", name);
        return NULL;
    }
    bool array;
    if (tok_is(ts[2], te[2], "coordinate"))
        array = false;
    else if (tok_is(ts[2], te[2], "array"))
        array = true;
    else {
        diag_fail(e, "%s:1: unsupported MatrixMarket format '%s'", name, io_snippet(ts[2], te[2], sn, sizeof sn));
        return NULL;
    }
    bool pattern = false;
    if (tok_is(ts[3], te[3], "pattern"))
        pattern = true;
    else if (!tok_is(ts[3], te[3], "real") && !tok_is(ts[3], te[3], "integer") && !tok_is(ts[3], te[3], "double")) {
        diag_fail(e, "%s:1: unsupported MatrixMarket field '%s'", name, io_snippet(ts[3], te[3], sn, sizeof sn));
        return NULL;
    }
    if (pattern && array) {
        diag_fail(e, "%s:1: a 'pattern' matrix must be in coordinate format", name);
        return NULL;
    }
    int sym;
    if (tok_is(ts[4], te[4], "general"))
        sym = SYM_GENERAL;
    else if (tok_is(ts[4], te[4], "symmetric"))
        sym = SYM_SYMMETRIC;
    else if (tok_is(ts[4], te[4], "skew-symmetric"))
        sym = SYM_SKEW;
    else {
        diag_fail(e, "%s:1: unsupported MatrixMarket symmetry '%s'", name, io_snippet(ts[4], te[4], sn, sizeof sn));
        return NULL;
    }
    if (!next_data_line(&L, &ls, &le)) {
        diag_fail(e, "%s: missing the size line", name);
        return NULL;
    }
    int want = array ? 2 : 3;
    int64_t sz[3] = {0, 0, 0};
    nt = split_blanks(ls, le, ts, te, 3);
    if (nt != want) {
        diag_fail(e, "%s:%lld: expected the size line '%s', found %d fields", name, (long long)L.lineno,
                array ? "rows cols" : "rows cols nnz", nt);
        return NULL;
    }
    for (int k = 0; k < want; k++)
        if (!io_parse_i64(ts[k], te[k], &sz[k]) || sz[k] < 0) {
            diag_fail(e, "%s:%lld: '%s' is not a valid size", name, (long long)L.lineno,
                    io_snippet(ts[k], te[k], sn, sizeof sn));
            return NULL;
        }
    if (!io_dim_agrees(name, "rows", rows, sz[0], e) || !io_dim_agrees(name, "columns", cols, sz[1], e))
        return NULL;
    rows = sz[0];
    cols = sz[1];
    if (sym != SYM_GENERAL && rows != cols) {
        diag_fail(e, "%s:%lld: a symmetric matrix must be square, not %lld x %lld", name, (long long)L.lineno,
                (long long)rows, (long long)cols);
        return NULL;
    }
    Matrix *m = io_matrix_zero(rows, cols, name, e);
    if (!m)
        return NULL;
    int64_t expect, got = 0;
    if (array) {
        /* Column-major; symmetric storage lists only the lower triangle
         * (skew: strictly lower). */
        expect = sym == SYM_GENERAL ? rows * cols : sym == SYM_SYMMETRIC ? rows * (rows + 1) / 2 : rows * (rows - 1) / 2;
        int64_t i = 0, j = 0;
        if (sym == SYM_SKEW)
            i = 1;
        while (got < expect && next_data_line(&L, &ls, &le)) {
            nt = split_blanks(ls, le, ts, te, 1);
            double v;
            if (nt != 1) {
                diag_fail(e, "%s:%lld: expected 1 value, found %d", name, (long long)L.lineno, nt);
                goto fail;
            }
            if (!io_parse_double(ts[0], te[0], &v)) {
                diag_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                        io_snippet(ts[0], te[0], sn, sizeof sn));
                goto fail;
            }
            m->data[i * cols + j] = v;
            if (sym == SYM_SYMMETRIC)
                m->data[j * cols + i] = v;
            else if (sym == SYM_SKEW)
                m->data[j * cols + i] = -v;
            got++;
            if (++i == rows) {
                j++;
                i = sym == SYM_GENERAL ? 0 : sym == SYM_SYMMETRIC ? j : j + 1;
            }
        }
    } else {
        expect = sz[2];
        while (got < expect && next_data_line(&L, &ls, &le)) {
            int nf = pattern ? 2 : 3;
            nt = split_blanks(ls, le, ts, te, 3);
            if (nt != nf) {
                diag_fail(e, "%s:%lld: expected %d fields '%s', found %d", name, (long long)L.lineno, nf,
                        pattern ? "i j" : "i j v", nt);
                goto fail;
            }
            int64_t i, j;
            double v = 1.0;
            if (!io_parse_index(ts[0], te[0], &i) || !io_parse_index(ts[1], te[1], &j)) {
                diag_fail(e, "%s:%lld: indices must be integers", name, (long long)L.lineno);
                goto fail;
            }
            if (!pattern && !io_parse_double(ts[2], te[2], &v)) {
                diag_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                        io_snippet(ts[2], te[2], sn, sizeof sn));
                goto fail;
            }
            if (i < 1 || i > rows) {
                diag_fail(e, "%s:%lld: row index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)i, (long long)rows);
                goto fail;
            }
            if (j < 1 || j > cols) {
                diag_fail(e, "%s:%lld: column index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)j, (long long)cols);
                goto fail;
            }
            m->data[(i - 1) * cols + (j - 1)] = v;
            if (sym == SYM_SYMMETRIC)
                m->data[(j - 1) * cols + (i - 1)] = v;
            else if (sym == SYM_SKEW && i != j)
                m->data[(j - 1) * cols + (i - 1)] = -v;
            got++;
        }
    }
    if (got < expect) {
        diag_fail(e, "%s: expected %lld entries, found %lld", name, (long long)expect, (long long)got);
        goto fail;
    }
    if (next_data_line(&L, &ls, &le)) {
        diag_fail(e, "%s:%lld: more entries than the %lld declared", name, (long long)L.lineno, (long long)expect);
        goto fail;
    }
    return m;
fail:
    mat_release(m);
    return NULL;
}

bool io_write_mm(FILE *f, const Matrix *m)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    out_str(&o, "%%MatrixMarket matrix coordinate real general\n");
    out_int(&o, m->rows);
    out_put(&o, " ", 1);
    out_int(&o, m->cols);
    out_put(&o, " ", 1);
    out_int(&o, io_nnz(m));
    out_put(&o, "\n", 1);
    out_ijv(&o, m);
    return out_done(&o);
}
