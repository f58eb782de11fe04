/* SPDX-License-Identifier: Apache-2.0
 * Numbers in upstream's text forms (Java's Double.toString and
 * DecimalFormat). Pure functions, thread-safe. */
#ifndef DML_RUNTIME_FMT_H
#define DML_RUNTIME_FMT_H

#include "../base/strbuf.h"

/* Java Double.toString(d): "NaN", "Infinity", "-0.0", "1.0", "0.1",
 * "1.0E-4", "1.2345E7": shortest digits that round-trip; plain notation
 * when 1e-3 <= |d| < 1e7. buf must hold 32 bytes. Returns strlen. */
int fmt_double_java(double d, char *buf);
/* Java Float.toString(f) (upstream's FP32 frame cells): the same layout
 * over the shortest digits that read back as the float ("0.1" for 0.1f,
 * "1.4E-45" for its smallest value). buf must hold 32 bytes. */
int fmt_float_java(float f, char *buf);
/* Java DecimalFormat with exactly 'decimal' fraction digits, HALF_EVEN. */
void fmt_fixed(StrBuf *b, double d, int decimal);
/* What toString's cells get: upstream's `new DecimalFormat()` (at most 3
 * fraction digits) after setMinimumFractionDigits(min_frac), so at least
 * min_frac and at most max(min_frac, 3) digits, trailing zeros past
 * min_frac dropped: min_frac 1 gives 1.0, 2.5, 0.333. */
void fmt_decimal_format(StrBuf *b, double d, int min_frac);

#endif
