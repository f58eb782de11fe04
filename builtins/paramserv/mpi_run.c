/* SPDX-License-Identifier: Apache-2.0
 * paramserv across Open MPI ranks: both ends of the channel bridged over
 * MPI messages (mpi_comm.h), with the server (server.c) and worker
 * (worker.c) logic unchanged.
 *
 * Rank 0 runs the script; its paramserv call starts the server thread as
 * for a local run, but its k workers are proxies: ps_mpi_serve, on the
 * calling thread, ships each worker rank its partition and the program
 * (every loaded file, so no shared filesystem is needed), sends a proxy's
 * mailbox to its rank whenever the server delivers a model, and puts the
 * pushes that arrive into the server's inbox. A worker rank runs the worker
 * loop on a thread of its own, against a one-worker channel that its main
 * thread bridges the same way. Each pull or push moves one copy of the
 * model or gradients; a pull only the model entries that the worker's
 * functions can read (readset.c). No bridge blocks inside MPI: each polls and sleeps
 * between polls (MpiIdle, the caps below), because ranks on one host share
 * its cores, and a rank spinning while it waits takes them from the ranks
 * that compute.
 *
 * Same partitions (made on rank 0), the same per-worker RNG streams
 * (seeded from seed, worker and epoch) and BSP's aggregation in worker
 * order make a seeded BSP run bit-identical to a local run with the same
 * k; doubles travel as their bytes.
 *
 * Failures: a worker's DML error travels to rank 0 as a message and ends
 * the call there with the worker's rank, host, epoch, batch and DML stack;
 * rank 0 then ends the call on every rank (END, answered by ENDACK). A
 * worker rank sends a heartbeat each second during a call; one that stays
 * silent for DML_MPI_TIMEOUT seconds (default 60) is declared lost and the
 * job is torn down with MPI_Abort at exit. A rank that dies is noticed by
 * mpirun itself, which ends the whole job and names the rank. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../../base/failalloc.h"
#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "../../runtime/resolve.h"
#include "mpi_comm.h"
#include "msg.h"
#include "ps.h"
#include "psmpi.h"

/* Seconds between heartbeats of a worker rank during a call. */
#define BEAT_SECS 1.0
/* The caps of a bridge's idle sleeps (MpiIdle, mpi_comm.h), in
 * microseconds: the most latency a message from another rank can gain
 * while the bridge sleeps. Pushes and deliveries in the same process wake
 * a bridge at once. Rank 0 may hear a push any time; a worker rank waits
 * for a model only after it pushed, and while its worker computes only END
 * can come (a failure elsewhere), so it polls less. Between calls a worker
 * rank polls every 10 ms. */
#define SERVE_IDLE_MAX_US 1000
#define AWAIT_IDLE_MAX_US 1000
#define COMPUTE_IDLE_MAX_US 5000
#define BETWEEN_IDLE_MAX_US 10000
/* While a send is under way but has not moved for MPI_SPIN_SECS (until
 * then the bridge spins: mpi_comm.h): over TCP it moves only when its rank
 * polls. */
#define SEND_IDLE_MAX_US 200

/* Wait on cv (mu held) at most 'us' microseconds; 0 (a spinning MpiIdle,
 * mpi_comm.h): only yield the core, with mu released meanwhile. */
