/* SPDX-License-Identifier: Apache-2.0
 * Parallel execution of parfor loops (see parfor.c for the semantics). */
#ifndef DML_RUNTIME_PARFOR_H
#define DML_RUNTIME_PARFOR_H

#include "interp.h"

/* Run the parfor loop 's' for iteration values a, a+inc, ... (count of them). */
Status parfor_run(Interp *I, const Node *s, int64_t a, int64_t inc, int64_t count);

/* Upstream's message for a loop-carried dependency; %s names the variable. */
#define PARFOR_DEP_FMT                                                                                        \
    "PARFOR loop dependency analysis: inter-iteration (loop-carried) dependencies detected for variable(s): " \
    "%s. \n Please, ensure independence of iterations."

/* Resolve time (parfor_check.c): the dependency analysis of parfor loop
 * 'loop' (its written slots already collected), filling the loop's
 * candidate, dep_nonscalar and check fields. False when out of memory. */
bool parfor_analyze(Arena *a, Node *loop);

/* The first stop() or assert() statement in the body of parfor loop
 * 'loop' (nested blocks included, called functions not), or NULL: upstream
 * does not allow them there. */
const Node *parfor_forbidden_call(const Node *loop);

/* At loop entry, before any iteration runs: upstream's dependency error
 * when a candidate result carries a value between iterations. */
Status parfor_check_entry(Interp *I, const Node *s);

#endif
