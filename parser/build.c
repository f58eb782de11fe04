/* SPDX-License-Identifier: Apache-2.0
 * The grammar actions' lists, node builders and position-only checks
 * (parser/build.h). Everything lives in the ParseCtx's arena. */
#include "build.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dml.tab.h"

/* ==== the parse's first error ==== */

void parse_set_error(ParseCtx *ctx, const char *kind, int line, int col, bool incomplete,
                     const char *fmt, ...)
{
    if (ctx->failed)
        return;
    ctx->failed = true;
    ctx->incomplete = incomplete;
    Loc loc = {.file = ctx->file, .line = line, .col = col, .end_line = line, .end_col = col};
    char msg[DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_fail_at(&ctx->err, &loc, "%s: %s", kind, msg);
}

/* Makes room for one more element of size 'sz' in an arena array; false
 * when out of memory (the arena is then failed and the parse stops). */
static bool grow(Arena *a, void **v, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return true;
    if (*cap > INT_MAX / 2)
        return false;
    int ncap = *cap ? *cap * 2 : 4;
    void *nv = arena_alloc(a, (size_t)ncap * sz);
    if (!nv || arena_failed(a))
        return false;
    if (n)
        memcpy(nv, *v, (size_t)n * sz);
    *v = nv;
    *cap = ncap;
    return true;
}

/* ==== lists ==== */

NodeVec *build_nodes_new(ParseCtx *c) { return arena_alloc(c->arena, sizeof(NodeVec)); }

NodeVec *build_nodes_push(ParseCtx *c, NodeVec *nv, Node *n)
{
    if (grow(c->arena, (void **)&nv->v, nv->n, &nv->cap, sizeof *nv->v))
        nv->v[nv->n++] = n;
    return nv;
}

NodeVec *build_nodes_one(ParseCtx *c, Node *n) { return build_nodes_push(c, build_nodes_new(c), n); }

ArgVec *build_args_push(ParseCtx *c, ArgVec *av, const char *name, Node *e)
{
    if (!av)
        av = arena_alloc(c->arena, sizeof *av);
    int cap = av->cap;
    if (!grow(c->arena, (void **)&av->v, av->n, &cap, sizeof *av->v) ||
        !grow(c->arena, (void **)&av->names, av->n, &av->cap, sizeof *av->names))
        return av;
    av->v[av->n] = e;
    av->names[av->n] = name;
    av->n++;
    av->named |= name != NULL;
    return av;
}

LhsVec *build_lhss_push(ParseCtx *c, LhsVec *lv, Lhs x)
{
    if (!lv)
        lv = arena_alloc(c->arena, sizeof *lv);
    if (grow(c->arena, (void **)&lv->v, lv->n, &lv->cap, sizeof *lv->v))
        lv->v[lv->n++] = x;
    return lv;
}

ParamVec *build_params_push(ParseCtx *c, ParamVec *pv, Param p)
{
    if (!pv)
        pv = arena_alloc(c->arena, sizeof *pv);
    if (grow(c->arena, (void **)&pv->v, pv->n, &pv->cap, sizeof *pv->v))
        pv->v[pv->n++] = p;
    return pv;
}

OptVec *build_opts_push(ParseCtx *c, OptVec *ov, const char *name, Node *value, Loc l)
{
    if (!ov)
        ov = arena_alloc(c->arena, sizeof *ov);
    if (grow(c->arena, (void **)&ov->v, ov->n, &ov->cap, sizeof *ov->v))
        ov->v[ov->n++] = (LoopOpt){name, value, l};
    return ov;
}

/* ==== expressions ==== */

Node *build_int(ParseCtx *c, Loc l, int64_t v)
{
    Node *n = ast_node(c->arena, N_INT, l);
    n->lit.i = v;
    return n;
}

Node *build_double(ParseCtx *c, Loc l, double v)
{
    Node *n = ast_node(c->arena, N_DOUBLE, l);
    n->lit.d = v;
    return n;
}

Node *build_bool(ParseCtx *c, Loc l, bool v)
{
    Node *n = ast_node(c->arena, N_BOOL, l);
    n->lit.b = v;
    return n;
}

Node *build_string(ParseCtx *c, Loc l, LexStr s)
{
    Node *n = ast_node(c->arena, N_STRING, l);
    n->str.s = s.s;
    n->str.len = s.len;
    return n;
}

/* pi, Inf and NaN read as variables are constants (doc/language.md, "names"). */
static bool builtin_const(const char *name, double *d)
{
    if (strcmp(name, "pi") == 0)
        *d = M_PI;
    else if (strcmp(name, "Inf") == 0)
        *d = INFINITY;
    else if (strcmp(name, "NaN") == 0)
        *d = NAN;
    else
        return false;
    return true;
}

Node *build_ident(ParseCtx *c, Loc l, const char *name)
{
    double d;
    if (builtin_const(name, &d))
        return build_double(c, l, d);
    Node *n = ast_node(c->arena, N_IDENT, l);
    n->ident.name = name;
    n->ident.slot = -1;
    return n;
}

Node *build_cmdarg(ParseCtx *c, Loc l, const char *name)
{
    Node *n = ast_node(c->arena, N_CMDARG, l);
    n->cmdarg.name = name;
    return n;
}

Node *build_exprlist(ParseCtx *c, Loc l, NodeVec *items)
{
    Node *n = ast_node(c->arena, N_EXPRLIST, l);
    n->list.items = items->v;
    n->list.n = items->n;
    return n;
}

Node *build_call(ParseCtx *c, Loc l, const char *name, ArgVec *args)
{
    Node *n = ast_node(c->arena, N_CALL, l);
    const char *sep = strstr(name, "::");
    if (sep) {
        n->call.ns = arena_strndup(c->arena, name, (size_t)(sep - name));
        n->call.name = sep + 2;
    } else {
        n->call.name = name;
    }
    if (args && args->n) {
        n->call.args = args->v;
        n->call.argnames = args->names;
        n->call.nargs = args->n;
    }
    return n;
}

Node *build_index(ParseCtx *c, Loc l, Node *target, IndexSpec ix)
{
    Node *n = ast_node(c->arena, N_INDEX, l);
    n->index.target = target;
    n->index.rows = ix.rows;
    n->index.cols = ix.cols;
    n->index.has_cols = ix.has_cols;
    return n;
}

IndexPart build_part(IxKind k, Node *lo, Node *hi) { return (IndexPart){k, lo, hi}; }

/* ==== statements ==== */

Lhs build_lhs(const char *name, Loc l, const IndexSpec *ix)
{
    Lhs x = {.name = name, .loc = l, .slot = -1};
    if (ix) {
        x.indexed = true;
        x.has_cols = ix->has_cols;
        x.rows = ix->rows;
        x.cols = ix->cols;
    }
    return x;
}

Node *build_assign(ParseCtx *c, Loc l, Lhs target, Node *value, bool accum)
{
    Node *n = ast_node(c->arena, N_ASSIGN, l);
    n->assign.target = target;
    n->assign.value = value;
    n->assign.accum = accum;
    return n;
}

Node *build_ifdef(ParseCtx *c, Loc l, Lhs target, const char *param, Node *dflt)
{
    Node *n = ast_node(c->arena, N_IFDEF, l);
    n->ifdef.target = target;
    n->ifdef.param = param;
    n->ifdef.dflt = dflt;
    return n;
}

Node *build_multiassign(ParseCtx *c, Loc l, LhsVec *targets, Node *call)
{
    Node *n = ast_node(c->arena, N_MULTIASSIGN, l);
    n->multi.targets = targets->v;
    n->multi.n = targets->n;
    n->multi.call = call;
    return n;
}

Node *build_exprstmt(ParseCtx *c, Loc l, Node *call)
{
    Node *n = ast_node(c->arena, N_EXPRSTMT, l);
    n->expr.e = call;
    return n;
}

Node *build_source(ParseCtx *c, Loc l, const char *path, const char *alias)
{
    Node *n = ast_node(c->arena, N_SOURCE, l);
    n->source.path = path;
    n->source.alias = alias;
    return n;
}

Node *build_setwd(ParseCtx *c, Loc l, const char *path)
{
    Node *n = ast_node(c->arena, N_SETWD, l);
    n->source.path = path;
    return n;
}

Node *build_if(ParseCtx *c, Loc l, Node *cond, NodeVec *then_b, NodeVec *else_b)
{
    Node *n = ast_node(c->arena, N_IF, l);
    n->ifs.cond = cond;
    n->ifs.then_b = then_b->v;
    n->ifs.nthen = then_b->n;
    if (else_b) {
        n->ifs.else_b = else_b->v;
        n->ifs.nelse = else_b->n;
    }
    return n;
}

Node *build_for(ParseCtx *c, Loc l, bool parfor, const char *var, IterSpec it, OptVec *opts,
                NodeVec *body)
{
    Node *n = ast_node(c->arena, N_FOR, l);
    n->loop.var = var;
    n->loop.var_slot = -1;
    n->loop.from = it.from;
    n->loop.to = it.to;
    n->loop.by = it.by;
    n->loop.seq_form = it.seq_form;
    if (opts) {
        n->loop.opts = opts->v;
        n->loop.nopts = opts->n;
    }
    n->loop.body = body->v;
    n->loop.nbody = body->n;
    n->loop.parfor = parfor;
    return n;
}

Node *build_while(ParseCtx *c, Loc l, Node *cond, NodeVec *body)
{
    Node *n = ast_node(c->arena, N_WHILE, l);
    n->loop.cond = cond;
    n->loop.body = body->v;
    n->loop.nbody = body->n;
    return n;
}

Param build_param(Loc l, TypeSpec t, const char *name, Node *dflt)
{
    return (Param){.name = name, .type = t.type, .vtype = t.vtype, .dflt = dflt, .loc = l};
}

Node *build_func(ParseCtx *c, Loc l, const char *name, ParamVec *params, ParamVec *outs,
                 NodeVec *body, bool external)
{
    FuncDecl *f = arena_alloc(c->arena, sizeof *f);
    f->name = name;
    if (params) {
        f->params = params->v;
        f->nparams = params->n;
    }
    if (outs) {
        f->outs = outs->v;
        f->nouts = outs->n;
    }
    if (body) {
        f->body = body->v;
        f->nbody = body->n;
    }
    f->external = external;
    f->loc = l;
    Node *n = ast_node(c->arena, N_FUNCDEF, f->loc);
    n->func = f;
    return n;
}

/* ==== checks ==== */

bool build_check_target(ParseCtx *c, const char *name, Loc l)
{
    double d;
    if (!builtin_const(name, &d))
        return true;
    parse_set_error(c, "syntax error", l.line, l.col, false,
                    "Cannot assign a value to the builtin constant %s", name);
    return false;
}

bool build_seq_header(ParseCtx *c, Node *e, Loc l, IterSpec *it)
{
    if (e->kind != N_CALL) {
        parse_set_error(c, "syntax error", l.line, l.col, false,
                        "invalid loop range: expected 'from:to' or 'seq(from, to[, by])'");
        return false;
    }
    if (e->call.ns || strcmp(e->call.name, "seq") != 0) {
        parse_set_error(c, "syntax error", l.line, l.col, false,
                        "incorrect function:'%s%s%s'. expected 'seq'", e->call.ns ? e->call.ns : "",
                        e->call.ns ? "::" : "", e->call.name);
        return false;
    }
    bool named = false;
    for (int i = 0; i < e->call.nargs; i++)
        named |= e->call.argnames[i] != NULL;
    if (named || e->call.nargs < 2 || e->call.nargs > 3) {
        parse_set_error(c, "syntax error", l.line, l.col, false,
                        "seq in a loop header takes 2 or 3 positional arguments");
        return false;
    }
    *it = (IterSpec){e->call.args[0], e->call.args[1], e->call.nargs == 3 ? e->call.args[2] : NULL,
                     true};
    return true;
}

bool build_type(ParseCtx *c, const char *dt, ScalarType vt, Loc l, TypeSpec *t)
{
    static const struct { const char *name; TypeKind kind; } dts[] = {
        {"matrix", TY_MATRIX}, {"Matrix", TY_MATRIX}, {"frame", TY_FRAME}, {"Frame", TY_FRAME},
        {"list", TY_LIST},     {"List", TY_LIST},     {"scalar", TY_SCALAR}, {"Scalar", TY_SCALAR},
    };
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        if (strcmp(dts[i].name, dt) == 0) {
            *t = (TypeSpec){dts[i].kind, vt};
            return true;
        }
    }
    parse_set_error(c, "syntax error", l.line, l.col, false,
                    "incorrect datatype (expected matrix, frame, list, or scalar)");
    return false;
}

bool build_check_func_body(ParseCtx *c, const NodeVec *body, Loc l)
{
    if (body->n != 0)
        return true;
    parse_set_error(c, "syntax error", l.line, l.col, false,
                    "functions with no statements are not allowed");
    return false;
}

void build_untyped(ParseCtx *c, const char *name, Loc l)
{
    parse_set_error(c, "syntax error", l.line, l.col, false,
                    "missing type for '%s' (e.g. 'double %s' or 'matrix[double] %s')", name, name,
                    name);
}

void build_nested_function(ParseCtx *c, Loc l)
{
    parse_set_error(c, "syntax error", l.line, l.col, false,
                    "function definitions are only allowed at top level");
}
