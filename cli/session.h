/* SPDX-License-Identifier: Apache-2.0
 * One interactive session, shared by the two interactive front ends (the
 * REPL, cli/repl.c, and the Jupyter kernel, cli/kernel*.c): a Program that
 * grows input by input, one Interp and one persistent top-level frame.
 * Here is what both need to read an input (as a bare expression, as
 * statements, or statements then a bare expression), run it, show a value,
 * complete a name and answer "?name". Printing and error reporting stay in
 * the front ends. Main thread only (like the Interp it owns). */
#ifndef DML_CLI_SESSION_H
#define DML_CLI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/strbuf.h"
#include "../parser/parse.h"
#include "../runtime/interp.h"
#include "../runtime/program.h"

typedef struct Session {
    Program *prog;          /* borrowed */
    Interp I;
    CallFrame top;          /* the persistent top-level frame; its slots are ours */
    int ninput;             /* inputs taken so far */
} Session;

/* Starts a session over 'prog' (seeded RNG, cli_interrupt_flag as its
 * interrupt, cli_stderr_sink as its sink: the caller may replace I.out and
 * I.sink). False when out of memory (nothing to destroy). */
bool session_init(Session *s, Program *prog, uint64_t seed);
/* Releases the frame's values and the Interp (not the Program). */
void session_destroy(Session *s);

/* True when text parses in 'mode' (into a scratch arena: the Program is not
 * touched); otherwise *incomplete says whether the text ended inside an open
 * construct, and *err holds the syntax error. */
bool session_try_parse(const char *name, const char *text, size_t len, ParseMode mode, bool *incomplete,
                       DiagErr *err);
/* Of the two failed readings of an input (as an expression, as statements)
 * the error to show: an "unexpected end of input" one when only one is,
 * else the one that got further. */
const DiagErr *session_pick_error(const DiagErr *eerr, bool einc, const DiagErr *perr, bool pinc);

/* How a cell reads (the kernel; the REPL takes an input that is one or the
 * other): statements text[0..split), then a bare expression text[split..len)
 * whose value is shown. split == 0: only the expression; has_expr false:
 * only statements. CELL_INCOMPLETE (the text ends inside an open
 * construct) and CELL_INVALID set *err to the syntax error to show. */
typedef enum CellRead { CELL_OK, CELL_INCOMPLETE, CELL_INVALID } CellRead;
CellRead session_read_cell(const char *name, const char *text, size_t len, size_t *split, bool *has_expr,
                           DiagErr *err);

/* Called with each value a bare expression produced (borrowed). */
typedef void (*SessionShowFn)(void *ctx, Value v);
/* Runs a loaded bare expression: a call of a user function or of a
 * statement/multi-return builtin runs as a statement, and 'show' gets each
 * of its results; anything else is evaluated and 'show' gets its value.
 * ST_ERR leaves the error in s->I.err for the caller to report (then
 * err_clear). Clears a Ctrl-C that came before or after the run. */
Status session_run_expr(Session *s, const Node *e, SessionShowFn show, void *ctx);
/* Runs loaded statements in the top frame; errors as session_run_expr. */
Status session_run_stmts(Session *s, Node **stmts, int n);

/* Appends v as the interactive front ends show it: scalars in their print()
 * form, a matrix with its dimensions and what is left out, lists entry by
 * entry with their names. Ends with a newline; nothing for VAL_NONE. */
void session_show_sb(StrBuf *b, Value v);
/* Most rows and columns of a matrix shown as text. */
#define SESSION_SHOW_MAX 100

/* When 'text' is a help request ("?name", "?"name"", "help(name)" with a
 * bare name) copies the topic into topic[0..cap) and returns true. help()
 * and help("x") are ordinary calls of the help builtin (false). */
bool session_help_request(const Session *s, const char *text, char *topic, size_t cap);
/* quit() or q(), unless the user defined such a function. */
bool session_is_quit(const Session *s, const char *text);

typedef enum SessionNameKind { SN_FUNCTION, SN_VARIABLE, SN_KEYWORD } SessionNameKind;
/* Calls fn for every name that completes 'prefix': builtins, the session's
 * functions, "ns::f" for every function of every namespace alias, the
 * variables that hold a value, keywords. */
void session_each_name(const Session *s, const char *prefix,
                       void (*fn)(void *ctx, const char *name, SessionNameKind kind), void *ctx);
/* True when 'name' is a DML keyword. */
bool session_is_keyword(const char *name);

#endif
