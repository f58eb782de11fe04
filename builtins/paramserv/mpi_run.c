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
 * model or gradients.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "../../runtime/resolve.h"
#include "mpi_comm.h"
#include "ps.h"
#include "psmpi.h"

/* Seconds between heartbeats of a worker rank during a call. */
#define BEAT_SECS 1.0
/* How long a bridge sleeps when nothing happened (microseconds): the
 * latency added to a message that arrives while it sleeps. It starts at
 * IDLE_US after any traffic and doubles while nothing happens, up to
 * IDLE_MAX_US, so a bridge costs little CPU while its worker computes.
 * Pushes and deliveries in the same process wake it at once. */
#define IDLE_US 100
#define IDLE_MAX_US 250

static void cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, long us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += us * 1000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
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

static void put_func(WBuf *b, const FuncDef *f)
{
    wb_str(b, f->mod == NULL ? ".defaultNS" : f->mod->key);
    wb_str(b, f->name);
}

/* Every file rank 0 loaded, the $parameters and the configuration: the
 * part of a CALL that is the same for every worker rank. */
static void put_common(WBuf *b, Interp *I, const PsRun *run, const PsConfig *c)
{
    const Program *p = I->prog;
    size_t len = 0;
    const char *main_path = p->main->path ? p->main->path : "<main>";
    const char *text = program_file_text(p, main_path, &len);
    wb_str(b, main_path);
    wb_strn(b, text ? text : "", text ? len : 0);
    wb_i64(b, p->nargs);
    for (int i = 0; i < p->nargs; i++) {
        wb_str(b, p->args[i].name);
        wb_str(b, p->args[i].text);
    }
    int64_t nmods = 0;
    for (int i = 0; i < p->nmods; i++)
        nmods += p->mods[i] != p->main;
    wb_i64(b, nmods);
    for (int i = 0; i < p->nmods; i++) {
        const Module *m = p->mods[i];
        if (m == p->main)
            continue;
        text = program_file_text(p, m->path, &len);
        wb_str(b, m->key);
        wb_str(b, m->path);
        wb_strn(b, text ? text : "", text ? len : 0);
    }
    put_func(b, c->upd);
    put_func(b, c->agg);
    wb_str(b, c->agg_spec);
    wb_i64(b, c->utype);
    wb_i64(b, c->freq);
    wb_i64(b, c->epochs);
    wb_i64(b, c->batchsize);
    wb_i64(b, c->nbatches);
    wb_i64(b, c->model_avg);
    wb_i64(b, (int64_t)c->seed);
    wb_i64(b, run->start_epoch);
    wb_value(b, c->hyper ? val_list_take(c->hyper) : val_none());
}

/* ---- rank 0 ---- */

static void put_stats(WBuf *b, const PsWorkerStats *s)
{
    wb_f64(b, s->compute);
    wb_f64(b, s->local_agg);
    wb_f64(b, s->wait);
    wb_f64(b, s->slice);
    wb_i64(b, s->pulls);
    wb_i64(b, s->pushes);
    wb_i64(b, s->batches);
    wb_i64(b, (int64_t)s->bytes_pulled);
    wb_i64(b, (int64_t)s->bytes_pushed);
}

static void get_stats(WRead *r, PsWorkerStats *s)
{
    s->compute = wr_f64(r);
    s->local_agg = wr_f64(r);
    s->wait = wr_f64(r);
    s->slice = wr_f64(r);
    s->pulls = wr_i64(r);
    s->pushes = wr_i64(r);
    s->batches = wr_i64(r);
    s->bytes_pulled = (uint64_t)wr_i64(r);
    s->bytes_pushed = (uint64_t)wr_i64(r);
}

static void mpi_failed(PsRun *run, const char *what)
{
    char msg[768];
    snprintf(msg, sizeof msg, "paramserv: %s: %s", what, mpi_error());
    ps_fail_msg(run, msg);
    mpi_mark_broken();
}

/* Send each proxy's pending mailbox to its rank. Returns whether anything
 * was sent. */
