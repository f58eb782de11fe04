/* SPDX-License-Identifier: Apache-2.0
 * Data-type change check (doc: DML.md; upstream's If/For/WhileStatementBlock
 * validation, its DataTypeChangeTest). A static pass over a script's
 * top-level statements or a function body, after binding, that follows the
 * data type (scalar, matrix, frame, list) each variable has along the
 * statements:
 *   - if/else: a variable that existed before must have the same data type
 *     at the end of both branches (a branch that does not assign it keeps
 *     its type from before); variables first created in the branches are
 *     not checked;
 *   - for/parfor/while: a variable that existed before the loop must have
 *     the same data type after the body.
 * Sequential changes (X = 7; X = matrix(X, 10, 10)) are fine. As upstream,
 * the checks fail only for an if or loop at the top level of the script or
 * of a function body; nested in another branch or loop body they are
 * silent (upstream only warns). Where a type cannot be known statically
 * (read(), eval(), a builtin whose result type depends on its arguments)
 * nothing is reported. The pass also takes parfor's dependency verdict
 * where the types of the loop's candidate results are known (parfor.h). */
#include "dtcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin_api.h"
#include "parfor.h"

#define DT_MAX_DEPTH 2000

typedef enum Dt { DT_UNDEF, DT_UNKNOWN, DT_SCALAR, DT_MATRIX, DT_FRAME, DT_LIST } Dt;

typedef struct Chk {
    const SlotTable *slots;
    int n;                  /* slots in the frame */
    DiagErr *out;           /* where the first error is recorded */
    DiagErr *err;           /* 'out' once it holds an error, else NULL */
} Chk;

static Dt decl_dt(TypeKind t)
{
    switch (t) {
    case TY_SCALAR: return DT_SCALAR;
    case TY_MATRIX: return DT_MATRIX;
    case TY_FRAME: return DT_FRAME;
    case TY_LIST: return DT_LIST;
    }
    return DT_UNKNOWN;
}

static Dt expr_dt(const Chk *c, const Dt *env, const Node *e, int depth);

/* Result type of a builtin call, where it does not depend on what the
 * arguments hold at run time: the builtin's row says (BF_RT). */
static Dt builtin_dt(const Chk *c, const Dt *env, const Node *e, int depth)
{
    switch (builtin_rt(e->call.bi)) {
    case RT_SCALAR: return DT_SCALAR;
    case RT_MATRIX: return DT_MATRIX;
    case RT_FRAME: return DT_FRAME;
    case RT_LIST: return DT_LIST;
    case RT_BIND:
        /* cbind/rbind: frames bind to a frame, matrices and numbers to a
         * matrix (a list first appends to the list). */
        if (e->call.nargs > 0) {
            Dt t = expr_dt(c, env, e->call.args[0], depth + 1);
            return t == DT_MATRIX || t == DT_FRAME ? t : DT_UNKNOWN;
        }
        return DT_UNKNOWN;
    case RT_SAME:
        if (e->call.nargs == 1) {
            Dt t = expr_dt(c, env, e->call.args[0], depth + 1);
            return t == DT_SCALAR || t == DT_MATRIX ? t : DT_UNKNOWN;
        }
        return DT_UNKNOWN;
    case RT_UNKNOWN: break;
    }
    return DT_UNKNOWN;
}

/* Scalar op scalar is a scalar; a matrix with a matrix or scalar is a
 * matrix; anything else is not known here. */
static Dt binary_dt(Dt l, Dt r)
{
    if (l == DT_SCALAR && r == DT_SCALAR)
        return DT_SCALAR;
    if ((l == DT_MATRIX && (r == DT_MATRIX || r == DT_SCALAR)) || (r == DT_MATRIX && l == DT_SCALAR))
        return DT_MATRIX;
    return DT_UNKNOWN;
}

