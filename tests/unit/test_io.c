/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/io/ and builtins/mtd.c: the number
 * parser against strtod, every format parsed from hand-written text and
 * round-tripped through its writer, the exact text of the malformed-input
 * errors (with line numbers), IDX plain and gzip'd, the .mtd JSON reader and
 * writer, and the atomic-write helpers (a failed write leaves no file).
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/io/io_formats.h"
#include "../../builtins/json.h"
#include "../../builtins/mtd.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int passed, failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond)                                                              \
            passed++;                                                          \
        else {                                                                 \
            failed++;                                                          \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
        }                                                                      \
    } while (0)

/* The error text must be exactly 'want'. */
#define CHECK_ERR(e, want)                                                     \
    do {                                                                       \
        if (strcmp((e).msg, (want)) == 0)                                      \
            passed++;                                                          \
        else {                                                                 \
            failed++;                                                          \
            printf("FAIL %s:%d: error\n   got: %s\n  want: %s\n", __FILE__,   \
                   __LINE__, (e).msg, (want));                                 \
        }                                                                      \
    } while (0)

static void drop(Matrix *m)
{
    if (m)
        mat_release(m);
}

static bool same_cell(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* m equals the row-major values v (NaN equals NaN). */
static bool mat_is(const Matrix *m, int64_t r, int64_t c, const double *v)
{
    if (!m || m->rows != r || m->cols != c)
        return false;
    for (int64_t k = 0; k < r * c; k++)
        if (!same_cell(m->data[k], v[k]))
            return false;
    return true;
}

static bool mat_eq(const Matrix *a, const Matrix *b)
{
    return a && b && mat_is(a, b->rows, b->cols, b->data);
}

static Matrix *mk(int64_t r, int64_t c, const double *v)
{
    Matrix *m = mat_new_raw(r, c);
    if (r * c > 0)
        memcpy(m->data, v, sizeof(double) * (size_t)(r * c));
    return m;
}

static Matrix *csv(const char *text, const IoCsvOpts *o, DiagErr *e)
{
    IoCsvOpts d;
    io_csv_opts_init(&d);
    return io_parse_csv(text, strlen(text), "data.csv", o ? o : &d, e);
}

/* ---- numbers ---- */

static void test_numbers(void)
{
    double d;
    const char *good[] = {"0", "-0", "1", "+2", "3.5", ".5", "5.", "1e3", "1E-3", "-2.5e+10", " 7 ", "Infinity",
                          "-Infinity", "NaN", "0.1", "123456789012345678901234567890", "1e400", "4.9e-324",
                          "2.2250738585072014E-308", "9007199254740993", "0.30000000000000004"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        const char *s = good[i];
        bool ok = io_parse_double(s, s + strlen(s), &d);
        double ref = strtod(s, NULL);
        CHECK(ok && same_cell(d, ref) && signbit(d) == signbit(ref));
    }
    /* Java's suffixes and hex with a p exponent (Double.parseDouble) */
    const char *java[][2] = {{"1d", "1"}, {"2.5f", "2.5"}, {"-3D", "-3"}, {"1e3F", "1e3"}, {"0x1p3", "8"},
                             {"0x1.8p1d", "3"}, {"+NaN", "NaN"}, {".5d", "0.5"}};
    for (size_t i = 0; i < sizeof java / sizeof *java; i++) {
        const char *s = java[i][0];
        bool ok = io_parse_double(s, s + strlen(s), &d);
        double ref = strtod(java[i][1], NULL);
        CHECK(ok && same_cell(d, ref));
    }
    const char *bad[] = {"", " ", "abc", "1x", "1e", "--1", "1.2.3", "e5", ".", "-", "1 2", "inf", "-inf", "nan",
                         "infinity", "0x10", "1dd", "1e5x", "NaNd"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(!io_parse_double(bad[i], bad[i] + strlen(bad[i]), &d));
    /* The fast path must agree with strtod bit for bit on random decimals. */
    uint64_t st = 88172645463325252ULL;
    int mismatches = 0;
    for (int k = 0; k < 200000; k++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        char buf[64];
        int digits = 1 + (int)(st % 19), point = (int)((st >> 8) % 21), ex = (int)((st >> 16) % 61) - 30;
        uint64_t mant = st >> 20;
        int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)(mant % 10000000000000000000ULL));
        if (n > digits)
            n = digits;
        buf[n] = 0;
        char num[96];
        if (point < n)
            snprintf(num, sizeof num, "%.*s.%se%d", point, buf, buf + point, ex);
        else
            snprintf(num, sizeof num, "%se%d", buf, ex);
        double ref = strtod(num, NULL);
        if (!io_parse_double(num, num + strlen(num), &d) || d != ref)
            mismatches++;
    }
    CHECK(mismatches == 0);
}

