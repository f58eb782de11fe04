/* SPDX-License-Identifier: Apache-2.0
 * `dml test`: discovers script tests, runs each in a child process of the dml
 * executable (cwd = the test's folder, stdin = /dev/null, stdout/stderr to
 * unlinked temp files, DML_TEST=1, own process group, timeout), judges the
 * result against X.out / X.err / X.status, and prints failures with a line
 * diff. Keeps no global state; the caller's SIGCHLD mask and disposition are
 * restored before returning. Single-threaded: call from the main thread. */
#define _GNU_SOURCE
#include "testrun.h"

#include "../runtime/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define REPORT_MAX_LINES 40     /* detail lines per failing test */
#define DIFF_CONTEXT 3
#define DIFF_MAX_CELLS (16u * 1024u * 1024u)   /* LCS table cap (ints) */
#define WALK_MAX_DEPTH 32
#define OUTPUT_MAX ((off_t)64 << 20)   /* a test printing more is stopped */
#define POLL_MAX_S 0.25                /* longest sleep between checks */

/* ======================================================================
 * Small growable containers
 * ====================================================================== */

typedef struct Buf { char *p; size_t len, cap; } Buf;

static void buf_putn(Buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return;     /* out of memory: the report is just shorter */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_puts(Buf *b, const char *s) { buf_putn(b, s, strlen(s)); }

static void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(Buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        buf_putn(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_putn(b, big, (size_t)n);
    free(big);
}

typedef struct StrList { char **v; size_t n, cap; } StrList;

static bool sl_push(StrList *l, char *s)
{
    if (!s)
        return false;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return false;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

static void sl_free(StrList *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (k > 0 && p[k - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && memcmp(s + a - b, suf, b) == 0;
}

/* Reads a whole regular file (or fd) into a NUL-terminated malloc'd buffer. */
static bool read_fd(int fd, char **out, size_t *len)
{
    Buf b = {0};
    char tmp[65536];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            free(b.p);
            return false;
        }
        if (r == 0)
            break;
        buf_putn(&b, tmp, (size_t)r);
    }
    if (!b.p)
        buf_putn(&b, "", 0);
    if (!b.p)
        return false;
    *out = b.p;
    *len = b.len;
    return true;
}

static bool read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = read_fd(fd, out, len);
    close(fd);
    return ok;
}

static bool write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    return ok;
}

static bool is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}


/* ======================================================================
 * Options
 * ====================================================================== */

typedef struct Opts {
    bool verbose;
    bool update;
    double timeout;         /* seconds per test */
    long jobs;
    StrList wrap;           /* words to put before the dml executable */
    StrList operands;
} Opts;

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

/* Splits 'text' into words: whitespace separates; "..." and '...' group
 * (inside "...", \" and \\ are escapes). Returns false on an unterminated
 * quote. Words are appended to 'out'. */
static bool split_words(const char *text, StrList *out)
{
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            return true;
        Buf w = {0};
        buf_putn(&w, "", 0);
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            if (*p == '"' || *p == '\'') {
                char q = *p++;
                while (*p && *p != q) {
                    if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
                        p++;
                    buf_putn(&w, p, 1);
                    p++;
                }
                if (*p != q) {
                    free(w.p);
                    return false;
                }
                p++;
            } else {
                buf_putn(&w, p, 1);
                p++;
            }
        }
        if (!w.p || !sl_push(out, w.p))
            return false;
    }
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
            sl_push(&o->operands, xstrdup(a));
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
            if (!val || !split_words(val, &o->wrap)) {
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

/* ======================================================================
 * Discovery
 * ====================================================================== */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends every *.dml under 'dir' (recursively; hidden entries skipped). */
static void walk_dir(const char *dir, int depth, StrList *out)
{
    if (depth > WALK_MAX_DEPTH)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        /* "./x.dml" reads worse than "x.dml" in reports. */
        char *p = strcmp(dir, ".") == 0 ? xstrdup(e->d_name) : path_join(dir, e->d_name);
        if (!p)
            continue;
        struct stat st;
        if (stat(p, &st) != 0) {
            free(p);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_dir(p, depth + 1, out);
            free(p);
        } else if (S_ISREG(st.st_mode) && ends_with(e->d_name, ".dml")) {
            sl_push(out, p);
        } else {
            free(p);
        }
    }
    closedir(d);
}

