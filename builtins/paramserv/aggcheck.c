/* SPDX-License-Identifier: Apache-2.0
 * Whether agg treats the model cell by cell (ps.h, ps_agg_cellwise), so
 * that paramserv(servers=S) may split every model entry into S ranges of
 * cells and have each server rank apply agg to its ranges alone
 * (tp_mpi_shard.c). In the spirit of readset.c: a scan of agg's code,
 * deliberately small, that says yes only when it can show it.
 *
 * Each value the scan meets is given an abstract kind: a scalar (from
 * literals, the hyperparameters and arithmetic on those; an integer literal
 * and +, -, * on such stay known, so that for (i in 1:8) model[i] names
 * entry i), the cells of model entries (model[i], gradients[i] and what
 * element-wise operations make of them), a list of such (the model, the
 * gradients, list(...)), or the shape of cells (nrow/ncol, allowed only as
 * matrix()'s rows and cols). Element-wise operators and functions keep
 * cells as cells; anything that mixes cells (%*%, t(), aggregates such as
 * sum, indexing a matrix, as.scalar of cells, a condition on cells, a
 * builtin not known to work cell by cell) is refused with what it was. Two
 * entries combined cell by cell must have the same shape on every server
 * (a weight and its momentum buffer do): the scan joins them in classes,
 * and the model's shapes are checked against the classes at the end. DML
 * functions that agg calls are followed with the abstract arguments;
 * recursion, and bodies deeper than the scan goes, are refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps.h"

/* Bounds of the scan: nested calls, the depth of the code, iterations
 * of one unrolled loop, statements looked at in all (loops unrolled), and
 * the memory of its abstract values. Past any, agg is refused. */
enum { AC_MAX_CALLS = 64, AC_MAX_DEPTH = 4096, AC_MAX_UNROLL = 4096, AC_MAX_STEPS = 200000 };
#define AC_MAX_BYTES ((size_t)64 << 20)

typedef enum AKind { AK_UNSET, AK_SCALAR, AK_CELLS, AK_SHAPE, AK_HYPER, AK_LIST } AKind;

typedef struct AVal {
    AKind kind;
    bool known;                 /* AK_SCALAR: an integer of value k */
    int64_t k;
    int64_t cls;                /* AK_CELLS / AK_SHAPE: a class of model entries */
    struct AVal *items;         /* AK_LIST: n items (the scan's pool) */
    int64_t n;
} AVal;

typedef struct ACheck {
    int64_t n;                  /* model entries */
    int64_t *parent;            /* union-find over the entries */
    void **pool;                /* every array the scan allocated */
    int64_t npool, cappool;
    char why[512];
    bool bad;
    int calls, depth;
    int64_t steps;
    size_t bytes;
    const FuncDef *stack[AC_MAX_CALLS];
    const Loc *at;              /* the construct being looked at */
} ACheck;

typedef struct AEnv {
    AVal *slots;
    int n;
} AEnv;

static void refuse(ACheck *c, const char *fmt, ...)
{
    if (c->bad)
        return;
    c->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    size_t len = strlen(c->why);
    if (c->at && c->at->file && len < sizeof c->why)
        snprintf(c->why + len, sizeof c->why - len, " (%s:%d:%d)", c->at->file, c->at->line, c->at->col);
}

static void *ac_alloc(ACheck *c, size_t n)
{
    if (c->bytes + n > AC_MAX_BYTES) {
        refuse(c, "its code is larger than the scan follows");
        return NULL;
    }
    c->bytes += n;
    void *p = calloc(n ? n : 1, 1);
    if (p && c->npool == c->cappool) {
        int64_t cap = c->cappool ? c->cappool * 2 : 32;
        void **np = realloc(c->pool, sizeof *np * (size_t)cap);
        if (!np) {
            free(p);
            p = NULL;
        } else {
            c->pool = np;
            c->cappool = cap;
        }
    }
    if (!p) {
        refuse(c, "out of memory");
        return NULL;
    }
    c->pool[c->npool++] = p;
    return p;
}

static int64_t find(ACheck *c, int64_t i)
{
    while (c->parent[i] != i)
        i = c->parent[i] = c->parent[c->parent[i]];
    return i;
}

