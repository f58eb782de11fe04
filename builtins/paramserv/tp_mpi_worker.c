/* SPDX-License-Identifier: Apache-2.0
 * paramserv's Open MPI transport, the worker ranks' side: ranks 1..N-1
 * serve paramserv calls until rank 0 says to exit (ps_mpi_worker_loop,
 * called at start-up by mpi_comm.c). For each call the rank decodes the
 * CALL (msg.h), rebuilds the program from the shipped files, and hosts
 * its group of worker loops (worker.c, ps_loop_start; one, or several
 * threads when k exceeds the worker ranks: tp_mpi_tree.h), whose port
 * (PsPortOps) is this rank's bridge: a pull waits for the model rank 0 (or
 * a peer of the broadcast tree, tp_mpi.h) sent, once for the group's
 * workers that take it; a push is queued and sent to rank 0, or, under BSP,
 * added into the rank's sum (TpReduce), which goes up the tree of ranks.
 * The bridge runs on the rank's main thread: pushes and prints out, models
 * and peers' sums in, heartbeats, until rank 0 ENDs the call. Rank 0's
 * side is tp_mpi_server.c. */
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
#include "tp_mpi_tree.h"
#include "tp_mpi_rows.h"

struct Remote;

/* One worker of the rank's group: a thread with its own mailbox (under
 * Remote.mu). The group's workers share the model a delivery brings (one
 * copy per rank) and the rank's memory. */
typedef struct RWorker {
    PsLoop loop;
    struct Remote *r;
    pthread_t th;
    bool up, started;
    bool full;                  /* a delivery waits to be pulled */
    Value mailbox;              /* its model (NONE with a stop) */
    PsTask task;                /* DYNAMIC: its task (matrices owned) */
    pthread_cond_t cv;          /* the worker waits here for its mailbox */
} RWorker;

/* One call on this rank. mu protects what the workers' threads and the
 * bridge share: the mailboxes, the outbox, the prints, the failure and
 * 'nfinished'. */
typedef struct Remote {
    PsConfig cfg;
    RWorker *w;                 /* the group's workers: ids first .. first + n - 1 */
    int64_t first, n;
    TpGroups grp;               /* every rank's group (tp_mpi_tree.h) */
    int64_t *groups;            /* pushes per epoch of each of the call's k workers */
    bool tree;                  /* BSP pushes go up the tree (red) */
    TpReduce *red;
    Program *prog;
    CallMsg call;               /* owned: what the CALL carried */
    char where[320];            /* "rank R on HOST" */
    pthread_mutex_t mu;
    pthread_cond_t bridge_cv;   /* the bridge waits here for pushes and the workers' end */
    atomic_int abort;           /* the call ends: polled by the workers' Interps */
    PsRowsKept rows;            /* DYNAMIC: task rows kept for later epochs, for the whole group (bridge only) */
    PsMsg *outbox;              /* pushes to send */
    int64_t nout, capout;
    WBuf prints;                /* what the workers' DML code printed */
    FILE *out;
    char *failure;              /* the first failure (malloc'd), or NULL */
    bool failed;                /* a worker failed (with or without a message) */
    int64_t nfinished;          /* workers whose loop returned */
    TpShardIn *shin;            /* servers=S > 1: each worker's parts of its next model (tp_mpi_shard.c) */
} Remote;

/* ---- the workers' port ---- */

