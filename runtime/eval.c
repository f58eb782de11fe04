/* SPDX-License-Identifier: Apache-2.0
 * The expression evaluator and function calls: a tree walk over the
 * resolved AST. Each expression yields an owned Value; an error leaves the
 * message in I->err and is stamped with the position of the innermost node
 * that failed. Thread-safe: all state is in the Interp. */
#include "eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "binops.h"
#include "builtin_api.h"
#include "hitters.h"
#include "fuse.h"
#include "ops.h"
#include "suggest.h"

Status eval_raise_interrupt(Interp *I, const Loc *loc)
{
    err_at(I, loc, "interrupted");
    I->err.interrupted = true;
    return ST_ERR;
}

/* ---- binary operators, with inline fast paths for scalar arithmetic ---- */

/* The scalar fast paths (binops.h, column 'fast'); false: take the general path. */
#define FAST_DD_add(OP, EXPR) case OP: *out = val_double(EXPR); return true;
#define FAST_DD_sub FAST_DD_add
#define FAST_DD_mul FAST_DD_add
#define FAST_DD_fdiv FAST_DD_add
#define FAST_DD_cmp(OP, EXPR) case OP: *out = val_bool(EXPR); return true;
#define FAST_DD_none(OP, EXPR)
#define FAST_DD(OP, KIND, EXPR, FAST) FAST_DD_##FAST(OP, EXPR)

static inline __attribute__((always_inline)) bool fast_dd(BinOp op, double x, double y, Value *out)
{
    switch (op) {
    BINOPS(FAST_DD)
    default: return false;
    }
}

