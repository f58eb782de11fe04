/* SPDX-License-Identifier: Apache-2.0
 * toString() as upstream SystemDS writes it: scalars, the layout of
 * matrices and lists (numbers in fmt.c's forms), and the REPL's display of
 * a matrix. Pure functions over their arguments; safe from any thread. */
#include "tostring.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sparse.h"
#include "fmt.h"
#include "frame.h"

/* ==================================================================
 * toString
 * ================================================================== */

void tostring_defaults(ToStringOpts *o)
{
    o->rows = 100;
    o->cols = 100;
    o->decimal = 3;
    o->sparse = false;
    o->sep = " ";
    o->linesep = "\n";
}

/* Contract in tostring.h. */
void tostring_scalar_sb(StrBuf *b, Value v)
{
    char buf[32];
    switch (v.kind) {
    case VAL_BOOL:
        sb_puts(b, v.b ? "TRUE" : "FALSE");
        break;
    case VAL_INT:
        sb_printf(b, "%lld", (long long)v.i);
        break;
    case VAL_DOUBLE:
        sb_putn(b, buf, (size_t)fmt_double_java(v.d, buf));
        break;
    case VAL_STRING:
        sb_putn(b, v.s->s, (size_t)v.s->len);
        break;
    default:
        break;
    }
}

static void matrix_tostring_sb(StrBuf *b, const Matrix *m, const ToStringOpts *o)
{
    int64_t rows = m->rows < o->rows ? m->rows : o->rows;
    int64_t cols = m->cols < o->cols ? m->cols : o->cols;
    if (rows < 0)
        rows = 0;
    if (cols < 0)
        cols = 0;
    const char *sep = o->sep ? o->sep : " ";
    const char *linesep = o->linesep ? o->linesep : "\n";
    size_t seplen = strlen(sep), linelen = strlen(linesep);
    for (int64_t i = 0; i < rows && !b->oom; i++) {
        if (m->sp) {
            /* a sparse matrix row by row: its non-zeros, zeros between (no
             * dense copy of a matrix that may not fit) */
            const SpMat *S = m->sp;
            int64_t p = S->rowptr[i], pe = S->rowptr[i + 1];
            if (o->sparse) {
                for (; p < pe && S->colidx[p] < cols; p++) {
                    sb_printf(b, "%lld", (long long)(i + 1));
                    sb_putn(b, sep, seplen);
                    sb_printf(b, "%lld", (long long)(S->colidx[p] + 1));
                    sb_putn(b, sep, seplen);
                    fmt_decimal_format(b, S->vals[p], o->decimal);
                    sb_putn(b, linesep, linelen);
                }
                continue;
            }
            for (int64_t j = 0; j < cols; j++) {
                if (j)
                    sb_putn(b, sep, seplen);
                double x = p < pe && S->colidx[p] == j ? S->vals[p++] : 0.0;
                fmt_decimal_format(b, x, o->decimal);
            }
            sb_putn(b, linesep, linelen);
            continue;
        }
        const double *row = m->data + i * m->cols;
        if (o->sparse) {
            for (int64_t j = 0; j < cols; j++) {
                if (row[j] == 0)
                    continue;
                sb_printf(b, "%lld", (long long)(i + 1));
                sb_putn(b, sep, seplen);
                sb_printf(b, "%lld", (long long)(j + 1));
                sb_putn(b, sep, seplen);
                fmt_decimal_format(b, row[j], o->decimal);
                sb_putn(b, linesep, linelen);
            }
        } else {
            for (int64_t j = 0; j < cols; j++) {
                if (j)
                    sb_putn(b, sep, seplen);
                fmt_decimal_format(b, row[j], o->decimal);
            }
            sb_putn(b, linesep, linelen);
        }
    }
}

/* Contract in tostring.h. Nested lists are walked with an explicit stack of
 * (list, next item) so any depth the script built prints without
 * recursion; if that stack cannot grow, the buffer is marked out of memory. */
void tostring_value_sb(StrBuf *b, Value v, const ToStringOpts *o)
{
    if (v.kind == VAL_MATRIX) {
        matrix_tostring_sb(b, v.m, o);
        return;
    }
    if (v.kind == VAL_FRAME) {
        frame_tostring_sb(b, v.f, o);
        return;
    }
    if (v.kind != VAL_LIST) {
        tostring_scalar_sb(b, v);
        return;
    }
    typedef struct Pos { const List *l; int64_t i; } Pos;
    Pos small[16], *st = small;
    size_t n = 0, cap = 16;
    st[n++] = (Pos){v.l, 0};
    sb_puts(b, "List containing:\n[");
    while (n > 0 && !b->oom) {
        Pos *p = &st[n - 1];
        if (p->i == p->l->n) {
            sb_puts(b, "]");
            n--;
            continue;
        }
        int64_t i = p->i++;
        if (i)
            sb_puts(b, ", ");
        Value e = p->l->items[i];
        if (e.kind == VAL_MATRIX) {
            sb_puts(b, "\nMatrix:\n");
            matrix_tostring_sb(b, e.m, o);
        } else if (e.kind == VAL_FRAME) {
            sb_puts(b, "\nFrame:\n");
            frame_tostring_sb(b, e.f, o);
        } else if (e.kind == VAL_LIST) {
            if (n == cap) {
                Pos *g = st == small ? malloc(sizeof *g * cap * 2) : realloc(st, sizeof *g * cap * 2);
                if (!g) {
                    b->oom = true;
                    break;
                }
                if (st == small)
                    memcpy(g, small, sizeof small);
                st = g;
                cap *= 2;
            }
            st[n++] = (Pos){e.l, 0};
            sb_puts(b, "List containing:\n[");
        } else {
            tostring_scalar_sb(b, e);
        }
    }
    if (st != small)
        free(st);
}

