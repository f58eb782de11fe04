/* SPDX-License-Identifier: Apache-2.0
 * Builtins that need the interpreter itself rather than values alone:
 * exists() looks at the current frame, eval() calls a function by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/frame.h"
#include "../runtime/program.h"
#include "../runtime/resolve.h"
#include "registry.h"

/* exists(var) / exists("name"): is the variable bound in the current frame?
 * The evaluator passes the variable's value, so exists(x) is TRUE whenever x
 * evaluated; the string form looks the name up. */
static Status bi_exists(Interp *I, const BArgs *a, Value *out)
{
    Value v = a->v[0];
    if (v.kind != VAL_STRING) {
        *out = val_bool(v.kind != VAL_NONE);
        return ST_OK;
    }
    const CallFrame *f = I->frame;
    bool found = false;
    /* The top-level frame's names are the program's top slot table. */
    const SlotTable *names = f->names ? f->names : !f->fn ? &I->prog->top : NULL;
    if (names) {
        for (int i = 0; i < names->n && i < f->nslots; i++)
            if (strcmp(names->names[i], v.s->s) == 0 && f->slots[i].kind != VAL_NONE)
                found = true;
    }
    *out = val_bool(found);
    return ST_OK;
}

/* ---- eval / evalList (COMPAT.md 2) ---- */

/* The function eval("name", ...) calls. "ns::f" names a namespace key (or,
 * as a convenience, an alias of the main script). A bare name is looked up
 * among the main script's functions, then the calling function's file (so
 * a builtin's file reaches its own helpers), then the DML-bodied builtins,
 * loaded on first use, whose m_/s_ variant 'first' picks (a list counts as
 * a matrix). Native builtins are not callable. */
static Status eval_find(Interp *I, const char *name, Value first, const FuncDef **out)
{
    Program *p = I->prog;
    const FuncDef *f = NULL;
    DiagErr lerr;
    lerr.msg[0] = '\0';
    bool variant_missing = false;
    char pfx = 'm';
    const char *sep = strstr(name, "::");
    pthread_mutex_lock(&p->load_lock);
    if (sep) {
        char key[1024];
        size_t kl = (size_t)(sep - name);
        if (kl < sizeof key) {
            memcpy(key, name, kl);
            key[kl] = '\0';
            f = program_find_func(p, key, sep + 2);
            if (!f) {
                const Module *m = module_find_alias(p->main, key);
                f = m ? module_find_func(m, sep + 2) : NULL;
            }
        }
    } else {
        f = module_find_func(p->main, name);
        for (const CallFrame *fr = I->frame; !f && fr; fr = fr->parent) {
            if (fr->fn) {
                f = module_find_func(fr->fn->mod, name);
                break;
            }
        }
        if (!f && !builtin_find(name)) {
            Module *bm = resolve_builtin_module(p, name, &lerr);
            if (bm) {
                f = module_find_func(bm, name);
                if (!f) {
                    pfx = first.kind == VAL_MATRIX || first.kind == VAL_LIST ? 'm'
                        : first.kind == VAL_FRAME ? 'f' : 's';
                    char vn[512];
                    snprintf(vn, sizeof vn, "%c_%s", pfx, name);
                    f = module_find_func(bm, vn);
                    variant_missing = !f;
                }
            }
        }
    }
    /* The file's own diagnostic (file:line:col, caret) says it best; the
     * texts it is drawn from grow under the lock. */
    char *ldiag = lerr.msg[0] ? program_render_err(p, &lerr, false) : NULL;
    pthread_mutex_unlock(&p->load_lock);
    if (lerr.msg[0]) {
        Status st = err_set(I, "eval(\"%s\"): loading the builtin failed: %s", name, ldiag ? ldiag : lerr.msg);
        free(ldiag);
        return st;
    }
    if (variant_missing)
        return err_set(I, "Builtin function '%c_%s': script loaded but function not found. Is there a typo in "
                       "the function name?", pfx, name);
    if (!f) {
        if (sep)
            return err_set(I, "Function '%s' (called through eval) is non-existing.", name);
        return err_set(I, "Function '.defaultNS::%s' (called through eval) is non-existing.", name);
    }
    *out = f;
    return ST_OK;
}

/* A default upstream fills in for eval: a scalar literal. */
static bool literal_default(const Param *prm)
{
    const Node *d = prm->dflt;
    return d && (d->kind == N_INT || d->kind == N_DOUBLE || d->kind == N_BOOL || d->kind == N_STRING
                 || d->kind == N_CONST);
}

/* Binds eval's arguments v[0..n) to f and calls it for 'nout' results. A
 * single list argument is unpacked (unless f takes exactly one list): an
 * unnamed one by position, a named one by name; missing parameters then
 * take their scalar literal defaults. Direct arguments bind by position and
 * must match f's parameter count. */
