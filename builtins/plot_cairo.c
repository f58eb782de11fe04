/* SPDX-License-Identifier: Apache-2.0
 * plot() to a file: PNG, SVG or PDF drawn with cairo (anti-aliased lines
 * and text, three formats from one drawing routine). The picture goes to a
 * temporary next to the target through cairo's stream API and is renamed
 * over it only when complete. Thread-safe: each call has its own surface
 * and context; cairo and fontconfig lock their shared caches. */
#include "plot.h"

#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef CAIRO_HAS_SVG_SURFACE
#include <cairo-svg.h>
#endif
#ifdef CAIRO_HAS_PDF_SURFACE
#include <cairo-pdf.h>
#endif

#include "io/io_formats.h"

typedef enum Fmt { FMT_NONE, FMT_PNG, FMT_SVG, FMT_PDF } Fmt;

static Fmt fmt_of(const char *path)
{
    size_t n = strlen(path);
    if (n < 5)
        return FMT_NONE;
    const char *sfx = path + n - 4;
    if (!strcasecmp(sfx, ".png"))
        return FMT_PNG;
#ifdef CAIRO_HAS_SVG_SURFACE
    if (!strcasecmp(sfx, ".svg"))
        return FMT_SVG;
#endif
#ifdef CAIRO_HAS_PDF_SURFACE
    if (!strcasecmp(sfx, ".pdf"))
        return FMT_PDF;
#endif
    return FMT_NONE;
}

bool plot_known_suffix(const char *path)
{
    return fmt_of(path) != FMT_NONE;
}

/* Tableau's ten colours: distinct, and readable on white. A series past
 * the tenth reuses them with a dashed line. */
static const double palette[10][3] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
    {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
    {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};

enum { FONT_TITLE = 17, FONT_LABEL = 14, FONT_TICK = 12, FONT_LEGEND = 13 };
enum { DEFAULT_W = 800, DEFAULT_H = 500 };
/* Series with at most this many points get a marker on each point. */
enum { MARKER_MAX_POINTS = 40 };

static void set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

static double text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* Draws 's' with its anchor at (x, y): ax 0/0.5/1 = left/centre/right,
 * y is the baseline. */
static void text_at(cairo_t *cr, const char *s, double x, double y, double ax)
{
    cairo_move_to(cr, x - ax * text_width(cr, s), y);
    cairo_show_text(cr, s);
}

static void set_series_style(cairo_t *cr, int k, bool dashed)
{
    const double *c = palette[k % 10];
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
    cairo_set_line_width(cr, 2.2);
    if (dashed) {
        double dash[2] = {7, 4};
        cairo_set_dash(cr, dash, 2, 0);
    } else {
        cairo_set_dash(cr, NULL, 0, 0);
    }
}

/* The plot area: left, top, width, height in device units. */
typedef struct Area {
    double x0, y0, w, h;
    PlotRange r;
} Area;

static double fx(const Area *f, double v) { return f->x0 + plot_frac(v, f->r.xlo, f->r.xhi) * f->w; }
static double fy(const Area *f, double v) { return f->y0 + f->h - plot_frac(v, f->r.ylo, f->r.yhi) * f->h; }

/* Series 11 to 20 are dashed, to tell them from the first ten of the same
 * colours. Past 20 series the colours repeat too often for that, and in a
 * dense chart (more points than pixel columns) dashes could not be seen:
 * there all series are solid. */
static bool series_dashed(const PlotSpec *s, const Area *f, int k)
{
    return k >= 10 && s->ns <= 20 && s->n <= (int64_t)f->w;
}

static bool point_ok(const PlotSpec *s, int k, int64_t i)
{
    return isfinite(s->x[i]) && isfinite(s->y[k][i]);
}

/* True when the finite x values never decrease (the usual case: steps,
 * epochs, time), which lets draw_series thin out dense series. */
static bool x_sorted(const PlotSpec *s)
{
    double prev = -INFINITY;
    for (int64_t i = 0; i < s->n; i++) {
        if (!isfinite(s->x[i]))
            continue;
        if (s->x[i] < prev)
            return false;
        prev = s->x[i];
    }
    return true;
}

/* ---- the series: what each pixel column shows ----
 * Drawing cost follows the picture, not the data:
 *  - a series with more points than pixel columns (x sorted) keeps, per
 *    column, its first, lowest, highest and last point in their order (as
 *    plotting libraries reduce dense lines): the same pixels;
 *  - a segment that series drawn later (on top) hide entirely is left out:
 *    per pixel column we keep the rows that solid series above already
 *    paint, and a segment whose line would land inside them is not drawn.
 *    A thousand noisy series then cost about what the visible ones do;
 *  - a path is stroked a few segments at a time, so that cairo never
 *    tessellates a long self-crossing path (round caps join the pieces).
 * 10^6 points (1000 series of 1000, or one of 10^6) draw in well under a
 * second at the default size (doc/plot.md). */

/* The points a series keeps, in order; -1 marks a break (a non-finite
 * point). */
typedef struct Pts {
    int64_t *i;
    double *x, *y;          /* device coordinates of the kept points */
    int64_t n, cap;
} Pts;

static bool pts_push(Pts *p, int64_t v)
{
    if (p->n == p->cap) {
        int64_t cap = p->cap ? 2 * p->cap : 256;
        int64_t *ni = realloc(p->i, (size_t)cap * sizeof *ni);
        if (ni)
            p->i = ni;
        double *nx = ni ? realloc(p->x, (size_t)cap * sizeof *nx) : NULL;
        if (nx)
            p->x = nx;
        double *ny = nx ? realloc(p->y, (size_t)cap * sizeof *ny) : NULL;
        if (!ny)
            return false;
        p->y = ny;
        p->cap = cap;
    }
    p->i[p->n++] = v;
    return true;
}

static void pts_free(Pts *p)
{
    free(p->i);
    free(p->x);
    free(p->y);
}

static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }

