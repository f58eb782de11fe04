/* SPDX-License-Identifier: Apache-2.0
 * The one JSON reader of dml: transform specs (transform.c, tokenize.c) and
 * the .mtd metadata files (mtd.c) go through it. It reads JSON as
 * upstream's parser (wink JSON4J, non-strict) takes it, for both: keys
 * quoted or bare ({ids: true, recode: [1, 2]}), strings in double or single
 * quotes, a bare word that is no number, true, false or null read as a
 * string, a trailing comma before ']' or '}' ([{"id": 1}, {"id": 2},]),
 * line and block comments, unknown escapes taken as the character
 * (COMPAT.md 8, 11). Thread-safe: no state beyond the arguments. */
#ifndef DML_BUILTINS_JSON_H
#define DML_BUILTINS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum JsKind { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ } JsKind;

typedef struct Js {
    JsKind k;
    bool b;
    double num;
    char *s;            /* JS_STR; also the text of a bare word (true,
                         * false, null, a number) */
    struct Js *item;    /* JS_ARR, JS_OBJ: n entries */
    char **key;         /* JS_OBJ: n keys */
    int64_t n;
    int64_t at;         /* byte offset just after the ':' or ',' (or '[')
                         * before an item; 0 for the outermost value */
} Js;

/* js_parse_n's flags. */
enum {
    JS_FIRST_VALUE = 1, /* stop after the first value: what follows is not read */
};

/* Parses the whole of 'text' (NUL-terminated) into *out (owned: js_free
 * it). On failure *out is empty, *why a static phrase ("unterminated
 * string") and *off the byte offset where reading stopped; nothing to free.
 * Nesting deeper than 64 levels is a failure, so walks over a parsed value
 * need no guard. */
bool js_parse(const char *text, Js *out, const char **why, int64_t *off);
/* The same over [text, text+len), which may hold NUL bytes (a failure
 * there), with flags JS_*. */
bool js_parse_n(const char *text, size_t len, unsigned flags, Js *out, const char **why, int64_t *off);
/* The offset of the first byte at or after 'off' that is neither blank nor
 * inside a comment (len when there is none). */
int64_t js_skip_space(const char *text, size_t len, int64_t off);
/* Frees what v holds and empties it. */
void js_free(Js *v);
/* The value of 'key' in object o (the first, if repeated); NULL when o is
 * no object or has no such key. Borrowed from o. */
const Js *js_get(const Js *o, const char *key);

#endif
