/* SPDX-License-Identifier: Apache-2.0
 * The .mtd metadata JSON: a small recursive-descent JSON parser (objects,
 * arrays, strings with every escape, numbers, literals; nesting capped so a
 * hostile file cannot exhaust the stack), the mapping of the known keys onto
 * Mtd, and the writer. Thread-safe: all state lives in the parse cursor. */
#include "mtd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JSON_MAX_DEPTH 64

void mtd_init(Mtd *m)
{
    memset(m, 0, sizeof *m);
    m->rows = m->cols = m->rows_in_block = m->cols_in_block = m->nnz = -1;
    m->header = m->fill = -1;
}

void mtd_free(Mtd *m)
{
    free(m->data_type);
    free(m->value_type);
    free(m->format);
    free(m->description);
    free(m->author);
    free(m->sep);
    free(m->created);
    free(m->indsep);
    free(m->schema);
    free(m->na_strings);
    mtd_init(m);
}

/* ================================================================
 * JSON cursor
 * ================================================================ */

typedef struct J {
    const char *p, *end;
    const char *name;
    int line;
    DiagErr *e;
} J;

/* One parsed scalar value; strings are malloc'd. */
typedef enum JKind { J_NULL, J_BOOL, J_NUM, J_STR, J_OTHER } JKind;
typedef struct JVal {
    JKind kind;
    bool b;
    double num;
    char *s;
} JVal;

static bool jfail(J *j, const char *what)
{
    return diag_fail(j->e, "%s:%d: %s", j->name, j->line, what);
}

/* Skips blanks and, as upstream's lenient JSON reader does, // and
 * block comments. */
static void skip_ws(J *j)
{
    while (j->p < j->end) {
        char c = *j->p;
        if (c == '/' && j->p + 1 < j->end && j->p[1] == '/') {
            while (j->p < j->end && *j->p != '\n')
                j->p++;
            continue;
        }
        if (c == '/' && j->p + 1 < j->end && j->p[1] == '*') {
            j->p += 2;
            while (j->p < j->end && !(*j->p == '*' && j->p + 1 < j->end && j->p[1] == '/')) {
                if (*j->p == '\n')
                    j->line++;
                j->p++;
            }
            j->p = j->p + 2 < j->end ? j->p + 2 : j->end;
            continue;
        }
        if (c == '\n')
            j->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        j->p++;
    }
}