static void unite(ACheck *c, int64_t a, int64_t b)
{
    a = find(c, a);
    b = find(c, b);
    if (a != b)
        c->parent[a > b ? a : b] = a < b ? a : b;
}

static AVal scalar(void) { return (AVal){.kind = AK_SCALAR}; }
static AVal known(int64_t k) { return (AVal){.kind = AK_SCALAR, .known = true, .k = k}; }
static AVal cells(int64_t cls) { return (AVal){.kind = AK_CELLS, .cls = cls}; }
static AVal none(void) { return (AVal){.kind = AK_UNSET}; }

static AVal list_of(ACheck *c, int64_t n)
{
    AVal v = {.kind = AK_LIST, .n = n};
    v.items = ac_alloc(c, sizeof *v.items * (size_t)n);
    if (!v.items)
        v.n = 0;
    return v;
}

/* The join of two values a variable may hold after a branch. */
static AVal join(ACheck *c, AVal a, AVal b)
{
    if (a.kind == AK_UNSET)
        return b;
    if (b.kind == AK_UNSET)
        return a;
    if (a.kind == AK_SCALAR && b.kind == AK_SCALAR)
        return a.known && b.known && a.k == b.k ? a : scalar();
    if ((a.kind == AK_CELLS || a.kind == AK_SCALAR) && (b.kind == AK_CELLS || b.kind == AK_SCALAR)) {
        if (a.kind == AK_CELLS && b.kind == AK_CELLS)
            unite(c, a.cls, b.cls);
        return a.kind == AK_CELLS ? a : b;
    }
    if (a.kind == AK_SHAPE && b.kind == AK_SHAPE) {
        unite(c, a.cls, b.cls);
        return a;
    }
    if (a.kind == AK_HYPER && b.kind == AK_HYPER)
        return a;
    if (a.kind == AK_LIST && b.kind == AK_LIST && a.n == b.n) {
        AVal r = list_of(c, a.n);
        for (int64_t i = 0; i < r.n; i++)
            r.items[i] = join(c, a.items[i], b.items[i]);
        return r;
    }
    refuse(c, "a variable holds a list in one branch and something else in another");
    return none();
}

static AEnv env_copy(ACheck *c, const AEnv *e)
{
    AEnv r = {ac_alloc(c, sizeof *r.slots * (size_t)e->n), e->n};
    if (r.slots)
        memcpy(r.slots, e->slots, sizeof *r.slots * (size_t)e->n);
    else
        r.n = 0;
    return r;
}

static void env_join(ACheck *c, AEnv *into, const AEnv *other)
{
    for (int i = 0; i < into->n && i < other->n; i++)
        into->slots[i] = join(c, into->slots[i], other->slots[i]);
}

static AVal expr(ACheck *c, AEnv *env, const Node *e);
static void block(ACheck *c, AEnv *env, Node *const *s, int n);
static void call_outs(ACheck *c, AEnv *env, const Node *e, AVal *outs, int nout);

/* Operands of an element-wise operation: scalars and cells of one class. */
static AVal elementwise(ACheck *c, const AVal *a, int n, const char *what)
{
    AVal r = scalar();
    for (int i = 0; i < n; i++) {
        if (a[i].kind == AK_SCALAR)
            continue;
        if (a[i].kind != AK_CELLS) {
            refuse(c, "%s is applied to %s", what,
                   a[i].kind == AK_LIST ? "a list" : a[i].kind == AK_HYPER ? "the hyperparameters"
                   : a[i].kind == AK_SHAPE ? "the shape of model cells" : "a value the scan does not know");
            return none();
        }
        if (r.kind == AK_CELLS)
            unite(c, r.cls, a[i].cls);
        r = a[i];
    }
    return r;
}

