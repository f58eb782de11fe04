/* SPDX-License-Identifier: Apache-2.0
 * Rows of DYNAMIC tasks kept on worker ranks (tp_mpi_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "tp_mpi_rows.h"

bool ps_rows_sent_init(PsRowsSent *s, int k)
{
    *s = (PsRowsSent){.k = k};
    s->used = calloc((size_t)k + 1, sizeof *s->used);
    s->have = calloc((size_t)k + 1, sizeof *s->have);
    s->cap = calloc((size_t)k + 1, sizeof *s->cap);
    if (!s->used || !s->have || !s->cap) {
        ps_rows_sent_free(s);
        return false;
    }
    return true;
}

void ps_rows_sent_free(PsRowsSent *s)
{
    if (s->have)
        for (int i = 0; i < s->k; i++)
            free(s->have[i]);
    free(s->used);
    free(s->have);
    free(s->cap);
    *s = (PsRowsSent){0};
}

int ps_rows_plan(PsRowsSent *s, int i, int64_t id, uint64_t bytes)
{
    if (!s->have || i < 0 || i >= s->k || id < 0) {
        s->sent++;
        return PS_ROWS_ONCE;
    }
    if (id < s->cap[i] && s->have[i][id]) {
        s->kept++;
        return PS_ROWS_KEPT;
    }
    s->sent++;
    if (bytes > PS_ROWS_KEEP_BYTES - s->used[i])
        return PS_ROWS_ONCE;
    if (id >= s->cap[i]) {
        int64_t cap = s->cap[i] ? s->cap[i] : 64;
        while (cap <= id)
            cap *= 2;
        uint8_t *h = realloc(s->have[i], (size_t)cap);
        if (!h)
            return PS_ROWS_ONCE;
        memset(h + s->cap[i], 0, (size_t)(cap - s->cap[i]));
        s->have[i] = h;
        s->cap[i] = cap;
    }
    s->have[i][id] = 1;
    s->used[i] += bytes;
    return PS_ROWS_KEEP;
}

bool ps_rows_mark(Value task, int plan)
{
    Matrix *m = task.kind == VAL_LIST ? mat_new_raw(1, 1) : NULL;
    if (!m)
        return false;
    m->data[0] = plan;
    return list_push_take(task.l, val_matrix_take(m), NULL);
}

void ps_rows_kept_free(PsRowsKept *c)
{
    for (int64_t i = 0; i < c->cap; i++) {
        val_release(c->X[i]);
        val_release(c->Y[i]);
    }
    free(c->X);
    free(c->Y);
    *c = (PsRowsKept){0};
}

/* Room for task id in c; false when out of memory. */
static bool kept_grow(PsRowsKept *c, int64_t id)
{
    if (id < c->cap)
        return true;
    int64_t cap = c->cap ? c->cap : 64;
    while (cap <= id)
        cap *= 2;
    Value *x = realloc(c->X, sizeof *x * (size_t)cap);
    if (!x)
        return false;
    c->X = x;
    Value *y = realloc(c->Y, sizeof *y * (size_t)cap);
    if (!y)
        return false;
    c->Y = y;
    for (int64_t i = c->cap; i < cap; i++)
        c->X[i] = c->Y[i] = val_none();
    c->cap = cap;
    return true;
}

int ps_rows_take(PsRowsKept *c, Value task)
{
    List *l = task.kind == VAL_LIST ? task.l : NULL;
    if (!l || l->n != 5 || l->names || l->items[4].kind != VAL_MATRIX || mat_len(l->items[4].m) != 1 ||
        l->items[3].kind != VAL_MATRIX || mat_len(l->items[3].m) < 3 || l->items[1].kind != VAL_MATRIX ||
        l->items[2].kind != VAL_MATRIX)
        return 0;
    double plan = l->items[4].m->data[0], did = l->items[3].m->data[2];
    if (!(did >= 0 && did < 0x1p40 && did == (double)(int64_t)did))
        return 0;
    int64_t id = (int64_t)did;
    if (plan == PS_ROWS_KEPT) {
        if (id >= c->cap || c->X[id].kind != VAL_MATRIX || l->items[1].m->rows != 0 || l->items[2].m->rows != 0 ||
            l->items[1].m->cols != c->X[id].m->cols || l->items[2].m->cols != c->Y[id].m->cols)
            return 0;
        val_release(l->items[1]);
        val_release(l->items[2]);
        l->items[1] = val_ref(c->X[id]);
        l->items[2] = val_ref(c->Y[id]);
    } else if (plan == PS_ROWS_KEEP) {
        if (!kept_grow(c, id))
            return -1;
        val_release(c->X[id]);
        val_release(c->Y[id]);
        c->X[id] = val_ref(l->items[1]);
        c->Y[id] = val_ref(l->items[2]);
    } else if (plan != PS_ROWS_ONCE) {
        return 0;
    }
    val_release(l->items[4]);
    l->items[4] = val_none();
    l->n = 4;
    return 1;
}
