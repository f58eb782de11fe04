/* SPDX-License-Identifier: Apache-2.0
 * `dml test`: the script regression-test runner. Finds tests (X.dml with a
 * golden X.out, an expected-error X.err, or a first line containing the
 * marker "# test"), runs each as a child process `dml run X.dml [X.args]`
 * in the test's directory under a timeout, compares, and reports
 * "N passed, N failed". Uses no interpreter state: it only forks and execs
 * the dml executable, so it is safe to call from main() alone. */
#ifndef DML_CLI_TESTRUN_H
#define DML_CLI_TESTRUN_H

/* Runs `dml test [options] [DIR|FILE...]`.
 *   self_exe  path of the dml executable to run the tests with (argv[0] is
 *             fine: it is resolved before any chdir; NULL = /proc/self/exe).
 *   argc/argv the words after "test": options (-v, --timeout N, -j N,
 *             --update, --wrap CMD, -h) and operands: folders (searched
 *             recursively; only files that are tests run) and .dml files
 *             (always run). No operand = ".".
 * Output goes to stdout (one "FAIL path: reason" block per failure, then
 * the final line "N passed, N failed"); usage errors go to stderr.
 * Returns the exit status: 0 all passed, 1 some failed, 2 usage error.
 * Not thread-safe: it changes the SIGCHLD disposition and mask while it
 * runs (restored on return). Call it from the main thread only. */
int testrun_main(const char *self_exe, int argc, char **argv);

#endif
