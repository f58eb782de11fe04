/* SPDX-License-Identifier: Apache-2.0
 * The dml executable: argument parsing and the top-level run. Exit status:
 * 0 success, 1 a DML error (syntax or runtime), 2 a usage error. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../builtins/help.h"
#include "../builtins/registry.h"
#include "../builtins/paramserv/psmpi.h"
#include "../runtime/blas.h"
#include "../runtime/clock.h"
#include "../runtime/hitters.h"
#include "../runtime/loader.h"
#include "../runtime/program.h"
#include "../runtime/resolve.h"
#include "../runtime/runstats.h"
#include "cli.h"
#ifdef DML_KERNEL_EXE
#include "kernel.h"
#endif
#include "repl.h"
#include "testrun.h"

#ifndef DML_VERSION
#define DML_VERSION "0.1.0"
#endif

static const char usage_text[] =
    "usage: dml run FILE [options] [-args V1 V2 ... | -nvargs NAME=VALUE ...]\n"
    "       dml -f FILE [options] [-args ... | -nvargs ...]   (SystemDS-style)\n"
    "       dml -s 'SCRIPT TEXT' [options]\n"
    "       dml test [-v] [-j N] [--timeout S] [--update] [DIR|FILE ...]\n"
    "       dml                 start the interactive REPL\n"    "       dml kernel install [--user | --prefix DIR]   the Jupyter kernel (doc/jupyter.md)\n"
    "       dml kernel -f CONNECTION_FILE                  (what Jupyter starts)\n"
    "       dml help TOPIC      the reference entry of a builtin, nn layer or keyword\n"
    "       dml --help | --version\n"
    "\n"
    "Run a DML (Apache SystemDS) script.\n"
    "\n"
    "options (before or after FILE; -args and -nvargs take the rest of the line):\n"
    "  -args V1 V2 ...        positional script parameters $1, $2, ...\n"
    "  -nvargs N=V ...        named script parameters $N\n"
    "  --seed N, -seed N      seed every random stream (rand, sample, paramserv) for a\n"
    "                         reproducible run\n"
    "  --stats [N], -stats [N]  print run statistics at the end, with the N (default\n"
    "                         10) most expensive builtins and operators\n"
    "  --trace FILE           paramserv's timeline as Chrome trace-event JSON (Perfetto)\n"
    "  --threads N            thread budget: BLAS and kernel threads, and workers x threads\n"
    "                         each for parfor/paramserv (default: all cores; also DML_THREADS)\n"
    "  --precision single|double  float precision of the heavy products (%*%, conv2d):\n"
    "                         single multiplies in float32 (default: double; also\n"
    "                         DML_PRECISION)\n"
    "  --dump-ast             print the syntax tree of FILE and exit\n"
    "\n"
    "source(\"path\") looks for path in: the working directory, ./scripts/, the\n"
    "sourcing script's folder, each folder of DML_PATH (colon-separated), then the\n"
    "stdlib installed with dml (DML_STDLIB overrides it), so source(\"nn/layers/\n"
    "affine.dml\") works from any folder.\n"
    "\n"
    "In the REPL: help() lists the topics, help(rowSums) or ?rowSums shows one,\n"
    "ls() the variables, describe(x) a one-line summary of a value.\n";

/* The environment part of --help: every DML_* variable, named by the
 * entries of doc/environment.md (tests/unit/test_env_doc.c keeps those
 * complete), so the list cannot fall behind the code. */
typedef struct EnvList { int col; } EnvList;

static void env_name(const char *name, void *ctx)
{
    EnvList *l = ctx;
    int n = (int)strlen(name);
    if (l->col == 0) {
        printf("  %s", name);
        l->col = 2 + n;
    } else if (l->col + 2 + n > 78) {
        printf(",\n  %s", name);
        l->col = 2 + n;
    } else {
        printf(", %s", name);
        l->col += 2 + n;
    }
}

static void print_usage(void)
{
    fputs(usage_text, stdout);
    fputs("\nenvironment (dml help NAME says what each does; doc/environment.md):\n", stdout);
    EnvList l = {0};
    help_each_name("doc/environment.md", env_name, &l);
    fputs(".\nOpenBLAS's own OPENBLAS_CORETYPE is honoured too (dml help DML_BLAS_CORETYPE).\n", stdout);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "dml: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'dml --help'.\n");
    return 2;
}

