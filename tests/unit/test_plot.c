/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of plot() (builtins/plot*.c): round tick values, then the
 * pictures themselves, checked the way a person looks at them: read back
 * with cairo, the right size, not blank, each curve where it should be (a
 * rising line low on the left and high on the right), distinct colours, a
 * gap where the data has NaN; SVG and PDF by their signatures; errors that
 * leave no file behind; the braille chart's shape. */
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtins/plot.h"
#include "builtins/registry.h"
#include "check.h"
#include "runtime/interp.h"
#include "base/value.h"

/* ---- helpers ---- */

enum { P_X, P_FILE, P_XV, P_XCOL, P_TITLE, P_XLAB, P_YLAB, P_NAMES, P_WIDTH, P_HEIGHT, NP };

static char tmpdir[] = "/tmp/dml_test_plot.XXXXXX";

static const char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static Value str(const char *s) { return val_str_take(str_from(s)); }

/* n x k matrix whose column c holds f(i, c) for row i = 0..n-1. */
static Value mat_fn(int64_t n, int64_t k, double (*f)(int64_t, int64_t))
{
    Matrix *m = mat_new_raw(n, k);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < k; c++)
            m->data[i * k + c] = f(i, c);
    return val_matrix_take(m);
}

/* Calls plot() with args[0..NP) (released afterwards). */
static Status call_plot(Interp *I, Value *args)
{
    const BuiltinDef *d = builtin_find("plot");
    Value res[2] = {val_none(), val_none()};
    BArgs a = {.def = d, .v = args, .names = NULL, .n = NP, .loc = NULL, .nout = 1};
    Status st = d->fn(I, &a, res);
    for (int i = 0; i < NP; i++)
        val_release(args[i]);
    val_release(res[0]);
    return st;
}

static void no_args(Value *args)
{
    for (int i = 0; i < NP; i++)
        args[i] = val_none();
}

/* ---- reading pictures back ---- */

typedef struct Pic {
    cairo_surface_t *s;
    int w, h, stride;
    unsigned char *px;
} Pic;

static bool pic_load(const char *path, Pic *p)
{
    p->s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(p->s) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(p->s);
        p->s = NULL;
        return false;
    }
    cairo_surface_flush(p->s);
    p->w = cairo_image_surface_get_width(p->s);
    p->h = cairo_image_surface_get_height(p->s);
    p->stride = cairo_image_surface_get_stride(p->s);
    p->px = cairo_image_surface_get_data(p->s);
    return true;
}

static void pic_free(Pic *p)
{
    if (p->s)
        cairo_surface_destroy(p->s);
}

static void rgb_at(const Pic *p, int x, int y, int *r, int *g, int *b)
{
    uint32_t v = *(const uint32_t *)(p->px + (size_t)y * p->stride + (size_t)x * 4);
    *r = (v >> 16) & 0xff;
    *g = (v >> 8) & 0xff;
    *b = v & 0xff;
}

/* Close to colour (r, g, b): the curve's own pixels, not the anti-aliased rim. */
static bool near(const Pic *p, int x, int y, int r, int g, int b)
{
    int pr, pg, pb;
    rgb_at(p, x, y, &pr, &pg, &pb);
    return abs(pr - r) + abs(pg - g) + abs(pb - b) < 60;
}

/* The first series' blue and the second's orange (the palette in plot_cairo.c). */
#define BLUE 31, 119, 180
#define ORANGE 255, 127, 14

/* Mean row of the pixels of colour (r,g,b) in columns [x0, x1); -1 if none. */
static double mean_row(const Pic *p, int x0, int x1, int r, int g, int b, int *count)
{
    double sum = 0;
    int n = 0;
    for (int x = x0; x < x1; x++)
        for (int y = 0; y < p->h; y++)
            if (near(p, x, y, r, g, b)) {
                sum += y;
                n++;
            }
    if (count)
        *count = n;
    return n ? sum / n : -1;
}

/* ---- tests ---- */

