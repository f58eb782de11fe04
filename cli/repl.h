/* SPDX-License-Identifier: Apache-2.0
 * The interactive REPL on readline (dml with no arguments). */
#ifndef DML_CLI_REPL_H
#define DML_CLI_REPL_H

#include <stdint.h>

#include "../runtime/program.h"

/* Runs the read-eval-print loop over 'prog' until Ctrl-D / EOF. 'seed' seeds
 * the interpreter's RNG. Returns the process exit status (0). */
int repl_main(Program *prog, uint64_t seed);

#endif