static AVal binary(ACheck *c, const Node *e, AVal a, AVal b)
{
    BinOp op = e->binary.op;
    if (op == OP_MATMUL) {
        if (a.kind == AK_SCALAR && b.kind == AK_SCALAR)
            return scalar();
        refuse(c, "it multiplies matrices (%%*%%), which mixes cells");
        return none();
    }
    if (a.kind == AK_SCALAR && b.kind == AK_SCALAR) {
        if (a.known && b.known && (op == OP_ADD || op == OP_SUB || op == OP_MUL)) {
            int64_t r;
            bool ovf = op == OP_ADD ? __builtin_add_overflow(a.k, b.k, &r)
                     : op == OP_SUB ? __builtin_sub_overflow(a.k, b.k, &r) : __builtin_mul_overflow(a.k, b.k, &r);
            return ovf ? scalar() : known(r);
        }
        return scalar();
    }
    char what[64];
    snprintf(what, sizeof what, "the operator %s", ast_binop_name(op));
    AVal ops[2] = {a, b};
    return elementwise(c, ops, 2, what);
}

/* Builtins that compute each cell from the same cell of their operands
 * (scalars broadcast). */
static bool cellwise_builtin(const char *name, int nargs)
{
    static const char *const one[] = {
        "abs", "sqrt", "exp", "log", "sign", "round", "floor", "ceil", "ceiling", "sin", "cos", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "ifelse", "is.na", "is.nan", "is.infinite", "pmin",
        "pmax", "xor", NULL};
    for (int i = 0; one[i]; i++)
        if (strcmp(name, one[i]) == 0)
            return true;
    /* min(X, Y) and max(X, Y) are cell by cell; min(X) is an aggregate. */
    return nargs >= 2 && (strcmp(name, "min") == 0 || strcmp(name, "max") == 0);
}

/* The argument of a builtin call named 'name' or at position 'pos'. */
static const Node *arg_of(const Node *e, const char *name, int pos)
{
    for (int i = 0; i < e->call.nargs; i++)
        if (e->call.argnames && e->call.argnames[i] && strcmp(e->call.argnames[i], name) == 0)
            return e->call.args[i];
    int p = 0;
    for (int i = 0; i < e->call.nargs; i++)
        if (!e->call.argnames || !e->call.argnames[i]) {
            if (p == pos)
                return e->call.args[i];
            p++;
        }
    return NULL;
}

static AVal builtin_call(ACheck *c, AEnv *env, const Node *e)
{
    const char *name = e->call.bi->name;
    int n = e->call.nargs;
    AVal few[8], *a = n <= 8 ? few : ac_alloc(c, sizeof *a * (size_t)n);
    if (!a)
        return none();
    for (int i = 0; i < n && !c->bad; i++)
        a[i] = expr(c, env, e->call.args[i]);
    if (c->bad)
        return none();
    if (strcmp(name, "list") == 0) {
        AVal l = list_of(c, n);
        for (int i = 0; i < l.n; i++)
            l.items[i] = a[i];
        return l;
    }
    if (strcmp(name, "as.scalar") == 0 || strcmp(name, "as.double") == 0 || strcmp(name, "as.integer") == 0 ||
        strcmp(name, "as.logical") == 0) {
        if (n == 1 && (a[0].kind == AK_HYPER || a[0].kind == AK_SCALAR))
            return scalar();
        refuse(c, "%s() reads model cells as a scalar", name);
        return none();
    }
    if (strcmp(name, "as.matrix") == 0) {
        if (n == 1 && a[0].kind == AK_CELLS)
            return a[0];
        if (n == 1 && a[0].kind == AK_LIST && a[0].n == 1 && a[0].items[0].kind == AK_CELLS)
            return a[0].items[0];
        refuse(c, "as.matrix() makes a matrix of something other than model cells");
        return none();
    }
    if (strcmp(name, "nrow") == 0 || strcmp(name, "ncol") == 0 || strcmp(name, "length") == 0) {
        if (n == 1 && a[0].kind == AK_CELLS && strcmp(name, "length") != 0)
            return (AVal){.kind = AK_SHAPE, .cls = a[0].cls};
        if (n == 1 && (a[0].kind == AK_LIST || a[0].kind == AK_SCALAR || a[0].kind == AK_HYPER))
            return scalar();
        refuse(c, "%s() of model cells differs between the servers' shares", name);
        return none();
    }
    if (strcmp(name, "matrix") == 0) {
        /* matrix(v, rows=nrow(X), cols=ncol(X)): a fill in X's shape. */
        const Node *r = arg_of(e, "rows", 1), *cl = arg_of(e, "cols", 2), *d = arg_of(e, "data", 0);
        AVal vr = r ? expr(c, env, r) : none(), vc = cl ? expr(c, env, cl) : none();
        AVal vd = d ? expr(c, env, d) : none();
        if (n == 3 && vd.kind == AK_SCALAR && vr.kind == AK_SHAPE && vc.kind == AK_SHAPE) {
            unite(c, vr.cls, vc.cls);
            return cells(vr.cls);
        }
        refuse(c, "matrix() makes a matrix that is not shaped like model cells (rows=nrow(X), cols=ncol(X))");
        return none();
    }
    if (strcmp(name, "print") == 0 || strcmp(name, "stop") == 0 || strcmp(name, "assert") == 0) {
        for (int i = 0; i < n; i++)
            if (a[i].kind != AK_SCALAR) {
                refuse(c, "%s() is given something other than a scalar", name);
                return none();
            }
        return scalar();
    }
    if (cellwise_builtin(name, n)) {
        char what[80];
        snprintf(what, sizeof what, "%s()", name);
        return elementwise(c, a, n, what);
    }
    bool all_scalar = true;
    for (int i = 0; i < n; i++)
        all_scalar = all_scalar && a[i].kind == AK_SCALAR;
    /* Any builtin of scalars alone is a scalar of the hyperparameters, the
     * same on every server (no random draws: those would differ). */
    if (all_scalar && strcmp(name, "rand") != 0 && strcmp(name, "sample") != 0 && strcmp(name, "time") != 0)
        return scalar();
    refuse(c, "%s() is not known to work cell by cell", name);
    return none();
}