static void cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, long us)
{
    if (us <= 0) {
        pthread_mutex_unlock(mu);
        sched_yield();
        pthread_mutex_lock(mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += us * 1000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

bool ps_mpi_launched(void)
{
    return mpi_up();
}

int ps_mpi_workers(void)
{
    return mpi_up() ? mpi_size() - 1 : 0;
}

char *ps_mpi_where(int rank)
{
    char buf[320];
    snprintf(buf, sizeof buf, "rank %d on %s", rank, mpi_host(rank));
    return strdup(buf);
}

Status ps_pick_mode(Interp *I, const char *mode, bool *remote)
{
    bool mpi = ps_mpi_workers() > 0;
    if (!mode) {
        *remote = mpi;
        return ST_OK;
    }
    if (strcmp(mode, "LOCAL") == 0) {
        *remote = false;
        return ST_OK;
    }
    if (strcmp(mode, "REMOTE_MPI") == 0 || strcmp(mode, "REMOTE_SPARK") == 0) {
        if (!mpi)
            return err_set(I, "Paramserv function: not support ps execution mode '%s' outside mpirun (launch the "
                           "script with 'mpirun -np N dml run ...', N >= 2, or use mode=\"LOCAL\")", mode);
        *remote = true;
        return ST_OK;
    }
    return err_set(I, "Paramserv function: not support ps execution mode '%s' (use LOCAL, or REMOTE_MPI under "
                   "mpirun)", mode);
}

/* ---- what a call ships ---- */

static const char *func_key(const FuncDef *f)
{
    return f->mod == NULL ? ".defaultNS" : f->mod->key;
}

/* Rank 0's CALL, pointing into its program; false when out of memory. */
static bool call_of(CallMsg *m, Interp *I, const PsRun *run, const PsConfig *c)
{
    const Program *p = I->prog;
    *m = (CallMsg){.hyper = c->hyper ? val_list_take(c->hyper) : val_none()};
    m->main_path = p->main->path ? p->main->path : "<main>";
    m->main_text = program_file_text(p, m->main_path, &m->main_len);
    m->args = p->args;
    m->nargs = p->nargs;
    m->files = calloc((size_t)p->nmods + 1, sizeof *m->files);
    if (!m->files)
        return false;
    for (int i = 0; i < p->nmods; i++) {
        const Module *mod = p->mods[i];
        if (mod == p->main)
            continue;
        ShippedFile *f = &m->files[m->nfiles++];
        f->key = mod->key;
        f->path = mod->path;
        f->text = program_file_text(p, mod->path, &f->len);
    }
    m->upd_key = func_key(c->upd);
    m->upd_name = c->upd->name;
    m->agg_key = func_key(c->agg);
    m->agg_name = c->agg->name;
    m->agg_spec = c->agg_spec;
    m->utype = c->utype;
    m->freq = c->freq;
    m->epochs = c->epochs;
    m->batchsize = c->batchsize;
    m->nbatches = c->nbatches;
    m->model_avg = c->model_avg;
    m->seed = c->seed;
    m->start_epoch = run->start_epoch;
    return true;
}

/* list(X, Y) of a worker's partition, sharing the matrices; NONE when
 * memory ran out. */
static Value part_value(const PsWorker *w)
{
    List *l = list_new(2, false);
    if (!l || !list_push(l, val_matrix_take(w->part.X), NULL) || !list_push(l, val_matrix_take(w->part.Y), NULL)) {
        list_release(l);
        return val_none();
    }
    return val_list_take(l);
}

/* ---- rank 0 ---- */

static void mpi_failed(PsRun *run, const char *what)
{
    char msg[768];
    snprintf(msg, sizeof msg, "paramserv: %s: %s", what, mpi_error());
    ps_fail_msg(run, msg);
    mpi_mark_broken();
}

/* The model as a pull carries it: the entries in need[] (NULL: all), the
 * others as NONE, which the worker's functions never look at. The same
 * matrices as m, no cells copied. */
static Value pull_view(Value m, const bool *need, int64_t n)
{
    if (!need || m.kind != VAL_LIST || m.l->n != n)
        return val_ref(m);
    List *v = list_clone(m.l);
    if (!v)
        return val_ref(m);      /* out of memory: the whole model will do */
    for (int64_t i = 0; i < n; i++)
        if (!need[i]) {
            val_release(v->items[i]);
            v->items[i] = val_none();
        }
    return val_list_take(v);
}

/* A model that several ranks pull at once (a BSP round) goes down a tree
 * instead of k times out of rank 0: the ranks ranks[0..n) are split in two
 * halves, the first rank of each gets the model with the rest of its half
 * to pass on in the same way. Each rank still receives one copy, the cells
 * are the same bytes, so results do not change; rank 0 sends two copies
 * instead of k, and the copies travel in parallel, log2(k) hops deep. A
 * rank that dies on the way ends the job as any dead rank does; one that
 * hangs stops answering rank 0 and is found by the heartbeat timeout. */
enum { TREE_MIN = 3 };   /* fewer recipients: direct sends are as good */

/* Rank 0 numbers its calls; a CALL carries the number (header 'epoch') and
 * so does each tree message (header 'batch'), so a worker rank drops a
 * model forwarded late from an aborted earlier call. Only workers that
 * have pushed get a model through the tree: their CALL is in, and a peer's
 * message cannot overtake it (MPI orders messages per sender only). */
static int64_t call_seq;

static bool send_tree_half(Value model, const int *ranks, int n, int worker, int64_t seq)
{
    Matrix *fwd = mat_new_raw(1, n - 1);
    List *l = list_new(2, false);
    bool ok = fwd && l && list_push(l, model, NULL);
    if (ok) {
        for (int i = 1; i < n; i++)
            fwd->data[i - 1] = ranks[i];
        ok = list_push_take(l, val_matrix_take(fwd), NULL);
        fwd = NULL;
    }
    if (!ok) {
        mat_release(fwd);
        list_release(l);
        return false;
    }
    Value v = val_list_take(l);
    ok = mpi_send_value(ranks[0], MM_MODEL_TREE, worker, 0, seq, v);
    val_release(v);
    return ok;
}

/* Send 'model' to ranks[0..n) down the tree (one or two sends from here). */
static bool send_tree(Value model, const int *ranks, int n, int worker, int64_t seq)
{
    int h = (n + 1) / 2;
    if (n > 0 && !send_tree_half(model, ranks, h, worker, seq))
        return false;
    return n - h <= 0 || send_tree_half(model, ranks + h, n - h, worker, seq);
}

/* Whether worker j may take worker i's model (ms[i]) in one tree with it:
 * the same model object, and both have pushed (so their CALL is in). */
static bool tree_mate(const PsRun *run, const Value *ms, int i, int j)
{
    return run->w[i].heard_push && run->w[j].heard_push && ms[i].kind == VAL_LIST && ms[j].kind == VAL_LIST &&
           ms[j].l == ms[i].l;
}

/* Send each proxy's pending mailbox to its rank (the entries in need[]).
 * Workers whose mailboxes hold the same model (BSP delivers one model to
 * every worker) get it through one tree when there are TREE_MIN or more
 * of them. Returns whether anything was sent. */
static bool send_models(PsRun *run, const bool *need, int64_t nneed)
{
    bool any = false;
    int k = run->k, few[16];
    int *ranks = k <= 16 ? few : malloc(sizeof *ranks * (size_t)k);
    Value *ms = calloc((size_t)k, sizeof *ms);
    if (!ranks || !ms) {
        if (ranks != few)
            free(ranks);
        free(ms);
        ps_fail_msg(run, "paramserv: out of memory");
        return false;
    }
    pthread_mutex_lock(&run->mu);
    for (int i = 0; i < k; i++) {
        ms[i] = run->w[i].mailbox;
        run->w[i].mailbox = val_none();
    }
    pthread_mutex_unlock(&run->mu);
    bool ok = true;
    for (int i = 0; i < k; i++) {
        if (ms[i].kind == VAL_NONE)
            continue;
        /* The workers from i on waiting for this very model. */
        int n = 0;
        for (int j = i; j < k; j++)
            if (tree_mate(run, ms, i, j))
                ranks[n++] = run->w[j].rank;
        Value view = ok ? pull_view(ms[i], need, nneed) : val_none();
        if (ok && n >= TREE_MIN) {
            ok = send_tree(view, ranks, n, run->w[i].id, call_seq);
            for (int j = k - 1; j > i; j--)
                if (tree_mate(run, ms, i, j)) {
                    val_release(ms[j]);
                    ms[j] = val_none();
                }
        } else if (ok) {
            ok = mpi_send_value(run->w[i].rank, MM_MODEL, run->w[i].id, 0, 0, view);
        }
        val_release(view);
        val_release(ms[i]);
        ms[i] = val_none();
        if (!ok)
            mpi_failed(run, "sending a model");
        else
            any = true;
    }
    for (int i = 0; i < k; i++)
        val_release(ms[i]);
    if (ranks != few)
        free(ranks);
    free(ms);
    return any;
}

static PsWorker *worker_of_rank(PsRun *run, int rank)
{
    for (int i = 0; i < run->k; i++)
        if (run->w[i].rank == rank)
            return &run->w[i];
    return NULL;
}

/* One message from a worker rank during the call. */
static void on_message(PsRun *run, MpiMsg *m, int *ndone)
{
    PsWorker *w = worker_of_rank(run, m->src);
    if (!w)
        return;
    WRead rd = {.p = m->data, .len = m->len};
    switch (m->type) {
    case MM_PUSH: {
        Value payload = m->value;
        m->value = val_none();
        if (payload.kind != VAL_LIST) {
            val_release(payload);
            char msg[256];
            snprintf(msg, sizeof msg, "paramserv: malformed push from worker %d (%s)", w->id + 1, w->where);
            ps_fail_msg(run, msg);
            return;
        }
        w->heard_push = true;
        if (ps_enqueue_push_take(run, w->id, m->epoch, m->batch, payload) != ST_OK)
            ps_fail_msg(run, "paramserv: out of memory queueing a push");
        break;
    }
    case MM_PRINT:
        if (m->len) {
            fwrite(m->data, 1, m->len, run->caller->out);
            fflush(run->caller->out);
        }
        break;
    case MM_FAIL: {
        char *msg = wr_str(&rd);
        if (msg) {
            ps_fail_msg(run, msg);
            free(msg);
        } else {
            /* A bare FAIL: the rank had no memory left for its message. */
            char bare[400];
            snprintf(bare, sizeof bare, "paramserv: worker %d (%s) failed: %s", w->id + 1, w->where,
                     m->len ? "its message could not be read" : "out of memory there");
            ps_fail_msg(run, bare);
        }
        break;
    }
    case MM_DONE:
        if (w->done)
            break;              /* said twice: counted once */
        if (!ps_stats_read(&rd, &w->st)) {
            char msg[256];
            snprintf(msg, sizeof msg, "paramserv: malformed statistics from worker %d (%s)", w->id + 1, w->where);
            ps_fail_msg(run, msg);
        }
        w->done = true;
        (*ndone)++;
        break;
    default: break;             /* MM_BEAT: being here is the point */
    }
}

void ps_mpi_serve(PsRun *run, const PsConfig *c)
{
    Interp *I = run->caller;
    double t_rpc = 0;
    int n = run->k;
    double *seen = calloc((size_t)n, sizeof *seen);
    if (!seen) {
        ps_fail_msg(run, "paramserv: out of memory");
        return;
    }
    int64_t nneed = c->model->n;
    bool *need = ps_pull_entries(c, nneed);
    run->pull_entries = need ? 0 : -1;
    for (int64_t i = 0; need && i < nneed; i++)
        run->pull_entries += need[i];
    /* The server's agg and val share this host with worker ranks. */
    int blas_before = blas_budget_enter(mpi_local_ranks());
    mpi_lock();
    double t0 = clock_now_sec();
    call_seq++;
    /* The CALL: the common part, then this worker's id and k; its
     * partition follows as MM_PART. */
    WBuf common = {0};
    CallMsg call;
    if (!call_of(&call, I, run, c))
        common.oom = true;
    else
        ps_call_xfer(&(WIO){.w = &common}, &call);
    free(call.files);
    for (int i = 0; i < n && !atomic_load(&run->abort); i++) {
        PsWorker *w = &run->w[i];
        WBuf b = {0};
        wb_bytes(&b, common.p, common.len);
        if (common.oom)
            b.oom = true;
        int64_t id = w->id, k = n;
        ps_part_xfer(&(WIO){.w = &b}, &id, &k);
        Value part = part_value(w);
        if (part.kind == VAL_NONE) {
            wb_free(&b);
            ps_fail_msg(run, "paramserv: out of memory");
            break;
        }
        if (!mpi_send_take(w->rank, MM_CALL, w->id, call_seq, 0, &b) ||
            !mpi_send_value(w->rank, MM_PART, w->id, 0, 0, part))
            mpi_failed(run, "sending a paramserv call");
        val_release(part);
        seen[i] = clock_now_sec();
    }
    wb_free(&common);
    t_rpc += clock_now_sec() - t0;
    /* The bridge: models out, pushes in, until every worker is done. */
    int ndone = 0;
    MpiIdle idle = mpi_idle_init(SERVE_IDLE_MAX_US);
    while (ndone < n && !atomic_load(&run->abort)) {
        double t1 = clock_now_sec();
        bool busy = send_models(run, need, nneed);
        if (!mpi_progress()) {
            mpi_failed(run, "sending");
            break;
        }
        MpiMsg m;
        int got;
        while ((got = mpi_poll(&m)) > 0) {
            busy = true;
            PsWorker *w = worker_of_rank(run, m.src);
            if (w)
                seen[w - run->w] = clock_now_sec();
            on_message(run, &m, &ndone);
            mpi_msg_free(&m);
        }
        t_rpc += clock_now_sec() - t1;
        if (got < 0) {
            mpi_failed(run, "receiving");
            break;
        }
        double now = clock_now_sec();
        for (int i = 0; i < n; i++) {
            PsWorker *w = &run->w[i];
            if (!w->done && seen[i] >= 0 && now - seen[i] > mpi_timeout()) {
                char msg[512];
                snprintf(msg, sizeof msg, "paramserv: worker %d (%s) sent nothing for %.0f s (DML_MPI_TIMEOUT): "
                         "it hangs or its host is unreachable; ending the job", w->id + 1, w->where, mpi_timeout());
                ps_fail_msg(run, msg);
                mpi_mark_broken();
                seen[i] = -1;       /* lost: expect no ENDACK from it */
                break;
            }
        }
        if (busy) {
            mpi_idle_busy(&idle);
        } else {
            mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US : SERVE_IDLE_MAX_US);
            pthread_mutex_lock(&run->mu);
            if (!atomic_load(&run->abort))
                cond_wait_us(&run->pump_cv, &run->mu, mpi_idle_next(&idle));
            pthread_mutex_unlock(&run->mu);
        }
    }
    /* End the call on every worker rank, done or not, and wait until each
     * has left it, so no message of this call is left for the next. */
    bool sent_ok = true;
    for (int i = 0; i < n && sent_ok; i++)
        sent_ok = mpi_send_take(run->w[i].rank, MM_END, run->w[i].id, 0, 0, NULL);
    int acks = 0;
    bool *acked = calloc((size_t)n, sizeof *acked);
    for (int i = 0; i < n && acked; i++)
        if (seen[i] < 0) {
            acked[i] = true;
            acks++;
        }
    double tend = clock_now_sec();
    mpi_idle_busy(&idle);
    while (sent_ok && acked && acks < n) {
        if (!mpi_progress())
            break;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            break;
        if (got == 0) {
            if (clock_now_sec() - tend > mpi_timeout())
                break;
            mpi_idle_sleep(&idle);
            continue;
        }
        PsWorker *w = worker_of_rank(run, m.src);
        if (w && m.type == MM_ENDACK && !acked[w - run->w]) {
            acked[w - run->w] = true;
            acks++;
        } else if (w && m.type == MM_FAIL && !atomic_load(&run->abort)) {
            on_message(run, &m, &ndone);
        }
        mpi_msg_free(&m);
    }
    if (acks < n) {
        if (!atomic_load(&run->abort))
            ps_fail_msg(run, "paramserv: a worker rank did not leave the call");
        mpi_mark_broken();
    }
    free(acked);
    /* Sends still in flight must finish before the models they carry go. */
    mpi_flush_sends();
    mpi_unlock();
    blas_budget_leave(blas_before);
    run->rpc_time = t_rpc;
    free(need);
    free(seen);
}

/* ---- worker rank ---- */

typedef struct Remote {
    PsRun run;
    PsConfig cfg;
    PsWorker w;
    Program *prog;
    CallMsg call;               /* owned: what the CALL carried */
    WBuf prints;                /* what the worker's DML code printed (run.mu) */
    FILE *out;
    bool finished;              /* the worker thread returned (run.mu) */
} Remote;

static ssize_t capture_write(void *cookie, const char *buf, size_t n)
{
    Remote *r = cookie;
    pthread_mutex_lock(&r->run.mu);
    wb_bytes(&r->prints, buf, n);
    pthread_mutex_unlock(&r->run.mu);
    return (ssize_t)n;
}

static void *remote_thread(void *arg)
{
    Remote *r = arg;
    ps_worker_main(&r->w);
    fflush(r->out);
    pthread_mutex_lock(&r->run.mu);
    r->finished = true;
    pthread_cond_broadcast(&r->run.server_cv);
    pthread_mutex_unlock(&r->run.mu);
    return NULL;
}

static void remote_free(Remote *r)
{
    ps_call_free(&r->call);
    wb_free(&r->prints);
}

/* Decode a CALL and rebuild the program from the shipped files. True on
 * success; false with *err a malloc'd message, or NULL when memory ran out
 * even for the reserved "out of memory" (so a failed allocation is never
 * taken for success). */
static bool remote_setup(Remote *r, WRead *rd, const Value *part, char **err)
{
    CallMsg *m = &r->call;
    *err = NULL;
    int64_t id;
    const char *why = ps_call_read(rd, m, *part, &id);
    r->w.id = (int)id;
    if (why) {
        *err = failalloc_msg_dup(why);
        return false;
    }
    PsConfig *c = &r->cfg;
    c->agg_spec = m->agg_spec;
    c->utype = (PsUtype)m->utype;
    c->freq = (PsFreq)m->freq;
    c->epochs = m->epochs;
    c->batchsize = m->batchsize;
    c->nbatches = m->nbatches;
    c->model_avg = m->model_avg != 0;
    c->seed = m->seed;
    c->hyper = m->hyper.kind == VAL_LIST ? m->hyper.l : NULL;
    r->run.start_epoch = m->start_epoch;
    List *pl = part->l;
    r->w.part.X = pl->items[0].m;
    r->w.part.Y = pl->items[1].m;
    val_ref(pl->items[0]);
    val_ref(pl->items[1]);
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

/* Send the worker thread's pushes and prints; true if anything went. */
static bool send_pushes(Remote *r, bool *ok)
{
    PsRun *run = &r->run;
    pthread_mutex_lock(&run->mu);
    PsMsg *msgs = run->inbox;
    int64_t nmsg = run->ninbox;
    run->inbox = NULL;
    run->ninbox = run->capinbox = 0;
    WBuf prints = r->prints;
    r->prints = (WBuf){0};
    pthread_mutex_unlock(&run->mu);
    if (prints.len && *ok)
        *ok = mpi_send_take(0, MM_PRINT, r->w.id, 0, 0, &prints);
    wb_free(&prints);
    for (int64_t i = 0; i < nmsg; i++) {
        if (*ok)
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
 * (send_tree) and leave the bare model in m->value (NONE when the message
 * is malformed: the worker then fails on it). False on an MPI error. */
static bool forward_tree(MpiMsg *m)
{
    Value v = m->value;
    m->value = val_none();
    int *ranks;
    int64_t n;
    bool ok = true;
    if (ps_tree_ranks(v, mpi_rank(), mpi_size(), &ranks, &n)) {
        m->value = val_ref(v.l->items[0]);
        ok = send_tree(m->value, ranks, (int)n, m->worker, m->batch);
    }
    free(ranks);
    val_release(v);
    return ok;
}

/* One paramserv call on a worker rank, from its CALL to rank 0's END.
 * False when this rank could not send to rank 0 (mpi_error says why). */
static bool serve_call(MpiMsg *call, const Value *part)
{
    double cpu0 = ps_process_cpu();
    Remote *r = calloc(1, sizeof *r);
    char where[320];
    snprintf(where, sizeof where, "rank %d on %s", mpi_rank(), mpi_host(mpi_rank()));
    if (!r)
        return send_fail("paramserv: out of memory on a worker rank");
    PsRun *run = &r->run;
    run->cfg = &r->cfg;
    run->w = &r->w;
    run->k = 1;
    run->where = where;
    r->call.hyper = val_none();
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->server_cv, NULL);
    pthread_cond_init(&run->pump_cv, NULL);
    pthread_cond_init(&r->w.cv, NULL);
    r->w.run = run;
    r->w.mailbox = val_none();
    r->w.slot = val_none();
    WRead rd = {.p = call->data, .len = call->len};
    char *err;
    bool started = false, ok = true;
    pthread_t th;
    if (!remote_setup(r, &rd, part, &err)) {
        const char *why = err ? err : "out of memory";
        char small[512];
        size_t cap = strlen(why) + 400;
        char *msg = malloc(cap);
        if (!msg) {
            msg = small;
            cap = sizeof small;
        }
        snprintf(msg, cap, "paramserv: worker %d (%s) cannot load the program: %s", r->w.id + 1, where, why);
        ok = send_fail(msg);
        if (msg != small)
            free(msg);
        free(err);
    } else {
        PsWorker *w = &r->w;
        int64_t rows = w->part.X->rows, bs = r->cfg.batchsize;
        w->nbatches = (rows + bs - 1) / bs;
        w->groups = r->cfg.freq == PS_FREQ_BATCH ? w->nbatches : r->cfg.freq == PS_FREQ_EPOCH ? (w->nbatches > 0 ? 1 : 0)
                  : (w->nbatches + r->cfg.nbatches - 1) / r->cfg.nbatches;
        cookie_io_functions_t io = {.write = capture_write};
        r->out = fopencookie(r, "w", io);
        if (r->out)
            setvbuf(r->out, NULL, _IOLBF, 0);   /* a printed line leaves with the next message */
        /* BLAS: this rank's share of its host's thread budget. */
        int per = blas_budget_share(mpi_local_ranks());
        blas_set_threads(per);
        worker_interp_init(&w->I, r->prog, rng_mix3(r->cfg.seed, (uint64_t)w->id + 1, 0), &run->abort, per,
                           r->out ? r->out : stdout);
        w->I.frame = &w->top;
        started = worker_start(&th, remote_thread, r);
        if (!started)
            ok = send_fail("paramserv: a worker rank cannot start its thread");
    }
    /* The bridge: pushes out, models in, heartbeats, until END. */
    double last_send = clock_now_sec();
    MpiIdle idle = mpi_idle_init(AWAIT_IDLE_MAX_US);
    bool awaiting = true;       /* pushed (or just started) and no model since */
    bool reported = !started;
    for (;;) {
        bool busy = false;
        if (started && send_pushes(r, &ok)) {
            busy = true;
            awaiting = true;
            last_send = clock_now_sec();
        }
        pthread_mutex_lock(&run->mu);
        bool fin = r->finished;
        pthread_mutex_unlock(&run->mu);
        if (fin && !reported) {
            send_pushes(r, &ok);    /* the last push and prints first */
            /* Stopped with no message: its failure had no memory to say
             * what went wrong, and rank 0 must still hear of it. */
            if (run->failure || atomic_load(&run->abort))
                ok = send_fail(run->failure) && ok;
            else {
                WBuf b = {0};
                r->w.st.cpu = ps_process_cpu() - cpu0;
                ps_stats_xfer(&(WIO){.w = &b}, &r->w.st);
                ok = ok && mpi_send_take(0, MM_DONE, r->w.id, 0, 0, &b);
                wb_free(&b);
            }
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
            if (m.type == MM_MODEL_TREE && m.batch != call->epoch) {
                m.type = 0;     /* forwarded late from an earlier call */
            } else if (m.type == MM_MODEL_TREE) {
                /* Pass the model on down the tree first, then take it. */
                if (!forward_tree(&m)) {
                    ok = false;
                    mpi_msg_free(&m);
                    break;
                }
                m.type = MM_MODEL;
            }
            if (m.type == MM_MODEL) {
                Value model = m.value;
                m.value = val_none();
                if (model.kind != VAL_LIST) {
                    val_release(model);
                    err_set(&r->w.I, "paramserv: malformed model from rank 0");
                    ps_fail(run, &r->w.I, "");
                } else {
                    pthread_mutex_lock(&run->mu);
                    val_release(r->w.mailbox);
                    r->w.mailbox = model;
                    pthread_cond_signal(&r->w.cv);
                    pthread_mutex_unlock(&run->mu);
                    awaiting = false;
                }
            } else if (m.type == MM_END) {
                mpi_msg_free(&m);
                break;
            }
            mpi_msg_free(&m);
        }
        /* Rank 0 must hear from us at least every BEAT_SECS. */
        if (clock_now_sec() - last_send >= BEAT_SECS) {
            mpi_send_take(0, MM_BEAT, r->w.id, 0, 0, NULL);
            last_send = clock_now_sec();
        } else if (busy) {
            mpi_idle_busy(&idle);
        } else {
            mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US
                                : awaiting ? AWAIT_IDLE_MAX_US : COMPUTE_IDLE_MAX_US);
            /* Sleep unless a push or the worker's end is waiting to go;
             * once reported, only END can come. */
            pthread_mutex_lock(&run->mu);
            if (run->ninbox == 0 && (!r->finished || reported))
                cond_wait_us(&run->server_cv, &run->mu, mpi_idle_next(&idle));
            pthread_mutex_unlock(&run->mu);
        }
    }
    /* END (or a broken connection): stop the worker thread and leave. */
    atomic_store(&run->abort, 1);
    pthread_mutex_lock(&run->mu);
    pthread_cond_broadcast(&r->w.cv);
    pthread_mutex_unlock(&run->mu);
    if (started)
        pthread_join(th, NULL);
    mpi_send_take(0, MM_ENDACK, r->w.id, 0, 0, NULL);
    for (int64_t i = 0; i < run->ninbox; i++)
        val_release(run->inbox[i].payload);
    free(run->inbox);
    val_release(r->w.mailbox);
    if (r->w.part.X)
        mat_release(r->w.part.X);
    if (r->w.part.Y)
        mat_release(r->w.part.Y);
    if (r->prog) {
        for (int s = 0; s < r->w.top.nslots; s++)
            val_release(r->w.top.slots[s]);
        free(r->w.top.slots);
        if (started || r->w.I.prog)
            interp_destroy(&r->w.I);
        program_free(r->prog);
    }
    if (r->out)
        fclose(r->out);
    free(run->failure);
    pthread_cond_destroy(&r->w.cv);
    pthread_cond_destroy(&run->pump_cv);
    pthread_cond_destroy(&run->server_cv);
    pthread_mutex_destroy(&run->mu);
    remote_free(r);
    free(r);
    return ok;
}

/* The MM_PART that follows a CALL (rank 0 sends the two back to back);
 * NONE in *part when something else came or nothing within mpi_timeout()
 * (the call then fails as malformed, and rank 0 hears of it). False only
 * on an MPI error. */
static bool recv_part(Value *part)
{
    double t0 = clock_now_sec();
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
        double waited = clock_now_sec() - t0;
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