/* The points of series k to draw, reduced per pixel column when 'thin'. */
static bool series_points(const PlotSpec *s, const Area *f, int k, bool thin, Pts *p)
{
    const double *y = s->y[k];
    p->n = 0;
    for (int64_t i = 0; i < s->n;) {
        if (!point_ok(s, k, i)) {
            if (p->n && p->i[p->n - 1] >= 0 && !pts_push(p, -1))
                return false;
            i++;
            continue;
        }
        /* The bucket [i, j]: one point, or the points of one pixel column. */
        int64_t j = i, imin = i, imax = i;
        if (thin) {
            double col = floor(fx(f, s->x[i]));
            while (j + 1 < s->n && point_ok(s, k, j + 1) && floor(fx(f, s->x[j + 1])) == col) {
                j++;
                if (y[j] < y[imin])
                    imin = j;
                if (y[j] > y[imax])
                    imax = j;
            }
        }
        int64_t keep[4] = {i, imin < imax ? imin : imax, imin < imax ? imax : imin, j};
        for (int q = 0; q < 4; q++)
            if ((q == 0 || keep[q] != keep[q - 1]) && !pts_push(p, keep[q]))
                return false;
        i = j + 1;
    }
    for (int64_t q = 0; q < p->n; q++)
        if (p->i[q] >= 0) {
            p->x[q] = fx(f, s->x[p->i[q]]);
            p->y[q] = fy(f, y[p->i[q]]);
        }
    return true;
}

/* Rows [lo, hi] of each pixel column that solid series above paint fully
 * (lo > hi: none). One interval per column: a new one that overlaps joins
 * it, one apart replaces it when longer. */
typedef struct Cover {
    double *lo, *hi;
    long x0, n;             /* columns x0 .. x0+n-1 of the device */
} Cover;

/* The y extent of segment (ax,ay)-(bx,by) over device x in [u, v]
 * (clamped to the segment); false when they do not meet. */
static bool seg_span(double ax, double ay, double bx, double by, double u, double v, double *lo, double *hi)
{
    if (ax > bx) {
        double t = ax; ax = bx; bx = t;
        t = ay; ay = by; by = t;
    }
    u = dmax(u, ax);
    v = dmin(v, bx);
    if (u > v)
        return false;
    double yu = ay, yv = by;
    if (bx > ax) {
        yu = ay + (by - ay) * ((u - ax) / (bx - ax));
        yv = ay + (by - ay) * ((v - ax) / (bx - ax));
    }
    if (bx == ax) {
        yu = ay;
        yv = by;
    }
    *lo = dmin(yu, yv);
    *hi = dmax(yu, yv);
    return true;
}

