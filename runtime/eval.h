/* SPDX-License-Identifier: Apache-2.0
 * Internal interface between the evaluator's files: eval.c (expressions,
 * calls), exec.c (statements), index.c (indexing), and the parfor code
 * beside them. Private to runtime/ (tools/check-layers.sh); what other
 * layers may call of the evaluator is in interp.h. */
#ifndef DML_RUNTIME_EVAL_H
#define DML_RUNTIME_EVAL_H

#include "interp.h"
#include "program.h"

/* ---- index.c ---- */
/* X[...] on a matrix or list. */
Status index_get(Interp *I, const Node *n, Value *out);
/* target[...] = v (v owned), or += when 'accum'. */
Status index_set_take(Interp *I, const Lhs *l, Value v, bool accum, const Loc *loc);

/* Store v (owned) in slot s of the current frame. */
static inline void slot_set_take(Interp *I, int s, Value v)
{
    Value *p = &I->frame->slots[s];
    Value old = *p;
    *p = v;
    val_release(old);
}

#endif
