/* SPDX-License-Identifier: Apache-2.0
 * Lookups within one Module (program.h): its functions, its namespace
 * aliases, whether it is a DML-bodied builtin. The Program's own tables
 * (the module list, constants, source texts) are program.c's. */
#include "program.h"

#include <string.h>

FuncDef *module_find_func(const Module *m, const char *name)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0)
            return m->funcs[i];
    return NULL;
}

bool module_is_builtin(const Module *m)
{
    return strncmp(m->key, "<builtin>/", 10) == 0;
}

Module *module_find_alias(const Module *m, const char *alias)
{
    for (int i = 0; i < m->naliases; i++)
        if (strcmp(m->aliases[i].alias, alias) == 0)
            return m->aliases[i].mod;
    return NULL;
}
