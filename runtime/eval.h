/* SPDX-License-Identifier: Apache-2.0
 * Internal interface between the evaluator's files: eval.c (expressions,
 * calls), exec.c (statements), index.c (indexing). */
#ifndef DML_RUNTIME_EVAL_H
#define DML_RUNTIME_EVAL_H

#include "interp.h"
#include "program.h"

/* Call 'n' (an N_CALL) and write up to 'nout' owned results to outs; with
 * 'stmt' set, a call used as a statement (its results may be discarded and
 * statement-only builtins are allowed). */
Status eval_call(Interp *I, const Node *n, Value *outs, int nout, bool stmt);
/* X[...] on a matrix or list. */
Status eval_index(Interp *I, const Node *n, Value *out);
/* target[...] = v (v owned), or += when 'accum'. */
Status exec_left_index_take(Interp *I, const Lhs *l, Value v, bool accum, const Loc *loc);
/* Predicate of if/while as a boolean. */
Status eval_pred(Interp *I, const Node *n, bool *out);
/* Give the top-level frame room for every slot the program has declared
 * (the REPL grows the table between inputs). ST_ERR (out of memory, error
 * set) leaves the frame as it was: nothing may run in it then. */
Status exec_sync_top(Interp *I, Frame *top);
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
/* Set the interrupted error at 'loc'. */
Status eval_raise_interrupt(Interp *I, const Loc *loc);

#endif
