/* SPDX-License-Identifier: Apache-2.0
 * The plot() builtin: line charts of the columns of a matrix, written to a
 * PNG/SVG/PDF file or drawn in the terminal, and the axis arithmetic both
 * renderers share (ranges, round tick values, tick labels). Upstream
 * SystemDS has no plot; the name and the arguments are ours (no upstream
 * builtin is called plot, see doc/plot.md).
 *
 *   plot(X, file="", x=, xcol=, title="", xlab="", ylab="", names=, width=, height=)
 *
 * Arguments are checked before anything is drawn; the data is copied into a
 * PlotSpec. Thread-safe: all state is on the stack. */
#include "plot.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"

/* Parameter positions; must follow the 'params' string of the table row. */
enum { P_X, P_FILE, P_XV, P_XCOL, P_TITLE, P_XLAB, P_YLAB, P_NAMES, P_WIDTH, P_HEIGHT };

/* Largest picture side we draw, in pixels or points; in the terminal, in cells. */
enum { PLOT_MAX_SIDE = 10000, PLOT_MAX_CELLS = 1000 };

static void plot_spec_free(PlotSpec *s)
{
    if (s->y)
        for (int i = 0; i < s->ns; i++)
            free(s->y[i]);
    if (s->names)
        for (int i = 0; i < s->ns; i++)
            free(s->names[i]);
    free(s->y);
    free(s->names);
    free(s->x);
    memset(s, 0, sizeof *s);
}

/* ==================================================================
 * axis arithmetic
 * ================================================================== */

/* Contract in plot.h. */
double plot_frac(double v, double lo, double hi)
{
    double span = hi - lo;
    if (isfinite(span))
        return (v - lo) / span;
    /* lo and hi near the ends of the doubles: halves never overflow */
    return (v * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5);
}

/* lo and hi widened by 'frac' of their distance on each side, or, when
 * they are equal, by half their size; never past the largest double, so
 * that 1.7e308 or -1e308 and 1e308 still give a finite axis. */
static void widen(double *lo, double *hi, double frac)
{
    double a = *lo, b = *hi;
    if (a == b) {
        double d = a == 0 ? 1 : fabs(a) * 0.5;
        a -= d;
        b += d;
    } else {
        double pad = b * frac - a * frac;     /* (b - a) * frac, which cannot overflow */
        a -= pad;
        b += pad;
    }
    *lo = fmax(a, -DBL_MAX);
    *hi = fmin(b, DBL_MAX);
}

bool plot_range(const PlotSpec *s, PlotRange *r)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int k = 0; k < s->ns; k++)
        for (int64_t i = 0; i < s->n; i++) {
            double x = s->x[i], y = s->y[k][i];
            if (!isfinite(x) || !isfinite(y))
                continue;
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
        }
    if (!(xlo <= xhi))
        return false;
    /* A flat or single-point axis still needs a width; markers at the ends
     * clear the frame, and curves keep a little air above and below. */
    widen(&xlo, &xhi, 0.02);
    widen(&ylo, &yhi, 0.04);
    r->xlo = xlo;
    r->xhi = xhi;
    r->ylo = ylo;
    r->yhi = yhi;
    return true;
}

/* The round number (1, 2, 5 times a power of ten) nearest to v, v > 0. */
static double nice_step(double v)
{
    double p = pow(10, floor(log10(v)));
    double f = v / p;
    double nf = f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10;
    return nf * p;
}

void plot_ticks(double lo, double hi, int target, PlotTicks *t)
{
    if (target < 1)
        target = 1;
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) {
        t->start = isfinite(lo) ? lo : 0;
        t->step = 1;
        t->count = 1;
        t->decimals = 0;
        return;
    }
    double step = nice_step(hi / target - lo / target);     /* (hi - lo) / target, without overflow */
    if (!(step > 0) || !isfinite(step))
        step = hi - lo;
    /* Tiny tolerance so that lo = 0.1 still gets its tick at 0.1; in
     * steps, as hi + a bit may overflow where hi / step does not. */
    double first = ceil(lo / step - 1e-9);
    double last = floor(hi / step + 1e-9);
    int count = (int)fmin(last - first + 1, 1000);
    if (count < 1)
        count = 1;
    t->start = first * step;
    t->step = step;
    t->count = count;
    double lg = -floor(log10(step) + 1e-9);
    t->decimals = lg > 0 ? (int)lg : 0;
    if (t->decimals > 12)
        t->decimals = 12;
}

void plot_x_ticks(const PlotSpec *s, const PlotRange *r, int target, PlotTicks *t)
{
    plot_ticks(r->xlo, r->xhi, target, t);
    if (t->step >= 1)
        return;
    for (int64_t i = 0; i < s->n; i++)
        if (isfinite(s->x[i]) && s->x[i] != floor(s->x[i]))
            return;
    double first = ceil(r->xlo), last = floor(r->xhi);
    if (last < first)
        return;
    t->start = first;
    t->step = 1;
    t->count = (int)(last - first + 1);
    t->decimals = 0;
}