static void test_ticks(void)
{
    PlotTicks t;
    char lab[64];
    plot_ticks(0, 1, 5, &t);
    CHECK_DBL(t.step, 0.2);
    CHECK_DBL(plot_tick_value(&t, 0), 0);
    CHECK_INT(t.count, 6);
    plot_tick_label(&t, plot_tick_value(&t, 3), lab, sizeof lab);
    CHECK(strcmp(lab, "0.6") == 0);

    plot_ticks(0.12, 2.38, 5, &t);      /* 0.5, 1.0, 1.5, 2.0 */
    CHECK_DBL(t.step, 0.5);
    CHECK_DBL(t.start, 0.5);
    CHECK_INT(t.count, 4);

    plot_ticks(-1.07, 1.07, 4, &t);     /* -1, -0.5, 0, 0.5, 1 */
    CHECK_DBL(t.start, -1);
    CHECK_INT(t.count, 5);
    CHECK_DBL(plot_tick_value(&t, 2), 0);
    plot_tick_label(&t, plot_tick_value(&t, 2), lab, sizeof lab);
    CHECK(strcmp(lab, "0.0") == 0);     /* never "-0.0" */

    plot_ticks(1, 100, 5, &t);          /* 20, 40, 60, 80, 100 */
    CHECK_DBL(t.step, 20);
    CHECK_INT(t.decimals, 0);
    plot_tick_label(&t, 100, lab, sizeof lab);
    CHECK(strcmp(lab, "100") == 0);

    plot_ticks(0, 3e9, 3, &t);          /* large numbers: %g */
    plot_tick_label(&t, plot_tick_value(&t, 1), lab, sizeof lab);
    CHECK(strcmp(lab, "1e+09") == 0);

    plot_ticks(5, 5, 4, &t);            /* empty range: one tick, no loop */
    CHECK_INT(t.count, 1);
    plot_ticks(0, INFINITY, 4, &t);
    CHECK_INT(t.count, 1);

    /* Whole-number x (epochs): no tick at 1.5. */
    double xs[5] = {1, 2, 3, 4, 5}, ys[5] = {0.7, 0.4, 0.35, 0.32, 0.3};
    double *yp[1] = {ys};
    PlotSpec s = {.n = 5, .ns = 1, .x = xs, .y = yp};
    PlotRange r;
    CHECK(plot_range(&s, &r));
    plot_x_ticks(&s, &r, 7, &t);
    CHECK_DBL(t.start, 1);
    CHECK_DBL(t.step, 1);
    CHECK_INT(t.count, 5);
    xs[2] = 3.5;        /* not all whole: the plain ticks */
    plot_x_ticks(&s, &r, 7, &t);
    CHECK(t.step < 1);

    /* Every tick lies in the range, for many ranges. */
    for (int i = 1; i < 200; i++) {
        double lo = -i * 0.37, hi = i * i * 0.011 + 0.001;
        plot_ticks(lo, hi, 1 + i % 9, &t);
        bool ok = t.count >= 1;
        for (int k = 0; k < t.count; k++) {
            double v = plot_tick_value(&t, k);
            ok = ok && v >= lo - 1e-9 * t.step && v <= hi + 1e-9 * t.step;
        }
        CHECK(ok);
    }
}

/* Data at the ends of the doubles (issue 28): a finite range, ticks that
 * lie in it and are finite, and a curve inside the frame, in the PNG and in
 * the terminal. */
static double huge_zigzag(int64_t i, int64_t c) { (void)c; return i % 2 ? 1e308 : -1e308; }
static double huge_const(int64_t i, int64_t c) { (void)i, (void)c; return 1.7e308; }