/* True when the first line of the file contains the marker "# test"
 * followed by the end of the line or a non-word character. */
static bool has_marker(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char line[512];
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return false;
    line[n] = '\0';
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    for (char *p = line; (p = strstr(p, "# test")) != NULL; p++) {
        char c = p[6];
        if (c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == ':' || c == '.'
            || c == ',' || c == ';' || c == '-')
            return true;
    }
    return false;
}

/* ======================================================================
 * Tests
 * ====================================================================== */

typedef enum TestState { T_PENDING, T_RUNNING, T_DONE } TestState;

typedef struct Test {
    char *path;             /* as found / given: what we print */
    char *dir;              /* folder to run in */
    char *name;             /* file name X.dml */
    char *stem;             /* path without ".dml" */
    bool has_out, has_err;
    int want_status;
    StrList args;           /* from X.args */
    char *args_error;       /* problem reading X.args, or NULL */
    /* running */
    TestState state;
    pid_t pid;
    int out_fd, err_fd;
    double deadline;
    bool timed_out;
    bool too_much_output;
    int wstatus;
    char *start_error;      /* could not start the child */
    /* result */
    bool passed;
    Buf report;
} Test;

static char *stem_path(const char *path, const char *ext)
{
    size_t n = strlen(path) - 4;    /* minus ".dml" */
    size_t e = strlen(ext);
    char *p = malloc(n + e + 1);
    if (!p)
        return NULL;
    memcpy(p, path, n);
    memcpy(p + n, ext, e + 1);
    return p;
}

/* Fills t from its path. Returns false if the file is not a test (and was
 * not named explicitly). */
static bool test_init(Test *t, const char *path, bool explicit_file)
{
    memset(t, 0, sizeof *t);
    t->out_fd = t->err_fd = -1;
    char *out = stem_path(path, ".out"), *err = stem_path(path, ".err");
    if (!out || !err) {
        free(out);
        free(err);
        return false;
    }
    t->has_out = is_regular(out);
    t->has_err = is_regular(err);
    free(out);
    free(err);
    if (!t->has_out && !t->has_err && !explicit_file && !has_marker(path))
        return false;

    t->path = xstrdup(path);
    t->stem = stem_path(path, "");
    const char *slash = strrchr(path, '/');
    if (slash) {
        t->dir = strndup(path, (size_t)(slash - path) + (slash == path));
        t->name = xstrdup(slash + 1);
    } else {
        t->dir = xstrdup(".");
        t->name = xstrdup(path);
    }
    t->want_status = t->has_err ? 1 : 0;

    char *stfile = stem_path(path, ".status");
    char *text = NULL;
    size_t len = 0;
    if (stfile && read_file(stfile, &text, &len)) {
        char *end = NULL;
        long v = strtol(text, &end, 10);
        if (end != text && v >= 0 && v <= 255)
            t->want_status = (int)v;
        free(text);
    }
    free(stfile);

    char *argfile = stem_path(path, ".args");
    if (argfile && is_regular(argfile)) {
        if (!read_file(argfile, &text, &len))
            t->args_error = xstrdup("cannot read the .args file");
        else {
            if (!split_words(text, &t->args))
                t->args_error = xstrdup("unterminated quote in the .args file");
            free(text);
        }
    }
    free(argfile);
    return t->path && t->stem && t->dir && t->name;
}

static void test_free(Test *t)
{
    free(t->path);
    free(t->dir);
    free(t->name);
    free(t->stem);
    sl_free(&t->args);
    free(t->args_error);
    free(t->start_error);
    free(t->report.p);
    if (t->out_fd >= 0)
        close(t->out_fd);
    if (t->err_fd >= 0)
        close(t->err_fd);
}

/* An unlinked temp file opened read-write, close-on-exec. */
static int temp_fd(void)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char *tpl = path_join(tmp, "dmltest.XXXXXX");
    if (!tpl)
        return -1;
    int fd = mkostemp(tpl, O_CLOEXEC);
    if (fd >= 0)
        unlink(tpl);
    free(tpl);
    return fd;
}

/* What every child needs, prepared before any fork so that the child only
 * calls async-signal-safe functions (the parent may have BLAS threads). */
