/* SPDX-License-Identifier: Apache-2.0
 * The number grammar of upstream (Java): one rule for every reader of a
 * number from text (csv and text files, frames, as.double, matrix("...")).
 * Pure functions, thread-safe. */
#ifndef DML_BASE_NUMPARSE_H
#define DML_BASE_NUMPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Java's Double.parseDouble on s[0..n): characters <= ' ' around it are
 * ignored; "NaN", "[+-]Infinity", decimals with an optional exponent, hex
 * with a 'p' exponent, an optional f/F/d/D suffix. Not C's "inf", "nan"
 * or "0x10". True and *out set when s is such a number. */
bool num_parse_double(const char *s, size_t n, double *out);

/* Java's Long.parseLong on s[0..n): an optional sign and decimal digits
 * only, exactly, within [-2^63, 2^63 - 1]. */
bool num_parse_long(const char *s, size_t n, int64_t *out);

#endif