/* A DML function called with the arguments' kinds: its outputs'. */
static void func_call(ACheck *c, AEnv *env, const Node *e, const FuncDef *f, const int *argmap, AVal *outs,
                      int nout)
{
    const FuncDecl *d = f->decl;
    for (int i = 0; i < c->calls; i++)
        if (c->stack[i] == f) {
            refuse(c, "it calls %s() recursively", f->name);
            return;
        }
    if (c->calls >= AC_MAX_CALLS) {
        refuse(c, "its calls nest deeper than the scan goes");
        return;
    }
    AEnv fe = {ac_alloc(c, sizeof(AVal) * (size_t)(f->slots.n + 1)), f->slots.n};
    if (!fe.slots)
        return;
    bool *bound = ac_alloc(c, sizeof *bound * (size_t)(d->nparams + 1));
    if (!bound)
        return;
    for (int i = 0; i < e->call.nargs && !c->bad; i++) {
        int p = argmap ? argmap[i] : i;
        if (p < 0 || p >= d->nparams) {
            refuse(c, "the call of %s() binds its arguments in a way the scan does not follow", f->name);
            return;
        }
        fe.slots[p] = expr(c, env, e->call.args[i]);
        bound[p] = true;
    }
    c->stack[c->calls++] = f;
    for (int i = 0; i < d->nparams && !c->bad; i++)
        if (!bound[i]) {
            if (!d->params[i].dflt)
                refuse(c, "%s() is called without its parameter %s", f->name, d->params[i].name);
            else
                fe.slots[i] = expr(c, &fe, d->params[i].dflt);
        }
    block(c, &fe, d->body, d->nbody);
    c->calls--;
    for (int i = 0; i < nout && i < d->nouts && !c->bad; i++) {
        outs[i] = fe.slots[f->out_slots[i]];
        if (outs[i].kind == AK_UNSET)
            refuse(c, "%s() leaves its output %s unset", f->name, d->outs[i].name);
    }
}