/* Half the line width and a pixel of anti-aliasing. */
#define LINE_REACH 2.2

/* The part of segment (ax,ay)-(bx,by) that the series above hide, as
 * the parameter range [*t0, *t1] of a + t (b - a) (t0 > t1: none; 0 and 1:
 * all). Hidden means every pixel the line would paint there is already
 * painted: in each pixel column the line reaches, its rows (with the line's
 * width) lie within the covered ones. The whole segment is tested column
 * by column; failing that, the rows covered in every column it reaches
 * hide its middle, so only its ends (the tips of a noisy band) are drawn. */
static void seg_hidden(const Cover *c, double ax, double ay, double bx, double by, float *t0, float *t1)
{
    *t0 = 1;
    *t1 = 0;
    double xl = dmin(ax, bx) - LINE_REACH, xr = dmax(ax, bx) + LINE_REACH;
    long c0 = (long)floor(xl), c1 = (long)floor(xr);
    if (c0 < c->x0 || c1 >= c->x0 + c->n)
        return;
    bool all = true;
    double L = -INFINITY, H = INFINITY;     /* rows covered in every column */
    for (long col = c0; col <= c1; col++) {
        long k = col - c->x0;
        if (c->lo[k] > c->hi[k])
            return;
        L = dmax(L, c->lo[k]);
        H = dmin(H, c->hi[k]);
        if (!all)
            continue;
        double lo, hi;
        if (!seg_span(ax, ay, bx, by, (double)col - LINE_REACH, (double)col + 1 + LINE_REACH, &lo, &hi)) {
            /* beside the segment's ends: the nearer end's height */
            double ey = (double)col < dmin(ax, bx) ? (ax < bx ? ay : by) : (ax < bx ? by : ay);
            lo = hi = ey;
        }
        all = c->lo[k] <= lo - LINE_REACH && hi + LINE_REACH <= c->hi[k];
    }
    if (all) {
        *t0 = 0;
        *t1 = 1;
        return;
    }
    double yl = L + LINE_REACH, yh = H - LINE_REACH;
    if (!(yl < yh) || ay == by)
        return;
    double ta = (yl - ay) / (by - ay), tb = (yh - ay) / (by - ay);
    double u = dmax(0, dmin(ta, tb)), v = dmin(1, dmax(ta, tb));
    if (u < v) {
        *t0 = (float)u;
        *t1 = (float)v;
    }
}

/* Adds the rows a solid segment paints fully: in each pixel column it
 * crosses, every row between where it enters and leaves (a line 2.2 px
 * wide covers the whole column width on the way). */
static void seg_cover(Cover *c, double ax, double ay, double bx, double by)
{
    long c0 = (long)floor(dmin(ax, bx)), c1 = (long)floor(dmax(ax, bx));
    for (long col = c0; col <= c1; col++) {
        long k = col - c->x0;
        if (k < 0 || k >= c->n)
            continue;
        double lo, hi;
        if (!seg_span(ax, ay, bx, by, (double)col, (double)col + 1, &lo, &hi))
            continue;
        /* whole pixels only: the line's own width pads the ends */
        lo = ceil(lo - 1.0);
        hi = floor(hi + 1.0);
        if (hi - lo < 1)
            continue;
        if (c->lo[k] > c->hi[k] || hi < c->lo[k] || lo > c->hi[k]) {
            if (c->lo[k] > c->hi[k] || hi - lo > c->hi[k] - c->lo[k]) {
                c->lo[k] = lo;
                c->hi[k] = hi;
            }
        } else {
            c->lo[k] = dmin(c->lo[k], lo);
            c->hi[k] = dmax(c->hi[k], hi);
        }
    }
}

/* Ends a path of 'run' points: a line is stroked, a lone point (last at
 * x, y) becomes a dot. */