typedef struct RunOpts {
    const char *file;
    const char *inline_text;
    CmdArg *args;
    int nargs;
    bool have_seed, stats, dump_ast;
    int stats_top;          /* --stats N: heavy hitters shown */
    uint64_t seed;
    int threads;
    const char *precision;  /* --precision single|double */
} RunOpts;

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* Parses the options of run/-f/-s/repl from argv[i]. With 'file' set, the
 * first argument that is not an option (before, between or after the
 * options, as getopt-style tools take it) is the script FILE stored there;
 * -args/-nvargs take the rest. Returns 0 or an exit status. */
static int parse_run_opts(int argc, char **argv, int i, RunOpts *o, const char **file)
{
    o->args = calloc((size_t)argc + 1, sizeof *o->args);
    char **numbered = calloc((size_t)argc + 1, sizeof(char *));
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-args") == 0) {
            if (o->nargs)
                return usage_error("%s: -args and -nvargs are mutually exclusive", a);
            int k = 1;
            for (i++; i < argc; i++, k++) {
                char *name = malloc(24);
                snprintf(name, 24, "%d", k);
                o->args[o->nargs].name = name;
                o->args[o->nargs].text = argv[i];
                o->nargs++;
            }
            break;
        }
        if (strcmp(a, "-nvargs") == 0) {
            if (o->nargs)
                return usage_error("%s: -args and -nvargs are mutually exclusive", a);
            for (i++; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');
                if (argv[i][0] == '\0')
                    continue;
                if (!eq || strchr(eq + 1, '=') || !valid_name(argv[i], (size_t)(eq - argv[i])))
                    return usage_error("-nvargs: '%s' is not NAME=VALUE (NAME: a letter, then letters, digits, _)",
                                       argv[i]);
                o->args[o->nargs].name = strndup(argv[i], (size_t)(eq - argv[i]));
                o->args[o->nargs].text = eq + 1;
                o->nargs++;
            }
            break;
        }
        if (strcmp(a, "--seed") == 0 || strcmp(a, "-seed") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs a number", a);
            char *end;
            errno = 0;
            long long s = strtoll(argv[++i], &end, 10);
            if (*end || errno)
                return usage_error("--seed: '%s' is not an integer", argv[i]);
            o->seed = (uint64_t)s;
            o->have_seed = true;
        } else if (strcmp(a, "--stats") == 0 || strcmp(a, "-stats") == 0) {
            o->stats = true;
            o->stats_top = 10;
            /* a count only when all digits: "--stats 3.dml" names the FILE */
            if (i + 1 < argc && argv[i + 1][0] && strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1])) {
                char *end;
                long t = strtol(argv[++i], &end, 10);
                if (*end || t < 0 || t > 100000)
                    return usage_error("--stats: '%s' is not a count of heavy hitters", argv[i]);
                o->stats_top = (int)t;
            }
        } else if (strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs a number", a);
            char *end;
            long t = strtol(argv[++i], &end, 10);
            if (*end || t < 1 || t > 1024)
                return usage_error("--threads: '%s' is not a thread count", argv[i]);
            o->threads = (int)t;
        } else if (strcmp(a, "--precision") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs single or double", a);
            o->precision = argv[++i];
        } else if (strcmp(a, "--trace") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return usage_error("%s needs a file name", a);
            ps_trace_set_path(argv[++i]);   /* paramserv's timeline (doc/paramserv.md, "trace") */
        } else if (strcmp(a, "--dump-ast") == 0) {
            o->dump_ast = true;
        } else if (strcmp(a, "-exec") == 0 || strcmp(a, "-config") == 0) {
            i++;    /* upstream engine options without meaning here */
        } else if (file && !*file && (a[0] != '-' || a[1] == '\0')) {
            *file = a;
        } else {
            free(numbered);
            return usage_error("unknown option '%s'", a);
        }
    }
    free(numbered);
    return 0;
}

static void free_run_opts(RunOpts *o)
{
    for (int i = 0; i < o->nargs; i++)
        free((char *)o->args[i].name);
    free(o->args);
}


