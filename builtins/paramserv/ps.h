/* SPDX-License-Identifier: Apache-2.0
 * paramserv internals: the configuration checked before any thread starts,
 * the data partitions, and the shared state of one run (server + k workers).
 *
 * Files: args.c checks the call, partition.c splits the data, run.c sets up
 * and tears down one run, server.c and worker.c hold the server and worker
 * logic, channel.c the server's end of the seam, stats.c --stats,
 * history.c the per-epoch history and the progress line, readset.c which
 * model entries a worker's functions read, tree.c the order in which a
 * BSP round's pushes are added; params.h/params.c declare paramserv's
 * parameters. The transports (PsTransportOps below): tp_local.c
 * (threads), tp_mpi_server.c and tp_mpi_worker.c (Open MPI: rank 0's side
 * and the worker ranks' side, tp_mpi_common.c what they share,
 * tp_mpi_tree.c worker groups and the pushes' tree of ranks), wire.c the
 * byte format of what crosses it, msg.c the payloads of its messages and
 * the checks a receiver applies.
 *
 * Threads: the calling thread starts one server thread and has the
 * transport run the k workers. Workers and server talk only through the
 * transport: a worker PUSHES a payload (gradients or, with modelAvg, its
 * local model) through its port into the server's inbox and PULLS the
 * model the server delivered. Every field of PsRun below the "shared"
 * marker is protected by PsRun.mu; the condition variables say who waits
 * on what. */
#ifndef DML_BUILTINS_PARAMSERV_PS_H
#define DML_BUILTINS_PARAMSERV_PS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../base/strbuf.h"
#include "../../runtime/interp.h"
#include "../../runtime/program.h"
#include "../../runtime/workers.h"
#include "../registry.h"

typedef enum PsUtype { PS_UTYPE_BSP, PS_UTYPE_ASP, PS_UTYPE_SBP, PS_UTYPE_SSP } PsUtype;
typedef enum PsFreq { PS_FREQ_BATCH, PS_FREQ_EPOCH, PS_FREQ_NBATCHES } PsFreq;
typedef enum PsScheme { PS_SCHEME_DC, PS_SCHEME_DRR, PS_SCHEME_DR, PS_SCHEME_OR } PsScheme;
typedef enum PsCkpt { PS_CKPT_NONE, PS_CKPT_EPOCH, PS_CKPT_EPOCH10 } PsCkpt;
typedef enum PsDispatch { PS_DISPATCH_STATIC, PS_DISPATCH_DYNAMIC } PsDispatch;

struct PsTransportOps;

/* Everything paramserv() was called with, validated. Borrowed values. The
 * options are read as params.h declares them. */
typedef struct PsConfig {
    List *model;
    Matrix *X, *Y;
    Matrix *Xv, *Yv;            /* NULL when no validation data */
    List *hyper;                /* NULL when not given */
    const FuncDef *upd, *agg, *val;     /* val NULL when validation is off */
    PsUtype utype;
    PsFreq freq;
    PsScheme scheme;
    int64_t epochs, batchsize, k, nbatches, backup, staleness;
    bool model_avg;
    uint64_t seed;              /* from seed= or the caller's RNG */
    bool seed_given;            /* seed= was given (the run is then repeatable) */
    const char *upd_spec, *agg_spec, *val_spec;     /* "ns::fn" as written */
    const char *mode;           /* as written; NULL when not given */
    PsCkpt ckpt;
    const char *ckpt_path;
    char *ckpt_sig;             /* owned: what a checkpoint of this call records (ps_ckpt_prepare) */
    bool verbose;               /* progress lines through the caller's sink */
    bool fed;                   /* never set: where the federated-only arguments would go */
    PsDispatch dispatch;        /* STATIC: each worker its partition; DYNAMIC: tasks to whoever is free (dispatch.c) */
    bool trace;                 /* --trace: collect events */
    int64_t slow_worker;        /* DML_PS_SLOW=W:F: worker W-1 (-1: none) sleeps (F-1) x each batch's compute time */
    double slow_factor;
    const struct PsTransportOps *tp;    /* where the workers run (mode=, transport.c) */
    const char *record_path, *replay_path;  /* record=, replay= (NULL when not given) */
    struct PsRecord *rec;       /* owned: what record.c keeps for them (ps_record_prepare) */
    int64_t servers;            /* servers=: server ranks the model is sharded over (tp_mpi_shard.c) */
} PsConfig;