static void end_run(cairo_t *cr, int64_t run, double x, double y)
{
    if (run > 1) {
        cairo_stroke(cr);
    } else if (run == 1) {
        cairo_new_path(cr);
        cairo_arc(cr, x, y, 2.5, 0, 2 * M_PI);
        cairo_fill(cr);
    }
}

/* Segments a path is stroked in: cheap to tessellate, few calls. */
enum { STROKE_CHUNK = 8 };

/* One series from its kept points p; the part [h0[q], h1[q]] of segment
 * (p[q], p[q+1]) is left out (hidden). A path breaks at every non-finite
 * point; a point with no finite neighbour gets a dot so that it stays
 * visible. A dashed series keeps its dash pattern running across the
 * pieces. */
static void draw_series(cairo_t *cr, const PlotSpec *s, const Area *f, int k, const Pts *p, const float *h0,
                        const float *h1)
{
    const double *y = s->y[k];
    bool dashed = series_dashed(s, f, k);
    set_series_style(cr, k, dashed);
    double dash[2] = {7, 4};
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    /* open: a path is being built whose current point is the last kept
     * point; seg_in_path: its segments */
    int64_t run = 0, seg_in_path = 0;
    double lastx = 0, lasty = 0, along = 0;
    bool open = false;
    for (int64_t q = 0; q < p->n; q++) {
        int64_t i = p->i[q];
        if (i < 0) {
            if (open)
                cairo_stroke(cr);
            else if (run == 1)
                end_run(cr, 1, lastx, lasty);
            cairo_new_path(cr);
            run = seg_in_path = 0;
            open = false;
            continue;
        }
        double x = p->x[q], yy = p->y[q];
        if (run > 0) {
            double len = dashed ? hypot(x - lastx, yy - lasty) : 0;
            double t0 = h0[q - 1], t1 = h1[q - 1];
            /* the visible pieces [0, t0) and (t1, 1] of the segment */
            double ends[2][2] = {{0, t0 <= t1 ? t0 : 1}, {t0 <= t1 ? t1 : 1, 1}};
            for (int piece = 0; piece < 2; piece++) {
                double u = ends[piece][0], v = ends[piece][1];
                if (!(v > u))
                    continue;
                /* an open path goes on only from this segment's start */
                if (!(open && u == 0)) {
                    if (open)
                        cairo_stroke(cr);
                    cairo_new_path(cr);
                    if (dashed)
                        cairo_set_dash(cr, dash, 2, along + u * len);
                    cairo_move_to(cr, lastx + u * (x - lastx), lasty + u * (yy - lasty));
                    open = true;
                    seg_in_path = 0;
                }
                cairo_line_to(cr, lastx + v * (x - lastx), lasty + v * (yy - lasty));
                if (++seg_in_path == STROKE_CHUNK || v < 1) {
                    cairo_stroke(cr);
                    open = false;
                    seg_in_path = 0;
                }
            }
            if (open && t0 <= t1 && t1 >= 1) {
                /* the segment's end is hidden: the path cannot go on */
                cairo_stroke(cr);
                open = false;
                seg_in_path = 0;
            }
            along += len;
        }
        lastx = x;
        lasty = yy;
        run++;
    }
    if (open && seg_in_path)
        cairo_stroke(cr);
    else if (run == 1)
        end_run(cr, 1, lastx, lasty);
    cairo_new_path(cr);
    if (s->n <= MARKER_MAX_POINTS) {
        for (int64_t i = 0; i < s->n; i++) {
            if (!point_ok(s, k, i))
                continue;
            cairo_arc(cr, fx(f, s->x[i]), fy(f, y[i]), 3.6, 0, 2 * M_PI);
            cairo_fill(cr);
        }
    }
}

/* All series, the last on top: kept points per series, then, from the top
 * series down, which segments the ones above hide, then drawn bottom up.
 * False when out of memory or stopped (a Ctrl-C). */
