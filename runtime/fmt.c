/* SPDX-License-Identifier: Apache-2.0
 * Numbers as upstream SystemDS writes them: Java's Double.toString (JDK 19+
 * rule: shortest round-tripping digits, closest to the exact value) and
 * DecimalFormat-style fixed notation for toString() cells.
 * Pure functions over their arguments; safe from any thread. Assumes the
 * C locale for LC_NUMERIC (snprintf/strtod use '.'); nothing in dml calls
 * setlocale, and nothing may switch LC_NUMERIC. */
#include "fmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==================================================================
 * shortest round-tripping decimal digits
 * ================================================================== */

/* A positive finite double written as 0.d1d2...dn x 10^(exp+1), i.e. the
 * value is d1.d2...dn x 10^exp. 'dig' holds n ASCII digits, no trailing zeros. */
typedef struct Decimal {
    char dig[24];
    int n;
    int exp;
} Decimal;

/* Parse the output of "%.*e" ("d.ddde[+-]XX") into d. */
static void decimal_from_e(const char *s, Decimal *d)
{
    d->n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            d->dig[d->n++] = *s;
    d->exp = *s == 'e' ? atoi(s + 1) : 0;
    while (d->n > 1 && d->dig[d->n - 1] == '0')
        d->n--;
    d->dig[d->n] = '\0';
}

/* Whether the decimal s reads back as x: as a double, or, with 'fl', as
 * a float (x then holds a float's value). */
static bool round_trips(const char *s, double x, bool fl)
{
    return fl ? (double)strtof(s, NULL) == x : strtod(s, NULL) == x;
}

/* At a power of two the rounding interval is twice as wide above as below,
 * so the correctly rounded p-digit decimal can miss it while its upper or
 * lower neighbour lands inside. Tries both; true (and fills d) on success. */
static bool try_neighbours(double x, const char *e_form, Decimal *d, bool fl)
{
    unsigned long long mant = 0;
    int nd = 0;
    const char *s = e_form;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') {
            mant = mant * 10 + (unsigned long long)(*s - '0');
            nd++;
        }
    int e = atoi(s + 1) - (nd - 1);     /* value = mant x 10^e */
    for (int dir = -1; dir <= 1; dir += 2) {
        unsigned long long m = mant + (unsigned long long)(long long)dir;
        if (m == 0)
            continue;
        char buf[48];
        snprintf(buf, sizeof buf, "%llue%d", m, e);
        if (!round_trips(buf, x, fl))
            continue;
        /* Re-express as d1.d2... x 10^exp. */
        char digs[24];
        int n = snprintf(digs, sizeof digs, "%llu", m);
        d->exp = e + n - 1;
        memcpy(d->dig, digs, (size_t)n + 1);
        d->n = n;
        while (d->n > 1 && d->dig[d->n - 1] == '0')
            d->n--;
        d->dig[d->n] = '\0';
        return true;
    }
    return false;
}

/* "%.{p-1}e" of x into buf; true when it reads back as x. */
static bool digits_round_trip(double x, int p, char *buf, size_t size, bool fl)
{
    snprintf(buf, size, "%.*e", p - 1, x);
    return round_trips(buf, x, fl);
}

/* Shortest decimal that reads back as x (x > 0, finite), choosing the one
 * closest to x among those of that length; when one digit would do, Java
 * still considers two digits (that is why MIN_VALUE prints as 4.9E-324,
 * not 5.0E-324). glibc's "%.*e" rounds the exact binary value correctly.
 * With 'fl', x holds a float and the digits are the shortest that read
 * back as that float (Java's Float.toString). */
static void shortest_decimal(double x, Decimal *d, bool fl)
{
    char buf[48];
    int maxp = fl ? 9 : 17;
    if (x < (fl ? 0x1p24 : 0x1p53) && x == floor(x)) {
        /* An integer below 2^53 is its own shortest form: every decimal
         * with fewer significant digits is at least 1 away, more than the
         * half-ulp (<= 0.5) that would still round to x. */
        int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)x);
        d->exp = n - 1;
        memcpy(d->dig, buf, (size_t)n + 1);
        d->n = n;
        while (d->n > 1 && d->dig[d->n - 1] == '0')
            d->n--;
        d->dig[d->n] = '\0';
        return;
    }
    int mexp;
    int p;
    if (frexp(x, &mexp) == 0.5) {
        /* A power of two: the rounding interval is lopsided, so "p digits
         * round-trip" need not be monotone in p; scan upwards. */
        for (p = 1; p < maxp; p++) {
            if (digits_round_trip(x, p, buf, sizeof buf, fl))
                break;
            if (try_neighbours(x, buf, d, fl))
                return;
        }
    } else {
        /* Symmetric interval: if the closest p-digit decimal reads back,
         * so does the closest (p+1)-digit one (it is no farther from x).
         * Binary search for the least p: 4-5 conversions instead of <= 17. */
        int lo = 1, hi = maxp;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (digits_round_trip(x, mid, buf, sizeof buf, fl))
                hi = mid;
            else
                lo = mid + 1;
        }
        p = lo;
    }
    if (p == 1) {
        snprintf(buf, sizeof buf, "%.1e", x);
        if (round_trips(buf, x, fl)) {
            decimal_from_e(buf, d);
            return;
        }
    }
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    decimal_from_e(buf, d);
}

/* Java's Double.toString (fl false) or Float.toString (fl true, x holds
 * a float's value): the same layout over the shortest digits. */
