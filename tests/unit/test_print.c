/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of runtime/fmt.c and runtime/tostring.c: Java's Double.toString (a table of outputs
 * Java gives), DecimalFormat-style fixed notation with HALF_EVEN rounding,
 * toString() of scalars, matrices and lists, and StrBuf. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "runtime/interp.h"
#include "runtime/fmt.h"
#include "runtime/tostring.h"
#include "base/value.h"

static void test_double_java(void)
{
    static const struct { double d; const char *java; } T[] = {
        {1.0, "1.0"},
        {0.1, "0.1"},
        {100.0, "100.0"},
        {1.0e7, "1.0E7"},
        {9999999.0, "9999999.0"},
        {0.001, "0.001"},
        {1.0e-4, "1.0E-4"},
        {1.2345e-5, "1.2345E-5"},
        {3.141592653589793, "3.141592653589793"},
        {1.7976931348623157e308, "1.7976931348623157E308"},
        {4.9e-324, "4.9E-324"},
        {2.5e-8, "2.5E-8"},
        {123456.789, "123456.789"},
        {-0.5, "-0.5"},
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0e10, "1.0E10"},
        {12345000.0, "1.2345E7"},
        {1234567.0, "1234567.0"},
        {10.0, "10.0"},
        {3.5, "3.5"},
        {0.5, "0.5"},
        {-1.0, "-1.0"},
        {1.0 / 3, "0.3333333333333333"},
        {2.0 / 3, "0.6666666666666666"},
        {2.718281828459045, "2.718281828459045"},
        {2.2250738585072014e-308, "2.2250738585072014E-308"},
        {9.223372036854776e18, "9.223372036854776E18"},
        {1.0e23, "1.0E23"},
        {0x1p-44, "5.684341886080802E-14"},
        {0x1p-1017, "7.120236347223045E-307"},      /* needs the power-of-two neighbour search */
        {0x1p-509, "5.966672584960166E-154"},
        {9.999999999999998e-4, "9.999999999999998E-4"},
        {0.0012, "0.0012"},
        {-12345.678, "-12345.678"},
        {1e-3 * 7, "0.007"},
        {255.0, "255.0"},
        {5e-4, "5.0E-4"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        int n = fmt_double_java(T[i].d, buf);
        check_report_(strcmp(buf, T[i].java) == 0 && n == (int)strlen(buf), __FILE__, __LINE__,
                      "Double.toString(%.17g) = %s, got %s", T[i].d, T[i].java, buf);
    }
    fmt_double_java(NAN, buf);
    CHECK_STR(buf, "NaN");
    fmt_double_java(INFINITY, buf);
    CHECK_STR(buf, "Infinity");
    fmt_double_java(-INFINITY, buf);
    CHECK_STR(buf, "-Infinity");
    /* The longest outputs fit the documented 32 bytes. */
    CHECK(fmt_double_java(-2.2250738585072014e-308, buf) < 32);
    CHECK(fmt_double_java(-0.0012345678901234567, buf) < 32);
}

/* Java's Float.toString (FP32 frame cells); expectations from a JDK 25
 * run (a 400,000-float comparison agreed too). */
