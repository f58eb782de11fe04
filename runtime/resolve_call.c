/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass's calls (resolve_int.h): whether a user function is
 * inlined (upstream's rule), and binding a call to a user function, a
 * builtin (its argument names, the builtin row's rules) or the variants of
 * a DML-bodied builtin. */
#include "resolve_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "builtin_api.h"
#include "loader.h"
#include "upstream_dml_builtins.h"

static int cmp_name(const void *k, const void *e)
{
    return strcmp((const char *)k, *(const char *const *)e);
}

/* Whether upstream implements 'name' as a DML script (scripts/builtin/). */
static bool upstream_dml_builtin(const char *name)
{
    return bsearch(name, upstream_dml_builtins, sizeof upstream_dml_builtins / sizeof upstream_dml_builtins[0],
                   sizeof upstream_dml_builtins[0], cmp_name) != NULL;
}

static const char *call_display(const Node *n, char *buf, size_t cap)
{
    if (n->call.ns)
        snprintf(buf, cap, "%s::%s", n->call.ns, n->call.name);
    else
        snprintf(buf, cap, "%s", n->call.name);
    return buf;
}

static void signature(const FuncDef *f, char *buf, size_t cap)
{
    size_t o = 0;
    buf[o++] = '[';
    for (int i = 0; i < f->decl->nparams && o + 2 < cap; i++) {
        int k = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", f->decl->params[i].name);
        if (k < 0)
            break;
        o += (size_t)k;
    }
    if (o + 2 < cap)
        buf[o++] = ']';
    buf[o < cap ? o : cap - 1] = '\0';
}

/* Function pfx+name of module m, or NULL. */
static FuncDef *variant_func(const Module *m, const char *pfx, const char *name)
{
    char fn[512];
    snprintf(fn, sizeof fn, "%s%s", pfx, name);
    return module_find_func(m, fn);
}

/* ---- inlining, as upstream decides it (COMPAT.md 3, 4) ----
 * Upstream inlines a call to f when f's body is one basic block (no
 * if/for/while/parfor), every user function it calls is inlinable too, and
 * f is not a DML builtin. Inlining decides whether named arguments may
 * precede positional ones and whether y = f() may drop outputs. Judged on
 * the syntax, so it works before f's body is bound; 'budget' bounds the
 * walk (cycles, call fan-out). */
static bool func_inlinable(const Program *p, const FuncDef *f, int *budget);

/* Is a statement calling 'name' (no namespace) a control statement
 * (BF_CONTROL: stop, assert)? Such builtins are also BF_STMT_FIRST, so the
 * name means the builtin whatever user functions exist. */
static bool is_control_stmt(const char *name)
{
    const BuiltinDef *bi = builtin_find(name);
    return bi && (bi->flags & BF_STMT_FIRST) && (bi->flags & BF_CONTROL);
}

static bool expr_inlinable(const Program *p, const Module *m, const Node *e, int *budget)
{
    if (!e)
        return true;
    switch (e->kind) {
    case N_BINARY:
        return expr_inlinable(p, m, e->binary.lhs, budget) && expr_inlinable(p, m, e->binary.rhs, budget);
    case N_UNARY:
        return expr_inlinable(p, m, e->unary.operand, budget);
    case N_INDEX:
        return expr_inlinable(p, m, e->index.target, budget) && expr_inlinable(p, m, e->index.rows.lo, budget)
            && expr_inlinable(p, m, e->index.rows.hi, budget) && expr_inlinable(p, m, e->index.cols.lo, budget)
            && expr_inlinable(p, m, e->index.cols.hi, budget);
    case N_EXPRLIST:
        for (int i = 0; i < e->list.n; i++)
            if (!expr_inlinable(p, m, e->list.items[i], budget))
                return false;
        return true;
    case N_CALL: {
        const FuncDef *g = NULL;
        if (e->call.ns) {
            const Module *t = module_find_alias(m, e->call.ns);
            g = t ? module_find_func(t, e->call.name) : NULL;
            if (!g)
                return false;
        } else {
            g = module_find_func(m, e->call.name);
            if (!g && !builtin_find(e->call.name))
                return false;   /* a DML builtin: never inlined */
        }
        if (g && !func_inlinable(p, g, budget))
            return false;
        for (int i = 0; i < e->call.nargs; i++)
            if (!expr_inlinable(p, m, e->call.args[i], budget))
                return false;
        return true;
    }
    default:
        return true;
    }
}

static bool func_inlinable(const Program *p, const FuncDef *f, int *budget)
{
    if (--*budget < 0 || module_is_builtin(f->mod))
        return false;
    const FuncDecl *d = f->decl;
    for (int i = 0; i < d->nbody; i++) {
        const Node *s = d->body[i];
        switch (s->kind) {
        case N_ASSIGN:
            if (!expr_inlinable(p, f->mod, s->assign.value, budget))
                return false;
            break;
        case N_MULTIASSIGN:
            if (!expr_inlinable(p, f->mod, s->multi.call, budget))
                return false;
            break;
        case N_EXPRSTMT:
            /* A stop() or assert() statement is a statement block of its own
             * upstream (PrintStatement.controlStatement), so a body with one
             * and anything else is not a single block. */
            if (d->nbody > 1 && s->expr.e && s->expr.e->kind == N_CALL && !s->expr.e->call.ns
                && is_control_stmt(s->expr.e->call.name))
                return false;
            if (!expr_inlinable(p, f->mod, s->expr.e, budget))
                return false;
            break;
        case N_IFDEF:
            if (!expr_inlinable(p, f->mod, s->ifdef.dflt, budget))
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

static bool inlinable(const Program *p, const FuncDef *f)
{
    int budget = 64;
    return func_inlinable(p, f, &budget);
}

static void bind_user_call(Res *r, Node *n, FuncDef *f, enum CallCtx ctx)
{
    char name[300];
    call_display(n, name, sizeof name);
    const FuncDecl *d = f->decl;
    n->call.fn = f;
    n->call.nparams = d->nparams;
    /* A positional argument after a named one: upstream binds it by position
     * when it inlines the call, and rejects the call otherwise. */
    bool mixed = false, seen_named = false;
    for (int i = 0; i < n->call.nargs; i++) {
        if (n->call.argnames[i])
            seen_named = true;
        else if (seen_named)
            mixed = true;
    }
    /* Too many arguments: upstream's inliner says "Wrong number of function
     * input arguments" for a call it inlines; FunctionCallIdentifier checks
     * the count for the others, before it looks at named/unnamed mixing. */
    if (n->call.nargs > d->nparams) {
        if (ctx != CTX_EXPR && inlinable(r->p, f))
            res_err(r, &n->loc, "Wrong number of function input arguments: %d found, but %d expected.",
                    n->call.nargs, d->nparams);
        else
            res_err(r, &n->loc, "function %s has incorrect number of parameters. Function requires %d but was "
                    "called with %d", n->call.name, d->nparams, n->call.nargs);
        return;
    }
    if (mixed) {
        if (ctx == CTX_EXPR || !inlinable(r->p, f)) {
            res_err(r, &n->loc, " In DML, functions can only have named parameters (e.g., name1=value1, "
                    "name2=value2) or unnamed parameters (e.g, value1, value2). %s has both parameter types.",
                    n->call.name);
            return;
        }
        if (n->call.nargs != d->nparams) {
            res_err(r, &n->loc, "Wrong number of function input arguments: %d found, but %d expected.",
                    n->call.nargs, d->nparams);
            return;
        }
    }
    n->call.argmap = res_alloc(r, sizeof(int) * (size_t)(n->call.nargs + 1), &n->loc);
    bool *bound = n->call.argmap ? calloc((size_t)d->nparams + 1, 1) : NULL;
    if (!bound) {
        res_oom(r, &n->loc);
        return;
    }
    for (int i = 0; i < n->call.nargs && !r->err; i++) {
        const char *an = n->call.argnames[i];
        int pi;
        if (!an) {
            pi = i;
            if (pi >= d->nparams) {
                res_err(r, &n->loc, "too many arguments in call to function '%s': it takes %d, got %d", name,
                        d->nparams, n->call.nargs);
                break;
            }
        } else {
            pi = -1;
            for (int j = 0; j < d->nparams; j++)
                if (strcmp(d->params[j].name, an) == 0)
                    pi = j;
            if (pi < 0 && mixed) {
                res_err(r, &n->call.args[i]->loc, "Non-existing named function argument '%s' in call to %s.", an,
                        n->call.name);
                break;
            }
            if (pi < 0) {
                char sig[512];
                signature(f, sig, sizeof sig);
                res_err(r, &n->call.args[i]->loc,
                        "Named function call parameter '%s' does not exist in signature of function '%s'. "
                        "Function signature: %s", an, name, sig);
                break;
            }
        }
        if (bound[pi]) {
            res_err(r, &n->call.args[i]->loc, "parameter '%s' of function '%s' is bound twice", d->params[pi].name,
                    name);
            break;
        }
        bound[pi] = true;
        n->call.argmap[i] = pi;
    }
    for (int j = 0; j < d->nparams && !r->err; j++)
        if (!bound[j] && !d->params[j].dflt)
            res_err(r, &n->loc, "Missing default expression for unspecified function argument '%s' in call to "
                    "function '%s'.", d->params[j].name, name);
    free(bound);
    if (r->err)
        return;
    /* y = f(...): the first of several outputs, as upstream does for calls it
     * does not inline; an f without outputs leaves y alone (COMPAT.md 4). */
    if (ctx == CTX_ASSIGN && d->nouts > 1 && inlinable(r->p, f))
        res_err(r, &n->loc, "Assignment statement cannot return multiple values");
    /* A bare f(...); whose outputs upstream's inliner has nowhere to bind
     * (StatementBlock.rewriteFunctionCallStatements, COMPAT.md 4); calls
     * it does not inline just drop the outputs. */
    else if (ctx == CTX_STMT && d->nouts > 0 && inlinable(r->p, f))
        res_err(r, &n->loc, "%s requires LHS value", n->call.name);
    /* A call nested in an expression: upstream's parser hoists it into
     * 'tmp = f(...)' before the statement, so it follows the y = f(...)
     * rules: the first output unless the call is inlined. */
    else if (ctx == CTX_EXPR && d->nouts == 0)
        res_err(r, &n->loc, "function '%s' returns no value and cannot be used in an expression", name);
    else if (ctx == CTX_EXPR && d->nouts > 1 && inlinable(r->p, f))
        res_err(r, &n->loc, "Assignment statement cannot return multiple values");
}

/* The builtin's own rules for its arguments' names, if it has any
 * (builtin_api.h: seq, matrix and rand keep upstream's). False (an error
 * set) when the call breaks them. */
static bool arg_names_ok(Res *r, const Node *n, const BuiltinDef *bi)
{
    char buf[256];
    int at;
    const char *msg = builtin_arg_names_error(bi, n->call.nargs, n->call.argnames, &at, buf, sizeof buf);
    if (msg)
        res_err(r, at >= 0 ? &n->call.args[at]->loc : &n->loc, "%s", msg);
    return !msg;
}

/* 'name' in capitals, as upstream's messages write a builtin's name. */
static const char *upper_name(const char *name, char *up, size_t cap)
{
    size_t k = 0;
    for (; name[k] && k + 1 < cap; k++)
        up[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
    up[k] = '\0';
    return up;
}

/* Can builtin bi's call stand where it does (a statement, an expression,
 * the right side of [a, b] = ...)? False with the error set. */
static bool builtin_place_ok(Res *r, const Node *n, const BuiltinDef *bi, enum CallCtx ctx)
{
    const char *name = n->call.name;
    char up[64];
    if ((bi->flags & BF_STATEMENT) && ctx != CTX_STMT && ctx != CTX_REPL)
        res_err(r, &n->loc, "%s() can only be used as a statement, not inside an expression", name);
    else if (ctx == CTX_STMT && !(bi->flags & BF_STATEMENT))
        res_err(r, &n->loc, "Missing variable assignment.");    /* upstream: a value-returning builtin alone */
    else if ((bi->flags & BF_MULTI) && ctx != CTX_MULTI && ctx != CTX_REPL)
        res_err(r, &n->loc, "Function %s needs to be called with multi-return assignment. ([a, b] = %s(...))",
                upper_name(name, up, sizeof up), name);
    else if (ctx == CTX_MULTI && !(bi->flags & (BF_MULTI | BF_MULTI_OPT)))
        res_err(r, &n->loc, "can only use user-defined functions with multi-assignment statement (%s is a builtin "
                "with one result)", name);
    else
        return true;
    return false;
}

/* The source text of a simple argument for a message ("X", "0.01"). */
static void arg_text(const Node *a, char *txt, size_t cap)
{
    switch (a->kind) {
    case N_IDENT: snprintf(txt, cap, "%s", a->ident.name); break;
    case N_INT: snprintf(txt, cap, "%lld", (long long)a->lit.i); break;
    case N_DOUBLE: snprintf(txt, cap, "%.17g", a->lit.d); break;
    case N_BOOL: snprintf(txt, cap, "%s", a->lit.b ? "TRUE" : "FALSE"); break;
    case N_STRING: snprintf(txt, cap, "%.40s", a->str.s); break;
    default: snprintf(txt, cap, "<expression>"); break;
    }
}

/* The arguments of a BF_NAMED_ONLY builtin: upstream lists every unnamed
 * argument and every unknown name, as "name=value", in one message (test
 * paramserv-wrong-args2: "Invalid parameters for PARAMSERV: [modelList,
 * val_featur=X_val]"). False with the error set. */
static bool named_only_ok(Res *r, const Node *n, const BuiltinDef *bi)
{
    const char *name = n->call.name;
    char list[512];
    size_t o = 0;
    bool unnamed = false;
    list[0] = '\0';
    int np = builtin_nparams(bi);
    for (int i = 0; i < n->call.nargs && o + 96 < sizeof list; i++) {
        const char *an = n->call.argnames[i];
        char pbuf[64];
        int j = 0;
        while (an && j < np && strcmp(builtin_param_name(bi, j, pbuf, sizeof pbuf), an) != 0)
            j++;
        if (an && j < np)
            continue;
        unnamed = unnamed || !an;
        char txt[48];
        arg_text(n->call.args[i], txt, sizeof txt);
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s%s%s", o ? ", " : "", an ? an : "", an ? "=" : "",
                              txt);
    }
    if (!o)
        return true;
    char up[64];
    upper_name(name, up, sizeof up);
    if (unnamed) {
        res_err(r, &n->loc, "Invalid parameters for %s: [%s] (every argument of %s() must be named)", up, list, name);
        return false;
    }
    char known[640];
    size_t ko = 0;
    char pbuf[64];
    for (int j = 0; j < np && ko + 70 < sizeof known; j++)
        ko += (size_t)snprintf(known + ko, sizeof known - ko, "%s%s", j ? ", " : "",
                               builtin_param_name(bi, j, pbuf, sizeof pbuf));
    res_err(r, &n->loc, "Invalid parameters for %s: [%s] (%s() takes: %s)", up, list, name, known);
    return false;
}

/* The error for argument i named 'an', which is no parameter of bi. */
static void unknown_param(Res *r, const Node *n, const BuiltinDef *bi, int i, const char *an)
{
    const Loc *loc = &n->call.args[i]->loc;
    char own[512];
    const char *msg = builtin_unknown_param_error(bi, an, own, sizeof own);
    if (msg) {
        res_err(r, loc, "%s", msg);
        return;
    }
    char list[512], pbuf[64];
    size_t o = 0;
    list[0] = '\0';
    int np = builtin_nparams(bi);
    for (int j = 0; j < np && o + 70 < sizeof list; j++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "",
                              builtin_param_name(bi, j, pbuf, sizeof pbuf));
    res_err(r, loc, "Invalid parameters for %s: unknown argument '%s' (expected: %s)", n->call.name, an, list);
}

/* Maps each argument of a BIND_POS/BIND_NAMED call to its parameter
 * (n->call.argmap) and checks the required ones are there. */
static void bind_builtin_args(Res *r, Node *n, const BuiltinDef *bi)
{
    const char *name = n->call.name;
    int np = builtin_nparams(bi);
    n->call.nparams = np;
    n->call.argmap = res_alloc(r, sizeof(int) * (size_t)(n->call.nargs + 1), &n->loc);
    bool *bound = n->call.argmap ? calloc((size_t)np + 1, 1) : NULL;
    if (!bound) {
        res_oom(r, &n->loc);
        return;
    }
    bool seen_named = false;
    int npos = 0;
    for (int i = 0; i < n->call.nargs && !r->err; i++) {
        const char *an = n->call.argnames[i];
        int pi;
        char pbuf[64];
        if (!an || bi->bind == BIND_POS) {
            if (an == NULL && seen_named && bi->bind == BIND_NAMED) {
                res_err(r, &n->call.args[i]->loc, "positional argument after named arguments in call to %s()", name);
                break;
            }
            pi = npos++;
            if (pi >= np) {
                res_err(r, &n->loc, "too many arguments to %s(): it takes at most %d, got %d", name, np,
                        n->call.nargs);
                break;
            }
        } else {
            seen_named = true;
            pi = -1;
            for (int j = 0; j < np; j++)
                if (strcmp(builtin_param_name(bi, j, pbuf, sizeof pbuf), an) == 0)
                    pi = j;
            if (pi < 0) {
                unknown_param(r, n, bi, i, an);
                break;
            }
        }
        if (bound[pi]) {
            res_err(r, &n->call.args[i]->loc, "argument '%s' of %s() is given twice",
                    builtin_param_name(bi, pi, pbuf, sizeof pbuf), name);
            break;
        }
        bound[pi] = true;
        n->call.argmap[i] = pi;
    }
    for (int j = 0; j < bi->min_args && j < np && !r->err; j++) {
        if (!bound[j]) {
            char pbuf[64];
            res_err(r, &n->loc, "%s(): missing argument '%s'", name, builtin_param_name(bi, j, pbuf, sizeof pbuf));
        }
    }
    free(bound);
}

static void bind_builtin_call(Res *r, Node *n, const BuiltinDef *bi, enum CallCtx ctx)
{
    n->call.bi = bi;
    if (!builtin_place_ok(r, n, bi, ctx))
        return;
    if (bi->bind == BIND_VARIADIC) {
        n->call.nparams = n->call.nargs;
        if (n->call.nargs < bi->min_args)
            res_err(r, &n->loc, "%s() needs at least %d argument%s, got %d", n->call.name, bi->min_args,
                    bi->min_args == 1 ? "" : "s", n->call.nargs);
        return;
    }
    if ((bi->flags & BF_NAMED_ONLY) && !named_only_ok(r, n, bi))
        return;
    if (!arg_names_ok(r, n, bi))
        return;
    bind_builtin_args(r, n, bi);
}

/* Bind a call to builtin file bm's m_f/s_f variants; the run time picks
 * one by the first argument (COMPAT.md 1). */
static void bind_variants(Res *r, Node *n, Module *bm, enum CallCtx ctx)
{
    const char *name = n->call.name;
    CallVariants *cv = arena_alloc(r->p->arena, sizeof *cv);
    memset(cv, 0, sizeof *cv);
    cv->name = name;
    cv->fn[0] = variant_func(bm, "m_", name);
    cv->fn[1] = variant_func(bm, "s_", name);
    cv->fn[2] = variant_func(bm, "f_", name);
    if (!cv->fn[0] && !cv->fn[1] && !cv->fn[2]) {
        res_err(r, &n->loc, "Builtin function 'm_%s': script loaded but function not found. Is there a typo in "
                "the function name?", name);
        return;
    }
    /* Upstream checks the arguments against the chosen variant only, so a
     * variant they do not fit fails only if the run time picks it. */
    DiagErr last_err;
    int ok = 0;
    for (int v = 2; v >= 0; v--) {
        if (!cv->fn[v])
            continue;
        bind_user_call(r, n, cv->fn[v], ctx);
        if (r->err) {
            cv->bind_err[v] = arena_strdup(r->p->arena, r->err->msg);
            last_err = *r->err;
            r->err = NULL;
            continue;
        }
        ok++;
        cv->argmap[v] = n->call.argmap;
        cv->nparams[v] = n->call.nparams;
        cv->fnbound = cv->fn[v];
    }
    if (!ok) {
        *r->out = last_err;
        r->err = r->out;
        return;
    }
    int vb = cv->fnbound == cv->fn[0] ? 0 : cv->fnbound == cv->fn[1] ? 1 : 2;
    n->call.fn = cv->fnbound;
    n->call.argmap = cv->argmap[vb];
    n->call.nparams = cv->nparams[vb];
    n->call.variants = cv;
}

void res_call_bind(Res *r, Node *n, enum CallCtx ctx)
{
    FuncDef *f = NULL;
    const BuiltinDef *bi = NULL;
    if (n->call.ns) {
        Module *target = module_find_alias(r->m, n->call.ns);
        if (!target) {
            res_err(r, &n->loc, "namespace %s is not defined (use source(\"file.dml\") as %s)", n->call.ns,
                    n->call.ns);
            return;
        }
        f = module_find_func(target, n->call.name);
        if (!f) {
            res_err(r, &n->loc, "Function %s() is undefined in namespace '%s'. (%s)", n->call.name, n->call.ns,
                    target->key);
            return;
        }
    } else {
        /* print, stop, assert and write as statements are upstream's
         * print/output statements, made by the parser before any function
         * lookup: a user function of that name does not take them over. */
        if (ctx == CTX_STMT || ctx == CTX_REPL) {
            bi = builtin_find(n->call.name);
            if (bi && !(bi->flags & BF_STMT_FIRST))
                bi = NULL;
        }
        if (!bi)
            f = module_find_func(r->m, n->call.name);
        if (!f && !bi)
            bi = builtin_find(n->call.name);
        /* Upstream matches only the data generator rand case-insensitively. */
        if (!f && !bi)
            bi = builtin_find_any_case(n->call.name);
        Module *bm = !f && !bi ? res_builtin_module(r, n->call.name, &n->loc) : NULL;
        if (r->err)
            return;
        if (bm) {
            f = module_find_func(bm, n->call.name);
            if (!f) {
                for (int i = 0; i < n->call.nargs && !r->err; i++)
                    res_expr(r, n->call.args[i], false);
                bind_variants(r, n, bm, ctx);
                return;
            }
        }
        if (!f && !bi) {
            if (upstream_dml_builtin(n->call.name)) {
                res_err(r, &n->loc, "Function %s() is not supported by dml: upstream implements it in DML "
                        "(scripts/builtin/%s.dml), a script dml does not ship; with a copy of that file at "
                        "scripts/builtin/%s.dml under the working directory, dml loads it", n->call.name,
                        n->call.name, n->call.name);
                return;
            }
            char hint[160];
            res_err(r, &n->loc, "Function %s() is undefined.%s", n->call.name,
                    builtin_suggest_function(r->m, n->call.name, hint, sizeof hint));
            return;
        }
    }
    /* exists(X) asks whether X is bound, so an unbound X is FALSE, not an
     * error: it becomes exists("X"), the lookup by name. */
    if (bi && (bi->flags & BF_NAME_ARG) && n->call.nargs == 1 && n->call.args[0]->kind == N_IDENT) {
        Node *id = n->call.args[0];
        Node *sn = ast_node(r->p->arena, N_STRING, id->loc);
        sn->str.s = id->ident.name;
        sn->str.len = (int64_t)strlen(id->ident.name);
        sn->str.v = val_none();
        n->call.args[0] = sn;
    }
    for (int i = 0; i < n->call.nargs && !r->err; i++)
        res_expr(r, n->call.args[i], bi != NULL && n->call.argnames[i] != NULL);
    if (r->err)
        return;
    if (f)
        bind_user_call(r, n, f, ctx);
    else
        bind_builtin_call(r, n, bi, ctx);
}

