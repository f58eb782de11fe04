/* SPDX-License-Identifier: Apache-2.0
 * Entry point of the front end: text in, AST out. Reentrant: each call has
 * its own scanner and parser state, so threads may parse concurrently. */
#ifndef DML_PARSER_PARSE_H
#define DML_PARSER_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"

typedef enum ParseMode {
    PARSE_PROGRAM,          /* statements and function definitions (a file) */
    PARSE_EXPR,             /* exactly one expression, optional ';', then end (REPL) */
} ParseMode;

typedef struct ParseOut {
    Node *expr;             /* PARSE_EXPR: the expression */
    Node **stmts;           /* top-level statements and function definitions, in order */
    int n;
    char *error;            /* malloc'd diagnostic on failure, else NULL */
    bool incomplete;        /* the error is "unexpected end of input": more lines could fix it */
} ParseOut;

/* Parses text[0..len) of the file called 'file' (the name is copied into the
 * arena and used in every Loc). Nodes go into 'arena'. Returns true on
 * success. On a syntax or lexical error returns false and sets out->error to
 *   file:line:col: syntax error: unexpected X, expecting Y
 *       <the source line>
 *       <caret under the column>
 * (one message, for the first error). The caller frees out->error.
 * Lexical errors (bad escape, invalid character, unterminated string or
 * comment) use the same shape: "file:line:col: lexical error: ...". */
bool parse_source(Arena *arena, const char *file, const char *text, size_t len, ParseMode mode,
                  ParseOut *out);

#endif