static bool draw_all_series(cairo_t *cr, const PlotSpec *s, const Area *f, bool thin)
{
    Pts *pts = calloc((size_t)s->ns, sizeof *pts);
    float **hid = calloc((size_t)s->ns * 2, sizeof *hid);   /* h0 of series k at 2k, h1 at 2k+1 */
    Cover c = {0};
    c.x0 = (long)floor(f->x0) - 4;
    c.n = (long)ceil(f->w) + 9;
    c.lo = malloc((size_t)c.n * sizeof *c.lo);
    c.hi = malloc((size_t)c.n * sizeof *c.hi);
    bool ok = pts && hid && c.lo && c.hi;
    for (long k = 0; ok && k < c.n; k++) {
        c.lo[k] = 1;
        c.hi[k] = 0;
    }
    for (int k = s->ns - 1; ok && k >= 0; k--) {
        if (s->stop && atomic_load_explicit(s->stop, memory_order_relaxed)) {
            ok = false;
            break;
        }
        Pts *p = &pts[k];
        if (!series_points(s, f, k, thin, p) || !(hid[2 * k] = malloc(((size_t)p->n + 1) * sizeof(float))) ||
            !(hid[2 * k + 1] = malloc(((size_t)p->n + 1) * sizeof(float)))) {
            ok = false;
            break;
        }
        for (int64_t q = 0; q + 1 < p->n; q++)
            if (p->i[q] >= 0 && p->i[q + 1] >= 0)
                seg_hidden(&c, p->x[q], p->y[q], p->x[q + 1], p->y[q + 1], &hid[2 * k][q], &hid[2 * k + 1][q]);
        if (!series_dashed(s, f, k))     /* solid: what it paints hides what is below */
            for (int64_t q = 0; q + 1 < p->n; q++)
                if (p->i[q] >= 0 && p->i[q + 1] >= 0)
                    seg_cover(&c, p->x[q], p->y[q], p->x[q + 1], p->y[q + 1]);
    }
    for (int k = 0; ok && k < s->ns; k++) {
        if (s->stop && atomic_load_explicit(s->stop, memory_order_relaxed))
            ok = false;
        else
            draw_series(cr, s, f, k, &pts[k], hid[2 * k], hid[2 * k + 1]);
    }
    for (int k = 0; k < s->ns; k++) {
        if (pts)
            pts_free(&pts[k]);
        if (hid) {
            free(hid[2 * k]);
            free(hid[2 * k + 1]);
        }
    }
    free(pts);
    free(hid);
    free(c.lo);
    free(c.hi);
    return ok;
}

/* Draws the whole chart on 'cr', a W x H canvas. False when out of memory
 * or stopped. */
