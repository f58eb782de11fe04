/* SPDX-License-Identifier: Apache-2.0
 * Parallel execution of parfor loops (see parfor.c for the semantics). */
#ifndef DML_RUNTIME_PARFOR_H
#define DML_RUNTIME_PARFOR_H

#include "interp.h"

/* Run the parfor loop 's' for iteration values a, a+inc, ... (count of them). */
Status exec_parfor(Interp *I, const Node *s, int64_t a, int64_t inc, int64_t count);

#endif