/* Parse and check the arguments of one call (every error names the argument).
 * Upstream's order: presence and types, option values, the functions, and
 * only then the model's contents and the data. Clamps batchsize and nbatches
 * to the number of rows (no partition has more). */
Status ps_config(Interp *I, const BArgs *a, PsConfig *c);
/* Frees what the config owns (not the borrowed values); safe after a failed
 * ps_config and twice. */
void ps_config_free(PsConfig *c);

/* Checks what agg returned against the model it was given: a list of the
 * same number of matrices, each of the same shape; the error names agg.
 * Called after every agg call, on the server and in the workers. */
Status ps_check_agg_result(Interp *I, const PsConfig *c, const List *model, Value result);

/* One worker's rows of the data. */
typedef struct PsPart {
    Matrix *X, *Y;              /* owned */
} PsPart;

/* Split X/Y by the scheme; returns the number of partitions (<= k) in *np. */
Status ps_partition(Interp *I, const PsConfig *c, PsPart **parts, int64_t *np);
void ps_parts_free(PsPart *parts, int64_t np);

/* Element-wise list arithmetic over lists of equally shaped matrices. */
/* acc (owned or NONE) + g (borrowed) -> owned; in place when acc is unshared. */
Status ps_list_add_take(Interp *I, Value acc, const List *g, Value *out);
/* lists[0] + lists[1] + ... + lists[n-1] (n >= 1, all consumed, also on
 * failure; the slots are left NONE): each cell summed in list order, so the
 * bits are those of adding the lists one after the other; one pass, in
 * place in lists[0]'s matrices when unshared, large matrices split over the
 * kernel threads I may use (runtime/pool.h). */
Status ps_list_sum_take(Interp *I, Value *lists, int n, Value *out);
/* x[j] += ys[0][j] + ... + ys[ny-1][j] added in that order, j in [0, len),
 * over I's kernel threads when len is large. */
void ps_add_into(const Interp *I, double *x, const double *const *ys, int ny, int64_t len);
/* l * s, in place when unshared; consumes l. */
Status ps_list_scale_take(Interp *I, Value l, double s, Value *out);
/* Check that a model list holds only matrices. */
Status ps_check_model(Interp *I, const List *l, const char *what);
/* Bytes of matrix data in a list (what would cross a network). */
uint64_t ps_list_bytes(const List *l);
/* CPU seconds (user + system) of this whole process, every thread. */
double ps_process_cpu(void);
/* Which entries of a model of n entries f can read through its parameter
 * 'model' (readset.c): need[i] for entry i+1. false (need meaningless) when the
 * scan cannot tell, i.e. f may read any entry. Under Open MPI a pull then
 * carries only the needed entries. */
bool ps_model_reads(const FuncDef *f, int64_t n, bool *need);
/* The entries of a model of n entries that a pull must carry: what upd
 * reads, and what agg reads when the workers call it too (modelAvg, or a
 * freq that steps the local model between pushes). NULL when that is every
 * entry (or out of memory); else a malloc'd array of n flags. */
bool *ps_pull_entries(const PsConfig *c, int64_t n);
/* Whether agg computes entry i of its result cell by cell from entry i of
 * the model and the gradients (and entries shaped alike) and the
 * hyperparameters, so that servers=S may split every entry into S ranges
 * of cells (aggcheck.c); false with why[] saying what it cannot show. */
