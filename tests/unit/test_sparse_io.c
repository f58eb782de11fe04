/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for the sparse side of builtins/io/: the readers of the
 * coordinate formats (text/ijv, MatrixMarket), libsvm and the sparse binary
 * layout build a CSR (builtins/io/csr.c, io_matrix_from_csr). Every format
 * is round-tripped on random matrices (0x0, 1x1, empty rows and columns,
 * NaN and +-Inf among the non-zeros) and compared cell by cell with the
 * matrix written; entries in shuffled order, duplicates (the last one wins),
 * explicit zeros and symmetric storage are compared with a dense scatter of
 * the same entries (what the dense readers did); malformed input must fail
 * with a message naming the file and line. Prints "N passed, N failed". */
#include "../../base/sparse.h"
#include "../../builtins/io/io_formats.h"
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* A value for a non-zero cell: mostly ordinary numbers, sometimes NaN,
 * +-Inf, integers, tiny or huge ones. */
static double nz_value(void)
{
    switch (rnd() % 16) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return (double)(int64_t)(rnd() % 1000) - 500 + 0.5;
    case 4: return 1e-300 * (1 + unif());
    case 5: return -1e300 * (1 + unif());
    default: return (unif() - 0.5) * 100;
    }
}

/* The cell (i, j) of a parsed matrix, whatever its form. */
static double cell(const Matrix *m, int64_t i, int64_t j)
{
    return mat_get(m, i, j);
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* m holds exactly the rows x cols cells of 'want' (NaN equal to NaN, -0.0
 * to 0.0: the sparse form keeps no signed zeros). */
static bool equals_dense(const Matrix *m, const double *want, int64_t rows, int64_t cols)
{
    if (!m || m->rows != rows || m->cols != cols)
        return false;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if (!same(cell(m, i, j), want[i * cols + j]))
                return false;
    return true;
}

/* A random rows x cols dense matrix at density d; some rows and columns
 * are left empty on purpose. */
static Matrix *random_matrix(int64_t rows, int64_t cols, double d)
{
    Matrix *m = mat_new_zero_raw(rows, cols);
    int64_t empty_row = rows > 2 ? (int64_t)(rnd() % (uint64_t)rows) : -1;
    int64_t empty_col = cols > 2 ? (int64_t)(rnd() % (uint64_t)cols) : -1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if (i != empty_row && j != empty_col && unif() < d)
                m->data[i * cols + j] = nz_value();
    return m;
}

/* What a writer puts into a memory buffer (malloc'd, NUL-terminated). */
typedef bool (*Writer)(FILE *, const Matrix *);

static char *write_mem(Writer w, const Matrix *m, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    bool ok = w(f, m);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

static bool write_csr(FILE *f, const Matrix *m)
{
    SpMat *s = sp_from_dense(m->data, m->rows, m->cols, -1);
    bool ok = s && io_write_binary_csr(f, s);
    sp_free(s);
    return ok;
}

/* Fisher-Yates over n items of 'size' bytes. */
static void shuffle(void *items, int64_t n, size_t size)
{
    char tmp[64], *a = items;
    for (int64_t k = n - 1; k > 0; k--) {
        int64_t r = (int64_t)(rnd() % (uint64_t)(k + 1));
        memcpy(tmp, a + k * size, size);
        memcpy(a + k * size, a + r * size, size);
        memcpy(a + r * size, tmp, size);
    }
}

typedef struct Trip {
    int64_t i, j;
    double v;
} Trip;

/* "i j v" lines (1-based) of the n triples, values in full precision. */
static char *ijv_text(const char *head, const Trip *t, int64_t n, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    fputs(head, f);
    for (int64_t k = 0; k < n; k++) {
        if (isnan(t[k].v))
            fprintf(f, "%lld %lld NaN\n", (long long)t[k].i + 1, (long long)t[k].j + 1);
        else if (isinf(t[k].v))
            fprintf(f, "%lld %lld %sInfinity\n", (long long)t[k].i + 1, (long long)t[k].j + 1, t[k].v < 0 ? "-" : "");
        else
            fprintf(f, "%lld %lld %.17g\n", (long long)t[k].i + 1, (long long)t[k].j + 1, t[k].v);
    }
    fclose(f);
    return buf;
}

/* ---- round trips ---- */

static const int64_t shapes[][2] = {{0, 0}, {0, 5}, {5, 0}, {1, 1}, {1, 7}, {7, 1}, {13, 17}, {200, 150}, {3, 400}};
static const double densities[] = {0, 0.002, 0.05, 0.3, 0.9, 1};

static void test_round_trips(void)
{
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t d = 0; d < sizeof densities / sizeof *densities; d++) {
            int64_t rows = shapes[s][0], cols = shapes[s][1];
            Matrix *m = random_matrix(rows, cols, densities[d]);
            DiagErr e;
            size_t len;
            char *buf;
            Matrix *r;

            buf = write_mem(io_write_text, m, &len);
            r = io_parse_text(buf, len, "t.txt", rows, cols, &e);
            if (!CHECK(equals_dense(r, m->data, rows, cols)))
                fprintf(stderr, "  text %lldx%lld at %g: %s\n", (long long)rows, (long long)cols, densities[d],
                        r ? "cells differ" : e.msg);
            mat_release(r);
            free(buf);

            buf = write_mem(io_write_mm, m, &len);
            r = io_parse_mm(buf, len, "t.mtx", -1, -1, &e);
            if (!CHECK(equals_dense(r, m->data, rows, cols)))
                fprintf(stderr, "  mm %lldx%lld at %g: %s\n", (long long)rows, (long long)cols, densities[d],
                        r ? "cells differ" : e.msg);
            mat_release(r);
            free(buf);

            if (cols > 0) {
                buf = write_mem(io_write_libsvm, m, &len);
                r = io_parse_libsvm(buf, len, "t.svm", rows, cols, &e);
                if (!CHECK(equals_dense(r, m->data, rows, cols)))
                    fprintf(stderr, "  libsvm %lldx%lld at %g: %s\n", (long long)rows, (long long)cols,
                            densities[d], r ? "cells differ" : e.msg);
                mat_release(r);
                free(buf);
            }

            buf = write_mem(io_write_binary, m, &len);
            r = io_parse_binary(buf, len, "t.bin", rows, cols, &e);
            CHECK(equals_dense(r, m->data, rows, cols));
            mat_release(r);
            free(buf);

            buf = write_mem(write_csr, m, &len);
            r = io_parse_binary(buf, len, "t.bin", rows, cols, &e);
            if (!CHECK(equals_dense(r, m->data, rows, cols)))
                fprintf(stderr, "  sparse binary %lldx%lld at %g: %s\n", (long long)rows, (long long)cols,
                        densities[d], r ? "cells differ" : e.msg);
            mat_release(r);
            /* The same through the file reader, which reads the arrays in
             * place. */
            char path[] = "/tmp/dml_test_sparse_io_XXXXXX";
            int fd = mkstemp(path);
            if (CHECK(fd >= 0)) {
                CHECK(write(fd, buf, len) == (ssize_t)len);
                close(fd);
                r = io_read_binary_file(path, -1, -1, &e);
                CHECK(equals_dense(r, m->data, rows, cols));
                mat_release(r);
                unlink(path);
            }
            free(buf);
            mat_release(m);
        }
}

/* ---- entries in any order ---- */

/* The n triples scattered into a dense rows x cols array in file order (the
 * dense readers' result): the last entry of a cell wins. */
static double *scatter(const Trip *t, int64_t n, int64_t rows, int64_t cols)
{
    double *d = calloc((size_t)(rows * cols) + 1, sizeof *d);
    for (int64_t k = 0; k < n; k++)
        d[t[k].i * cols + t[k].j] = t[k].v;
    return d;
}

/* Random triples: the non-zeros of a random matrix, shuffled, with explicit
 * zeros and overwritten duplicates mixed in. */
static Trip *random_triples(int64_t rows, int64_t cols, double d, int64_t *n)
{
    int64_t cap = rows * cols * 3 + 8, k = 0;
    Trip *t = malloc((size_t)cap * sizeof *t);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double u = unif();
            if (u < d)
                t[k++] = (Trip){i, j, nz_value()};
            else if (u < d + 0.02)
                t[k++] = (Trip){i, j, 0.0};     /* explicit zero */
            if (u < d * 0.3)
                t[k++] = (Trip){i, j, nz_value()};  /* a duplicate */
        }
    if (rnd() % 2)
        shuffle(t, k, sizeof *t);
    *n = k;
    return t;
}