static bool at_char(J *j, char c)
{
    skip_ws(j);
    return j->p < j->end && *j->p == c;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_hex4(J *j, unsigned *out)
{
    if (j->end - j->p < 4)
        return jfail(j, "truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(j->p[k]);
        if (h < 0)
            return jfail(j, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    j->p += 4;
    *out = v;
    return true;
}

static void put_utf8(char *dst, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        dst[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        dst[(*n)++] = (char)(0xC0 | (cp >> 6));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        dst[(*n)++] = (char)(0xE0 | (cp >> 12));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        dst[(*n)++] = (char)(0xF0 | (cp >> 18));
        dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* A string starting at the opening quote; *out is malloc'd (NULL when the
 * caller only skips it). Decoded text is never longer than the source, so
 * one allocation of the source length suffices. */
static bool parse_string(J *j, char **out)
{
    char quote = *j->p++;     /* the opening quote: " or ' (JSON4J takes both) */
    const char *s = j->p;
    const char *q = s;
    while (q < j->end && *q != quote) {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= j->end)
        return jfail(j, "unterminated string");
    char *dst = out ? malloc((size_t)(q - s) + 1) : NULL;
    if (out && !dst)
        return jfail(j, "out of memory");
    size_t n = 0;
    while (*j->p != quote) {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) {
            free(dst);
            return jfail(j, "control character in string");
        }
        if (c != '\\') {
            if (dst)
                dst[n++] = c;
            continue;
        }
        c = *j->p++;
        unsigned cp;
        switch (c) {
        case '"': case '\'': case '\\': case '/': cp = (unsigned char)c; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!read_hex4(j, &cp)) {
                free(dst);
                return false;
            }
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
                    free(dst);
                    return jfail(j, "unpaired surrogate in \\u escape");
                }
                j->p += 2;
                if (!read_hex4(j, &lo)) {
                    free(dst);
                    return false;
                }
                if (lo < 0xDC00 || lo >= 0xE000) {
                    free(dst);
                    return jfail(j, "unpaired surrogate in \\u escape");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                free(dst);
                return jfail(j, "unpaired surrogate in \\u escape");
            }
            if (cp == 0) {
                free(dst);
                return jfail(j, "\\u0000 is not allowed in a string");
            }
            if (dst)
                put_utf8(dst, &n, cp);
            continue;
        default:
            free(dst);
            return jfail(j, "bad escape in string");
        }
        if (dst)
            dst[n++] = (char)cp;
    }
    j->p++;     /* the closing quote */
    if (out) {
        dst[n] = 0;
        *out = dst;
    }
    return true;
}

static bool parse_number(J *j, double *out)
{
    const char *s = j->p;
    const char *q = s;
    if (q < j->end && *q == '-')
        q++;
    while (q < j->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
        q++;
    if (!io_parse_double(s, q, out) || !isfinite(*out))
        return jfail(j, "bad number");
    j->p = q;
    return true;
}

static bool parse_value(J *j, JVal *v, int depth);

static bool bare_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           c == '-' || c == '.' || c == '+';
}

/* A bare word (JSON4J's non-strict mode reads one as a string) into *out
 * (may be NULL: skipped). */
static bool parse_bare(J *j, char **out)
{
    const char *s = j->p;
    while (j->p < j->end && bare_char(*j->p))
        j->p++;
    if (j->p == s)
        return jfail(j, "unexpected character");
    if (out) {
        size_t n = (size_t)(j->p - s);
        if (!(*out = malloc(n + 1)))
            return jfail(j, "out of memory");
        memcpy(*out, s, n);
        (*out)[n] = '\0';
    }
    return true;
}

/* An object key: in double or single quotes, or bare (COMPAT.md 8). */
static bool parse_key(J *j, char **out)
{
    skip_ws(j);
    if (j->p < j->end && (*j->p == '"' || *j->p == '\''))
        return parse_string(j, out);
    if (j->p < j->end && bare_char(*j->p))
        return parse_bare(j, out);
    return jfail(j, "expected a key");
}

/* Skips an object or array (already at its opening bracket). */
static bool skip_container(J *j, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return jfail(j, "nested too deeply");
    char close = *j->p == '{' ? '}' : ']';
    bool obj = close == '}';
    j->p++;
    if (at_char(j, close)) {
        j->p++;
        return true;
    }
    for (;;) {
        if (obj) {
            if (!parse_key(j, NULL))
                return false;
            if (!at_char(j, ':'))
                return jfail(j, "expected ':' after the key");
            j->p++;
        }
        JVal v;
        if (!parse_value(j, &v, depth + 1))
            return false;
        free(v.s);
        if (at_char(j, ',')) {
            j->p++;
            if (at_char(j, close)) {    /* a trailing comma, as upstream accepts */
                j->p++;
                return true;
            }
            continue;
        }
        if (at_char(j, close)) {
            j->p++;
            return true;
        }
        return jfail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool parse_value(J *j, JVal *v, int depth)
{
    memset(v, 0, sizeof *v);
    skip_ws(j);
    if (j->p >= j->end)
        return jfail(j, "unexpected end of file");
    switch (*j->p) {
    case '"':
    case '\'':
        v->kind = J_STR;
        return parse_string(j, &v->s);
    case '{':
    case '[':
        v->kind = J_OTHER;
        return skip_container(j, depth);
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
            v->kind = J_NUM;
            return parse_number(j, &v->num);
        }
        if (bare_char(*j->p)) {     /* true, false, null, or a bare word: a string */
            if (!parse_bare(j, &v->s))
                return false;
            v->kind = J_STR;
            if (!strcmp(v->s, "true") || !strcmp(v->s, "false")) {
                v->kind = J_BOOL;
                v->b = v->s[0] == 't';
            } else if (!strcmp(v->s, "null")) {
                v->kind = J_NULL;
            }
            if (v->kind != J_STR) {
                free(v->s);
                v->s = NULL;
            }
            return true;
        }
        return jfail(j, "unexpected character");
    }
}

/* ================================================================
 * Known keys
 * ================================================================ */

static bool key_string(J *j, const char *key, JVal *v, char **slot)
{
    if (v->kind != J_STR) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a string", key);
        return jfail(j, msg);
    }
    free(*slot);
    *slot = v->s;
    v->s = NULL;
    return true;
}

static bool key_int(J *j, const char *key, JVal *v, int64_t *slot)
{
    double d = v->num;
    bool ok = v->kind == J_NUM;
    if (v->kind == J_STR)
        ok = io_parse_double(v->s, v->s + strlen(v->s), &d);
    if (!ok || d != floor(d) || d < 0 || d > 9.0e18) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a non-negative integer", key);
        return jfail(j, msg);
    }
    *slot = (int64_t)d;
    return true;
}