static Status rank_pull(PsLoop *l, Value *model, PsTask *task)
{
    RWorker *rw = l->ctx;
    Remote *r = rw->r;
    pthread_mutex_lock(&r->mu);
    while (!rw->full && !atomic_load(&r->abort))
        pthread_cond_wait(&rw->cv, &r->mu);
    bool ok = !atomic_load(&r->abort);
    if (ok) {
        *model = rw->mailbox;
        rw->mailbox = val_none();
        rw->full = false;
        if (task) {
            *task = rw->task;
            rw->task = (PsTask){.epoch = -1};
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
    for (int64_t i = 0; i < r->n; i++)
        pthread_cond_broadcast(&r->w[i].cv);
    pthread_cond_broadcast(&r->bridge_cv);
}

static void rank_push(PsLoop *l, int64_t epoch, int64_t batch, Value payload)
{
    Remote *r = ((RWorker *)l->ctx)->r;
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
    Remote *r = ((RWorker *)l->ctx)->r;
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
    Remote *r = ((RWorker *)l->ctx)->r;
    fflush(r->out ? r->out : stdout);
    pthread_mutex_lock(&r->mu);
    r->nfinished++;
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

/* Tell rank 0 that a worker of this rank failed with 'msg'. With no
 * message (memory ran out for it) or no memory to send it, a bare FAIL goes
 * and rank 0 names the rank itself; false when not even that could be
 * sent. */
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

/* A failure of the rank itself (not of a worker's DML code): 'msg'
 * malloc'd and taken, or NULL when there was no memory for it. */
static void rank_failed_take(Remote *r, char *msg)
{
    pthread_mutex_lock(&r->mu);
    fail_locked_take(r, msg);
    pthread_mutex_unlock(&r->mu);
}

/* Send the workers' pushes and prints (BSP with the tree: into the rank's
 * sum, which goes on once complete); true if anything went. *to0: whether
 * something went to rank 0 (which counts as a heartbeat). */
static bool send_pushes(Remote *r, bool *ok, bool *to0)
{
    pthread_mutex_lock(&r->mu);
    PsMsg *msgs = r->outbox;
    int64_t nmsg = r->nout;
    r->outbox = NULL;
    r->nout = r->capout = 0;
    WBuf prints = r->prints;
    r->prints = (WBuf){0};
    pthread_mutex_unlock(&r->mu);
    bool any = nmsg > 0 || prints.len > 0;
    if (prints.len && *ok) {
        *ok = mpi_send_take(0, MM_PRINT, (int)r->first, 0, 0, &prints);
        *to0 = true;
    }
    wb_free(&prints);
    for (int64_t i = 0; i < nmsg; i++) {
        if (r->red && *ok && !atomic_load(&r->abort)) {
            char *err = NULL;
            if (!tp_reduce_push(r->red, &msgs[i], &err))
                rank_failed_take(r, err);
        } else if (*ok && !r->red && r->shin) {
            *ok = tp_shard_push((int)r->cfg.servers, msgs[i].worker, msgs[i].epoch, msgs[i].batch, msgs[i].payload);
            *to0 = true;
        } else if (*ok && !r->red) {
            *ok = mpi_send_value(0, MM_PUSH, msgs[i].worker, msgs[i].epoch, msgs[i].batch, msgs[i].payload);
            *to0 = true;
        }
        val_release(msgs[i].payload);
    }
    free(msgs);
    if (r->red && *ok && !atomic_load(&r->abort)) {
        char *err = NULL;
        int rc = tp_reduce_step(r->red, &err);
        if (rc < 0 && err)
            rank_failed_take(r, err);
        else if (rc < 0)
            *ok = false;
        any = any || rc > 0;
    }
    return any;
}

/* A model (with a task under DYNAMIC; 'task' NULL: STATIC) arrived for
 * worker 'id''s next pull: into its mailbox, or, when it is malformed, the
 * worker fails on it. */
static void take_model(Remote *r, int64_t id, Value model, const PsTask *task, bool bad)
{
    RWorker *rw = id >= r->first && id < r->first + r->n ? &r->w[id - r->first] : NULL;
    if (!rw || bad || (model.kind != VAL_LIST && !(task && task->epoch < 0))) {
        val_release(model);
        char msg[512];
        snprintf(msg, sizeof msg, "paramserv: worker %lld (%s) got a malformed %s from rank 0",
                 (long long)(rw ? id : r->first) + 1, r->where, task ? "task" : "model");
        rank_failed_take(r, failalloc_msg_dup(msg));
        return;
    }
    pthread_mutex_lock(&r->mu);
    val_release(rw->mailbox);
    ps_task_clear(&rw->task);
    rw->mailbox = model;
    rw->full = true;
    if (task)
        rw->task = *task;
    pthread_cond_signal(&rw->cv);
    pthread_mutex_unlock(&r->mu);
}

/* --trace: a worker's events to rank 0, timed from the CALL's arrival
 * (MM_TRACE, mpi_comm.h). False on an MPI error; events that do not fit
 * in memory are left out. */
static bool send_events(const PsEvents *ev, int id, double t_call)
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
    bool ok = mpi_send_value(0, MM_TRACE, id, 0, 0, v);
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
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->bridge_cv, NULL);
    return r;
}

/* Room for the group's n workers (their mailboxes empty); false when out
 * of memory. */
static bool remote_workers(Remote *r, int64_t first, int64_t n)
{
    r->w = calloc((size_t)n, sizeof *r->w);
    if (!r->w)
        return false;
    r->first = first;
    r->n = n;
    for (int64_t i = 0; i < n; i++) {
        RWorker *rw = &r->w[i];
        rw->r = r;
        rw->mailbox = val_none();
        rw->task = (PsTask){.epoch = -1};
        pthread_cond_init(&rw->cv, NULL);
    }
    return true;
}

/* Everything a Remote holds, then the Remote itself. */
static void remote_free(Remote *r)
{
    for (int64_t i = 0; i < r->nout; i++)
        val_release(r->outbox[i].payload);
    free(r->outbox);
    for (int64_t i = 0; i < r->n; i++) {
        RWorker *rw = &r->w[i];
        val_release(rw->mailbox);
        ps_task_clear(&rw->task);
        if (rw->up)
            ps_loop_free(&rw->loop);
        pthread_cond_destroy(&rw->cv);
    }
    free(r->w);
    tp_reduce_free(r->red);
    tp_groups_free(&r->grp);
    tp_shard_in_free(r->shin);
    free(r->groups);
    ps_rows_kept_free(&r->rows);
    if (r->prog)
        program_free(r->prog);
    if (r->out)
        fclose(r->out);
    free(r->failure);
    wb_free(&r->prints);
    pthread_cond_destroy(&r->bridge_cv);
    pthread_mutex_destroy(&r->mu);
    ps_call_free(&r->call);
    free(r);
}

/* The first worker rank: 1, or S with servers=S (ranks 1..S-1 serve
 * shards: tp_mpi_shard.c). */
static int worker_rank0(const Remote *r)
{
    return r->cfg.servers > 1 ? (int)r->cfg.servers : 1;
}

/* What MM_GROUP says (mpi_comm.h), checked against the CALL: false when
 * it is malformed or out of memory (*why says which). */
static bool read_group(Remote *r, Value g, int64_t id, int64_t k, const char **why)
{
    *why = "a malformed worker group from rank 0";
    Matrix *m = g.kind == VAL_MATRIX ? g.m : NULL;
    if (!m || m->rows != 1 || m->cols != 4 + k)
        return false;
    double first = m->data[0], n = m->data[1], ng = m->data[2], tree = m->data[3];
    int wr0 = worker_rank0(r);
    if (first != (double)id || !(n >= 1 && n <= (double)k - first && n == (int64_t)n) ||
        !(ng >= 1 && ng <= mpi_size() - wr0 && ng <= (double)k && ng == (int64_t)ng) || (tree != 0 && tree != 1))
        return false;
    r->groups = malloc(sizeof *r->groups * (size_t)k);
    if (!r->groups || !tp_groups_init(&r->grp, k, (int64_t)ng)) {
        *why = "out of memory";
        return false;
    }
    int64_t g0 = mpi_rank() - wr0;
    if (r->grp.n != (int64_t)ng || g0 >= r->grp.n || r->grp.first[g0] != id ||
        r->grp.first[g0 + 1] - id != (int64_t)n)
        return false;
    for (int64_t i = 0; i < k; i++) {
        double v = m->data[4 + i];
        if (!(v >= 0 && v < 9e15 && v == (int64_t)v))
            return false;
        r->groups[i] = (int64_t)v;
    }
    r->tree = tree == 1;
    return remote_workers(r, id, (int64_t)n) || ((*why = "out of memory"), false);
}

/* Loads the CALL's program and starts the group's worker threads (their
 * partitions in parts[0..nparts)); a failure is told to rank 0. False when
 * rank 0 could not be told. *nstarted: threads started. */
static bool serve_start(Remote *r, MpiMsg *call, Value group, Value *parts, int64_t nparts, int64_t *id,
                        int64_t *nstarted)
{
    WRead rd = {.p = call->data, .len = call->len};
    char *err = NULL;
    const char *gwhy = NULL;
    bool ok = true;
    *nstarted = 0;
    /* The call is checked against the group's largest partition (which
     * bounds batchsize: tp_mpi_tree.h). */
    int64_t big = 0;
    for (int64_t i = 1; i < nparts; i++)
        if (parts[i].kind == VAL_LIST && parts[i].l->n == 2 && parts[i].l->items[0].kind == VAL_MATRIX &&
            parts[big].kind == VAL_LIST && parts[big].l->n == 2 && parts[big].l->items[0].kind == VAL_MATRIX &&
            parts[i].l->items[0].m->rows > parts[big].l->items[0].m->rows)
            big = i;
    bool set = remote_setup(r, &rd, &parts[big], id, &err);
    if (set && !read_group(r, group, *id, r->call.k, &gwhy))
        set = false;
    if (set && r->n != nparts)
        set = (gwhy = "a malformed worker group from rank 0", false);
    for (int64_t i = 1; set && i < nparts; i++) {
        List *pl = parts[i].kind == VAL_LIST ? parts[i].l : NULL;
        if (!pl || pl->n != 2 || pl->items[0].kind != VAL_MATRIX || pl->items[1].kind != VAL_MATRIX ||
            pl->items[0].m->rows != pl->items[1].m->rows)
            set = (gwhy = "a malformed partition from rank 0", false);
    }
    if (!set) {
        const char *why = err ? err : gwhy ? gwhy : "out of memory";
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
        return ok;
    }
    cookie_io_functions_t io = {.write = capture_write};
    r->out = fopencookie(r, "w", io);
    if (r->out)
        setvbuf(r->out, NULL, _IOLBF, 0);   /* a printed line leaves with the next message */
    /* BLAS: this rank's share of its host's thread budget, split among
     * its workers as a local run splits the budget (workers x threads
     * within it). */
    int per = blas_budget_share(mpi_local_ranks());
    int each = per / (int)(r->n < per ? r->n : per);
    if (each < 1)
        each = 1;
    blas_set_threads(each);
    if (r->tree && r->cfg.utype == PS_UTYPE_BSP && r->cfg.dispatch == PS_DISPATCH_STATIC) {
        r->red = tp_reduce_new(r->prog, &r->grp, mpi_rank() - worker_rank0(r), worker_rank0(r), (int)r->cfg.servers,
                               r->groups, r->cfg.epochs, r->call.start_epoch, call->epoch, &r->abort, per,
                               r->out ? r->out : stdout);
        if (!r->red)
            return send_fail("paramserv: out of memory on a worker rank");
    }
    if (r->cfg.servers > 1 && !(r->shin = tp_shard_in_new((int)r->cfg.servers, r->n)))
        return send_fail("paramserv: out of memory on a worker rank");
    for (int64_t i = 0; i < r->n; i++) {
        RWorker *rw = &r->w[i];
        List *pl = parts[i].l;
        PsPart p = {pl->items[0].m, pl->items[1].m};
        val_ref(pl->items[0]);
        val_ref(pl->items[1]);
        ps_loop_init(&rw->loop, &r->cfg, r->prog, (int)(r->first + i), r->call.start_epoch, p, &rank_port, rw,
                     &r->abort, each, r->out ? r->out : stdout);
        rw->loop.where = r->where;
        rw->up = true;
    }
    for (int64_t i = 0; i < r->n; i++) {
        RWorker *rw = &r->w[i];
        rw->started = ps_loop_start(&rw->loop, &rw->th);
        if (!rw->started) {
            ok = send_fail("paramserv: a worker rank cannot start its threads");
            rank_failed_take(r, NULL);
            break;
        }
        (*nstarted)++;
    }
    return ok;
}

/* Every worker thread has finished: the last pushes and prints, then the
 * failure, or each worker's events and stats, go to rank 0. With the tree
 * the stats wait until the rank's sums are all sent on (*held), so rank 0
 * hears DONE only after every push. Returns the new ok. */
static bool report_finish(Remote *r, double t_call, double cpu0, bool ok, bool *held)
{
    bool to0 = false;
    send_pushes(r, &ok, &to0);    /* the last push and prints first */
    *held = false;
    /* Stopped with no message: its failure had no memory to say
     * what went wrong, and rank 0 must still hear of it. */
    if (r->failed || atomic_load(&r->abort))
        return send_fail(r->failure) && ok;
    if (r->red && !tp_reduce_finished(r->red)) {
        *held = true;
        return ok;
    }
    double cpu = ps_process_cpu() - cpu0;
    for (int64_t i = 0; i < r->n && ok; i++) {
        RWorker *rw = &r->w[i];
        int id = (int)(r->first + i);
        if (rw->loop.ev.on)
            ok = send_events(&rw->loop.ev, id, t_call) && ok;
        WBuf b = {0};
        /* The rank's CPU time, once (with its first worker). */
        rw->loop.st.cpu = i == 0 ? cpu : 0;
        ps_stats_xfer(&(WIO){.w = &b}, &rw->loop.st);
        ok = ok && mpi_send_take(0, MM_DONE, id, 0, 0, &b);
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
    int how = BRIDGE_ON;
    if (m->type == MM_MODEL_TREE && m->batch != call->epoch) {
        /* forwarded late from an earlier call */
    } else if (m->type == MM_MODEL_TREE && started) {
        /* Pass the model on down the tree first, then take it: one copy
         * for the workers it names here. servers=S: it is shard 'epoch'
         * of the model (from server rank 'epoch'; rank 0's first is the
         * whole model), joined once every shard came. */
        Value model;
        int *mine;
        int nmine;
        bool mpi_err;
        Value v = m->value;
        m->value = val_none();
        int shard = m->epoch >= 0 && m->epoch < (r->shin ? r->cfg.servers : 1) ? (int)m->epoch : -1;
        if (shard >= 0 && tp_mpi_take_models(v, mpi_rank(), mpi_size(), r->first, r->first + r->n, call->epoch,
                                             shard, &model, &mine, &nmine, &mpi_err)) {
            for (int j = 0; j < nmine; j++) {
                if (r->shin) {
                    Value whole = val_none();
                    int got = tp_shard_in_take(r->shin, mine[j] - r->first, shard, val_ref(model), &whole);
                    if (got != 0)
                        take_model(r, mine[j], whole, NULL, got < 0);
                } else {
                    take_model(r, mine[j], val_ref(model), NULL, false);
                }
            }
            val_release(model);
            free(mine);
        } else if (shard >= 0 && mpi_err) {
            how = BRIDGE_BROKEN;
        } else {
            if (shard < 0)
                val_release(v);
            take_model(r, r->first, val_none(), NULL, true);
        }
        *awaiting = false;
    } else if (m->type == MM_MODEL && started) {
        Value model = m->value;
        m->value = val_none();
        take_model(r, m->worker, model, NULL, false);
        *awaiting = false;
    } else if (m->type == MM_TASK && started) {
        Value model = val_none();
        PsTask t = {.epoch = -1};
        int rows = m->epoch >= 0 ? ps_rows_take(&r->rows, m->value) : 1;
        if (rows < 0) {
            char msg[512];
            snprintf(msg, sizeof msg, "paramserv: worker %d (%s) ran out of memory keeping a task's rows",
                     (int)m->worker + 1, r->where);
            pthread_mutex_lock(&r->mu);
            fail_locked_take(r, failalloc_msg_dup(msg));
            pthread_mutex_unlock(&r->mu);
            *awaiting = false;
            mpi_msg_free(m);
            return BRIDGE_ON;
        }
        bool bad = m->epoch >= 0 && (rows == 0 || !ps_task_read(m->value, m->epoch, r->cfg.batchsize, &model, &t));
        take_model(r, m->worker, model, &t, bad);
        *awaiting = false;
    } else if (m->type == MM_PUSH_SUM && started && r->red) {
        char *err = NULL;
        if (!tp_reduce_child(r->red, m, &err))
            rank_failed_take(r, err);
    } else if (m->type == MM_END) {
        how = BRIDGE_END;
    }
    mpi_msg_free(m);
    return how;
}

/* Sums of pushes (MM_PUSH_SUM) that a peer sent before this rank had its
 * CALL (MPI orders messages per sender only): kept for the call they
 * belong to (tp_reduce_child drops another call's). */
typedef struct Stash {
    MpiMsg *m;
    int64_t n, cap;
} Stash;

/* Keeps m (taken) when it is a peer's sum; false when it is not one. */
static bool stash_take(Stash *st, MpiMsg *m)
{
    if (m->type != MM_PUSH_SUM)
        return false;
    if (st->n == st->cap) {
        int64_t cap = st->cap ? st->cap * 2 : 8;
        MpiMsg *nm = realloc(st->m, sizeof *nm * (size_t)cap);
        if (!nm) {
            mpi_msg_free(m);        /* the call then fails (its sum never comes) */
            return true;
        }
        st->m = nm;
        st->cap = cap;
    }
    st->m[st->n++] = *m;
    *m = (MpiMsg){.value = val_none()};
    return true;
}

static void stash_clear(Stash *st)
{
    for (int64_t i = 0; i < st->n; i++)
        mpi_msg_free(&st->m[i]);
    st->n = 0;
}

/* One paramserv call on a worker rank, from its CALL to rank 0's END.
 * False when this rank could not send to rank 0 (mpi_error says why). */
static bool serve_call(MpiMsg *call, Value group, Value *parts, int64_t nparts, Stash *stash)
{
    double cpu0 = ps_process_cpu(), t_call = clock_now_sec();
    Remote *r = remote_new();
    if (!r)
        return send_fail("paramserv: out of memory on a worker rank");
    int64_t id = 0, nstarted = 0;
    bool ok = serve_start(r, call, group, parts, nparts, &id, &nstarted);
    bool started = nstarted > 0;
    /* Sums that came before the CALL. */
    for (int64_t i = 0; i < stash->n; i++) {
        char *err = NULL;
        if (started && r->red && !tp_reduce_child(r->red, &stash->m[i], &err))
            rank_failed_take(r, err);
    }
    stash_clear(stash);
    /* The bridge: pushes out, models in, heartbeats, until END. */
    double last_send = clock_now_sec();
    MpiIdle idle = mpi_idle_init(AWAIT_IDLE_MAX_US);
    bool awaiting = true;       /* pushed (or just started) and no model since */
    bool reported = !started, held = false, failed_told = false;
    for (;;) {
        bool busy = false, to0 = false;
        if (started && send_pushes(r, &ok, &to0)) {
            busy = true;
            awaiting = true;
        }
        pthread_mutex_lock(&r->mu);
        bool fin = r->nfinished == nstarted;
        bool failed = r->failed;
        pthread_mutex_unlock(&r->mu);
        if (started && failed && !failed_told && !fin) {
            /* A failure of the rank's own (a sum, a model): rank 0 ends
             * the call once it hears. */
            ok = send_fail(r->failure) && ok;
            failed_told = true;
            to0 = true;
        }
        if (fin && (!reported || held) && !failed_told) {
            ok = report_finish(r, t_call, cpu0, ok, &held);
            reported = true;
            busy = busy || !held;
            to0 = to0 || !held;
        }
        if (to0)
            last_send = clock_now_sec();
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
            mpi_send_take(0, MM_BEAT, (int)r->first, 0, 0, NULL);
            last_send = clock_now_sec();
        } else if (busy) {
            mpi_idle_busy(&idle);
        } else {
            mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US
                                : awaiting || r->red ? AWAIT_IDLE_MAX_US : COMPUTE_IDLE_MAX_US);
            /* Sleep unless a push or the workers' end is waiting to go;
             * once reported, only END can come. */
            pthread_mutex_lock(&r->mu);
            if (r->nout == 0 && !(r->nfinished == nstarted && !reported))
                tp_mpi_cond_wait_us(&r->bridge_cv, &r->mu, mpi_idle_next(&idle));
            pthread_mutex_unlock(&r->mu);
        }
    }
    /* END (or a broken connection): stop the worker threads and leave. */
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->abort, 1);
    for (int64_t i = 0; i < r->n; i++)
        pthread_cond_broadcast(&r->w[i].cv);
    pthread_mutex_unlock(&r->mu);
    for (int64_t i = 0; i < r->n; i++)
        if (r->w[i].started)
            pthread_join(r->w[i].th, NULL);
    mpi_send_take(0, MM_ENDACK, (int)(r->n ? r->first : id), 0, 0, NULL);
    remote_free(r);
    return ok;
}

