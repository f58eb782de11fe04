/* SPDX-License-Identifier: Apache-2.0
 * plot() in the terminal: the chart drawn with Unicode braille characters,
 * whose 2x4 dots per character cell give eight times the resolution of
 * plain characters, with a y axis of round tick values on the left, an x
 * axis below, the title, axis labels and a legend. Colours (ANSI) only when
 * the caller says the output is a terminal. Thread-safe: no shared state. */
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The bit of dot (col 0..1, row 0..3) within a braille cell (U+2800 + bits). */
static const unsigned char dot_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

/* ANSI colours of the series, close to the picture's palette. */
static const char *const ansi[10] = {
    "\x1b[34m", "\x1b[33m", "\x1b[32m", "\x1b[31m", "\x1b[35m",
    "\x1b[36m", "\x1b[94m", "\x1b[93m", "\x1b[92m", "\x1b[91m",
};
#define ANSI_RESET "\x1b[0m"

void plot_term_size(FILE *f, int *cols, int *rows)
{
    int c = 0, r = 0;
    struct winsize ws;
    if (f && isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0) {
        c = ws.ws_col;
        r = ws.ws_row;
    }
    const char *e;
    if (c <= 0 && (e = getenv("COLUMNS")) && *e)
        c = atoi(e);
    if (r <= 0 && (e = getenv("LINES")) && *e)
        r = atoi(e);
    *cols = c > 0 ? (c < 1000 ? c : 1000) : 80;
    *rows = r > 0 ? (r < 1000 ? r : 1000) : 24;
}

