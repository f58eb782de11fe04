/* SPDX-License-Identifier: Apache-2.0
 * A small reader of non-strict JSON (json.h): recursive descent over the
 * text, depth-limited, every failure a static phrase and an offset.
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

/* Skips white space and comments (a line comment from two slashes to the
 * end of the line, a block comment between slash-star and star-slash),
 * which JSON4J's non-strict mode skips too. */
static void js_ws(JsP *P)
{
    for (;;) {
        while (P->p < P->end && isspace((unsigned char)*P->p))
            P->p++;
        if (P->end - P->p >= 2 && P->p[0] == '/' && P->p[1] == '/') {
            while (P->p < P->end && *P->p != '\n')
                P->p++;
        } else if (P->end - P->p >= 2 && P->p[0] == '/' && P->p[1] == '*') {
            const char *q = P->p + 2;
            while (q + 1 < P->end && !(q[0] == '*' && q[1] == '/'))
                q++;
            if (q + 1 >= P->end)
                return;     /* unterminated: left for the caller to refuse */
            P->p = q + 2;
        } else {
            return;
        }
    }
}

static bool js_fail(JsP *P, const char *msg)
{
    if (!P->err)
        P->err = msg;
    return false;
}

/* A quoted string (P->p at the quote) into a malloc'd *out. */
static bool js_string(JsP *P, char **out)
{
    char q = *P->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s)
        return js_fail(P, "out of memory");
    for (;;) {
        if (P->p >= P->end) {
            free(s);
            return js_fail(P, "an unterminated string");
        }
        char c = *P->p++;
        if (c == q)
            break;
        if (c == '\\') {
            if (P->p >= P->end) {
                free(s);
                return js_fail(P, "an unterminated string");
            }
            c = *P->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                /* \uXXXX of the Basic Multilingual Plane. */
                unsigned cp = 0;
                for (int k = 0; k < 4; k++) {
                    if (P->p >= P->end || !isxdigit((unsigned char)*P->p)) {
                        free(s);
                        return js_fail(P, "a bad \\u escape");
                    }
                    char h = *P->p++;
                    cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower(h) - 'a' + 10));
                }
                if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    free(s);
                    return js_fail(P, "a \\u escape of NUL or of half a surrogate pair");
                }
                /* As UTF-8: up to two leading bytes now, the last below. */
                if (n + 4 > cap) {
                    char *g = realloc(s, cap *= 2);
                    if (!g) {
                        free(s);
                        return js_fail(P, "out of memory");
                    }
                    s = g;
                }
                if (cp >= 0x800) {
                    s[n++] = (char)(0xE0 | (cp >> 12));
                    s[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    cp = 0x80 | (cp & 0x3F);
                } else if (cp >= 0x80) {
                    s[n++] = (char)(0xC0 | (cp >> 6));
                    cp = 0x80 | (cp & 0x3F);
                }
                c = (char)cp;
                break;
            }
            default: break;     /* \" \\ \/ \' */
            }
        }
        if (n + 2 > cap) {
            char *g = realloc(s, cap *= 2);
            if (!g) {
                free(s);
                return js_fail(P, "out of memory");
            }
            s = g;
        }
        s[n++] = c;
    }
    s[n] = '\0';
    *out = s;
    return true;
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '+' || c == '$';
}

/* A bare word (key, number, true/false/null) into a malloc'd *out. */
static bool js_word(JsP *P, char **out)
{
    const char *s = P->p;
    if (P->p >= P->end)
        return js_fail(P, "an unexpected end of the text");
    while (P->p < P->end && is_word_char(*P->p))
        P->p++;
    if (P->p == s)
        return js_fail(P, "an unexpected character");
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
        js_ws(P);
        if (obj) {
            if (P->p < P->end && (*P->p == '"' || *P->p == '\'') ? !js_string(P, &key) : !js_word(P, &key))
                return false;
            js_ws(P);
            if (P->p >= P->end || *P->p != ':') {
                free(key);
                return js_fail(P, "a key without ':'");
            }
            P->p++;
        }
        if (obj)
            v->key[v->n] = key;
        v->n++;
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
        return js_fail(P, obj ? "an object without '}'" : "an array without ']'");
    }
}

static bool js_value(JsP *P, Js *v, int depth)
{
    if (depth > JS_MAX_DEPTH)
        return js_fail(P, "nesting deeper than 64 levels");
    js_ws(P);
    if (P->p >= P->end)
        return js_fail(P, "a missing value");
    char c = *P->p;
    if (c == '{' || c == '[')
        return js_container(P, v, depth);
    if (c == '"' || c == '\'') {
        v->k = JS_STR;
        return js_string(P, &v->s);
    }
    if (!js_word(P, &v->s))
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


bool js_parse(const char *text, Js *out, const char **why, int64_t *off)
{
    JsP P = {text, text, text + strlen(text), NULL};
    memset(out, 0, sizeof *out);
    bool ok = js_value(&P, out, 0);
    js_ws(&P);
    if (ok && P.p < P.end)
        ok = js_fail(&P, "text after the end");
    if (!ok) {
        js_free(out);
        *why = P.err;
        *off = (int64_t)(P.p - P.start);
    }
    return ok;
}
