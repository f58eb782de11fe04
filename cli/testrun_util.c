/* SPDX-License-Identifier: Apache-2.0
 * The test runner's small growable containers (Buf, StrList) and file
 * helpers. */
#define _GNU_SOURCE
#include "testrun_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ======================================================================
 * Small growable containers
 * ====================================================================== */


void tr_buf_putn(Buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return;     /* out of memory: the report is just shorter */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void tr_buf_puts(Buf *b, const char *s) { tr_buf_putn(b, s, strlen(s)); }

void tr_buf_printf(Buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        tr_buf_putn(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    tr_buf_putn(b, big, (size_t)n);
    free(big);
}


bool tr_sl_push(StrList *l, char *s)
{
    if (!s)
        return false;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return false;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

void tr_sl_free(StrList *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

char *tr_xstrdup(const char *s) { return s ? strdup(s) : NULL; }

char *tr_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (k > 0 && p[k - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

bool tr_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && memcmp(s + a - b, suf, b) == 0;
}

/* Reads a whole regular file (or fd) into a NUL-terminated malloc'd buffer. */
bool tr_read_fd(int fd, char **out, size_t *len)
{
    Buf b = {0};
    char tmp[65536];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            free(b.p);
            return false;
        }
        if (r == 0)
            break;
        tr_buf_putn(&b, tmp, (size_t)r);
    }
    if (!b.p)
        tr_buf_putn(&b, "", 0);
    if (!b.p)
        return false;
    *out = b.p;
    *len = b.len;
    return true;
}

bool tr_read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = tr_read_fd(fd, out, len);
    close(fd);
    return ok;
}

bool tr_write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    return ok;
}

bool tr_is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Splits 'text' into words: whitespace separates; "..." and '...' group
 * (inside "...", \" and \\ are escapes). Returns false on an unterminated
 * quote. Words are appended to 'out'. */
bool tr_split_words(const char *text, StrList *out)
{
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            return true;
        Buf w = {0};
        tr_buf_putn(&w, "", 0);
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            if (*p == '"' || *p == '\'') {
                char q = *p++;
                while (*p && *p != q) {
                    if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
                        p++;
                    tr_buf_putn(&w, p, 1);
                    p++;
                }
                if (*p != q) {
                    free(w.p);
                    return false;
                }
                p++;
            } else {
                tr_buf_putn(&w, p, 1);
                p++;
            }
        }
        if (!w.p || !tr_sl_push(out, w.p))
            return false;
    }
}
