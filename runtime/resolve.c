/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass (see resolve.h). Two phases per chunk:
 *   1. declare: register function definitions, process source()/setwd() in
 *      order, loading sourced files (each once, keyed by namespace key);
 *   2. bind: walk every new function body and the chunk's top-level
 *      statements, giving variables slots and binding calls.
 * The first error stops the pass and is recorded (a DiagErr: message and
 * position) for the caller to show. */
#include "resolve_int.h"

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





void res_err(Res *r, const Loc *loc, const char *fmt, ...)
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
void res_oom(Res *r, const Loc *loc)
{
    res_err(r, loc, "out of memory");
}

/* Arena memory for the resolver; NULL (error set) when out of memory. */
void *res_alloc(Res *r, size_t size, const Loc *loc)
{
    void *p = arena_alloc(r->p->arena, size);
    if (!p || arena_failed(r->p->arena)) {
        res_oom(r, loc);
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
        res_oom(r, loc);
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
    res_oom(r, loc);
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
            res_err(r, loc, "Namespace Conflict: '%s' already defined as %s", alias, old->key);
        return;
    }
    if (m->naliases == m->capaliases) {
        int cap = m->capaliases ? m->capaliases * 2 : 8;
        void *na = realloc(m->aliases, sizeof *m->aliases * (size_t)cap);
        if (!na) {
            res_oom(r, loc);
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
        res_err(r, loc, "%s", e->msg);
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
Module *res_builtin_module(Res *r, const char *name, const Loc *loc)
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


static void declare_func(Res *r, Module *m, Node *s)
{
    FuncDecl *d = s->func;
    if (d->external) {
        res_err(r, &s->loc, "externalFunction is not supported: '%s'", d->name);
        return;
    }
    FuncDef *old = module_find_func(m, d->name);
    if (old && !r->repl) {
        res_err(r, &s->loc, "Function Name Conflict: '%s' already defined in %s", d->name, m->path);
        return;
    }
    FuncDef *f = old;
    if (!f) {
        if (m->nfuncs == m->capfuncs) {
            int cap = m->capfuncs ? m->capfuncs * 2 : 16;
            FuncDef **fs = realloc(m->funcs, sizeof *m->funcs * (size_t)cap);
            if (!fs) {
                res_oom(r, &s->loc);
                return;
            }
            m->funcs = fs;
            m->capfuncs = cap;
        }
        f = calloc(1, sizeof *f);
        if (!f) {
            res_oom(r, &s->loc);
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
        res_err(r, &s->loc, "function '%s' has no statements (functions with no statements are not allowed)", d->name);
    if (!pending_add(r->pending, f))
        res_oom(r, &s->loc);
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

static void stmts_bind(Res *r, Node **s, int n);

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
        res_err(r, &n->loc, "The parameter $%s either needs to be passed through commandline or initialized to "
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
        res_expr(r, ip->lo, false);
    if (ip->hi)
        res_expr(r, ip->hi, false);
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
        res_err(r, loc, "expression or statements nested too deeply (more than %d levels)", RES_MAX_DEPTH);
        return true;
    }
    if (!stack_guard_low(&r->stack))
        return false;
    res_err(r, loc, "stack overflow: expression or statements nested too deeply");
    return true;
}

static void expr_node(Res *r, Node *n, bool allow_list);

void res_expr(Res *r, Node *n, bool allow_list)
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
            res_err(r, &n->loc, "Conditional AND (&&) not supported.");
            return;
        }
        if (n->binary.op == OP_OROR) {
            res_err(r, &n->loc, "Conditional OR (||) not supported.");
            return;
        }
        res_expr(r, n->binary.lhs, false);
        res_expr(r, n->binary.rhs, false);
        break;
    case N_UNARY:
        res_expr(r, n->unary.operand, false);
        break;
    case N_CALL:
        res_call_bind(r, n, CTX_EXPR);
        break;
    case N_INDEX:
        res_expr(r, n->index.target, false);
        index_part(r, &n->index.rows);
        if (n->index.has_cols)
            index_part(r, &n->index.cols);
        break;
    case N_EXPRLIST:
        if (!allow_list) {
            res_err(r, &n->loc, "an expression list [...] is only allowed as the value of a named argument such as "
                    "input_shape, filter_shape, pool_size, stride or padding");
            return;
        }
        for (int i = 0; i < n->list.n; i++)
            res_expr(r, n->list.items[i], false);
        break;
    default:
        res_err(r, &n->loc, "internal error: unexpected %s node in an expression", ast_kind_name(n->kind));
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
            res_call_bind(r, s->assign.value, plain ? CTX_ASSIGN : CTX_EXPR);
        } else
            res_expr(r, s->assign.value, false);
        lhs_bind(r, &s->assign.target);
        break;
    case N_MULTIASSIGN: {
        Node *c = s->multi.call;
        if (c->kind != N_CALL) {
            res_err(r, &c->loc, "the right side of a multi-assignment must be a function call");
            return;
        }
        res_call_bind(r, c, CTX_MULTI);
        if (r->err)
            return;
        int nouts = c->call.fn ? c->call.fn->decl->nouts : c->call.bi->nout;
        if (s->multi.n > nouts) {
            res_err(r, &s->loc, "%d targets but %s returns %d value%s", s->multi.n, c->call.name, nouts,
                    nouts == 1 ? "" : "s");
            return;
        }
        for (int i = 0; i < s->multi.n; i++) {
            if (s->multi.targets[i].indexed) {
                res_err(r, &s->multi.targets[i].loc, "targets of a multi-assignment must be plain variables");
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
            res_expr(r, s->ifdef.dflt, false);
        lhs_bind(r, &s->ifdef.target);
        break;
    }
    case N_EXPRSTMT:
        if (s->expr.e->kind != N_CALL) {
            res_expr(r, s->expr.e, false);
            break;
        }
        res_call_bind(r, s->expr.e, CTX_STMT);
        break;
    case N_IF:
        res_expr(r, s->ifs.cond, false);
        stmts_bind(r, s->ifs.then_b, s->ifs.nthen);
        stmts_bind(r, s->ifs.else_b, s->ifs.nelse);
        break;
    case N_FOR:
        res_expr(r, s->loop.from, false);
        res_expr(r, s->loop.to, false);
        res_expr(r, s->loop.by, false);
        for (int i = 0; i < s->loop.nopts; i++) {
            if (s->loop.parfor && !parfor_option_known(s->loop.opts[i].name))
                res_err(r, &s->loop.opts[i].loc, "PARFOR: The specified parameter '%s' is no valid parfor parameter.",
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
                res_err(r, &bad->loc, "PARFOR loop dependency analysis: %s() statement is not allowed inside a parfor "
                        "loop body.", bad->call.name);
            res_collect_writes(r, s);
            if (!parfor_analyze(r->p->arena, s))
                res_err(r, &s->loc, "out of memory");
        }
        break;
    case N_WHILE:
        res_expr(r, s->loop.cond, false);
        stmts_bind(r, s->loop.body, s->loop.nbody);
        break;
    case N_FUNCDEF:
        if (r->fn)
            res_err(r, &s->loc, "function definitions are only allowed at the top level");
        break;
    case N_SOURCE: case N_SETWD:
        break;
    default:
        res_err(r, &s->loc, "internal error: unexpected %s node as a statement", ast_kind_name(s->kind));
    }
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
            res_err(r, &d->params[i].loc, "duplicate parameter '%s' in function '%s'", d->params[i].name, d->name);
        add_slot(r, &f->slots, d->params[i].name, &d->params[i].loc);
        if (d->params[i].type == TY_MATRIX && d->params[i].vtype != SCALAR_DOUBLE && d->params[i].vtype != SCALAR_UNKNOWN)
            res_err(r, &d->params[i].loc, "parameter '%s' of function '%s': matrix[%s] has an unsupported value type "
                    "(use matrix[double])", d->params[i].name, d->name, scalar_type_name(d->params[i].vtype));
    }
    f->out_slots = calloc((size_t)d->nouts + 1, sizeof(int));
    if (!f->out_slots)
        res_oom(r, &d->loc);
    for (int i = 0; i < d->nouts && !r->err; i++)
        f->out_slots[i] = add_slot(r, &f->slots, d->outs[i].name, &d->outs[i].loc);
    /* Defaults are evaluated in the callee's frame, after the arguments that
     * were given are bound, so a default may refer to an earlier parameter. */
    for (int i = 0; i < d->nparams && !r->err; i++)
        res_expr(r, d->params[i].dflt, false);
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
        res_oom(&r, NULL);
    return !r.err;
}

bool resolve_expr(Program *p, Module *m, Node *e, DiagErr *err)
{
    Pending pd = {0};
    Res r = {.p = p, .m = m, .slots = &p->top, .out = err, .repl = true, .pending = &pd};
    stack_guard_init(&r.stack);
    if (e->kind == N_CALL)
        res_call_bind(&r, e, CTX_REPL);
    else
        res_expr(&r, e, false);
    for (int i = 0; i < pd.n && !r.err; i++)
        func_bind(&r, pd.fns[i]);
    free(pd.fns);
    if (!r.err && arena_failed(p->arena))
        res_oom(&r, NULL);
    return !r.err;
}

Module *resolve_builtin_module(Program *p, const char *name, DiagErr *err)
{
    Pending pd = {0};
    Res r = {.p = p, .m = p->main, .slots = &p->top, .out = err, .pending = &pd};
    int before = p->nmods;
    Module *m = res_builtin_module(&r, name, NULL);
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
