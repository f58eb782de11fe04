/* SPDX-License-Identifier: Apache-2.0
 * The test runner's insides, shared by its files: testrun.c (options and
 * the driver loop), testrun_util.c (string lists, files),
 * testrun_find.c (discovering tests and their expectations),
 * testrun_exec.c (starting, watching and reaping the child processes) and
 * testrun_judge.c (comparing output, diffs, failure reports). Not for use
 * outside cli/testrun*.c; the names shared between these files carry tr_. */
#ifndef DML_CLI_TESTRUN_INT_H
#define DML_CLI_TESTRUN_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "../base/strbuf.h"

#define REPORT_MAX_LINES 40     /* detail lines per failing test */
#define DIFF_CONTEXT 3
#define DIFF_MAX_CELLS (16u * 1024u * 1024u)   /* LCS table cap (ints) */
#define WALK_MAX_DEPTH 32
#define OUTPUT_MAX ((off_t)64 << 20)   /* a test printing more is stopped */
#define POLL_MAX_S 0.25                /* longest sleep between checks */

/* A growable list of strings (testrun_util.c); text is built in a StrBuf. */
typedef struct StrList { char **v; size_t n, cap; } StrList;

/* Appends s (malloc'd, taken: freed when it cannot be kept); false when
 * s is NULL or memory ran out. */
bool tr_sl_push_take(StrList *l, char *s);
void tr_sl_free(StrList *l);
char *tr_xstrdup(const char *s);
char *tr_path_join(const char *dir, const char *name);
bool tr_ends_with(const char *s, const char *suf);
bool tr_read_fd(int fd, char **out, size_t *len);
bool tr_read_file(const char *path, char **out, size_t *len);
bool tr_write_file(const char *path, const char *data, size_t len);
bool tr_is_regular(const char *path);
bool tr_split_words(const char *text, StrList *out);

/* Options (testrun.c) */
typedef struct Opts {
    bool verbose;
    bool update;
    double timeout;         /* seconds per test */
    long jobs;
    StrList wrap;           /* words to put before the dml executable */
    StrList operands;
} Opts;

/* Tests (testrun_find.c) */
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
    StrBuf report;
} Test;

bool tr_has_marker(const char *path);
char *tr_stem_path(const char *path, const char *ext);
void tr_test_free(Test *t);
bool tr_collect(const Opts *o, Test **tests, size_t *ntests, StrList *skipped);

/* Running (testrun_exec.c) */
/* What every child needs, prepared before any fork so that the child only
 * calls async-signal-safe functions (the parent may have BLAS threads). */
typedef struct RunCtx {
    char *exe;              /* absolute path of the program to execve */
    char *dml;              /* absolute path of dml */
    StrList wrap;           /* wrap words (wrap.v[0] replaced by its full path) */
    char **envp;
    sigset_t child_mask;    /* signal mask to restore in the child */
} RunCtx;

bool tr_ctx_init(RunCtx *c, const char *self_exe, const StrList *wrap);
void tr_ctx_free(RunCtx *c);
void tr_test_start(Test *t, const RunCtx *c, double timeout);
void tr_test_kill(Test *t, bool timeout);
bool tr_output_too_large(const Test *t);
int tr_reap(Test *tests, size_t n, size_t from, const Opts *o);

/* Judging (testrun_judge.c) */
void tr_test_judge(Test *t, const Opts *o);

#endif
