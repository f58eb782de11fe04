/* SPDX-License-Identifier: Apache-2.0
 * paramserv's Open MPI transport, the worker ranks' side: ranks 1..N-1
 * serve paramserv calls until rank 0 says to exit (ps_mpi_worker_loop,
 * called at start-up by mpi_comm.c). For each call the rank decodes the
 * CALL (msg.h), rebuilds the program from the shipped files, and hosts
 * one worker loop (worker.c, ps_loop_start) whose port (PsPortOps) is
 * this rank's bridge: a pull waits for the model rank 0 (or a peer of the
 * broadcast tree, tp_mpi.h) sent, a push is queued and sent to rank 0.
 * The bridge runs on the rank's main thread: pushes and prints out, models
 * in, heartbeats, until rank 0 ENDs the call. Rank 0's side is
 * tp_mpi_server.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "../../base/failalloc.h"
#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "../../runtime/resolve.h"
#include "mpi_comm.h"
#include "msg.h"
#include "ps.h"
#include "psmpi.h"
#include "tp_mpi.h"

/* One call on this rank. mu protects what the worker's thread and the
 * bridge share: the mailbox, the outbox, the prints, the failure and
 * 'finished'. */
typedef struct Remote {
    PsConfig cfg;
    PsLoop loop;
    Program *prog;
    CallMsg call;               /* owned: what the CALL carried */
    char where[320];            /* "rank R on HOST" */
    pthread_mutex_t mu;
    pthread_cond_t model_cv;    /* the worker waits here for its mailbox */
    pthread_cond_t bridge_cv;   /* the bridge waits here for pushes and the worker's end */
    atomic_int abort;           /* the call ends: polled by the worker's Interp */
    bool full;                  /* a delivery waits to be pulled */
    Value mailbox;              /* its model (NONE with a stop) */
    PsTask task;                /* DYNAMIC: its task (matrices owned) */
    PsMsg *outbox;              /* pushes to send */
    int64_t nout, capout;
    WBuf prints;                /* what the worker's DML code printed */
    FILE *out;
    char *failure;              /* the worker's failure (malloc'd), or NULL */
    bool failed;                /* the worker failed (with or without a message) */
    bool finished;              /* the worker's loop returned */
    TpShardIn *shin;            /* servers=S > 1: the parts of the next model (tp_mpi_shard.c) */
} Remote;

/* ---- the worker's port ---- */

static Status rank_pull(PsLoop *l, Value *model, PsTask *task)
{
    Remote *r = l->ctx;
    pthread_mutex_lock(&r->mu);
    while (!r->full && !atomic_load(&r->abort))
        pthread_cond_wait(&r->model_cv, &r->mu);
    bool ok = !atomic_load(&r->abort);
    if (ok) {
        *model = r->mailbox;
        r->mailbox = val_none();
        r->full = false;
        if (task) {
            *task = r->task;
            r->task = (PsTask){.epoch = -1};
        }
    }
    pthread_mutex_unlock(&r->mu);
    return ok ? ST_OK : ST_ERR;
}

/* With r->mu held: the worker failed ('msg' malloc'd and taken, or NULL
 * when there was no memory for it); stops it. */
static void fail_locked_take(Remote *r, char *msg)
{
    if (!r->failed) {
        r->failed = true;
        r->failure = msg;
    } else {
        free(msg);
    }
    atomic_store(&r->abort, 1);
    pthread_cond_broadcast(&r->model_cv);
    pthread_cond_broadcast(&r->bridge_cv);
}

static void rank_push(PsLoop *l, int64_t epoch, int64_t batch, Value payload)
{
    Remote *r = l->ctx;
    pthread_mutex_lock(&r->mu);
    if (r->nout == r->capout) {
        int64_t cap = r->capout ? r->capout * 2 : 16;
        PsMsg *nb = realloc(r->outbox, sizeof *nb * (size_t)cap);
        if (!nb) {
            val_release(payload);
            fail_locked_take(r, failalloc_msg_dup("paramserv: out of memory queueing a push"));
            pthread_mutex_unlock(&r->mu);
            return;
        }
        r->outbox = nb;
        r->capout = cap;
    }
    r->outbox[r->nout++] = (PsMsg){.worker = l->id, .epoch = epoch, .batch = batch, .payload = payload};
    pthread_cond_signal(&r->bridge_cv);
    pthread_mutex_unlock(&r->mu);
}

