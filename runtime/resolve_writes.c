/* SPDX-License-Identifier: Apache-2.0
 * The resolve pass's parfor writes (resolve_int.h): which slots a parfor
 * body assigns, and which of them only by accumulation (+=), recorded on
 * the loop node for parfor's dependency check and its result merge. */
#include "resolve_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- parfor result variables ---- */

typedef struct Writes {
    int *slot;
    bool *accum_only;
    int n, cap;
    bool oom;               /* an array could not grow */
} Writes;

static void note_write(Writes *w, int slot, bool accum)
{
    for (int i = 0; i < w->n; i++) {
        if (w->slot[i] == slot) {
            w->accum_only[i] = w->accum_only[i] && accum;
            return;
        }
    }
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 8;
        int *ns = realloc(w->slot, sizeof *w->slot * (size_t)cap);
        if (ns)
            w->slot = ns;
        bool *na = ns ? realloc(w->accum_only, sizeof *w->accum_only * (size_t)cap) : NULL;
        if (!na) {
            w->oom = true;
            return;
        }
        w->accum_only = na;
        w->cap = cap;
    }
    w->slot[w->n] = slot;
    w->accum_only[w->n] = accum;
    w->n++;
}

static void writes_of(Writes *w, Node **stmts, int n)
{
    for (int i = 0; i < n; i++) {
        Node *s = stmts[i];
        switch (s->kind) {
        case N_ASSIGN: note_write(w, s->assign.target.slot, s->assign.accum); break;
        case N_IFDEF: note_write(w, s->ifdef.target.slot, false); break;
        case N_MULTIASSIGN:
            for (int j = 0; j < s->multi.n; j++)
                note_write(w, s->multi.targets[j].slot, false);
            break;
        case N_IF:
            writes_of(w, s->ifs.then_b, s->ifs.nthen);
            writes_of(w, s->ifs.else_b, s->ifs.nelse);
            break;
        case N_FOR:
            note_write(w, s->loop.var_slot, false);
            writes_of(w, s->loop.body, s->loop.nbody);
            break;
        case N_WHILE:
            writes_of(w, s->loop.body, s->loop.nbody);
            break;
        default:
            break;
        }
    }
}

/* Record which slots a parfor body writes (its result variables and
 * locals); the loop variable itself is one of them. */
void res_collect_writes(Res *r, Node *loop)
{
    Writes w = {0};
    note_write(&w, loop->loop.var_slot, false);
    writes_of(&w, loop->loop.body, loop->loop.nbody);
    int *written = w.oom ? NULL : res_alloc(r, sizeof(int) * (size_t)w.n, &loop->loc);
    bool *accum_only = written ? res_alloc(r, sizeof(bool) * (size_t)w.n, &loop->loc) : NULL;
    if (accum_only) {
        loop->loop.written = written;
        loop->loop.accum_only = accum_only;
        memcpy(loop->loop.written, w.slot, sizeof(int) * (size_t)w.n);
        memcpy(loop->loop.accum_only, w.accum_only, sizeof(bool) * (size_t)w.n);
        loop->loop.nwritten = w.n;
    } else
        res_oom(r, &loop->loc);
    free(w.slot);
    free(w.accum_only);
}