static void test_huge_values(Interp *I)
{
    double xs[4] = {1, 2, 3, 4}, a[4] = {-1e308, 1e308, 0, 5e307}, b[4] = {1.7e308, 1.7e308, 1.7e308, 1.7e308};
    double *ys[1] = {a};
    char *names[1] = {(char *)"V1"};
    PlotSpec s = {.n = 4, .ns = 1, .x = xs, .y = ys, .names = names, .title = "", .xlab = "", .ylab = ""};
    PlotRange r;
    PlotTicks t;
    for (int pass = 0; pass < 2; pass++) {
        ys[0] = pass ? b : a;
        CHECK(plot_range(&s, &r));
        CHECK(isfinite(r.ylo) && isfinite(r.yhi) && r.ylo < r.yhi);
        CHECK(r.ylo <= (pass ? 1.7e308 : -1e308) && r.yhi >= (pass ? 1.7e308 : 1e308));
        for (int target = 2; target <= 8; target++) {
            plot_ticks(r.ylo, r.yhi, target, &t);
            bool ok = t.count >= 2 && t.count <= 20;
            for (int k = 0; k < t.count; k++) {
                double v = plot_tick_value(&t, k);
                ok = ok && isfinite(v) && v >= r.ylo && v <= r.yhi;
            }
            CHECK(ok);
        }
        double f = plot_frac(pass ? 1.7e308 : 1e308, r.ylo, r.yhi);
        CHECK(f > 0.5 && f <= 1);
    }
    plot_ticks(-1e308, 1e308, 4, &t);
    char lab[64];
    plot_tick_label(&t, plot_tick_value(&t, t.count - 1), lab, sizeof lab);
    CHECK(strcmp(lab, "1e+308") == 0);

    /* The pictures: the blue curve inside the frame, reaching its top and
     * bottom quarters for the zigzag, in the top part for the constant. */
    double (*fns[2])(int64_t, int64_t) = {huge_zigzag, huge_const};
    for (int pass = 0; pass < 2; pass++) {
        const char *path = tmp_path(pass ? "huge_const.png" : "huge_zigzag.png");
        Value args[NP];
        no_args(args);
        args[P_X] = mat_fn(9, 1, fns[pass]);
        args[P_FILE] = str(path);
        args[P_WIDTH] = val_int(400);
        args[P_HEIGHT] = val_int(300);
        CHECK(call_plot(I, args) == ST_OK);
        Pic p;
        if (!CHECK(pic_load(path, &p)))
            continue;
        int top = 0, bottom = 0, all = 0;
        for (int y = 0; y < p.h; y++)
            for (int x = 0; x < p.w; x++)
                if (near(&p, x, y, BLUE)) {
                    all++;
                    top += y < p.h / 3;
                    bottom += y > 2 * p.h / 3;
                }
        CHECK(all > 200);
        if (pass == 0)
            CHECK(top > 20 && bottom > 20);
        else
            CHECK(top > 100 && bottom == 0);
        pic_free(&p);
    }
    ys[0] = a;
    StrBuf sb;
    sb_init(&sb);
    plot_term_render(&s, 60, 16, false, &sb);
    CHECK(sb.p && (strstr(sb.p, "\xe2\xa0") || strstr(sb.p, "\xe2\xa1") || strstr(sb.p, "\xe2\xa2")));
    CHECK(sb.p && strstr(sb.p, "1e+308") && strstr(sb.p, "-1e+308"));
    sb_free(&sb);
}

/* Many dense series (more points than pixel columns): the last drawn is on
 * top and shows, an earlier one where nothing covers it; a Ctrl-C flag set
 * beforehand stops the drawing with no picture written. */
static double noisy(int64_t i, int64_t c)
{
    uint64_t h = (uint64_t)(i * 1000003 + c * 7919 + 17);
    h ^= h >> 13;
    h *= 0x9E3779B97F4A7C15ULL;
    return (double)(h >> 11) / 9007199254740992.0;
}

static void test_dense_series(Interp *I)
{
    const char *path = tmp_path("dense.png");
    Value args[NP];
    no_args(args);
    args[P_X] = mat_fn(2000, 30, noisy);
    args[P_FILE] = str(path);
    CHECK(call_plot(I, args) == ST_OK);
    Pic p;
    if (CHECK(pic_load(path, &p))) {
        /* series 30 is drawn last, in the tenth colour (cyan) */
        int cyan = 0;
        for (int y = 0; y < p.h; y++)
            for (int x = 0; x < p.w * 3 / 4; x++)
                cyan += near(&p, x, y, 23, 190, 207);
        CHECK(cyan > 20000);
        pic_free(&p);
    }
    atomic_int stop = 1;
    I->interrupt = &stop;
    no_args(args);
    args[P_X] = mat_fn(2000, 30, noisy);
    args[P_FILE] = str(tmp_path("stopped.png"));
    CHECK(call_plot(I, args) == ST_ERR);
    CHECK(I->err.interrupted);
    CHECK(access(tmp_path("stopped.png"), F_OK) != 0);
    err_clear(I);
    I->interrupt = NULL;
}