/* ---- CSV ---- */

/* test_csv: the csv fast path agrees with strtod on every kind of cell. */
static void test_csv_fast_path(void)
{
    DiagErr e;
    Matrix *m;
    const char *cells[] = {"0", "-0", "7", "255", "2.0", "-3.25", "5.", "0.1", "123456789012345",
                           "1234567890123456", "99999999999999999999", "0.000000000000001",
                           "1.7976931348623157E308", "-.5", "+4", "1e3", "12345678.9", "-0.0"};
    size_t nc = sizeof cells / sizeof *cells;
    char text[1024];
    size_t n = 0;
    for (size_t k = 0; k < nc; k++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", k ? "," : "", cells[k]);
    m = csv(text, NULL, &e);
    bool all = m && m->cols == (int64_t)nc;
    for (size_t k = 0; all && k < nc; k++) {
        double ref = strtod(cells[k], NULL);
        all = m->data[k] == ref && signbit(m->data[k]) == signbit(ref);
        if (!all)
            printf("  cell %s: %.17g vs %.17g\n", cells[k], m->data[k], ref);
    }
    CHECK(all);
    drop(m);
    m = csv("1,-,3\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:1: '-' is not a number");
    m = csv("1,.\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:1: '.' is not a number");
}

/* test_csv: Infinity/NaN, empty files, malformed input and dimensions
 * that do not match the declared ones. */
static void test_csv_edges(void)
{
    DiagErr e;
    IoCsvOpts o;
    Matrix *m;
    m = csv("Infinity,-Infinity,NaN\n", NULL, &e);
    CHECK(m && m->cols == 3 && isinf(m->data[0]) && m->data[1] < 0 && isnan(m->data[2]));
    drop(m);

    /* empty file -> 0 x 0; header only -> 0 x (fields of the header) */
    m = csv("", NULL, &e);
    CHECK(m && m->rows == 0 && m->cols == 0);
    drop(m);
    io_csv_opts_init(&o);
    o.header = true;
    m = csv("C1,C2\n", &o, &e);
    CHECK(m && m->rows == 0 && m->cols == 2);
    drop(m);

    /* malformed */
    m = csv("1,2,3,4\n5,6,7,8\n9,10,11\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:3: expected 4 fields, found 3");
    m = csv("1,2\n3,4,5\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:2: expected 2 fields, found 3");
    m = csv("1,2\nabc,4\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:2: 'abc' is not a number");
    m = csv("a,b\n1,2\n", NULL, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:1: 'a' is not a number (a header line? use header=TRUE)");
    io_csv_opts_init(&o);
    o.header = true;
    m = csv("a,b\n1,2\n1,x\n", &o, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:3: 'x' is not a number");
    /* declared dims must match */
    io_csv_opts_init(&o);
    o.rows = 3;
    m = csv("1,2\n3,4\n", &o, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv: the file has 2 rows but 3 were declared");
    io_csv_opts_init(&o);
    o.cols = 3;
    m = csv("1,2\n3,4\n", &o, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:1: expected 3 fields, found 2");
    /* a NUL-free buffer that is not NUL-terminated must not be over-read */
    char raw[3] = {'1', ',', '2'};
    io_csv_opts_init(&o);
    m = io_parse_csv(raw, sizeof raw, "raw", &o, &e);
    CHECK(mat_is(m, 1, 2, (double[]){1, 2}));
    drop(m);
}

static void test_csv(void)
{
    DiagErr e;
    IoCsvOpts o;
    Matrix *m = csv("1,2,3\n4,5,6\n", NULL, &e);
    CHECK(mat_is(m, 2, 3, (double[]){1, 2, 3, 4, 5, 6}));
    drop(m);

    /* CRLF, no final newline, blanks around fields, trailing blank lines */
    m = csv(" 1.5 ,-2\r\n3e2, 4 \r\n\r\n\n", NULL, &e);
    CHECK(mat_is(m, 2, 2, (double[]){1.5, -2, 300, 4}));
    drop(m);

    io_csv_opts_init(&o);
    o.header = true;
    o.sep = ";";
    m = csv("C1;C2\n1;2\n", &o, &e);
    CHECK(mat_is(m, 1, 2, (double[]){1, 2}));
    drop(m);

    /* multi-character separator */
    io_csv_opts_init(&o);
    o.sep = "::";
    m = csv("1::2\n3::4", &o, &e);
    CHECK(mat_is(m, 2, 2, (double[]){1, 2, 3, 4}));
    drop(m);

    /* fill with default */
    io_csv_opts_init(&o);
    o.fill_value = 7;
    m = csv("1,,3\n,5,\n", &o, &e);
    CHECK(mat_is(m, 2, 3, (double[]){1, 7, 3, 7, 5, 7}));
    drop(m);

    io_csv_opts_init(&o);
    o.fill = false;
    m = csv("1,2\n3,\n", &o, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv:2: field 2 is empty and fill is FALSE");

    /* NA strings and quoted fields (a quoted field may hold the separator) */
    io_csv_opts_init(&o);
    const char *na[] = {"NA", "?"};
    o.na = na;
    o.nna = 2;
    o.header = true;
    m = csv("\"a,b\",\"c\"\nNA,\"2.5\"\n?, 1\n", &o, &e);
    CHECK(mat_is(m, 2, 2, (double[]){NAN, 2.5, NAN, 1}));
    drop(m);

    /* a 1-column sparse csv writes zeros as empty lines: trailing ones are
     * rows only when the declared row count says so */
    m = csv("1\n\n2\n\n", NULL, &e);
    CHECK(mat_is(m, 3, 1, (double[]){1, 0, 2}));
    drop(m);
    io_csv_opts_init(&o);
    o.rows = 4;
    m = csv("1\n\n2\n\n", &o, &e);
    CHECK(mat_is(m, 4, 1, (double[]){1, 0, 2, 0}));
    drop(m);
    o.rows = 5;
    m = csv("1\n\n2\n\n", &o, &e);
    CHECK(!m);
    CHECK_ERR(e, "data.csv: the file has 3 rows but 5 were declared");

    test_csv_fast_path();
    test_csv_edges();
}

/* ---- text ---- */

static void test_text(void)
{
    DiagErr e;
    const char *t = "1 1 1.5\n% comment\n\n2 3 -4\n3 2 1e3\n";
    Matrix *m = io_parse_text(t, strlen(t), "m.txt", 3, 3, &e);
    CHECK(mat_is(m, 3, 3, (double[]){1.5, 0, 0, 0, 0, -4, 0, 1000, 0}));
    drop(m);
    t = "0 0 0\n";
    m = io_parse_text(t, strlen(t), "m.txt", 2, 2, &e);
    CHECK(mat_is(m, 2, 2, (double[]){0, 0, 0, 0}));
    drop(m);
    t = "1 1 1\n2 2 2\n3 3 3\n4 4 4\n5 5 5\n6 6 6\n12 1 7\n";
    m = io_parse_text(t, strlen(t), "m.txt", 10, 10, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:7: row index 12 out of range 1..10");
    t = "1 11 7\n";
    m = io_parse_text(t, strlen(t), "m.txt", 10, 10, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:1: column index 11 out of range 1..10");
    t = "1 1 x\n";
    m = io_parse_text(t, strlen(t), "m.txt", 2, 2, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:1: 'x' is not a number");
    t = "1 1\n";
    m = io_parse_text(t, strlen(t), "m.txt", 2, 2, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:1: expected 3 fields 'i j v', found 2");
    t = "1,2,3\n";
    m = io_parse_text(t, strlen(t), "m.txt", 2, 2, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:1: expected 3 fields 'i j v', found 1 (a csv file? use format=\"csv\")");
    t = "a 1 1\n";
    m = io_parse_text(t, strlen(t), "m.txt", 2, 2, &e);
    CHECK(!m);
    CHECK_ERR(e, "m.txt:1: row index 'a' is not an integer");
}

/* ---- MatrixMarket ---- */

static void test_mm(void)
{
    DiagErr e;
    const char *t = "%%MatrixMarket matrix coordinate real general\n% c\n2 3 2\n1 2 5\n2 3 -1.5\n";
    Matrix *m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 2, 3, (double[]){0, 5, 0, 0, 0, -1.5}));
    drop(m);
    t = "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 3 9\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 3, 3, (double[]){0, 4, 0, 4, 0, 0, 0, 0, 9}));
    drop(m);
    t = "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n2 2\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 2, 2, (double[]){1, 0, 0, 1}));
    drop(m);
    t = "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 2, 2, (double[]){0, -3, 3, 0}));
    drop(m);
    t = "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n";   /* column-major */
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 2, 2, (double[]){1, 3, 2, 4}));
    drop(m);
    t = "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(mat_is(m, 2, 2, (double[]){1, 2, 2, 3}));
    drop(m);
    /* errors */
    t = "2 2 1\n1 1 1\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx:1: missing '%%MatrixMarket' header");
    t = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx: expected 2 entries, found 1");
    t = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx:4: more entries than the 1 declared");
    t = "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx:3: row index 3 out of range 1..2");
    t = "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx:1: unsupported MatrixMarket field 'complex'");
    t = "%%MatrixMarket matrix coordinate real general\n2 2 0\n";
    m = io_parse_mm(t, strlen(t), "x.mtx", 3, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "x.mtx: the file has 2 rows but 3 were declared");
}

/* ---- binary, libsvm, scalars ---- */

static void test_binary_libsvm_scalar(void)
{
    DiagErr e;
    char bad[30] = "DMLBIN1";
    Matrix *m = io_parse_binary(bad, 30, "b.bin", -1, -1, &e);   /* 0 x 0 header, 6 stray bytes */
    CHECK(!m);
    CHECK_ERR(e, "b.bin: a 0 x 0 matrix needs 0 data bytes, the file has 6");
    m = io_parse_binary("hello", 5, "b.bin", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "b.bin: not a dml binary matrix file (missing the DMLBIN1 header)");

    const char *t = "1 1:0.5 3:2\n-1 2:1\n";
    m = io_parse_libsvm(t, strlen(t), "s.svm", -1, -1, &e);
    CHECK(mat_is(m, 2, 4, (double[]){0.5, 0, 2, 1, 0, 1, 0, -1}));
    drop(m);
    t = "1 1:0.5 x\n";
    m = io_parse_libsvm(t, strlen(t), "s.svm", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "s.svm:1: expected 'index:value', found 'x'");

    Value v;
    CHECK(io_parse_scalar("42\n", 3, "s", "int", &v, &e) && v.kind == VAL_INT && v.i == 42);
    CHECK(io_parse_scalar("2.5", 3, "s", "double", &v, &e) && v.kind == VAL_DOUBLE && v.d == 2.5);
    CHECK(io_parse_scalar("TRUE", 4, "s", "boolean", &v, &e) && v.kind == VAL_BOOL && v.b);
    CHECK(io_parse_scalar("hi there\n", 9, "s", "string", &v, &e) && v.kind == VAL_STRING &&
          strcmp(v.s->s, "hi there") == 0);
    val_release(v);
    CHECK(!io_parse_scalar("4x", 2, "s", "int", &v, &e));
    CHECK_ERR(e, "s: '4x' is not an integer");
    CHECK(!io_parse_scalar("", 0, "s", "double", &v, &e));
    CHECK_ERR(e, "s: the file is empty, expected a double");
}

/* ---- round trips through every writer ---- */

typedef bool (*Writer)(FILE *, const Matrix *);

static Matrix *written_and_read(const Matrix *src, const char *fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    bool ok;
    IoCsvWriteOpts wo = {false, ",", false};
    if (!strcmp(fmt, "text"))
        ok = io_write_text(f, src);
    else if (!strcmp(fmt, "csv"))
        ok = io_write_csv(f, src, &wo);
    else if (!strcmp(fmt, "csvh")) {
        wo.header = true;
        wo.sep = "\t";
        wo.sparse = true;
        ok = io_write_csv(f, src, &wo);
    } else if (!strcmp(fmt, "mm"))
        ok = io_write_mm(f, src);
    else if (!strcmp(fmt, "libsvm"))
        ok = io_write_libsvm(f, src);
    else
        ok = io_write_binary(f, src);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    DiagErr e;
    IoCsvOpts o;
    io_csv_opts_init(&o);
    Matrix *m;
    if (!strcmp(fmt, "text"))
        m = io_parse_text(buf, len, fmt, src->rows, src->cols, &e);
    else if (!strcmp(fmt, "csv"))
        m = io_parse_csv(buf, len, fmt, &o, &e);
    else if (!strcmp(fmt, "csvh")) {
        o.header = true;
        o.sep = "\t";
        o.cols = src->cols;
        m = io_parse_csv(buf, len, fmt, &o, &e);
    } else if (!strcmp(fmt, "mm"))
        m = io_parse_mm(buf, len, fmt, -1, -1, &e);
    else if (!strcmp(fmt, "libsvm"))
        m = io_parse_libsvm(buf, len, fmt, -1, src->cols, &e);
    else
        m = io_parse_binary(buf, len, fmt, -1, -1, &e);
    if (!m)
        printf("  (%s: %s)\n", fmt, e.msg);
    free(buf);
    return m;
}

static void test_round_trips(void)
{
    const double vals[] = {0.1, -2, 0, 1e-300, 1e300, NAN, INFINITY, -INFINITY, 3.0, 0.30000000000000004,
                           12345678.9, 0, 0, 5e-324, -0.5, 1e7};
    Matrix *a = mk(4, 4, vals);
    Matrix *z = mat_new_zero_raw(3, 2);
    Matrix *empty = mat_new_raw(0, 3);
    const char *fmts[] = {"text", "csv", "csvh", "mm", "libsvm", "binary"};
    for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++) {
        Matrix *b = written_and_read(a, fmts[k]);
        CHECK(mat_eq(b, a));
        drop(b);
        b = written_and_read(z, fmts[k]);
        CHECK(mat_eq(b, z));
        drop(b);
        if (strcmp(fmts[k], "libsvm") && strcmp(fmts[k], "csv")) {   /* no shape without a header */
            b = written_and_read(empty, fmts[k]);
            CHECK(mat_eq(b, empty));
            drop(b);
        }
    }
    /* exact text of the writers */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Matrix *s = mk(2, 2, (double[]){1, 0, 0, 2.5});
    io_write_text(f, s);
    fflush(f);
    CHECK(strcmp(buf, "1 1 1.0\n2 2 2.5\n") == 0);
    fclose(f);
    free(buf);
    f = open_memstream(&buf, &len);
    IoCsvWriteOpts wo = {true, ",", false};
    io_write_csv(f, s, &wo);
    fflush(f);
    CHECK(strcmp(buf, "C1,C2\n1.0,0\n0,2.5\n") == 0);
    fclose(f);
    free(buf);
    f = open_memstream(&buf, &len);
    io_write_mm(f, s);
    fflush(f);
    CHECK(strcmp(buf, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 2 2.5\n") == 0);
    fclose(f);
    free(buf);
    f = open_memstream(&buf, &len);
    io_write_text(f, z);
    fflush(f);
    CHECK(strcmp(buf, "0 0 0\n") == 0);
    fclose(f);
    free(buf);
    drop(s);
    drop(a);
    drop(z);
    drop(empty);
}

/* ---- IDX, plain and gzip'd ---- */

static bool write_bytes(const char *path, const unsigned char *b, size_t n, bool gz)
{
    if (gz) {
        gzFile g = gzopen(path, "wb");
        if (!g)
            return false;
        bool ok = gzwrite(g, b, (unsigned)n) == (int)n;
        return gzclose(g) == Z_OK && ok;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static void test_idx(const char *dir)
{
    /* 3 images of 2x2 and their labels */
    unsigned char img[16 + 12] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
    for (int k = 0; k < 12; k++)
        img[16 + k] = (unsigned char)(k * 20 + 15);
    unsigned char lab[8 + 3] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 255};
    double want_img[12], want_lab[3] = {7, 0, 255};
    for (int k = 0; k < 12; k++)
        want_img[k] = k * 20 + 15;
    char p[512];
    DiagErr e;
    IoBuf b;
    for (int gz = 0; gz < 2; gz++) {
        snprintf(p, sizeof p, "%s/train-images-idx3-ubyte%s", dir, gz ? ".gz" : "");
        CHECK(write_bytes(p, img, sizeof img, gz));
        CHECK(io_name_is_idx(p));
        CHECK(io_read_file(p, &b, &e));
        Matrix *m = io_parse_idx(b.p, b.len, p, -1, -1, &e);
        CHECK(mat_is(m, 3, 4, want_img));
        drop(m);
        io_buf_free(&b);
        snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte%s", dir, gz ? ".gz" : "");
        CHECK(write_bytes(p, lab, sizeof lab, gz));
        CHECK(io_read_file(p, &b, &e));
        m = io_parse_idx(b.p, b.len, p, 3, 1, &e);
        CHECK(mat_is(m, 3, 1, want_lab));
        drop(m);
        io_buf_free(&b);
    }
    CHECK(!io_name_is_idx("data.csv"));
    CHECK(io_name_is_idx("t10k-labels.idx1-ubyte"));
    CHECK(io_name_is_idx("x.idx.gz"));
    Matrix *m = io_parse_idx((const char *)img, sizeof img - 1, "i", -1, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "i: expected 12 bytes of IDX data, found 11");
    m = io_parse_idx((const char *)img, sizeof img, "i", 4, -1, &e);
    CHECK(!m);
    CHECK_ERR(e, "i: the file has 3 rows but 4 were declared");
    /* a corrupt gzip stream */
    snprintf(p, sizeof p, "%s/bad.gz", dir);
    unsigned char junk[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3};
    CHECK(write_bytes(p, junk, sizeof junk, false));
    CHECK(!io_read_file(p, &b, &e));
    CHECK(strncmp(e.msg, p, strlen(p)) == 0);
    unlink(p);
}

/* ---- files, sizes ---- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

static void test_files(const char *dir)
{
    DiagErr e;
    IoBuf b;
    char p[512], want[600];
    snprintf(p, sizeof p, "%s/nope.csv", dir);
    CHECK(!io_read_file(p, &b, &e));
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory", p);
    CHECK_ERR(e, want);

    CHECK(!io_check_dims(INT64_MAX / 2, 4, "big", &e));
    CHECK_ERR(e, "big: a 4611686018427387903 x 4 matrix is too large");
    CHECK(!io_check_dims(1000000, 1000000000, "huge", &e));
    CHECK(strncmp(e.msg, "huge: a 1000000 x 1000000000 matrix needs 8000000000000000 bytes", 64) == 0);
    CHECK(!io_check_dims(-1, 2, "neg", &e));

    /* a successful atomic write leaves exactly the target */
    char sub[256];
    snprintf(sub, sizeof sub, "%s/w", dir);
    mkdir(sub, 0777);
    snprintf(p, sizeof p, "%s/out.csv", sub);
    IoTmp t;
    CHECK(io_tmp_open(p, &t, &e));
    fputs("1,2\n", t.f);
    CHECK(io_tmp_commit(&t, p, &e));
    CHECK(count_entries(sub) == 1);
    CHECK(io_read_file(p, &b, &e) && strcmp(b.p, "1,2\n") == 0);
    io_buf_free(&b);
    /* an aborted write leaves the old file alone and no temporary */
    CHECK(io_tmp_open(p, &t, &e));
    fputs("garbage", t.f);
    io_tmp_abort(&t);
    CHECK(count_entries(sub) == 1);
    CHECK(io_read_file(p, &b, &e) && strcmp(b.p, "1,2\n") == 0);
    io_buf_free(&b);
    unlink(p);
    /* a directory that does not exist */
    snprintf(p, sizeof p, "%s/no/such/dir/x.csv", dir);
    CHECK(!io_tmp_open(p, &t, &e));
    snprintf(want, sizeof want, "cannot write '%s': No such file or directory", p);
    CHECK_ERR(e, want);
    /* the rename fails (the target is a directory): the temporary is removed */
    snprintf(p, sizeof p, "%s/isdir", sub);
    mkdir(p, 0777);
    CHECK(io_tmp_open(p, &t, &e));
    fputs("x", t.f);
    CHECK(!io_tmp_commit(&t, p, &e));
    CHECK(count_entries(sub) == 1);
    rmdir(p);
    /* a read-only directory (root ignores permissions, so only as non-root) */
    if (geteuid() != 0) {
        chmod(sub, 0555);
        snprintf(p, sizeof p, "%s/ro.csv", sub);
        CHECK(!io_tmp_open(p, &t, &e));
        snprintf(want, sizeof want, "cannot write '%s': Permission denied", p);
        CHECK_ERR(e, want);
        chmod(sub, 0755);
        CHECK(count_entries(sub) == 0);
    }
    /* binary straight from the file, plain, truncated and gzip'd */
    {
        Matrix *a = mk(2, 3, (double[]){1, -2, 0, NAN, 1e300, 0.1});
        snprintf(p, sizeof p, "%s/m.bin", sub);
        FILE *f = fopen(p, "wb");
        CHECK(f && io_write_binary(f, a));
        fclose(f);
        Matrix *b2 = io_read_binary_file(p, 2, -1, &e);
        CHECK(mat_eq(b2, a));
        drop(b2);
        b2 = io_read_binary_file(p, 3, -1, &e);
        CHECK(!b2);
        snprintf(want, sizeof want, "%s: the file has 2 rows but 3 were declared", p);
        CHECK_ERR(e, want);
        CHECK(truncate(p, 24 + 8 * 5) == 0);
        b2 = io_read_binary_file(p, -1, -1, &e);
        CHECK(!b2);
        snprintf(want, sizeof want, "%s: a 2 x 3 matrix needs 48 data bytes, the file has 40", p);
        CHECK_ERR(e, want);
        char *mem = NULL;
        size_t len = 0;
        f = open_memstream(&mem, &len);
        io_write_binary(f, a);
        fclose(f);
        snprintf(p, sizeof p, "%s/m.bin.gz", sub);
        CHECK(write_bytes(p, (unsigned char *)mem, len, true));
        free(mem);
        b2 = io_read_binary_file(p, -1, -1, &e);
        CHECK(mat_eq(b2, a));
        drop(b2);
        snprintf(p, sizeof p, "%s/nope.bin", sub);
        CHECK(!io_read_binary_file(p, -1, -1, &e));
        snprintf(want, sizeof want, "cannot open '%s': No such file or directory", p);
        CHECK_ERR(e, want);
        drop(a);
        snprintf(p, sizeof p, "%s/m.bin", sub);
        unlink(p);
        snprintf(p, sizeof p, "%s/m.bin.gz", sub);
        unlink(p);
    }
    rmdir(sub);
    /* a directory is not a data file */
    CHECK(!io_read_file(dir, &b, &e));
}

/* ---- .mtd ---- */

static void test_mtd(void)
{
    DiagErr e;
    Mtd m;
    mtd_init(&m);
    const char *t = "{\n    \"data_type\": \"matrix\",\n    \"value_type\": \"double\",\n    \"rows\": 10,\n"
                    "    \"cols\": \"3\",\n    \"nnz\": 30,\n    \"format\": \"csv\",\n    \"header\": true,\n"
                    "    \"sep\": \"\\t\",\n    \"description\": \"caf\\u00e9 \\\"x\\\"\",\n"
                    "    \"extra\": {\"a\": [1, 2, {\"b\": null}]},\n    \"author\": \"me\"\n}\n";
    CHECK(mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK(m.rows == 10 && m.cols == 3 && m.nnz == 30 && m.header == 1);
    CHECK(m.format && !strcmp(m.format, "csv") && m.sep && !strcmp(m.sep, "\t"));
    CHECK(m.description && !strcmp(m.description, "caf\xc3\xa9 \"x\""));
    CHECK(m.rows_in_block == -1 && m.created == NULL);

    /* written, then read back */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    free(m.created);
    m.created = strdup("2024-01-02 03:04:05 UTC");
    CHECK(mtd_write(f, &m));
    fclose(f);
    CHECK(strcmp(buf, "{\n    \"data_type\": \"matrix\",\n    \"value_type\": \"double\",\n    \"rows\": 10,\n"
                      "    \"cols\": 3,\n    \"nnz\": 30,\n    \"format\": \"csv\",\n"
                      "    \"description\": \"caf\xc3\xa9 \\\"x\\\"\",\n    \"author\": \"me\",\n"
                      "    \"header\": true,\n    \"sep\": \"\\t\",\n"
                      "    \"created\": \"2024-01-02 03:04:05 UTC\"\n}\n") == 0);
    Mtd m2;
    mtd_init(&m2);
    CHECK(mtd_parse(buf, len, "y.mtd", &m2, &e));
    CHECK(m2.rows == 10 && m2.header == 1 && !strcmp(m2.description, m.description));
    mtd_free(&m2);
    free(buf);
    mtd_free(&m);

    CHECK(mtd_stamp(&m) && m.author && m.created && strlen(m.created) >= 20);
    mtd_free(&m);

    /* errors name the line */
    t = "{\n  \"rows\": 10\n  \"cols\": 3\n}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:3: expected ',' or '}'");
    t = "{\n  \"rows\": -1\n}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:2: 'rows' must be a non-negative integer");
    t = "{\"rows\" 1}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: expected ':' after the key");
    t = "";
    CHECK(!mtd_parse(t, 0, "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: empty metadata file, expected a JSON object");
    t = "{\"format\": 3}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: 'format' must be a string");
    t = "{\"a\": \"unterminated}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: unterminated string");
    /* upstream's lenient reader: text after the object is ignored, trailing
     * commas and comments are fine, description may be an object */
    t = "{} x";
    CHECK(mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    mtd_free(&m);
    t = "{\n \"rows\": 3, // three\n /* c */ \"description\": {\"title\": \"t\", \"v\": [1, 2,],},\n"
        " \"cols\": 2,\n}";
    CHECK(mtd_parse(t, strlen(t), "x.mtd", &m, &e) && m.rows == 3 && m.cols == 2 && !m.description);
    mtd_free(&m);
    /* COMPAT.md 8: keys and strings in single quotes or bare, as JSON4J */
    t = "{data_type: matrix, 'value_type': 'double', rows: 2, \"cols\": '3', format: csv, header: true,\n"
        " sep: ';', description: null}";
    CHECK(mtd_parse(t, strlen(t), "x.mtd", &m, &e) && m.rows == 2 && m.cols == 3 && m.format &&
          !strcmp(m.format, "csv") && m.header == 1 && m.sep && !strcmp(m.sep, ";") && m.data_type &&
          !strcmp(m.data_type, "matrix") && m.value_type && !strcmp(m.value_type, "double"));
    mtd_free(&m);
    t = "{rows: 'unterminated}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: unterminated string");
    t = "{: 1}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: expected a key");
    /* nesting is capped, not a stack overflow */
    char deep[4096];
    int n = snprintf(deep, sizeof deep, "{\"a\": ");
    for (int k = 0; k < 1000; k++)
        deep[n++] = '[';
    deep[n] = 0;
    CHECK(!mtd_parse(deep, (size_t)n, "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: nested too deeply");
    mtd_free(&m);
}

/* ---- the one JSON reader (builtins/json.c): .mtd files and transform
 * specs take the same leniencies ---- */
static void test_json(void)
{
    Js v;
    const char *why = NULL;
    int64_t off = -1;
    /* a surrogate pair makes one code point; an unknown escape is the character */
    CHECK(js_parse("[\"\\ud83d\\ude00\", '\\q\\'', bare, 1.5, -2, true, null,]", &v, &why, &off));
    CHECK(v.k == JS_ARR && v.n == 7);
    CHECK(v.item[0].k == JS_STR && !strcmp(v.item[0].s, "\xF0\x9F\x98\x80"));
    CHECK(v.item[1].k == JS_STR && !strcmp(v.item[1].s, "q'"));
    CHECK(v.item[2].k == JS_STR && !strcmp(v.item[2].s, "bare"));
    CHECK(v.item[3].k == JS_NUM && v.item[3].num == 1.5 && v.item[4].k == JS_NUM && v.item[4].num == -2);
    CHECK(v.item[5].k == JS_BOOL && v.item[5].b && v.item[6].k == JS_NULL);
    js_free(&v);
    /* each item's offset: just after its ':' */
    CHECK(js_parse("{a: 1,\n 'b' : [2]}", &v, &why, &off));
    CHECK(v.k == JS_OBJ && v.n == 2 && v.item[0].at == 3 && v.item[1].at == 13);
    CHECK(js_get(&v, "b") && js_get(&v, "b")->k == JS_ARR && !js_get(&v, "c"));
    js_free(&v);
    /* the first value only, or the whole text */
    CHECK(!js_parse("{} x", &v, &why, &off) && !strcmp(why, "text after the end") && off == 3);
    CHECK(js_parse_n("{} x", 4, JS_FIRST_VALUE, &v, &why, &off) && v.k == JS_OBJ);
    js_free(&v);
    /* failures: a phrase and the offset where reading stopped */
    CHECK(!js_parse("[1 2]", &v, &why, &off) && !strcmp(why, "expected ',' or ']'") && off == 3);
    CHECK(!js_parse("{a: 1", &v, &why, &off) && !strcmp(why, "unexpected end of file, expected '}'") && off == 5);
    CHECK(!js_parse("\"\\ud800x\"", &v, &why, &off) && !strcmp(why, "unpaired surrogate in \\u escape"));
    CHECK(!js_parse("\"\\u0000\"", &v, &why, &off) && !strcmp(why, "\\u0000 is not allowed in a string"));
    CHECK(!js_parse_n("\"a\0b\"", 5, 0, &v, &why, &off) && !strcmp(why, "NUL byte in string"));
    CHECK(!js_parse("/* open", &v, &why, &off) && !strcmp(why, "unexpected end of file"));
    /* a .mtd takes the same: an unknown escape, a surrogate pair */
    Mtd m;
    DiagErr e = {0};
    mtd_init(&m);
    const char *t = "{description: 'a\\qb', author: \"\\ud83d\\ude00\"}";
    CHECK(mtd_parse(t, strlen(t), "x.mtd", &m, &e) && m.description && !strcmp(m.description, "aqb") &&
          m.author && !strcmp(m.author, "\xF0\x9F\x98\x80"));
    mtd_free(&m);
    /* a number that is no finite double is refused where one is needed */
    t = "{\"default\": 1e999}";
    CHECK(!mtd_parse(t, strlen(t), "x.mtd", &m, &e));
    CHECK_ERR(e, "x.mtd:1: 'default' must be a number");
}

int main(void)
{
    char dir[] = "/tmp/dml_test_io.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_numbers();
    test_csv();
    test_text();
    test_mm();
    test_binary_libsvm_scalar();
    test_round_trips();
    test_idx(dir);
    test_files(dir);
    test_mtd();
    test_json();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