static void call_outs(ACheck *c, AEnv *env, const Node *e, AVal *outs, int nout)
{
    if (e->kind != N_CALL) {
        refuse(c, "a multiple assignment from something other than a call");
        return;
    }
    if (e->call.bi) {
        if (nout == 1)
            outs[0] = builtin_call(c, env, e);
        else
            refuse(c, "%s() returns several results, which the scan does not follow", e->call.bi->name);
        return;
    }
    const FuncDef *f = e->call.fn;
    const int *argmap = e->call.argmap;
    if (e->call.variants) {
        refuse(c, "%s() is a builtin written in DML that the scan does not follow", e->call.name);
        return;
    }
    if (!f) {
        refuse(c, "%s() is not resolved", e->call.name);
        return;
    }
    func_call(c, env, e, f, argmap, outs, nout);
}

/* X[...] where X is a list: a known entry (or range) of it. */
static AVal index_list(ACheck *c, AEnv *env, AVal t, const Node *e)
{
    const IndexPart *ip = &e->index.rows;
    if (e->index.has_cols || ip->kind == IX_ALL) {
        refuse(c, "a list is indexed in a way the scan does not follow");
        return none();
    }
    AVal lo = expr(c, env, ip->lo), hi = ip->kind == IX_RANGE ? expr(c, env, ip->hi) : lo;
    if (c->bad)
        return none();
    if (!lo.known || !hi.known || lo.k < 1 || hi.k < lo.k || hi.k > t.n) {
        refuse(c, "a model entry is chosen by an index the scan cannot tell (use integer literals or a for "
               "loop over literal bounds)");
        return none();
    }
    if (ip->kind == IX_ONE)
        return t.items[lo.k - 1];
    AVal r = list_of(c, hi.k - lo.k + 1);
    for (int64_t i = 0; i < r.n; i++)
        r.items[i] = t.items[lo.k - 1 + i];
    return r;
}

static AVal expr(ACheck *c, AEnv *env, const Node *e)
{
    if (!e || c->bad)
        return none();
    if (++c->depth > AC_MAX_DEPTH) {
        refuse(c, "its code nests deeper than the scan goes");
        c->depth--;
        return none();
    }
    AVal r = none();
    const Loc *outer = c->at;
    c->at = &e->loc;
    switch (e->kind) {
    case N_INT: r = known(e->lit.i); break;
    case N_DOUBLE: case N_BOOL: case N_STRING: case N_CONST: case N_CMDARG: r = scalar(); break;
    case N_IDENT:
        if (e->ident.slot < 0 || e->ident.slot >= env->n || env->slots[e->ident.slot].kind == AK_UNSET)
            refuse(c, "it reads %s, which the scan cannot follow", e->ident.name);
        else
            r = env->slots[e->ident.slot];
        break;
    case N_BINARY: {
        AVal a = expr(c, env, e->binary.lhs), b = expr(c, env, e->binary.rhs);
        if (!c->bad)
            r = binary(c, e, a, b);
        break;
    }
    case N_UNARY: {
        AVal a = expr(c, env, e->unary.operand);
        if (!c->bad && a.kind == AK_SCALAR)
            r = a.known && e->unary.op == UOP_NEG && a.k != INT64_MIN ? known(-a.k)
              : a.known && e->unary.op == UOP_PLUS ? a : scalar();
        else if (!c->bad)
            r = elementwise(c, &a, 1, "a unary operator");
        break;
    }
    case N_INDEX: {
        AVal t = expr(c, env, e->index.target);
        if (c->bad)
            break;
        if (t.kind == AK_LIST)
            r = index_list(c, env, t, e);
        else if (t.kind == AK_HYPER)
            r = t;      /* hyperparams["lr"] */
        else
            refuse(c, "it indexes a matrix, which picks cells by position");
        break;
    }
    case N_CALL:
        call_outs(c, env, e, &r, 1);
        break;
    default:
        refuse(c, "it has an expression the scan does not know");
        break;
    }
    c->at = outer;
    c->depth--;
    return r;
}