/* The next message after a CALL (rank 0 sends CALL, GROUP and the PARTs
 * back to back): its value in *v when it has type 'type', NONE when
 * something else came or nothing within mpi_timeout() (the call then fails
 * as malformed, and rank 0 hears of it). False only on an MPI error. */
static bool recv_next(int type, Value *v, Stash *stash)
{
    double waited = 0, last = clock_now_sec();
    MpiIdle idle = mpi_idle_init(0);
    *v = val_none();
    for (;;) {
        if (!mpi_progress())
            return false;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            return false;
        if (got && stash_take(stash, &m))
            continue;
        if (got) {
            if (m.type == type) {
                *v = m.value;
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

/* The GROUP and PARTs that follow a CALL, then the call itself. False
 * only on an MPI error. */
static bool serve_call_msgs(MpiMsg *call, Stash *stash)
{
    Value group;
    if (!recv_next(MM_GROUP, &group, stash))
        return false;
    Matrix *g = group.kind == VAL_MATRIX ? group.m : NULL;
    int64_t n = g && mat_len(g) >= 2 && g->data[1] >= 1 && g->data[1] <= 1e6 ? (int64_t)g->data[1] : 1;
    Value *parts = calloc((size_t)n, sizeof *parts);
    bool ok = true;
    int64_t got = 0;
    for (; parts && got < n && ok; got++)
        ok = recv_next(MM_PART, &parts[got], stash);
    if (!parts) {
        ok = send_fail("paramserv: out of memory on a worker rank");
    } else if (ok) {
        ok = serve_call(call, group, parts, n, stash);
    }
    for (int64_t i = 0; parts && i < got; i++)
        val_release(parts[i]);
    free(parts);
    val_release(group);
    return ok;
}

int ps_mpi_worker_loop(void)
{
    int status = -1;
    mpi_lock();
    MpiIdle idle = mpi_idle_init(BETWEEN_IDLE_MAX_US);
    Stash stash = {0};
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
        if (stash_take(&stash, &m))
            continue;
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
            if (!serve_call_msgs(&m, &stash)) {
                mpi_msg_free(&m);
                break;
            }
        }
        if (m.type == MM_END)
            mpi_send_take(0, MM_ENDACK, m.worker, 0, 0, NULL);
        mpi_msg_free(&m);
    }
    stash_clear(&stash);
    free(stash.m);
    /* Let the last messages (ENDACK) leave before MPI closes. */
    mpi_flush_sends();
    mpi_unlock();
    return status;
}
