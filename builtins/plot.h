/* SPDX-License-Identifier: Apache-2.0
 * Line charts for the plot() builtin: the chart description shared by the
 * two renderers (plot_cairo.c: PNG, SVG, PDF files through cairo;
 * plot_term.c: Unicode braille in a terminal) and the axis arithmetic they
 * both use. A PlotSpec owns copies of the data, so rendering never touches a
 * DML value. Pure functions of their inputs; thread-safe. */
#ifndef DML_BUILTINS_PLOT_H
#define DML_BUILTINS_PLOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/diag.h"
#include "../base/strbuf.h"

typedef struct PlotSpec {
    int64_t n;              /* points per series */
    int ns;                 /* number of series */
    double *x;              /* n x values, increasing or not; never NULL */
    double **y;             /* ns arrays of n values; NaN/Inf leave a gap */
    char **names;           /* ns series names (legend) */
    bool legend;            /* draw the legend (several series, or names given) */
    const char *title, *xlab, *ylab;    /* "" when absent; borrowed */
    int width, height;      /* pixels (PNG) or points (SVG/PDF); cells (terminal); 0 = default */
    const atomic_int *stop; /* drawing stops once it is set (Ctrl-C); may be NULL */
} PlotSpec;


/* The data range of the chart, made non-empty and padded by a little so
 * that curves do not run along the frame. */
typedef struct PlotRange {
    double xlo, xhi, ylo, yhi;
} PlotRange;
/* False when no series has a finite point (nothing to draw). The range
 * is finite even for data at the ends of the doubles (+-1e308). */
bool plot_range(const PlotSpec *s, PlotRange *r);
/* (v - lo) / (hi - lo), also where hi - lo overflows (lo = -1e308,
 * hi = 1e308): where v lies between lo (0) and hi (1). */
double plot_frac(double v, double lo, double hi);

/* Ticks at "nice" round values (1, 2 or 5 times a power of ten) covering
 * [lo, hi] with about 'target' intervals: the first tick is start, then
 * start + k*step for k < count, every one within [lo, hi]. */
typedef struct PlotTicks {
    double start, step;
    int count;
    int decimals;           /* digits after the point that show the step */
} PlotTicks;
void plot_ticks(double lo, double hi, int target, PlotTicks *t);
/* The x axis's ticks: as plot_ticks, but never between whole numbers when
 * every x is one (epochs, steps). */
void plot_x_ticks(const PlotSpec *s, const PlotRange *r, int target, PlotTicks *t);
/* The label of tick value v ("0", "0.25", "1e+06"). */
void plot_tick_label(const PlotTicks *t, double v, char *buf, size_t cap);
/* Value of tick k (k < t->count); exactly 0 where it should be. */
double plot_tick_value(const PlotTicks *t, int k);

/* Renders the chart to 'path' in the format its suffix names (.png, .svg,
 * .pdf, any case), written to a temporary next to it and renamed, so an
 * error leaves no half-written file. False with 'err' set on failure. */
bool plot_write_file(const PlotSpec *s, const char *path, DiagErr *err);
/* Renders the chart into memory, appended to 'b': an SVG document when
 * 'svg' (nothing when cairo has no SVG), else a PNG. False with 'err'
 * set on failure. */
bool plot_render_mem(const PlotSpec *s, bool svg, StrBuf *b, DiagErr *err);
/* True when 'path' ends in a suffix plot_write_file knows. */
bool plot_known_suffix(const char *path);

/* Appends the chart drawn with braille dots to 'b': 'cols' x 'rows' is the
 * whole area in character cells; 'color' adds ANSI colours. */
void plot_term_render(const PlotSpec *s, int cols, int rows, bool color, StrBuf *b);
/* The size of the terminal behind 'f' (ioctl), else $COLUMNS/$LINES, else 80x24. */
void plot_term_size(FILE *f, int *cols, int *rows);

#endif