bool ps_agg_cellwise(const FuncDef *agg, const List *model, char *why, size_t whylen);
/* servers=S, after the functions and the data are checked (tp_mpi_shard.c):
 * under mpirun the ranks, the options it supports and agg; outside
 * mpirun (or mode="LOCAL") S is accepted and changes nothing, but agg is
 * checked all the same, so that a script refused on a cluster is refused
 * on a laptop too. k_given: k= was given (else k is the worker ranks left
 * once the server ranks are taken). */
Status ps_servers_check(Interp *I, PsConfig *c, bool k_given);

/* Checkpoints (checkpoint.c): the model, the number of completed epochs and
 * the signature of the call that wrote them (c->ckpt_sig: model shapes, a
 * fingerprint of features and labels, the options that shape training),
 * with a checksum over the whole file; written atomically (temporary file +
 * rename).
 *
 * ps_ckpt_prepare runs before training when checkpointing is on: it builds
 * c->ckpt_sig, removes temporaries that a killed run left next to the
 * checkpoint, and proves that the checkpoint can be written (an unwritable
 * folder is an error now, not after the first epoch). */
Status ps_ckpt_prepare(Interp *I, PsConfig *c);
Status ps_ckpt_write(Interp *I, const PsConfig *c, const List *model, int64_t epochs_done);
/* Loads c->ckpt_path: *found is false when there is no file. A corrupt file,
 * or one written by another call (other data, shapes or options), is an
 * error saying what differs. With c->verbose, says what resuming skips. */
Status ps_ckpt_resume(Interp *I, const PsConfig *c, Value *model, int64_t *epochs_done, bool *found);
/* The reading itself, from the open file f (its bytes are never trusted:
 * a damaged or hostile file is an error naming what is wrong, nothing is
 * allocated that the model does not need): the model in *model (owned)
 * and the epochs done, or an error. Prints nothing. */
Status ps_ckpt_read(Interp *I, const PsConfig *c, FILE *f, Value *model, int64_t *epochs_done);

/* The signature of the call for a record (record.c): the checkpoint's,
 * plus epochs, dispatch and the seed (malloc'd; NULL: out of memory). */
char *ps_call_sig(const PsConfig *c);
/* The first difference of two signatures (a word of 'mine' against the
 * other's, or *a NULL and *b a word only 'theirs' has); false: equal. */
bool ps_sig_difference(const char *mine, const char *theirs, const char **a, size_t *alen, const char **b,
                       size_t *blen);
uint64_t ps_hash_bytes(const void *p, size_t len);
/* A temporary next to 'path' (path.tmpPID.XXXXXX, *tmp malloc'd): the fd,
 * or -1 with errno. Temporaries a killed run left next to 'path' go
 * (io_remove_stale_tmps, builtins/io/io_formats.h: the same naming). */
int ps_open_tmp(const char *path, char **tmp);
/* Writes len bytes to 'path' all or nothing (a temporary from ps_open_tmp,
 * fsync'd, renamed over path); false with errno set, nothing left behind. */
bool ps_write_file(const char *path, const char *p, size_t len);

/* Record and replay of asynchronous runs (record.c, issue 26):
 * record= writes the order in which the server applied the pushes (each
 * one's worker, epoch and batch); replay= makes the server apply them in
 * that order, whatever the timing, so the model is the recorded run's to
 * the bit. ps_record_prepare runs before training: checks the pair, loads
 * and checks a replay file against the call, proves the record path
 * writable. */
/* A growing list of pushes as (worker, epoch, batch) triples: a record's
 * order (record.c), and the order rank 0 hands the server shards and they
 * follow (tp_mpi_shard.c). */
typedef struct PsOrder {
    int64_t *e;                 /* 3 * n entries */
    int64_t n, cap;
} PsOrder;
/* Room for 'more' triples after the n there; false when out of memory. */
bool ps_order_reserve(PsOrder *o, int64_t more);
bool ps_order_push(PsOrder *o, int64_t worker, int64_t epoch, int64_t batch);
void ps_order_free(PsOrder *o);