typedef struct RunCtx {
    char *exe;              /* absolute path of the program to execve */
    char *dml;              /* absolute path of dml */
    StrList wrap;           /* wrap words (wrap.v[0] replaced by its full path) */
    char **envp;
    sigset_t child_mask;    /* signal mask to restore in the child */
} RunCtx;

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
        char *dir = n ? strndup(path, n) : xstrdup(".");
        char *full = dir ? path_join(dir, cmd) : NULL;
        free(dir);
        if (full && access(full, X_OK) == 0 && is_regular(full)) {
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

static bool ctx_init(RunCtx *c, const char *self_exe, const StrList *wrap)
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
        sl_push(&c->wrap, xstrdup(wrap->v[i]));
    if (c->wrap.n > 0) {
        char *full = find_in_path(c->wrap.v[0]);
        if (!full) {
            fprintf(stderr, "dml test: --wrap: command '%s' not found\n", c->wrap.v[0]);
            return false;
        }
        free(c->wrap.v[0]);
        c->wrap.v[0] = full;
        c->exe = xstrdup(full);
    } else {
        c->exe = xstrdup(c->dml);
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

static void ctx_free(RunCtx *c)
{
    free(c->exe);
    free(c->dml);
    sl_free(&c->wrap);
    free(c->envp);
}

/* Starts t's child. On failure sets t->start_error and marks it done. */
static void test_start(Test *t, const RunCtx *c, double timeout)
{
    t->state = T_DONE;
    if (t->args_error) {
        t->start_error = xstrdup(t->args_error);
        return;
    }
    size_t argc = c->wrap.n + 3 + t->args.n;
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) {
        t->start_error = xstrdup("out of memory");
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
        t->start_error = xstrdup("cannot create a temporary file");
        free(argv);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        t->start_error = xstrdup("fork failed");
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

/* ======================================================================
 * Diff
 * ====================================================================== */

typedef struct Line { const char *p; size_t len; bool nl; } Line;

static Line *split_lines(const char *s, size_t len, size_t *n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n')
            cnt++;
    if (len > 0 && s[len - 1] != '\n')
        cnt++;
    Line *v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v) {
        *n = 0;
        return NULL;
    }
    size_t k = 0, start = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n') {
            v[k++] = (Line){s + start, i - start, true};
            start = i + 1;
        }
    if (start < len)
        v[k++] = (Line){s + start, len - start, false};
    *n = k;
    return v;
}

static bool line_eq(const Line *a, const Line *b)
{
    return a->len == b->len && a->nl == b->nl && memcmp(a->p, b->p, a->len) == 0;
}

/* A report with a line budget: detail lines beyond the cap are counted,
 * not printed. */
typedef struct Report { Buf *b; int lines, dropped; } Report;

static void rep_line(Report *r, char tag, const Line *l)
{
    if (r->lines >= REPORT_MAX_LINES) {
        r->dropped++;
        return;
    }
    r->lines++;
    buf_puts(r->b, "    ");
    buf_putn(r->b, &tag, 1);
    buf_putn(r->b, l->p, l->len);
    buf_puts(r->b, "\n");
    if (!l->nl && tag != '@') {
        if (r->lines >= REPORT_MAX_LINES) {
            r->dropped++;
            return;
        }
        r->lines++;
        buf_puts(r->b, "    \\ No newline at end of file\n");
    }
}

static void rep_text(Report *r, const char *text)
{
    if (r->lines >= REPORT_MAX_LINES) {
        r->dropped++;
        return;
    }
    r->lines++;
    buf_puts(r->b, "    ");
    buf_puts(r->b, text);
    buf_puts(r->b, "\n");
}

typedef enum EditOp { E_SAME, E_DEL, E_ADD } EditOp;
typedef struct Edit { EditOp op; size_t ai, bi; } Edit;

/* Edit script from a to b: common prefix and suffix, LCS in between (or a
 * plain replace when the middle is too large for the table). */
static Edit *diff_edits(const Line *a, size_t na, const Line *b, size_t nb, size_t *ne)
{
    Edit *e = malloc((na + nb + 1) * sizeof *e);
    if (!e) {
        *ne = 0;
        return NULL;
    }
    size_t k = 0, pre = 0, suf = 0;
    while (pre < na && pre < nb && line_eq(&a[pre], &b[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre && line_eq(&a[na - 1 - suf], &b[nb - 1 - suf]))
        suf++;
    for (size_t i = 0; i < pre; i++)
        e[k++] = (Edit){E_SAME, i, i};
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    const Line *A = a + pre, *B = b + pre;
    unsigned *t = NULL;
    if (ma > 0 && mb > 0 && (ma + 1) * (mb + 1) <= DIFF_MAX_CELLS)
        t = calloc((ma + 1) * (mb + 1), sizeof *t);
    if (t) {
        /* t[i][j] = LCS length of A[i..] and B[j..] */
        size_t w = mb + 1;
        for (size_t i = ma; i-- > 0;)
            for (size_t j = mb; j-- > 0;)
                t[i * w + j] = line_eq(&A[i], &B[j]) ? t[(i + 1) * w + j + 1] + 1
                             : (t[(i + 1) * w + j] >= t[i * w + j + 1] ? t[(i + 1) * w + j]
                                                                       : t[i * w + j + 1]);
        size_t i = 0, j = 0;
        while (i < ma && j < mb) {
            if (line_eq(&A[i], &B[j])) {
                e[k++] = (Edit){E_SAME, pre + i, pre + j};
                i++;
                j++;
            } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
                e[k++] = (Edit){E_DEL, pre + i, pre + j};
                i++;
            } else {
                e[k++] = (Edit){E_ADD, pre + i, pre + j};
                j++;
            }
        }
        for (; i < ma; i++)
            e[k++] = (Edit){E_DEL, pre + i, pre + mb};
        for (; j < mb; j++)
            e[k++] = (Edit){E_ADD, pre + ma, pre + j};
        free(t);
    } else {
        for (size_t i = 0; i < ma; i++)
            e[k++] = (Edit){E_DEL, pre + i, pre};
        for (size_t j = 0; j < mb; j++)
            e[k++] = (Edit){E_ADD, pre + ma, pre + j};
    }
    for (size_t i = 0; i < suf; i++)
        e[k++] = (Edit){E_SAME, na - suf + i, nb - suf + i};
    *ne = k;
    return e;
}

/* Appends a unified-style diff of expected vs actual to r. */
static void rep_diff(Report *r, const char *exp, size_t elen, const char *act, size_t alen)
{
    size_t na, nb, ne;
    Line *a = split_lines(exp, elen, &na);
    Line *b = split_lines(act, alen, &nb);
    Edit *e = (a && b) ? diff_edits(a, na, b, nb, &ne) : NULL;
    if (!e) {
        rep_text(r, "(out of memory computing the diff)");
        free(a);
        free(b);
        return;
    }
    rep_text(r, "--- expected");
    rep_text(r, "+++ actual");
    size_t i = 0;
    while (i < ne) {
        if (e[i].op == E_SAME) {
            i++;
            continue;
        }
        /* A hunk: from the first change back DIFF_CONTEXT lines, forward
         * until DIFF_CONTEXT*2 unchanged lines in a row (or the end). */
        size_t start = i >= DIFF_CONTEXT ? i - DIFF_CONTEXT : 0;
        while (start < i && e[start].op != E_SAME)
            start++;
        size_t end = i, same = 0;
        while (end < ne) {
            if (e[end].op == E_SAME) {
                if (++same > 2 * DIFF_CONTEXT)
                    break;
            } else {
                same = 0;
            }
            end++;
        }
        if (same > DIFF_CONTEXT)
            end -= same - DIFF_CONTEXT;     /* keep only DIFF_CONTEXT trailing lines */
        size_t ca = 0, cb = 0;
        for (size_t x = start; x < end; x++) {
            if (e[x].op != E_ADD)
                ca++;
            if (e[x].op != E_DEL)
                cb++;
        }
        char hdr[96];
        snprintf(hdr, sizeof hdr, "@@ -%zu,%zu +%zu,%zu @@", e[start].ai + (ca ? 1 : 0), ca,
                 e[start].bi + (cb ? 1 : 0), cb);
        rep_text(r, hdr);
        for (size_t x = start; x < end; x++) {
            if (e[x].op == E_SAME)
                rep_line(r, ' ', &a[e[x].ai]);
            else if (e[x].op == E_DEL)
                rep_line(r, '-', &a[e[x].ai]);
            else
                rep_line(r, '+', &b[e[x].bi]);
        }
        i = end;
    }
    free(e);
    free(a);
    free(b);
}

/* Appends up to 'max' lines of text (stderr) with a label. */
static void rep_excerpt(Report *r, const char *label, const char *s, size_t len, int max)
{
    if (len == 0)
        return;
    size_t n;
    Line *l = split_lines(s, len, &n);
    if (!l)
        return;
    rep_text(r, label);
    for (size_t i = 0; i < n && (int)i < max; i++)
        rep_line(r, '|', &l[i]);
    if ((int)n > max) {
        char m[64];
        snprintf(m, sizeof m, "|... (%zu more lines)", n - (size_t)max);
        rep_text(r, m);
    }
    free(l);
}

/* ======================================================================
 * Judging
 * ====================================================================== */

static size_t first_line_len(const char *s, size_t len)
{
    const char *nl = memchr(s, '\n', len);
    size_t n = nl ? (size_t)(nl - s) : len;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    return n;
}

static void fail_head(Test *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_head(Test *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t->passed = false;
    buf_printf(&t->report, "FAIL %s: %s\n", t->path, msg);
}

/* Reads the captured output and decides pass/fail; fills t->report. */
static void test_judge(Test *t, const Opts *o)
{
    Report r = {&t->report, 0, 0};
    t->passed = true;
    if (t->start_error) {
        fail_head(t, "%s", t->start_error);
        return;
    }
    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    if (t->too_much_output) {
        close(t->out_fd);
        close(t->err_fd);
        t->out_fd = t->err_fd = -1;
        fail_head(t, "stopped: printed more than %d MiB", (int)(OUTPUT_MAX >> 20));
        goto done;
    }
    if (lseek(t->out_fd, 0, SEEK_SET) < 0 || !read_fd(t->out_fd, &out, &olen))
        out = xstrdup(""), olen = 0;
    if (lseek(t->err_fd, 0, SEEK_SET) < 0 || !read_fd(t->err_fd, &err, &elen))
        err = xstrdup(""), elen = 0;
    close(t->out_fd);
    close(t->err_fd);
    t->out_fd = t->err_fd = -1;
    if (!out || !err) {
        fail_head(t, "out of memory reading the output");
        goto done;
    }

    if (t->timed_out) {
        fail_head(t, "timed out after %g s", o->timeout);
        rep_excerpt(&r, "stderr:", err, elen, 5);
        goto done;
    }
    if (WIFSIGNALED(t->wstatus)) {
        int sig = WTERMSIG(t->wstatus);
        const char *name = strsignal(sig);
        fail_head(t, "killed by signal %d (%s)", sig, name ? name : "?");
        rep_excerpt(&r, "stderr:", err, elen, 10);
        goto done;
    }
    int status = WIFEXITED(t->wstatus) ? WEXITSTATUS(t->wstatus) : -1;

    char *exp_out = NULL, *exp_err = NULL;
    size_t exp_olen = 0, exp_elen = 0;
    char *out_path = stem_path(t->path, ".out"), *err_path = stem_path(t->path, ".err");
    if (t->has_out && (!out_path || !read_file(out_path, &exp_out, &exp_olen))) {
        fail_head(t, "cannot read %s", out_path ? out_path : ".out file");
        goto done2;
    }
    if (t->has_err && (!err_path || !read_file(err_path, &exp_err, &exp_elen))) {
        fail_head(t, "cannot read %s", err_path ? err_path : ".err file");
        goto done2;
    }

    bool status_ok = status == t->want_status;
    bool out_ok = !t->has_out || (olen == exp_olen && memcmp(out, exp_out, olen) == 0);
    size_t el = t->has_err ? first_line_len(exp_err, exp_elen) : 0;
    size_t al = first_line_len(err, elen);
    bool err_ok = !t->has_err || (el == al && memcmp(exp_err, err, el) == 0);

    /* --update: rewrite the golden files when only their content differs
     * (a wrong exit status or a crash is never "updated away"); a file
     * named explicitly without golden output gets a new X.out. */
    if (o->update && status_ok && (!out_ok || !err_ok || (!t->has_out && !t->has_err))) {
        bool ok = true;
        if (!out_ok || (!t->has_out && !t->has_err && !has_marker(t->path))) {
            ok = write_file(out_path, out, olen);
            printf("%s %s\n", ok ? "updated" : "cannot write", out_path);
        }
        if (!err_ok && ok) {
            Buf line = {0};
            buf_putn(&line, err, al);
            buf_puts(&line, "\n");
            ok = line.p && write_file(err_path, line.p, line.len);
            printf("%s %s\n", ok ? "updated" : "cannot write", err_path);
            free(line.p);
        }
        if (ok)
            goto done2;
    }

    if (!status_ok) {
        fail_head(t, "exit status %d, expected %d", status, t->want_status);
        if (!t->has_err || status == 0)
            rep_excerpt(&r, "stderr:", err, elen, 8);
        else if (!err_ok) {
            rep_excerpt(&r, "stderr:", err, elen, 3);
        }
        if (!out_ok)
            rep_diff(&r, exp_out, exp_olen, out, olen);
        else if (!t->has_out && olen > 0 && status != 0)
            rep_excerpt(&r, "stdout:", out, olen, 5);
    } else if (!err_ok) {
        fail_head(t, "first line of stderr differs from %s", err_path);
        Buf eb = {0}, ab = {0};
        buf_puts(&eb, "expected: ");
        buf_putn(&eb, exp_err, el);
        buf_puts(&ab, "actual:   ");
        buf_putn(&ab, err, al);
        rep_text(&r, eb.p ? eb.p : "");
        rep_text(&r, ab.p ? ab.p : "");
        free(eb.p);
        free(ab.p);
        if (!out_ok)
            rep_diff(&r, exp_out, exp_olen, out, olen);
    } else if (!out_ok) {
        fail_head(t, "stdout differs from %s", out_path);
        rep_diff(&r, exp_out, exp_olen, out, olen);
        rep_excerpt(&r, "stderr:", err, elen, 5);
    }
done2:
    free(exp_out);
    free(exp_err);
    free(out_path);
    free(err_path);
done:
    if (r.dropped > 0)
        buf_printf(&t->report, "    ... (%d more lines)\n", r.dropped);
    if (t->passed && o->verbose)
        buf_printf(&t->report, "ok %s\n", t->path);
    free(out);
    free(err);
}

/* ======================================================================
 * Driver
 * ====================================================================== */

/* Collects the tests named by the operands, sorted by path, without
 * duplicates; the .dml files found in folders that are not tests (no X.out,
 * X.err or "# test" line) go to 'skipped'. Returns false (after a message)
 * on a bad operand. */
static bool collect(const Opts *o, Test **tests, size_t *ntests, StrList *skipped)
{
    StrList found = {0}, explicit_files = {0};
    bool ok = true;
    if (o->operands.n == 0)
        walk_dir(".", 0, &found);
    for (size_t i = 0; i < o->operands.n; i++) {
        char *op = xstrdup(o->operands.v[i]);
        if (!op)
            continue;
        size_t n = strlen(op);
        while (n > 1 && op[n - 1] == '/')
            op[--n] = '\0';
        struct stat st;
        if (stat(op, &st) != 0) {
            fprintf(stderr, "dml test: %s: %s\n", op, strerror(errno));
            ok = false;
        } else if (S_ISDIR(st.st_mode)) {
            walk_dir(op, 0, &found);
        } else if (ends_with(op, ".dml")) {
            sl_push(&explicit_files, xstrdup(op));
            sl_push(&found, xstrdup(op));
        } else {
            fprintf(stderr, "dml test: %s: not a directory or a .dml file\n", op);
            ok = false;
        }
        free(op);
    }
    if (!ok) {
        sl_free(&found);
        sl_free(&explicit_files);
        return false;
    }
    if (found.n > 1)
        qsort(found.v, found.n, sizeof *found.v, cmp_str);
    if (explicit_files.n > 1)
        qsort(explicit_files.v, explicit_files.n, sizeof *explicit_files.v, cmp_str);
    Test *v = calloc(found.n ? found.n : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < found.n; i++) {
        if (i > 0 && strcmp(found.v[i], found.v[i - 1]) == 0)
            continue;
        bool expl = explicit_files.n > 0
                    && bsearch(&found.v[i], explicit_files.v, explicit_files.n,
                               sizeof *explicit_files.v, cmp_str) != NULL;
        if (test_init(&v[k], found.v[i], expl)) {
            k++;
        } else {
            test_free(&v[k]);
            if (!expl)
                sl_push(skipped, xstrdup(found.v[i]));
        }
    }
    sl_free(&found);
    sl_free(&explicit_files);
    *tests = v;
    *ntests = v ? k : 0;
    return v != NULL;
}

/* Kills t's process group (after a timeout or too much output); the next
 * reap() collects it. */
static void test_kill(Test *t, bool timeout)
{
    if (timeout)
        t->timed_out = true;
    else
        t->too_much_output = true;
    kill(-t->pid, SIGKILL);
    kill(t->pid, SIGKILL);
}

/* True when the test has written more than OUTPUT_MAX to stdout or stderr. */
static bool output_too_large(const Test *t)
{
    struct stat st;
    if (fstat(t->out_fd, &st) == 0 && st.st_size > OUTPUT_MAX)
        return true;
    return fstat(t->err_fd, &st) == 0 && st.st_size > OUTPUT_MAX;
}

/* Reaps finished children (non-blocking). Returns the number reaped. */
static int reap(Test *tests, size_t n, size_t from, const Opts *o)
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
            test_judge(t, o);
            cnt++;
        } else if (r < 0 && errno != EINTR) {
            t->state = T_DONE;
            t->start_error = xstrdup("lost track of the child process");
            test_judge(t, o);
            cnt++;
        }
    }
    return cnt;
}