static Program *new_program(const RunOpts *o)
{
    Program *p = program_new();
    if (!p)
        return NULL;
    p->sink = cli_stderr_sink();
    char *dir = cli_exe_dir();
    if (dir) {
        p->exe_dir = arena_strdup(p->arena, dir);
        free(dir);
    }
    program_set_args(p, o->args, o->nargs);
    return p;
}

/* The end of --stats: peak matrix memory and the heavy-hitter table. */
static void print_heavy_hitters(const Hitters *hh, int top)
{
    uint64_t live, peak;
    mat_mem_stats(&live, &peak);
    printf("Peak matrix memory:\t\t%.3f MB (%llu bytes).\n", (double)peak / 1e6, (unsigned long long)peak);
    if (!hh || top <= 0)
        return;
    StrBuf b;
    sb_init(&b);
    hitters_report(hh, top, &b);
    if (b.len)
        fwrite(b.p, 1, b.len, stdout);
    sb_free(&b);
}

static int run_script(RunOpts *o)
{
    double t0 = clock_now_sec();
    size_t len;
    char *text;
    const char *name;
    if (o->inline_text) {
        text = strdup(o->inline_text);
        if (!text) {
            fputs("dml: out of memory\n", stderr);
            return 1;
        }
        len = strlen(text);
        name = "<inline>";
    } else {
        DiagErr err;
        text = loader_read_file(o->file, &len, &err);
        if (!text) {
            fprintf(stderr, "dml: %s\n", err.msg);
            return 1;
        }
        name = o->file;
    }
    Program *p = new_program(o);
    if (!p) {
        free(text);
        fputs("dml: out of memory\n", stderr);
        return 1;
    }
    Node **stmts = NULL;
    int n = 0;
    DiagErr lerr;
    bool loaded = program_load_main(p, name, text, len, &stmts, &n, &lerr);
    free(text);
    if (!loaded) {
        cli_report_diag(p, &lerr, stderr);
        program_free(p);
        return 1;
    }
    if (o->dump_ast) {
        ast_dump(stmts, n, stdout);
        program_free(p);
        return 0;
    }
    double t1 = clock_now_sec();
    if (o->stats) {
        p->hh = hitters_new();     /* before interp_init: every Interp copies it */
        mat_mem_track(true);
    }
    Interp I;
    interp_init(&I, p, o->have_seed ? o->seed : rng_fresh_seed());
    I.interrupt = &cli_interrupt_flag;
    I.sink = cli_stderr_sink();
    CallFrame top = {0};
    top.names = &p->top;    /* exists("x"), ls() and messages read names */
    I.frame = &top;
    Status st = exec_sync_top(&I, &top);
    Stats stats;
    memset(&stats, 0, sizeof stats);
    sb_init(&stats.report);
    if (o->stats)
        I.stats = &stats;
    cli_install_sigint();
    if (st == ST_OK)
        st = exec_block(&I, stmts, n);
    fflush(stdout);
    int rc = 0;
    if (st != ST_OK) {
        cli_report_error(&I, stderr);
        rc = I.err.interrupted ? 130 : 1;   /* 128 + SIGINT, as shells expect */
    }
    if (o->stats) {
        double t2 = clock_now_sec();
        printf("SystemDS Statistics:\n");
        printf("Total elapsed time:\t\t%.3f sec.\n", t2 - t0);
        printf("Total compilation time:\t\t%.3f sec.\n", t1 - t0);
        printf("Total execution time:\t\t%.3f sec.\n", t2 - t1);
        char core[512];
        blas_core_report(core, sizeof core);
        printf("BLAS kernel:\t\t\t%s, %d threads\n", core, blas_get_threads());
        printf("Thread budget:\t\t\t%d (--threads / DML_THREADS; workers x threads each <= budget)\n",
               blas_budget_total());
        if (stats.report.len)
            fwrite(stats.report.p, 1, stats.report.len, stdout);
        print_heavy_hitters(p->hh, o->stats_top);
        fflush(stdout);
    }
    sb_free(&stats.report);
    hitters_free(p->hh);
    p->hh = NULL;
    for (int i = 0; i < top.nslots; i++)
        val_release(top.slots[i]);
    free(top.slots);
    interp_destroy(&I);
    program_free(p);
    return rc;
}