static bool key_double(J *j, const char *key, JVal *v, double *slot)
{
    double d = v->num;
    bool ok = v->kind == J_NUM;
    if (v->kind == J_STR)
        ok = io_parse_double(v->s, v->s + strlen(v->s), &d);
    if (!ok) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a number", key);
        return jfail(j, msg);
    }
    *slot = d;
    return true;
}

static bool key_bool(J *j, const char *key, JVal *v, int *slot)
{
    if (v->kind == J_BOOL) {
        *slot = v->b;
        return true;
    }
    if (v->kind == J_STR && (strcmp(v->s, "true") == 0 || strcmp(v->s, "TRUE") == 0)) {
        *slot = 1;
        return true;
    }
    if (v->kind == J_STR && (strcmp(v->s, "false") == 0 || strcmp(v->s, "FALSE") == 0)) {
        *slot = 0;
        return true;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "'%s' must be true or false", key);
    return jfail(j, msg);
}

static bool apply_key(J *j, const char *key, JVal *v, Mtd *m)
{
    if (strcmp(key, "data_type") == 0)
        return key_string(j, key, v, &m->data_type);
    if (strcmp(key, "value_type") == 0)
        return key_string(j, key, v, &m->value_type);
    if (strcmp(key, "format") == 0)
        return key_string(j, key, v, &m->format);
    /* description, author and created are informative: any JSON value
     * (upstream's own files hold an object as description); kept when a
     * string. */
    if (strcmp(key, "description") == 0)
        return v->kind != J_STR || key_string(j, key, v, &m->description);
    if (strcmp(key, "author") == 0)
        return v->kind != J_STR || key_string(j, key, v, &m->author);
    if (strcmp(key, "indSep") == 0)
        return key_string(j, key, v, &m->indsep);
    if (strcmp(key, "schema") == 0)
        return key_string(j, key, v, &m->schema);
    if (strcmp(key, "sep") == 0)
        return key_string(j, key, v, &m->sep);
    if (strcmp(key, "created") == 0)
        return v->kind != J_STR || key_string(j, key, v, &m->created);
    if (strcmp(key, "rows") == 0)
        return key_int(j, key, v, &m->rows);
    if (strcmp(key, "cols") == 0)
        return key_int(j, key, v, &m->cols);
    if (strcmp(key, "nnz") == 0)
        return key_int(j, key, v, &m->nnz);
    if (strcmp(key, "rows_in_block") == 0)
        return key_int(j, key, v, &m->rows_in_block);
    if (strcmp(key, "cols_in_block") == 0)
        return key_int(j, key, v, &m->cols_in_block);
    if (strcmp(key, "header") == 0)
        return key_bool(j, key, v, &m->header);
    /* fill, default and naStrings: csv read options a call may leave to
     * the .mtd, as upstream's read takes any of its parameters from it. */
    if (strcmp(key, "fill") == 0)
        return key_bool(j, key, v, &m->fill);
    if (strcmp(key, "default") == 0)
        return (m->has_default = true, key_double(j, key, v, &m->dflt));
    if (strcmp(key, "naStrings") == 0)
        return key_string(j, key, v, &m->na_strings);
    return true;    /* unknown keys (blocksize, ...) are ignored */
}

