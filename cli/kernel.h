/* SPDX-License-Identifier: Apache-2.0
 * The Jupyter kernel front end (doc/jupyter.md):
 *   dml kernel -f CONNECTION_FILE      what a kernelspec starts
 *   dml kernel install [--user | --prefix DIR]
 * Cells run in one Session (cli/session.h), the REPL's evaluator, help
 * reference and completion. */
#ifndef DML_CLI_KERNEL_H
#define DML_CLI_KERNEL_H

#include <stdint.h>

#include "../runtime/program.h"

/* Serves the connection file 'path' over 'prog' until a shutdown request.
 * Returns the exit status (0; 1 when the kernel could not start). */
int kernel_main(Program *prog, const char *path, uint64_t seed);
/* dml kernel install [--user | --prefix DIR]: writes the kernelspec "dml".
 * argv holds the arguments after "install". Returns the exit status. */
int kernel_install_main(int argc, char **argv);

#endif
