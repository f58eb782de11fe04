/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass: between parsing and running. Registers functions, has
 * the loader (loader.h) parse source()d files, binds every call to a user function or a builtin, gives
 * every variable a frame slot, replaces $parameters by constants, and rejects
 * what DML forbids. Runs on the loading thread; afterwards the tree is
 * read-only. */
#ifndef DML_RUNTIME_RESOLVE_H
#define DML_RUNTIME_RESOLVE_H

#include "program.h"

/* ---- the front door: parse a text, then resolve it ---- */
/* Load and resolve the main script (and everything it sources). Appends the
 * top-level statements to *stmts and *n. On error returns a malloc'd message
 * (syntax errors with caret; resolve errors with file:line:col), else NULL. */
char *program_load_main(Program *p, const char *path, const char *text, size_t len,
                        Node ***stmts, int *n);
/* REPL: parse and resolve one more chunk of input against the main module.
 * Sets *incomplete when the text ends inside an open construct. */
char *program_load_chunk(Program *p, const char *name, const char *text, size_t len,
                         Node ***stmts, int *n, bool *incomplete);

/* REPL: parse and resolve a single bare expression (PARSE_EXPR). Returns an
 * error message or NULL; never reports "incomplete". */
char *program_load_expr(Program *p, const char *name, const char *text, size_t len, Node **expr);

/* ---- the pass itself ---- */
/* Resolve the statements of one chunk of module 'm' (a whole main script, or
 * one REPL input when 'repl' is set, which allows redefining functions).
 * Returns NULL or a malloc'd diagnostic. */
char *resolve_chunk(Program *p, Module *m, Node **stmts, int n, bool repl);
/* Resolve a bare expression against the top-level scope (REPL). */
char *resolve_expr(Program *p, Module *m, Node *e);
/* The module of DML-bodied builtin 'name' (COMPAT.md 1), loading and
 * binding its file if needed; for eval while scripts run. NULL when no
 * file defines it, or on a load error (then *err is a malloc'd diagnostic).
 * The caller holds p->load_lock. */
Module *resolve_builtin_module(Program *p, const char *name, char **err);

#endif
