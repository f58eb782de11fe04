/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of the frame value: base/frame.c (allocation, names, slices,
 * clones that share strings, text parsing per column type, cell access) and
 * runtime/frame.c (scalar conversions into cells, as.matrix's conversion
 * and its error, toString, cbind/rbind and their errors, left indexing
 * copy-on-write, the parfor merge). Every expected value is worked out by
 * hand in the comment next to it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/io/io_formats.h"
#include "check.h"
#include "runtime/frame.h"
#include "runtime/interp.h"

static const char *tostr(const FrameBlock *f, int64_t rows, int64_t cols)
{
    static char out[1024];
    ToStringOpts o;
    tostring_defaults(&o);
    o.rows = rows;
    o.cols = cols;
    StrBuf b;
    sb_init(&b);
    frame_tostring_sb(&b, f, &o);
    snprintf(out, sizeof out, "%s", b.p ? b.p : "");
    sb_free(&b);
    return out;
}

static int32_t rc(const void *o)
{
    return atomic_load(&((const Obj *)o)->rc);
}

static void test_storage(void)
{
    FrameType t[4] = {FT_STRING, FT_DOUBLE, FT_INT, FT_BOOL};
    FrameBlock *f = frame_new_raw(3, 4, t);
    CHECK(f != NULL);
    CHECK_INT(f->rows, 3);
    CHECK_INT(f->cols, 4);
    /* Fresh cells: missing string, 0.0, 0, FALSE. */
    CHECK(f->col[0].s[2] == NULL);
    CHECK_DBL(f->col[1].d[2], 0.0);
    CHECK_INT(f->col[2].i[0], 0);
    CHECK_INT(f->col[3].b[1], 0);
    char buf[32];
    CHECK_STR(frame_col_name(f, 3, buf, sizeof buf), "C4");
    CHECK(frame_default_names(f));

    bool oom = false;
    CHECK(frame_put_text(f, 0, 0, "abc", 3, &oom));
    CHECK(frame_put_text(f, 0, 1, " 2.5 ", 5, &oom));       /* blanks around a number are fine */
    CHECK(frame_put_text(f, 1, 1, "-Infinity", 9, &oom));
    CHECK(frame_put_text(f, 0, 2, "42", 2, &oom));
    CHECK(frame_put_text(f, 1, 2, "7.0", 3, &oom));         /* an integral decimal is an INT64 */
    CHECK(frame_put_text(f, 2, 2, "-9007199254740993", 17, &oom));  /* beyond 2^53: every digit kept */
    CHECK(frame_put_text(f, 0, 3, "TRUE", 4, &oom));
    CHECK(frame_put_text(f, 1, 3, "t", 1, &oom));
    CHECK(!frame_put_text(f, 2, 1, "1,5", 3, &oom));        /* not a number: nothing stored */
    CHECK(!frame_put_text(f, 2, 2, "7.5", 3, &oom));        /* not an integer */
    CHECK(!frame_put_text(f, 2, 2, "0x10", 4, &oom));       /* hex is no DML number */
    CHECK(!frame_put_text(f, 2, 3, "yes", 3, &oom));
    CHECK(!frame_put_text(f, 2, 1, "", 0, &oom));           /* empty is no number */
    CHECK(!oom);
    CHECK_STR(f->col[0].s[0]->s, "abc");
    CHECK_DBL(f->col[1].d[0], 2.5);
    CHECK_DBL(f->col[1].d[1], -INFINITY);
    CHECK_DBL(f->col[1].d[2], 0.0);
    CHECK_INT(f->col[2].i[0], 42);
    CHECK_INT(f->col[2].i[1], 7);
    CHECK_INT(f->col[2].i[2], -9007199254740993LL);
    CHECK_INT(f->col[3].b[0], 1);
    CHECK_INT(f->col[3].b[1], 1);

    /* Cells as DML scalars; a missing string reads as "". */
    Value v = frame_get(f, 0, 0);
    CHECK(v.kind == VAL_STRING && strcmp(v.s->s, "abc") == 0);
    CHECK_INT(rc(v.s), 2);          /* shared with the cell, not copied */
    val_release(v);
    v = frame_get(f, 2, 0);
    CHECK(v.kind == VAL_STRING && v.s->len == 0);
    val_release(v);
    v = frame_get(f, 0, 2);
    CHECK(v.kind == VAL_INT && v.i == 42);
    v = frame_get(f, 1, 3);
    CHECK(v.kind == VAL_BOOL && v.b);

    /* Names: a stored name, the others default. */
    Str *age = str_from("age");
    CHECK(frame_set_name(f, 2, age));
    str_release(age);
    CHECK(!frame_default_names(f));
    CHECK_STR(frame_col_name(f, 2, buf, sizeof buf), "age");
    CHECK_STR(frame_col_name(f, 1, buf, sizeof buf), "C2");

    /* A slice shares the strings and keeps the names of its columns. */
    FrameBlock *s = frame_slice_raw(f, 0, 2, 0, 3);
    CHECK(s != NULL);
    CHECK_INT(s->rows, 2);
    CHECK_INT(s->cols, 3);
    CHECK(s->col[0].s[0] == f->col[0].s[0]);
    CHECK_INT(rc(f->col[0].s[0]), 2);
    CHECK_STR(frame_col_name(s, 2, buf, sizeof buf), "age");
    CHECK_INT(s->col[2].i[1], 7);
    FrameBlock *c = frame_clone_raw(f);
    CHECK(c != NULL && c->rows == 3 && c->cols == 4);
    CHECK_INT(rc(f->col[0].s[0]), 3);
    frame_release(s);
    frame_release(c);
    CHECK_INT(rc(f->col[0].s[0]), 1);

    /* A frame of no rows or no columns. */
    FrameBlock *e = frame_new_raw(0, 2, t);
    CHECK(e != NULL && e->col[0].s == NULL);
    frame_release(e);
    e = frame_new_raw(5, 0, NULL);
    CHECK(e != NULL && e->col == NULL);
    frame_release(e);
    CHECK(frame_new_raw(-1, 2, NULL) == NULL);
    frame_release(f);

    FrameType ft;
    bool narrow;
    CHECK(frame_type_parse("fp32", 4, &ft, &narrow) && ft == FT_DOUBLE && narrow);
    CHECK(frame_type_parse("INT32", 5, &ft, &narrow) && ft == FT_INT && narrow);
    CHECK(frame_type_parse("INT64", 5, &ft, &narrow) && ft == FT_INT && !narrow);
    CHECK(frame_type_parse("Boolean", 7, &ft, NULL) && ft == FT_BOOL);
    CHECK(!frame_type_parse("FP16", 4, &ft, NULL));
    CHECK_STR(frame_type_name(FT_INT), "INT64");

    /* FP32 / INT32 columns: stored wide, narrowed on the way in */
    FrameType two[2] = {FT_DOUBLE, FT_INT};
    bool nw[2] = {true, true};
    FrameBlock *g = frame_new_raw(1, 2, two);
    CHECK(g != NULL);
    frame_set_narrow(g, nw);
    CHECK_STR(frame_col_type_name(&g->col[0]), "FP32");
    CHECK_STR(frame_col_type_name(&g->col[1]), "INT32");
    oom = false;
    CHECK(frame_put_text(g, 0, 0, "0.1", 3, &oom) && g->col[0].d[0] == (double)0.1f);
    CHECK(frame_put_text(g, 0, 0, "1e300", 5, &oom) && isinf(g->col[0].d[0]));
    CHECK(frame_put_text(g, 0, 1, "2147483647", 10, &oom) && g->col[1].i[0] == 2147483647);
    CHECK(!frame_put_text(g, 0, 1, "2147483648", 10, &oom));
    FrameBlock *h = frame_clone_raw(g);
    CHECK(h != NULL && h->col[0].narrow && h->col[1].narrow);
    frame_release(h);
    frame_release(g);
}