/* --precision, else DML_PRECISION; 2 (usage error) for a bad value. */
static int apply_precision(const char *opt)
{
    const char *v = opt ? opt : getenv("DML_PRECISION");
    if (v && (opt || *v) && !blas_precision_set(v))
        return usage_error(opt ? "--precision: unsupported floating point precision '%s' (single or double)"
                               : "DML_PRECISION: unsupported floating point precision '%s' (single or double)", v);
    return 0;
}

/* The value of --precision among the options (before any script
 * arguments), or NULL: main's early look, for the ranks that serve
 * paramserv under mpirun. */
static const char *precision_arg(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-args") == 0 || strcmp(argv[i], "-nvargs") == 0)
            break;
        if (strcmp(argv[i], "--precision") == 0)
            return argv[i + 1];
    }
    return NULL;
}

static void apply_threads(int threads)
{
    const char *env = getenv("DML_THREADS");
    if (!threads && env && *env)
        threads = atoi(env);
    blas_budget_set(threads);
}

/* Matrix temporaries are large and short-lived. glibc would hand each one
 * back to the kernel when freed (mmap/munmap, or trimming a thread arena)
 * and fault the pages in again for the next one: measured on LeNet that
 * doubled the page faults of a paramserv worker and made it 2x slower than
 * the same loop on the main thread. One arena that keeps its memory fixes it. */
static void tune_malloc(void)
{
    if (getenv("DML_MALLOC_DEFAULT"))
        return;
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
}

static int run_main(int argc, char **argv);
static bool is_help_flag(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "-help") == 0;
}

/* dml help TOPIC...: the reference entries (doc/), as help() in the REPL.
 * Exit status 1 when a topic has no entry. */
static int help_main(int n, char **topics)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        StrBuf b;
        sb_init(&b);
        if (i)
            sb_puts(&b, "\n");
        bool found = help_topic(topics[i], &b);
        fwrite(b.p, 1, b.len, found ? stdout : stderr);
        sb_free(&b);
        if (!found)
            rc = 1;
    }
    return rc;
}

#ifdef DML_KERNEL_EXE
/* dml kernel -f CONNECTION_FILE | dml kernel install [--user | --prefix DIR]
 * (cli/kernel.h), served by dml-kernel, the build of this file that links
 * the kernel. Not under mpirun: a notebook is one process. */
static int kernel_cmd(int argc, char **argv)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK")) {
        fputs("dml: the Jupyter kernel does not run under mpirun (a notebook is one process); start it as\n"
              "'dml kernel -f FILE' (Jupyter does that) and use paramserv(..., mode=\"LOCAL\") in it\n", stderr);
        return 2;
    }
    if (argc >= 1 && strcmp(argv[0], "install") == 0)
        return kernel_install_main(argc - 1, argv + 1);
    if (argc != 2 || strcmp(argv[0], "-f") != 0)
        return usage_error("%s", "kernel: usage: dml kernel -f CONNECTION_FILE | dml kernel install [--user | --prefix DIR]");
    RunOpts o = {0};
    apply_threads(0);
    Program *p = new_program(&o);
    if (!p) {
        fputs("dml: out of memory\n", stderr);
        return 1;
    }
    int rc = kernel_main(p, argv[1], rng_fresh_seed());
    program_free(p);
    return rc;
}
#else
/* dml kernel ...: runs dml-kernel, next to this executable, with the same
 * arguments. Only it links ZeroMQ, jansson and libcrypto, which would
 * otherwise be loaded by every run of dml (Makefile). */
static int kernel_exec(char **argv)
{
    char *self = realpath("/proc/self/exe", NULL);
    const char *slash = self ? strrchr(self, '/') : NULL;
    if (!slash) {
        free(self);
        fputs("dml: kernel: cannot find this executable's folder (/proc/self/exe)\n", stderr);
        return 2;
    }
    size_t n = (size_t)(slash - self) + 1;
    char *path = malloc(n + sizeof "dml-kernel");
    if (!path) {
        free(self);
        fputs("dml: out of memory\n", stderr);
        return 1;
    }
    memcpy(path, self, n);
    memcpy(path + n, "dml-kernel", sizeof "dml-kernel");
    free(self);
    argv[0] = path;
    execv(path, argv);
    fprintf(stderr, "dml: kernel: cannot run '%s': %s (it is built and installed with dml)\n", path,
            strerror(errno));
    free(path);
    return 2;
}
#endif

