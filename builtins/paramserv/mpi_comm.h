/* SPDX-License-Identifier: Apache-2.0
 * Open MPI underneath paramserv: loading libmpi (only when launched by
 * mpirun, so a plain `dml` neither needs nor loads it), the start-up
 * handshake (every rank must run the same dml build), framed messages of
 * any size, and the shutdown. One MPI connection per process, so its state
 * is one file-scope struct; MPI is initialised with MPI_THREAD_SERIALIZED
 * and every call here is made under mpi_lock (one remote paramserv call
 * at a time, on whichever thread runs it). */
#ifndef DML_BUILTINS_PARAMSERV_MPI_COMM_H
#define DML_BUILTINS_PARAMSERV_MPI_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Message types; every message is one header (type, worker, epoch, batch,
 * length, matrices) and 'length' payload bytes in chunks, then, for a value
 * sent with mpi_send_value, the cells of each of its matrices in chunks. */
enum {
    MM_HELLO = 1,       /* 0 -> r: rank 0's build id; r -> 0: its build id and host */
    MM_CALL,            /* 0 -> r: one paramserv call (program, config, partition) */
    MM_MODEL,           /* 0 -> r: a model for the worker's next pull */
    MM_END,             /* 0 -> r: the call is over (done or aborted) */
    MM_SHUTDOWN,        /* 0 -> r: exit with status 'epoch' */
    MM_PUSH,            /* r -> 0: gradients or a local model */
    MM_PRINT,           /* r -> 0: text the worker's DML code printed */
    MM_FAIL,            /* r -> 0: the worker failed; payload is the message */
    MM_DONE,            /* r -> 0: made its last push; payload is its statistics */
    MM_BEAT,            /* r -> 0: still alive (sent each second during a call) */
    MM_ENDACK,          /* r -> 0: left the call */
    MM_PART,            /* 0 -> r: right after CALL, the partition list(X, Y), cells in place */
    MM_MODEL_TREE,      /* 0, s or r -> r: list(model, ranks): a model for this rank's next pull,
                           to be passed on to 'ranks' (a BSP round's broadcast tree); header epoch:
                           the server shard it comes from (servers=S; 0 otherwise) */
    MM_TASK,            /* 0 -> r: DYNAMIC: list(model, X, Y, meta), a task to run with its rows (msg.h);
                           epoch -1 and no value: no more work */
    MM_TRACE,           /* r -> 0: before DONE, with --trace: the worker's events, an n x 5 matrix
                           (kind, start seconds after the CALL arrived, seconds, epoch, batch) */
    MM_SHARD_CALL,      /* 0 -> s: servers=S: a call for server rank s (tp_mpi_shard.c); its initial
                           shard follows as MM_SHARD_MODEL */
    MM_SHARD_MODEL,     /* 0 -> s: the initial shard (server ranks send models as MM_MODEL_TREE) */
    MM_SHARD_READY,     /* s -> 0: server rank s took its call */
    MM_SHARD_DONE,      /* s -> 0: its last shard and statistics */
    MM_SHARD_EPOCH,     /* s -> 0: its shard at the end of epoch 'epoch' (for validation, checkpoints) */
    MM_GROUP,           /* 0 -> r: right after CALL, the rank's group (tp_mpi_tree.h): a 1 x (4 + k)
                           matrix (first worker, workers, groups, tree on, each worker's pushes per epoch);
                           then one MM_PART per worker of the group */
    MM_PUSH_SUM,        /* r -> r or 0 (servers=S: to 0..S-1, each its shard's range): BSP tree:
                           list(sum, [seq, w1, b1, ...]) of the workers covered, header epoch and round
                           (tp_mpi_tree.h) */
    MM_SHARD_ORDER,     /* 0 -> s: servers=S under SBP: the pushes rank 0 handled next, a 3 x n matrix
                           (worker, epoch, batch), in its order (tp_mpi_shard.c) */
};

typedef struct MpiMsg {
    int src, type, worker;
    int64_t epoch, batch;
    char *data;         /* malloc'd payload (NULL when empty) */
    size_t len;
    Value value;        /* owned: a value sent by mpi_send_value, else NONE */
} MpiMsg;

bool mpi_up(void);
int mpi_rank(void);
int mpi_size(void);
const char *mpi_host(int rank);     /* host name of a rank (from the handshake) */
/* How many of ranks 0..n-1 run on this rank's host (by host name; 1 at
 * least): the server ranks that share its cores under servers=n. */
int mpi_ranks_here_below(int n);
/* Queue a message (takes the buffer; NULL for none); sent in the
 * background. false with mpi_error() set when MPI fails. */
bool mpi_send_take(int dest, int type, int worker, int64_t epoch, int64_t batch, WBuf *payload);
/* Send a value whose matrix cells go straight from their memory (no
 * copy); v is retained until the send completes. */
bool mpi_send_value(int dest, int type, int worker, int64_t epoch, int64_t batch, Value v);
/* Advance pending sends; false on an MPI error. */
bool mpi_progress(void);
bool mpi_sends_pending(void);
/* Bytes of every message this process has received and queued for
 * sending so far (headers, payloads and matrix cells), under mpi_lock. */