static void test_any_order(void)
{
    for (int round = 0; round < 60; round++) {
        int64_t rows = 1 + (int64_t)(rnd() % 40), cols = 1 + (int64_t)(rnd() % 40), n;
        double d = unif() * 0.5;
        Trip *t = random_triples(rows, cols, d, &n);
        double *want = scatter(t, n, rows, cols);
        DiagErr e;
        size_t len;

        char *buf = ijv_text("", t, n, &len);
        Matrix *r = io_parse_text(buf, len, "any.txt", rows, cols, &e);
        if (!CHECK(equals_dense(r, want, rows, cols)))
            fprintf(stderr, "  text round %d: %s\n", round, r ? "cells differ" : e.msg);
        mat_release(r);
        free(buf);

        char head[128];
        snprintf(head, sizeof head, "%%%%MatrixMarket matrix coordinate real general\n%% a comment\n%lld %lld %lld\n",
                 (long long)rows, (long long)cols, (long long)n);
        buf = ijv_text(head, t, n, &len);
        r = io_parse_mm(buf, len, "any.mtx", -1, -1, &e);
        if (!CHECK(equals_dense(r, want, rows, cols)))
            fprintf(stderr, "  mm round %d: %s\n", round, r ? "cells differ" : e.msg);
        mat_release(r);
        free(buf);
        free(want);
        free(t);
    }
}

