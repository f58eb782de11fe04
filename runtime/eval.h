/* SPDX-License-Identifier: Apache-2.0
 * Internal interface between the evaluator's files: eval.c (expressions,
 * calls), exec.c (statements), index.c (indexing), and the parfor code
 * beside them. Private to runtime/ (tools/check-layers.sh); what other
 * layers may call of the evaluator is in interp.h. */
#ifndef DML_RUNTIME_EVAL_H
#define DML_RUNTIME_EVAL_H

#include "interp.h"
#include "program.h"

/* X[...] on a matrix or list. */
Status eval_index(Interp *I, const Node *n, Value *out);
/* target[...] = v (v owned), or += when 'accum'. */
Status exec_left_index_take(Interp *I, const Lhs *l, Value v, bool accum, const Loc *loc);
/* Predicate of if/while as a boolean. */
Status eval_pred(Interp *I, const Node *n, bool *out);
/* Store v (owned) in slot s of the current frame. */
static inline void slot_set_take(Interp *I, int s, Value v)
{
    Value *p = &I->frame->slots[s];
    Value old = *p;
    *p = v;
    val_release(old);
}
/* A scalar as a 1-based index (ints, integral doubles truncated as doc/language.md, "types"). */
Status eval_index_value(Interp *I, Value v, int64_t *out);

#endif
