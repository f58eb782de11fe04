/* SPDX-License-Identifier: Apache-2.0
 * Upstream-compatible text forms: Java's Double.toString for doubles, the
 * string form of scalars, toString() of matrices and lists. Pure functions,
 * thread-safe. */
#ifndef DML_RUNTIME_PRINT_H
#define DML_RUNTIME_PRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/strbuf.h"
#include "interp.h"

/* Java Double.toString(d): "NaN", "Infinity", "-0.0", "1.0", "0.1",
 * "1.0E-4", "1.2345E7": shortest digits that round-trip; plain notation
 * when 1e-3 <= |d| < 1e7. buf must hold 32 bytes. Returns strlen. */
int fmt_double_java(double d, char *buf);

typedef struct ToStringOpts {
    int64_t rows, cols;     /* default 100, 100 */
    int decimal;            /* default 3 */
    bool sparse;            /* default FALSE */
    const char *sep;        /* default " " */
    const char *linesep;    /* default "\n" */
} ToStringOpts;
void tostring_defaults(ToStringOpts *o);

/* toString(target, ...) of any value as upstream formats it (doc/builtins.md, "toString"). */
Status val_tostring(Interp *I, Value v, const ToStringOpts *o, Str **out);
/* Append the formatted value to b. */
void val_tostring_sb(StrBuf *b, Value v, const ToStringOpts *o);
/* How the REPL shows a matrix (never print()/toString(), which keep
 * upstream's form): a "[R x C matrix]" line, at most maxrows x maxcols cells
 * in toString()'s 3-decimal form, or with 4 significant digits when a
 * nonzero cell would show as 0.000, then a line saying what was left out. */
void matrix_display_sb(StrBuf *b, const Matrix *m, int64_t maxrows, int64_t maxcols);
/* Java DecimalFormat with exactly 'decimal' fraction digits, HALF_EVEN. */
void fmt_fixed(StrBuf *b, double d, int decimal);

#endif