/* Symmetric and skew-symmetric storage: one triangle in the file (in any
 * order), both in the matrix. */
static void test_symmetric(void)
{
    for (int round = 0; round < 40; round++) {
        int64_t n = 1 + (int64_t)(rnd() % 30), k = 0;
        bool skew = round % 2;
        Trip *t = malloc((size_t)(n * n) * sizeof *t);
        double *want = calloc((size_t)(n * n), sizeof *want);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j <= i; j++) {
                if ((skew && i == j) || unif() > 0.2)
                    continue;
                double v = nz_value();
                /* either triangle may be listed */
                Trip x = rnd() % 2 ? (Trip){i, j, v} : (Trip){j, i, v};
                t[k++] = x;
                want[x.i * n + x.j] = v;
                want[x.j * n + x.i] = skew ? -v : v;
            }
        shuffle(t, k, sizeof *t);
        char head[128];
        snprintf(head, sizeof head, "%%%%MatrixMarket matrix coordinate real %s\n%lld %lld %lld\n",
                 skew ? "skew-symmetric" : "symmetric", (long long)n, (long long)n, (long long)k);
        size_t len;
        char *buf = ijv_text(head, t, k, &len);
        DiagErr e;
        Matrix *r = io_parse_mm(buf, len, "sym.mtx", n, n, &e);
        if (!CHECK(equals_dense(r, want, n, n)))
            fprintf(stderr, "  %s round %d: %s\n", skew ? "skew" : "symmetric", round, r ? "cells differ" : e.msg);
        mat_release(r);
        free(buf);
        free(want);
        free(t);
    }
    /* pattern entries are ones */
    const char *p = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n3 1\n2 2\n";
    DiagErr e;
    Matrix *r = io_parse_mm(p, strlen(p), "p.mtx", -1, -1, &e);
    double want[9] = {0, 0, 1, 0, 1, 0, 1, 0, 0};
    CHECK(equals_dense(r, want, 3, 3));
    mat_release(r);
}

/* ---- libsvm ---- */