static void rank_fail(PsLoop *l, const char *who)
{
    Remote *r = l->ctx;
    Interp *I = &l->I;
    err_finish_trace(I);
    char *msg = err_format(I);
    char *failure = NULL;
    /* An "interrupted" error caused by the end of the call is no failure. */
    if (!(I->err.interrupted && atomic_load(&r->abort))) {
        size_t len = strlen(who) + (msg ? strlen(msg) : 0) + 64;
        failure = malloc(len);
        if (failure)
            snprintf(failure, len, "%s%s%s", who, *who ? ": " : "", msg ? msg : "unknown error");
        size_t n = failure ? strlen(failure) : 0;
        while (n > 0 && failure[n - 1] == '\n')
            failure[--n] = '\0';
    }
    free(msg);
    pthread_mutex_lock(&r->mu);
    if (failure || !atomic_load(&r->abort))
        fail_locked_take(r, failure);   /* else ended by rank 0: nothing to report */
    pthread_mutex_unlock(&r->mu);
}

static void rank_done(PsLoop *l)
{
    Remote *r = l->ctx;
    fflush(r->out ? r->out : stdout);
    pthread_mutex_lock(&r->mu);
    r->finished = true;
    pthread_cond_broadcast(&r->bridge_cv);
    pthread_mutex_unlock(&r->mu);
}

static const PsPortOps rank_port = {
    .pull = rank_pull,
    .push = rank_push,
    .fail = rank_fail,
    .batch_done = NULL,         /* rank 0 counts a push's batches */
    .done = rank_done,
};

static ssize_t capture_write(void *cookie, const char *buf, size_t n)
{
    Remote *r = cookie;
    pthread_mutex_lock(&r->mu);
    wb_bytes(&r->prints, buf, n);
    pthread_mutex_unlock(&r->mu);
    return (ssize_t)n;
}

/* ---- one call ---- */

/* Decode a CALL and rebuild the program from the shipped files. True on
 * success; false with *err a malloc'd message, or NULL when memory ran out
 * even for the reserved "out of memory" (so a failed allocation is never
 * taken for success). *id: the worker's id (0 until read). */
static bool remote_setup(Remote *r, WRead *rd, const Value *part, int64_t *id, char **err)
{
    CallMsg *m = &r->call;
    *err = NULL;
    const char *why = ps_call_read(rd, m, *part, id);
    if (why) {
        *err = failalloc_msg_dup(why);
        return false;
    }
    PsConfig *c = &r->cfg;
    *c = m->opt;
    c->agg_spec = m->agg_spec;
    c->hyper = m->hyper.kind == VAL_LIST ? m->hyper.l : NULL;
    r->prog = program_new();
    if (!r->prog) {
        *err = failalloc_msg_dup("out of memory");
        return false;
    }
    program_set_args(r->prog, m->args, (int)m->nargs);
    r->prog->shipped = m->files;
    r->prog->nshipped = (int)m->nfiles;
    Node **stmts;
    int nst;
    DiagErr lerr;
    if (!program_load_main(r->prog, m->main_path, m->main_text, m->main_len, &stmts, &nst, &lerr)) {
        *err = program_render_err(r->prog, &lerr, false);
        return false;
    }
    c->upd = program_find_func(r->prog, m->upd_key, m->upd_name);
    c->agg = program_find_func(r->prog, m->agg_key, m->agg_name);
    if (c->upd && c->agg)
        return true;
    size_t cap = strlen(m->upd_key) + strlen(m->upd_name) + strlen(m->agg_key) + strlen(m->agg_name) + 96;
    *err = malloc(cap);
    if (*err)
        snprintf(*err, cap, "cannot find %s::%s or %s::%s in the shipped program", m->upd_key, m->upd_name,
                 m->agg_key, m->agg_name);
    else
        *err = failalloc_msg_dup("out of memory");
    return false;
}

