/* SPDX-License-Identifier: Apache-2.0
 * The test runner's child processes: each test runs as `dml run X.dml` in
 * its folder, in its own process group, output to unlinked temp files;
 * killed on timeout or runaway output, then reaped and judged. */
#define _GNU_SOURCE
#include "testrun_int.h"

#include "../runtime/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* An unlinked temp file opened read-write, close-on-exec. */
static int temp_fd(void)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char *tpl = tr_path_join(tmp, "dmltest.XXXXXX");
    if (!tpl)
        return -1;
    int fd = mkostemp(tpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tpl);
    free(tpl);
    return fd;
}


/* Finds 'cmd' along $PATH (or returns a copy if it contains '/'). */
static char *find_in_path(const char *cmd)
{
    if (strchr(cmd, '/'))
        return realpath(cmd, NULL);
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        char *dir = n ? strndup(path, n) : tr_xstrdup(".");
        char *full = dir ? tr_path_join(dir, cmd) : NULL;
        free(dir);
        if (full && access(full, X_OK) == 0 && tr_is_regular(full)) {
            char *abs = realpath(full, NULL);
            free(full);
            return abs;
        }
        free(full);
        if (!colon)
            break;
        path = colon + 1;
    }
    return NULL;
}

bool tr_ctx_init(RunCtx *c, const char *self_exe, const StrList *wrap)
{
    memset(c, 0, sizeof *c);
    if (self_exe && *self_exe)
        c->dml = find_in_path(self_exe);
    if (!c->dml)
        c->dml = realpath("/proc/self/exe", NULL);
    if (!c->dml) {
        fprintf(stderr, "dml test: cannot find the dml executable '%s'\n",
                self_exe ? self_exe : "(null)");
        return false;
    }
    for (size_t i = 0; i < wrap->n; i++)
        tr_sl_push_take(&c->wrap, tr_xstrdup(wrap->v[i]));
    if (c->wrap.n > 0) {
        char *full = find_in_path(c->wrap.v[0]);
        if (!full) {
            fprintf(stderr, "dml test: --wrap: command '%s' not found\n", c->wrap.v[0]);
            return false;
        }
        free(c->wrap.v[0]);
        c->wrap.v[0] = full;
        c->exe = tr_xstrdup(full);
    } else {
        c->exe = tr_xstrdup(c->dml);
    }

    size_t n = 0;
    while (environ && environ[n])
        n++;
    c->envp = calloc(n + 2, sizeof *c->envp);
    if (!c->envp || !c->exe)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "DML_TEST=", 9) != 0)
            c->envp[k++] = environ[i];
    c->envp[k++] = (char *)"DML_TEST=1";
    c->envp[k] = NULL;
    return true;
}

void tr_ctx_free(RunCtx *c)
{
    free(c->exe);
    free(c->dml);
    tr_sl_free(&c->wrap);
    free(c->envp);
}

/* Starts t's child. On failure sets t->start_error and marks it done. */
void tr_test_start(Test *t, const RunCtx *c, double timeout)
{
    t->state = T_DONE;
    if (t->args_error) {
        t->start_error = tr_xstrdup(t->args_error);
        return;
    }
    size_t argc = c->wrap.n + 3 + t->args.n;
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) {
        t->start_error = tr_xstrdup("out of memory");
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->wrap.n; i++)
        argv[k++] = c->wrap.v[i];
    argv[k++] = c->dml;
    argv[k++] = (char *)"run";
    argv[k++] = t->name;
    for (size_t i = 0; i < t->args.n; i++)
        argv[k++] = t->args.v[i];
    argv[k] = NULL;

    t->out_fd = temp_fd();
    t->err_fd = temp_fd();
    if (t->out_fd < 0 || t->err_fd < 0) {
        t->start_error = tr_xstrdup("cannot create a temporary file");
        free(argv);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        t->start_error = tr_xstrdup("fork failed");
        free(argv);
        return;
    }
    if (pid == 0) {
        /* Child: async-signal-safe calls only. */
        setpgid(0, 0);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &sa, NULL);
        sigaction(SIGCHLD, &sa, NULL);
        sigprocmask(SIG_SETMASK, &c->child_mask, NULL);
        if (chdir(t->dir) != 0) {
            static const char m[] = "dml test: cannot enter the test's directory\n";
            if (write(t->err_fd, m, sizeof m - 1) < 0) { /* nothing to do */ }
            _exit(126);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0 && nul != 0) {
            dup2(nul, 0);
            close(nul);
        }
        dup2(t->out_fd, 1);
        dup2(t->err_fd, 2);
        execve(c->exe, argv, c->envp);
        static const char m[] = "dml test: cannot execute the dml executable\n";
        if (write(2, m, sizeof m - 1) < 0) { /* nothing to do */ }
        _exit(127);
    }
    setpgid(pid, pid);      /* also in the parent, so a kill cannot race the child's */
    free(argv);
    t->pid = pid;
    t->state = T_RUNNING;
    t->deadline = clock_now_sec() + timeout;
}

void tr_test_kill(Test *t, bool timeout)
{
    if (timeout)
        t->timed_out = true;
    else
        t->too_much_output = true;
    kill(-t->pid, SIGKILL);
    kill(t->pid, SIGKILL);
}

/* True when the test has written more than OUTPUT_MAX to stdout or stderr. */
bool tr_output_too_large(const Test *t)
{
    struct stat st;
    if (fstat(t->out_fd, &st) == 0 && st.st_size > OUTPUT_MAX)
        return true;
    return fstat(t->err_fd, &st) == 0 && st.st_size > OUTPUT_MAX;
}

/* Reaps finished children (non-blocking). Returns the number reaped. */
int tr_reap(Test *tests, size_t n, size_t from, const Opts *o)
{
    int cnt = 0;
    for (size_t i = from; i < n; i++) {
        Test *t = &tests[i];
        if (t->state != T_RUNNING)
            continue;
        /* Peek first (WNOWAIT) so that grandchildren left behind in the
         * group can be killed while the group id is still ours. */
        siginfo_t info;
        memset(&info, 0, sizeof info);
        bool killed = t->timed_out || t->too_much_output;
        int r = waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOWAIT | (killed ? 0 : WNOHANG));
        if (r == 0 && info.si_pid == t->pid) {
            kill(-t->pid, SIGKILL);
            int ws = 0;
            while (waitpid(t->pid, &ws, 0) < 0 && errno == EINTR) {
            }
            t->wstatus = ws;
            t->state = T_DONE;
            tr_test_judge(t, o);
            cnt++;
        } else if (r < 0 && errno != EINTR) {
            t->state = T_DONE;
            t->start_error = tr_xstrdup("lost track of the child process");
            tr_test_judge(t, o);
            cnt++;
        }
    }
    return cnt;
}