typedef struct PsRecord PsRecord;
Status ps_record_prepare(Interp *I, PsConfig *c);
/* Server: one push applied (recording). */
Status ps_record_add(PsRecord *r, Interp *I, int worker, int64_t epoch, int64_t batch);
/* Replaying: the push the server must apply next (false: the record has
 * no more). */
bool ps_replay_next(const PsRecord *r, int *worker, int64_t *epoch, int64_t *batch);
void ps_replay_advance(PsRecord *r);
bool ps_replaying(const PsRecord *r);
/* After a successful run: writes the record file (atomically). */
Status ps_record_finish(Interp *I, const PsConfig *c);
void ps_record_free(PsRecord *r);

/* Epoch bookkeeping of the server: counts pushes per epoch and reports the
 * epochs that complete, in order. Memory is proportional to how far the
 * fastest worker is ahead of the slowest, never to 'epochs'. */
typedef struct PsEpochs {
    int64_t needed;             /* pushes that complete one epoch */
    int64_t base;               /* oldest incomplete epoch */
    int64_t *count;             /* count[i]: pushes of epoch base+i */
    int64_t len, cap;
} PsEpochs;
void ps_epochs_init(PsEpochs *p, int64_t needed, int64_t first_epoch);
/* Records one push of epoch e; the epochs *first .. *first + *ndone - 1
 * end with it (in order: an epoch ends once it and every earlier one are
 * complete). */
Status ps_epochs_push(Interp *I, PsEpochs *p, int64_t e, int64_t *first, int64_t *ndone);
void ps_epochs_free(PsEpochs *p);

/* a * b, or INT64_MAX when that overflows (push totals for huge 'epochs'). */
static inline int64_t ps_mul_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Train: partition, start the server and k workers, join them; *out is the
 * final global model (owned); *hist (when not NULL) the per-epoch history
 * (history.c). */
Status ps_run(Interp *I, const PsConfig *c, Value *out, Value *hist);

/* Columns of the history matrix (doc/paramserv.md "History"). */
enum {
    PS_HIST_EPOCH, PS_HIST_SECONDS, PS_HIST_UPDATES, PS_HIST_LOSS, PS_HIST_ACCURACY, PS_HIST_TOTAL,
    PS_HIST_BATCHES, PS_HIST_COLS
};
typedef struct PsHistory {
    double *rows;               /* n rows of PS_HIST_COLS */
    int64_t n, cap;
} PsHistory;

/* Per-thread statistics (seconds, counts), summed after the run. */
typedef struct PsWorkerStats {
    double compute, local_agg, wait, slice;
    double cpu;                 /* a worker rank: its process's CPU seconds from CALL to DONE */
    int64_t pulls, pushes, batches;
    uint64_t bytes_pulled, bytes_pushed;
} PsWorkerStats;

/* --trace (trace.c): one event of the timeline. */
enum { PS_EV_WAIT, PS_EV_COMPUTE, PS_EV_LOCAL, PS_EV_PUSH, PS_EV_APPLY, PS_EV_VAL, PS_EV_CKPT, PS_EV_BACKUP };
typedef struct PsEvent {
    int kind;
    double t0, dur;             /* seconds (clock_now_sec) */
    int64_t epoch, batch;
    int64_t worker, version, staleness;     /* -1: not said */
} PsEvent;
typedef struct PsEvents {
    PsEvent *e;
    int64_t n, cap, lost;
    bool on;                    /* collecting */
} PsEvents;
void ps_trace_set_path(const char *path);
bool ps_trace_on(void);
/* Before a call trains: the trace path can be written. */
Status ps_trace_prepare(Interp *I);
void ps_ev_add(PsEvents *b, int kind, double t0, double t1, int64_t epoch, int64_t batch);
void ps_ev_add_x(PsEvents *b, int kind, double t0, double t1, int64_t epoch, int64_t batch, int64_t worker,
                 int64_t version, int64_t staleness);
