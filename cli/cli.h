/* SPDX-License-Identifier: Apache-2.0
 * Shared pieces of the command-line front end (main.c, repl.c): the SIGINT
 * flag and running a loaded chunk with errors reported the way users see them. */
#ifndef DML_CLI_CLI_H
#define DML_CLI_CLI_H

#include <stdatomic.h>
#include <stdio.h>

#include "../runtime/interp.h"
#include "../runtime/program.h"

/* Set by the SIGINT handler; interpreters poll it through I->interrupt. */
extern atomic_int cli_interrupt_flag;
/* Install a SIGINT handler that only sets cli_interrupt_flag. */
void cli_install_sigint(void);
/* Print the pending error of I to 'f' as
 *   file:line:col: message
 *   <source line>
 *   <caret>
 *     in f() called at ...
 * (flushing stdout first so output and errors interleave correctly). */
void cli_report_error(Interp *I, FILE *f);
/* Print a load error (a syntax error, a resolve error) of Program p to 'f'
 * the same way: the first line, then the source line of the file it names
 * (from the text p keeps) and the caret (flushing stdout first). */
void cli_report_diag(const Program *p, const DiagErr *e, FILE *f);
/* The sink the front ends install on their Interps (I->sink): progress
 * lines and warnings go to stderr as they come, each in one write; status
 * lines are rewritten in place when stderr is a terminal. */
DiagSink cli_stderr_sink(void);
/* Folder of the running executable (for the stdlib search); malloc'd or NULL. */
char *cli_exe_dir(void);

#endif
