/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass: between parsing and running. Registers functions, has
 * the loader (loader.h) parse source()d files, binds every call to a user function or a builtin, gives
 * every variable a frame slot, replaces $parameters by constants, and rejects
 * what DML forbids. Runs on the loading thread; afterwards the tree is
 * read-only. */
#ifndef DML_RUNTIME_RESOLVE_H
#define DML_RUNTIME_RESOLVE_H

#include "program.h"

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
