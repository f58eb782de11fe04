/* SPDX-License-Identifier: Apache-2.0
 * The JSON that transform specs are written in, read as upstream's parser
 * (wink JSON4J, non-strict) takes it: keys quoted or bare
 * ({ids: true, recode: [1, 2]}), strings in double or single quotes, a bare
 * word that is no number, true, false or null read as a string, a trailing
 * comma before ']' or '}' ([{"id": 1}, {"id": 2},]), and line
 * and block comments (COMPAT.md 8, 11). Used by
 * transform.c and tokenize.c. Thread-safe: no state beyond the arguments. */
#ifndef DML_BUILTINS_JSON_H
#define DML_BUILTINS_JSON_H

#include <stdbool.h>
#include <stdint.h>

typedef enum JsKind { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ } JsKind;

typedef struct Js {
    JsKind k;
    bool b;
    double num;
    char *s;            /* JS_STR; also the text of a bare word */
    struct Js *item;    /* JS_ARR, JS_OBJ: n entries */
    char **key;         /* JS_OBJ: n keys */
    int64_t n;
} Js;

/* Parses the whole of 'text' into *out (owned: js_free it). On failure
 * *out is empty, *why a static phrase ("an unterminated string") and *off
 * the byte offset where reading stopped; nothing to free. Nesting deeper
 * than 64 levels is a failure, so walks over a parsed value need no guard. */
bool js_parse(const char *text, Js *out, const char **why, int64_t *off);
/* Frees what v holds and empties it. */
void js_free(Js *v);
/* The value of 'key' in object o (the first, if repeated); NULL when o is
 * no object or has no such key. Borrowed from o. */
const Js *js_get(const Js *o, const char *key);

#endif
