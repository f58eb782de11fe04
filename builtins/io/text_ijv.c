/* SPDX-License-Identifier: Apache-2.0
 * text: "i j v" per line, 1-based, only the non-zeros; the parser (into a
 * CSR, entries in any order) and the writer. */
#include "internal.h"

/* Lines in [buf, buf + len): an upper bound on the entries of a file with
 * one entry a line. */
int64_t io_count_lines(const char *buf, size_t len)
{
    int64_t n = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        n++;
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

Matrix *io_parse_text(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    IoCsr b;
    if (!io_csr_init(&b, rows, cols, io_count_lines(buf, len), name, e))
        return NULL;
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    while (next_line(&L, &ls, &le)) {
        const char *ts[3], *te[3];
        int nt = split_blanks(ls, le, ts, te, 3);
        if (nt == 0 || *ts[0] == '%')
            continue;
        if (nt != 3) {
            bool comma = memchr(ls, ',', (size_t)(le - ls)) != NULL;
            diag_fail(e, "%s:%lld: expected 3 fields 'i j v', found %d%s", name, (long long)L.lineno, nt,
                    comma ? " (a csv file? use format=\"csv\")" : "");
            goto fail;
        }
        int64_t i, j;
        double v;
        if (!io_parse_index(ts[0], te[0], &i)) {
            diag_fail(e, "%s:%lld: row index '%s' is not an integer", name, (long long)L.lineno,
                    io_snippet(ts[0], te[0], sn, sizeof sn));
            goto fail;
        }
        if (!io_parse_index(ts[1], te[1], &j)) {
            diag_fail(e, "%s:%lld: column index '%s' is not an integer", name, (long long)L.lineno,
                    io_snippet(ts[1], te[1], sn, sizeof sn));
            goto fail;
        }
        if (!io_parse_double(ts[2], te[2], &v)) {
            diag_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                    io_snippet(ts[2], te[2], sn, sizeof sn));
            goto fail;
        }
        if (i == 0 && j == 0 && v == 0.0)
            continue;   /* the marker line an all-zero matrix is written as */
        if (i < 1 || i > rows) {
            diag_fail(e, "%s:%lld: row index %lld out of range 1..%lld", name, (long long)L.lineno, (long long)i,
                    (long long)rows);
            goto fail;
        }
        if (j < 1 || j > cols) {
            diag_fail(e, "%s:%lld: column index %lld out of range 1..%lld", name, (long long)L.lineno,
                    (long long)j, (long long)cols);
            goto fail;
        }
        if (!io_csr_add(&b, i - 1, j - 1, v)) {
            diag_fail(e, "%s:%lld: out of memory for the entries of a %lld x %lld matrix", name,
                      (long long)L.lineno, (long long)rows, (long long)cols);
            goto fail;
        }
    }
    return io_csr_finish(&b, name, e);
fail:
    io_csr_free(&b);
    return NULL;
}

bool io_write_text(FILE *f, const Matrix *m)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    if (out_ijv(&o, m) == 0)
        out_str(&o, "0 0 0\n");     /* an all-zero matrix: one marker line */
    return out_done(&o);
}