static void test_libsvm(void)
{
    DiagErr e;
    /* indices in any order within a line; blank lines are no rows; a line
     * of separators only is a row of zeros; explicit zeros dropped */
    const char *s = "1 3:1.5 1:2\n\n-1 2:0 4:7 2.5e0:1\n0\n,,,\n2 4:1,1:-3\n";
    Matrix *r = io_parse_libsvm(s, strlen(s), "u.svm", -1, -1, &e);
    CHECK(r == NULL);   /* "2.5e0" is no index */
    CHECK_STR(e.msg, "u.svm:3: expected 'index:value', found '2.5e0:1'");
    s = "1 3:1.5 1:2\n\n-1 2:0 4:7\n0\n,,,\n2 4:1,1:-3\n";
    r = io_parse_libsvm(s, strlen(s), "u.svm", -1, -1, &e);
    double want[] = {2, 0, 1.5, 0, 1,   0, 0, 0, 7, -1,   0, 0, 0, 0, 0,   0, 0, 0, 0, 0,   -3, 0, 0, 1, 2};
    if (!CHECK(equals_dense(r, want, 5, 5)))
        fprintf(stderr, "  libsvm: %s\n", r ? "cells differ" : e.msg);
    mat_release(r);
    /* the column count given: wider than the largest index */
    r = io_parse_libsvm(s, strlen(s), "u.svm", 5, 7, &e);
    CHECK(r && r->cols == 7 && cell(r, 0, 6) == 1 && cell(r, 0, 4) == 0 && cell(r, 4, 3) == 1);
    mat_release(r);

    const char *dup = "1 1:1 2:2\n1 3:1 1:2 3:5\n";
    r = io_parse_libsvm(dup, strlen(dup), "dup.svm", -1, -1, &e);
    CHECK(r == NULL);
    CHECK_STR(e.msg, "dup.svm:2: feature index 3 appears more than once");
    const char *far = "1 1:1\n\n1 9:1\n";
    r = io_parse_libsvm(far, strlen(far), "far.svm", -1, 5, &e);
    CHECK(r == NULL);
    CHECK_STR(e.msg, "far.svm:3: feature index 9 out of range 1..4");
    const char *lab = "1 1:1\nx 1:1\n";
    r = io_parse_libsvm(lab, strlen(lab), "lab.svm", -1, -1, &e);
    CHECK(r == NULL);
    CHECK_STR(e.msg, "lab.svm:2: label 'x' is not a number");
    const char *big = "1 3000000000:1\n";
    r = io_parse_libsvm(big, strlen(big), "big.svm", -1, -1, &e);
    CHECK(r == NULL);
    CHECK_STR(e.msg, "big.svm:1: feature index 3000000000 out of range 1..2147483646");
    r = io_parse_libsvm(lab, 6, "lab.svm", 2, -1, &e);
    CHECK(r == NULL);
    CHECK_STR(e.msg, "lab.svm: the file has 1 rows but 2 were declared");
    /* NaN and Inf labels and values are non-zeros */
    const char *nf = "NaN 2:Infinity\n-Infinity 1:NaN\n";
    r = io_parse_libsvm(nf, strlen(nf), "nf.svm", -1, -1, &e);
    double wnf[] = {0, INFINITY, NAN, NAN, 0, -INFINITY};
    CHECK(equals_dense(r, wnf, 2, 3));
    mat_release(r);
}

/* ---- malformed coordinate files ---- */

static void expect_error(Matrix *r, const DiagErr *e, const char *want)
{
    CHECK(r == NULL);
    if (r)
        mat_release(r);
    else
        CHECK_STR(e->msg, want);
}

static void test_malformed(void)
{
    DiagErr e;
    const char *t = "1 1 1\n% c\n2 1 x\n";
    expect_error(io_parse_text(t, strlen(t), "b.txt", 2, 2, &e), &e, "b.txt:3: 'x' is not a number");
    t = "1 1 1\n3 1 1\n";
    expect_error(io_parse_text(t, strlen(t), "b.txt", 2, 2, &e), &e, "b.txt:2: row index 3 out of range 1..2");
    t = "2 2 1\n1 0 1\n";
    expect_error(io_parse_text(t, strlen(t), "b.txt", 2, 2, &e), &e, "b.txt:2: column index 0 out of range 1..2");
    t = "1 1\n";
    expect_error(io_parse_text(t, strlen(t), "b.txt", 2, 2, &e), &e, "b.txt:1: expected 3 fields 'i j v', found 2");

    const char *m = "%%MatrixMarket matrix coordinate real general\n2 2 2\n2 2 1\n3 1 1\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e, "b.mtx:4: row index 3 out of range 1..2");
    m = "%%MatrixMarket matrix coordinate real general\n2 2 3\n2 2 1\n1 1 1\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e, "b.mtx: expected 3 entries, found 2");
    m = "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 2 1\n1 1 1\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e, "b.mtx:4: more entries than the 1 declared");
    m = "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e,
                 "b.mtx:2: a symmetric matrix must be square, not 2 x 3");
    m = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 y\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e, "b.mtx:3: 'y' is not a number");
    /* a header claiming 10^15 entries in a small file allocates by the file */
    m = "%%MatrixMarket matrix coordinate real general\n4 4 1000000000000000\n1 1 1\n";
    expect_error(io_parse_mm(m, strlen(m), "b.mtx", -1, -1, &e), &e, "b.mtx: expected 1000000000000000 entries, found 1");
}