static void assign(ACheck *c, AEnv *env, const Lhs *l, AVal v)
{
    if (c->bad)
        return;
    if (l->slot < 0 || l->slot >= env->n) {
        refuse(c, "it assigns %s, which the scan cannot follow", l->name);
        return;
    }
    if (!l->indexed) {
        env->slots[l->slot] = v;
        return;
    }
    AVal t = env->slots[l->slot];
    if (t.kind != AK_LIST || l->has_cols || l->rows.kind != IX_ONE) {
        refuse(c, "it assigns into part of %s, which mixes cells", l->name);
        return;
    }
    AVal i = expr(c, env, l->rows.lo);
    if (c->bad)
        return;
    if (!i.known || i.k < 1 || i.k > t.n) {
        refuse(c, "it assigns a list entry chosen by an index the scan cannot tell");
        return;
    }
    AVal nl = list_of(c, t.n);
    for (int64_t j = 0; j < nl.n; j++)
        nl.items[j] = t.items[j];
    if (nl.n)
        nl.items[i.k - 1] = v.kind == AK_LIST && v.n == 1 ? v.items[0] : v;
    env->slots[l->slot] = nl;
}

static void stmt(ACheck *c, AEnv *env, const Node *s)
{
    if (++c->steps > AC_MAX_STEPS) {
        refuse(c, "its code (loops unrolled) is longer than the scan follows");
        return;
    }
    const Loc *outer = c->at;
    c->at = &s->loc;
    switch (s->kind) {
    case N_ASSIGN: {
        AVal v = expr(c, env, s->assign.value);
        if (s->assign.accum && !c->bad) {
            AVal old = s->assign.target.slot >= 0 && s->assign.target.slot < env->n
                       ? env->slots[s->assign.target.slot] : none();
            Node fake = {.kind = N_BINARY};
            fake.binary.op = OP_ADD;
            v = binary(c, &fake, old, v);
        }
        assign(c, env, &s->assign.target, v);
        break;
    }
    case N_MULTIASSIGN: {
        int n = s->multi.n;
        AVal *outs = ac_alloc(c, sizeof *outs * (size_t)(n + 1));
        if (!outs)
            break;
        call_outs(c, env, s->multi.call, outs, n);
        for (int i = 0; i < n && !c->bad; i++)
            assign(c, env, &s->multi.targets[i], outs[i]);
        break;
    }
    case N_IFDEF:
        assign(c, env, &s->ifdef.target, scalar());
        break;
    case N_EXPRSTMT:
        expr(c, env, s->expr.e);
        break;
    case N_IF: {
        AVal cond = expr(c, env, s->ifs.cond);
        if (!c->bad && cond.kind != AK_SCALAR) {
            refuse(c, "an if depends on model cells");
            break;
        }
        AEnv other = env_copy(c, env);
        block(c, env, s->ifs.then_b, s->ifs.nthen);
        block(c, &other, s->ifs.else_b, s->ifs.nelse);
        env_join(c, env, &other);
        break;
    }
    case N_FOR: {
        AVal from = expr(c, env, s->loop.from), to = expr(c, env, s->loop.to);
        AVal by = s->loop.by ? expr(c, env, s->loop.by) : known(from.known && to.known && to.k < from.k ? -1 : 1);
        if (c->bad)
            break;
        if (from.kind != AK_SCALAR || to.kind != AK_SCALAR || by.kind != AK_SCALAR) {
            refuse(c, "a for loop's bounds depend on model cells");
            break;
        }
        int slot = s->loop.var_slot;
        if (slot < 0 || slot >= env->n) {
            refuse(c, "a for loop the scan cannot follow");
            break;
        }
        if (from.known && to.known && by.known && by.k != 0) {
            /* Literal bounds: each iteration with its own index. */
            int64_t iters = 0;
            for (int64_t i = from.k; (by.k > 0 ? i <= to.k : i >= to.k) && !c->bad; i += by.k) {
                if (++iters > AC_MAX_UNROLL) {
                    refuse(c, "a for loop runs more often than the scan follows");
                    break;
                }
                env->slots[slot] = known(i);
                block(c, env, s->loop.body, s->loop.nbody);
                if ((by.k > 0 && i > INT64_MAX - by.k) || (by.k < 0 && i < INT64_MIN - by.k))
                    break;
            }
            break;
        }
        /* Otherwise twice, the second time from the first one's end. */
        for (int round = 0; round < 2 && !c->bad; round++) {
            AEnv before = env_copy(c, env);
            env->slots[slot] = scalar();
            block(c, env, s->loop.body, s->loop.nbody);
            env_join(c, env, &before);
        }
        break;
    }
    case N_WHILE:
        for (int round = 0; round < 2 && !c->bad; round++) {
            AVal cond = expr(c, env, s->loop.cond);
            if (!c->bad && cond.kind != AK_SCALAR) {
                refuse(c, "a while loop depends on model cells");
                break;
            }
            AEnv before = env_copy(c, env);
            block(c, env, s->loop.body, s->loop.nbody);
            env_join(c, env, &before);
        }
        break;
    case N_FUNCDEF: case N_SOURCE: case N_SETWD:
        break;
    default:
        refuse(c, "it has a statement the scan does not know");
        break;
    }
    c->at = outer;
}

