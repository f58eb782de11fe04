/* SPDX-License-Identifier: Apache-2.0
 * Slot tables (SlotTable, program.h): the variable names of one frame
 * layout, a function's or the top level's, in slot order. Filled by the
 * resolver on the loading thread; read-only while scripts run. */
#include "program.h"

#include <stdlib.h>
#include <string.h>

int slots_find(const SlotTable *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    return -1;
}

int slots_add(SlotTable *t, const char *name)
{
    int i = slots_find(t, name);
    if (i >= 0)
        return i;
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        const char **names = realloc(t->names, sizeof *names * (size_t)cap);
        if (!names)
            return -1;
        t->names = names;
        t->cap = cap;
    }
    t->names[t->n] = name;
    return t->n++;
}

void slots_free(SlotTable *t)
{
    free(t->names);
    t->names = NULL;
    t->n = t->cap = 0;
}