void ps_ev_free(PsEvents *b);
/* After a call: its events join the file (rewritten whole). */
struct PsRun;
Status ps_trace_write(Interp *I, const struct PsRun *run);

typedef struct PsMsg {
    int worker;
    int64_t epoch;
    int64_t batch;              /* 1-based number of the last batch it covers */
    Value payload;              /* owned list */
    bool summed;                /* BSP tree: no payload, it was added into an earlier worker's (tree.c) */
} PsMsg;

/* A unit of work under dispatch=DYNAMIC (dispatch.c): the batches of one
 * push of one partition in one epoch (one batch with freq=BATCH, nbatches
 * of them with NBATCHES, the partition's whole epoch with EPOCH). Its
 * result depends only on the task and the model it starts from: its rows
 * and its random stream (seeded from seed, partition, epoch and group)
 * follow the task, not the worker that runs it. */
typedef struct PsTask {
    int64_t epoch;              /* 0-based; -1: no more work, the loop ends */
    int64_t id;                 /* within the epoch (what the push's 'batch' carries) */
    int64_t part, group;        /* partition, and which of its pushes in the epoch (0-based) */
    int64_t j0, j1;             /* its batches [j0, j1) of the partition */
    Matrix *X, *Y;              /* owned references: rows [row0, row1) are the task's */
    int64_t row0, row1;
} PsTask;
/* Releases a task's matrices; it is then "no task" (epoch -1). */
static inline void ps_task_clear(PsTask *t)
{
    mat_release(t->X);
    mat_release(t->Y);
    *t = (PsTask){.epoch = -1};
}

/* ---- the worker loop (worker.c) and its port ----
 * A worker runs the same loop wherever it is (a thread of the calling
 * process, or a worker rank under Open MPI); it reaches the server only
 * through its port, which the transport provides. */
struct PsLoop;
typedef struct PsPortOps {
    /* Block until the next model arrives (owned in *model); ST_ERR when the
     * call was aborted. Under DYNAMIC also the task to run with it (taken
     * by the caller). */
    Status (*pull)(struct PsLoop *l, Value *model, PsTask *task);
    /* Hand the server a payload (consumed) covering batches up to 'batch'
     * (1-based) of 'epoch'. */
    void (*push)(struct PsLoop *l, int64_t epoch, int64_t batch, Value payload);
    /* The loop failed with l->I's pending error, 'who' says where: stop the
     * call. */
    void (*fail)(struct PsLoop *l, const char *who);
    /* One more batch done (the progress line); may be NULL. */
    void (*batch_done)(struct PsLoop *l);
    /* The loop returned (on the loop's thread); may be NULL. */
    void (*done)(struct PsLoop *l);
} PsPortOps;

typedef struct PsLoop {
    const PsConfig *cfg;        /* the scalar options, upd, agg, hyper */
    const PsPortOps *port;
    void *ctx;                  /* the port's */
    int id;                     /* 0-based worker number */
    int64_t start_epoch;
    int64_t nbatches;           /* batches per epoch of this worker */
    int64_t groups;             /* pulls/pushes per epoch */
    PsPart part;                /* owned */
    Interp I;
    CallFrame top;
    PsWorkerStats st;
    PsEvents ev;                /* --trace */
    const char *where;          /* where it runs, for messages ("rank R on HOST"); NULL on a thread */
} PsLoop;

/* Batches and pulls per epoch of a worker with 'rows' rows. */
void ps_worker_shape(const PsConfig *c, int64_t rows, int64_t *nbatches, int64_t *groups);
/* Sets up l for worker 'id' of call c with partition 'part' (taken): its
 * Interp over 'prog' ('threads' kernel threads, printing to 'out', stopped
 * by *abort). */
void ps_loop_init(PsLoop *l, const PsConfig *c, Program *prog, int id, int64_t start_epoch, PsPart part,
                  const PsPortOps *port, void *ctx, atomic_int *abort, int threads, FILE *out);
/* Runs l's loop on a new thread (port->done when it returns); false when
 * the thread cannot start. */
