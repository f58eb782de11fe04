/* SPDX-License-Identifier: Apache-2.0
 * Library code reports progress and warnings through the Interp's sink
 * (base/diag.h), never by printing: a paramserv run's warnings and epoch
 * lines reach the sink the caller installed, from the server thread too,
 * byte for byte as the CLI shows them; with no sink nothing reaches stderr. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtins/registry.h"
#include "check.h"
#include "run_src.h"

/* Six rows for k=8 workers: the partition warning; two epochs: two lines. */
static const char *src =
    "upd = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features,\n"
    "               matrix[double] labels) return (list[unknown] gradients) {\n"
    "  gradients = list(t(features) %*% (features %*% as.matrix(model[1]) - labels))\n"
    "}\n"
    "agg = function(list[unknown] model, list[unknown] hyperparams,\n"
    "               list[unknown] gradients) return (list[unknown] model_result) {\n"
    "  model_result = list(as.matrix(model[1]) - 0.01 * as.matrix(gradients[1]))\n"
    "}\n"
    "X = matrix(1, rows=6, cols=2)\n"
    "y = matrix(1, rows=6, cols=1)\n"
    "M = paramserv(model=list(matrix(0, rows=2, cols=1)), features=X, labels=y, upd=\"upd\",\n"
    "              agg=\"agg\", epochs=2, batchsize=3, k=8, utype=\"BSP\", freq=\"BATCH\",\n"
    "              hyperparams=list(), verbose=TRUE)\n";

typedef struct Captured {
    pthread_mutex_t mu;     /* the server thread writes too */
    char text[8192];
    size_t n;
    int warnings, progress, status;
} Captured;

static void capture(void *ctx, DiagLevel level, const char *text, size_t n)
{
    Captured *c = ctx;
    pthread_mutex_lock(&c->mu);
    if (c->n + n < sizeof c->text) {
        memcpy(c->text + c->n, text, n);
        c->n += n;
        c->text[c->n] = '\0';
    }
    c->warnings += level == DIAG_WARNING;
    c->progress += level == DIAG_PROGRESS;
    c->status += level == DIAG_STATUS;
    pthread_mutex_unlock(&c->mu);
}

/* Runs 'src' with 'sink' on the Interp; true when it ran without error. */
static bool run_with(DiagSink sink)
{
    char *msg;
    bool ok = run_src(&(RunOpts){.name = "sink.dml", .sink = sink}, src, strlen(src), &msg) == RUN_OK;
    if (!ok)
        fprintf(stderr, "%s\n", msg ? msg : "?");
    free(msg);
    return ok;
}

static void test_paramserv_lines_reach_the_sink(void)
{
    Captured c = {.mu = PTHREAD_MUTEX_INITIALIZER};
    CHECK(run_with((DiagSink){.write = capture, .ctx = &c, .rewrite = false}));
    CHECK_INT(c.warnings, 1);
    CHECK_INT(c.progress, 2);
    CHECK_INT(c.status, 0);     /* no rewritten line: the sink cannot rewrite */
    const char *warn = "[paramserv] warning: there are only 6 partitions of data for 8 workers; using 6 workers\n";
    CHECK(strncmp(c.text, warn, strlen(warn)) == 0);
    const char *e1 = strstr(c.text, "[paramserv] epoch 1/2: ");
    const char *e2 = strstr(c.text, "[paramserv] epoch 2/2: ");
    CHECK(e1 && e2 && e1 < e2 && strstr(e1, " updates/s\n") != NULL);
    pthread_mutex_destroy(&c.mu);
}

static void test_no_sink_prints_nothing(void)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    CHECK(tmp && saved >= 0);
    if (!tmp || saved < 0)
        return;
    dup2(fileno(tmp), STDERR_FILENO);
    bool ok = run_with((DiagSink){0});
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    CHECK(ok);
    CHECK_INT(ftell(tmp) + lseek(fileno(tmp), 0, SEEK_END), 0);
    fclose(tmp);
}

int main(void)
{
    builtin_registry_install();
    test_paramserv_lines_reach_the_sink();
    test_no_sink_prints_nothing();
    return CHECK_DONE();
}