static double rising(int64_t i, int64_t c) { (void)c; return (double)i; }
static double two_lines(int64_t i, int64_t c) { return c == 0 ? (double)i : 50.0 - (double)i; }
static double with_gap(int64_t i, int64_t c) { (void)c; return i >= 20 && i < 30 ? NAN : (double)i; }
static double dense_gap(int64_t i, int64_t c)
{
    (void)c;
    return i >= 2000 && i < 3000 ? NAN : (double)i + 300 * sin((double)i / 37);
}

/* A rising line: dark (blue) pixels lower left and upper right. */
static void test_png_rising(Interp *I)
{
    const char *path = tmp_path("rising.png");
    Value args[NP];
    no_args(args);
    args[P_X] = mat_fn(50, 1, rising);
    args[P_FILE] = str(path);
    args[P_WIDTH] = val_int(400);
    args[P_HEIGHT] = val_int(300);
    CHECK(call_plot(I, args) == ST_OK);
    Pic p;
    if (!CHECK(pic_load(path, &p)))
        return;
    CHECK_INT(p.w, 400);
    CHECK_INT(p.h, 300);
    /* Not blank: plenty of white, and plenty that is not white. */
    int white = 0, ink = 0;
    for (int y = 0; y < p.h; y++)
        for (int x = 0; x < p.w; x++) {
            int r, g, b;
            rgb_at(&p, x, y, &r, &g, &b);
            if (r > 245 && g > 245 && b > 245)
                white++;
            else
                ink++;
        }
    CHECK(white > p.w * p.h / 2);
    CHECK(ink > 1000);
    /* The curve: low on the left, high on the right, climbing throughout. */
    int nl, nr;
    double left = mean_row(&p, 0, p.w / 3, BLUE, &nl);
    double right = mean_row(&p, 2 * p.w / 3, p.w, BLUE, &nr);
    CHECK(nl > 50 && nr > 50);
    CHECK(left > p.h / 2.0);
    CHECK(right < p.h / 2.0);
    double prev = 1e9;
    bool climbs = true;
    for (int x0 = p.w / 5; x0 + 20 <= 4 * p.w / 5; x0 += 20) {
        double m = mean_row(&p, x0, x0 + 20, BLUE, NULL);
        climbs = climbs && m >= 0 && m < prev;
        prev = m;
    }
    CHECK(climbs);
    pic_free(&p);
}

/* Two series in two distinct colours; one rises, the other falls. */
static void test_png_two_series(Interp *I)
{
    const char *path = tmp_path("two.png");
    Value args[NP];
    no_args(args);
    args[P_X] = mat_fn(51, 2, two_lines);
    args[P_FILE] = str(path);
    args[P_TITLE] = str("up and down");
    args[P_XLAB] = str("step");
    args[P_YLAB] = str("value");
    args[P_NAMES] = str("up, down");
    CHECK(call_plot(I, args) == ST_OK);
    Pic p;
    if (!CHECK(pic_load(path, &p)))
        return;
    CHECK_INT(p.w, 800);        /* the default size */
    CHECK_INT(p.h, 500);
    int nb, no;
    double bl = mean_row(&p, 0, p.w / 3, BLUE, &nb), br = mean_row(&p, 2 * p.w / 3, p.w * 3 / 4, BLUE, NULL);
    double ol = mean_row(&p, 0, p.w / 3, ORANGE, &no), orr = mean_row(&p, 2 * p.w / 3, p.w * 3 / 4, ORANGE, NULL);
    CHECK(nb > 50 && no > 50);
    CHECK(bl > br);             /* blue rises (rows grow downwards) */
    CHECK(ol < orr);            /* orange falls */
    /* The title is drawn: dark pixels in the top band, around the middle. */
    int dark = 0;
    for (int y = 0; y < 40; y++)
        for (int x = p.w / 3; x < 2 * p.w / 3; x++) {
            int r, g, b;
            rgb_at(&p, x, y, &r, &g, &b);
            dark += r + g + b < 200;
        }
    CHECK(dark > 30);
    pic_free(&p);
}