static Status eval_invoke(Interp *I, const FuncDef *f, const Value *v, int n, Value *outs, int nout, const Loc *loc)
{
    const FuncDecl *d = f->decl;
    bool one_list = d->nparams == 1 && d->params[0].type == TY_LIST;
    if (!(n == 1 && v[0].kind == VAL_LIST && !one_list)) {
        if (n != d->nparams)
            return err_set(I, "fcall %s: Number of bound input parameters does not match the function signature "
                           "(%d given, %d expected)", f->name, n, d->nparams);
        return eval_function(I, f, v, NULL, n, outs, nout, loc);
    }
    const List *l = v[0].l;
    if (!l->names) {
        if (l->n > d->nparams)
            return err_set(I, "fcall %s: Number of bound input parameters does not match the function signature "
                           "(%lld given, %d expected)", f->name, (long long)l->n, d->nparams);
        for (int j = (int)l->n; j < d->nparams; j++)
            if (!literal_default(&d->params[j]))
                return err_set(I, "Unable to append positional scalar default for '%s'", d->params[j].name);
        return eval_function(I, f, l->items, NULL, (int)l->n, outs, nout, loc);
    }
    int64_t count = l->n;
    for (int j = 0; j < d->nparams; j++)
        if (list_find(l, d->params[j].name) < 0 && literal_default(&d->params[j]))
            count++;
    if (count != d->nparams)
        return err_set(I, "Failed to expand list for function call (mismatching number of arguments: %lld vs %d).",
                       (long long)count, d->nparams);
    const char **names = calloc((size_t)l->n + 1, sizeof *names);
    if (!names)
        return err_set(I, "out of memory");
    for (int64_t i = 0; i < l->n; i++) {
        names[i] = l->names[i]->s;
        bool known = false;
        for (int j = 0; j < d->nparams; j++)
            known = known || strcmp(d->params[j].name, names[i]) == 0;
        if (!known) {
            free(names);
            return err_set(I, "List argument named '%s' not in function signature.", l->names[i]->s);
        }
    }
    Status st = eval_function(I, f, l->items, names, (int)l->n, outs, nout, loc);
    free(names);
    return st;
}

/* eval("fname", args...): the first output of fname(args...), as a matrix
 * (a scalar becomes 1x1), as upstream types eval. */
static Status bi_eval(Interp *I, const BArgs *a, Value *out)
{
    if (a->n < 1 || a->v[0].kind != VAL_STRING)
        return err_set(I, "Expecting parameter of different value type EVAL");
    const FuncDef *f;
    TRY(eval_find(I, a->v[0].s->s, a->n > 1 ? a->v[1] : val_none(), &f));
    if (f->decl->nouts < 1)
        return err_set(I, "eval(): function %s returns no value", a->v[0].s->s);
    Value r;
    TRY(eval_invoke(I, f, a->v + 1, a->n - 1, &r, 1, a->loc));
    if (r.kind == VAL_MATRIX) {
        *out = r;
        return ST_OK;
    }
    if (r.kind == VAL_FRAME) {
        Matrix *m;
        Status st = frame_to_matrix(I, r.f, "eval", &m);
        val_release(r);
        TRY(st);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    if (r.kind == VAL_INT || r.kind == VAL_DOUBLE || r.kind == VAL_BOOL) {
        Matrix *m = mat_alloc(I, 1, 1);
        if (!m)
            return ST_ERR;
        m->data[0] = val_num(r);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    const char *t = r.kind == VAL_LIST ? "LIST" : "STRING";
    val_release(r);
    return err_set(I, "Invalid eval return type: %s (valid: matrix/frame/scalar; where frames or scalars are "
                   "converted to output matrices)", t);
}

/* evalList("fname", args...): every output of fname(args...) in a list
 * named by the function's output parameters. */
static Status bi_evalList(Interp *I, const BArgs *a, Value *out)
{
    if (a->n < 1 || a->v[0].kind != VAL_STRING)
        return err_set(I, "Expecting parameter of different value type EVALLIST");
    const FuncDef *f;
    TRY(eval_find(I, a->v[0].s->s, a->n > 1 ? a->v[1] : val_none(), &f));
    int k = f->decl->nouts;
    Value *res = calloc((size_t)k + 1, sizeof *res);
    if (!res)
        return err_set(I, "out of memory");
    Status st = eval_invoke(I, f, a->v + 1, a->n - 1, res, k, a->loc);
    List *l = st == ST_OK ? list_new(k, true) : NULL;
    if (st == ST_OK && !l)
        st = err_set(I, "out of memory");
    for (int i = 0; i < k; i++) {
        if (st == ST_OK && list_push_take(l, res[i], f->decl->outs[i].name))
            continue;
        if (st == ST_OK)
            st = err_set(I, "out of memory");
        val_release(res[i]);
    }
    free(res);
    if (st != ST_OK) {
        if (l)
            list_release(l);
        return st;
    }
    *out = val_list_take(l);
    return ST_OK;
}

const BuiltinDef bi_interp_table[] = {
    {"exists", bi_exists, "var", 1, BIND_POS, 1, BF_READS_VARS | BF_NAME_ARG | BF_RT(RT_SCALAR)},
    {"eval", bi_eval, "", 1, BIND_VARIADIC, 1, 0},
    {"evalList", bi_evalList, "", 1, BIND_VARIADIC, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
