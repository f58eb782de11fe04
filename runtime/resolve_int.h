/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass's own header, shared by its files and by no one else:
 *   resolve.c         the pass: declarations and source(), binding of
 *                     expressions and statements, the entry points;
 *   resolve_call.c    calls: inlining as upstream decides it, binding a
 *                     call to a user function, a builtin or the variants of
 *                     a DML-bodied builtin;
 *   resolve_writes.c  what a parfor body writes (its result variables). */
#ifndef DML_RUNTIME_RESOLVE_INT_H
#define DML_RUNTIME_RESOLVE_INT_H

#include "resolve.h"
#include "stack.h"

typedef struct Pending {
    FuncDef **fns;
    int n, cap;
} Pending;

typedef struct Res {
    Program *p;
    Module *m;              /* module whose code is being bound */
    SlotTable *slots;       /* frame layout being filled */
    const FuncDef *fn;      /* function being bound, NULL at top level */
    DiagErr *out;           /* where the first error is recorded */
    DiagErr *err;           /* 'out' once it holds an error, else NULL */
    bool repl;
    Pending *pending;
    StackGuard stack;       /* deep trees are an error, not a crash */
    int depth;              /* expressions and statements being bound */
} Res;

/* Where a call stands: inside an expression, as a statement, as the right
 * side of [a, b] = ..., as a bare REPL input (anything goes), or as the
 * whole right side of x = ... */
enum CallCtx { CTX_EXPR, CTX_STMT, CTX_MULTI, CTX_REPL, CTX_ASSIGN /* x = f(...) */ };

/* Records the first error of the pass (later ones are dropped). */
void res_err(Res *r, const Loc *loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The error for a failed allocation; 'loc' may be NULL. */
void res_oom(Res *r, const Loc *loc);
/* Arena memory for the resolver; NULL (error set) when out of memory. */
void *res_alloc(Res *r, size_t size, const Loc *loc);
/* Binds expression n; 'allow_list' where a list literal may stand. */
void res_expr(Res *r, Node *n, bool allow_list);
/* The module of DML-bodied builtin 'name', loaded on first use; NULL if no
 * file defines it (or on a load error, then set in r). */
Module *res_builtin_module(Res *r, const char *name, const Loc *loc);

/* resolve_call.c: binds call n (its arguments too) standing in 'ctx'. */
void res_call_bind(Res *r, Node *n, enum CallCtx ctx);
/* resolve_writes.c: records which slots parfor 'loop' writes. */
void res_collect_writes(Res *r, Node *loop);

#endif
