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
/* Each returns false on error with *err set (base/diag.h): a syntax error,
 * or a load or resolve error, at its position in a file whose text the
 * Program keeps (program_render_err shows it with the caret), or without
 * position ("out of memory"). */

/* Load and resolve the main script (and everything it sources). Sets
 * *stmts and *n to its top-level statements. */
bool program_load_main(Program *p, const char *path, const char *text, size_t len, Node ***stmts, int *n,
                       DiagErr *err);
/* REPL: parse and resolve one more chunk of input against the main module.
 * Sets *incomplete when the text ends inside an open construct. */
bool program_load_chunk(Program *p, const char *name, const char *text, size_t len, Node ***stmts, int *n,
                        bool *incomplete, DiagErr *err);
/* REPL: parse and resolve a single bare expression (PARSE_EXPR); never
 * reports "incomplete". */
bool program_load_expr(Program *p, const char *name, const char *text, size_t len, Node **expr, DiagErr *err);

/* ---- the pass itself ---- */
/* Resolve the statements of one chunk of module 'm' (a whole main script, or
 * one REPL input when 'repl' is set, which allows redefining functions).
 * False (*err set) on the first error. */
bool resolve_chunk(Program *p, Module *m, Node **stmts, int n, bool repl, DiagErr *err);
/* Resolve a bare expression against the top-level scope (REPL). */
bool resolve_expr(Program *p, Module *m, Node *e, DiagErr *err);
/* The module of DML-bodied builtin 'name' (COMPAT.md 1), loading and
 * binding its file if needed; for eval while scripts run. NULL when no
 * file defines it, or on a load error (then *err is set, its message never
 * empty; otherwise *err is left alone). The caller holds p->load_lock. */
Module *resolve_builtin_module(Program *p, const char *name, DiagErr *err);

#endif
