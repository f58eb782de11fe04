/* SPDX-License-Identifier: Apache-2.0
 * Dead outputs of user-function calls: work that only feeds a value the
 * caller throws away is skipped, as upstream's compiler removes dead code.
 *
 *   [dX, dW, db] = conv2d::backward(...)     # dX never read afterwards
 *
 * Two facts, each found in one function body after it is bound:
 *   - the call site (Node.call.dead_outs): bit i set when the caller never
 *     reads target i anywhere in its body (nor returns it, nor looks
 *     variables up by name with exists() or ls()), and for every output
 *     past the targets; only [a, b, ...] = f(...) in a function body,
 *     outside parfor bodies;
 *   - the callee (FuncDef.skip_outs): bit i set when output i is written
 *     only by top-level statements out = <pure expression> (operators,
 *     indexing and builtins without side effects or random numbers; see
 *     liveness.c) and read nowhere in the body; those statements are
 *     flagged (Node.assign.skip_out = i + 1).
 * At run time a call's frame gets dead_outs = site & callee; a flagged
 * statement whose bit is set is not executed, and the output it would have
 * written returns unbound (the caller never reads it). Skipping a pure
 * computation can only drop an error it would have raised. */
#ifndef DML_RUNTIME_LIVENESS_H
#define DML_RUNTIME_LIVENESS_H

#include "program.h"

/* Fills f->skip_outs, flags f's skippable output assignments and marks the
 * dead targets of the calls in f's body. Call once f's body is bound
 * (slots resolved) and checked. Never fails: anything it cannot prove
 * leaves the statement or call as it was. */
void liveness_func(FuncDef *f);

#endif