/* ---- the sparse binary layout ---- */

/* A sparse binary file of the given arrays, as written by the writer but
 * with whatever contents the test wants. */
static char *spr_bytes(int64_t rows, int64_t cols, int64_t nnz, const int64_t *rp, const int32_t *ci,
                       const double *v, size_t *len)
{
    SpMat s = {rows, cols, nnz, nnz, (int64_t *)rp, (int32_t *)ci, (double *)v, NULL};
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    io_write_binary_csr(f, &s);
    fclose(f);
    return buf;
}

static void test_binary_corrupt(void)
{
    DiagErr e;
    size_t len;
    int64_t rp[] = {0, 2, 3};
    int32_t ci[] = {0, 2, 1};
    double v[] = {1, 2, 3};
    char *b = spr_bytes(2, 3, 3, rp, ci, v, &len);
    Matrix *r = io_parse_binary(b, len, "s.bin", -1, -1, &e);
    double want[] = {1, 0, 2, 0, 3, 0};
    CHECK(equals_dense(r, want, 2, 3));
    mat_release(r);
    expect_error(io_parse_binary(b, len - 1, "s.bin", -1, -1, &e), &e,
                 "s.bin: a sparse 2 x 3 matrix with 3 non-zeros needs 60 data bytes, the file has 59");
    expect_error(io_parse_binary(b, 20, "s.bin", -1, -1, &e), &e, "s.bin: truncated sparse header (20 of 32 bytes)");
    expect_error(io_parse_binary(b, len, "s.bin", 3, -1, &e), &e, "s.bin: the file has 2 rows but 3 were declared");
    free(b);

    int32_t unsorted[] = {2, 0, 1};
    b = spr_bytes(2, 3, 3, rp, unsorted, v, &len);
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e,
                 "s.bin: corrupt sparse matrix (column indices not ascending in a row)");
    free(b);
    int32_t outside[] = {0, 3, 1};
    b = spr_bytes(2, 3, 3, rp, ci, v, &len);
    free(b);
    b = spr_bytes(2, 3, 3, rp, outside, v, &len);
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e,
                 "s.bin: corrupt sparse matrix (column index out of range)");
    free(b);
    double zero[] = {1, 0, 3};
    b = spr_bytes(2, 3, 3, rp, ci, zero, &len);
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e, "s.bin: corrupt sparse matrix (a stored zero)");
    free(b);
    int64_t down[] = {0, 3, 2};
    b = spr_bytes(2, 3, 2, down, ci, v, &len);
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e, "s.bin: corrupt sparse matrix (rowptr decreases)");
    free(b);
    int64_t late[] = {1, 2, 3};
    b = spr_bytes(2, 3, 3, late, ci, v, &len);
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e, "s.bin: corrupt sparse matrix (rowptr[0] is not 0)");
    free(b);
    /* a header claiming 2^40 rows in a small file allocates nothing */
    b = spr_bytes(2, 3, 3, rp, ci, v, &len);
    b[8 + 5] = 1;   /* rows += 2^40 */
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e,
                 "s.bin: a sparse 1099511627778 x 3 matrix with 3 non-zeros needs 8796093022268 data bytes, "
                 "the file has 60");
    b[8 + 7] = (char)0x80;
    expect_error(io_parse_binary(b, len, "s.bin", -1, -1, &e), &e,
                 "s.bin: corrupt sparse header (dimensions or non-zeros out of range)");
    free(b);
}

/* ---- the form of the result, and writers on the sparse form ---- */

/* The matrix m (dense) held sparse, with the same values. */
static Matrix *as_sparse(const Matrix *m)
{
    return mat_new_sparse_take(sp_from_dense(m->data, m->rows, m->cols, -1));
}

static bool write_csv_plain(FILE *f, const Matrix *m)
{
    IoCsvWriteOpts o = {true, ";", false};
    return io_write_csv(f, m, &o);
}

static bool write_csv_sparse(FILE *f, const Matrix *m)
{
    IoCsvWriteOpts o = {false, ",", true};
    return io_write_csv(f, m, &o);
}