bool ps_loop_start(PsLoop *l, pthread_t *th);
/* Frees what ps_loop_init set up (after the thread is joined). */
void ps_loop_free(PsLoop *l);

/* ---- the server's view of a worker ---- */
typedef struct PsWorker {
    int id;
    int64_t rows;               /* of its partition */
    int64_t nbatches;           /* batches per epoch of this worker */
    int64_t groups;             /* pulls/pushes per epoch */
    PsWorkerStats st;           /* filled by the transport when the worker is done */
    PsEvents ev;                /* --trace: its events, handed over by the transport when it is done */
    int64_t pulled;             /* server: the model version its last delivery carried */
    char *where;                /* malloc'd by the transport: where it runs ("rank R on HOST"); NULL on a thread */
    /* server thread only */
    int64_t pushed;             /* pushes accepted so far (SSP clock) */
    int64_t straggle;           /* SBP: pushes to drop */
    bool deferred;              /* SSP: a model is owed once the clock allows */
    bool marked;                /* BSP/SBP: pushed in the current round */
    Value slot;                 /* BSP/SBP: the pushed payload of this round */
} PsWorker;

/* ---- transports (issue 25) ----
 * How the server reaches its workers: start them, hand them models, take
 * their pushes (into run->inbox, ps_enqueue_push_take), finish. The server
 * (server.c) and run.c know nothing else of where the workers run.
 * tp_local.c runs them as threads of this process; tp_mpi_server.c (rank
 * 0's side) and tp_mpi_worker.c (the worker ranks' side) on Open MPI
 * ranks. */
struct PsRun;
typedef struct PsTransportOps {
    const char *name;
    /* The workers run in processes with thread budgets of their own. */
    bool own_budgets;
    /* The workers cannot report each batch as it is done: the server counts
     * a push's batches for the progress line. */
    bool progress_by_push;
    /* k when paramserv is called without k= (NULL: one worker per core). */
    int (*default_k)(void);
    /* Whether c can run here (k workers); the error names why not. NULL:
     * any call can. */
    Status (*check)(Interp *I, const PsConfig *c);
    /* Sets up run->k workers over the partitions parts[0..k) (their
     * matrices taken) and labels run->w[i].where; an error in I. */
    Status (*init)(struct PsRun *run, PsPart *parts);
    /* Hands worker i 'model' (consumed) for its next pull, and under
     * DYNAMIC the task to run with it (NULL: STATIC; epoch -1: stop; its
     * matrices are the caller's). Any thread. */
    void (*deliver)(struct PsRun *run, int i, Value model, const PsTask *task);
    /* On the calling thread once the server thread runs: runs the workers
     * until every one is done or the call aborted, and waits for them; fills
     * run->w[i].st. Failures through ps_fail / ps_fail_msg. */
    void (*serve)(struct PsRun *run);
    /* With run->mu held, on abort: wakes every thread of the transport that
     * waits. */
    void (*wake)(struct PsRun *run);
    /* --stats lines of the transport: what the call cost the machine(s)
     * (after the worker count), and what crossed (or would cross) a network
     * (after the pulls/pushes; may set sum->bytes_pulled). */
    void (*stats_cpu)(struct PsRun *run, StrBuf *b, double cpu, const PsWorkerStats *sum);
    void (*stats_net)(struct PsRun *run, StrBuf *b, PsWorkerStats *sum);
    /* Frees what init set up (after serve). */
    void (*free)(struct PsRun *run);
    /* After the server thread is joined, when the run did not fail: makes
     * run->model the whole model (servers=S: joins the shards); an error
     * in run->caller. NULL: nothing to do. */
    Status (*gather)(struct PsRun *run);
    /* Server thread, at the end of epoch e (0-based), before validation and
     * the checkpoint: *whole (NONE on entry) the whole model when the
     * server holds only a shard and they need it (servers=S); left NONE:
     * run->model will do. An error in run->SI. NULL: nothing to do. */
    Status (*epoch_model)(struct PsRun *run, int64_t e, Value *whole);
    /* Server thread, after it handled worker's push (epoch, batch) of the
     * call, in the order it handled them (servers=S: the other servers
     * follow that order under SBP). NULL: nothing to do. */
    void (*applied)(struct PsRun *run, int worker, int64_t epoch, int64_t batch);
} PsTransportOps;