/* NaN rows leave a gap: no curve pixels over x in (21, 30). */
static void test_png_gap(Interp *I)
{
    const char *path = tmp_path("gap.png");
    Value args[NP];
    no_args(args);
    args[P_X] = mat_fn(50, 1, with_gap);
    args[P_FILE] = str(path);
    CHECK(call_plot(I, args) == ST_OK);
    Pic p;
    if (!CHECK(pic_load(path, &p)))
        return;
    /* Find the curve's horizontal extent, then look inside the gap. */
    int xmin = p.w, xmax = -1;
    for (int x = 0; x < p.w; x++)
        for (int y = 0; y < p.h; y++)
            if (near(&p, x, y, BLUE)) {
                xmin = x < xmin ? x : xmin;
                xmax = x > xmax ? x : xmax;
            }
    CHECK(xmax > xmin);
    /* x = 1..50 spans xmin..xmax; the gap is x in (20, 31) (rows 21..30 are NaN). */
    double per = (xmax - xmin) / 49.0;
    int g0 = xmin + (int)(per * 20.5), g1 = xmin + (int)(per * 28.5);
    int in_gap;
    mean_row(&p, g0, g1, BLUE, &in_gap);
    CHECK_INT(in_gap, 0);
    int before;
    mean_row(&p, xmin + (int)(per * 5), xmin + (int)(per * 15), BLUE, &before);
    CHECK(before > 50);
    pic_free(&p);

    /* 5000 points on 800 pixels are thinned to each column's extremes: the
     * gap of rows 2001..3000 stays, and so do the wiggles. */
    path = tmp_path("dense.png");
    no_args(args);
    args[P_X] = mat_fn(5000, 1, dense_gap);
    args[P_FILE] = str(path);
    CHECK(call_plot(I, args) == ST_OK);
    if (!CHECK(pic_load(path, &p)))
        return;
    xmin = p.w;
    xmax = -1;
    for (int x = 0; x < p.w; x++)
        for (int y = 0; y < p.h; y++)
            if (near(&p, x, y, BLUE)) {
                xmin = x < xmin ? x : xmin;
                xmax = x > xmax ? x : xmax;
            }
    per = (xmax - xmin) / 4999.0;
    mean_row(&p, xmin + (int)(per * 2050), xmin + (int)(per * 2950), BLUE, &in_gap);
    CHECK_INT(in_gap, 0);
    /* The sine of period 2*pi*37 rows swings the curve: within 100 rows
     * (about 16 pixel columns) the curve covers rows far apart. */
    int top = p.h, bot = -1;
    for (int x = xmin + (int)(per * 500); x < xmin + (int)(per * 740); x++)
        for (int y = 0; y < p.h; y++)
            if (near(&p, x, y, BLUE)) {
                top = y < top ? y : top;
                bot = y > bot ? y : bot;
            }
    CHECK(bot - top > 40);
    pic_free(&p);
}