double plot_tick_value(const PlotTicks *t, int k)
{
    double v = t->start + k * t->step;
    if (!isfinite(v))       /* k * step past the largest double; the sum is not */
        v = (t->start * 0.5 + k * (t->step * 0.5)) * 2;
    /* start + k*step can land at 1e-17 instead of 0. */
    if (fabs(v) < t->step * 1e-9)
        v = 0;
    return v;
}

void plot_tick_label(const PlotTicks *t, double v, char *buf, size_t cap)
{
    double mag = fmax(fabs(t->start), fabs(plot_tick_value(t, t->count - 1)));
    if (mag >= 1e7 || (t->step < 1e-5 && mag > 0))
        snprintf(buf, cap, "%g", v);
    else
        snprintf(buf, cap, "%.*f", t->decimals, v);
    if (strcmp(buf, "-0") == 0 || (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1)))
        memmove(buf, buf + 1, strlen(buf));     /* "-0.00" -> "0.00" */
}

/* ==================================================================
 * the builtin
 * ================================================================== */

/* Series names: a list of strings, or one comma-separated string. */
static Status take_names(Interp *I, const BArgs *a, PlotSpec *s)
{
    int given = 0;
    if (a->v[P_NAMES].kind == VAL_STRING) {
        const char *p = a->v[P_NAMES].s->s;
        for (;;) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            while (n && isspace((unsigned char)*p)) {
                p++;
                n--;
            }
            while (n && isspace((unsigned char)p[n - 1]))
                n--;
            if (given < s->ns && !(s->names[given] = strndup(p, n)))
                return err_set(I, "plot(): out of memory");
            given++;
            if (!e)
                break;
            p = e + 1;
        }
    } else if (a->v[P_NAMES].kind == VAL_LIST) {
        const List *l = a->v[P_NAMES].l;
        for (int64_t i = 0; i < l->n; i++) {
            Value v = l->items[i];
            if (v.kind != VAL_STRING)
                return err_set(I, "plot(): argument 'names' must hold strings, but entry %lld is of type %s",
                               (long long)i + 1, val_kind_name(v.kind));
        }
        for (int64_t i = 0; i < l->n && i < s->ns; i++)
            if (!(s->names[i] = strdup(l->items[i].s->s)))
                return err_set(I, "plot(): out of memory");
        given = l->n > INT32_MAX ? INT32_MAX : (int)l->n;
    } else {
        return arg_type_error(I, a, P_NAMES, "a string or a list of strings");
    }
    if (given != s->ns)
        return err_set(I, "plot(): argument 'names' has %d name%s for %d series", given, given == 1 ? "" : "s",
                       s->ns);
    return ST_OK;
}

static Status check_size(Interp *I, const BArgs *a, int i, int64_t *out)
{
    TRY(arg_int(I, a, i, 0, out));
    if (arg_given(a, i) && (*out < 1 || *out > PLOT_MAX_SIDE)) {
        char nb[16];
        return err_set(I, "plot(): argument '%s' must be between 1 and %d, got %lld", arg_name(a, i, nb, sizeof nb),
                       PLOT_MAX_SIDE, (long long)*out);
    }
    return ST_OK;
}

