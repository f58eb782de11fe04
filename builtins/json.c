/* SPDX-License-Identifier: Apache-2.0
 * The non-strict JSON reader (json.h): recursive descent over the text,
 * depth-limited, every failure a static phrase and an offset.
 * Thread-safe: no state beyond the arguments. */
#include "json.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define JS_MAX_DEPTH 64

typedef struct JsP {
    const char *p, *start, *end;
    const char *err;    /* static message, set on failure */
} JsP;

void js_free(Js *v)
{
    for (int64_t i = 0; i < v->n; i++) {
        js_free(&v->item[i]);
        if (v->key)
            free(v->key[i]);
    }
    free(v->item);
    free(v->key);
    free(v->s);
    memset(v, 0, sizeof *v);
}

int64_t js_skip_space(const char *text, size_t len, int64_t off)
{
    const char *p = text + off, *end = text + len;
    for (;;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            p = q + 1 < end ? q + 2 : end;  /* unterminated: to the end */
        } else {
            return p - text;
        }
    }
}

/* Skips white space and comments (a line comment from two slashes to the
 * end of the line, a block comment between slash-star and star-slash),
 * which JSON4J's non-strict mode skips too. */
static void js_ws(JsP *P)
{
    P->p = P->start + js_skip_space(P->start, (size_t)(P->end - P->start), P->p - P->start);
}

