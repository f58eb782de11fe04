/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass (see resolve.h). Two phases per chunk:
 *   1. declare: register function definitions, process source()/setwd() in
 *      order, loading sourced files (each once, keyed by namespace key);
 *   2. bind: walk every new function body and the chunk's top-level
 *      statements, giving variables slots and binding calls.
 * The first error stops the pass and is recorded (a DiagErr: message and
 * position) for the caller to show. */
#include "resolve.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "builtin_api.h"
#include "dtcheck.h"
#include "liveness.h"
#include "loader.h"
#include "ops.h"
#include "parfor.h"
#include "stack.h"
#include "upstream_dml_builtins.h"

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

static void rerr(Res *r, const Loc *loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void rerr(Res *r, const Loc *loc, const char *fmt, ...)
{
    if (r->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    diag_vfail(r->out, loc, fmt, ap);
    va_end(ap);
    r->err = r->out;
}

/* The error for a failed allocation; 'loc' may be NULL. */
static void oom(Res *r, const Loc *loc)
{
    rerr(r, loc, "out of memory");
}

/* Arena memory for the resolver; NULL (error set) when out of memory. */
static void *res_alloc(Res *r, size_t size, const Loc *loc)
{
    void *p = arena_alloc(r->p->arena, size);
    if (!p || arena_failed(r->p->arena)) {
        oom(r, loc);
        return NULL;
    }
    return p;
}

/* Registers the parse-time constant 'v' (taking it); a string that could
 * not be made (NULL) or no room in the table is an error, and the constant
 * is then none. */
static Value add_const_take(Res *r, Value v, const Loc *loc)
{
    if ((v.kind == VAL_STRING && !v.s) || !program_add_const_take(r->p, v)) {
        oom(r, loc);
        return val_none();
    }
    return v;
}

/* slots_add, with running out of memory as an error (the slot is then 0,
 * never used: the resolve fails). */
static int add_slot(Res *r, SlotTable *t, const char *name, const Loc *loc)
{
    int s = slots_add(t, name);
    if (s >= 0)
        return s;
    oom(r, loc);
    return 0;
}

static bool pending_add(Pending *pd, FuncDef *f)
{
    if (pd->n == pd->cap) {
        int cap = pd->cap ? pd->cap * 2 : 16;
        FuncDef **fns = realloc(pd->fns, sizeof *pd->fns * (size_t)cap);
        if (!fns)
            return false;
        pd->fns = fns;
        pd->cap = cap;
    }
    pd->fns[pd->n++] = f;
    return true;
}

/* ================= phase 1: declarations and source() ================= */

static void declare(Res *r, Module *m, Node **stmts, int n);

static void add_alias(Res *r, Module *m, const char *alias, Module *target, const Loc *loc)
{
    Module *old = module_find_alias(m, alias);
    if (old) {
        if (old != target)
            rerr(r, loc, "Namespace Conflict: '%s' already defined as %s", alias, old->key);
        return;
    }
    if (m->naliases == m->capaliases) {
        int cap = m->capaliases ? m->capaliases * 2 : 8;
        void *na = realloc(m->aliases, sizeof *m->aliases * (size_t)cap);
        if (!na) {
            oom(r, loc);
            return;
        }
        m->aliases = na;
        m->capaliases = cap;
    }
    m->aliases[m->naliases].alias = alias;
    m->aliases[m->naliases].mod = target;
    m->naliases++;
}

/* Reports a load that failed: a syntax error at its own position, any
 * other failure at 'loc'. */
static void load_failed(Res *r, const DiagErr *e, const Loc *loc)
{
    if (!e->has_loc) {
        rerr(r, loc, "%s", e->msg);
    } else if (!r->err) {
        *r->out = *e;
        r->err = r->out;
    }
}

/* Declares the statements of a module the loader has just parsed (none
 * when it was loaded before). */
static void declare_loaded(Res *r, const Loaded *ld)
{
    Module *saved = r->m;
    r->m = ld->mod;
    declare(r, ld->mod, ld->stmts, ld->n);
    r->m = saved;
}

static void load_source(Res *r, Module *m, const Node *s)
{
    Loaded ld;
    DiagErr e;
    if (!(r->repl ? loader_source_repl : loader_source)(r->p, m, s->source.path, &ld, &e)) {
        load_failed(r, &e, &s->loc);
        return;
    }
    declare_loaded(r, &ld);
    add_alias(r, m, s->source.alias, ld.mod, &s->loc);
}

/* The module of DML-bodied builtin 'name' (loader.h), loading and declaring
 * it on first use; NULL if no file defines it (or on a load error, then set
 * in r). */
static Module *builtin_module(Res *r, const char *name, const Loc *loc)
{
    Loaded ld;
    DiagErr e;
    if (!loader_builtin(r->p, name, &ld, &e)) {
        load_failed(r, &e, loc);
        return NULL;
    }
    if (ld.mod)
        declare_loaded(r, &ld);
    return ld.mod;
}

/* Function pfx+name of module m, or NULL. */
static FuncDef *variant_func(const Module *m, const char *pfx, const char *name)
{
    char fn[512];
    snprintf(fn, sizeof fn, "%s%s", pfx, name);
    return module_find_func(m, fn);
}

static void declare_func(Res *r, Module *m, Node *s)
{
    FuncDecl *d = s->func;
    if (d->external) {
        rerr(r, &s->loc, "externalFunction is not supported: '%s'", d->name);
        return;
    }
    FuncDef *old = module_find_func(m, d->name);
    if (old && !r->repl) {
        rerr(r, &s->loc, "Function Name Conflict: '%s' already defined in %s", d->name, m->path);
        return;
    }
    FuncDef *f = old;
    if (!f) {
        if (m->nfuncs == m->capfuncs) {
            int cap = m->capfuncs ? m->capfuncs * 2 : 16;
            FuncDef **fs = realloc(m->funcs, sizeof *m->funcs * (size_t)cap);
            if (!fs) {
                oom(r, &s->loc);
                return;
            }
            m->funcs = fs;
            m->capfuncs = cap;
        }
        f = calloc(1, sizeof *f);
        if (!f) {
            oom(r, &s->loc);
            return;
        }
        m->funcs[m->nfuncs++] = f;
    } else {
        /* REPL redefinition: the old body is replaced in place, so existing
         * call sites reach the new definition. */
        free(f->slots.names);
        free(f->out_slots);
        memset(f, 0, sizeof *f);
    }
    f->name = d->name;
    f->mod = m;
    f->decl = d;
    if (d->nbody == 0)
        rerr(r, &s->loc, "function '%s' has no statements (functions with no statements are not allowed)", d->name);
    if (!pending_add(r->pending, f))
        oom(r, &s->loc);
}

static void declare(Res *r, Module *m, Node **stmts, int n)
{
    for (int i = 0; i < n && !r->err; i++) {
        Node *s = stmts[i];
        switch (s->kind) {
        case N_FUNCDEF: declare_func(r, m, s); break;
        case N_SOURCE: load_source(r, m, s); break;
        case N_SETWD: m->wd = s->source.path; break;
        default: break;
        }
    }
}

/* ================= phase 2: binding ================= */

static void expr(Res *r, Node *n, bool allow_list);
static void stmts_bind(Res *r, Node **s, int n);
static void collect_writes(Res *r, Node *loop);

/* "$name" -> a typed constant (doc/language.md, "ifdef"): TRUE/FALSE, then
 * what Java's Long.parseLong reads ([+-]digits, nothing around them), then
 * what Double.parseDouble reads ("1e3", "2.5d", "NaN"; not "inf" or
 * "0x10", which stay strings), else a string. */
static Value cmdarg_value(Res *r, const char *text, const Loc *loc)
{
    if (strcmp(text, "TRUE") == 0)
        return val_bool(true);
    if (strcmp(text, "FALSE") == 0)
        return val_bool(false);
    const char *digits = text + (text[0] == '+' || text[0] == '-');
    if (*digits && strspn(digits, "0123456789") == strlen(digits)) {
        errno = 0;
        long long ll = strtoll(text, NULL, 10);
        if (errno == 0)
            return val_int(ll);
    }
    double d;
    if (ops_parse_java_double(text, &d))
        return val_double(d);
    size_t len = strlen(text);
    if (len >= 2 && (text[0] == '"' || text[0] == '\'') && text[len - 1] == text[0])
        return add_const_take(r, val_str_take(str_new(text + 1, len - 2)), loc);
    return add_const_take(r, val_str_take(str_new(text, len)), loc);
}

static const CmdArg *find_arg(const Program *p, const char *name)
{
    for (int i = 0; i < p->nargs; i++)
        if (strcmp(p->args[i].name, name) == 0 && p->args[i].text[0] != '\0')
            return &p->args[i];
    return NULL;
}

static void make_const(Res *r, Node *n, const char *name)
{
    const CmdArg *a = find_arg(r->p, name);
    if (!a) {
        rerr(r, &n->loc, "The parameter $%s either needs to be passed through commandline or initialized to "
             "default value.", name);
        return;
    }
    Value v = cmdarg_value(r, a->text, &n->loc);
    n->kind = N_CONST;
    n->konst = v;
}

static void index_part(Res *r, IndexPart *ip)
{
    if (ip->lo)
        expr(r, ip->lo, false);
    if (ip->hi)
        expr(r, ip->hi, false);
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
            rerr(r, &n->loc, "Wrong number of function input arguments: %d found, but %d expected.",
                 n->call.nargs, d->nparams);
        else
            rerr(r, &n->loc, "function %s has incorrect number of parameters. Function requires %d but was "
                 "called with %d", n->call.name, d->nparams, n->call.nargs);
        return;
    }
    if (mixed) {
        if (ctx == CTX_EXPR || !inlinable(r->p, f)) {
            rerr(r, &n->loc, " In DML, functions can only have named parameters (e.g., name1=value1, "
                 "name2=value2) or unnamed parameters (e.g, value1, value2). %s has both parameter types.",
                 n->call.name);
            return;
        }
        if (n->call.nargs != d->nparams) {
            rerr(r, &n->loc, "Wrong number of function input arguments: %d found, but %d expected.",
                 n->call.nargs, d->nparams);
            return;
        }
    }
    n->call.argmap = res_alloc(r, sizeof(int) * (size_t)(n->call.nargs + 1), &n->loc);
    bool *bound = n->call.argmap ? calloc((size_t)d->nparams + 1, 1) : NULL;
    if (!bound) {
        oom(r, &n->loc);
        return;
    }
    for (int i = 0; i < n->call.nargs && !r->err; i++) {
        const char *an = n->call.argnames[i];
        int pi;
        if (!an) {
            pi = i;
            if (pi >= d->nparams) {
                rerr(r, &n->loc, "too many arguments in call to function '%s': it takes %d, got %d", name,
                     d->nparams, n->call.nargs);
                break;
            }
        } else {
            pi = -1;
            for (int j = 0; j < d->nparams; j++)
                if (strcmp(d->params[j].name, an) == 0)
                    pi = j;
            if (pi < 0 && mixed) {
                rerr(r, &n->call.args[i]->loc, "Non-existing named function argument '%s' in call to %s.", an,
                     n->call.name);
                break;
            }
            if (pi < 0) {
                char sig[512];
                signature(f, sig, sizeof sig);
                rerr(r, &n->call.args[i]->loc,
                     "Named function call parameter '%s' does not exist in signature of function '%s'. "
                     "Function signature: %s", an, name, sig);
                break;
            }
        }
        if (bound[pi]) {
            rerr(r, &n->call.args[i]->loc, "parameter '%s' of function '%s' is bound twice", d->params[pi].name,
                 name);
            break;
        }
        bound[pi] = true;
        n->call.argmap[i] = pi;
    }
    for (int j = 0; j < d->nparams && !r->err; j++)
        if (!bound[j] && !d->params[j].dflt)
            rerr(r, &n->loc, "Missing default expression for unspecified function argument '%s' in call to "
                 "function '%s'.", d->params[j].name, name);
    free(bound);
    if (r->err)
        return;
    /* y = f(...): the first of several outputs, as upstream does for calls it
     * does not inline; an f without outputs leaves y alone (COMPAT.md 4). */
    if (ctx == CTX_ASSIGN && d->nouts > 1 && inlinable(r->p, f))
        rerr(r, &n->loc, "Assignment statement cannot return multiple values");
    /* A bare f(...); whose outputs upstream's inliner has nowhere to bind
     * (StatementBlock.rewriteFunctionCallStatements, COMPAT.md 4); calls
     * it does not inline just drop the outputs. */
    else if (ctx == CTX_STMT && d->nouts > 0 && inlinable(r->p, f))
        rerr(r, &n->loc, "%s requires LHS value", n->call.name);
    /* A call nested in an expression: upstream's parser hoists it into
     * 'tmp = f(...)' before the statement, so it follows the y = f(...)
     * rules: the first output unless the call is inlined. */
    else if (ctx == CTX_EXPR && d->nouts == 0)
        rerr(r, &n->loc, "function '%s' returns no value and cannot be used in an expression", name);
    else if (ctx == CTX_EXPR && d->nouts > 1 && inlinable(r->p, f))
        rerr(r, &n->loc, "Assignment statement cannot return multiple values");
}

/* The arguments' names for seq, matrix and rand, which upstream's parser
 * makes DataExpressions: their own rules and messages, checked in
 * upstream's order. False (an error set) when the call breaks them. */
static bool data_args_ok(Res *r, const Node *n, const BuiltinDef *bi)
{
    int unnamed = 0;
    for (int i = 0; i < n->call.nargs; i++)
        unnamed += n->call.argnames[i] == NULL;
    const int nargs = n->call.nargs, named = nargs - unnamed;
    const char *msg = NULL;
    if (strcmp(bi->name, "seq") == 0) {
        /* from/to/incr bind by name, but only when every argument is named */
        msg = nargs < 2 ? "for seq statement, must specify at least from and to parameters"
              : named && named < nargs ? "for seq statement, cannot mix named and unnamed parameters"
              : nargs > 3 ? "for seq statement, cannot specify more than 3 parameters"
                          : NULL;
        for (int i = 0; !msg && i < nargs; i++) {
            const char *an = n->call.argnames[i];
            if (an && strcmp(an, "from") != 0 && strcmp(an, "to") != 0 && strcmp(an, "incr") != 0) {
                rerr(r, &n->call.args[i]->loc, "unsupported parameter %s. Legal parameters for seq are from, to, incr",
                     an);
                return false;
            }
        }
    } else if (strcmp(bi->name, "matrix") == 0 && nargs > 0) {
        /* all positional (data, rows, cols[, byrow]), or data first
         * (unnamed or data=) and the rest named */
        const char *an0 = n->call.argnames[0];
        if (unnamed > 1)
            msg = unnamed < nargs ? "for matrix statement, cannot mix named and unnamed parameters, only data "
                                    "parameter can be unnammed"
                  : unnamed < 3 ? "for matrix statement, must specify at least 3 arguments: data, rows, cols"
                                : NULL;
        else if (an0 && strcmp(an0, "data") != 0)
            msg = "matrix method must have data parameter as first parameter or unnamed parameter";
        else if (unnamed == 1 && an0)
            msg = "for matrix statement, cannot mix named and unnamed parameters, only data parameter can be unnammed";
    } else if (strcmp(bi->name, "rand") == 0 && unnamed > 0) {
        msg = "for rand statement, all arguments must be named parameters";     /* COMPAT.md 7 */
    }
    if (msg) {
        rerr(r, &n->loc, "%s", msg);
        return false;
    }
    return true;
}

static void bind_builtin_call(Res *r, Node *n, const BuiltinDef *bi, enum CallCtx ctx)
{
    const char *name = n->call.name;
    n->call.bi = bi;
    if ((bi->flags & BF_STATEMENT) && ctx != CTX_STMT && ctx != CTX_REPL) {
        rerr(r, &n->loc, "%s() can only be used as a statement, not inside an expression", name);
        return;
    }
    if (ctx == CTX_STMT && !(bi->flags & BF_STATEMENT)) {
        /* Upstream: a value-returning builtin alone as a statement. */
        rerr(r, &n->loc, "Missing variable assignment.");
        return;
    }
    if ((bi->flags & BF_MULTI) && ctx != CTX_MULTI && ctx != CTX_REPL) {
        char up[64];
        size_t k = 0;
        for (; name[k] && k + 1 < sizeof up; k++)
            up[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
        up[k] = '\0';
        rerr(r, &n->loc, "Function %s needs to be called with multi-return assignment. ([a, b] = %s(...))", up,
             name);
        return;
    }
    if (ctx == CTX_MULTI && !(bi->flags & (BF_MULTI | BF_MULTI_OPT))) {
        rerr(r, &n->loc, "can only use user-defined functions with multi-assignment statement (%s is a builtin "
             "with one result)", name);
        return;
    }
    if (bi->bind == BIND_VARIADIC) {
        n->call.nparams = n->call.nargs;
        if (n->call.nargs < bi->min_args)
            rerr(r, &n->loc, "%s() needs at least %d argument%s, got %d", name, bi->min_args,
                 bi->min_args == 1 ? "" : "s", n->call.nargs);
        return;
    }
    if (bi->flags & BF_NAMED_ONLY) {
        /* Upstream lists every unnamed argument and every unknown name, as
         * "name=value", in one message (test paramserv-wrong-args2:
         * "Invalid parameters for PARAMSERV: [modelList, val_featur=X_val]"). */
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
            const Node *a = n->call.args[i];
            char txt[48];
            switch (a->kind) {
            case N_IDENT: snprintf(txt, sizeof txt, "%s", a->ident.name); break;
            case N_INT: snprintf(txt, sizeof txt, "%lld", (long long)a->lit.i); break;
            case N_DOUBLE: snprintf(txt, sizeof txt, "%.17g", a->lit.d); break;
            case N_BOOL: snprintf(txt, sizeof txt, "%s", a->lit.b ? "TRUE" : "FALSE"); break;
            case N_STRING: snprintf(txt, sizeof txt, "%.40s", a->str.s); break;
            default: snprintf(txt, sizeof txt, "<expression>"); break;
            }
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s%s%s", o ? ", " : "", an ? an : "", an ? "=" : "",
                                  txt);
        }
        if (o) {
            char up[64];
            size_t k = 0;
            for (; name[k] && k + 1 < sizeof up; k++)
                up[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
            up[k] = '\0';
            if (unnamed) {
                rerr(r, &n->loc, "Invalid parameters for %s: [%s] (every argument of %s() must be named)", up, list,
                     name);
                return;
            }
            char known[640];
            size_t ko = 0;
            char pbuf[64];
            for (int j = 0; j < np && ko + 70 < sizeof known; j++)
                ko += (size_t)snprintf(known + ko, sizeof known - ko, "%s%s", j ? ", " : "",
                                       builtin_param_name(bi, j, pbuf, sizeof pbuf));
            rerr(r, &n->loc, "Invalid parameters for %s: [%s] (%s() takes: %s)", up, list, name, known);
            return;
        }
    }
    if (!data_args_ok(r, n, bi))
        return;
    int np = builtin_nparams(bi);
    n->call.nparams = np;
    n->call.argmap = res_alloc(r, sizeof(int) * (size_t)(n->call.nargs + 1), &n->loc);
    bool *bound = n->call.argmap ? calloc((size_t)np + 1, 1) : NULL;
    if (!bound) {
        oom(r, &n->loc);
        return;
    }
    bool seen_named = false;
    int npos = 0;
    for (int i = 0; i < n->call.nargs && !r->err; i++) {
        const char *an = n->call.argnames[i];
        int pi;
        if (!an || bi->bind == BIND_POS) {
            if (an == NULL && seen_named && bi->bind == BIND_NAMED) {
                rerr(r, &n->call.args[i]->loc, "positional argument after named arguments in call to %s()", name);
                break;
            }
            pi = npos++;
            if (pi >= np) {
                rerr(r, &n->loc, "too many arguments to %s(): it takes at most %d, got %d", name, np,
                     n->call.nargs);
                break;
            }
        } else {
            seen_named = true;
            pi = -1;
            char pbuf[64];
            for (int j = 0; j < np; j++)
                if (strcmp(builtin_param_name(bi, j, pbuf, sizeof pbuf), an) == 0)
                    pi = j;
            if (pi < 0) {
                char list[512];
                size_t o = 0;
                list[0] = '\0';
                for (int j = 0; j < np && o + 70 < sizeof list; j++)
                    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "",
                                          builtin_param_name(bi, j, pbuf, sizeof pbuf));
                if (strcmp(bi->name, "toString") == 0)  /* upstream's validateCastAsString */
                    rerr(r, &n->call.args[i]->loc, "Invalid parameter %s for toString, valid parameters are [target, "
                         "rows, cols, decimal, sparse, sep, linesep]", an);
                else if (strcmp(bi->name, "rand") == 0)  /* upstream's own wording for rand (COMPAT.md 7) */
                    rerr(r, &n->call.args[i]->loc, "unexpected parameter \"%s\". Legal parameters for Rand "
                         "statement are (capitalization-sensitive): rows, cols, min, max, sparsity, seed, pdf, "
                         "lambda", an);
                else
                    rerr(r, &n->call.args[i]->loc,
                         "Invalid parameters for %s: unknown argument '%s' (expected: %s)", name, an, list);
                break;
            }
        }
        if (bound[pi]) {
            char pbuf[64];
            rerr(r, &n->call.args[i]->loc, "argument '%s' of %s() is given twice",
                 builtin_param_name(bi, pi, pbuf, sizeof pbuf), name);
            break;
        }
        bound[pi] = true;
        n->call.argmap[i] = pi;
    }
    for (int j = 0; j < bi->min_args && j < np && !r->err; j++) {
        if (!bound[j]) {
            char pbuf[64];
            rerr(r, &n->loc, "%s(): missing argument '%s'", name, builtin_param_name(bi, j, pbuf, sizeof pbuf));
        }
    }
    free(bound);
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
        rerr(r, &n->loc, "Builtin function 'm_%s': script loaded but function not found. Is there a typo in "
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

static void call_bind(Res *r, Node *n, enum CallCtx ctx)
{
    FuncDef *f = NULL;
    const BuiltinDef *bi = NULL;
    if (n->call.ns) {
        Module *target = module_find_alias(r->m, n->call.ns);
        if (!target) {
            rerr(r, &n->loc, "namespace %s is not defined (use source(\"file.dml\") as %s)", n->call.ns,
                 n->call.ns);
            return;
        }
        f = module_find_func(target, n->call.name);
        if (!f) {
            rerr(r, &n->loc, "Function %s() is undefined in namespace '%s'. (%s)", n->call.name, n->call.ns,
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
        Module *bm = !f && !bi ? builtin_module(r, n->call.name, &n->loc) : NULL;
        if (r->err)
            return;
        if (bm) {
            f = module_find_func(bm, n->call.name);
            if (!f) {
                for (int i = 0; i < n->call.nargs && !r->err; i++)
                    expr(r, n->call.args[i], false);
                bind_variants(r, n, bm, ctx);
                return;
            }
        }
        if (!f && !bi) {
            if (upstream_dml_builtin(n->call.name)) {
                rerr(r, &n->loc, "Function %s() is not supported by dml: upstream implements it in DML "
                     "(scripts/builtin/%s.dml), a script dml does not ship; with a copy of that file at "
                     "scripts/builtin/%s.dml under the working directory, dml loads it", n->call.name,
                     n->call.name, n->call.name);
                return;
            }
            char hint[160];
            rerr(r, &n->loc, "Function %s() is undefined.%s", n->call.name,
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
        expr(r, n->call.args[i], bi != NULL && n->call.argnames[i] != NULL);
    if (r->err)
        return;
    if (f)
        bind_user_call(r, n, f, ctx);
    else
        bind_builtin_call(r, n, bi, ctx);
}

/* The error for a tree nested deeper than the C stack allows: a chain of
 * 10^5 operators or indexes is valid syntax that bison reads without
 * growing its own stack. */
enum { RES_MAX_DEPTH = 10000 };

static bool too_deep(Res *r, const Loc *loc)
{
    /* The cap keeps the evaluator's recursion over an accepted tree (a few
     * C frames per level) well inside any C stack, and inside the 64K-frame
     * shadow stacks of the sanitizers; the guard covers smaller stacks. */
    if (r->depth >= RES_MAX_DEPTH) {
        rerr(r, loc, "expression or statements nested too deeply (more than %d levels)", RES_MAX_DEPTH);
        return true;
    }
    if (!stack_guard_low(&r->stack))
        return false;
    rerr(r, loc, "stack overflow: expression or statements nested too deeply");
    return true;
}

static void expr_node(Res *r, Node *n, bool allow_list);

static void expr(Res *r, Node *n, bool allow_list)
{
    if (!n || r->err || too_deep(r, &n->loc))
        return;
    r->depth++;
    expr_node(r, n, allow_list);
    r->depth--;
}

static void expr_node(Res *r, Node *n, bool allow_list)
{
    switch (n->kind) {
    case N_INT: case N_DOUBLE: case N_BOOL: case N_CONST:
        break;
    case N_STRING:
        if (n->str.v.kind == VAL_NONE)
            n->str.v = add_const_take(r, val_str_take(str_new(n->str.s, (size_t)n->str.len)), &n->loc);
        break;
    case N_IDENT:
        n->ident.slot = add_slot(r, r->slots, n->ident.name, &n->loc);
        break;
    case N_CMDARG:
        make_const(r, n, n->cmdarg.name);
        break;
    case N_BINARY:
        if (n->binary.op == OP_ANDAND) {
            rerr(r, &n->loc, "Conditional AND (&&) not supported.");
            return;
        }
        if (n->binary.op == OP_OROR) {
            rerr(r, &n->loc, "Conditional OR (||) not supported.");
            return;
        }
        expr(r, n->binary.lhs, false);
        expr(r, n->binary.rhs, false);
        break;
    case N_UNARY:
        expr(r, n->unary.operand, false);
        break;
    case N_CALL:
        call_bind(r, n, CTX_EXPR);
        break;
    case N_INDEX:
        expr(r, n->index.target, false);
        index_part(r, &n->index.rows);
        if (n->index.has_cols)
            index_part(r, &n->index.cols);
        break;
    case N_EXPRLIST:
        if (!allow_list) {
            rerr(r, &n->loc, "an expression list [...] is only allowed as the value of a named argument such as "
                 "input_shape, filter_shape, pool_size, stride or padding");
            return;
        }
        for (int i = 0; i < n->list.n; i++)
            expr(r, n->list.items[i], false);
        break;
    default:
        rerr(r, &n->loc, "internal error: unexpected %s node in an expression", ast_kind_name(n->kind));
    }
}

static void lhs_bind(Res *r, Lhs *l)
{
    if (l->indexed) {
        index_part(r, &l->rows);
        if (l->has_cols)
            index_part(r, &l->cols);
    }
    l->slot = add_slot(r, r->slots, l->name, &l->loc);
}

/* The options a parfor header accepts (DML.md 5.6). */
static bool parfor_option_known(const char *name)
{
    static const char *const known[] = {"check", "par", "mode", "taskpartitioner", "tasksize", "datapartitioner",
                                        "resultmerge", "opt", "log", "profile"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(name, known[i]) == 0)
            return true;
    return false;
}

static void stmt_node(Res *r, Node *s);

static void stmt(Res *r, Node *s)
{
    if (r->err || too_deep(r, &s->loc))
        return;
    r->depth++;
    stmt_node(r, s);
    r->depth--;
}

static void stmt_node(Res *r, Node *s)
{
    switch (s->kind) {
    case N_ASSIGN:
        if (s->assign.value->kind == N_CALL) {
            bool plain = !s->assign.target.indexed && !s->assign.accum;
            call_bind(r, s->assign.value, plain ? CTX_ASSIGN : CTX_EXPR);
        } else
            expr(r, s->assign.value, false);
        lhs_bind(r, &s->assign.target);
        break;
    case N_MULTIASSIGN: {
        Node *c = s->multi.call;
        if (c->kind != N_CALL) {
            rerr(r, &c->loc, "the right side of a multi-assignment must be a function call");
            return;
        }
        call_bind(r, c, CTX_MULTI);
        if (r->err)
            return;
        int nouts = c->call.fn ? c->call.fn->decl->nouts : c->call.bi->nout;
        if (s->multi.n > nouts) {
            rerr(r, &s->loc, "%d targets but %s returns %d value%s", s->multi.n, c->call.name, nouts,
                 nouts == 1 ? "" : "s");
            return;
        }
        for (int i = 0; i < s->multi.n; i++) {
            if (s->multi.targets[i].indexed) {
                rerr(r, &s->multi.targets[i].loc, "targets of a multi-assignment must be plain variables");
                return;
            }
            lhs_bind(r, &s->multi.targets[i]);
        }
        break;
    }
    case N_IFDEF: {
        const CmdArg *a = find_arg(r->p, s->ifdef.param);
        if (a) {
            Node *c = res_alloc(r, sizeof *c, &s->loc);
            if (!c)
                return;
            c->kind = N_CONST;
            c->loc = s->ifdef.dflt ? s->ifdef.dflt->loc : s->loc;
            c->konst = cmdarg_value(r, a->text, &s->loc);
            s->ifdef.dflt = c;
        } else
            expr(r, s->ifdef.dflt, false);
        lhs_bind(r, &s->ifdef.target);
        break;
    }
    case N_EXPRSTMT:
        if (s->expr.e->kind != N_CALL) {
            expr(r, s->expr.e, false);
            break;
        }
        call_bind(r, s->expr.e, CTX_STMT);
        break;
    case N_IF:
        expr(r, s->ifs.cond, false);
        stmts_bind(r, s->ifs.then_b, s->ifs.nthen);
        stmts_bind(r, s->ifs.else_b, s->ifs.nelse);
        break;
    case N_FOR:
        expr(r, s->loop.from, false);
        expr(r, s->loop.to, false);
        expr(r, s->loop.by, false);
        for (int i = 0; i < s->loop.nopts; i++) {
            if (s->loop.parfor && !parfor_option_known(s->loop.opts[i].name))
                rerr(r, &s->loop.opts[i].loc, "PARFOR: The specified parameter '%s' is no valid parfor parameter.",
                     s->loop.opts[i].name);
            Node *v = s->loop.opts[i].value;
            if (v && v->kind == N_CMDARG)
                make_const(r, v, v->cmdarg.name);
        }
        s->loop.var_slot = add_slot(r, r->slots, s->loop.var, &s->loc);
        stmts_bind(r, s->loop.body, s->loop.nbody);
        if (s->loop.parfor && !r->err) {
            const Node *bad = parfor_forbidden_call(s);
            if (bad)
                rerr(r, &bad->loc, "PARFOR loop dependency analysis: %s() statement is not allowed inside a parfor "
                     "loop body.", bad->call.name);
            collect_writes(r, s);
            if (!parfor_analyze(r->p->arena, s))
                rerr(r, &s->loc, "out of memory");
        }
        break;
    case N_WHILE:
        expr(r, s->loop.cond, false);
        stmts_bind(r, s->loop.body, s->loop.nbody);
        break;
    case N_FUNCDEF:
        if (r->fn)
            rerr(r, &s->loc, "function definitions are only allowed at the top level");
        break;
    case N_SOURCE: case N_SETWD:
        break;
    default:
        rerr(r, &s->loc, "internal error: unexpected %s node as a statement", ast_kind_name(s->kind));
    }
}

/* ---- parfor result variables ---- */

typedef struct Writes {
    int *slot;
    bool *accum_only;
    int n, cap;
    bool oom;               /* an array could not grow */
} Writes;

static void note_write(Writes *w, int slot, bool accum)
{
    for (int i = 0; i < w->n; i++) {
        if (w->slot[i] == slot) {
            w->accum_only[i] = w->accum_only[i] && accum;
            return;
        }
    }
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 8;
        int *ns = realloc(w->slot, sizeof *w->slot * (size_t)cap);
        if (ns)
            w->slot = ns;
        bool *na = ns ? realloc(w->accum_only, sizeof *w->accum_only * (size_t)cap) : NULL;
        if (!na) {
            w->oom = true;
            return;
        }
        w->accum_only = na;
        w->cap = cap;
    }
    w->slot[w->n] = slot;
    w->accum_only[w->n] = accum;
    w->n++;
}

static void writes_of(Writes *w, Node **stmts, int n)
{
    for (int i = 0; i < n; i++) {
        Node *s = stmts[i];
        switch (s->kind) {
        case N_ASSIGN: note_write(w, s->assign.target.slot, s->assign.accum); break;
        case N_IFDEF: note_write(w, s->ifdef.target.slot, false); break;
        case N_MULTIASSIGN:
            for (int j = 0; j < s->multi.n; j++)
                note_write(w, s->multi.targets[j].slot, false);
            break;
        case N_IF:
            writes_of(w, s->ifs.then_b, s->ifs.nthen);
            writes_of(w, s->ifs.else_b, s->ifs.nelse);
            break;
        case N_FOR:
            note_write(w, s->loop.var_slot, false);
            writes_of(w, s->loop.body, s->loop.nbody);
            break;
        case N_WHILE:
            writes_of(w, s->loop.body, s->loop.nbody);
            break;
        default:
            break;
        }
    }
}

/* Record which slots a parfor body writes (its result variables and
 * locals); the loop variable itself is one of them. */
static void collect_writes(Res *r, Node *loop)
{
    Writes w = {0};
    note_write(&w, loop->loop.var_slot, false);
    writes_of(&w, loop->loop.body, loop->loop.nbody);
    int *written = w.oom ? NULL : res_alloc(r, sizeof(int) * (size_t)w.n, &loop->loc);
    bool *accum_only = written ? res_alloc(r, sizeof(bool) * (size_t)w.n, &loop->loc) : NULL;
    if (accum_only) {
        loop->loop.written = written;
        loop->loop.accum_only = accum_only;
        memcpy(loop->loop.written, w.slot, sizeof(int) * (size_t)w.n);
        memcpy(loop->loop.accum_only, w.accum_only, sizeof(bool) * (size_t)w.n);
        loop->loop.nwritten = w.n;
    } else
        oom(r, &loop->loc);
    free(w.slot);
    free(w.accum_only);
}

static void stmts_bind(Res *r, Node **s, int n)
{
    for (int i = 0; i < n && !r->err; i++)
        stmt(r, s[i]);
}

static const char *scalar_type_name(ScalarType t)
{
    switch (t) {
    case SCALAR_INT: return "int";
    case SCALAR_DOUBLE: return "double";
    case SCALAR_BOOLEAN: return "boolean";
    case SCALAR_STRING: return "string";
    default: return "unknown";
    }
}

static void func_bind(Res *r, FuncDef *f)
{
    const FuncDecl *d = f->decl;
    Module *saved_m = r->m;
    SlotTable *saved_slots = r->slots;
    const FuncDef *saved_fn = r->fn;
    r->m = f->mod;
    r->slots = &f->slots;
    r->fn = f;
    for (int i = 0; i < d->nparams && !r->err; i++) {
        if (slots_find(&f->slots, d->params[i].name) >= 0)
            rerr(r, &d->params[i].loc, "duplicate parameter '%s' in function '%s'", d->params[i].name, d->name);
        add_slot(r, &f->slots, d->params[i].name, &d->params[i].loc);
        if (d->params[i].type == TY_MATRIX && d->params[i].vtype != SCALAR_DOUBLE && d->params[i].vtype != SCALAR_UNKNOWN)
            rerr(r, &d->params[i].loc, "parameter '%s' of function '%s': matrix[%s] has an unsupported value type "
                 "(use matrix[double])", d->params[i].name, d->name, scalar_type_name(d->params[i].vtype));
    }
    f->out_slots = calloc((size_t)d->nouts + 1, sizeof(int));
    if (!f->out_slots)
        oom(r, &d->loc);
    for (int i = 0; i < d->nouts && !r->err; i++)
        f->out_slots[i] = add_slot(r, &f->slots, d->outs[i].name, &d->outs[i].loc);
    /* Defaults are evaluated in the callee's frame, after the arguments that
     * were given are bound, so a default may refer to an earlier parameter. */
    for (int i = 0; i < d->nparams && !r->err; i++)
        expr(r, d->params[i].dflt, false);
    stmts_bind(r, d->body, d->nbody);
    if (!r->err && !dtcheck_body(&f->slots, d, d->body, d->nbody, 0, r->out))
        r->err = r->out;
    if (!r->err)
        liveness_func(f);
    r->m = saved_m;
    r->slots = saved_slots;
    r->fn = saved_fn;
}

bool resolve_chunk(Program *p, Module *m, Node **stmts, int n, bool repl, DiagErr *err)
{
    Pending pd = {0};
    Res r = {.p = p, .m = m, .slots = &p->top, .out = err, .repl = repl, .pending = &pd};
    stack_guard_init(&r.stack);
    int known = p->top.n;
    declare(&r, m, stmts, n);
    /* Binding a body may load a DML-bodied builtin, which appends its
     * functions to the pending list: re-read pd.n each time round. */
    for (int i = 0; i < pd.n && !r.err; i++)
        func_bind(&r, pd.fns[i]);
    r.m = m;
    r.slots = &p->top;
    r.fn = NULL;
    int bound = pd.n;
    stmts_bind(&r, stmts, n);
    if (!r.err && !dtcheck_body(&p->top, NULL, stmts, n, known, r.out))
        r.err = r.out;
    /* ... and so may the top-level statements. */
    for (int i = bound; i < pd.n && !r.err; i++)
        func_bind(&r, pd.fns[i]);
    free(pd.fns);
    if (!r.err && arena_failed(p->arena))
        oom(&r, NULL);
    return !r.err;
}

bool resolve_expr(Program *p, Module *m, Node *e, DiagErr *err)
{
    Pending pd = {0};
    Res r = {.p = p, .m = m, .slots = &p->top, .out = err, .repl = true, .pending = &pd};
    stack_guard_init(&r.stack);
    if (e->kind == N_CALL)
        call_bind(&r, e, CTX_REPL);
    else
        expr(&r, e, false);
    for (int i = 0; i < pd.n && !r.err; i++)
        func_bind(&r, pd.fns[i]);
    free(pd.fns);
    if (!r.err && arena_failed(p->arena))
        oom(&r, NULL);
    return !r.err;
}

Module *resolve_builtin_module(Program *p, const char *name, DiagErr *err)
{
    Pending pd = {0};
    Res r = {.p = p, .m = p->main, .slots = &p->top, .out = err, .pending = &pd};
    int before = p->nmods;
    Module *m = builtin_module(&r, name, NULL);
    for (int i = 0; i < pd.n && !r.err; i++)
        func_bind(&r, pd.fns[i]);
    free(pd.fns);
    if (r.err) {
        /* Half-bound modules must never be found again: hide them. */
        for (int i = before; i < p->nmods; i++)
            p->mods[i]->key = "<failed>";
        return NULL;
    }
    return m;
}
