/* SPDX-License-Identifier: Apache-2.0
 * The server's end of the seam between the paramserv server and its
 * workers: the server TAKES the pushes that arrived in its inbox (put there
 * by the transport, ps_enqueue_push_take) and DELIVERS a model to a worker
 * through the transport (PsTransportOps, ps.h), which gets it to the
 * worker's next pull, wherever the worker runs.
 *
 * Locking: PsRun.mu protects the inbox and the failure (and the
 * transports' mailboxes). The server waits on server_cv for pushes. On
 * failure the first failing thread records its message, sets 'abort'
 * (which every Interp polls as its interrupt flag), broadcasts server_cv
 * and has the transport wake its waiting threads, so no thread can stay
 * blocked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/clock.h"
#include "ps.h"

/* ---- failure ---- */

static void broadcast_all(PsRun *run)
{
    pthread_cond_broadcast(&run->server_cv);
    run->tp->wake(run);
}

/* With run->mu held: records 'msg' (malloc'd, taken; NULL: none) as the
 * failure unless there is one already, and stops everyone. */
static void fail_locked_take(PsRun *run, char *msg)
{
    if (!run->failure && msg) {
        size_t l = strlen(msg);
        while (l > 0 && msg[l - 1] == '\n')
            msg[--l] = '\0';
        run->failure = msg;
    } else {
        free(msg);
    }
    atomic_store(&run->abort, 1);
    broadcast_all(run);
}

void ps_fail_msg(PsRun *run, const char *msg)
{
    pthread_mutex_lock(&run->mu);
    fail_locked_take(run, run->failure ? NULL : strdup(msg ? msg : "unknown error"));
    pthread_mutex_unlock(&run->mu);
}

void ps_fail(PsRun *run, Interp *I, const char *who)
{
    err_finish_trace(I);
    char *msg = err_format(I);
    pthread_mutex_lock(&run->mu);
    char *failure = NULL;
    if (!run->failure && !(I->err.interrupted && atomic_load(&run->abort))) {
        size_t len = strlen(who) + (msg ? strlen(msg) : 0) + 64;
        failure = malloc(len);
        if (failure)
            snprintf(failure, len, "%s%s%s", who, *who ? ": " : "", msg ? msg : "unknown error");
    }
    fail_locked_take(run, failure);
    pthread_mutex_unlock(&run->mu);
    free(msg);
}

/* ---- server end ---- */

Status ps_enqueue_push_take(PsRun *run, int worker, int64_t epoch, int64_t batch, Value payload)
{
    pthread_mutex_lock(&run->mu);
    if (run->ninbox == run->capinbox) {
        int64_t cap = run->capinbox ? run->capinbox * 2 : 16;
        PsMsg *nb = realloc(run->inbox, sizeof *nb * (size_t)cap);
        if (!nb) {
            pthread_mutex_unlock(&run->mu);
            val_release(payload);
            return ST_ERR;
        }
        run->inbox = nb;
        run->capinbox = cap;
    }
    /* NONE: a BSP push added on a worker rank into an earlier worker's
     * (tree.c); the server checks that only such a round has them. */
    run->inbox[run->ninbox++] = (PsMsg){.worker = worker, .epoch = epoch, .batch = batch, .payload = payload,
                                        .summed = payload.kind == VAL_NONE};
    pthread_cond_signal(&run->server_cv);
    pthread_mutex_unlock(&run->mu);
    return ST_OK;
}

void ps_deliver(PsRun *run, PsWorker *w)
{
    w->pulled = run->updates;
    run->tp->deliver(run, w->id, val_ref(run->model), NULL);
}

int64_t ps_take_pushes(PsRun *run, PsMsg **batch, int64_t *cap)
{
    pthread_mutex_lock(&run->mu);
    while (run->ninbox == 0 && !atomic_load(&run->abort)) {
        clock_cond_wait_ms(&run->server_cv, &run->mu, 100);
        if (interp_interrupted(run->caller) && !atomic_load(&run->abort)) {
            pthread_mutex_unlock(&run->mu);
            eval_raise_interrupt(&run->SI, NULL);
            ps_fail(run, &run->SI, "");
            pthread_mutex_lock(&run->mu);
        }
    }
    if (atomic_load(&run->abort)) {
        pthread_mutex_unlock(&run->mu);
        return -1;
    }
    if (*cap < run->ninbox) {
        PsMsg *nb = realloc(*batch, sizeof *nb * (size_t)run->ninbox);
        if (!nb) {
            pthread_mutex_unlock(&run->mu);
            err_set(&run->SI, "paramserv: out of memory");
            ps_fail(run, &run->SI, "");
            return -1;
        }
        *batch = nb;
        *cap = run->ninbox;
    }
    int64_t n = run->ninbox;
    memcpy(*batch, run->inbox, sizeof **batch * (size_t)n);
    run->ninbox = 0;
    pthread_mutex_unlock(&run->mu);
    return n;
}
