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

/* The banner "%%MatrixMarket matrix <format> <field> <symmetry>". */
typedef struct MmHeader {
    bool array;         /* format array (else coordinate) */
    bool pattern;       /* field pattern: entries without values */
    int sym;            /* SYM_* */
} MmHeader;

static bool parse_banner(Lines *L, const char *name, MmHeader *h, DiagErr *e)
{
    const char *ls, *le, *ts[6], *te[6];
    char sn[64];
    if (!next_line(L, &ls, &le) || split_blanks(ls, le, ts, te, 6) < 1 || !tok_is(ts[0], te[0], "%%matrixmarket"))
        return diag_fail(e, "%s:1: missing '%%%%MatrixMarket' header", name);
    int nt = split_blanks(ls, le, ts, te, 6);
    if (nt != 5 || !tok_is(ts[1], te[1], "matrix"))
        return diag_fail(e, "%s:1: expected '%%%%MatrixMarket matrix <format> <field> <symmetry>'", name);
    if (tok_is(ts[2], te[2], "coordinate"))
        h->array = false;
    else if (tok_is(ts[2], te[2], "array"))
        h->array = true;
    else
        return diag_fail(e, "%s:1: unsupported MatrixMarket format '%s'", name, io_snippet(ts[2], te[2], sn, sizeof sn));
    h->pattern = false;
    if (tok_is(ts[3], te[3], "pattern"))
        h->pattern = true;
    else if (!tok_is(ts[3], te[3], "real") && !tok_is(ts[3], te[3], "integer") && !tok_is(ts[3], te[3], "double"))
        return diag_fail(e, "%s:1: unsupported MatrixMarket field '%s'", name, io_snippet(ts[3], te[3], sn, sizeof sn));
    if (h->pattern && h->array)
        return diag_fail(e, "%s:1: a 'pattern' matrix must be in coordinate format", name);
    if (tok_is(ts[4], te[4], "general"))
        h->sym = SYM_GENERAL;
    else if (tok_is(ts[4], te[4], "symmetric"))
        h->sym = SYM_SYMMETRIC;
    else if (tok_is(ts[4], te[4], "skew-symmetric"))
        h->sym = SYM_SKEW;
    else
        return diag_fail(e, "%s:1: unsupported MatrixMarket symmetry '%s'", name,
                         io_snippet(ts[4], te[4], sn, sizeof sn));
    return true;
}

/* The size line: "rows cols" (array) or "rows cols nnz" (coordinate) into
 * sz, checked against the rows and cols asked for (-1: any). */
static bool parse_size_line(Lines *L, const char *name, const MmHeader *h, int64_t rows, int64_t cols,
                            int64_t sz[3], DiagErr *e)
{
    const char *ls, *le, *ts[3], *te[3];
    char sn[64];
    if (!next_data_line(L, &ls, &le))
        return diag_fail(e, "%s: missing the size line", name);
    int want = h->array ? 2 : 3;
    int nt = split_blanks(ls, le, ts, te, 3);
    if (nt != want)
        return diag_fail(e, "%s:%lld: expected the size line '%s', found %d fields", name, (long long)L->lineno,
                         h->array ? "rows cols" : "rows cols nnz", nt);
    for (int k = 0; k < want; k++)
        if (!io_parse_i64(ts[k], te[k], &sz[k]) || sz[k] < 0)
            return diag_fail(e, "%s:%lld: '%s' is not a valid size", name, (long long)L->lineno,
                             io_snippet(ts[k], te[k], sn, sizeof sn));
    if (!io_dim_agrees(name, "rows", rows, sz[0], e) || !io_dim_agrees(name, "columns", cols, sz[1], e))
        return false;
    if (h->sym != SYM_GENERAL && sz[0] != sz[1])
        return diag_fail(e, "%s:%lld: a symmetric matrix must be square, not %lld x %lld", name,
                         (long long)L->lineno, (long long)sz[0], (long long)sz[1]);
    return true;
}

/* Array format: the values column-major; symmetric storage lists only the
 * lower triangle (skew: strictly lower). Counts the values read in *got. */
static bool read_array_values(Lines *L, const char *name, int sym, Matrix *m, int64_t expect, int64_t *got,
                              DiagErr *e)
{
    const char *ls, *le, *ts[1], *te[1];
    char sn[64];
    int64_t rows = m->rows, cols = m->cols;
    int64_t i = sym == SYM_SKEW ? 1 : 0, j = 0;
    while (*got < expect && next_data_line(L, &ls, &le)) {
        int nt = split_blanks(ls, le, ts, te, 1);
        double v;
        if (nt != 1)
            return diag_fail(e, "%s:%lld: expected 1 value, found %d", name, (long long)L->lineno, nt);
        if (!io_parse_double(ts[0], te[0], &v))
            return diag_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L->lineno,
                             io_snippet(ts[0], te[0], sn, sizeof sn));
        m->data[i * cols + j] = v;
        if (sym == SYM_SYMMETRIC)
            m->data[j * cols + i] = v;
        else if (sym == SYM_SKEW)
            m->data[j * cols + i] = -v;
        (*got)++;
        if (++i == rows) {
            j++;
            i = sym == SYM_GENERAL ? 0 : sym == SYM_SYMMETRIC ? j : j + 1;
        }
    }
    return true;
}

