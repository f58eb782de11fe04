/* SPDX-License-Identifier: Apache-2.0
 * libsvm: "label idx:val ..." lines; the parser and the writer. */
#include "internal.h"

#include "../../base/sparse.h"

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

/* One feature of the line being read. */
typedef struct Feat {
    int64_t idx;
    double v;
} Feat;

static int feat_cmp(const void *a, const void *b)
{
    const Feat *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Occurrences of 'pat' (non-empty) in [s, e): with the lines, a bound on
 * the entries of a libsvm file. */
static int64_t count_occurrences(const char *s, const char *e, const char *pat)
{
    size_t pl = strlen(pat);
    int64_t n = 0;
    while ((size_t)(e - s) >= pl) {
        const char *q = memchr(s, pat[0], (size_t)(e - s) - pl + 1);
        if (!q)
            break;
        if (memcmp(q, pat, pl) == 0) {
            n++;
            s = q + pl;
        } else {
            s = q + 1;
        }
    }
    return n;
}

/* The labels go into the last column, cols - 1: row r's entries move up
 * by the number of non-zero labels above it, and its label (when not 0)
 * follows its features. From the last row up, so nothing is overwritten
 * before it has moved. */
static void append_labels(SpMat *s, const double *label, int64_t nlab)
{
    int64_t shift = nlab;
    int32_t lc = (int32_t)(s->cols - 1);
    for (int64_t r = s->rows - 1; r >= 0; r--) {
        int64_t a = s->rowptr[r], z = s->rowptr[r + 1];
        bool has = label[r] != 0;
        int64_t before = shift - has;
        if (before && z > a) {
            memmove(s->colidx + a + before, s->colidx + a, (size_t)(z - a) * sizeof *s->colidx);
            memmove(s->vals + a + before, s->vals + a, (size_t)(z - a) * sizeof *s->vals);
        }
        if (has) {
            s->colidx[z + before] = lc;
            s->vals[z + before] = label[r];
        }
        s->rowptr[r + 1] = z + shift;
        shift = before;
    }
    s->nnz = s->rowptr[s->rows];
}

Matrix *io_parse_libsvm_sep(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                            const char *sepstr, const char *indsep, DiagErr *e)
{
    char sep = sepstr && sepstr[0] ? sepstr[0] : ',';
    if (!indsep || !*indsep)
        indsep = ":";
    if (cols == 0) {
        diag_fail(e, "%s: a libsvm matrix needs at least the label column", name);
        return NULL;
    }
    if (cols > INT32_MAX) {
        diag_fail(e, "%s: %lld columns are too many for a libsvm matrix (at most %d)", name, (long long)cols,
                  INT32_MAX);
        return NULL;
    }
    /* One pass: the features go straight into a CSR sized by the bounds a
     * quick scan gives (lines for the rows, index separators for the
     * entries); the labels wait in an array until the column count is known
     * (the largest index, unless cols is given). */
    int64_t maxrows = io_count_lines(buf, len);
    int64_t maxent = count_occurrences(buf, buf + len, indsep) + maxrows;
    if (!io_check_sparse(maxrows, 0, maxent, name, e))
        return NULL;
    SpMat *s = sp_new(maxrows, 0, maxent);
    double *label = malloc(((size_t)maxrows + 1) * sizeof *label);
    Feat *line = NULL;
    int64_t lcap = 0, nlab = 0, maxidx = 0;
    /* Without a given column count, indices stop where a CSR column index
     * (32-bit) does. */
    int64_t idxmax = cols > 0 ? cols - 1 : (int64_t)INT32_MAX - 1;
    if (!s || !label) {
        diag_fail(e, "%s: out of memory for a sparse matrix of %lld rows", name, (long long)maxrows);
        goto fail;
    }
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    int64_t r = 0;
    while (next_line(&L, &ls, &le)) {
        if (line_is_blank(ls, le))
            continue;
        const char *p = ls, *t;
        int64_t n = 0;
        bool sorted = true;
        label[r] = 0;   /* a line of separators only: a row of zeros */
        if (svm_token(&p, le, sep, &t) && !io_parse_double(t, p, &label[r])) {
            diag_fail(e, "%s:%lld: label '%s' is not a number", name, (long long)L.lineno,
                      io_snippet(t, p, sn, sizeof sn));
            goto fail;
        }
        nlab += label[r] != 0;
        while (svm_token(&p, le, sep, &t)) {
            int64_t idx;
            double v;
            if (!svm_pair(t, p, indsep, &idx, &v)) {
                diag_fail(e, "%s:%lld: expected 'index%svalue', found '%s'", name, (long long)L.lineno, indsep,
                          io_snippet(t, p, sn, sizeof sn));
                goto fail;
            }
            if (idx < 1 || idx > idxmax) {
                diag_fail(e, "%s:%lld: feature index %lld out of range 1..%lld", name, (long long)L.lineno,
                          (long long)idx, (long long)idxmax);
                goto fail;
            }
            if (n == lcap) {
                int64_t nc = lcap ? 2 * lcap : 64;
                Feat *g = realloc(line, (size_t)nc * sizeof *g);
                if (!g) {
                    diag_fail(e, "%s:%lld: out of memory", name, (long long)L.lineno);
                    goto fail;
                }
                line = g;
                lcap = nc;
            }
            if (n && idx <= line[n - 1].idx)
                sorted = false;
            line[n++] = (Feat){idx, v};
        }
        if (!sorted)
            qsort(line, (size_t)n, sizeof *line, feat_cmp);
        for (int64_t k = 0; k < n; k++) {
            if (k && line[k].idx == line[k - 1].idx) {
                diag_fail(e, "%s:%lld: feature index %lld appears more than once", name, (long long)L.lineno,
                          (long long)line[k].idx);
                goto fail;
            }
            if (line[k].v == 0)
                continue;
            if (s->nnz == s->cap) {     /* not reached: maxent bounds the entries */
                diag_fail(e, "%s:%lld: more entries than the file's index separators", name, (long long)L.lineno);
                goto fail;
            }
            s->colidx[s->nnz] = (int32_t)(line[k].idx - 1);
            s->vals[s->nnz++] = line[k].v;
        }
        if (n && line[n - 1].idx > maxidx)
            maxidx = line[n - 1].idx;
        s->rowptr[++r] = s->nnz;
    }
    free(line);
    line = NULL;
    if (!io_dim_agrees(name, "rows", rows, r, e))
        goto fail;
    s->rows = r;
    s->cols = cols >= 0 ? cols : maxidx + 1;
    /* maxent counted a label per line and every index separator, so the
     * labels fit. */
    append_labels(s, label, nlab);
    free(label);
    sp_shrink(s);
    return io_matrix_from_csr(s, name, e);
fail:
    free(line);
    free(label);
    sp_free(s);
    return NULL;
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
    if (m->sp) {
        /* the non-zeros of each row: the features, then the label when the
         * row's last entry is in the last column */
        const SpMat *s = m->sp;
        int32_t lc = (int32_t)(s->cols - 1);
        for (int64_t i = 0; i < s->rows; i++) {
            int64_t a = s->rowptr[i], z = s->rowptr[i + 1];
            bool has = z > a && s->colidx[z - 1] == lc;
            out_double(&o, has ? s->vals[z - 1] : 0.0);
            for (int64_t p = a; p < z - has; p++) {
                out_put(&o, sep, sl);
                out_int(&o, (int64_t)s->colidx[p] + 1);
                out_put(&o, indsep, il);
                out_double(&o, s->vals[p]);
            }
            out_put(&o, "\n", 1);
        }
        return out_done(&o);
    }
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