bool mtd_parse(const char *buf, size_t len, const char *name, Mtd *m, DiagErr *e)
{
    J j = {buf, buf + len, name, 1, e};
    /* A UTF-8 byte order mark is tolerated: some editors add one. */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        j.p += 3;
    if (!at_char(&j, '{')) {
        jfail(&j, j.p >= j.end ? "empty metadata file, expected a JSON object" : "expected a JSON object '{'");
        goto fail;
    }
    j.p++;
    if (at_char(&j, '}')) {
        j.p++;
    } else {
        for (;;) {
            char *key = NULL;
            if (!parse_key(&j, &key))
                goto fail;
            if (!at_char(&j, ':')) {
                free(key);
                jfail(&j, "expected ':' after the key");
                goto fail;
            }
            j.p++;
            JVal v;
            int vline = j.line;
            if (!parse_value(&j, &v, 1)) {
                free(key);
                goto fail;
            }
            int after = j.line;
            j.line = vline;     /* a type error names the value's line */
            bool ok = apply_key(&j, key, &v, m);
            j.line = after;
            free(v.s);
            free(key);
            if (!ok)
                goto fail;
            if (at_char(&j, ',')) {
                j.p++;
                if (at_char(&j, '}')) {     /* a trailing comma, as upstream accepts */
                    j.p++;
                    break;
                }
                continue;
            }
            if (at_char(&j, '}')) {
                j.p++;
                break;
            }
            jfail(&j, j.p >= j.end ? "unexpected end of file, expected '}'" : "expected ',' or '}'");
            goto fail;
        }
    }
    /* Upstream's reader stops at the closing brace; what follows is ignored. */
    return true;
fail:
    mtd_free(m);
    return false;
}

/* ================================================================
 * Writing
 * ================================================================ */

bool mtd_stamp(Mtd *m)
{
    const char *user = getenv("USER");
    free(m->author);
    m->author = strdup(user && *user ? user : "SystemDS");
    char when[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
        strcpy(when, "1970-01-01 00:00:00 UTC");
    free(m->created);
    m->created = strdup(when);
    return m->author && m->created;
}

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

/* Writes one "key": value entry, preceded by the separator of the previous
 * entry (so the last one carries no comma). */
static void entry_start(FILE *f, bool *first, const char *key)
{
    fputs(*first ? "{\n" : ",\n", f);
    *first = false;
    fprintf(f, "    \"%s\": ", key);
}

static void put_str(FILE *f, bool *first, const char *key, const char *v)
{
    if (!v)
        return;
    entry_start(f, first, key);
    put_json_string(f, v);
}

static void put_int(FILE *f, bool *first, const char *key, int64_t v)
{
    if (v < 0)
        return;
    entry_start(f, first, key);
    fprintf(f, "%lld", (long long)v);
}

bool mtd_write(FILE *f, const Mtd *m)
{
    bool first = true;
    put_str(f, &first, "data_type", m->data_type);
    put_str(f, &first, "value_type", m->value_type);
    put_int(f, &first, "rows", m->rows);
    put_int(f, &first, "cols", m->cols);
    put_str(f, &first, "schema", m->schema);
    put_int(f, &first, "rows_in_block", m->rows_in_block);
    put_int(f, &first, "cols_in_block", m->cols_in_block);
    put_int(f, &first, "nnz", m->nnz);
    put_str(f, &first, "format", m->format);
    put_str(f, &first, "description", m->description);
    put_str(f, &first, "author", m->author);
    if (m->header >= 0) {
        entry_start(f, &first, "header");
        fputs(m->header ? "true" : "false", f);
    }
    put_str(f, &first, "sep", m->sep);
    put_str(f, &first, "indSep", m->indsep);
    put_str(f, &first, "created", m->created);
    fputs(first ? "{\n}\n" : "\n}\n", f);
    return !ferror(f);
}