static bool draw_chart(cairo_t *cr, const PlotSpec *s, double W, double H)
{
    Area f;
    plot_range(s, &f.r);    /* the caller checked there is a finite point */

    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    /* Ticks: about one per 70 px vertically and one per 85 px across. */
    PlotTicks yt, xt;
    plot_ticks(f.r.ylo, f.r.yhi, (int)fmax(2, (H - 110) / 70), &yt);
    plot_x_ticks(s, &f.r, (int)fmax(2, (W - 160) / 85), &xt);
    char lab[64];

    /* Margins from what has to fit around the plot area. */
    set_font(cr, FONT_TICK, false);
    double ylab_w = 0;
    for (int k = 0; k < yt.count; k++) {
        plot_tick_label(&yt, plot_tick_value(&yt, k), lab, sizeof lab);
        ylab_w = fmax(ylab_w, text_width(cr, lab));
    }
    plot_tick_label(&xt, plot_tick_value(&xt, xt.count - 1), lab, sizeof lab);
    double last_x_half = text_width(cr, lab) / 2;
    double legend_w = 0;
    if (s->legend) {
        set_font(cr, FONT_LEGEND, false);
        for (int k = 0; k < s->ns; k++)
            legend_w = fmax(legend_w, text_width(cr, s->names[k]));
        legend_w += 28 + 8 + 24;  /* sample line, gap, padding */
    }
    double left = 12 + (*s->ylab ? FONT_LABEL + 10 : 0) + ylab_w + 10;
    double top = *s->title ? FONT_TITLE + 26 : 18;
    double bottom = 10 + FONT_TICK + 8 + (*s->xlab ? FONT_LABEL + 12 : 0) + 8;
    double right = fmax(s->legend ? legend_w + 12 : 20, last_x_half + 8);
    f.x0 = left;
    f.y0 = top;
    f.w = fmax(10, W - left - right);
    f.h = fmax(10, H - top - bottom);

    /* Grid at the ticks, then the frame. Lines on half pixels stay crisp. */
    cairo_set_line_width(cr, 1);
    cairo_set_source_rgb(cr, 0.90, 0.90, 0.90);
    for (int k = 0; k < yt.count; k++) {
        double y = floor(fy(&f, plot_tick_value(&yt, k))) + 0.5;
        cairo_move_to(cr, f.x0, y);
        cairo_line_to(cr, f.x0 + f.w, y);
    }
    for (int k = 0; k < xt.count; k++) {
        double x = floor(fx(&f, plot_tick_value(&xt, k))) + 0.5;
        cairo_move_to(cr, x, f.y0);
        cairo_line_to(cr, x, f.y0 + f.h);
    }
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
    cairo_rectangle(cr, floor(f.x0) + 0.5, floor(f.y0) + 0.5, floor(f.w), floor(f.h));
    cairo_stroke(cr);

    /* Tick marks and labels. */
    set_font(cr, FONT_TICK, false);
    for (int k = 0; k < yt.count; k++) {
        double v = plot_tick_value(&yt, k), y = floor(fy(&f, v)) + 0.5;
        cairo_move_to(cr, f.x0 - 5, y);
        cairo_line_to(cr, f.x0, y);
        cairo_stroke(cr);
        plot_tick_label(&yt, v, lab, sizeof lab);
        text_at(cr, lab, f.x0 - 8, y + FONT_TICK * 0.36, 1);
    }
    for (int k = 0; k < xt.count; k++) {
        double v = plot_tick_value(&xt, k), x = floor(fx(&f, v)) + 0.5;
        cairo_move_to(cr, x, f.y0 + f.h);
        cairo_line_to(cr, x, f.y0 + f.h + 5);
        cairo_stroke(cr);
        plot_tick_label(&xt, v, lab, sizeof lab);
        text_at(cr, lab, x, f.y0 + f.h + 8 + FONT_TICK, 0.5);
    }

    /* Title and axis labels. */
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    if (*s->title) {
        set_font(cr, FONT_TITLE, true);
        text_at(cr, s->title, f.x0 + f.w / 2, 12 + FONT_TITLE, 0.5);
    }
    set_font(cr, FONT_LABEL, false);
    if (*s->xlab)
        text_at(cr, s->xlab, f.x0 + f.w / 2, H - 12, 0.5);
    if (*s->ylab) {
        cairo_save(cr);
        cairo_translate(cr, 12 + FONT_LABEL, f.y0 + f.h / 2);
        cairo_rotate(cr, -M_PI / 2);
        text_at(cr, s->ylab, 0, 0, 0.5);
        cairo_restore(cr);
    }

    bool thin = s->n > (int64_t)f.w && x_sorted(s);
    if (!draw_all_series(cr, s, &f, thin))
        return false;

    if (s->legend) {
        double lx = f.x0 + f.w + 14, ly = f.y0 + 4, row = FONT_LEGEND + 9;
        set_font(cr, FONT_LEGEND, false);
        for (int k = 0; k < s->ns && ly + row <= H; k++, ly += row) {
            set_series_style(cr, k, series_dashed(s, &f, k));
            cairo_move_to(cr, lx, ly + row / 2);
            cairo_line_to(cr, lx + 28, ly + row / 2);
            cairo_stroke(cr);
            if (s->n <= MARKER_MAX_POINTS) {
                cairo_arc(cr, lx + 14, ly + row / 2, 3.6, 0, 2 * M_PI);
                cairo_fill(cr);
            }
            cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
            text_at(cr, s->names[k], lx + 36, ly + row / 2 + FONT_LEGEND * 0.36, 0);
        }
    }
    return true;
}