/* Binds and checks every argument, then copies the data into 's'. */
static Status build_spec(Interp *I, const BArgs *a, PlotSpec *s, const char **file)
{
    Matrix *X;
    TRY(arg_matrix(I, a, P_X, &X));
    TRY(arg_string(I, a, P_FILE, "", file));
    TRY(arg_string(I, a, P_TITLE, "", &s->title));
    TRY(arg_string(I, a, P_XLAB, "", &s->xlab));
    TRY(arg_string(I, a, P_YLAB, "", &s->ylab));
    int64_t w, h, xcol = 0;
    TRY(check_size(I, a, P_WIDTH, &w));
    TRY(check_size(I, a, P_HEIGHT, &h));
    s->width = (int)w;
    s->height = (int)h;
    if (X->rows == 0 || X->cols == 0)
        return err_set(I, "plot(): X is %lldx%lld: there is nothing to plot", (long long)X->rows, (long long)X->cols);
    Matrix *xv = NULL;
    if (arg_given(a, P_XV)) {
        if (arg_given(a, P_XCOL))
            return err_set(I, "plot(): give the x values either as 'x' or as 'xcol', not both");
        TRY(arg_matrix(I, a, P_XV, &xv));
        if (!(xv->cols == 1 || xv->rows == 1) || mat_len(xv) != X->rows)
            return err_set(I, "plot(): argument 'x' must be a vector of %lld values (one per row of X), got %lldx%lld",
                           (long long)X->rows, (long long)xv->rows, (long long)xv->cols);
    }
    if (arg_given(a, P_XCOL)) {
        TRY(arg_int(I, a, P_XCOL, 0, &xcol));
        if (xcol < 1 || xcol > X->cols)
            return err_set(I, "plot(): argument 'xcol' must be a column of X (1..%lld), got %lld", (long long)X->cols,
                           (long long)xcol);
        if (X->cols == 1)
            return err_set(I, "plot(): xcol=1 leaves no column of X to plot");
    }
    if (!**file && (w > PLOT_MAX_CELLS || h > PLOT_MAX_CELLS))
        return err_set(I, "plot(): in the terminal, width and height are at most %d characters", PLOT_MAX_CELLS);
    if (**file && !plot_known_suffix(*file))
        return err_set(I, "plot(): cannot tell the picture format of '%s': the file name must end in .png, .svg "
                       "or .pdf", *file);

    int64_t n = X->rows;
    int ns = (int)(X->cols - (xcol ? 1 : 0));
    if (X->cols - (xcol ? 1 : 0) > 1000)
        return err_set(I, "plot(): X has %lld columns; plot draws at most 1000 series", (long long)X->cols);
    s->n = n;
    s->ns = ns;
    s->x = malloc((size_t)n * sizeof *s->x);
    s->y = calloc((size_t)ns, sizeof *s->y);
    s->names = calloc((size_t)ns, sizeof *s->names);
    if (!s->x || !s->y || !s->names)
        return err_set(I, "plot(): out of memory");
    for (int64_t i = 0; i < n; i++)
        s->x[i] = xv ? xv->data[i] : xcol ? X->data[i * X->cols + (xcol - 1)] : (double)(i + 1);
    for (int k = 0, c = 0; c < X->cols; c++) {
        if (c == xcol - 1)
            continue;
        if (!(s->y[k] = malloc((size_t)n * sizeof(double))))
            return err_set(I, "plot(): out of memory");
        for (int64_t i = 0; i < n; i++)
            s->y[k][i] = X->data[i * X->cols + c];
        k++;
    }
    if (arg_given(a, P_NAMES)) {
        TRY(take_names(I, a, s));
        s->legend = true;
    } else {
        for (int k = 0; k < ns; k++) {
            char nb[24];
            snprintf(nb, sizeof nb, "V%d", k + 1);
            if (!(s->names[k] = strdup(nb)))
                return err_set(I, "plot(): out of memory");
        }
        s->legend = ns > 1;
    }
    return ST_OK;
}

/* No file= and a front end that shows pictures (a notebook): the chart as
 * a PNG and as SVG, handed to I->display. */
static Status show_inline(Interp *I, const PlotSpec *s)
{
    StrBuf png, svg;
    sb_init(&png);
    sb_init(&svg);
    DiagErr e;
    Status st = ST_OK;
    if (!plot_render_mem(s, false, &png, &e) || !plot_render_mem(s, true, &svg, &e)) {
        st = err_set(I, "plot(): %s", e.msg);
    } else {
        DisplayPart parts[2] = {
            {"image/png", (const unsigned char *)png.p, png.len},
            {"image/svg+xml", (const unsigned char *)svg.p, svg.len},
        };
        if (!I->display.show(I->display.ctx, parts, svg.len ? 2 : 1))
            st = err_set(I, "plot(): out of memory");
    }
    sb_free(&png);
    sb_free(&svg);
    return st;
}

static Status bi_plot(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    PlotSpec s;
    memset(&s, 0, sizeof s);
    const char *file = "";
    Status st = build_spec(I, a, &s, &file);
    PlotRange r;
    if (st == ST_OK && !plot_range(&s, &r))
        st = err_set(I, "plot(): X has no finite value to plot (all NaN or infinite)");
    s.stop = I->interrupt;
    if (st == ST_OK && *file) {
        DiagErr e;
        if (!plot_write_file(&s, file, &e))
            st = interp_interrupted(I) ? eval_raise_interrupt(I, a->loc) : err_set(I, "plot(): %s", e.msg);
    } else if (st == ST_OK && I->display.show) {
        st = show_inline(I, &s);
    } else if (st == ST_OK) {
        FILE *f = I->out ? I->out : stdout;
        int cols, rows;
        plot_term_size(f, &cols, &rows);
        if (s.width)
            cols = s.width;
        if (s.height)
            rows = s.height;
        else
            rows--;             /* leave the prompt's line */
        StrBuf b;
        sb_init(&b);
        plot_term_render(&s, cols, rows, isatty(fileno(f)) && !getenv("NO_COLOR"), &b);
        if (b.oom) {
            st = err_set(I, "plot(): out of memory");
        } else {
            flockfile(f);
            fwrite(b.p, 1, b.len, f);
            funlockfile(f);
            fflush(f);
        }
        sb_free(&b);
    }
    plot_spec_free(&s);
    return st;
}

const BuiltinDef bi_plot_table[] = {
    {"plot", bi_plot, "X,file,x,xcol,title,xlab,ylab,names,width,height", 1, BIND_NAMED, 1, BF_STATEMENT},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