static Dt expr_dt(const Chk *c, const Dt *env, const Node *e, int depth)
{
    if (!e || depth > DT_MAX_DEPTH)
        return DT_UNKNOWN;
    switch (e->kind) {
    case N_INT: case N_DOUBLE: case N_BOOL: case N_STRING:
        return DT_SCALAR;
    case N_CONST:
        return val_is_scalar(e->konst) ? DT_SCALAR : DT_UNKNOWN;
    case N_IDENT: {
        int s = e->ident.slot;
        Dt t = s >= 0 && s < c->n ? env[s] : DT_UNKNOWN;
        return t == DT_UNDEF ? DT_UNKNOWN : t;
    }
    case N_UNARY: {
        Dt t = expr_dt(c, env, e->unary.operand, depth + 1);
        return t == DT_SCALAR || t == DT_MATRIX ? t : DT_UNKNOWN;
    }
    case N_BINARY:
        return binary_dt(expr_dt(c, env, e->binary.lhs, depth + 1), expr_dt(c, env, e->binary.rhs, depth + 1));
    case N_INDEX: {
        /* X[i, j] is a 1x1 matrix that arithmetic often meets where a
         * scalar was (s = s + X[i, 1]): left unknown, never a false error. */
        Dt t = expr_dt(c, env, e->index.target, depth + 1);
        if (t == DT_MATRIX && e->index.rows.kind == IX_ONE && e->index.has_cols && e->index.cols.kind == IX_ONE)
            return DT_UNKNOWN;
        return t == DT_MATRIX || t == DT_LIST || t == DT_FRAME ? t : DT_UNKNOWN;
    }
    case N_CALL:
        if (e->call.fn)
            return e->call.fn->decl->nouts == 1 ? decl_dt(e->call.fn->decl->outs[0].type) : DT_UNKNOWN;
        if (e->call.bi)
            return builtin_dt(c, env, e, depth);
        return DT_UNKNOWN;
    default:
        return DT_UNKNOWN;
    }
}

static const char *slot_name(const Chk *c, int s)
{
    return s < c->slots->n ? c->slots->names[s] : "?";
}

static void fail(Chk *c, const Loc *loc, const char *fmt, const char *name)
{
    if (c->err)
        return;
    char msg[512];
    snprintf(msg, sizeof msg, fmt, name);
    diag_fail_at(c->out, loc, "%s", msg);
    c->err = c->out;
}

static bool known(Dt t)
{
    return t != DT_UNDEF && t != DT_UNKNOWN;
}

static void stmts_dt(Chk *c, Dt *env, Node *const *stmts, int n, bool conditional, int depth);

/* env after a loop whose body left 'after' from 'before': a type that
 * changed is no longer known. Reports the change for a top-level loop. */
static void loop_merge(Chk *c, Dt *env, const Dt *before, int var_slot, const Node *s, bool conditional,
                       const char *what)
{
    for (int k = 0; k < c->n && !c->err; k++) {
        if (k == var_slot || before[k] == env[k] || before[k] == DT_UNDEF)
            continue;
        if (known(before[k]) && known(env[k]) && !conditional) {
            char fmt[200];
            snprintf(fmt, sizeof fmt, "%s has unsupported conditional data type change of variable '%%s' in loop "
                     "body.", what);
            fail(c, &s->loc, fmt, slot_name(c, k));
        }
        env[k] = DT_UNKNOWN;
    }
}

/* parfor's candidate results are the variables the body assigns that
 * exist before the loop, as upstream decides it: statically. One that does
 * not is a local of the body (whatever a previous round of an enclosing
 * loop left in it). The dependency check is taken here where the type on
 * entry is known, else when the loop starts (parfor_check_entry). */
static void parfor_dt(Chk *c, const Dt *env, const Node *s)
{
    for (int j = 0; j < s->loop.nwritten && !c->err; j++) {
        int slot = s->loop.written[j];
        if (!s->loop.candidate[j] || slot >= c->n)
            continue;
        Dt t = env[slot];
        if (t == DT_UNDEF) {
            s->loop.candidate[j] = false;
            continue;
        }
        if (!s->loop.check)
            continue;
        if (t == DT_SCALAR || ((t == DT_MATRIX || t == DT_LIST || t == DT_FRAME) && s->loop.dep_nonscalar[j]))
            fail(c, &s->loc, PARFOR_DEP_FMT, slot_name(c, slot));
    }
}

