/* SPDX-License-Identifier: Apache-2.0
 * Allocation failure is a DML error, never a crash or a leak (issue 10):
 * for each script, fail its 1st allocation, then its 2nd, ... (the
 * DML_FAIL_ALLOC injector, base/failalloc.h) until a run completes with
 * no failure injected. Every run must end cleanly, with success or with an
 * error message; under ASan the leak check at exit covers every path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/failalloc.h"
#include "builtins/registry.h"
#include "check.h"
#include "run_src.h"

/* Loads and runs 'src'; returns 0 on success, 1 on a DML error with a
 * message, 2 on an error without one. */
static int run_once(const char *src)
{
    CmdArg args[1] = {{"n", "3"}};
    return (int)run_src(&(RunOpts){.name = "fa.dml", .args = args, .nargs = 1}, src, strlen(src), NULL);
}

/* Sweeps the failing allocation over every allocation 'src' makes; 'want'
 * is how the script ends without injection (0 success, 1 its own error). */
static void sweep(const char *what, const char *src, int want)
{
    failalloc_set(0);
    if (!check_report_(run_once(src) == want, __FILE__, __LINE__, "%s: runs as meant without injection", what))
        return;
    long n;
    int errors = 0;
    for (n = 1; n < 100000; n++) {
        failalloc_set(n);
        int rc = run_once(src);
        bool fired = failalloc_fired();
        failalloc_set(0);
        if (!check_report_(rc != 2, __FILE__, __LINE__, "%s: failing allocation %ld: an error without a message",
                           what, n))
            return;
        errors += rc == 1;
        if (!fired)
            break;
    }
    check_report_(n < 100000, __FILE__, __LINE__, "%s: the sweep ends", what);
    check_report_(errors > 0, __FILE__, __LINE__, "%s: some injected failure is reported", what);
    printf("%s: %ld allocations swept, %d ended in an error\n", what, n - 1, errors);
}

static const char *const script_values =
    "f = function(matrix[double] X, double s) return (matrix[double] Y, string msg) {\n"
    "  Y = X * s + 1\n"
    "  msg = \"scaled by \" + s\n"
    "}\n"
    "A = matrix(\"1 2 3 4\", rows=2, cols=2)\n"
    "[B, m] = f(A, $n)\n"
    "L = list(a=B, b=m, c=list(1, \"x\", list(A)))\n"
    "L[\"d\"] = 5\n"
    "s = toString(L)\n"
    "for (i in 1:3) { A = A %*% A; A[1, 1] = i }\n"
    "while (sum(A) > 10) A = A / 2\n"
    "if (nrow(A) == 2) print(m + \" \" + sum(A)) else print(\"no\")\n"
    "C = rbind(A, t(A))\n"
    "D = C[2:3, ]\n"
    "print(toString(colSums(D)) + as.scalar(D[1, 1]))\n";

static const char *const script_errors =
    "g = function(double x) return (double y) { if (x > 2) stop(\"too big: \" + x); y = g(x + 1) }\n"
    "z = g(0)\n";

static const char *const script_parfor =
    "R = matrix(0, 4, 2)\n"
    "parfor (i in 1:4) R[i, ] = matrix(i, 1, 2) * 2\n"
    "print(sum(R))\n";

static const char *const script_deep =
    "L = list()\n"
    "for (i in 1:50) L = list(L, i)\n"
    "s = toString(L)\n"
    "L = 0\n";

/* The documented switch itself: DML_FAIL_ALLOC=N on the dml binary (the
 * runner passes its path in $DML; skipped without it). Every N must end
 * with status 0 or 1 and no signal; under ASan a leak would change the
 * status. */
static void test_env_switch(void)
{
    const char *dml = getenv("DML");
    if (!dml || !*dml)
        return;
    char path[] = "/tmp/dml_failalloc_XXXXXX";
    int fd = mkstemp(path);
    if (!check_report_(fd >= 0, __FILE__, __LINE__, "temporary script"))
        return;
    const char *src = "L = list(1, \"a\", matrix(1, 2, 2))\nprint(toString(L))\n";
    if (write(fd, src, strlen(src)) != (ssize_t)strlen(src))
        abort();
    close(fd);
    /* Past the script's last allocation every run succeeds: stop after 30
     * successes in a row. */
    int errors = 0, ok_run = 0, n;
    for (n = 1; n <= 400 && ok_run < 30; n++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "DML_FAIL_ALLOC=%d '%s' run '%s' >/dev/null 2>&1", n, dml, path);
        int st = system(cmd);
        bool clean = st != -1 && WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1);
        if (!check_report_(clean, __FILE__, __LINE__, "DML_FAIL_ALLOC=%d: status %d", n, st))
            break;
        errors += WEXITSTATUS(st) == 1;
        ok_run = WEXITSTATUS(st) == 0 ? ok_run + 1 : 0;
    }
    check_report_(errors > 0, __FILE__, __LINE__, "DML_FAIL_ALLOC makes some run fail");
    printf("DML_FAIL_ALLOC=1..%d on the binary: %d ended in an error\n", n - 1, errors);
    unlink(path);
}

int main(void)
{
    builtin_registry_install();
    sweep("values", script_values, 0);
    sweep("errors", script_errors, 1);
    sweep("parfor", script_parfor, 0);
    sweep("deep", script_deep, 0);
    test_env_switch();
    return CHECK_DONE();
}
