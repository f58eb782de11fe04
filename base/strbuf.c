/* SPDX-License-Identifier: Apache-2.0
 * StrBuf: the growable byte buffer (contract in strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(StrBuf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

void sb_free(StrBuf *b)
{
    free(b->p);
    sb_init(b);
}

/* Room for n more bytes plus a NUL; false (and 'oom' set) if impossible. */
static bool sb_reserve(StrBuf *b, size_t n)
{
    if (b->oom)
        return false;
    if (n > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) {
        b->oom = true;
        return false;
    }
    b->p = q;
    b->cap = cap;
    return true;
}

/* Append s[0..n). After a failed allocation further appends are ignored
 * and 'oom' stays set, so callers check once at the end. */
void sb_putn(StrBuf *b, const char *s, size_t n)
{
    if (!sb_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_puts(StrBuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[128];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        sb_putn(b, small, (size_t)n);
    } else if (sb_reserve(b, (size_t)n)) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

/* Contract in strbuf.h. The StrBuf is left empty (and reusable) either way. */
Str *sb_to_str(StrBuf *b)
{
    Str *s = b->oom ? NULL : str_new(b->p, b->len);
    sb_free(b);
    return s;
}