/* Send the worker's pushes and prints; true if anything went. */
static bool send_pushes(Remote *r, int id, bool *ok)
{
    pthread_mutex_lock(&r->mu);
    PsMsg *msgs = r->outbox;
    int64_t nmsg = r->nout;
    r->outbox = NULL;
    r->nout = r->capout = 0;
    WBuf prints = r->prints;
    r->prints = (WBuf){0};
    pthread_mutex_unlock(&r->mu);
    if (prints.len && *ok)
        *ok = mpi_send_take(0, MM_PRINT, id, 0, 0, &prints);
    wb_free(&prints);
    for (int64_t i = 0; i < nmsg; i++) {
        if (*ok && r->shin)
            *ok = tp_shard_push((int)r->cfg.servers, msgs[i].worker, msgs[i].epoch, msgs[i].batch, msgs[i].payload);
        else if (*ok)
            *ok = mpi_send_value(0, MM_PUSH, msgs[i].worker, msgs[i].epoch, msgs[i].batch, msgs[i].payload);
        val_release(msgs[i].payload);
    }
    free(msgs);
    return nmsg > 0 || prints.len > 0;
}

/* Tell rank 0 that this rank's worker failed with 'msg'. With no message
 * (memory ran out for it) or no memory to send it, a bare FAIL goes and
 * rank 0 names the rank itself; false when not even that could be sent. */
static bool send_fail(const char *msg)
{
    if (msg) {
        WBuf b = {0};
        wb_str(&b, msg);
        if (mpi_send_take(0, MM_FAIL, 0, 0, 0, &b))
            return true;
    }
    return mpi_send_take(0, MM_FAIL, 0, 0, 0, NULL);
}

/* An MM_MODEL_TREE, list(model, ranks): send the model on to 'ranks'
 * (tp_mpi_send_tree) and leave the bare model in m->value (NONE when the
 * message is malformed: the worker then fails on it). False on an MPI
 * error. */
static bool forward_tree(MpiMsg *m)
{
    Value v = m->value;
    m->value = val_none();
    int *ranks;
    int64_t n;
    bool ok = true;
    if (ps_tree_ranks(v, mpi_rank(), mpi_size(), &ranks, &n)) {
        m->value = val_ref(v.l->items[0]);
        ok = tp_mpi_send_tree(m->value, ranks, (int)n, m->worker, m->batch);
    }
    free(ranks);
    val_release(v);
    return ok;
}

/* A model (with a task under DYNAMIC; 'task' NULL: STATIC) arrived for
 * the worker's next pull: into the mailbox, or, when it is malformed, the
 * worker fails on it. */
static void take_model(Remote *r, Value model, const PsTask *task, bool bad)
{
    if (bad || (model.kind != VAL_LIST && !(task && task->epoch < 0))) {
        val_release(model);
        char msg[512];
        snprintf(msg, sizeof msg, "paramserv: worker %d (%s) got a malformed %s from rank 0", r->loop.id + 1,
                 r->where, task ? "task" : "model");
        pthread_mutex_lock(&r->mu);
        fail_locked_take(r, failalloc_msg_dup(msg));
        pthread_mutex_unlock(&r->mu);
        return;
    }
    pthread_mutex_lock(&r->mu);
    val_release(r->mailbox);
    ps_task_clear(&r->task);
    r->mailbox = model;
    r->full = true;
    if (task)
        r->task = *task;
    pthread_cond_signal(&r->model_cv);
    pthread_mutex_unlock(&r->mu);
}

/* --trace: the worker's events to rank 0, timed from the CALL's arrival
 * (MM_TRACE, mpi_comm.h). False on an MPI error; events that do not fit
 * in memory are left out. */
