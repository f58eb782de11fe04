/* SPDX-License-Identifier: Apache-2.0
 * What the grammar's actions (parser/dml.y) call: growable lists for the
 * grammar's repetitions, builders for the nodes those lists end up in, and
 * the few checks that need a position but no context (assignment to pi,
 * 'for' headers, parameter types). Everything is allocated in the
 * ParseCtx's arena: nothing is malloc'd, so nothing leaks when a parse is
 * abandoned. A check that fails records the parse's error (parse_set_error)
 * and returns false; the action then aborts the parse. */
#ifndef DML_PARSER_BUILD_H
#define DML_PARSER_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "ast.h"

typedef struct ParseCtx ParseCtx;   /* parser/dml.y */

/* Records the parse's first error, "kind: message" at line:col (later ones
 * are ignored). Called by the grammar, the builders below and parse.c. */
void parse_set_error(ParseCtx *ctx, const char *kind, int line, int col, bool incomplete,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Growable arrays for the grammar's lists. They live in the arena: a grown
 * array abandons its old copy there, which costs at most twice the space
 * and never leaks. */
typedef struct NodeVec { Node **v; int n, cap; } NodeVec;
typedef struct ArgVec { Node **v; const char **names; int n, cap; bool named; } ArgVec;
typedef struct LhsVec { Lhs *v; int n, cap; } LhsVec;
typedef struct ParamVec { Param *v; int n, cap; } ParamVec;
typedef struct OptVec { LoopOpt *v; int n, cap; } OptVec;

typedef struct LexStr { const char *s; int64_t len; } LexStr;
typedef struct IndexSpec { IndexPart rows, cols; bool has_cols; } IndexSpec;
typedef struct TypeSpec { TypeKind type; ScalarType vtype; } TypeSpec;
/* Header of a for/parfor loop between 'in' and the options. */
typedef struct IterSpec { Node *from, *to, *by; bool seq_form; } IterSpec;

/* ==== lists: a NULL list argument starts a new one ==== */
NodeVec *build_nodes_new(ParseCtx *c);
NodeVec *build_nodes_push(ParseCtx *c, NodeVec *nv, Node *n);
NodeVec *build_nodes_one(ParseCtx *c, Node *n);
/* Appends an argument (name NULL when positional). Whether a positional
 * argument may follow a named one depends on the callee (list(a=1, 2) is
 * fine, f(x=1, 2) is not), so the resolver decides. */
ArgVec *build_args_push(ParseCtx *c, ArgVec *av, const char *name, Node *e);
LhsVec *build_lhss_push(ParseCtx *c, LhsVec *lv, Lhs x);
ParamVec *build_params_push(ParseCtx *c, ParamVec *pv, Param p);
OptVec *build_opts_push(ParseCtx *c, OptVec *ov, const char *name, Node *value, Loc l);

/* ==== nodes ==== */
Node *build_int(ParseCtx *c, Loc l, int64_t v);
Node *build_double(ParseCtx *c, Loc l, double v);
Node *build_bool(ParseCtx *c, Loc l, bool v);
Node *build_string(ParseCtx *c, Loc l, LexStr s);
/* A name read as a value: pi, Inf and NaN are constants (doc/language.md,
 * "names"), anything else a variable. */
Node *build_ident(ParseCtx *c, Loc l, const char *name);
Node *build_cmdarg(ParseCtx *c, Loc l, const char *name);
/* [e1, e2, ...] */
Node *build_exprlist(ParseCtx *c, Loc l, NodeVec *items);
/* 'name' is "f" or "ns::f". */
Node *build_call(ParseCtx *c, Loc l, const char *name, ArgVec *args);
Node *build_index(ParseCtx *c, Loc l, Node *target, IndexSpec ix);
IndexPart build_part(IxKind k, Node *lo, Node *hi);

/* An assignment target; 'ix' NULL when it is not indexed. */
Lhs build_lhs(const char *name, Loc l, const IndexSpec *ix);
Node *build_assign(ParseCtx *c, Loc l, Lhs target, Node *value, bool accum);
Node *build_ifdef(ParseCtx *c, Loc l, Lhs target, const char *param, Node *dflt);
Node *build_multiassign(ParseCtx *c, Loc l, LhsVec *targets, Node *call);
Node *build_exprstmt(ParseCtx *c, Loc l, Node *call);
/* source(path) as alias; setwd(path) when 'alias' is NULL. */
Node *build_source(ParseCtx *c, Loc l, const char *path, const char *alias);
Node *build_setwd(ParseCtx *c, Loc l, const char *path);
Node *build_if(ParseCtx *c, Loc l, Node *cond, NodeVec *then_b, NodeVec *else_b);
Node *build_for(ParseCtx *c, Loc l, bool parfor, const char *var, IterSpec it, OptVec *opts,
                NodeVec *body);
Node *build_while(ParseCtx *c, Loc l, Node *cond, NodeVec *body);
Param build_param(Loc l, TypeSpec t, const char *name, Node *dflt);
/* 'body' NULL for an externalFunction. */
Node *build_func(ParseCtx *c, Loc l, const char *name, ParamVec *params, ParamVec *outs,
                 NodeVec *body, bool external);

/* ==== checks: false with the parse's error set ==== */
/* Assignment targets may not be builtin constants. */
bool build_check_target(ParseCtx *c, const char *name, Loc l);
/* for (i in seq(a, b[, c])): the header must be exactly such a call. */
bool build_seq_header(ParseCtx *c, Node *e, Loc l, IterSpec *it);
/* dataType '[' valueType ']' (doc/language.md, "types"). */
bool build_type(ParseCtx *c, const char *dt, ScalarType vt, Loc l, TypeSpec *t);
/* 'l' is the closing brace of a function with no statements. */
bool build_check_func_body(ParseCtx *c, const NodeVec *body, Loc l);
/* Errors with no check to make: an untyped parameter or output
 * ('function(x)'), and 'x = function' where only statements may stand. */
void build_untyped(ParseCtx *c, const char *name, Loc l);
void build_nested_function(ParseCtx *c, Loc l);

#endif
