/* SPDX-License-Identifier: Apache-2.0
 * The builtin registry: looks names up across the family tables, and hands
 * that lookup to the runtime (builtin_registry_install). The tables are
 * const and the index is built once under pthread_once, so lookups are
 * safe from any thread (they happen once per call site, at resolve time). */
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "help.h"

/* Every family table, in lookup order (families.h). */
static const BuiltinDef *const family_tables[] = {
#define BI_FAMILY_ROW(f) bi_##f##_table,
    BUILTIN_FAMILIES(BI_FAMILY_ROW)
#undef BI_FAMILY_ROW
};
#define NTABLES (sizeof family_tables / sizeof family_tables[0])

/* Sorted index of all rows (by name, ties in table order), built once. */
static const BuiltinDef **index_rows;
static size_t index_n;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static int cmp_rows(const void *a, const void *b)
{
    const BuiltinDef *x = *(const BuiltinDef *const *)a, *y = *(const BuiltinDef *const *)b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x < y ? -1 : x > y;   /* rows of one table are contiguous; keep a stable order */
}

static void build_index(void)
{
    size_t n = 0;
    for (size_t t = 0; t < NTABLES; t++)
        for (const BuiltinDef *d = family_tables[t]; d->name; d++)
            n++;
    index_rows = malloc((n ? n : 1) * sizeof *index_rows);
    if (!index_rows)
        return;     /* builtin_find falls back to a linear scan */
    size_t k = 0;
    for (size_t t = 0; t < NTABLES; t++)
        for (const BuiltinDef *d = family_tables[t]; d->name; d++)
            index_rows[k++] = d;
    /* qsort is not stable across tables; a duplicate name is a bug anyway,
     * and the linear-scan order is used to break such ties below. */
    qsort(index_rows, n, sizeof *index_rows, cmp_rows);
    index_n = n;
}

static const BuiltinDef *scan_find(const char *name)
{
    for (size_t t = 0; t < NTABLES; t++)
        for (const BuiltinDef *d = family_tables[t]; d->name; d++)
            if (strcmp(d->name, name) == 0)
                return d;
    return NULL;
}

/* The runtime's BuiltinTable.find (reached as builtin_find). */
static const BuiltinDef *registry_find(const char *name)
{
    if (!name)
        return NULL;
    pthread_once(&index_once, build_index);
    if (!index_rows)
        return scan_find(name);
    size_t lo = 0, hi = index_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(index_rows[mid]->name, name);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < index_n && strcmp(index_rows[lo]->name, name) == 0) {
        /* Duplicate names across tables: honour the table order. */
        if (lo + 1 < index_n && strcmp(index_rows[lo + 1]->name, name) == 0)
            return scan_find(name);
        return index_rows[lo];
    }
    return NULL;
}

/* The runtime's BuiltinTable.find_any_case: the first BF_ANY_CASE row whose
 * name matches but for letter case. */
static const BuiltinDef *registry_find_any_case(const char *name)
{
    for (size_t t = 0; name && t < NTABLES; t++)
        for (const BuiltinDef *d = family_tables[t]; d->name; d++)
            if ((d->flags & BF_ANY_CASE) && strcasecmp(d->name, name) == 0)
                return d;
    return NULL;
}

void builtin_each(void (*fn)(const char *name, void *ctx), void *ctx)
{
    for (size_t t = 0; t < NTABLES; t++)
        for (const BuiltinDef *d = family_tables[t]; d->name; d++)
            fn(d->name, ctx);
}

void builtin_registry_install(void)
{
    static const BuiltinTable table = {
        .find = registry_find,
        .find_any_case = registry_find_any_case,
        .suggest_function = help_suggest_function,
        .arg_names_error = bi_arg_names_error,
        .unknown_param_error = bi_unknown_param_error,
    };
    builtin_table_install(&table);
}
