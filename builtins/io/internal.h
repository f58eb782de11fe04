/* SPDX-License-Identifier: Apache-2.0
 * Helpers private to the matrix file formats in builtins/io/: shared by the
 * per-format files, not part of io_formats.h. The small per-line and
 * per-cell ones are static inline so each parser and writer keeps them
 * inlined as it did when the formats shared one file. */
#ifndef DML_BUILTINS_IO_INTERNAL_H
#define DML_BUILTINS_IO_INTERNAL_H

#include "io_formats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

#include "../../runtime/fmt.h"

static inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
static inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

/* Copies [s, e) into dst for quoting inside a message, shortened with "..."
 * so one absurd field cannot swamp the message. */
const char *io_snippet(const char *s, const char *e, char *dst, size_t cap);

/* csv.c: the end of the csv field starting at p in a line ending at le: the
 * next separator (sep[0..sepn)) outside double quotes, or le. */
const char *io_csv_field_end(const char *p, const char *le, const char *sep, size_t sepn);
/* csv.c: the number of fields in the line [ls, le) (at least 1). */
int64_t io_csv_fields(const char *ls, const char *le, const char *sep, size_t sepn);

/* csv.c: the rows of a csv body [data, end): every line up to the last one
 * that is not empty (a line of blanks is a row). Trailing empty lines are
 * rows too when the declared row count (-1: none) reaches them: a 1-column
 * csv writes a missing cell or a sparse zero as an empty line. Sets
 * *rows_end to where the rows stop. */
int64_t io_csv_rows(const char *data, const char *end, int64_t declared, const char **rows_end);
/* csv.c: 'rows' rows end at 'last' (the last byte before the trailing line
 * breaks, which run to 'end'); when 'declared' reaches into the empty lines
 * there, they are rows too. The count, with *rows_end where the rows stop. */
int64_t io_csv_tail_rows(const char *last, const char *end, int64_t rows, int64_t declared, const char **rows_end);

/* common.c: a matrix of uninitialised cells after io_check_dims; whether a
 * declared dimension agrees with the one found; integer fields. */
Matrix *io_matrix_raw(int64_t rows, int64_t cols, const char *name, DiagErr *e);
bool io_dim_agrees(const char *name, const char *what, int64_t declared, int64_t found, DiagErr *e);
/* common.c: read() until n bytes or end of file, retrying EINTR; the count,
 * -1 on error (errno set). */
ssize_t io_read_full(int fd, void *dst, size_t n);
bool io_parse_i64(const char *s, const char *e, int64_t *out);
bool io_parse_index(const char *s, const char *e, int64_t *out);

/* common.c: whether a sparse rows x cols matrix with room for nnz entries
 * is representable and its CSR form fits in memory (the dense size is not
 * asked); the message names 'name'. */
bool io_check_sparse(int64_t rows, int64_t cols, int64_t nnz, const char *name, DiagErr *e);

/* ================================================================
 * Sparse results
 * ================================================================ */

struct SpMat;
/* common.c: the matrix a reader built as CSR ('s' is taken, freed on
 * failure too): held sparse when sp_prefer_sparse says so, else made dense
 * (when the dense form fits; otherwise an error naming the size). The one
 * place where a reader's CSR becomes a Matrix. */
Matrix *io_matrix_from_csr(struct SpMat *s, const char *name, DiagErr *e);

/* csr.c: a CSR built from (row, column, value) entries that come in any
 * order (0-based, in range: the caller checks). While the entries come in
 * strictly ascending (row, column) order they are appended to the CSR
 * directly; from the first one out of order they are kept as triples and
 * sorted at the end. Of entries at the same position the last one wins (as
 * a dense reader overwriting the cell), and zeros are dropped. A matrix of
 * more than INT32_MAX columns is filled densely (it has no CSR form). */
typedef struct IoCsr {
    int64_t rows, cols;
    struct SpMat *s;            /* CSR (append mode), the result's storage */
    int64_t last_i, last_j;     /* the position last added in append mode */
    bool triples;               /* entries are in ti/tj/tv */
    int64_t n, cap;
    int64_t *ti;
    int32_t *tj;
    double *tv;
    Matrix *dense;              /* cols > INT32_MAX */
} IoCsr;

/* 'cap': the expected number of entries (a hint; more may come). */
bool io_csr_init(IoCsr *b, int64_t rows, int64_t cols, int64_t cap, const char *name, DiagErr *e);
/* False when memory runs out. */
bool io_csr_add(IoCsr *b, int64_t i, int64_t j, double v);
/* The matrix (through io_matrix_from_csr); b is freed either way. */
Matrix *io_csr_finish(IoCsr *b, const char *name, DiagErr *e);
void io_csr_free(IoCsr *b);
/* text_ijv.c: the lines of [buf, buf + len) (a bound on one-a-line entries). */
int64_t io_count_lines(const char *buf, size_t len);