Status tostring_value(Interp *I, Value v, const ToStringOpts *o, Str **out)
{
    StrBuf b;
    sb_init(&b);
    tostring_value_sb(&b, v, o);
    if (b.oom) {
        sb_free(&b);
        return err_set(I, "out of memory in toString()");
    }
    *out = sb_to_str(&b);
    if (!*out)
        return err_set(I, "out of memory in toString()");
    return ST_OK;
}

/* ==================================================================
 * REPL display (not upstream's: scripts never see it)
 * ================================================================== */

/* A nonzero finite cell that the 3-decimal form would show as 0.000 (or
 * -0.000)? Then the whole matrix is shown with significant digits. */
static bool needs_sig_digits(const Matrix *m, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double x = mat_get(m, i, j);
            if (x != 0 && isfinite(x) && fabs(x) < 0.0005)
                return true;
        }
    return false;
}

/* Contract in tostring.h. */
void tostring_matrix_display_sb(StrBuf *b, const Matrix *m, int64_t maxrows, int64_t maxcols)
{
    int64_t rows = m->rows < maxrows ? m->rows : maxrows;
    int64_t cols = m->cols < maxcols ? m->cols : maxcols;
    sb_printf(b, "[%lld x %lld matrix]\n", (long long)m->rows, (long long)m->cols);
    if (!needs_sig_digits(m, rows, cols)) {
        ToStringOpts o;
        tostring_defaults(&o);
        o.rows = rows;
        o.cols = cols;
        matrix_tostring_sb(b, m, &o);
    } else {
        /* Four significant digits, right-aligned to the widest cell. */
        int width = 1;
        char cell[40];
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int n = snprintf(cell, sizeof cell, "%.4g", mat_get(m, i, j));
                if (n > width)
                    width = n;
            }
        for (int64_t i = 0; i < rows && !b->oom; i++) {
            for (int64_t j = 0; j < cols; j++) {
                double x = mat_get(m, i, j);
                snprintf(cell, sizeof cell, "%.4g", x == 0 ? 0.0 : x);
                sb_printf(b, "%s%*s", j ? " " : "", width, cell);
            }
            sb_puts(b, "\n");
        }
    }
    if (rows < m->rows || cols < m->cols) {
        sb_printf(b, "... showing %lld of %lld rows and %lld of %lld columns", (long long)rows,
                  (long long)m->rows, (long long)cols, (long long)m->cols);
        if (rows < m->rows)
            sb_printf(b, "; X[%lld:%lld, ] shows more\n", (long long)rows + 1,
                      (long long)(m->rows < 2 * rows ? m->rows : 2 * rows));
        else
            sb_printf(b, "; X[, %lld:%lld] shows more\n", (long long)cols + 1,
                      (long long)(m->cols < 2 * cols ? m->cols : 2 * cols));
    }
}

/* Contract in tostring.h. */
void tostring_matrix_html_sb(StrBuf *b, const Matrix *m, int64_t maxrows, int64_t maxcols)
{
    int64_t rows = m->rows < maxrows ? m->rows : maxrows;
    int64_t cols = m->cols < maxcols ? m->cols : maxcols;
    bool sig = needs_sig_digits(m, rows, cols);
    sb_printf(b, "<table class=\"dml-matrix\">\n<caption>%lld x %lld matrix</caption>\n<thead><tr><th></th>",
              (long long)m->rows, (long long)m->cols);
    for (int64_t j = 0; j < cols; j++)
        sb_printf(b, "<th>[,%lld]</th>", (long long)j + 1);
    if (cols < m->cols)
        sb_puts(b, "<th>&hellip;</th>");
    sb_puts(b, "</tr></thead>\n<tbody>\n");
    for (int64_t i = 0; i < rows && !b->oom; i++) {
        sb_printf(b, "<tr><th>[%lld,]</th>", (long long)i + 1);
        for (int64_t j = 0; j < cols; j++) {
            double x = mat_get(m, i, j);
            sb_puts(b, "<td>");
            if (sig)
                sb_printf(b, "%.4g", x == 0 ? 0.0 : x);
            else
                fmt_fixed(b, x, 3);
            sb_puts(b, "</td>");
        }
        if (cols < m->cols)
            sb_puts(b, "<td>&hellip;</td>");
        sb_puts(b, "</tr>\n");
    }
    sb_puts(b, "</tbody>\n</table>\n");
    if (rows < m->rows || cols < m->cols)
        sb_printf(b, "<p>showing %lld of %lld rows and %lld of %lld columns</p>\n", (long long)rows,
                  (long long)m->rows, (long long)cols, (long long)m->cols);
}
