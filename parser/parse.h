/* SPDX-License-Identifier: Apache-2.0
 * Entry point of the front end: text in, AST out. Reentrant: each call has
 * its own scanner and parser state, so threads may parse concurrently. */
#ifndef DML_PARSER_PARSE_H
#define DML_PARSER_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/diag.h"
#include "ast.h"

typedef enum ParseMode {
    PARSE_PROGRAM,          /* statements and function definitions (a file) */
    PARSE_EXPR,             /* exactly one expression, optional ';', then end (REPL) */
} ParseMode;

typedef struct ParseOut {
    Node *expr;             /* PARSE_EXPR: the expression */
    Node **stmts;           /* top-level statements and function definitions, in order */
    int n;
    DiagErr err;            /* on failure: "syntax error: ..." at its position in 'file' */
    bool incomplete;        /* the error is "unexpected end of input": more lines could fix it */
    /* Stray '.' characters (not part of a number or a dotted name) that the
     * lexer skipped, as upstream's lexer does after printing "token
     * recognition error at: '.'" (COMPAT.md 11); the caller warns about
     * each. In the arena. */
    const Loc *skipped;
    int nskipped;
} ParseOut;

/* Parses text[0..len) of the file called 'file' (the name is copied into the
 * arena and used in every Loc). Nodes go into 'arena'. Returns true on
 * success. On a syntax or lexical error returns false and records the first
 * error in out->err: the message "syntax error: unexpected X, expecting Y"
 * at its position (always set), which diag_render_err shows as
 *   file:line:col: syntax error: unexpected X, expecting Y
 *       <the source line>
 *       <caret under the column>
 * given this text. Lexical errors (bad escape, invalid character,
 * unterminated string or comment) read "lexical error: ...". */
bool parse_source(Arena *arena, const char *file, const char *text, size_t len, ParseMode mode,
                  ParseOut *out);

#endif