int main(int argc, char **argv)
{
    tune_malloc();
    builtin_registry_install();     /* before anything resolves a program, on every rank */
    blas_choose_core();
    if (argc >= 3 && strcmp(argv[1], "help") == 0)
        return help_main(argc - 2, argv + 2);
    if (argc >= 2 && (is_help_flag(argv[1]) || strcmp(argv[1], "help") == 0 ||
                      ((strcmp(argv[1], "run") == 0 || strcmp(argv[1], "-f") == 0) && argc >= 3 &&
                       is_help_flag(argv[2])))) {
        print_usage();
        return 0;
    }
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-version") == 0)) {
        printf("dml %s (DML interpreter; BLAS: OpenBLAS, kernel %s)\n", DML_VERSION, blas_corename());
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "test") == 0) {
        char *self = realpath("/proc/self/exe", NULL);
        int rc = testrun_main(self ? self : argv[0], argc - 2, argv + 2);
        free(self);
        return rc;
    }
#ifdef DML_KERNEL_EXE
    if (argc >= 2 && strcmp(argv[1], "kernel") == 0)
        return kernel_cmd(argc - 2, argv + 2);
#else
    if (argc >= 2 && strcmp(argv[1], "kernel") == 0)
        return kernel_exec(argv);
#endif
    /* Under mpirun, ranks 1..N-1 serve paramserv calls and never run the
     * script; rank 0 goes on, and tells them to exit when it is done. They
     * never reach run_main, so the precision is set here for every rank
     * (run_main sets it again, and reports a bad value, on rank 0): without
     * it the worker ranks computed in double under --precision single. */
    const char *prec = precision_arg(argc, argv);
    if (!prec)
        prec = getenv("DML_PRECISION");
    if (prec && *prec)
        (void)blas_precision_set(prec);
    int mpi_status;
    DiagSink sink = cli_stderr_sink();
    if (ps_mpi_launch(&sink, &mpi_status))
        return mpi_status;
    int rc = run_main(argc, argv);
    ps_mpi_finish(rc);
    return rc;
}

/* dml [repl] | dml run FILE | dml -f FILE | dml -s TEXT, with options. */
static int run_main(int argc, char **argv)
{
    RunOpts o = {0};
    int rc;
    if (argc == 1 || (argc >= 2 && strcmp(argv[1], "repl") == 0)) {
        rc = parse_run_opts(argc, argv, argc == 1 ? 1 : 2, &o, NULL);
        if (rc)
            return rc;
        apply_threads(o.threads);
        if ((rc = apply_precision(o.precision)) != 0) {
            free_run_opts(&o);
            return rc;
        }
        Program *p = new_program(&o);
        if (p)
            rc = repl_main(p, o.have_seed ? o.seed : rng_fresh_seed());
        else {
            fputs("dml: out of memory\n", stderr);
            rc = 1;
        }
        program_free(p);
        free_run_opts(&o);
        return rc;
    }
    int i = 1;
    bool want_file = false;
    if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "-f") == 0) {
        want_file = true;       /* FILE is found among the options */
        i = 2;
    } else if (strcmp(argv[1], "-s") == 0) {
        if (argc < 3)
            return usage_error("%s: missing script text", argv[1]);
        o.inline_text = argv[2];
        i = 3;
    } else if (argv[1][0] != '-') {
        o.file = argv[1];       /* dml script.dml [options] */
        i = 2;
    } else {
        return usage_error("unknown option '%s'", argv[1]);
    }
    rc = parse_run_opts(argc, argv, i, &o, want_file ? &o.file : NULL);
    if (!rc && want_file && !o.file)
        rc = usage_error("%s: missing script file", argv[1]);
    if (rc) {
        free_run_opts(&o);
        return rc;
    }
    apply_threads(o.threads);
    if ((rc = apply_precision(o.precision)) == 0)
        rc = run_script(&o);
    free_run_opts(&o);
    return rc;
}
