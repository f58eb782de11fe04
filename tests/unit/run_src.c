/* SPDX-License-Identifier: Apache-2.0
 * Load and run a program from a string, for tests (run_src.h). */
#include "run_src.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/failalloc.h"
#include "runtime/interp.h"
#include "runtime/resolve.h"

typedef struct Watchdog {
    atomic_int flag;            /* the Interp's interrupt flag */
    atomic_int done;
    int budget_ms;
} Watchdog;

static void *watch(void *arg)
{
    Watchdog *w = arg;
    for (int i = 0; i < w->budget_ms && !atomic_load(&w->done); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&w->flag, 1);
    return NULL;
}

/* The load error of p, shown as the CLI shows it. */
static RunResult load_failed(const Program *p, const DiagErr *e, char **msg)
{
    if (msg)
        *msg = program_render_err(p, e, false);
    return e->msg[0] ? RUN_ERROR : RUN_ERROR_NO_MESSAGE;
}

RunResult run_src(const RunOpts *o, const char *src, size_t len, char **msg)
{
    if (msg)
        *msg = NULL;
    Program *p = program_new();
    if (!p) {
        if (msg)
            *msg = failalloc_msg_dup("out of memory");
        return RUN_ERROR;
    }
    program_set_args(p, o->args, o->nargs);
    Node **stmts = NULL;
    int n = 0;
    DiagErr lerr;
    if (!program_load_main(p, o->name ? o->name : "test.dml", src, len, &stmts, &n, &lerr)) {
        RunResult rc = load_failed(p, &lerr, msg);
        program_free(p);
        return rc;
    }
    Interp I;
    interp_init(&I, p, 42);
    I.sink = o->sink;
    I.out = fopen("/dev/null", "w");
    CallFrame top = {0};
    top.names = &p->top;
    I.frame = &top;
    Watchdog w = {.budget_ms = o->budget_ms};
    pthread_t th;
    bool watching = false;
    if (o->budget_ms > 0) {
        I.interrupt = &w.flag;
        watching = pthread_create(&th, NULL, watch, &w) == 0;
    }
    RunResult rc = RUN_OK;
    if (exec_sync_top(&I, &top) != ST_OK || exec_block(&I, stmts, n) != ST_OK) {
        rc = I.err.msg && I.err.msg[0] ? RUN_ERROR : RUN_ERROR_NO_MESSAGE;
        if (msg)
            *msg = err_format(&I);
    }
    if (watching) {
        atomic_store(&w.done, 1);
        pthread_join(th, NULL);
    }
    for (int i = 0; i < top.nslots; i++)
        val_release(top.slots[i]);
    free(top.slots);
    if (I.out)
        fclose(I.out);
    interp_destroy(&I);
    program_free(p);
    return rc;
}
