/* SPDX-License-Identifier: Apache-2.0
 * `dml test`: discovers script tests, runs each in a child process of the dml
 * executable (cwd = the test's folder, stdin = /dev/null, stdout/stderr to
 * unlinked temp files, DML_TEST=1, own process group, timeout), judges the
 * result against X.out / X.err / X.status, and prints failures with a line
 * diff. Keeps no global state; the caller's SIGCHLD mask and disposition are
 * restored before returning. Single-threaded: call from the main thread.
 * This file: the options and the driver loop; the rest is in testrun_*.c
 * (see testrun_int.h). */
#define _GNU_SOURCE
#include "testrun.h"
#include "testrun_int.h"

#include "../runtime/clock.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * Options
 * ====================================================================== */

static void usage(FILE *f)
{
    fputs("usage: dml test [options] [DIR|FILE.dml ...]\n"
          "Runs script tests: X.dml with a golden X.out (stdout, exit 0), an X.err\n"
          "(first stderr line, exit 1 or the number in X.status), or a first line\n"
          "containing '# test' (must exit 0). X.args holds command-line arguments.\n"
          "Other .dml files found in folders are helpers: skipped, counted before the\n"
          "summary line (-v names them). A .dml file\n"
          "named explicitly is always run (exit 0 expected; --update writes X.out).\n"
          "  -v, --verbose     print 'ok path' for passing tests\n"
          "  --timeout N       seconds per test (default 60)\n"
          "  -j N              run N tests in parallel (0 = one per CPU)\n"
          "  --update          rewrite X.out (X.err) from the actual output\n"
          "  --wrap CMD        run each test as CMD dml run ... (e.g. valgrind)\n",
          f);
}