extern const PsTransportOps ps_tp_local;
extern const PsTransportOps ps_tp_mpi;
/* mode= (NULL when not given) -> the transport: LOCAL, REMOTE_MPI and
 * REMOTE_SPARK (Open MPI ranks, only under mpirun); by default the worker
 * ranks under mpirun, else threads. */
Status ps_pick_transport(Interp *I, const char *mode, const PsTransportOps **tp);

typedef struct PsRun {
    const PsConfig *cfg;
    const PsTransportOps *tp;
    void *tps;                  /* the transport's state */
    struct PsDyn *dyn;          /* dispatch=DYNAMIC: the tasks (dispatch.c; server thread) */
    Interp *caller;
    PsWorker *w;
    int k;                      /* effective workers */
    int64_t start_epoch;
    double t_start;
    int64_t batches_per_epoch;  /* mini-batches of all workers in one epoch */
    PsHistory hist;             /* server thread, then the caller after the joins */
    /* progress line (history.c): any thread */
    bool progress;              /* set before the threads start */
    bool prog_plain;            /* whole lines at a modest rate, not one rewritten line */
    double prog_after;          /* seconds into an epoch before the line shows */
    pthread_mutex_t prog_mu;    /* orders the line with the epoch lines; made when 'progress' */
    bool prog_shown;            /* under prog_mu */
    atomic_int_least64_t prog_batches, prog_epoch;
    _Atomic double prog_last, prog_epoch_t0;
    /* server-thread-only state */
    Interp SI;
    CallFrame server_top;       /* the server Interp's bottom frame */
    Value model;                /* the global model (owned) */
    int64_t epoch_pushes_needed;
    PsEpochs epochs;            /* pushes received per epoch */
    double agg_time, val_time, ckpt_time, epoch_t0;
    double sum_time;            /* adding the gradients of BSP/SBP rounds */
    int update_threads;         /* the most kernel threads an update was lent */
    int host_servers;           /* server ranks on this host, this one included (servers=S; 0: one) */
    int64_t updates, epoch_updates;
    PsEvents sev;               /* --trace: the server's events */
    /* shared: protected by mu */
    pthread_mutex_t mu;
    pthread_cond_t server_cv;   /* the server waits here for pushes */
    PsMsg *inbox;
    int64_t ninbox, capinbox;
    atomic_int abort;           /* set on failure; polled by every Interp */
    char *failure;              /* first failure message (malloc'd) */
} PsRun;

/* ---- channel.c: the server's end of the seam ---- */
/* Record the first failure (I's pending error prefixed by 'who') and stop
 * everyone. An "interrupted" error caused by an earlier abort is not a
 * failure of its own. Any thread. */
void ps_fail(PsRun *run, Interp *I, const char *who);
/* The same with a finished message (a remote worker's). */
void ps_fail_msg(PsRun *run, const char *msg);
/* Append a push to the server's inbox (consumes payload, also on failure);
 * NONE: a BSP push that a worker rank added into an earlier worker's (tree.c). */
Status ps_enqueue_push_take(PsRun *run, int worker, int64_t epoch, int64_t batch, Value payload);
/* Server: hand the current model to worker w (through the transport). */
void ps_deliver(PsRun *run, PsWorker *w);
/* Server: wait for pushes and move them all to *batch; the count, or -1
 * when the run was aborted (or interrupted by Ctrl-C). */
int64_t ps_take_pushes(PsRun *run, PsMsg **batch, int64_t *cap);

/* ---- worker.c / server.c / stats.c ---- */
Value ps_hyper_arg(const PsConfig *c);
Status ps_call_named(Interp *I, const FuncDef *f, const char *const *names, const Value *vals, int n, Value *outs,
                     int nout);