static void test_float_java(void)
{
    static const struct { float f; const char *java; } T[] = {
        {0.1f, "0.1"}, {1.1f, "1.1"}, {1.0f, "1.0"}, {-2.5f, "-2.5"}, {0.0f, "0.0"}, {-0.0f, "-0.0"},
        {1.0e10f, "1.0E10"}, {1234567.0f, "1234567.0"}, {1.0e7f, "1.0E7"}, {16777216.0f, "1.6777216E7"},
        {0.001f, "0.001"}, {1.0e-4f, "1.0E-4"}, {3.4028235e38f, "3.4028235E38"}, {1.4e-45f, "1.4E-45"},
        {1.17549435e-38f, "1.1754944E-38"}, {0.33333334f, "0.33333334"}, {100.0f, "100.0"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        int n = fmt_float_java(T[i].f, buf);
        check_report_(strcmp(buf, T[i].java) == 0 && n == (int)strlen(buf), __FILE__, __LINE__,
                      "Float.toString(%.9g) = %s, got %s", (double)T[i].f, T[i].java, buf);
    }
    fmt_float_java(NAN, buf);
    CHECK_STR(buf, "NaN");
    fmt_float_java(-INFINITY, buf);
    CHECK_STR(buf, "-Infinity");
}

static const char *fixed(double d, int decimal)
{
    static char out[512];
    StrBuf b;
    sb_init(&b);
    fmt_fixed(&b, d, decimal);
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    sb_free(&b);
    return out;
}

static void test_fixed(void)
{
    CHECK_STR(fixed(1.0, 3), "1.000");
    CHECK_STR(fixed(0.125, 2), "0.12");     /* exact tie: to even */
    CHECK_STR(fixed(0.375, 2), "0.38");
    CHECK_STR(fixed(2.675, 2), "2.67");     /* binary value is below the tie */
    CHECK_STR(fixed(0.0005, 3), "0.001");   /* binary value is above the tie */
    CHECK_STR(fixed(2.5, 0), "2");
    CHECK_STR(fixed(3.5, 0), "4");
    CHECK_STR(fixed(123.456, 0), "123");
    CHECK_STR(fixed(-0.0, 3), "0.000");
    CHECK_STR(fixed(0.0, 0), "0");
    CHECK_STR(fixed(-0.0001, 3), "-0.000");
    CHECK_STR(fixed(1e-5, 3), "0.000");
    CHECK_STR(fixed(-1.5, 1), "-1.5");
    CHECK_STR(fixed(-1.25, 1), "-1.2");
    CHECK_STR(fixed(1234567.891, 3), "1234567.891");
    CHECK_STR(fixed(0.1, 20), "0.10000000000000000000");   /* shortest digits, padded */
    CHECK_STR(fixed(1e23, 3), "100000000000000000000000.000");
    CHECK_STR(fixed(0.001, 3), "0.001");
    CHECK_STR(fixed(0.0015, 3), "0.002");
    CHECK_STR(fixed(0.3333333333333333, 3), "0.333");
    CHECK_STR(fixed(0.9996, 3), "1.000");
    CHECK_STR(fixed(-999.9999, 2), "-1000.00");
    CHECK_STR(fixed(42, 1), "42.0");
    CHECK_STR(fixed(NAN, 3), "NaN");
    CHECK_STR(fixed(INFINITY, 3), "Infinity");
    CHECK_STR(fixed(-INFINITY, 3), "-Infinity");
}

static Value mat(int64_t r, int64_t c, const double *v)
{
    Matrix *m = mat_new_raw(r, c);
    if (v && r * c > 0)
        memcpy(m->data, v, (size_t)(r * c) * sizeof(double));
    return val_matrix_take(m);
}

/* toString(v) with options; returns a static copy. */
static const char *tostr(Interp *I, Value v, const ToStringOpts *o)
{
    static char out[1024];
    Str *s = NULL;
    if (tostring_value(I, v, o, &s) != ST_OK) {
        err_clear(I);
        return "(error)";
    }
    snprintf(out, sizeof out, "%s", s->s);
    str_release(s);
    return out;
}

static void test_tostring(Interp *I)
{
    ToStringOpts o;
    tostring_defaults(&o);
    CHECK(o.rows == 100 && o.cols == 100 && o.decimal == 3 && !o.sparse);
    CHECK_STR(o.sep, " ");
    CHECK_STR(o.linesep, "\n");

    Value m = mat(2, 2, (double[]){1, 2, 3, 4});
    CHECK_STR(tostr(I, m, &o), "1.000 2.000\n3.000 4.000\n");
    ToStringOpts p = o;
    p.rows = 1;
    CHECK_STR(tostr(I, m, &p), "1.000 2.000\n");
    p = o;
    p.cols = 1;
    CHECK_STR(tostr(I, m, &p), "1.000\n3.000\n");
    p = o;
    p.sep = ",";
    p.linesep = "|";
    p.decimal = 1;
    CHECK_STR(tostr(I, m, &p), "1.0,2.0|3.0,4.0|");

    Value z = mat(2, 3, (double[]){0, 2.5, -0.0, -3, 0, NAN});
    CHECK_STR(tostr(I, z, &o), "0.000 2.500 0.000\n-3.000 0.000 NaN\n");
    p = o;
    p.sparse = true;
    CHECK_STR(tostr(I, z, &p), "1 2 2.500\n2 1 -3.000\n2 3 NaN\n");
    Value inf = mat(1, 2, (double[]){INFINITY, -INFINITY});
    CHECK_STR(tostr(I, inf, &o), "Infinity -Infinity\n");
    Value empty = mat(0, 0, NULL);
    CHECK_STR(tostr(I, empty, &o), "");

    CHECK_STR(tostr(I, val_int(3), &o), "3");
    CHECK_STR(tostr(I, val_double(3), &o), "3.0");
    CHECK_STR(tostr(I, val_double(1e-4), &o), "1.0E-4");
    CHECK_STR(tostr(I, val_bool(true), &o), "TRUE");
    Value s = val_str_take(str_from("hello"));
    CHECK_STR(tostr(I, s, &o), "hello");

    List *l = list_new(0, false);
    list_push(l, val_int(1), NULL);
    list_push(l, m, NULL);
    list_push(l, s, NULL);
    CHECK_STR(tostr(I, val_list_take(l), &o),
              "List containing:\n[1, \nMatrix:\n1.000 2.000\n3.000 4.000\n, hello]");
    List *outer = list_new(0, true);
    list_push_take(outer, val_list_take(l), "inner");
    list_push_take(outer, val_double(2.5), "x");
    CHECK_STR(tostr(I, val_list_take(outer), &o),
              "List containing:\n[List containing:\n[1, \nMatrix:\n1.000 2.000\n3.000 4.000\n, hello], 2.5]");
    List *e = list_new(0, false);
    CHECK_STR(tostr(I, val_list_take(e), &o), "List containing:\n[]");

    list_release(outer);
    list_release(e);
    val_release(m);
    val_release(z);
    val_release(inf);
    val_release(empty);
    val_release(s);
}

static void test_strbuf(void)
{
    StrBuf b;
    sb_init(&b);
    sb_puts(&b, "ab");
    sb_putn(&b, "cdef", 2);
    sb_printf(&b, "-%d-", 42);
    CHECK_STR(b.p, "abcd-42-");
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sb_printf(&b, "%s!", big);     /* longer than sb_printf's stack buffer */
    CHECK_INT(b.len, 8 + 299 + 1);
    CHECK(b.p[b.len - 1] == '!' && b.p[b.len] == '\0');
    Str *s = sb_to_str(&b);
    CHECK(s && s->len == 308 && s->s[8] == 'x');
    CHECK(b.p == NULL && b.len == 0);
    str_release(s);
    s = sb_to_str(&b);      /* empty buffer -> empty string */
    CHECK(s && s->len == 0 && s->s[0] == '\0');
    str_release(s);
}

/* The REPL's display of a matrix (tostring_matrix_display_sb), as a static copy. */
static const char *shown(Value v, int64_t maxr, int64_t maxc)
{
    static char out[1024];
    StrBuf b;
    sb_init(&b);
    tostring_matrix_display_sb(&b, v.m, maxr, maxc);
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    sb_free(&b);
    val_release(v);
    return out;
}

static void test_display(void)
{
    static const double a[] = {1, 2, 3, 4, 5, 6};
    CHECK_STR(shown(mat(2, 3, a), 100, 100), "[2 x 3 matrix]\n1.000 2.000 3.000\n4.000 5.000 6.000\n");
    CHECK_STR(shown(mat(2, 3, a), 1, 100),
              "[2 x 3 matrix]\n1.000 2.000 3.000\n... showing 1 of 2 rows and 3 of 3 columns; X[2:2, ] shows more\n");
    CHECK_STR(shown(mat(2, 3, a), 100, 2),
              "[2 x 3 matrix]\n1.000 2.000\n4.000 5.000\n... showing 2 of 2 rows and 2 of 3 columns; "
              "X[, 3:3] shows more\n");
    /* A cell the 3-decimal form would print as 0.000: significant digits. */
    static const double tiny[] = {1e-5, 0.5, 0, -2.5e-7};
    CHECK_STR(shown(mat(2, 2, tiny), 100, 100), "[2 x 2 matrix]\n   1e-05      0.5\n       0 -2.5e-07\n");
    CHECK_STR(shown(mat(0, 3, NULL), 100, 100), "[0 x 3 matrix]\n");
}

int main(void)
{
    Interp I;
    interp_init(&I, NULL, 1);
    test_double_java();
    test_float_java();
    test_fixed();
    test_tostring(&I);
    test_strbuf();
    test_display();
    interp_destroy(&I);
    return CHECK_DONE();
}