static void test_values(Interp *I)
{
    FrameType t[4] = {FT_STRING, FT_DOUBLE, FT_INT, FT_BOOL};
    FrameBlock *f = frame_alloc(I, 2, 4, t);
    CHECK(f != NULL);
    /* Into STRING: Java's forms. */
    CHECK(frame_put_value(I, f, 0, 0, val_double(1)) == ST_OK);
    CHECK_STR(f->col[0].s[0]->s, "1.0");
    CHECK(frame_put_value(I, f, 1, 0, val_bool(true)) == ST_OK);
    CHECK_STR(f->col[0].s[1]->s, "true");
    /* Into FP64 / BOOLEAN: numbers convert, strings parse. */
    CHECK(frame_put_value(I, f, 0, 1, val_int(3)) == ST_OK);
    CHECK_DBL(f->col[1].d[0], 3.0);
    Str *s = str_from("x1");
    CHECK(frame_put_value(I, f, 1, 1, val_str_take(s)) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot store 'x1' in the frame cell at row 2, column 'C2' (FP64)");
    err_clear(I);
    CHECK(frame_put_value(I, f, 0, 3, val_double(0.5)) == ST_OK);
    CHECK_INT(f->col[3].b[0], 1);
    /* Into INT64: an integral double fits, a fraction does not. */
    CHECK(frame_put_value(I, f, 0, 2, val_double(-4)) == ST_OK);
    CHECK_INT(f->col[2].i[0], -4);
    CHECK(frame_put_value(I, f, 1, 2, val_double(2.5)) == ST_ERR);
    CHECK_STR(I->err.msg, "cannot store 2.5 in the frame cell at row 2, column 'C3' (INT64) (not an integer)");
    err_clear(I);
    str_release(s);

    /*  C1:"1.0","true"  C2:3.0,0.0  C3:-4,0  C4:TRUE,FALSE  */
    CHECK_STR(tostr(f, 100, 100),
              "# FRAME: nrow = 2, ncol = 4\n"
              "# C1 C2 C3 C4\n"
              "# STRING FP64 INT64 BOOLEAN\n"
              "1.0 3.000 -4 true\n"
              "true 0.000 0 false\n");
    /* Only the first rows x cols are shown; the header keeps the full size. */
    CHECK_STR(tostr(f, 1, 2), "# FRAME: nrow = 2, ncol = 4\n# C1 C2\n# STRING FP64\n1.0 3.000\n");

    /* as.matrix: STRING "true" is no number: the error names the cell. */
    Matrix *m = NULL;
    CHECK(frame_to_matrix(I, f, "as.matrix", &m) == ST_ERR);
    CHECK_STR(I->err.msg, "as.matrix(): the frame cell at row 2, column 'C1' (STRING) holds 'true', which is "
              "not a number");
    err_clear(I);
    Str *two = str_from("2");
    CHECK(frame_put_value(I, f, 1, 0, val_str_take(two)) == ST_OK);
    str_release(two);
    CHECK(frame_to_matrix(I, f, "as.matrix", &m) == ST_OK);
    /* row 1: 1.0 3.0 -4 1; row 2: 2 0 0 0 */
    CHECK_DBL(m->data[0], 1.0);
    CHECK_DBL(m->data[2], -4.0);
    CHECK_DBL(m->data[3], 1.0);
    CHECK_DBL(m->data[4], 2.0);
    CHECK_DBL(m->data[7], 0.0);

    /* as.frame(matrix) and back. */
    FrameBlock *g = frame_from_matrix(I, m);
    CHECK(g && g->col[3].type == FT_DOUBLE && g->col[2].d[0] == -4.0);
    mat_release(m);

    /* cbind names: defaults stay defaults; rbind checks the schema. */
    Value v[2] = {val_frame_take(f), val_frame_take(g)};
    Value r;
    CHECK(frame_bind(I, "cbind", v, 2, true, &r) == ST_OK);
    CHECK_INT(r.f->cols, 8);
    CHECK(r.f->col[4].type == FT_DOUBLE && r.f->col[0].type == FT_STRING);
    val_release(r);
    CHECK(frame_bind(I, "rbind", v, 2, false, &r) == ST_ERR);
    CHECK_STR(I->err.msg, "rbind(): the frames' schemas differ: column 1 ('C1') is STRING in input 1 but FP64 in "
              "input 2");
    err_clear(I);
    Value same[2] = {v[0], v[0]};
    CHECK(frame_bind(I, "rbind", same, 2, false, &r) == ST_OK);
    CHECK_INT(r.f->rows, 4);
    CHECK_INT(r.f->col[2].i[2], -4);
    val_release(r);

    /* Left indexing on a shared frame copies; the original is unchanged. */
    frame_release(g);
    val_retain(v[0]);
    FrameBlock *res;
    CHECK(frame_assign_take(I, f, 0, 1, 2, 3, val_int(9), NULL, &res) == ST_OK);
    CHECK(res != f);
    CHECK_INT(res->col[2].i[0], 9);
    CHECK_INT(f->col[2].i[0], -4);
    /* The parfor merge copies only the cells that changed. */
    FrameBlock *orig = frame_clone_raw(f);
    CHECK(frame_same_layout(orig, res));
    frame_merge_changed(f, orig, res);     /* f is unshared now */
    CHECK_INT(f->col[2].i[0], 9);
    frame_release(orig);
    frame_release(res);
    frame_release(f);
}

/* csv: quoting both ways, missing values, a string with every character
 * that needs quotes survives write + parse. */
static void test_csv(void)
{
    const char *text = "k,v\n\"a \"\"q\"\", b\",1\n,  2 \nNA,\n";
    FrameType t[2] = {FT_STRING, FT_INT};
    const char *na[1] = {"NA"};
    IoFrameCsvOpts o = {true, ",", true, na, 1, -1, -1, t, 2, NULL};
    DiagErr e = {0};
    FrameBlock *f = io_parse_frame_csv(text, strlen(text), "t.csv", &o, &e);
    CHECK(f != NULL);
    if (!f)
        return;
    char buf[32];
    CHECK_STR(frame_col_name(f, 1, buf, sizeof buf), "v");
    CHECK_INT(f->rows, 3);
    CHECK_STR(f->col[0].s[0]->s, "a \"q\", b");      /* quotes removed, "" made " */
    CHECK(f->col[0].s[1] == NULL);                  /* empty: missing */
    CHECK(f->col[0].s[2] == NULL);                  /* NA: missing */
    CHECK_INT(f->col[1].i[1], 2);                   /* blanks trimmed */
    CHECK_INT(f->col[1].i[2], 0);                   /* empty INT64: 0 */
    /* Write and read back: the same cells. */
    bool oom = false;
    CHECK(frame_put_text(f, 1, 0, " lead", 5, &oom));
    char *out = NULL;
    size_t outn = 0;
    FILE *m = open_memstream(&out, &outn);
    IoCsvWriteOpts w = {true, ",", false};
    CHECK(io_write_frame_csv(m, f, &w));
    fclose(m);
    CHECK_STR(out, "k,v\n\"a \"\"q\"\", b\",1\n\" lead\",2\n,0\n");
    IoFrameCsvOpts o2 = {true, ",", true, NULL, 0, -1, -1, t, 2, NULL};
    FrameBlock *g = io_parse_frame_csv(out, outn, "back.csv", &o2, &e);
    CHECK(g != NULL);
    if (g) {
        CHECK_STR(g->col[0].s[0]->s, f->col[0].s[0]->s);
        CHECK_STR(g->col[0].s[1]->s, " lead");
        CHECK(g->col[0].s[2] == NULL);
        frame_release(g);
    }
    free(out);
    /* A cell of the wrong type names the line and the field. */
    const char *bad = "1,x\n2,y\n";
    FrameType tb[2] = {FT_STRING, FT_BOOL};
    IoFrameCsvOpts o3 = {false, ",", true, NULL, 0, -1, -1, tb, 2, NULL};
    CHECK(io_parse_frame_csv(bad, strlen(bad), "b.csv", &o3, &e) == NULL);
    CHECK_STR(e.msg, "b.csv:1: field 2 ('x') is not BOOLEAN");
    frame_release(f);
}

int main(void)
{
    Interp I;
    interp_init(&I, NULL, 1);
    test_storage();
    test_values(&I);
    test_csv();
    interp_destroy(&I);
    return CHECK_DONE();
}