/* Number of characters (code points) of UTF-8 text. */
static int text_len(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void put_spaces(StrBuf *b, int n)
{
    for (int i = 0; i < n; i++)
        sb_putn(b, " ", 1);
}

/* The canvas: a braille bit mask and the series that drew last, per cell. */
typedef struct Canvas {
    int w, h;               /* cells */
    unsigned char *bits;
    signed char *owner;     /* series index mod 100, -1 for none */
} Canvas;

static void set_dot(Canvas *c, long dx, long dy, int series)
{
    if (dx < 0 || dy < 0 || dx >= 2L * c->w || dy >= 4L * c->h)
        return;
    long cell = (dy / 4) * c->w + dx / 2;
    c->bits[cell] |= dot_bit[dy % 4][dx % 2];
    c->owner[cell] = (signed char)(series % 100);
}

/* Bresenham from (x0, y0) to (x1, y1) in dot coordinates. */
static void line(Canvas *c, long x0, long y0, long x1, long y1, int series)
{
    long dx = labs(x1 - x0), dy = -labs(y1 - y0);
    long sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) {
        set_dot(c, x0, y0, series);
        if (x0 == x1 && y0 == y1)
            break;
        long e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

static long dot_x(const Canvas *c, const PlotRange *r, double v)
{
    return lround(plot_frac(v, r->xlo, r->xhi) * (2.0 * c->w - 1));
}

static long dot_y(const Canvas *c, const PlotRange *r, double v)
{
    return lround((1 - plot_frac(v, r->ylo, r->yhi)) * (4.0 * c->h - 1));
}

static void draw_series(Canvas *c, const PlotSpec *s, const PlotRange *r, int k)
{
    bool have = false;
    long px = 0, py = 0;
    for (int64_t i = 0; i < s->n; i++) {
        double x = s->x[i], y = s->y[k][i];
        if (!isfinite(x) || !isfinite(y)) {
            have = false;       /* a gap */
            continue;
        }
        long qx = dot_x(c, r, x), qy = dot_y(c, r, y);
        if (have)
            line(c, px, py, qx, qy, k);
        else
            set_dot(c, qx, qy, k);
        px = qx;
        py = qy;
        have = true;
    }
}

static void put_cell(StrBuf *b, unsigned char bits)
{
    if (!bits) {
        sb_putn(b, " ", 1);
        return;
    }
    unsigned cp = 0x2800u + bits;
    char u[3] = {(char)(0xE0 | (cp >> 12)), (char)(0x80 | ((cp >> 6) & 0x3F)), (char)(0x80 | (cp & 0x3F))};
    sb_putn(b, u, 3);
}

/* 'text' centred within 'width' columns after 'indent' spaces. */
static void put_centred(StrBuf *b, const char *text, int indent, int width)
{
    int n = text_len(text);
    put_spaces(b, indent + (n < width ? (width - n) / 2 : 0));
    sb_puts(b, text);
    sb_putn(b, "\n", 1);
}

/* The canvas rows, each after its y-axis cell: a tick label and '┤' on the
 * rows in tick_row (the tick's index, -1 for none), else '│'; lw is the
 * widest label. */
static void put_canvas_rows(StrBuf *b, const Canvas *c, const PlotTicks *yt, const int *tick_row, int lw,
                            bool color)
{
    char lab[64];
    for (int i = 0; i < c->h; i++) {
        if (tick_row[i] >= 0) {
            plot_tick_label(yt, plot_tick_value(yt, tick_row[i]), lab, sizeof lab);
            put_spaces(b, lw - (int)strlen(lab));
            sb_puts(b, lab);
            sb_puts(b, " \xe2\x94\xa4");        /* ┤ */
        } else {
            put_spaces(b, lw + 1);
            sb_puts(b, "\xe2\x94\x82");         /* │ */
        }
        int cur = -1;
        for (int j = 0; j < c->w; j++) {
            long cell = (long)i * c->w + j;
            int o = c->bits[cell] ? c->owner[cell] : -1;
            if (color && o >= 0 && o != cur) {
                sb_puts(b, ansi[o % 10]);
                cur = o;
            }
            put_cell(b, c->bits[cell]);
        }
        if (color && cur >= 0)
            sb_puts(b, ANSI_RESET);
        sb_putn(b, "\n", 1);
    }
}

/* The x axis with its tick marks, then the labels centred under them (a
 * label that would overlap the previous one is left out). False when out
 * of memory. */
static bool put_x_axis(StrBuf *b, const Canvas *c, const PlotRange *r, const PlotTicks *xt, int lw, int cols)
{
    int w = c->w;
    char *under = malloc((size_t)w + 2);
    char *labels = malloc((size_t)cols + (size_t)w + 64);
    if (!under || !labels) {
        free(under);
        free(labels);
        return false;
    }
    memset(under, 0, (size_t)w + 2);
    int lablen = lw + 2 + w + 2;
    memset(labels, ' ', (size_t)lablen);
    int used_to = 0;    /* first free column of the label line */
    char lab[64];
    for (int k = 0; k < xt->count; k++) {
        double v = plot_tick_value(xt, k);
        long col = dot_x(c, r, v) / 2;
        if (col < 0 || col >= w)
            continue;
        under[col] = 1;
        plot_tick_label(xt, v, lab, sizeof lab);
        int n = (int)strlen(lab);
        int at = lw + 2 + (int)col - n / 2;
        if (at < used_to || at + n > lablen)
            continue;
        memcpy(labels + at, lab, (size_t)n);
        used_to = at + n + 1;
    }
    put_spaces(b, lw + 1);
    sb_puts(b, "\xe2\x94\x94");         /* └ */
    for (int j = 0; j < w; j++)
        sb_puts(b, under[j] ? "\xe2\x94\xac" : "\xe2\x94\x80");     /* ┬ ─ */
    sb_putn(b, "\n", 1);
    int end = lablen;
    while (end > 0 && labels[end - 1] == ' ')
        end--;
    sb_putn(b, labels, (size_t)end);
    sb_putn(b, "\n", 1);
    free(under);
    free(labels);
    return true;
}

/* One line: each series' line sample ('━━', in its colour) and name. */
static void put_legend(StrBuf *b, const PlotSpec *s, int indent, bool color)
{
    put_spaces(b, indent);
    for (int k = 0; k < s->ns; k++) {
        if (k)
            sb_puts(b, "   ");
        if (color)
            sb_puts(b, ansi[k % 10]);
        sb_puts(b, "\xe2\x94\x81\xe2\x94\x81");     /* ━━ */
        if (color)
            sb_puts(b, ANSI_RESET);
        sb_putn(b, " ", 1);
        sb_puts(b, s->names[k]);
    }
    sb_putn(b, "\n", 1);
}

void plot_term_render(const PlotSpec *s, int cols, int rows, bool color, StrBuf *b)
{
    PlotRange r;
    if (!plot_range(s, &r))
        return;
    int extra = (*s->title ? 1 : 0) + (*s->ylab ? 1 : 0) + 2 + (*s->xlab ? 1 : 0) + (s->legend ? 1 : 0);
    int h = rows - extra;
    if (h < 3)
        h = 3;
    PlotTicks yt, xt;
    plot_ticks(r.ylo, r.yhi, h / 3 > 2 ? h / 3 : 2, &yt);
    char lab[64];
    int lw = 0;
    for (int k = 0; k < yt.count; k++) {
        plot_tick_label(&yt, plot_tick_value(&yt, k), lab, sizeof lab);
        int n = (int)strlen(lab);
        lw = n > lw ? n : lw;
    }
    int w = cols - lw - 2 - 2;      /* label, space, axis; room for the last x label */
    if (w < 10)
        w = 10;
    plot_x_ticks(s, &r, w / 9 > 2 ? w / 9 : 2, &xt);   /* a label per ~9 columns */

    Canvas c = {w, h, calloc((size_t)w * h, 1), malloc((size_t)w * h)};
    int *tick_row = c.bits && c.owner ? malloc((size_t)h * sizeof *tick_row) : NULL;
    if (!tick_row) {
        free(c.bits);
        free(c.owner);
        b->oom = true;
        return;
    }
    memset(c.owner, -1, (size_t)w * h);
    for (int k = 0; k < s->ns; k++)
        draw_series(&c, s, &r, k);

    /* The text row of each y tick (-1: none; two ticks in a row keep the first). */
    for (int i = 0; i < h; i++)
        tick_row[i] = -1;
    for (int k = 0; k < yt.count; k++) {
        long row = dot_y(&c, &r, plot_tick_value(&yt, k)) / 4;
        if (row >= 0 && row < h && tick_row[row] < 0)
            tick_row[row] = k;
    }

    if (*s->title)
        put_centred(b, s->title, lw + 2, w);
    if (*s->ylab) {
        sb_puts(b, s->ylab);
        sb_putn(b, "\n", 1);
    }
    put_canvas_rows(b, &c, &yt, tick_row, lw, color);
    if (!put_x_axis(b, &c, &r, &xt, lw, cols)) {
        b->oom = true;
    } else {
        if (*s->xlab)
            put_centred(b, s->xlab, lw + 2, w);
        if (s->legend)
            put_legend(b, s, lw + 2, color);
    }
    free(tick_row);
    free(c.bits);
    free(c.owner);
}