static void test_forms(void)
{
    DiagErr e;
    /* 10^10 cells, 3 entries: sparse (80 GB dense) */
    const char *mm = "%%MatrixMarket matrix coordinate real general\n100000 100000 4\n100000 1 2\n1 100000 -1\n"
                     "1 1 0.5\n7 7 0\n";
    Matrix *r = io_parse_mm(mm, strlen(mm), "big.mtx", -1, -1, &e);
    CHECK(r && r->sp && r->sp->nnz == 3 && sp_check(r->sp) == NULL);
    if (r && r->sp) {
        CHECK(mat_get(r, 99999, 0) == 2 && mat_get(r, 0, 99999) == -1 && mat_get(r, 0, 0) == 0.5);
        /* written in every sparse format and read back: sparse again, the
         * same CSR, and never densified on the way */
        Writer ws[] = {io_write_text, io_write_mm, io_write_libsvm, io_write_binary};
        for (int k = 0; k < 4; k++) {
            size_t len;
            char *buf = write_mem(ws[k], r, &len);
            Matrix *b = k == 0   ? io_parse_text(buf, len, "b", r->rows, r->cols, &e)
                        : k == 1 ? io_parse_mm(buf, len, "b", -1, -1, &e)
                        : k == 2 ? io_parse_libsvm(buf, len, "b", -1, r->cols, &e)
                                 : io_parse_binary(buf, len, "b", -1, -1, &e);
            CHECK(b && b->sp && b->sp->nnz == 3);
            CHECK(b && b->sp && memcmp(b->sp->rowptr, r->sp->rowptr, (size_t)(r->rows + 1) * 8) == 0 &&
                  memcmp(b->sp->colidx, r->sp->colidx, 12) == 0 && memcmp(b->sp->vals, r->sp->vals, 24) == 0);
            if (k == 3)     /* the binary writer wrote the sparse layout */
                CHECK(buf && len == 32 + 8 * 100001 + 36 && memcmp(buf, "DMLSPR1", 8) == 0);
            mat_release(b);
            free(buf);
        }
    }
    mat_release(r);

    /* the rule decides: a small or a full matrix is dense, a large sparse
     * one sparse (libsvm, text, csv through io_matrix_settle) */
    const char *small = "1 1:1 2:2\n0 3:1\n";
    r = io_parse_libsvm(small, strlen(small), "s.svm", -1, -1, &e);
    CHECK(r && !r->sp && r->rows == 2 && r->cols == 4);
    mat_release(r);
    Matrix *m = random_matrix(400, 300, 0.01);
    size_t len;
    char *buf = write_mem(io_write_libsvm, m, &len);
    r = io_parse_libsvm(buf, len, "m.svm", -1, 300, &e);
    CHECK(r && r->sp && equals_dense(r, m->data, 400, 300));
    mat_release(r);
    free(buf);
    buf = write_mem(write_csv_plain, m, &len);
    IoCsvOpts co;
    io_csv_opts_init(&co);
    co.header = true;
    co.sep = ";";
    r = io_parse_csv(buf, len, "m.csv", &co, &e);
    CHECK(r && !r->sp);     /* the parser reads dense ... */
    if (r) {
        r = io_matrix_settle(r);    /* ... and read() settles the form */
        CHECK(r->sp && equals_dense(r, m->data, 400, 300));
        mat_release(r);
    }
    free(buf);
    Matrix *full = random_matrix(200, 100, 0.9);
    Matrix *settled = io_matrix_settle(mat_clone_raw(full));
    CHECK(settled && !settled->sp);
    mat_release(settled);
    mat_release(full);

    /* every writer gives the same bytes for the sparse and the dense form
     * of one matrix (binary aside: it writes the form the matrix has) */
    Matrix *s = as_sparse(m);
    CHECK(s && s->sp);
    Writer ws[] = {io_write_text, io_write_mm, io_write_libsvm, write_csv_plain, write_csv_sparse};
    for (int k = 0; s && k < 5; k++) {
        size_t la, lb;
        char *a = write_mem(ws[k], m, &la), *b = write_mem(ws[k], s, &lb);
        CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
        free(a);
        free(b);
    }
    CHECK(io_nnz(s) == io_nnz(m));
    mat_release(s);
    mat_release(m);
}

int main(void)
{
    test_round_trips();
    test_any_order();
    test_symmetric();
    test_libsvm();
    test_malformed();
    test_binary_corrupt();
    test_forms();
    return CHECK_DONE();
}