static void stmt_dt(Chk *c, Dt *env, const Node *s, bool conditional, int depth)
{
    size_t bytes = sizeof(Dt) * (size_t)(c->n + 1);
    switch (s->kind) {
    case N_ASSIGN: {
        const Lhs *l = &s->assign.target;
        if (l->indexed)
            break;
        Dt t = expr_dt(c, env, s->assign.value, depth + 1);
        if (s->assign.accum)
            t = binary_dt(env[l->slot], t);
        env[l->slot] = t;
        break;
    }
    case N_MULTIASSIGN: {
        const Node *call = s->multi.call;
        for (int j = 0; j < s->multi.n; j++)
            env[s->multi.targets[j].slot] = call->call.fn && j < call->call.fn->decl->nouts
                                                ? decl_dt(call->call.fn->decl->outs[j].type)
                                                : DT_UNKNOWN;
        break;
    }
    case N_IFDEF:
        env[s->ifdef.target.slot] = expr_dt(c, env, s->ifdef.dflt, depth + 1);
        break;
    case N_IF: {
        Dt *els = malloc(2 * bytes);
        if (!els)
            break;      /* out of memory: skip the check, never a false error */
        Dt *before = els + c->n + 1;
        memcpy(els, env, bytes);
        memcpy(before, env, bytes);
        stmts_dt(c, env, s->ifs.then_b, s->ifs.nthen, true, depth + 1);
        stmts_dt(c, els, s->ifs.else_b, s->ifs.nelse, true, depth + 1);
        for (int k = 0; k < c->n && !c->err; k++) {
            if (env[k] == els[k])
                continue;
            if (before[k] != DT_UNDEF && known(env[k]) && known(els[k]) && !conditional)
                fail(c, &s->loc, "IfStatementBlock has unsupported conditional data type change of variable '%s' in "
                     "if/else branch.", slot_name(c, k));
            if (env[k] == DT_UNDEF)
                env[k] = els[k];
            else if (els[k] != DT_UNDEF)
                env[k] = DT_UNKNOWN;
        }
        free(els);
        break;
    }
    case N_FOR: case N_WHILE: {
        if (s->kind == N_FOR && s->loop.parfor)
            parfor_dt(c, env, s);
        Dt *before = malloc(bytes);
        if (!before)
            break;
        if (s->kind == N_FOR)
            env[s->loop.var_slot] = DT_SCALAR;
        memcpy(before, env, bytes);
        stmts_dt(c, env, s->loop.body, s->loop.nbody, true, depth + 1);
        loop_merge(c, env, before, s->kind == N_FOR ? s->loop.var_slot : -1, s, conditional,
                   s->kind == N_WHILE ? "WhileStatementBlock" : "ForStatementBlock");
        free(before);
        break;
    }
    default:
        break;
    }
}

static void stmts_dt(Chk *c, Dt *env, Node *const *stmts, int n, bool conditional, int depth)
{
    if (depth > DT_MAX_DEPTH)
        return;
    for (int i = 0; i < n && !c->err; i++)
        stmt_dt(c, env, stmts[i], conditional, depth);
}

bool dtcheck_body(const SlotTable *slots, const FuncDecl *fn, Node *const *stmts, int n, int nknown, DiagErr *err)
{
    Chk c = {.slots = slots, .n = slots->n, .out = err};
    Dt *env = calloc((size_t)c.n + 1, sizeof *env);
    if (!env)
        return true;
    for (int i = 0; i < nknown && i < c.n; i++)
        env[i] = DT_UNKNOWN;
    for (int i = 0; fn && i < fn->nparams && i < c.n; i++)
        env[i] = decl_dt(fn->params[i].type);
    stmts_dt(&c, env, stmts, n, false, 0);
    free(env);
    return !c.err;
}