Status ps_call_agg(Interp *I, const PsConfig *c, Value model, Value grads, Value *out);
void ps_loop_run(PsLoop *l);
void *ps_server_main(void *arg);         /* arg: PsRun */
/* Server: apply one push (ASP/SSP: agg, or modelAvg's elastic step;
 * payload consumed), or a round's payloads summed in list order (BSP/SBP:
 * agg, or modelAvg's mean; lists consumed; 'waiting' workers wait for
 * it); count a push of epoch e (ends the epoch when it completes it). */
Status ps_apply_one(PsRun *run, Value payload);
Status ps_apply_round(PsRun *run, Value *lists, int cnt, int waiting);
/* The same over n slots (NONE: no payload there) for 'members' pushes. */
Status ps_apply_round_n(PsRun *run, Value *slots, int n, int members, int waiting);

/* ---- tree.c: the order of a round's sum (issue 25) ---- */
/* Where the tree splits the workers [lo, hi) (hi - lo >= 2). */
int64_t ps_tree_mid(int64_t lo, int64_t hi);
/* The slots [lo, hi) (NONE: absent) added in the tree's order into *out
 * (NONE when all are absent); the slots are consumed, also on failure. */
Status ps_tree_sum_take(Interp *I, Value *slots, int64_t lo, int64_t hi, Value *out);
/* k workers over at most 'ranks' ranks: groups that are nodes of the tree,
 * as even as the tree allows; first[g] is group g's first worker (first
 * has room for min(k, ranks) entries). Returns the number of groups. */
int64_t ps_tree_groups(int64_t k, int64_t ranks, int64_t *first);
/* DML_PS_TREE=0: pushes go to rank 0 one by one (the same sum, made there). */
bool ps_tree_off(void);
Status ps_count_push(PsRun *run, int64_t e);

/* ---- dispatch.c: dispatch=DYNAMIC ---- */
typedef struct PsDyn PsDyn;
/* After the workers' shapes are set: the tasks (an error in the caller's
 * Interp). */
Status ps_dyn_init(PsRun *run);
/* The first task of every worker (instead of STATIC's first model). */
void ps_dyn_start(PsRun *run);
/* Server: a push (the payload taken); a new task for whoever is free. */
Status ps_dyn_handle(PsRun *run, PsMsg *msg);
/* Worker i has been told there is no more work. */
bool ps_dyn_stopped(const PsRun *run, int i);
/* Every worker has been told there is no more work. */
bool ps_dyn_finished(const PsRun *run);
void ps_dyn_stats(PsRun *run, StrBuf *b);
void ps_dyn_free(PsRun *run);
void ps_report_stats(PsRun *run, double total, double cpu);

/* ---- history.c: per-epoch history and progress line ---- */
/* Server: the row of epoch e (0-based), at its end. */
Status ps_hist_add(PsRun *run, int64_t e, double secs, double loss, double acc);
/* The history of the call (skipped epochs of a resume: NaN rows). */
Status ps_hist_matrix(Interp *I, const PsRun *run, Value *out);
void ps_hist_free(PsRun *run);
/* Before the threads start: whether to show the line (verbose, a terminal). */
void ps_progress_init(PsRun *run);
/* n more batches done (a local worker after each batch). */
void ps_progress_add(PsRun *run, int64_t n);
/* Server: a push arrived from a worker that does not report its batches
 * (PsTransportOps.progress_by_push): counts the batches it covers. */
void ps_progress_push(PsRun *run, const PsWorker *w, const PsMsg *msg);
/* Server, around the epoch line of epoch e: clears the progress line and
 * holds the progress lock until _end, which starts counting the next epoch. */
void ps_progress_epoch_begin(PsRun *run);
void ps_progress_epoch_end(PsRun *run, int64_t e);
/* Caller, after the joins: clears a line left shown. */
void ps_progress_finish(PsRun *run);

#endif