static int java_form(double x, char *buf, bool fl)
{
    if (isnan(x))
        return (int)(strcpy(buf, "NaN"), 3);
    if (isinf(x))
        return x > 0 ? (int)(strcpy(buf, "Infinity"), 8) : (int)(strcpy(buf, "-Infinity"), 9);
    char *p = buf;
    if (signbit(x)) {
        *p++ = '-';
        x = -x;
    }
    if (x == 0) {
        strcpy(p, "0.0");
        return (int)(p - buf) + 3;
    }
    Decimal d;
    shortest_decimal(x, &d, fl);
    if (d.exp >= 0 && d.exp < 7) {
        /* Plain, integer part d1..d(exp+1) padded with zeros. */
        for (int i = 0; i <= d.exp; i++)
            *p++ = i < d.n ? d.dig[i] : '0';
        *p++ = '.';
        if (d.n > d.exp + 1)
            for (int i = d.exp + 1; i < d.n; i++)
                *p++ = d.dig[i];
        else
            *p++ = '0';
    } else if (d.exp < 0 && d.exp >= -3) {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -d.exp - 1; i++)
            *p++ = '0';
        for (int i = 0; i < d.n; i++)
            *p++ = d.dig[i];
    } else {
        *p++ = d.dig[0];
        *p++ = '.';
        if (d.n > 1)
            for (int i = 1; i < d.n; i++)
                *p++ = d.dig[i];
        else
            *p++ = '0';
        p += sprintf(p, "E%d", d.exp);
    }
    *p = '\0';
    return (int)(p - buf);
}

/* Contract in fmt.h. */
int fmt_double_java(double x, char *buf)
{
    return java_form(x, buf, false);
}

/* Contract in fmt.h. */
int fmt_float_java(float x, char *buf)
{
    return java_form((double)x, buf, true);
}

/* ==================================================================
 * fixed notation (java.text.DecimalFormat, HALF_EVEN, no grouping)
 * ================================================================== */

/* DecimalFormat works from the shortest digits of Double.toString and
 * rounds them, consulting the exact binary value only to break a "5" tie.
 * That equals rounding the exact value (which glibc's "%.*f" does, ties to
 * even in the default rounding mode) whenever rounding cuts into the
 * shortest digits; when it does not, DecimalFormat shows the shortest
 * digits padded with zeros (1e23 -> "100000000000000000000000.000", not
 * glibc's "99999999999999991611392.000"). */
void fmt_fixed(StrBuf *b, double x, int decimal)
{
    if (isnan(x)) {
        sb_puts(b, "NaN");
        return;
    }
    if (isinf(x)) {
        sb_puts(b, x > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (decimal < 0)
        decimal = 0;
    if (decimal > 340)
        decimal = 340;
    if (x == 0) {
        /* Both zeros print unsigned (upstream maps -0.0 to 0.0). */
        sb_putn(b, "0", 1);
        if (decimal > 0) {
            sb_putn(b, ".", 1);
            for (int i = 0; i < decimal; i++)
                sb_putn(b, "0", 1);
        }
        return;
    }
    /* Fast path: when ulp(x) < 10^-decimal the shortest digits can never
     * stop before the last printed place without x being that decimal
     * (then both forms agree), so glibc's exact rounding is DecimalFormat's
     * answer. Covers every ordinary cell; no shortest-digit search. */
    bool fast = fabs(x) < ldexp(1.0, 52) / pow(10.0, decimal);
    Decimal d;
    int frac_digits = 0;
    if (!fast) {
        shortest_decimal(fabs(x), &d, false);
        frac_digits = d.n - 1 - d.exp;      /* digits after the point */
    }
    if (fast || frac_digits > decimal) {
        /* Rounding cuts into the shortest digits: round the exact value.
         * Sign kept even when the result is zero ("-0.000"), as Java does. */
        char small[64];
        int n = snprintf(small, sizeof small, "%.*f", decimal, x);
        if (n >= 0 && (size_t)n < sizeof small) {
            sb_putn(b, small, (size_t)n);
        } else if (n >= 0) {
            char *big = malloc((size_t)n + 1);
            if (!big) {
                b->oom = true;
                return;
            }
            snprintf(big, (size_t)n + 1, "%.*f", decimal, x);
            sb_putn(b, big, (size_t)n);
            free(big);
        }
        return;
    }
    if (x < 0)
        sb_putn(b, "-", 1);
    /* Integer part: digits at positions 0..exp (zero if exp < 0). */
    if (d.exp < 0) {
        sb_putn(b, "0", 1);
    } else {
        for (int i = 0; i <= d.exp; i++)
            sb_putn(b, i < d.n ? &d.dig[i] : "0", 1);
    }
    if (decimal == 0)
        return;
    sb_putn(b, ".", 1);
    /* Fraction digit k (1-based) is digit index exp + k. */
    for (int k = 1; k <= decimal; k++) {
        int i = d.exp + k;
        sb_putn(b, (i >= 0 && i < d.n) ? &d.dig[i] : "0", 1);
    }
}

void fmt_decimal_format(StrBuf *b, double x, int min_frac)
{
    if (min_frac < 0)
        min_frac = 0;
    int max_frac = min_frac < 3 ? 3 : min_frac;
    size_t start = b->len;
    fmt_fixed(b, x, max_frac);
    if (b->oom || max_frac == min_frac)
        return;
    const char *dot = memchr(b->p + start, '.', b->len - start);
    if (!dot)
        return;
    size_t keep = (size_t)(dot - b->p) + 1 + (size_t)min_frac;
    while (b->len > keep && b->p[b->len - 1] == '0')
        b->len--;
    if (min_frac == 0 && b->len == keep)
        b->len--;                       /* no fraction left: drop the point */
    b->p[b->len] = '\0';
}
