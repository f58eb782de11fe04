/* SPDX-License-Identifier: Apache-2.0
 * The front end's entry point: parse_source() owns one flex scanner and one
 * bison parser for the length of a call, feeds the scanner's tokens to the
 * parser (dml_yylex), and hands back the first error as a record (the caller
 * shows it with the source line and a caret). Reentrant: all state is in a ParseCtx on the
 * caller's stack; the only heap memory (the look-ahead queue, flex's buffers)
 * is freed before returning, whatever happened. */
#include "parse.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dml.tab.h"
#include "base/diag.h"

#define YYSTYPE DML_YYSTYPE
#define YYLTYPE DML_YYLTYPE
#include "dml.lex.h"

/* ==== token stream ==== */

/* Scans one token into the look-ahead queue. After the end of input or a
 * lexical error the scanner is not called again: the queue repeats END.
 * False when the queue cannot grow (out of memory, c->oom set). */
static bool scan_one(ParseCtx *c)
{
    if (c->nbuf == c->cap) {
        if (c->head > 0) {      /* reuse the consumed front of the queue */
            memmove(c->buf, c->buf + c->head, (size_t)(c->nbuf - c->head) * sizeof *c->buf);
            c->nbuf -= c->head;
            c->head = 0;
        } else {
            int ncap = c->cap ? c->cap * 2 : 64;
            LexToken *nb = realloc(c->buf, (size_t)ncap * sizeof *nb);
            if (!nb) {
                c->oom = true;
                return false;
            }
            c->buf = nb;
            c->cap = ncap;
        }
    }
    LexToken *t = &c->buf[c->nbuf++];
    memset(t, 0, sizeof *t);
    if (c->scan_done) {
        t->kind = TOK_END;
    } else {
        t->kind = lex_yylex(&t->val, &t->loc, c->scanner);
        t->off = c->tok_off;
        t->len = c->tok_len;
    }
    if (t->kind == TOK_END || t->kind == TOK_DML_YYerror)
        c->scan_done = true;
    if (t->kind == TOK_END) {
        /* The end sits just after the last token, so "unexpected end of
         * input" points at the line that needs continuing. */
        t->loc.first_line = t->loc.last_line = c->end_line ? c->end_line : 1;
        t->loc.first_column = t->loc.last_column = c->end_line ? c->end_col + 1 : 1;
        t->off = c->len;
        t->len = 0;
    }
    if (t->kind != TOK_END && t->kind != TOK_DML_YYerror) {
        c->end_line = t->loc.last_line;
        c->end_col = t->loc.last_column;
    }
    return true;
}

/* The i-th token not yet delivered (0 = the next one). */
static LexToken *peek(ParseCtx *c, int i)
{
    static const LexToken oom_token = {.kind = TOK_DML_YYerror};
    while (c->nbuf - c->head <= i)
        if (!scan_one(c))
            return (LexToken *)&oom_token;     /* read only: the parse ends here */
    return &c->buf[c->head + i];
}

/* Tokens after which a statement may start. */
static bool is_boundary(int k)
{
    return k == TOK_START_PROGRAM || k == ';' || k == '{' || k == '}' || k == TOK_ELSE;
}

/* Tokens that can end an expression. */
static bool is_expr_end(int k)
{
    switch (k) {
    case TOK_ID: case TOK_INT: case TOK_DOUBLE: case TOK_STRING: case TOK_TRUE: case TOK_FALSE:
    case TOK_CMDARG: case ')': case ']':
        return true;
    default:
        return false;
    }
}

/* A '[' is either indexing (X[i], f(x)[1]), an expression list ([1, 2]) or
 * the start of a multi-assignment ([a, b] = f(x)). Newlines are not
 * separators, so after "x = y" a following "[a, b] = f(x)" would read as
 * "y[a, b]": an LALR(1) parser cannot see past the ']'. We look further:
 * a '[' that follows a finished expression at bracket depth 0, and whose
 * matching ']' is followed by '=' or '<-', starts a multi-assignment; so does
 * a '[' where only a statement can start. A statement-initial name X in
 * "X[i] = v" is the exception: that '[' indexes X. Each look-ahead stops at
 * the matching ']', and nested brackets are never examined, so the total
 * work stays linear. */
static int classify_bracket(ParseCtx *c)
{
    if (c->mode != PARSE_PROGRAM)
        return '[';
    if (is_boundary(c->prev1))
        return TOK_MLBRACKET;
    if (!is_expr_end(c->prev1) || c->depth > 0)
        return '[';
    if (c->prev1 == TOK_ID && (is_boundary(c->prev2) || is_expr_end(c->prev2)))
        return '[';     /* X starts a statement: X[i] = v */
    int depth = 1;
    for (int i = 0;; i++) {
        int k = peek(c, i)->kind;
        if (k == TOK_END || k == TOK_DML_YYerror)
            return '[';
        if (k == '(' || k == '[')
            depth++;
        else if (k == ')' || k == ']')
            depth--;
        if (depth == 0) {
            int next = peek(c, i + 1)->kind;
            return next == '=' || next == TOK_ARROW ? TOK_MLBRACKET : '[';
        }
    }
}

