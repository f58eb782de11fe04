/* SPDX-License-Identifier: Apache-2.0
 * List builtins: list() and the multi-return remove(). (Appending to a list
 * is the list form of append/cbind, in reorg.c; string concatenation is
 * the '+' operator.) Lists are never mutated here: results are new lists
 * holding new references. Thread-safe. */
#include "registry.h"

#include <string.h>

/* list(e1, e2, ...) / list(n1=e1, n2=e2, ...) */
static Status bi_list(Interp *I, const BArgs *a, Value *out)
{
    bool named = a->n > 0 && a->names != NULL;
    for (int i = 0; named && i < a->n; i++)
        if (!a->names[i])
            named = false;
    List *l = list_new(a->n, named);
    if (!l)
        return err_set(I, "list(): out of memory");
    for (int i = 0; i < a->n; i++) {
        if (a->v[i].kind == VAL_NONE || !list_push(l, a->v[i], named ? a->names[i] : NULL)) {
            list_release(l);
            return a->v[i].kind == VAL_NONE ? arg_type_error(I, a, i, "a value")
                                            : err_set(I, "list(): out of memory");
        }
    }
    *out = val_list_take(l);
    return ST_OK;
}

/* [L2, e] = remove(L, i): L without element i, and a list holding it */
static Status bi_remove(Interp *I, const BArgs *a, Value *out)
{
    List *l;
    TRY(arg_list(I, a, 0, &l));
    int64_t idx;
    if (arg_given(a, 1) && a->v[1].kind == VAL_STRING) {
        const char *nm = a->v[1].s->s;
        if (!l->names)
            return err_set(I, "Invalid indexing by name in unnamed list: %s.", nm);
        idx = list_find(l, nm);
        if (idx < 0)
            return err_set(I, "List indexing returned no entry for name='%s'", nm);
    } else {
        TRY(arg_int(I, a, 1, 0, &idx));
        if (idx < 1 || idx > l->n)
            return err_set(I, "remove(): index %lld out of range for a list of length %lld", (long long)idx,
                           (long long)l->n);
        idx--;
    }
    bool named = l->names != NULL;
    List *rest = list_new(l->n > 1 ? l->n - 1 : 1, named);
    List *one = list_new(1, named);
    if (!rest || !one)
        goto oom;
    for (int64_t k = 0; k < l->n; k++) {
        const char *nm = named && l->names[k] ? l->names[k]->s : (named ? "" : NULL);
        if (!list_push(k == idx ? one : rest, l->items[k], nm))
            goto oom;
    }
    Value res[2] = {val_list_take(rest), val_list_take(one)};
    bi_set_outs_take(a, out, res, 2);
    return ST_OK;
oom:
    list_release(rest);
    list_release(one);
    return err_set(I, "remove(): out of memory");
}

const BuiltinDef bi_list_table[] = {
    {"list", bi_list, "", 0, BIND_VARIADIC, 1, BF_RT(RT_LIST) | BF_SPARSE},
    {"remove", bi_remove, "list,index", 2, BIND_POS, 2, BF_MULTI | BF_SPARSE},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