static bool send_models(PsRun *run)
{
    bool any = false;
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        pthread_mutex_lock(&run->mu);
        Value m = w->mailbox;
        w->mailbox = val_none();
        pthread_mutex_unlock(&run->mu);
        if (m.kind == VAL_NONE)
            continue;
        /* BSP delivers one model to every worker: the same cells go to
         * each rank, straight from the model's memory. */
        bool sent = mpi_send_value(w->rank, MM_MODEL, w->id, 0, 0, m);
        val_release(m);
        if (!sent) {
            mpi_failed(run, "sending a model");
            return any;
        }
        any = true;
    }
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
        ps_fail_msg(run, msg ? msg : "paramserv: a worker rank failed");
        free(msg);
        break;
    }
    case MM_DONE:
        get_stats(&rd, &w->st);
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
    mpi_lock();
    double t0 = clock_now_sec();
    /* The CALL: the common part, then this worker's id, k and partition. */
    WBuf common = {0};
    put_common(&common, I, run, c);
    for (int i = 0; i < n && !atomic_load(&run->abort); i++) {
        PsWorker *w = &run->w[i];
        WBuf b = {0};
        wb_bytes(&b, common.p, common.len);
        if (common.oom)
            b.oom = true;
        wb_i64(&b, w->id);
        wb_i64(&b, n);
        wb_value(&b, val_matrix_take(w->part.X));
        wb_value(&b, val_matrix_take(w->part.Y));
        if (!mpi_send_take(w->rank, MM_CALL, w->id, 0, 0, &b))
            mpi_failed(run, "sending a paramserv call");
        seen[i] = clock_now_sec();
    }
    wb_free(&common);
    t_rpc += clock_now_sec() - t0;
    /* The bridge: models out, pushes in, until every worker is done. */
    int ndone = 0;
    long idle = IDLE_US;
    while (ndone < n && !atomic_load(&run->abort)) {
        double t1 = clock_now_sec();
        bool busy = send_models(run);
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
        if (busy || mpi_sends_pending()) {
            idle = IDLE_US;
        } else {
            pthread_mutex_lock(&run->mu);
            if (!atomic_load(&run->abort))
                cond_wait_us(&run->pump_cv, &run->mu, idle);
            pthread_mutex_unlock(&run->mu);
            idle = idle * 2 < IDLE_MAX_US ? idle * 2 : IDLE_MAX_US;
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
            usleep(IDLE_US);
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
    while (mpi_sends_pending() && clock_now_sec() - tend < mpi_timeout())
        if (!mpi_progress())
            break;
    mpi_unlock();
    run->rpc_time = t_rpc;
    free(seen);
}

/* ---- worker rank ---- */

typedef struct Remote {
    PsRun run;
    PsConfig cfg;
    PsWorker w;
    Program *prog;
    ShippedFile *files;
    int nfiles;
    CmdArg *args;
    int nargs;
    char *main_path, *main_text, *agg_spec;
    Value hyper;
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
    for (int i = 0; i < r->nfiles; i++) {
        free((char *)r->files[i].key);
        free((char *)r->files[i].path);
        free((char *)r->files[i].text);
    }
    free(r->files);
    for (int i = 0; i < r->nargs; i++) {
        free((char *)r->args[i].name);
        free((char *)r->args[i].text);
    }
    free(r->args);
    free(r->main_path);
    free(r->main_text);
    free(r->agg_spec);
    val_release(r->hyper);
    wb_free(&r->prints);
}

static char *dup_n(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n)
            memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* Decode a CALL and rebuild the program from the shipped files. NULL on
 * success, else a malloc'd message. */
static char *remote_setup(Remote *r, WRead *rd)
{
    size_t len;
    r->main_path = wr_str(rd);
    const char *t = wr_strn(rd, &len);
    r->main_text = dup_n(t ? t : "", len);
    size_t main_len = len;
    r->nargs = (int)wr_i64(rd);
    if (rd->bad || r->nargs < 0 || (size_t)r->nargs > rd->len)
        return strdup("malformed paramserv call");
    r->args = calloc((size_t)r->nargs + 1, sizeof *r->args);
    for (int i = 0; r->args && i < r->nargs; i++) {
        r->args[i].name = wr_str(rd);
        r->args[i].text = wr_str(rd);
    }
    int64_t nf = wr_i64(rd);
    if (rd->bad || !r->args || nf < 0 || (size_t)nf > rd->len)
        return strdup("malformed paramserv call");
    r->files = calloc((size_t)nf + 1, sizeof *r->files);
    if (!r->files)
        return strdup("out of memory");
    for (; r->nfiles < nf && !rd->bad; r->nfiles++) {
        ShippedFile *f = &r->files[r->nfiles];
        f->key = wr_str(rd);
        f->path = wr_str(rd);
        t = wr_strn(rd, &len);
        f->text = dup_n(t ? t : "", len);
        f->len = len;
    }
    char *ukey = wr_str(rd), *uname = wr_str(rd), *akey = wr_str(rd), *aname = wr_str(rd);
    PsConfig *c = &r->cfg;
    r->agg_spec = wr_str(rd);
    c->agg_spec = r->agg_spec;
    c->utype = (PsUtype)wr_i64(rd);
    c->freq = (PsFreq)wr_i64(rd);
    c->epochs = wr_i64(rd);
    c->batchsize = wr_i64(rd);
    c->nbatches = wr_i64(rd);
    c->model_avg = wr_i64(rd) != 0;
    c->seed = (uint64_t)wr_i64(rd);
    r->run.start_epoch = wr_i64(rd);
    r->hyper = wr_value(rd);
    c->hyper = r->hyper.kind == VAL_LIST ? r->hyper.l : NULL;
    r->w.id = (int)wr_i64(rd);
    int64_t k = wr_i64(rd);
    Value X = wr_value(rd), Y = wr_value(rd);
    char *err = NULL;
    if (rd->bad || !r->main_path || !r->main_text || !ukey || !uname || !akey || !aname || X.kind != VAL_MATRIX ||
        Y.kind != VAL_MATRIX || c->batchsize <= 0 || c->nbatches <= 0 || k <= 0) {
        err = strdup("malformed paramserv call");
        val_release(X);
        val_release(Y);
    } else {
        r->w.part.X = X.m;
        r->w.part.Y = Y.m;
        r->prog = program_new();
        if (!r->prog) {
            free(ukey);
            free(uname);
            free(akey);
            free(aname);
            return strdup("out of memory");
        }
        program_set_args(r->prog, r->args, r->nargs);
        r->prog->shipped = r->files;
        r->prog->nshipped = r->nfiles;
        Node **stmts;
        int nst;
        err = program_load_main(r->prog, r->main_path, r->main_text, main_len, &stmts, &nst);
        if (!err) {
            c->upd = program_find_func(r->prog, ukey, uname);
            c->agg = program_find_func(r->prog, akey, aname);
            if (!c->upd || !c->agg) {
                size_t cap = strlen(ukey) + strlen(uname) + strlen(akey) + strlen(aname) + 96;
                err = malloc(cap);
                if (err)
                    snprintf(err, cap, "cannot find %s::%s or %s::%s in the shipped program", ukey, uname, akey,
                             aname);
            }
        }
    }
    free(ukey);
    free(uname);
    free(akey);
    free(aname);
    return err;
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

static void send_fail(const char *msg)
{
    WBuf b = {0};
    wb_str(&b, msg);
    mpi_send_take(0, MM_FAIL, 0, 0, 0, &b);
}

/* One paramserv call on a worker rank, from its CALL to rank 0's END. */
static void serve_call(MpiMsg *call)
{
    Remote *r = calloc(1, sizeof *r);
    char where[320];
    snprintf(where, sizeof where, "rank %d on %s", mpi_rank(), mpi_host(mpi_rank()));
    if (!r) {
        send_fail("paramserv: out of memory on a worker rank");
        return;
    }
    PsRun *run = &r->run;
    run->cfg = &r->cfg;
    run->w = &r->w;
    run->k = 1;
    run->where = where;
    r->hyper = val_none();
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->server_cv, NULL);
    pthread_cond_init(&run->pump_cv, NULL);
    pthread_cond_init(&r->w.cv, NULL);
    r->w.run = run;
    r->w.mailbox = val_none();
    r->w.slot = val_none();
    WRead rd = {.p = call->data, .len = call->len};
    char *err = remote_setup(r, &rd);
    bool started = false, ok = true;
    pthread_t th;
    if (err) {
        size_t cap = strlen(err) + 400;
        char *msg = malloc(cap);
        if (msg) {
            snprintf(msg, cap, "paramserv: worker %d (%s) cannot load the program: %s", r->w.id + 1, where, err);
            send_fail(msg);
        }
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
        /* BLAS: this rank's share of its host's thread budget (the cores, or
         * --threads / DML_THREADS), split among the ranks on that host. */
        const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long local = ls ? atol(ls) : 1;
        int per = blas_budget_share(local > 0 && local < 4096 ? (int)local : 1);
        blas_set_threads(per);
        worker_interp_init(&w->I, r->prog, rng_mix3(r->cfg.seed, (uint64_t)w->id + 1, 0), &run->abort, per,
                           r->out ? r->out : stdout);
        w->I.frame = &w->top;
        started = worker_start(&th, remote_thread, r);
        if (!started)
            send_fail("paramserv: a worker rank cannot start its thread");
    }
    /* The bridge: pushes out, models in, heartbeats, until END. */
    double last_send = clock_now_sec();
    long idle = IDLE_US;
    bool reported = !started;
    for (;;) {
        bool busy = false;
        if (started && send_pushes(r, &ok)) {
            busy = true;
            last_send = clock_now_sec();
        }
        pthread_mutex_lock(&run->mu);
        bool fin = r->finished;
        pthread_mutex_unlock(&run->mu);
        if (fin && !reported) {
            send_pushes(r, &ok);    /* the last push and prints first */
            if (run->failure)
                send_fail(run->failure);
            else if (!atomic_load(&run->abort)) {
                WBuf b = {0};
                put_stats(&b, &r->w.st);
                ok = ok && mpi_send_take(0, MM_DONE, r->w.id, 0, 0, &b);
                wb_free(&b);
            }
            reported = true;
            busy = true;
            last_send = clock_now_sec();
        }
        if (!ok || !mpi_progress())
            break;          /* rank 0 cannot be reached: mpirun ends the job */
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            break;
        if (got) {
            busy = true;
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
        } else if (busy || mpi_sends_pending()) {
            idle = IDLE_US;
        } else {
            pthread_mutex_lock(&run->mu);
            if (!r->finished && run->ninbox == 0)
                cond_wait_us(&run->server_cv, &run->mu, idle);
            pthread_mutex_unlock(&run->mu);
            idle = idle * 2 < IDLE_MAX_US ? idle * 2 : IDLE_MAX_US;
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
}

int ps_mpi_worker_loop(void)
{
    int status = 1;
    mpi_lock();
    int idle_us = IDLE_US;
    for (;;) {
        if (!mpi_progress())
            break;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            break;
        if (got == 0) {
            /* Between calls nothing is urgent: back off to 10 ms. */
            usleep((useconds_t)idle_us);
            if (idle_us < 10000)
                idle_us *= 2;
            continue;
        }
        idle_us = IDLE_US;
        if (m.type == MM_SHUTDOWN) {
            status = (int)m.epoch;
            mpi_msg_free(&m);
            break;
        }
        if (m.type == MM_CALL)
            serve_call(&m);
        else if (m.type == MM_END)
            mpi_send_take(0, MM_ENDACK, m.worker, 0, 0, NULL);
        mpi_msg_free(&m);
    }
    /* Let the last messages (ENDACK) leave before MPI closes. */
    double t0 = clock_now_sec();
    while (mpi_sends_pending() && clock_now_sec() - t0 < mpi_timeout() && mpi_progress())
        usleep(IDLE_US);
    mpi_unlock();
    return status;
}