/* Coordinate format: "i j v" lines (pattern: "i j", the value 1), 1-based.
 * Counts the entries read in *got. */
static bool read_coordinate_entries(Lines *L, const char *name, const MmHeader *h, IoCsr *b, int64_t expect,
                                    int64_t *got, DiagErr *e)
{
    const char *ls, *le, *ts[3], *te[3];
    char sn[64];
    int64_t rows = b->rows, cols = b->cols;
    int nf = h->pattern ? 2 : 3;
    while (*got < expect && next_data_line(L, &ls, &le)) {
        int nt = split_blanks(ls, le, ts, te, 3);
        if (nt != nf)
            return diag_fail(e, "%s:%lld: expected %d fields '%s', found %d", name, (long long)L->lineno, nf,
                             h->pattern ? "i j" : "i j v", nt);
        int64_t i, j;
        double v = 1.0;
        if (!io_parse_index(ts[0], te[0], &i) || !io_parse_index(ts[1], te[1], &j))
            return diag_fail(e, "%s:%lld: indices must be integers", name, (long long)L->lineno);
        if (!h->pattern && !io_parse_double(ts[2], te[2], &v))
            return diag_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L->lineno,
                             io_snippet(ts[2], te[2], sn, sizeof sn));
        if (i < 1 || i > rows)
            return diag_fail(e, "%s:%lld: row index %lld out of range 1..%lld", name, (long long)L->lineno,
                             (long long)i, (long long)rows);
        if (j < 1 || j > cols)
            return diag_fail(e, "%s:%lld: column index %lld out of range 1..%lld", name, (long long)L->lineno,
                             (long long)j, (long long)cols);
        bool ok = io_csr_add(b, i - 1, j - 1, v);
        if (ok && h->sym == SYM_SYMMETRIC && i != j)
            ok = io_csr_add(b, j - 1, i - 1, v);
        else if (ok && h->sym == SYM_SKEW && i != j)
            ok = io_csr_add(b, j - 1, i - 1, -v);
        if (!ok)
            return diag_fail(e, "%s:%lld: out of memory for the entries of a %lld x %lld matrix", name,
                             (long long)L->lineno, (long long)rows, (long long)cols);
        (*got)++;
    }
    return true;
}

/* After the entries: fewer than declared, or more, is an error. */
static bool check_entry_count(Lines *L, const char *name, int64_t expect, int64_t got, DiagErr *e)
{
    const char *ls, *le;
    if (got < expect)
        return diag_fail(e, "%s: expected %lld entries, found %lld", name, (long long)expect, (long long)got);
    if (next_data_line(L, &ls, &le))
        return diag_fail(e, "%s:%lld: more entries than the %lld declared", name, (long long)L->lineno,
                         (long long)expect);
    return true;
}

Matrix *io_parse_mm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    Lines L = {buf, buf + len, 0};
    MmHeader h = {false, false, SYM_GENERAL};
    int64_t sz[3] = {0, 0, 0};
    if (!parse_banner(&L, name, &h, e) || !parse_size_line(&L, name, &h, rows, cols, sz, e))
        return NULL;
    rows = sz[0];
    cols = sz[1];
    int64_t expect, got = 0;
    if (!h.array) {
        /* Coordinate: a CSR sized by the declared count (bounded by the
         * lines there are: a header cannot make it allocate). */
        expect = sz[2];
        int64_t cap = io_count_lines(L.p, (size_t)(L.end - L.p));
        if (expect < cap)
            cap = expect;
        if (h.sym != SYM_GENERAL)
            cap *= 2;
        IoCsr b;
        if (!io_csr_init(&b, rows, cols, cap, name, e))
            return NULL;
        if (!read_coordinate_entries(&L, name, &h, &b, expect, &got, e) ||
            !check_entry_count(&L, name, expect, got, e)) {
            io_csr_free(&b);
            return NULL;
        }
        return io_csr_finish(&b, name, e);
    }
    Matrix *m = io_matrix_zero(rows, cols, name, e);
    if (!m)
        return NULL;
    expect = h.sym == SYM_GENERAL     ? rows * cols
             : h.sym == SYM_SYMMETRIC ? rows * (rows + 1) / 2
                                      : rows * (rows - 1) / 2;
    if (!read_array_values(&L, name, h.sym, m, expect, &got, e) || !check_entry_count(&L, name, expect, got, e)) {
        mat_release(m);
        return NULL;
    }
    return m;
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
