/* SPDX-License-Identifier: Apache-2.0
 * Statement execution: assignment, multi-assignment, ifdef, calls as
 * statements, if/else, for/parfor, while. Loops check the interrupt flag at
 * every back-edge so Ctrl-C (or a paramserv abort) stops them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "ops.h"
#include "parfor.h"

Status exec_sync_top(Interp *I, CallFrame *top)
{
    int want = I->prog->top.n;
    if (top->nslots >= want)
        return ST_OK;
    Value *s = realloc(top->slots, sizeof *s * (size_t)want);
    if (!s)
        return err_set(I, "out of memory");
    memset(s + top->nslots, 0, sizeof *s * (size_t)(want - top->nslots));
    top->slots = s;
    top->nslots = want;
    return ST_OK;
}

/* Predicate of if/while as a boolean. */
static Status exec_pred(Interp *I, const Node *n, bool *out)
{
    Value v;
    TRY(eval_expr(I, n, &v));
    Status st = ST_OK;
    switch (v.kind) {
    case VAL_BOOL: *out = v.b; break;
    case VAL_INT: *out = v.i != 0; break;
    case VAL_DOUBLE: *out = v.d != 0; break;
    case VAL_STRING: *out = strcmp(v.s->s, "TRUE") == 0 || strcmp(v.s->s, "true") == 0; break;
    case VAL_MATRIX:
        /* A 1x1 matrix is accepted as its single cell (a common slip that
         * upstream's compiler often folds away). */
        if (v.m->rows == 1 && v.m->cols == 1) {
            *out = mat_get(v.m, 0, 0) != 0;
            break;
        }
        st = err_at(I, &n->loc, "predicate must be a scalar, got a %lldx%lld matrix (use as.scalar())",
                    (long long)v.m->rows, (long long)v.m->cols);
        break;
    default:
        st = err_at(I, &n->loc, "predicate must be a scalar, got a %s", val_kind_name(v.kind));
    }
    val_release(v);
    return st;
}

static Status exec_assign(Interp *I, const Node *s)
{
    const Lhs *l = &s->assign.target;
    if (s->assign.skip_out && (I->frame->dead_outs >> (s->assign.skip_out - 1) & 1))
        return ST_OK;   /* computes only an output the caller never reads */
    Value v;
    TRY(eval_expr(I, s->assign.value, &v));
    if (l->indexed)
        return index_set_take(I, l, v, s->assign.accum, &s->loc);
    if (s->assign.accum) {
        Value cur = I->frame->slots[l->slot];
        if (cur.kind == VAL_NONE) {
            val_release(v);
            return err_at(I, &s->loc, "Invalid accumulator assignment to non-existing variable %s.", l->name);
        }
        Value sum;
        if (ops_binary_take(I, OP_ADD, val_ref(cur), v, &sum) != ST_OK)
            return err_stamp(I, &s->loc);
        v = sum;
    }
    slot_set_take(I, l->slot, v);
    return ST_OK;
}

static Status exec_multi(Interp *I, const Node *s)
{
    enum { MAXT = 64 };
    int n = s->multi.n;
    Value small[16];
    Value *outs = n <= 16 ? small : calloc((size_t)n, sizeof *outs);
    if (!outs)
        return err_at(I, &s->loc, "out of memory");
    memset(outs, 0, sizeof *outs * (size_t)n);
    Status st = eval_call(I, s->multi.call, outs, n);
    if (st == ST_OK)
        for (int i = 0; i < n; i++)
            slot_set_take(I, s->multi.targets[i].slot, outs[i]);
    if (outs != small)
        free(outs);
    return st;
}

/* Bounds of a for loop: from, to and the optional step, evaluated once.
 * Ints are taken exactly (a bound past 2^53 must not round through a
 * double); a double must be finite and inside the int64 range, and is
 * truncated (DML.md 5.3). */
static Status loop_bound(Interp *I, const Node *n, int64_t *out)
{
    Value v;
    TRY(eval_expr(I, n, &v));
    double d;
    if (v.kind == VAL_INT || v.kind == VAL_BOOL) {
        *out = v.kind == VAL_INT ? v.i : (int64_t)v.b;
        return ST_OK;
    }
    if (v.kind == VAL_DOUBLE)
        d = v.d;
    else if (v.kind == VAL_MATRIX && v.m->rows == 1 && v.m->cols == 1)
        d = mat_get(v.m, 0, 0);
    else {
        val_release(v);
        return err_at(I, &n->loc, "for-loop bounds must be numbers, got a %s", val_kind_name(v.kind));
    }
    val_release(v);
    if (!isfinite(d))
        return err_at(I, &n->loc, "for-loop bound is not a finite number");
    /* Bounds and step are integers, fractional ones truncated (doc/language.md, "for"). */
    if (d >= 0x1p63 || d < -0x1p63)
        return err_at(I, &n->loc, "for-loop bound %.17g is outside the 64-bit integer range", d);
    *out = ops_d2i(d);
    return ST_OK;
}