void mpi_traffic(uint64_t *in, uint64_t *out);
/* Wait (polling) until every queued send has left, at most mpi_timeout()
 * seconds; false on an MPI error or the timeout. */
bool mpi_flush_sends(void);
/* Receive one message if any is waiting: 1 got one, 0 none, -1 MPI error. */
int mpi_poll(MpiMsg *m);
void mpi_msg_free(MpiMsg *m);
const char *mpi_error(void);
/* Seconds a rank may stay silent during a call before it is declared
 * lost (DML_MPI_TIMEOUT, default 60). */
double mpi_timeout(void);
/* Rank 0: whether the job must be torn down by MPI_Abort at exit (a rank
 * stopped answering, so an orderly shutdown could hang). */
void mpi_mark_broken(void);
void mpi_lock(void);
void mpi_unlock(void);
/* How many ranks share this host (OMPI_COMM_WORLD_LOCAL_SIZE; 1 outside
 * mpirun): each gets that share of the host's thread budget (the cores, or
 * --threads / DML_THREADS), rank 0 during a call included, so ranks x
 * threads never exceed it. */
int mpi_local_ranks(void);

/* Waiting in a polling loop. Every wait for MPI traffic here polls (a
 * blocking MPI call would spin a core that the computing ranks need) and
 * sleeps between polls: MPI_IDLE_MIN_US after any traffic, doubling while
 * nothing happens up to the loop's cap, so an idle loop costs little CPU and
 * a busy one little latency. A cap of 0 means the loop does not sleep but
 * yields the core (sched_yield) between polls: while a large message is
 * moving, each side must poll for every fragment (Open MPI's shared-memory
 * transport moves a big message in 32 KiB fragments, its TCP one as fast as
 * the socket drains), and a sleep per poll cut 13 MB transfers on a 16-core
 * machine to ~200 MB/s. Such spinning lasts at most MPI_SPIN_SECS after the
 * last sign of progress, so a stalled peer costs no core for long.
 *
 * The first MPI_IDLE_NEAR_POLLS sleeps after any traffic last at most
 * MPI_IDLE_NEAR_US (~4 ms in all): an answer usually comes within a few
 * milliseconds (a model after a push, a push after a model), and one that
 * arrives while a bridge sleeps its full cap waits for it. Past that the
 * sleeps grow to the loop's cap, so a long wait (for a straggler, for the
 * next call) costs no more CPU than before. On 2 cores with 3 ranks (ASP, a
 * 0.8 MB model, tasks of ~2 ms) a worker's median wait from its push to its
 * next model went from 2.5-2.9 to 1.4-2.1 ms (bench/RESULTS.md, issue 26). */
#define MPI_IDLE_MIN_US 50
#define MPI_IDLE_NEAR_US 200
#define MPI_IDLE_NEAR_POLLS 20
#define MPI_SPIN_SECS 0.05
typedef struct MpiIdle {
    long us, max_us;
    int near;           /* sleeps left that are capped at MPI_IDLE_NEAR_US */
} MpiIdle;
static inline long mpi_idle_min(long a, long b) { return a < b ? a : b; }
static inline MpiIdle mpi_idle_init(long max_us)
{
    return (MpiIdle){mpi_idle_min(MPI_IDLE_MIN_US, max_us), max_us, MPI_IDLE_NEAR_POLLS};
}
/* Something happened: poll again soon. */
static inline void mpi_idle_busy(MpiIdle *w)
{
    w->us = mpi_idle_min(MPI_IDLE_MIN_US, w->max_us);
    w->near = MPI_IDLE_NEAR_POLLS;
}
/* A new cap (the loop's state changed); the next sleep is at most that. */
static inline void mpi_idle_cap(MpiIdle *w, long max_us)
{
    w->max_us = max_us;
    if (w->us > max_us)
        w->us = max_us;
    else if (w->us == 0 && max_us > 0)
        w->us = mpi_idle_min(MPI_IDLE_MIN_US, max_us);
}
/* Microseconds to sleep now (then the next sleep doubles, up to the cap);
 * 0: yield the core instead. */
static inline long mpi_idle_next(MpiIdle *w)
{
    long us = w->us;
    w->us = us * 2 < w->max_us ? us * 2 : w->max_us;
    if (w->near > 0) {
        w->near--;
        us = mpi_idle_min(us, MPI_IDLE_NEAR_US);
    }
    return us;
}
/* A loop that spins (cap 0) and has 'waited' seconds: past MPI_SPIN_SECS
 * it sleeps between polls again, up to 'cap' microseconds. */
static inline void mpi_idle_spun(MpiIdle *w, double waited, long cap)
{
    if (w->max_us == 0 && waited > MPI_SPIN_SECS)
        mpi_idle_cap(w, cap);
}
/* Whether a send is under way and moved (was posted or completed a
 * request) within MPI_SPIN_SECS, on a host with a core for each of its
 * ranks: then a loop should poll without sleeping. */
bool mpi_sends_moving(void);
void mpi_idle_sleep(MpiIdle *w);

#endif