int testrun_main(const char *self_exe, int argc, char **argv)
{
    Opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_opts(argc, argv, &o);
    if (rc != 0) {
        sl_free(&o.operands);
        sl_free(&o.wrap);
        return rc == 1 ? 0 : 2;
    }
    Test *tests = NULL;
    size_t n = 0;
    RunCtx c;
    StrList skipped = {0};
    if (!collect(&o, &tests, &n, &skipped)) {
        sl_free(&skipped);
        sl_free(&o.operands);
        sl_free(&o.wrap);
        free(tests);
        return 2;
    }
    if (!ctx_init(&c, self_exe, &o.wrap)) {
        sl_free(&skipped);
        ctx_free(&c);
        for (size_t i = 0; i < n; i++)
            test_free(&tests[i]);
        free(tests);
        sl_free(&o.operands);
        sl_free(&o.wrap);
        return 2;
    }
    if (n == 0)
        fprintf(stderr, "dml test: no tests found\n");

    /* SIGCHLD blocked and waited for with sigtimedwait: no handler, no
     * global flag. The old mask and disposition are restored at the end. */
    struct sigaction dfl, old_chld;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, &old_chld);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &c.child_mask);
    fflush(stdout);

    size_t next = 0, printed = 0, running = 0;
    int passed = 0, failed = 0;
    while (printed < n) {
        while (running < (size_t)o.jobs && next < n) {
            test_start(&tests[next], &c, o.timeout);
            if (tests[next].state == T_RUNNING)
                running++;
            else
                test_judge(&tests[next], &o);
            next++;
        }
        running -= (size_t)reap(tests, next, printed, &o);
        /* Print finished tests in path order. */
        while (printed < next && tests[printed].state == T_DONE) {
            Test *t = &tests[printed];
            if (t->report.len)
                fwrite(t->report.p, 1, t->report.len, stdout);
            fflush(stdout);
            if (t->passed)
                passed++;
            else
                failed++;
            free(t->report.p);
            t->report = (Buf){0};
            printed++;
        }
        if (printed == n || running == 0)
            continue;
        double now = clock_now_sec(), wait = POLL_MAX_S;
        bool killed = false;
        for (size_t i = printed; i < next; i++) {
            Test *t = &tests[i];
            if (t->state != T_RUNNING || t->timed_out || t->too_much_output)
                continue;
            double left = t->deadline - now;
            if (left <= 0 || output_too_large(t)) {
                test_kill(t, left <= 0);
                killed = true;
            } else if (left < wait) {
                wait = left;
            }
        }
        if (killed)
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
    sigprocmask(SIG_SETMASK, &c.child_mask, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);

    /* Files that look like tests but have no expectation would otherwise
     * vanish silently; helpers (sourced files, libraries) land here too. */
    if (o.verbose)
        for (size_t i = 0; i < skipped.n; i++)
            printf("skip %s (no .out, .err or '# test' line)\n", skipped.v[i]);
    if (skipped.n)
        printf("%zu .dml file%s skipped: no .out, .err or '# test' line%s\n", skipped.n,
               skipped.n > 1 ? "s" : "", o.verbose ? "" : " (-v lists them)");
    sl_free(&skipped);
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    for (size_t i = 0; i < n; i++)
        test_free(&tests[i]);
    free(tests);
    ctx_free(&c);
    sl_free(&o.operands);
    sl_free(&o.wrap);
    return failed ? 1 : 0;
}