static bool send_events(const PsEvents *ev, double t_call)
{
    Matrix *m = mat_new_raw(ev->n, 5);
    if (!m)
        return true;
    for (int64_t i = 0; i < ev->n; i++) {
        const PsEvent *e = &ev->e[i];
        double *row = m->data + 5 * i;
        row[0] = e->kind;
        row[1] = e->t0 - t_call;
        row[2] = e->dur;
        row[3] = (double)e->epoch;
        row[4] = (double)e->batch;
    }
    Value v = val_matrix_take(m);
    bool ok = mpi_send_value(0, MM_TRACE, 0, 0, 0, v);
    val_release(v);
    return ok;
}

/* A fresh Remote for one call, its locks set up and nothing loaded yet;
 * NULL when out of memory. */
static Remote *remote_new(void)
{
    Remote *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->where, sizeof r->where, "rank %d on %s", mpi_rank(), mpi_host(mpi_rank()));
    r->call.hyper = val_none();
    r->mailbox = val_none();
    r->task = (PsTask){.epoch = -1};
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->model_cv, NULL);
    pthread_cond_init(&r->bridge_cv, NULL);
    return r;
}

/* Everything a Remote holds, then the Remote itself. */
static void remote_free(Remote *r, bool loop_up)
{
    for (int64_t i = 0; i < r->nout; i++)
        val_release(r->outbox[i].payload);
    free(r->outbox);
    val_release(r->mailbox);
    ps_task_clear(&r->task);
    tp_shard_in_free(r->shin);
    if (loop_up)
        ps_loop_free(&r->loop);
    if (r->prog)
        program_free(r->prog);
    if (r->out)
        fclose(r->out);
    free(r->failure);
    wb_free(&r->prints);
    pthread_cond_destroy(&r->bridge_cv);
    pthread_cond_destroy(&r->model_cv);
    pthread_mutex_destroy(&r->mu);
    ps_call_free(&r->call);
    free(r);
}

/* Loads the CALL's program and starts the worker thread in *th, setting
 * *id, *loop_up and *started; a failure is told to rank 0. False when
 * rank 0 could not be told. */
static bool serve_start(Remote *r, MpiMsg *call, const Value *part, int64_t *id, pthread_t *th, bool *loop_up,
                        bool *started)
{
    WRead rd = {.p = call->data, .len = call->len};
    char *err;
    bool ok = true;
    if (!remote_setup(r, &rd, part, id, &err)) {
        const char *why = err ? err : "out of memory";
        char small[512];
        size_t cap = strlen(why) + 400;
        char *msg = malloc(cap);
        if (!msg) {
            msg = small;
            cap = sizeof small;
        }
        snprintf(msg, cap, "paramserv: worker %d (%s) cannot load the program: %s", (int)*id + 1, r->where, why);
        ok = send_fail(msg);
        if (msg != small)
            free(msg);
        free(err);
    } else {
        if (r->cfg.servers > 1 && !(r->shin = tp_shard_in_new((int)r->cfg.servers)))
            return send_fail("paramserv: out of memory on a worker rank");
        List *pl = part->l;
        PsPart p = {pl->items[0].m, pl->items[1].m};
        val_ref(pl->items[0]);
        val_ref(pl->items[1]);
        cookie_io_functions_t io = {.write = capture_write};
        r->out = fopencookie(r, "w", io);
        if (r->out)
            setvbuf(r->out, NULL, _IOLBF, 0);   /* a printed line leaves with the next message */
        /* BLAS: this rank's share of its host's thread budget. */
        int per = blas_budget_share(mpi_local_ranks());
        blas_set_threads(per);
        ps_loop_init(&r->loop, &r->cfg, r->prog, (int)*id, r->call.start_epoch, p, &rank_port, r, &r->abort, per,
                     r->out ? r->out : stdout);
        r->loop.where = r->where;
        *loop_up = true;
        *started = ps_loop_start(&r->loop, th);
        if (!*started)
            ok = send_fail("paramserv: a worker rank cannot start its thread");
    }
    return ok;
}

/* The worker thread has finished: its last pushes and prints, then its
 * failure or its events and stats, go to rank 0. Returns the new ok. */
