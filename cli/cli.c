/* SPDX-License-Identifier: Apache-2.0
 * Command-line plumbing shared by 'dml run' and the REPL. The only global
 * here is the SIGINT flag, which a signal handler must be able to reach. */
#include "cli.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/diag.h"

atomic_int cli_interrupt_flag;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&cli_interrupt_flag, 1);
}

void cli_install_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void cli_report_error(Interp *I, FILE *f)
{
    err_finish_trace(I);
    fflush(stdout);
    const ErrorSlot *e = &I->err;
    const char *msg = e->msg ? e->msg : (e->interrupted ? "interrupted" : "unknown error");
    if (e->has_loc) {
        size_t len = 0;
        const char *line = e->interrupted ? NULL : program_source_line(I->prog, e->loc.file, e->loc.line, &len);
        char *s = diag_render(e->loc.file, e->loc.line, e->loc.col, msg, line, len, true);
        if (s)
            fputs(s, f);
        else    /* out of memory: the first line needs none */
            fprintf(f, "%s:%d:%d: %s\n", e->loc.file, e->loc.line, e->loc.col, msg);
        free(s);
    } else {
        fprintf(f, "%s\n", msg);
    }
    if (e->trace)
        fputs(e->trace, f);
    fflush(f);
}

void cli_report_diag(const Program *p, const DiagErr *e, FILE *f)
{
    fflush(stdout);
    char *s = program_render_err(p, e, true);
    fputs(s ? s : "out of memory\n", f);
    free(s);
    fflush(f);
}

static void stderr_write(void *ctx, DiagLevel level, const char *text, size_t n)
{
    (void)ctx;
    (void)level;
    /* stderr is unbuffered: one fwrite, one write(2), so lines from
     * different threads never interleave within a line. */
    fwrite(text, 1, n, stderr);
}

DiagSink cli_stderr_sink(void)
{
    return (DiagSink){.write = stderr_write, .ctx = NULL, .rewrite = isatty(STDERR_FILENO)};
}

char *cli_exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return strdup(buf);
}
