/* SPDX-License-Identifier: Apache-2.0
 * The runtime reaches the builtins only through the BuiltinTable that
 * builtins/ installs (runtime/builtin_api.h): a lookup before the
 * installation stops the process with a message naming the missing call
 * (never a NULL dereference, never "no such function"), and after it the
 * runtime's lookups answer from the registry. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "builtins/registry.h"
#include "check.h"

/* Runs builtin_find("t") in a child with nothing installed; returns its
 * wait status and what it wrote to stderr. */
static int find_uninstalled(char *err, size_t cap)
{
    err[0] = '\0';
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        close(fd[0]);
        dup2(fd[1], 2);
        const BuiltinDef *d = builtin_find("t");
        fprintf(stderr, "returned %p\n", (const void *)d);
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], err + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void test_lookup_before_install_aborts_with_a_message(void)
{
    char err[4096];
    int status = find_uninstalled(err, sizeof err);
    CHECK(status != -1);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, "builtin_find() called before the builtin table was installed") != NULL);
    CHECK(strstr(err, "builtin_registry_install()") != NULL);
    CHECK(strstr(err, "returned") == NULL);
}

static void test_lookups_after_install(void)
{
    builtin_registry_install();
    const BuiltinDef *t = builtin_find("t");
    CHECK(t != NULL && strcmp(t->name, "t") == 0);
    CHECK(builtin_find("no_such_builtin_xyz") == NULL);
    CHECK(builtin_find(NULL) == NULL);
    const BuiltinDef *m = builtin_find("matrix");
    CHECK(m != NULL);
    if (m) {
        char buf[32];
        CHECK(builtin_nparams(m) >= 3);
        CHECK_STR(builtin_param_name(m, 0, buf, sizeof buf), "data");
    }
    char hint[128];
    CHECK_STR(builtin_suggest_function(NULL, "rowSumz", hint, sizeof hint), " (did you mean rowSums?)");
    CHECK_STR(builtin_suggest_function(NULL, "qqqqqqqqqqqqqqqq", hint, sizeof hint), "");
}

int main(void)
{
    test_lookup_before_install_aborts_with_a_message();
    test_lookups_after_install();
    return CHECK_DONE();
}