/* Returns 0 on success, 1 when help was printed, 2 on a usage error. */
static int parse_opts(int argc, char **argv, Opts *o)
{
    o->timeout = 60;
    o->jobs = 1;
    bool only_operands = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (only_operands || a[0] != '-' || a[1] == '\0') {
            tr_sl_push_take(&o->operands, tr_xstrdup(a));
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_operands = true;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o->verbose = true;
        } else if (strcmp(a, "--update") == 0) {
            o->update = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--timeout") == 0 || strncmp(a, "--timeout=", 10) == 0) {
            val = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            double t = val ? strtod(val, &end) : 0;
            if (!val || end == val || *end || !(t > 0) || t > 1e6) {
                fprintf(stderr, "dml test: --timeout needs a positive number of seconds\n");
                return 2;
            }
            o->timeout = t;
        } else if (strncmp(a, "-j", 2) == 0 || strncmp(a, "--jobs", 6) == 0) {
            if (strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0)
                val = i + 1 < argc ? argv[++i] : NULL;
            else if (a[1] == 'j')
                val = a + 2;
            else if (a[6] == '=')
                val = a + 7;
            char *end = NULL;
            long j = val ? strtol(val, &end, 10) : -1;
            if (!val || end == val || *end || j < 0 || j > 1024) {
                fprintf(stderr, "dml test: -j needs a number of parallel tests\n");
                return 2;
            }
            if (j == 0) {
                long c = sysconf(_SC_NPROCESSORS_ONLN);
                j = c > 0 ? c : 1;
            }
            o->jobs = j;
        } else if (strcmp(a, "--wrap") == 0 || strncmp(a, "--wrap=", 7) == 0) {
            val = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || !tr_split_words(val, &o->wrap)) {
                fprintf(stderr, "dml test: --wrap needs a command\n");
                return 2;
            }
        } else {
            fprintf(stderr, "dml test: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

/* Stops the running tests among tests[from, to) that are past their
 * deadline or print too much; true when it stopped one. Else *wait becomes
 * the time to the nearest deadline, if sooner. */
static bool kill_overdue(Test *tests, size_t from, size_t to, double *wait)
{
    double now = clock_now_sec();
    bool killed = false;
    for (size_t i = from; i < to; i++) {
        Test *t = &tests[i];
        if (t->state != T_RUNNING || t->timed_out || t->too_much_output)
            continue;
        double left = t->deadline - now;
        if (left <= 0 || tr_output_too_large(t)) {
            tr_test_kill(t, left <= 0);
            killed = true;
        } else if (left < *wait) {
            *wait = left;
        }
    }
    return killed;
}

/* Runs the n tests, o->jobs at a time, printing each one's report in path
 * order as soon as it and those before it are done; counts them in
 * *passed and *failed. */
static void run_tests(Test *tests, size_t n, RunCtx *c, const Opts *o, int *passed, int *failed)
{
    /* SIGCHLD blocked and waited for with sigtimedwait: no handler, no
     * global flag. The old mask and disposition are restored at the end. */
    struct sigaction dfl, old_chld;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, &old_chld);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &c->child_mask);
    fflush(stdout);

    size_t next = 0, printed = 0, running = 0;
    while (printed < n) {
        while (running < (size_t)o->jobs && next < n) {
            tr_test_start(&tests[next], c, o->timeout);
            if (tests[next].state == T_RUNNING)
                running++;
            else
                tr_test_judge(&tests[next], o);
            next++;
        }
        running -= (size_t)tr_reap(tests, next, printed, o);
        /* Print finished tests in path order. */
        while (printed < next && tests[printed].state == T_DONE) {
            Test *t = &tests[printed];
            if (t->report.len)
                fwrite(t->report.p, 1, t->report.len, stdout);
            fflush(stdout);
            if (t->passed)
                (*passed)++;
            else
                (*failed)++;
            free(t->report.p);
            t->report = (StrBuf){0};
            printed++;
        }
        if (printed == n || running == 0)
            continue;
        double wait = POLL_MAX_S;
        if (kill_overdue(tests, printed, next, &wait))
            continue;
        struct timespec ts;
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        if (ts.tv_sec == 0 && ts.tv_nsec < 1000000)
            ts.tv_nsec = 1000000;
        sigtimedwait(&chld, NULL, &ts);
    }

    /* Drop a SIGCHLD still pending from our children before unblocking. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&chld, NULL, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &c->child_mask, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
}

int testrun_main(const char *self_exe, int argc, char **argv)
{
    Opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts(argc, argv, &o);
    if (rc != 0) {
        tr_sl_free(&o.operands);
        tr_sl_free(&o.wrap);
        return rc == 1 ? 0 : 2;
    }
    Test *tests = NULL;
    size_t n = 0;
    RunCtx c;
    StrList skipped = {0};
    if (!tr_collect(&o, &tests, &n, &skipped)) {
        tr_sl_free(&skipped);
        tr_sl_free(&o.operands);
        tr_sl_free(&o.wrap);
        free(tests);
        return 2;
    }
    if (!tr_ctx_init(&c, self_exe, &o.wrap)) {
        tr_sl_free(&skipped);
        tr_ctx_free(&c);
        for (size_t i = 0; i < n; i++)
            tr_test_free(&tests[i]);
        free(tests);
        tr_sl_free(&o.operands);
        tr_sl_free(&o.wrap);
        return 2;
    }
    if (n == 0)
        fprintf(stderr, "dml test: no tests found\n");

    int passed = 0, failed = 0;
    run_tests(tests, n, &c, &o, &passed, &failed);

    /* Files that look like tests but have no expectation would otherwise
     * vanish silently; helpers (sourced files, libraries) land here too. */
    if (o.verbose)
        for (size_t i = 0; i < skipped.n; i++)
            printf("skip %s (no .out, .err or '# test' line)\n", skipped.v[i]);
    if (skipped.n)
        printf("%zu .dml file%s skipped: no .out, .err or '# test' line%s\n", skipped.n,
               skipped.n > 1 ? "s" : "", o.verbose ? "" : " (-v lists them)");
    tr_sl_free(&skipped);
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    for (size_t i = 0; i < n; i++)
        tr_test_free(&tests[i]);
    free(tests);
    tr_ctx_free(&c);
    tr_sl_free(&o.operands);
    tr_sl_free(&o.wrap);
    return failed ? 1 : 0;
}
