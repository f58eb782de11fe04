/* SPDX-License-Identifier: Apache-2.0
 * Java's number grammar (numparse.h). */
#include "numparse.h"

#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return (unsigned)(c - '0') < 10; }

/* Contract in numparse.h. */
bool num_parse_double(const char *s, size_t n, double *out)
{
    const char *b = s, *e = s + n;
    while (b < e && (unsigned char)*b <= ' ')
        b++;
    while (e > b && (unsigned char)e[-1] <= ' ')
        e--;
    const char *p = b;
    if (p < e && (*p == '+' || *p == '-'))
        p++;
    if (e - p == 3 && memcmp(p, "NaN", 3) == 0) {
        *out = __builtin_nan("");
        return true;
    }
    if (e - p == 8 && memcmp(p, "Infinity", 8) == 0) {
        *out = *b == '-' ? -__builtin_inf() : __builtin_inf();
        return true;
    }
    if (p >= e || !(is_digit(*p) || *p == '.'))
        return false;
    bool hex = e - p > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    if (hex && !memchr(p, 'p', (size_t)(e - p)) && !memchr(p, 'P', (size_t)(e - p)))
        return false;
    if (!hex) {
        /* digits [. digits] [e [+-] digits] [suffix]: checked here, so
         * strtod's wider grammar ("1e", "infinity") never leaks through */
        const char *q = p;
        bool digits = false;
        while (q < e && is_digit(*q))
            q++, digits = true;
        if (q < e && *q == '.')
            for (q++; q < e && is_digit(*q); q++)
                digits = true;
        if (!digits)
            return false;
        if (q < e && (*q == 'e' || *q == 'E')) {
            q++;
            if (q < e && (*q == '+' || *q == '-'))
                q++;
            if (q >= e || !is_digit(*q))
                return false;
            while (q < e && is_digit(*q))
                q++;
        }
        if (q < e && (*q == 'f' || *q == 'F' || *q == 'd' || *q == 'D'))
            q++;
        if (q != e)
            return false;
    }
    size_t len = (size_t)(e - b);
    char small[128];
    char *tmp = len < sizeof small ? small : malloc(len + 1);
    if (!tmp)
        return false;
    memcpy(tmp, b, len);
    tmp[len] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    bool ok = end != tmp;
    if (ok && *end && !end[1] && strchr("fFdD", *end))
        end++;
    ok = ok && *end == '\0';
    if (tmp != small)
        free(tmp);
    if (ok)
        *out = v;
    return ok;
}

/* Contract in numparse.h. */
bool num_parse_long(const char *s, size_t n, int64_t *out)
{
    const char *p = s, *e = s + n;
    if (p == e)
        return false;
    bool neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    if (p == e)
        return false;
    uint64_t v = 0, lim = neg ? UINT64_C(9223372036854775808) : UINT64_C(9223372036854775807);
    for (; p < e; p++) {
        if (!is_digit(*p))
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}