/* for (i in a:b) / for (i in seq(a, b, inc)): a:b steps by +1 or -1 (so 1:0
 * runs twice, as upstream); with an explicit step of the wrong sign the loop
 * runs zero times. The loop variable is an int. The arithmetic is unsigned
 * so that every int64 range works: INT64_MIN:INT64_MAX has 2^64 values. */
static Status exec_for(Interp *I, const Node *s)
{
    int64_t a, b, inc;
    TRY(loop_bound(I, s->loop.from, &a));
    TRY(loop_bound(I, s->loop.to, &b));
    if (s->loop.by) {
        TRY(loop_bound(I, s->loop.by, &inc));
        if (inc == 0)
            return err_at(I, &s->loop.by->loc,
                          "Expression for increment of variable '%s' must evaluate to a non-zero value.",
                          s->loop.var);
    } else
        inc = a <= b ? 1 : -1;
    if (s->loop.parfor)
        TRY(parfor_check_entry(I, s));
    if (inc > 0 ? b < a : b > a)
        return ST_OK;
    /* 'last': the index of the final iteration (the count minus one, which
     * always fits where the count itself may not). */
    uint64_t span = inc > 0 ? (uint64_t)b - (uint64_t)a : (uint64_t)a - (uint64_t)b;
    uint64_t step = inc > 0 ? (uint64_t)inc : 0 - (uint64_t)inc;
    uint64_t last = span / step;
    if (s->loop.parfor) {
        if (last >= (uint64_t)INT64_MAX)
            return err_at(I, &s->loc, "parfor: more than 2^63-1 iterations");
        return parfor_run(I, s, a, inc, (int64_t)last + 1);
    }
    int slot = s->loop.var_slot;
    int64_t i = a;
    for (uint64_t k = 0;; k++) {
        if (interp_interrupted(I))
            return eval_raise_interrupt(I, &s->loc);
        slot_set_take(I, slot, val_int(i));
        TRY(exec_block(I, s->loop.body, s->loop.nbody));
        if (k == last)
            return ST_OK;
        i = (int64_t)((uint64_t)i + (uint64_t)inc);
    }
}

static Status exec_while(Interp *I, const Node *s)
{
    for (;;) {
        if (interp_interrupted(I))
            return eval_raise_interrupt(I, &s->loc);
        bool go;
        TRY(exec_pred(I, s->loop.cond, &go));
        if (!go)
            return ST_OK;
        TRY(exec_block(I, s->loop.body, s->loop.nbody));
    }
}

static Status exec_stmt(Interp *I, const Node *s)
{
    switch (s->kind) {
    case N_ASSIGN:
        return exec_assign(I, s);
    case N_MULTIASSIGN:
        return exec_multi(I, s);
    case N_IFDEF: {
        Value v;
        TRY(eval_expr(I, s->ifdef.dflt, &v));
        slot_set_take(I, s->ifdef.target.slot, v);
        return ST_OK;
    }
    case N_EXPRSTMT: {
        const Node *e = s->expr.e;
        if (e->kind == N_CALL)
            return eval_call(I, e, NULL, 0);
        Value v;
        TRY(eval_expr(I, e, &v));
        val_release(v);
        return ST_OK;
    }
    case N_IF: {
        bool c;
        TRY(exec_pred(I, s->ifs.cond, &c));
        return c ? exec_block(I, s->ifs.then_b, s->ifs.nthen) : exec_block(I, s->ifs.else_b, s->ifs.nelse);
    }
    case N_FOR:
        return exec_for(I, s);
    case N_WHILE:
        return exec_while(I, s);
    case N_FUNCDEF: case N_SOURCE: case N_SETWD:
        return ST_OK;
    default:
        return err_at(I, &s->loc, "internal error: cannot execute a %s node", ast_kind_name(s->kind));
    }
}

Status exec_block(Interp *I, Node *const *stmts, int n)
{
    if (interp_stack_low(I))
        return n > 0 ? err_at(I, &stmts[0]->loc, "statements nested too deeply") : err_stack(I);
    for (int i = 0; i < n; i++) {
        if (interp_interrupted(I))
            return eval_raise_interrupt(I, &stmts[i]->loc);
        TRY(exec_stmt(I, stmts[i]));
    }
    return ST_OK;
}