/* The parser's yylex: the mode token first, then the scanner's tokens with
 * '[' classified. A lexical error becomes the first error here, when its
 * token is reached, so an earlier syntax error wins. */
int dml_yylex(DML_YYSTYPE *lval, DML_YYLTYPE *lloc, ParseCtx *c)
{
    if (!c->started) {
        c->started = true;
        c->prev1 = c->mode == PARSE_EXPR ? TOK_START_EXPR : TOK_START_PROGRAM;
        lloc->first_line = lloc->last_line = 1;
        lloc->first_column = lloc->last_column = 1;
        return c->prev1;
    }
    LexToken t = *peek(c, 0);
    /* Out of memory in the queue, the scanner or an action's arena: the
     * token's text may be missing, so stop before the parser sees it. */
    if (c->oom || arena_failed(c->arena)) {
        c->oom = true;
        parse_set_error(c, "error", t.loc.first_line ? t.loc.first_line : 1,
                        t.loc.first_column ? t.loc.first_column : 1, false, "out of memory");
        return TOK_DML_YYerror;
    }
    c->head++;
    if (t.kind == '[')
        t.kind = classify_bracket(c);
    if (t.kind == '(' || t.kind == '[' || t.kind == TOK_MLBRACKET)
        c->depth++;
    else if ((t.kind == ')' || t.kind == ']') && c->depth > 0)
        c->depth--;
    if (t.kind == TOK_DML_YYerror)
        parse_set_error(c, "lexical error", c->lex_err.loc.line, c->lex_err.loc.col, c->lex_incomplete, "%s",
                        c->lex_err.msg);
    c->prev2 = c->prev1;
    c->prev1 = t.kind;
    c->last = t;
    *lval = t.val;
    *lloc = t.loc;
    return t.kind;
}

/* ==== entry point ==== */

/* The error for running out of memory before or while parsing. */
static bool parse_oom(ParseCtx *c, ParseOut *out)
{
    if (!c->file)
        c->file = "<input>";
    parse_set_error(c, "error", 1, 1, false, "out of memory");
    out->err = c->err;
    return false;
}

bool parse_source(Arena *arena, const char *file, const char *text, size_t len, ParseMode mode,
                  ParseOut *out)
{
    memset(out, 0, sizeof *out);
    ParseCtx c;
    memset(&c, 0, sizeof c);
    c.arena = arena;
    c.file = arena_strdup(arena, file ? file : "<input>");
    if (!c.file)
        return parse_oom(&c, out);
    c.text = text ? text : "";
    c.len = text ? len : 0;
    if (c.len >= 3 && memcmp(c.text, "\xEF\xBB\xBF", 3) == 0) {    /* UTF-8 byte order mark */
        c.text += 3;
        c.len -= 3;
    }
    c.mode = mode;
    c.line = 1;
    c.col = 1;

    if (c.len > INT_MAX - 2) {      /* flex buffers are int-sized */
        parse_set_error(&c, "syntax error", 1, 1, false, "input too large");
        out->err = c.err;
        return false;
    }

    c.c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    yyscan_t scanner;
    if (!c.c_locale || lex_yylex_init_extra(&c, &scanner) != 0) {
        if (c.c_locale)
            freelocale(c.c_locale);
        return parse_oom(&c, out);
    }
    c.scanner = scanner;
    /* flex cannot continue after a failed allocation of its own; its
     * YY_FATAL_ERROR jumps back here and what it had allocated is freed. */
    if (setjmp(c.lex_oom)) {
        for (size_t i = 0; i < sizeof c.lex_allocs / sizeof c.lex_allocs[0]; i++)
            free(c.lex_allocs[i]);
        freelocale(c.c_locale);
        free(c.buf);
        return parse_oom(&c, out);
    }
    YY_BUFFER_STATE buf = lex_yy_scan_bytes(c.text, (int)c.len, scanner);
    errno = 0;      /* ENOMEM afterwards tells dml_yyerror that bison's stack could not grow */

    int rc = dml_yyparse(&c);

    lex_yy_delete_buffer(buf, scanner);
    lex_yylex_destroy(scanner);
    freelocale(c.c_locale);
    free(c.buf);

    if (rc == 0 && !c.failed && arena_failed(arena))
        parse_set_error(&c, "error", 1, 1, false, "out of memory");
    if (rc == 0 && !c.failed) {
        out->stmts = c.stmts;
        out->n = c.nstmts;
        out->expr = c.expr;
        out->skipped = c.skipped;
        out->nskipped = c.nskipped;
        return true;
    }
    if (!c.failed)      /* cannot happen: every abort path records an error */
        parse_set_error(&c, "syntax error", 1, 1, false, "parse failed");
    out->err = c.err;
    out->incomplete = c.incomplete;
    return false;
}