static bool js_fail(JsP *P, const char *msg)
{
    if (!P->err)
        P->err = msg;
    return false;
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

static bool read_hex4(JsP *P, unsigned *out)
{
    if (P->end - P->p < 4)
        return js_fail(P, "truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(P->p[k]);
        if (h < 0)
            return js_fail(P, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    P->p += 4;
    *out = v;
    return true;
}

/* The code point of a \u escape (P->p after the 'u'): a surrogate pair
 * makes one; half a pair and NUL are refused. */
static bool read_code_point(JsP *P, unsigned *cp)
{
    if (!read_hex4(P, cp))
        return false;
    if (*cp >= 0xD800 && *cp < 0xDC00) {
        unsigned lo;
        if (P->end - P->p < 2 || P->p[0] != '\\' || P->p[1] != 'u')
            return js_fail(P, "unpaired surrogate in \\u escape");
        P->p += 2;
        if (!read_hex4(P, &lo))
            return false;
        if (lo < 0xDC00 || lo >= 0xE000)
            return js_fail(P, "unpaired surrogate in \\u escape");
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (*cp >= 0xDC00 && *cp < 0xE000) {
        return js_fail(P, "unpaired surrogate in \\u escape");
    }
    if (*cp == 0)
        return js_fail(P, "\\u0000 is not allowed in a string");
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

/* A quoted string (P->p at the quote: " or ', JSON4J takes both) into a
 * malloc'd *out. Decoded text is never longer than the source (a \u escape
 * of 6 or 12 bytes makes at most 4), so one allocation of the source
 * length suffices. */
static bool js_string(JsP *P, char **out)
{
    char quote = *P->p++;
    const char *q = P->p;
    while (q < P->end && *q != quote) {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= P->end)
        return js_fail(P, "unterminated string");
    char *s = malloc((size_t)(q - P->p) + 1);
    if (!s)
        return js_fail(P, "out of memory");
    size_t n = 0;
    while (*P->p != quote) {
        char c = *P->p++;
        if (c == '\0') {
            free(s);
            return js_fail(P, "NUL byte in string");
        }
        if (c != '\\') {
            s[n++] = c;
            continue;
        }
        c = *P->p++;
        unsigned cp;
        switch (c) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u':
            if (!read_code_point(P, &cp)) {
                free(s);
                return false;
            }
            put_utf8(s, &n, cp);
            continue;
        case '\0':
            free(s);
            return js_fail(P, "NUL byte in string");
        default: break;     /* \" \' \\ \/, and any other as itself */
        }
        s[n++] = c;
    }
    P->p++;     /* the closing quote */
    s[n] = '\0';
    *out = s;
    return true;
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '+' || c == '$';
}

/* A bare word (key, number, true/false/null) into a malloc'd *out. */
static bool js_word(JsP *P, char **out, const char *what)
{
    const char *s = P->p;
    if (P->p >= P->end)
        return js_fail(P, "unexpected end of file");
    while (P->p < P->end && is_word_char(*P->p))
        P->p++;
    if (P->p == s)
        return js_fail(P, what);
    *out = strndup(s, (size_t)(P->p - s));
    return *out ? true : js_fail(P, "out of memory");
}

static bool js_value(JsP *P, Js *v, int depth);

static bool js_push(JsP *P, Js *v, int64_t *cap)
{
    if (v->n < *cap)
        return true;
    int64_t nc = *cap ? *cap * 2 : 4;
    Js *it = realloc(v->item, (size_t)nc * sizeof *it);
    if (!it)
        return js_fail(P, "out of memory");
    v->item = it;
    if (v->k == JS_OBJ) {
        char **k = realloc(v->key, (size_t)nc * sizeof *k);
        if (!k)
            return js_fail(P, "out of memory");
        v->key = k;
    }
    *cap = nc;
    return true;
}

/* An object's key, in double or single quotes or bare (COMPAT.md 8), and
 * its ':'; *key malloc'd. */
static bool js_key(JsP *P, char **key)
{
    js_ws(P);
    if (P->p < P->end && (*P->p == '"' || *P->p == '\'')) {
        if (!js_string(P, key))
            return false;
    } else if (P->p < P->end && is_word_char(*P->p)) {
        if (!js_word(P, key, "expected a key"))
            return false;
    } else {
        return js_fail(P, "expected a key");
    }
    js_ws(P);
    if (P->p >= P->end || *P->p != ':') {
        free(*key);
        *key = NULL;
        return js_fail(P, "expected ':' after the key");
    }
    P->p++;
    return true;
}

static bool js_container(JsP *P, Js *v, int depth)
{
    bool obj = *P->p == '{';
    char close = obj ? '}' : ']';
    v->k = obj ? JS_OBJ : JS_ARR;
    P->p++;
    int64_t cap = 0;
    js_ws(P);
    if (P->p < P->end && *P->p == close) {
        P->p++;
        return true;
    }
    for (;;) {
        if (!js_push(P, v, &cap))
            return false;
        Js *it = &v->item[v->n];
        memset(it, 0, sizeof *it);
        char *key = NULL;
        if (obj && !js_key(P, &key))
            return false;
        if (obj)
            v->key[v->n] = key;
        v->n++;
        it->at = P->p - P->start;
        if (!js_value(P, it, depth + 1))
            return false;
        js_ws(P);
        if (P->p < P->end && *P->p == ',') {
            P->p++;
            js_ws(P);
            if (P->p < P->end && *P->p == close) {
                P->p++;     /* a trailing comma, as JSON4J allows: [1, 2,] */
                return true;
            }
            continue;
        }
        if (P->p < P->end && *P->p == close) {
            P->p++;
            return true;
        }
        if (P->p >= P->end)
            return js_fail(P, obj ? "unexpected end of file, expected '}'" : "unexpected end of file, expected ']'");
        return js_fail(P, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool js_value(JsP *P, Js *v, int depth)
{
    if (depth > JS_MAX_DEPTH)
        return js_fail(P, "nested too deeply");
    js_ws(P);
    if (P->p >= P->end)
        return js_fail(P, "unexpected end of file");
    char c = *P->p;
    if (c == '{' || c == '[')
        return js_container(P, v, depth);
    if (c == '"' || c == '\'') {
        v->k = JS_STR;
        return js_string(P, &v->s);
    }
    if (!js_word(P, &v->s, "unexpected character"))
        return false;
    if (!strcmp(v->s, "true") || !strcmp(v->s, "false")) {
        v->k = JS_BOOL;
        v->b = v->s[0] == 't';
    } else if (!strcmp(v->s, "null")) {
        v->k = JS_NULL;
    } else {
        char *e;
        v->num = strtod(v->s, &e);
        v->k = *e || e == v->s ? JS_STR : JS_NUM;  /* a bare word is a string, as in JSON4J */
    }
    return true;
}

const Js *js_get(const Js *o, const char *key)
{
    for (int64_t i = 0; o->k == JS_OBJ && i < o->n; i++)
        if (!strcmp(o->key[i], key))
            return &o->item[i];
    return NULL;
}

bool js_parse_n(const char *text, size_t len, unsigned flags, Js *out, const char **why, int64_t *off)
{
    JsP P = {text, text, text + len, NULL};
    memset(out, 0, sizeof *out);
    bool ok = js_value(&P, out, 0);
    if (ok && !(flags & JS_FIRST_VALUE)) {
        js_ws(&P);
        if (P.p < P.end)
            ok = js_fail(&P, "text after the end");
    }
    if (!ok) {
        js_free(out);
        *why = P.err;
        *off = (int64_t)(P.p - P.start);
    }
    return ok;
}

bool js_parse(const char *text, Js *out, const char **why, int64_t *off)
{
    return js_parse_n(text, strlen(text), 0, out, why, off);
}
