/* SPDX-License-Identifier: Apache-2.0
 * The runtime's side of the builtin calling convention (builtin_api.h):
 * the installed BuiltinTable and the parameter-list helpers. */
#include "builtin_api.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Written once at start-up; read by resolver and fusion threads. */
static _Atomic(const BuiltinTable *) installed;

void builtin_table_install(const BuiltinTable *t)
{
    atomic_store_explicit(&installed, t, memory_order_release);
}

/* The installed table. Without one the process cannot go on meaningfully
 * (every builtin call would resolve as undefined), and it is the calling
 * program's bug, not the user's: say which call is missing and stop. */
static const BuiltinTable *table(const char *caller)
{
    const BuiltinTable *t = atomic_load_explicit(&installed, memory_order_acquire);
    if (!t) {
        fprintf(stderr, "dml: internal error: %s() called before the builtin table was installed "
                        "(call builtin_registry_install() at start-up; runtime/builtin_api.h)\n", caller);
        abort();
    }
    return t;
}

const BuiltinDef *builtin_find_any_case(const char *name)
{
    const BuiltinTable *t = table(__func__);
    return name ? t->find_any_case(name) : NULL;
}

const BuiltinDef *builtin_find(const char *name)
{
    const BuiltinTable *t = table(__func__);
    return name ? t->find(name) : NULL;
}

const char *builtin_suggest_function(const Module *m, const char *name, char *buf, size_t cap)
{
    return table(__func__)->suggest_function(m, name, buf, cap);
}

const char *builtin_arg_names_error(const BuiltinDef *bi, int n, const char *const *names, int *at, char *buf, size_t cap)
{
    const BuiltinTable *t = table(__func__);
    *at = -1;
    return t->arg_names_error ? t->arg_names_error(bi, n, names, at, buf, cap) : NULL;
}

const char *builtin_unknown_param_error(const BuiltinDef *bi, const char *an, char *buf, size_t cap)
{
    const BuiltinTable *t = table(__func__);
    return t->unknown_param_error ? t->unknown_param_error(bi, an, buf, cap) : NULL;
}

int builtin_nparams(const BuiltinDef *def)
{
    const char *p = def->params;
    if (!p || !*p)
        return 0;
    int n = 1;
    for (; *p; p++)
        n += *p == ',';
    return n;
}

const char *builtin_param_name(const BuiltinDef *def, int i, char *buf, size_t cap)
{
    if (cap == 0)
        return buf;
    buf[0] = '\0';
    const char *p = def->params ? def->params : "";
    for (int k = 0; k < i && *p; k++) {
        p = strchr(p, ',');
        if (!p)
            return buf;
        p++;
    }
    size_t n = strcspn(p, ",");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

Status builtin_densify_args(Interp *I, const BuiltinDef *bi, Value *argv, int n)
{
    if ((bi->flags & BF_SPARSE) || mat_sparse_live() == 0)
        return ST_OK;
    for (int i = 0; i < n; i++)
        TRY(val_densify(I, &argv[i], bi->name));
    return ST_OK;
}