/* common.c: row i of m, dense in out[0 .. m->cols): the row of a dense
 * matrix, or a sparse one's row expanded (the csv writer's row iterator). */
void io_row_get(const Matrix *m, int64_t i, double *out);

/* Exact powers of ten, 1e0 to 1e22, for the fast decimal paths. */
extern const double io_pow10[23];

/* ASCII case-insensitive comparison of [s, e) with a lower-case word. */
static inline bool tok_is(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(e - s) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return false;
    }
    return true;
}

/* ================================================================
 * Line scanning
 * ================================================================ */

typedef struct Lines {
    const char *p, *end;
    int64_t lineno;         /* number of the line last returned */
} Lines;

/* Next line as [*ls, *le) without its '\n' or trailing '\r'. */
static inline bool next_line(Lines *L, const char **ls, const char **le)
{
    if (L->p >= L->end)
        return false;
    const char *s = L->p;
    const char *nl = memchr(s, '\n', (size_t)(L->end - s));
    const char *e = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    if (e > s && e[-1] == '\r')
        e--;
    *ls = s;
    *le = e;
    L->lineno++;
    return true;
}

static inline bool line_is_blank(const char *s, const char *e)
{
    for (; s < e; s++)
        if (!is_space(*s))
            return false;
    return true;
}

/* Splits [s, e) at blanks into up to 'max' tokens; returns the total token
 * count (which may exceed max). */
static inline int split_blanks(const char *s, const char *e, const char **ts, const char **te, int max)
{
    int n = 0;
    while (s < e) {
        while (s < e && is_space(*s))
            s++;
        if (s == e)
            break;
        const char *t = s;
        while (s < e && !is_space(*s))
            s++;
        if (n < max) {
            ts[n] = t;
            te[n] = s;
        }
        n++;
    }
    return n;
}

/* ================================================================
 * Writers: a chunk buffer in front of the FILE, so each cell costs a few
 * stores instead of a stdio call.
 * ================================================================ */

typedef struct Out {
    FILE *f;
    char *buf;
    size_t n, cap;
    bool ok;
} Out;

static inline bool out_init(Out *o, FILE *f)
{
    o->f = f;
    o->cap = 1 << 16;
    o->n = 0;
    o->buf = malloc(o->cap);
    o->ok = o->buf != NULL;
    if (!o->ok)
        errno = ENOMEM;
    return o->ok;
}

static inline void out_flush(Out *o)
{
    if (o->ok && o->n && fwrite(o->buf, 1, o->n, o->f) != o->n)
        o->ok = false;
    o->n = 0;
}

static inline bool out_done(Out *o)
{
    out_flush(o);
    free(o->buf);
    return o->ok && !ferror(o->f);
}

static inline void out_put(Out *o, const char *s, size_t n)
{
    if (o->cap - o->n < n) {
        out_flush(o);
        if (n > o->cap) {
            if (o->ok && fwrite(s, 1, n, o->f) != n)
                o->ok = false;
            return;
        }
    }
    memcpy(o->buf + o->n, s, n);
    o->n += n;
}

static inline void out_str(Out *o, const char *s) { out_put(o, s, strlen(s)); }

static inline void out_int(Out *o, int64_t v)
{
    char tmp[24];           /* 20 digits and a sign at most */
    char *end = tmp + sizeof tmp, *p = end;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    out_put(o, p, (size_t)(end - p));
}

static inline void out_double(Out *o, double d)
{
    /* Integers below 1e7 are what Java prints as "<digits>.0"; they are the
     * bulk of typical data (pixels, labels, counts) and this skips the
     * shortest-digits search. */
    if (d == d && fabs(d) >= 1.0 && fabs(d) < 1e7 && d == (double)(int64_t)d) {
        out_int(o, (int64_t)d);
        out_put(o, ".0", 2);
        return;
    }
    char tmp[40];
    int n = fmt_double_java(d, tmp);
    out_put(o, tmp, (size_t)n);
}

/* A frame cell that is not a string, as the frame writers spell it: FP64
 * and FP32 as Double.toString and Float.toString, "true" / "false". */
static inline void out_cell_scalar(Out *o, const FrameCol *c, int64_t i)
{
    switch (c->type) {
    case FT_DOUBLE:
        if (c->narrow) {
            char tmp[40];
            int n = fmt_float_java((float)c->d[i], tmp);
            out_put(o, tmp, (size_t)n);
        } else {
            out_double(o, c->d[i]);
        }
        break;
    case FT_INT: out_int(o, c->i[i]); break;
    case FT_BOOL: out_str(o, c->b[i] ? "true" : "false"); break;
    case FT_STRING: break;
    }
}

/* "i j v" lines (1-based) for the non-zero cells of m, row by row: the body
 * of the text and MatrixMarket files (common.c); a sparse m's non-zeros are
 * read from its CSR, never densified. Returns the lines written. */
int64_t out_ijv(Out *o, const Matrix *m);

#endif