#define FAST_II_OVF(OP, F) \
    case OP: if (__builtin_##F##_overflow(x, y, &r)) return false; *out = val_int(r); return true;
#define FAST_II_add(OP, EXPR) FAST_II_OVF(OP, add)
#define FAST_II_sub(OP, EXPR) FAST_II_OVF(OP, sub)
#define FAST_II_mul(OP, EXPR) FAST_II_OVF(OP, mul)
#define FAST_II_fdiv(OP, EXPR) case OP: *out = val_double((double)x / (double)y); return true;
#define FAST_II_cmp(OP, EXPR) case OP: *out = val_bool(EXPR); return true;
#define FAST_II_none(OP, EXPR)
#define FAST_II(OP, KIND, EXPR, FAST) FAST_II_##FAST(OP, EXPR)

static inline __attribute__((always_inline)) bool fast_ii(BinOp op, int64_t x, int64_t y, Value *out)
{
    int64_t r;
    switch (op) {
    BINOPS(FAST_II)
    default: return false;
    }
}

/* n's operator on its evaluated operands a and b (both taken). */
static inline Status binary_take(Interp *I, const Node *n, Value a, Value b, Value *out)
{
    BinOp op = n->binary.op;
    if (a.kind == VAL_DOUBLE) {
        if (b.kind == VAL_DOUBLE && fast_dd(op, a.d, b.d, out))
            return ST_OK;
        if (b.kind == VAL_INT && fast_dd(op, a.d, (double)b.i, out))
            return ST_OK;
    } else if (a.kind == VAL_INT) {
        if (b.kind == VAL_INT && fast_ii(op, a.i, b.i, out))
            return ST_OK;
        if (b.kind == VAL_DOUBLE && fast_dd(op, (double)a.i, b.d, out))
            return ST_OK;
    }
    /* A Ctrl-C stops a chain of large operations between two of them
     * (a long %*% also checks between its row panels, ops.c), and the
     * result of one it came during is not kept. */
    if (interp_interrupted(I)) {
        val_release(a);
        val_release(b);
        return eval_raise_interrupt(I, &n->loc);
    }
    Status st = HITTERS_TIMED(I, hitters_binop_name(op), ops_binary_take(I, op, a, b, out));
    if (st == ST_OK && interp_interrupted(I)) {
        val_release(*out);
        *out = val_none();      /* the caller may release it on error */
        return eval_raise_interrupt(I, &n->loc);
    }
    return st == ST_OK ? ST_OK : err_stamp(I, &n->loc);
}

static Status eval_binary(Interp *I, const Node *n, Value *out)
{
    if (interp_stack_low(I))
        return err_at(I, &n->loc, "expression nested too deeply");
    Value a, b;
    TRY(eval_expr(I, n->binary.lhs, &a));
    if (eval_expr(I, n->binary.rhs, &b) != ST_OK) {
        val_release(a);
        return ST_ERR;
    }
    return binary_take(I, n, a, b, out);
}

/* n's unary operator on its evaluated operand a (taken). */
static inline Status unary_take(Interp *I, const Node *n, Value a, Value *out)
{
    if (n->unary.op == UOP_NEG) {
        if (a.kind == VAL_DOUBLE) { *out = val_double(-a.d); return ST_OK; }
        if (a.kind == VAL_INT && a.i != INT64_MIN) { *out = val_int(-a.i); return ST_OK; }
    }
    Status st = HITTERS_TIMED(I, hitters_unop_name(n->unary.op), ops_unary_take(I, n->unary.op, a, out));
    return st == ST_OK ? ST_OK : err_stamp(I, &n->loc);
}

/* Scalar operator trees (`s + i * 0.5` in a loop) are evaluated by
 * scalars_try before fusion is asked: fusion would have to look at every
 * leaf to learn that there is nothing to fuse, and then the ordinary walk
 * would ask again at every node below. scalars_try walks the tree once,
 * evaluating as it goes, and gives up (SCALARS_BAIL, nothing owned, no
 * error pending) at the first leaf that is a matrix or not a plain
 * variable or literal (a call, an index: those may have side effects and
 * must be evaluated once, by the caller's walk), at an undefined variable,
 * at && / || / %*%, past SCALARS_DEPTH levels, and when an operator fails
 * (its error is left to the ordinary walk, which reports it in its own
 * words). What it evaluated before giving up are leaves and scalar
 * operators: no side effects, so the caller's walk may do them again. */
enum { SCALARS_BAIL = -1, SCALARS_DEPTH = 48 };

enum { SCALARS_INNER = 1 };     /* scalars_leaf: n is no leaf */

/* A call of a user function, or an index: what fusion never takes in. */
static inline bool opaque_leaf(const Node *n)
{
    return n->kind == N_INDEX || (n->kind == N_CALL && !n->call.bi);
}

static inline __attribute__((always_inline)) int scalars_leaf(Interp *I, const Node *n, Value *out)
{
    switch (n->kind) {
    case N_INT: *out = val_int(n->lit.i); return ST_OK;
    case N_DOUBLE: *out = val_double(n->lit.d); return ST_OK;
    case N_BOOL: *out = val_bool(n->lit.b); return ST_OK;
    case N_STRING: *out = n->str.v; return ST_OK;
    case N_CONST: *out = n->konst; return ST_OK;
    case N_IDENT: {
        int s = n->ident.slot;
        if (s >= I->frame->nslots)
            return SCALARS_BAIL;
        Value v = I->frame->slots[s];
        if (v.kind == VAL_NONE || v.kind == VAL_MATRIX)
            return SCALARS_BAIL;
        *out = val_ref(v);
        return ST_OK;
    }
    case N_BINARY: case N_UNARY:
        return SCALARS_INNER;
    default:
        return SCALARS_BAIL;
    }
}

/* n is a N_BINARY or N_UNARY node. */
static int scalars_try(Interp *I, const Node *n, Value *out, int depth)
{
    if (depth >= SCALARS_DEPTH)
        return SCALARS_BAIL;
    Value a, b;
    const Node *l = n->kind == N_BINARY ? n->binary.lhs : n->unary.operand;
    if (n->kind == N_BINARY && (n->binary.op == OP_MATMUL || n->binary.op >= OP_ANDAND))
        return SCALARS_BAIL;
    int r = scalars_leaf(I, l, &a);
    if (r == SCALARS_INNER)
        r = scalars_try(I, l, &a, depth + 1);
    if (r != ST_OK)
        return r;
    Status st;
    if (n->kind == N_BINARY) {
        if ((r = scalars_leaf(I, n->binary.rhs, &b)) == SCALARS_INNER)
            r = scalars_try(I, n->binary.rhs, &b, depth + 1);
        if (r != ST_OK) {
            val_release(a);
            return r;
        }
        st = binary_take(I, n, a, b, out);
    } else {
        st = unary_take(I, n, a, out);
    }
    if (st != ST_OK) {
        err_clear(I);
        return SCALARS_BAIL;
    }
    return ST_OK;
}

static Status eval_exprlist(Interp *I, const Node *n, Value *out)
{
    List *l = list_new(n->list.n, false);
    if (!l)
        return err_at(I, &n->loc, "out of memory");
    for (int i = 0; i < n->list.n; i++) {
        Value v;
        if (eval_expr(I, n->list.items[i], &v) != ST_OK || !list_push_take(l, v, NULL)) {
            list_release(l);
            return err_stamp(I, &n->list.items[i]->loc);
        }
    }
    *out = val_list_take(l);
    return ST_OK;
}

/* "undefined variable 'x'", naming a close bound variable if there is one.
 * Out of line: its buffer stays off eval_expr's (recursive) stack frame. */
static __attribute__((noinline, cold)) Status err_undefined_var(Interp *I, const Node *n)
{
    char hint[160];
    return err_at(I, &n->loc, "undefined variable '%s'%s", n->ident.name,
                  suggest_variable(I->frame, n->ident.name, hint, sizeof hint));
}

/* The end of a fused run: a Ctrl-C that came during it is raised here and
 * its result is not kept. */
static Status fused_done(Interp *I, const Node *n, Value *out, Status st)
{
    if (st == ST_OK && interp_interrupted(I)) {
        val_release(*out);
        *out = val_none();      /* the caller may release it on error */
        return eval_raise_interrupt(I, &n->loc);
    }
    return st;
}

Status eval_expr(Interp *I, const Node *n, Value *out)
{
    /* Index chains and unary operators recurse through here as well as
     * binary ones (a script may nest X[1][1]...[1] 10^5 deep). */
    if (interp_stack_low(I))
        return err_at(I, &n->loc, "stack overflow: expression nested too deeply");
    switch (n->kind) {
    case N_INT: *out = val_int(n->lit.i); return ST_OK;
    case N_DOUBLE: *out = val_double(n->lit.d); return ST_OK;
    case N_BOOL: *out = val_bool(n->lit.b); return ST_OK;
    case N_STRING: *out = n->str.v; return ST_OK;      /* immortal */
    case N_CONST: *out = n->konst; return ST_OK;       /* immortal */
    case N_IDENT: {
        int s = n->ident.slot;
        if (s >= I->frame->nslots || I->frame->slots[s].kind == VAL_NONE)
            return err_undefined_var(I, n);
        *out = val_ref(I->frame->slots[s]);
        return ST_OK;
    }
    case N_BINARY:
        if (fuse_matmul_candidate(n)) {
            Status st;
            if (fuse_matmul(I, n, out, &st))
                return fused_done(I, n, out, st);
        } else if (fuse_candidate(n)) {
            const Node *l = n->binary.lhs, *r = n->binary.rhs;
            /* A lone operator beside a user function's call or an index
             * (`s + f(i)`): nothing to fuse (fuse.c fuses a lone operator
             * only over variables) and nothing scalars_try would finish. */
            if (!(opaque_leaf(l) && !fuse_candidate(r)) && !(opaque_leaf(r) && !fuse_candidate(l))) {
                Status st;
                if (scalars_try(I, n, out, 0) == ST_OK)
                    return ST_OK;
                if (fuse_eval(I, n, out, &st))
                    return fused_done(I, n, out, st);
            }
        }
        return eval_binary(I, n, out);
    case N_UNARY: {
        if (fuse_candidate(n)) {
            Status st;
            if (scalars_try(I, n, out, 0) == ST_OK)
                return ST_OK;
            if (fuse_eval(I, n, out, &st))
                return st;
        }
        Value a;
        TRY(eval_expr(I, n->unary.operand, &a));
        return unary_take(I, n, a, out);
    }
    case N_CALL:
        if (fuse_candidate(n)) {
            Status st;
            if (fuse_eval(I, n, out, &st))
                return st;
        }
        return eval_call(I, n, out, 1);
    case N_INDEX:
        return index_get(I, n, out);
    case N_EXPRLIST:
        return eval_exprlist(I, n, out);
    default:
        return err_at(I, &n->loc, "internal error: cannot evaluate a %s node", ast_kind_name(n->kind));
    }
}

/* ---- user-defined functions ---- */

static const char *type_word(const Param *p)
{
    switch (p->type) {
    case TY_MATRIX: return "a matrix";
    case TY_LIST: return "a list";
    case TY_FRAME: return "a frame";
    default: return "a scalar";
    }
}

static const char *value_word(Value v)
{
    switch (v.kind) {
    case VAL_MATRIX: return "matrix";
    case VAL_LIST: return "list";
    case VAL_FRAME: return "frame";
    case VAL_STRING: return "string";
    case VAL_INT: return "int";
    case VAL_DOUBLE: return "double";
    case VAL_BOOL: return "boolean";
    default: return "nothing";
    }
}

/* Check v (owned) against parameter p and convert scalars to its value type;
 * on success *slot receives the value. */
static Status bind_param_take(Interp *I, const FuncDef *f, const Param *p, Value v, Value *slot)
{
    bool ok;
    switch (p->type) {
    case TY_MATRIX: ok = v.kind == VAL_MATRIX; break;
    case TY_LIST: ok = v.kind == VAL_LIST; break;
    case TY_FRAME: ok = v.kind == VAL_FRAME; break;
    default: ok = val_is_scalar(v); break;
    }
    if (!ok) {
        val_release(v);
        return err_set(I, "argument '%s' of %s() must be %s, got %s", p->name, f->name, type_word(p), value_word(v));
    }
    if (p->type == TY_SCALAR && p->vtype != SCALAR_UNKNOWN) {
        if (ops_convert_take(I, v, p->vtype, &v) != ST_OK) {
            char *why = I->err.msg ? strdup(I->err.msg) : NULL;
            err_set(I, "argument '%s' of %s(): %s", p->name, f->name, why ? why : "bad value");
            free(why);
            return ST_ERR;
        }
    }
    val_release(*slot);
    *slot = v;
    return ST_OK;
}

/* Check an output value against its declaration: an int for a double output
 * is converted; an integral double for an int output too. */
static Status check_output(Interp *I, const FuncDef *f, const Param *o, Value *v)
{
    bool ok;
    switch (o->type) {
    case TY_MATRIX: ok = v->kind == VAL_MATRIX; break;
    case TY_LIST: ok = v->kind == VAL_LIST; break;
    case TY_FRAME: ok = v->kind == VAL_FRAME; break;
    default: ok = val_is_scalar(*v); break;
    }
    if (!ok)
        return err_set(I, "return variable '%s' of %s() must be %s, got %s", o->name, f->name, type_word(o),
                       value_word(*v));
    if (o->type != TY_SCALAR || o->vtype == SCALAR_UNKNOWN)
        return ST_OK;
    ValKind want = o->vtype == SCALAR_INT ? VAL_INT : o->vtype == SCALAR_DOUBLE ? VAL_DOUBLE
                 : o->vtype == SCALAR_BOOLEAN ? VAL_BOOL : VAL_STRING;
    if (v->kind == want)
        return ST_OK;
    if (want == VAL_DOUBLE && v->kind == VAL_INT) {
        *v = val_double((double)v->i);
        return ST_OK;
    }
    if (want == VAL_INT && v->kind == VAL_DOUBLE && v->d == floor(v->d) && fabs(v->d) < 9.2e18) {
        *v = val_int((int64_t)v->d);
        return ST_OK;
    }
    /* Upstream checks output value types only where the compiler can infer
     * them, and passes the value through unchanged at run time: a fractional
     * (or NaN, infinite) double in an int output stays a double. */
    if (want == VAL_INT && v->kind == VAL_DOUBLE)
        return ST_OK;
    return err_set(I, "return variable '%s' of %s() is declared %s but holds a %s", o->name, f->name,
                   o->vtype == SCALAR_INT ? "int" : o->vtype == SCALAR_DOUBLE ? "double"
                   : o->vtype == SCALAR_BOOLEAN ? "boolean" : "string", value_word(*v));
}

/* Runs f's body in 'frame' (whose argument slots are bound), fills defaults,
 * and moves the outputs out. Pops the frame and releases its slots. */
static Status run_function(Interp *I, const FuncDef *f, CallFrame *frame, const bool *given, Value *outs, int nout,
                           const Loc *call_loc)
{
    const FuncDecl *d = f->decl;
    Status st = ST_OK;
    frame->parent = I->frame;
    I->frame = frame;
    if (interp_stack_low(I)) {
        I->depth++;
        st = err_at(I, call_loc, "stack overflow: recursion too deep for the C stack (runaway recursion?)");
        goto done;
    }
    if (++I->depth > INTERP_MAX_DEPTH) {
        st = err_at(I, call_loc, "stack overflow: more than %d nested function calls (runaway recursion?)",
                    INTERP_MAX_DEPTH);
        goto done;
    }
    for (int i = 0; i < d->nparams; i++) {
        if (given[i])
            continue;
        Value v;
        if ((st = eval_expr(I, d->params[i].dflt, &v)) != ST_OK)
            goto done;
        if ((st = bind_param_take(I, f, &d->params[i], v, &frame->slots[i])) != ST_OK) {
            err_stamp(I, &d->params[i].loc);
            goto done;
        }
    }
    if ((st = exec_block(I, d->body, d->nbody)) != ST_OK)
        goto done;
    for (int i = 0; i < nout && i < d->nouts; i++) {
        Value *v = &frame->slots[f->out_slots[i]];
        if (v->kind == VAL_NONE && i < 64 && (frame->dead_outs >> i & 1))
            continue;   /* its computation was skipped: the caller never reads it */
        if (v->kind == VAL_NONE) {
            st = err_at(I, &d->outs[i].loc, "return variable '%s' of function '%s' was never assigned",
                        d->outs[i].name, f->name);
            goto done;
        }
        if ((st = check_output(I, f, &d->outs[i], v)) != ST_OK) {
            err_stamp(I, &d->outs[i].loc);
            goto done;
        }
    }
    for (int i = 0; i < nout && i < d->nouts; i++) {
        /* Several outputs may share a slot ('return (X, X)'): retain, not move. */
        outs[i] = val_ref(frame->slots[f->out_slots[i]]);
    }
    /* x = f() with f declaring no outputs leaves x undefined (COMPAT.md 4). */
    for (int i = d->nouts; i < nout; i++)
        outs[i] = val_none();
done:
    I->depth--;
    I->frame = frame->parent;
    for (int i = 0; i < frame->nslots; i++)
        val_release(frame->slots[i]);
    if (st != ST_OK)
        err_push_frame(I, f->name, call_loc);
    return st;
}

enum { SMALL_FRAME = 16 };

/* Call user function f with n's arguments bound by 'argmap'. 'first', when
 * not VAL_NONE, is argument 0 already evaluated (taken). */
static Status call_user_take(Interp *I, const Node *n, const FuncDef *f, const int *argmap, Value first, Value *outs,
                        int nout)
{
    int ns = f->slots.n;
    Value small[SMALL_FRAME];
    Value *slots = ns <= SMALL_FRAME ? small : calloc((size_t)ns, sizeof *slots);
    bool given_small[SMALL_FRAME];
    int np = f->decl->nparams;
    bool *given = np <= SMALL_FRAME ? given_small : calloc((size_t)np, 1);
    if (!slots || !given) {
        if (slots != small) free(slots);
        if (given != given_small) free(given);
        val_release(first);
        return err_at(I, &n->loc, "out of memory");
    }
    memset(slots, 0, sizeof *slots * (size_t)ns);
    memset(given, 0, (size_t)np);
    Status st = ST_OK;
    for (int i = 0; i < n->call.nargs; i++) {
        Value v;
        if (i == 0 && first.kind != VAL_NONE)
            v = first;
        else if ((st = eval_expr(I, n->call.args[i], &v)) != ST_OK)
            break;
        int pi = argmap[i];
        if ((st = bind_param_take(I, f, &f->decl->params[pi], v, &slots[pi])) != ST_OK) {
            err_stamp(I, &n->call.args[i]->loc);
            break;
        }
        given[pi] = true;
    }
    if (st == ST_OK && interp_interrupted(I))
        st = eval_raise_interrupt(I, &n->loc);
    if (st != ST_OK) {
        for (int i = 0; i < ns; i++)
            val_release(slots[i]);
    } else {
        CallFrame frame = {.slots = slots, .nslots = ns, .fn = f, .names = &f->slots, .call_loc = n->loc,
                       .dead_outs = n->call.dead_outs & f->skip_outs};
        st = run_function(I, f, &frame, given, outs, nout, &n->loc);
    }
    if (slots != small)
        free(slots);
    if (given != given_small)
        free(given);
    return st;
}

Status eval_function(Interp *I, const FuncDef *f, const Value *args, const char *const *names, int nargs,
                   Value *outs, int nout, const Loc *call_loc)
{
    int ns = f->slots.n, np = f->decl->nparams;
    Value *slots = calloc((size_t)ns + 1, sizeof *slots);
    bool *given = calloc((size_t)np + 1, 1);
    if (!slots || !given) {
        free(slots);
        free(given);
        return err_set(I, "out of memory");
    }
    Status st = ST_OK;
    for (int i = 0; i < nargs && st == ST_OK; i++) {
        int pi = -1;
        if (names && names[i]) {
            for (int j = 0; j < np; j++)
                if (strcmp(f->decl->params[j].name, names[i]) == 0)
                    pi = j;
            if (pi < 0)
                st = err_set(I, "function %s() has no parameter named '%s'", f->name, names[i]);
        } else if (i < np)
            pi = i;
        else
            st = err_set(I, "too many arguments in call to function '%s'", f->name);
        if (st == ST_OK)
            st = bind_param_take(I, f, &f->decl->params[pi], val_ref(args[i]), &slots[pi]);
        if (st == ST_OK)
            given[pi] = true;
    }
    for (int j = 0; j < np && st == ST_OK; j++)
        if (!given[j] && !f->decl->params[j].dflt)
            st = err_set(I, "Missing default expression for unspecified function argument '%s' in call to "
                         "function '%s'.", f->decl->params[j].name, f->name);
    if (st != ST_OK) {
        for (int i = 0; i < ns; i++)
            val_release(slots[i]);
    } else {
        CallFrame frame = {.slots = slots, .nslots = ns, .fn = f, .names = &f->slots};
        if (call_loc)
            frame.call_loc = *call_loc;
        st = run_function(I, f, &frame, given, outs, nout, call_loc);
    }
    free(slots);
    free(given);
    return st;
}

/* ---- builtins ---- */

enum { SMALL_ARGS = 8, MAX_OUT = 8 };

static Status call_builtin(Interp *I, const Node *n, Value *outs, int nout)
{
    const BuiltinDef *bi = n->call.bi;
    int np = n->call.nparams;
    Value small[SMALL_ARGS];
    Value *argv = np <= SMALL_ARGS ? small : calloc((size_t)np, sizeof *argv);
    if (!argv)
        return err_at(I, &n->loc, "out of memory");
    memset(argv, 0, sizeof *argv * (size_t)np);
    Status st = ST_OK;
    for (int i = 0; i < n->call.nargs; i++) {
        int pi = n->call.argmap ? n->call.argmap[i] : i;
        if ((st = eval_expr(I, n->call.args[i], &argv[pi])) != ST_OK)
            break;
    }
    if (st == ST_OK && interp_interrupted(I))
        st = eval_raise_interrupt(I, &n->loc);
    if (st == ST_OK && (st = builtin_densify_args(I, bi, argv, np)) != ST_OK)
        err_stamp(I, &n->loc);
    if (st == ST_OK) {
        Value res[MAX_OUT];
        memset(res, 0, sizeof res);
        BArgs a = {.def = bi, .v = argv, .names = bi->bind == BIND_VARIADIC ? n->call.argnames : NULL,
                   .n = np, .loc = &n->loc, .nout = nout};
        st = HITTERS_TIMED(I, bi->name, bi->fn(I, &a, res));
        if (st == ST_OK && interp_interrupted(I)) {
            /* came during the call: its results are not kept */
            int produced = bi->nout < MAX_OUT ? bi->nout : MAX_OUT;
            for (int i = 0; i < produced; i++)
                val_release(res[i]);
            st = eval_raise_interrupt(I, &n->loc);
        }
        if (st == ST_OK) {
            int produced = bi->nout < MAX_OUT ? bi->nout : MAX_OUT;
            for (int i = 0; i < produced; i++) {
                if (i < nout)
                    outs[i] = res[i];
                else
                    val_release(res[i]);
            }
            for (int i = produced; i < nout; i++)
                outs[i] = val_none();
        } else {
            err_stamp(I, &n->loc);
        }
    }
    for (int i = 0; i < np; i++)
        val_release(argv[i]);
    if (argv != small)
        free(argv);
    return st;
}

/* f(...) where f's file defines m_f, s_f and/or f_f: a matrix or list
 * first argument picks m_f, a frame f_f, anything else (or no argument)
 * s_f (COMPAT.md 1). */
static Status call_variant(Interp *I, const Node *n, Value *outs, int nout)
{
    const CallVariants *cv = n->call.variants;
    Value first = val_none();
    if (n->call.nargs > 0)
        TRY(eval_expr(I, n->call.args[0], &first));
    int v = first.kind == VAL_MATRIX || first.kind == VAL_LIST ? 0 : first.kind == VAL_FRAME ? 2 : 1;
    if (!cv->fn[v]) {
        val_release(first);
        return err_at(I, &n->loc, "Builtin function '%s_%s': script loaded but function not found. Is there a "
                      "typo in the function name?", v == 0 ? "m" : v == 2 ? "f" : "s", cv->name);
    }
    if (cv->bind_err[v]) {
        val_release(first);
        return err_at(I, &n->loc, "%s", cv->bind_err[v]);
    }
    return call_user_take(I, n, cv->fn[v], cv->argmap[v], first, outs, nout);
}

Status eval_call(Interp *I, const Node *n, Value *outs, int nout)
{
    if (n->call.variants)
        return call_variant(I, n, outs, nout);
    if (n->call.fn)
        return call_user_take(I, n, n->call.fn, n->call.argmap, val_none(), outs, nout);
    return call_builtin(I, n, outs, nout);
}
