/* SPDX-License-Identifier: Apache-2.0
 * Builtins that need the interpreter itself rather than values alone:
 * exists() looks at the current frame, eval() calls a function by name. */
#include <string.h>

#include "../runtime/eval.h"
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
    const Frame *f = I->frame;
    bool found = false;
    if (f->names) {
        for (int i = 0; i < f->names->n && i < f->nslots; i++)
            if (strcmp(f->names->names[i], v.s->s) == 0 && f->slots[i].kind != VAL_NONE)
                found = true;
    }
    *out = val_bool(found);
    return ST_OK;
}

/* eval("fname", args...): call a user function of the main script (or
 * "ns::f" by namespace key) with positional arguments; one result. */
static Status bi_eval(Interp *I, const BArgs *a, Value *out)
{
    if (a->n < 1 || a->v[0].kind != VAL_STRING)
        return err_set(I, "eval(): the first argument must be a function name string");
    const char *name = a->v[0].s->s;
    const char *sep = strstr(name, "::");
    const FuncDef *f;
    if (sep) {
        char key[1024];
        size_t kl = (size_t)(sep - name);
        if (kl >= sizeof key)
            return err_set(I, "eval(): function name too long");
        memcpy(key, name, kl);
        key[kl] = '\0';
        f = program_find_func(I->prog, key, sep + 2);
        if (!f) {
            const Module *m = module_find_alias(I->prog->main, key);
            f = m ? module_find_func(m, sep + 2) : NULL;
        }
    } else
        f = program_find_func(I->prog, NULL, name);
    if (!f)
        return err_set(I, "eval(): function %s is undefined", name);
    if (f->decl->nouts < 1)
        return err_set(I, "eval(): function %s returns no value", name);
    return interp_call(I, f, a->v + 1, NULL, a->n - 1, out, 1, a->loc);
}

const BuiltinDef bi_interp_table[] = {
    {"exists", bi_exists, "var", 1, BIND_POS, 1, 0},
    {"eval", bi_eval, "", 1, BIND_VARIADIC, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