static bool file_starts(const char *path, const char *magic)
{
    char buf[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(buf, 1, strlen(magic), f);
    fclose(f);
    return n == strlen(magic) && memcmp(buf, magic, n) == 0;
}

static void test_svg_pdf(Interp *I)
{
    const char *names[2] = {"curves.svg", "curves.PDF"};
    const char *magic[2] = {"<?xml", "%PDF"};
    for (int i = 0; i < 2; i++) {
        Value args[NP];
        no_args(args);
        args[P_X] = mat_fn(10, 2, two_lines);
        args[P_FILE] = str(tmp_path(names[i]));
        CHECK(call_plot(I, args) == ST_OK);
        CHECK(file_starts(tmp_path(names[i]), magic[i]));
    }
}

/* Bad arguments are errors that write nothing. */
static void test_errors(Interp *I)
{
    static const struct { const char *file; int which; const char *msg; } cases[] = {
        {"x.jpg", 0, "cannot tell the picture format"},
        {"nodir/x.png", 0, "cannot write"},
        {"n.png", 1, "'names' has 3 names for 2 series"},
        {"c.png", 2, "'xcol' must be a column of X"},
        {"v.png", 3, "'x' must be a vector of 51 values"},
        {"w.png", 4, "'width' must be between 1 and"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Value args[NP];
        no_args(args);
        args[P_X] = mat_fn(51, 2, two_lines);
        args[P_FILE] = str(tmp_path(cases[i].file));
        if (cases[i].which == 1)
            args[P_NAMES] = str("a,b,c");
        if (cases[i].which == 2)
            args[P_XCOL] = val_int(3);
        if (cases[i].which == 3)
            args[P_XV] = mat_fn(50, 1, rising);
        if (cases[i].which == 4)
            args[P_WIDTH] = val_int(0);
        err_clear(I);
        CHECK(call_plot(I, args) == ST_ERR);
        CHECK(I->err.msg && strstr(I->err.msg, cases[i].msg));
        if (I->err.msg && !strstr(I->err.msg, cases[i].msg))
            fprintf(stderr, "  got: %s\n", I->err.msg);
        CHECK(access(tmp_path(cases[i].file), F_OK) != 0);
        err_clear(I);
    }
    /* An existing file survives a plot that fails. */
    FILE *f = fopen(tmp_path("keep.png"), "w");
    fputs("old", f);
    fclose(f);
    Value args[NP];
    no_args(args);
    Matrix *m = mat_new_raw(3, 1);
    m->data[0] = m->data[1] = m->data[2] = NAN;
    args[P_X] = val_matrix_take(m);
    args[P_FILE] = str(tmp_path("keep.png"));
    CHECK(call_plot(I, args) == ST_ERR);
    CHECK(I->err.msg && strstr(I->err.msg, "no finite value"));
    err_clear(I);
    CHECK(file_starts(tmp_path("keep.png"), "old"));
}

/* The braille chart: exactly 'rows' lines, braille cells, the axis. */
static void test_terminal(void)
{
    PlotSpec s;
    memset(&s, 0, sizeof s);
    double x[5] = {1, 2, 3, 4, 5}, y0[5] = {1, 2, 3, 4, 5}, y1[5] = {5, 4, NAN, 2, 1};
    double *ys[2] = {y0, y1};
    char *names[2] = {(char *)"up", (char *)"down"};
    s.n = 5;
    s.ns = 2;
    s.x = x;
    s.y = ys;
    s.names = names;
    s.legend = true;
    s.title = "t";
    s.xlab = "x";
    s.ylab = "y";
    StrBuf b;
    sb_init(&b);
    plot_term_render(&s, 60, 20, false, &b);
    int lines = 0;
    for (size_t i = 0; i < b.len; i++)
        lines += b.p[i] == '\n';
    CHECK_INT(lines, 20);
    CHECK(strstr(b.p, "\xe2\xa0") || strstr(b.p, "\xe2\xa1") || strstr(b.p, "\xe2\xa2"));  /* braille */
    CHECK(strstr(b.p, "\xe2\x94\x94"));     /* the corner of the axes */
    CHECK(strstr(b.p, "━━ up   ━━ down"));
    CHECK(!strchr(b.p, '\x1b'));            /* plain: no colour codes */
    sb_free(&b);
    sb_init(&b);
    plot_term_render(&s, 60, 20, true, &b);
    CHECK(strstr(b.p, "\x1b[34m") && strstr(b.p, "\x1b[33m"));
    sb_free(&b);
}

int main(void)
{
    builtin_registry_install();
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    Interp I;
    interp_init(&I, NULL, 1);
    test_ticks();
    test_png_rising(&I);
    test_png_two_series(&I);
    test_png_gap(&I);
    test_svg_pdf(&I);
    test_errors(&I);
    test_terminal();
    test_huge_values(&I);
    test_dense_series(&I);
    interp_destroy(&I);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    cairo_debug_reset_static_data();
    return CHECK_DONE();
}