static bool report_finish(Remote *r, int64_t id, double t_call, double cpu0, bool ok)
{
    send_pushes(r, (int)id, &ok);    /* the last push and prints first */
    /* Stopped with no message: its failure had no memory to say
     * what went wrong, and rank 0 must still hear of it. */
    if (r->failed || atomic_load(&r->abort)) {
        ok = send_fail(r->failure) && ok;
    } else {
        if (r->loop.ev.on)
            ok = send_events(&r->loop.ev, t_call) && ok;
        WBuf b = {0};
        r->loop.st.cpu = ps_process_cpu() - cpu0;
        ps_stats_xfer(&(WIO){.w = &b}, &r->loop.st);
        ok = ok && mpi_send_take(0, MM_DONE, (int)id, 0, 0, &b);
        wb_free(&b);
    }
    return ok;
}

/* One message polled by the bridge, taken and freed. Returns BRIDGE_ON to
 * keep going, BRIDGE_END on rank 0's END, BRIDGE_BROKEN when the model
 * could not be passed down the tree. */
enum { BRIDGE_ON, BRIDGE_END, BRIDGE_BROKEN };
static int bridge_take(Remote *r, const MpiMsg *call, MpiMsg *m, bool started, bool *awaiting)
{
    if (m->type == MM_MODEL_TREE && m->batch != call->epoch) {
        m->type = 0;     /* forwarded late from an earlier call */
    } else if (m->type == MM_MODEL_TREE) {
        /* Pass the model on down the tree first, then take it. */
        if (!forward_tree(m)) {
            mpi_msg_free(m);
            return BRIDGE_BROKEN;
        }
        m->type = MM_MODEL;
    }
    if (r->shin && (m->type == MM_MODEL || m->type == MM_SHARD_MODEL)) {
        /* servers=S: a shard; the model is whole once every shard came. */
        Value whole = val_none();
        int got = tp_shard_in_take(r->shin, m->type == MM_MODEL ? 0 : m->src, m->value, &whole);
        m->value = val_none();
        if (got != 0) {
            take_model(r, whole, NULL, got < 0);
            *awaiting = false;
        }
    } else if (m->type == MM_MODEL) {
        Value model = m->value;
        m->value = val_none();
        take_model(r, model, NULL, false);
        *awaiting = false;
    } else if (m->type == MM_TASK && started) {
        Value model = val_none();
        PsTask t = {.epoch = -1};
        bool bad = m->epoch >= 0 && !ps_task_read(m->value, m->epoch, r->cfg.batchsize, &model, &t);
        take_model(r, model, &t, bad);
        *awaiting = false;
    } else if (m->type == MM_END) {
        mpi_msg_free(m);
        return BRIDGE_END;
    }
    mpi_msg_free(m);
    return BRIDGE_ON;
}

/* One paramserv call on a worker rank, from its CALL to rank 0's END.
 * False when this rank could not send to rank 0 (mpi_error says why). */
