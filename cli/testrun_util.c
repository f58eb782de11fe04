/* SPDX-License-Identifier: Apache-2.0
 * The test runner's string list (StrList) and file helpers. */
#define _GNU_SOURCE
#include "testrun_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ======================================================================
 * String lists
 * ====================================================================== */

bool tr_sl_push_take(StrList *l, char *s)
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
    StrBuf b = {0};
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
        sb_putn(&b, tmp, (size_t)r);
    }
    if (!b.p)
        sb_putn(&b, "", 0);
    if (b.oom) {
        sb_free(&b);
        return false;
    }
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
        StrBuf w = {0};
        sb_putn(&w, "", 0);
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            if (*p == '"' || *p == '\'') {
                char q = *p++;
                while (*p && *p != q) {
                    if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
                        p++;
                    sb_putn(&w, p, 1);
                    p++;
                }
                if (*p != q) {
                    free(w.p);
                    return false;
                }
                p++;
            } else {
                sb_putn(&w, p, 1);
                p++;
            }
        }
        if (w.oom) {
            sb_free(&w);
            return false;
        }
        if (!tr_sl_push_take(out, w.p))
            return false;
    }
}
