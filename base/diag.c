/* SPDX-License-Identifier: Apache-2.0
 * Diagnostics: counting characters, finding source lines, drawing the caret,
 * and the progress sink's formatter (diag.h). No state; thread-safe. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== characters ==== */

size_t diag_char(const char *s, size_t n, int32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char b = u[0];
    size_t len = 0;
    int32_t c = -1;
    unsigned char lo = 0x80, hi = 0xBF;     /* allowed range of the second byte */
    if (b < 0x80) {
        if (cp)
            *cp = b;
        return 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
        len = 2, c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, c = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;      /* overlong */
        else if (b == 0xED)
            hi = 0x9F;      /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, c = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;      /* overlong */
        else if (b == 0xF4)
            hi = 0x8F;      /* beyond U+10FFFF */
    }
    if (len == 0 || len > n || u[1] < lo || u[1] > hi) {
        if (cp)
            *cp = -1;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            if (cp)
                *cp = -1;
            return 1;
        }
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (cp)
        *cp = c;
    return len;
}

typedef struct Range { int32_t lo, hi; } Range;

/* Combining marks and zero-width characters (a terminal draws them on the
 * character before). */
static const Range zero_width[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
    {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
    {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F},
    {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF},
};

/* East Asian wide and fullwidth characters, and emoji: two columns. */
static const Range wide[] = {
    {0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0},
    {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F},
    {0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5},
    {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
    {0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728},
    {0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
    {0x27B0, 0x27B0}, {0x27BF, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55},
    {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF},
    {0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE10, 0xFE19}, {0xFE30, 0xFE6F},
    {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF},
    {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A},
    {0x1F200, 0x1F251}, {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB},
    {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

static bool in_ranges(int32_t cp, const Range *r, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

int diag_cp_width(int32_t cp)
{
    if (cp < 0x300)
        return 1;
    if (in_ranges(cp, zero_width, sizeof zero_width / sizeof zero_width[0]))
        return 0;
    if (in_ranges(cp, wide, sizeof wide / sizeof wide[0]))
        return 2;
    return 1;
}

/* ==== lines and carets ==== */

const char *diag_line(const char *text, size_t len, int line, size_t *n)
{
    if (!text || line < 1)
        return NULL;
    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return NULL;
        p = nl + 1;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
        eol = end;
    if (eol > p && eol[-1] == '\r')
        eol--;
    *n = (size_t)(eol - p);
    return p;
}

/* How one character of a source line is shown: the bytes written for it
 * (the character itself, or "?" for a control character or an invalid
 * byte), and the columns it takes. A tab is counted as 8 columns when
 * deciding where to cut a long line; on screen it is copied, both into the
 * line and into the caret line, so that the two agree. */
typedef struct Shown {
    size_t len;             /* bytes of the character in the source */
    const char *out;        /* what to write */
    size_t outlen;
    int width;              /* terminal columns */
    bool tab;
} Shown;

static Shown shown_char(const char *s, size_t n)
{
    Shown c = {0};
    int32_t cp;
    c.len = diag_char(s, n, &cp);
    c.out = s;
    c.outlen = c.len;
    if (cp == '\t') {
        c.tab = true;
        c.width = 8;
    } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {   /* controls, invalid bytes */
        c.out = "?";
        c.outlen = 1;
        c.width = 1;
    } else {
        c.width = diag_cp_width(cp);
    }
    return c;
}

/* snprintf-style appending: counts everything, writes what fits. */
typedef struct Out {
    char *p;
    size_t cap, n;
} Out;

static void put(Out *o, const char *s, size_t n)
{
    if (o->n < o->cap) {
        size_t room = o->cap - 1 - o->n;
        memcpy(o->p + o->n, s, n < room ? n : room);
    }
    o->n += n;
}

static void put_spaces(Out *o, int k)
{
    for (int i = 0; i < k; i++)
        put(o, " ", 1);
}

size_t diag_excerpt(char *out, size_t cap, const char *line, size_t n, int col)
{
    Out o = {out, cap, 0};
    if (col < 1)
        col = 1;

    /* Total width, and the column where the caret goes. */
    long total = 0, caret = 0;
    int nchars = 0;
    for (size_t i = 0; i < n;) {
        Shown c = shown_char(line + i, n - i);
        if (++nchars < col)
            caret += c.width;
        total += c.width;
        i += c.len;
    }
    if (col > nchars + 1)
        col = nchars + 1;

    /* The window [from, to) of columns shown. */
    long from = 0, to = total;
    if (total > DIAG_LINE_MAX) {
        from = caret - DIAG_WINDOW / 3;
        if (from + DIAG_WINDOW > total)
            from = total - DIAG_WINDOW;
        if (from < 0)
            from = 0;
        to = from + DIAG_WINDOW;
    }

    put(&o, "    ", 4);
    if (from > 0)
        put(&o, "...", 3);
    long at = 0;
    for (size_t i = 0; i < n;) {
        Shown c = shown_char(line + i, n - i);
        if (at >= from && at + c.width <= to)
            put(&o, c.out, c.outlen);
        at += c.width;
        i += c.len;
    }
    if (to < total)
        put(&o, "...", 3);

    put(&o, "\n    ", 5);
    if (from > 0)
        put(&o, "   ", 3);
    at = 0;
    int ch = 1;
    for (size_t i = 0; i < n && ch < col; ch++) {
        Shown c = shown_char(line + i, n - i);
        if (at >= from && at + c.width <= to) {
            if (c.tab)
                put(&o, "\t", 1);
            else
                put_spaces(&o, c.width);
        }
        at += c.width;
        i += c.len;
    }
    put(&o, "^", 1);
    if (o.cap)
        o.p[o.n < o.cap ? o.n : o.cap - 1] = '\0';
    return o.n;
}

char *diag_render(const char *file, int line, int col, const char *msg, const char *src, size_t n,
                  bool nl)
{
    int hn = file ? snprintf(NULL, 0, "%s:%d:%d: %s", file, line, col, msg) : (int)strlen(msg);
    if (hn < 0)
        return NULL;
    size_t xn = src ? diag_excerpt(NULL, 0, src, n, col) : 0;
    size_t total = (size_t)hn + (src ? 1 + xn : 0) + (nl ? 1 : 0);
    char *s = malloc(total + 1);
    if (!s)
        return NULL;
    if (file)
        snprintf(s, (size_t)hn + 1, "%s:%d:%d: %s", file, line, col, msg);
    else
        memcpy(s, msg, (size_t)hn);
    size_t o = (size_t)hn;
    if (src) {
        s[o++] = '\n';
        diag_excerpt(s + o, xn + 1, src, n, col);
        o += xn;
    }
    if (nl)
        s[o++] = '\n';
    s[o] = '\0';
    return s;
}

/* ==== the error record ==== */

bool diag_vfail(DiagErr *e, const Loc *loc, const char *fmt, va_list ap)
{
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    e->has_loc = loc != NULL;
    if (loc)
        e->loc = *loc;
    else
        memset(&e->loc, 0, sizeof e->loc);
    return false;
}

bool diag_fail(DiagErr *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vfail(e, NULL, fmt, ap);
    va_end(ap);
    return false;
}

bool diag_fail_at(DiagErr *e, const Loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vfail(e, loc, fmt, ap);
    va_end(ap);
    return false;
}

char *diag_render_err(const DiagErr *e, const char *src, size_t n, bool nl)
{
    if (!e->has_loc || !e->loc.file)
        return diag_render(NULL, 0, 0, e->msg, NULL, 0, nl);
    const Loc *at = &e->loc;
    size_t llen = 0;
    const char *line = src ? diag_line(src, n, at->line, &llen) : NULL;
    char *s = diag_render(at->file, at->line, at->col, e->msg, line, llen, nl);
    if (s || !line)
        return s;
    /* No room for the excerpt: the first line alone. */
    return diag_render(at->file, at->line, at->col, e->msg, NULL, 0, nl);
}

/* ==== the sink ==== */

void diag_note(const DiagSink *s, DiagLevel level, const char *fmt, ...)
{
    if (!s || !s->write)
        return;
    char buf[1024];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof buf) {
        s->write(s->ctx, level, buf, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, ap2);
            s->write(s->ctx, level, big, (size_t)n);
            free(big);
        } else {
            s->write(s->ctx, level, buf, sizeof buf - 1);  /* the start, rather than nothing */
        }
    }
    va_end(ap2);
}