static void block(ACheck *c, AEnv *env, Node *const *s, int n)
{
    if (++c->depth > AC_MAX_DEPTH)
        refuse(c, "its code nests deeper than the scan goes");
    for (int i = 0; i < n && !c->bad; i++)
        stmt(c, env, s[i]);
    c->depth--;
}

bool ps_agg_cellwise(const FuncDef *agg, const List *model, char *why, size_t whylen)
{
    int64_t n = model->n;
    ACheck c = {.n = n};
    c.parent = malloc(sizeof *c.parent * (size_t)(n + 1));
    if (!c.parent) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        c.parent[i] = i;
    const FuncDecl *d = agg->decl;
    AEnv env = {ac_alloc(&c, sizeof(AVal) * (size_t)(agg->slots.n + 1)), agg->slots.n};
    int slot_model = -1;
    for (int i = 0; env.slots && i < d->nparams; i++) {
        const char *p = d->params[i].name;
        if (strcmp(p, "model") == 0 || strcmp(p, "gradients") == 0) {
            AVal l = list_of(&c, n);
            for (int64_t j = 0; j < l.n; j++)
                l.items[j] = cells(j);
            env.slots[i] = l;
            if (strcmp(p, "model") == 0)
                slot_model = i;
        } else if (strcmp(p, "hyperparams") == 0) {
            env.slots[i] = (AVal){.kind = AK_HYPER};
        } else if (d->params[i].dflt) {
            env.slots[i] = expr(&c, &env, d->params[i].dflt);
        } else {
            refuse(&c, "it has a parameter %s that paramserv does not pass", p);
        }
    }
    (void)slot_model;
    c.stack[c.calls++] = agg;
    if (env.slots)
        block(&c, &env, d->body, d->nbody);
    /* The result: a list with entry i made of cells that share entry i's
     * class. */
    if (!c.bad && d->nouts >= 1) {
        AVal out = env.slots[agg->out_slots[0]];
        if (out.kind != AK_LIST || out.n != n)
            refuse(&c, "the scan cannot tell that it returns a list of the model's %lld entries", (long long)n);
        for (int64_t i = 0; i < n && !c.bad; i++) {
            if (out.items[i].kind != AK_CELLS)
                refuse(&c, "entry %lld of its result is not made of model cells", (long long)i + 1);
            else
                unite(&c, i, out.items[i].cls);
        }
    } else if (!c.bad) {
        refuse(&c, "it returns nothing");
    }
    /* Entries joined cell by cell must be shaped alike. */
    for (int64_t i = 0; i < n && !c.bad; i++) {
        int64_t r = find(&c, i);
        const Matrix *a = model->items[i].m, *b = model->items[r].m;
        if (model->items[i].kind != VAL_MATRIX || model->items[r].kind != VAL_MATRIX)
            refuse(&c, "model entry %lld is not a matrix", (long long)i + 1);
        else if (a->rows != b->rows || a->cols != b->cols)
            refuse(&c, "it combines model entries %lld (%lldx%lld) and %lld (%lldx%lld) cell by cell, which the "
                   "servers cannot split alike", (long long)r + 1, (long long)b->rows, (long long)b->cols,
                   (long long)i + 1, (long long)a->rows, (long long)a->cols);
    }
    if (c.bad)
        snprintf(why, whylen, "%s", c.why);
    for (int64_t i = 0; i < c.npool; i++)
        free(c.pool[i]);
    free(c.pool);
    free(c.parent);
    return !c.bad;
}
