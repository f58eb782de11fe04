/* SPDX-License-Identifier: Apache-2.0
 * Upstream-compatible text forms of values: the string form of scalars,
 * toString() of matrices and lists (numbers: fmt.h), and the REPL's
 * display of a matrix. Pure functions, thread-safe. */
#ifndef DML_RUNTIME_TOSTRING_H
#define DML_RUNTIME_TOSTRING_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/strbuf.h"
#include "interp.h"

typedef struct ToStringOpts {
    int64_t rows, cols;     /* default 100, 100 */
    int decimal;            /* default 3 */
    bool sparse;            /* default FALSE */
    const char *sep;        /* default " " */
    const char *linesep;    /* default "\n" */
} ToStringOpts;
void tostring_defaults(ToStringOpts *o);

/* toString(target, ...) of any value as upstream formats it (doc/builtins.md, "toString"). */
Status tostring_value(Interp *I, Value v, const ToStringOpts *o, Str **out);
/* Append the formatted value to b. */
void tostring_value_sb(StrBuf *b, Value v, const ToStringOpts *o);
/* Append a scalar's string form (TRUE/FALSE, an integer, Java's
 * Double.toString, the string itself) to b, as print() and '+' show it. */
void tostring_scalar_sb(StrBuf *b, Value v);
/* How the REPL shows a matrix (never print()/toString(), which keep
 * upstream's form): a "[R x C matrix]" line, at most maxrows x maxcols cells
 * in toString()'s 3-decimal form, or with 4 significant digits when a
 * nonzero cell would show as 0.000, then a line saying what was left out. */
void tostring_matrix_display_sb(StrBuf *b, const Matrix *m, int64_t maxrows, int64_t maxcols);
/* The same display as an HTML table (notebooks): a caption with the
 * dimensions, the cells in the same number form, 1-based row and column
 * headers, and a line saying what was left out. */
void tostring_matrix_html_sb(StrBuf *b, const Matrix *m, int64_t maxrows, int64_t maxcols);

#endif