/* cairo's stream callback: the FILE* of the temporary. */
static cairo_status_t write_stream(void *closure, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

bool plot_write_file(const PlotSpec *s, const char *path, DiagErr *err)
{
    Fmt fmt = fmt_of(path);
    if (fmt == FMT_NONE) {
        diag_fail(err, "cannot tell the picture format of '%s': the file name must end in .png, .svg or .pdf",
                  path);
        return false;
    }
    double W = s->width ? s->width : DEFAULT_W, H = s->height ? s->height : DEFAULT_H;
    IoTmp t;
    DiagErr e;
    if (!io_tmp_open(path, &t, &e)) {
        *err = e;
        return false;
    }
    cairo_surface_t *surf;
    switch (fmt) {
#ifdef CAIRO_HAS_SVG_SURFACE
    case FMT_SVG: surf = cairo_svg_surface_create_for_stream(write_stream, t.f, W, H); break;
#endif
#ifdef CAIRO_HAS_PDF_SURFACE
    case FMT_PDF: surf = cairo_pdf_surface_create_for_stream(write_stream, t.f, W, H); break;
#endif
    default: surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H); break;
    }
    cairo_status_t cs = cairo_surface_status(surf);
    bool drawn = true;
    if (cs == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(surf);
        drawn = draw_chart(cr, s, W, H);
        cs = cairo_status(cr);
        cairo_destroy(cr);
    }
    if (!drawn) {
        cairo_surface_finish(surf);
        cairo_surface_destroy(surf);
        io_tmp_abort(&t);
        if (s->stop && atomic_load(s->stop))
            diag_fail(err, "interrupted");
        else
            diag_fail(err, "cannot draw '%s': out of memory", path);
        return false;
    }
    if (cs == CAIRO_STATUS_SUCCESS && fmt == FMT_PNG)
        cs = cairo_surface_write_to_png_stream(surf, write_stream, t.f);
    cairo_surface_finish(surf);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(surf);
    cairo_surface_destroy(surf);
    if (cs != CAIRO_STATUS_SUCCESS) {
        int saved = errno;
        char eb[64];
        io_tmp_abort(&t);
        if (cs == CAIRO_STATUS_WRITE_ERROR && saved)
            diag_fail(err, "cannot write '%s': %s", path, io_strerror(saved, eb, sizeof eb));
        else
            diag_fail(err, "cannot draw '%s': %s", path, cairo_status_to_string(cs));
        return false;
    }
    if (s->stop && atomic_load(s->stop)) {     /* a Ctrl-C while encoding: nothing replaced */
        io_tmp_abort(&t);
        diag_fail(err, "interrupted");
        return false;
    }
    if (!io_tmp_commit(&t, path, &e)) {
        *err = e;
        return false;
    }
    return true;
}

/* cairo's stream callback for plot_render_mem: the StrBuf. */
static cairo_status_t write_sb(void *closure, const unsigned char *data, unsigned int len)
{
    StrBuf *b = closure;
    sb_putn(b, (const char *)data, len);
    return b->oom ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

bool plot_render_mem(const PlotSpec *s, bool svg, StrBuf *b, DiagErr *err)
{
#ifndef CAIRO_HAS_SVG_SURFACE
    if (svg)
        return true;    /* no SVG: nothing appended */
#endif
    double W = s->width ? s->width : DEFAULT_W, H = s->height ? s->height : DEFAULT_H;
    cairo_surface_t *surf;
#ifdef CAIRO_HAS_SVG_SURFACE
    if (svg)
        surf = cairo_svg_surface_create_for_stream(write_sb, b, W, H);
    else
#endif
        surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H);
    cairo_status_t cs = cairo_surface_status(surf);
    if (cs == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(surf);
        draw_chart(cr, s, W, H);
        cs = cairo_status(cr);
        cairo_destroy(cr);
    }
#ifdef CAIRO_HAS_SVG_SURFACE
    if (cs == CAIRO_STATUS_SUCCESS && !svg)
#else
    if (cs == CAIRO_STATUS_SUCCESS)
#endif
        cs = cairo_surface_write_to_png_stream(surf, write_sb, b);
    cairo_surface_finish(surf);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(surf);
    cairo_surface_destroy(surf);
    if (cs != CAIRO_STATUS_SUCCESS) {
        diag_fail(err, "cannot draw the chart: %s", cairo_status_to_string(cs));
        return false;
    }
    return true;
}
