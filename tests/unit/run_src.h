/* SPDX-License-Identifier: Apache-2.0
 * Test support shared by the C unit tests and the fuzz target (one copy
 * instead of one per test): load a DML program held in a string and run it
 * the way `dml run` does (cli/main.c), its printed output thrown away. */
#ifndef DML_TESTS_UNIT_RUN_SRC_H
#define DML_TESTS_UNIT_RUN_SRC_H

#include <stddef.h>

#include "base/diag.h"
#include "runtime/program.h"

typedef struct RunOpts {
    const char *name;           /* the file name positions show; NULL: "test.dml" */
    CmdArg *args;               /* $parameters (-nvargs), 'nargs' of them */
    int nargs;
    DiagSink sink;              /* progress lines and warnings; none: dropped */
    int budget_ms;              /* > 0: a watchdog interrupts the run after about this long,
                                 * so an endless loop ends as an ordinary error */
} RunOpts;

typedef enum RunResult {
    RUN_OK,                     /* loaded and ran without error */
    RUN_ERROR,                  /* a load or run-time error with a message */
    RUN_ERROR_NO_MESSAGE,       /* an error with an empty message: always a bug */
} RunResult;

/* Loads and runs src[0..len) in a fresh Program and Interp, and frees them.
 * When 'msg' is not NULL it receives the error as dml shows it, malloc'd (a
 * load error with its source line and caret, a run-time error as
 * err_format gives it), or NULL on success. Running out of memory is a RUN_ERROR. */
RunResult run_src(const RunOpts *o, const char *src, size_t len, char **msg);

#endif