static bool serve_call(MpiMsg *call, const Value *part)
{
    double cpu0 = ps_process_cpu(), t_call = clock_now_sec();
    Remote *r = remote_new();
    if (!r)
        return send_fail("paramserv: out of memory on a worker rank");
    int64_t id = 0;
    bool started = false, loop_up = false;
    pthread_t th;
    bool ok = serve_start(r, call, part, &id, &th, &loop_up, &started);
    /* The bridge: pushes out, models in, heartbeats, until END. */
    double last_send = clock_now_sec();
    MpiIdle idle = mpi_idle_init(AWAIT_IDLE_MAX_US);
    bool awaiting = true;       /* pushed (or just started) and no model since */
    bool reported = !started;
    for (;;) {
        bool busy = false;
        if (started && send_pushes(r, (int)id, &ok)) {
            busy = true;
            awaiting = true;
            last_send = clock_now_sec();
        }
        pthread_mutex_lock(&r->mu);
        bool fin = r->finished;
        pthread_mutex_unlock(&r->mu);
        if (fin && !reported) {
            ok = report_finish(r, id, t_call, cpu0, ok);
            reported = true;
            busy = true;
            last_send = clock_now_sec();
        }
        if (!ok || !mpi_progress()) {
            ok = false;     /* rank 0 cannot be told: the worker loop ends the job */
            break;
        }
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0) {
            ok = false;
            break;
        }
        if (got) {
            busy = true;
            int how = bridge_take(r, call, &m, started, &awaiting);
            if (how == BRIDGE_BROKEN)
                ok = false;
            if (how != BRIDGE_ON)
                break;
        }
        /* Rank 0 must hear from us at least every BEAT_SECS. */
        if (clock_now_sec() - last_send >= BEAT_SECS) {
            mpi_send_take(0, MM_BEAT, (int)id, 0, 0, NULL);
            last_send = clock_now_sec();
        } else if (busy) {
            mpi_idle_busy(&idle);
        } else {
            mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US
                                : awaiting ? AWAIT_IDLE_MAX_US : COMPUTE_IDLE_MAX_US);
            /* Sleep unless a push or the worker's end is waiting to go;
             * once reported, only END can come. */
            pthread_mutex_lock(&r->mu);
            if (r->nout == 0 && (!r->finished || reported))
                tp_mpi_cond_wait_us(&r->bridge_cv, &r->mu, mpi_idle_next(&idle));
            pthread_mutex_unlock(&r->mu);
        }
    }
    /* END (or a broken connection): stop the worker thread and leave. */
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->abort, 1);
    pthread_cond_broadcast(&r->model_cv);
    pthread_mutex_unlock(&r->mu);
    if (started)
        pthread_join(th, NULL);
    mpi_send_take(0, MM_ENDACK, (int)id, 0, 0, NULL);
    remote_free(r, loop_up);
    return ok;
}

/* The MM_PART that follows a CALL (rank 0 sends the two back to back);
 * NONE in *part when something else came or nothing within mpi_timeout()
 * (the call then fails as malformed, and rank 0 hears of it). False only
 * on an MPI error. */
static bool recv_part(Value *part)
{
    double waited = 0, last = clock_now_sec();
    MpiIdle idle = mpi_idle_init(0);
    for (;;) {
        if (!mpi_progress())
            return false;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            return false;
        if (got) {
            if (m.type == MM_PART) {
                *part = m.value;
                m.value = val_none();
            }
            mpi_msg_free(&m);
            return true;
        }
        /* Only time this rank was running counts (see WATCH_GAP_SEC). */
        double now = clock_now_sec();
        if (now - last <= WATCH_GAP_SEC)
            waited += now - last;
        last = now;
        if (waited > mpi_timeout())
            return true;
        mpi_idle_spun(&idle, waited, AWAIT_IDLE_MAX_US);
        mpi_idle_sleep(&idle);
    }
}

int ps_mpi_worker_loop(void)
{
    int status = -1;
    mpi_lock();
    MpiIdle idle = mpi_idle_init(BETWEEN_IDLE_MAX_US);
    for (;;) {
        if (!mpi_progress())
            break;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            break;
        if (got == 0) {
            mpi_idle_sleep(&idle);
            continue;
        }
        mpi_idle_busy(&idle);
        if (m.type == MM_SHUTDOWN) {
            status = (int)m.epoch;
            mpi_msg_free(&m);
            break;
        }
        if (m.type == MM_SHARD_CALL && !tp_shard_serve(&m)) {
            mpi_msg_free(&m);
            break;
        }
        if (m.type == MM_CALL) {
            Value part = val_none();
            bool ok = recv_part(&part) && serve_call(&m, &part);
            val_release(part);
            if (!ok) {
                mpi_msg_free(&m);
                break;
            }
        }
        if (m.type == MM_END)
            mpi_send_take(0, MM_ENDACK, m.worker, 0, 0, NULL);
        mpi_msg_free(&m);
    }
    /* Let the last messages (ENDACK) leave before MPI closes. */
    mpi_flush_sends();
    mpi_unlock();
    return status;
}
