/* SPDX-License-Identifier: Apache-2.0
 * What the two sides of paramserv's Open MPI transport share: rank 0's
 * (tp_mpi_server.c) and the worker ranks' (tp_mpi_worker.c). Both bridge
 * their process's threads to MPI messages (mpi_comm.h) on one thread that
 * never blocks inside MPI: it polls and sleeps between polls (MpiIdle, the
 * caps below), because ranks on one host share its cores, and a rank
 * spinning while it waits takes them from the ranks that compute. */
#ifndef DML_BUILTINS_PARAMSERV_TP_MPI_H
#define DML_BUILTINS_PARAMSERV_TP_MPI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../base/strbuf.h"
#include "../../base/value.h"
#include "ps.h"
#include "wire.h"

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
/* A pause longer than this in a waiting loop (the process stopped, or busy
 * elsewhere) is not counted as the peer's silence. */
#define WATCH_GAP_SEC 1.0
#define AWAIT_IDLE_MAX_US 1000
#define COMPUTE_IDLE_MAX_US 5000
#define BETWEEN_IDLE_MAX_US 10000
/* While a send is under way but has not moved for MPI_SPIN_SECS (until
 * then the bridge spins: mpi_comm.h): over TCP it moves only when its rank
 * polls. */
#define SEND_IDLE_MAX_US 200

/* Wait on cv (mu held) at most 'us' microseconds; 0 (a spinning MpiIdle,
 * mpi_comm.h): only yield the core, with mu released meanwhile. */
void tp_mpi_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, long us);

/* A model that several ranks pull at once (a BSP round) goes down a tree
 * instead of k times out of rank 0 (tp_mpi_send_models, tp_mpi_tree.h):
 * the ranks are split in two halves, the first rank of each gets the model
 * with the rest of its half to pass on in the same way (an MM_MODEL_TREE,
 * list(model, ranks and workers)). Each rank still receives one copy, the
 * cells are the same bytes, so results do not change; rank 0 sends two
 * copies instead of k, and the copies travel in parallel, log2(k) hops
 * deep. A rank that dies on the way ends the job as any dead rank does;
 * one that hangs stops answering rank 0 and is found by the heartbeat
 * timeout. The call's number (rank 0 numbers its calls) travels with it,
 * so a worker rank drops a model forwarded late from an aborted earlier
 * call. */

/* What a rank moved over MPI for paramserv: bytes received and sent,
 * every message counted whole (header, payload, matrix cells), heartbeats,
 * the CALL with the program and the partitions included. A rank takes
 * ps_traffic_now() when a call starts and ps_traffic_since() when it ends
 * (under mpi_lock, as every MPI call here); --stats divides by the call's
 * rounds. A round is one update of the model: under BSP and SBP one
 * aggregated step of all pushes of a round, under ASP and SSP one applied
 * push (so with k workers an ASP call has k times the rounds of BSP over
 * the same batches). */
typedef struct PsTraffic {
    uint64_t in, out;
} PsTraffic;
PsTraffic ps_traffic_now(void);
PsTraffic ps_traffic_since(PsTraffic start);
/* --stats' line "Rank R bytes per round: in N, out N" (N: whole bytes,
 * rounded down; a call without an update divides by 1). */
void ps_traffic_line(StrBuf *b, int rank, PsTraffic t, int64_t rounds);

/* ---- servers=S (tp_mpi_shard.c) ---- */
struct PsRun;
struct MpiMsg;
struct StrBuf;
typedef struct TpShard TpShard;
typedef struct TpShardIn TpShardIn;
/* Rank 0. With servers > 1: *out is the shard state, run->model becomes
 * shard 0 (NULL and nothing done with one server); an error in
 * run->caller. */
Status tp_shard_init(struct PsRun *run, TpShard **out);
/* Under run->mu: what worker i's delivery of 'model' (consumed) sends:
 * its first, the whole initial model; then shard 0 with the shapes. */
Value tp_shard_delivery(TpShard *t, int i, Value model);
/* Under run->mu: the entries a pull carries (NULL: all). */
void tp_shard_set_need(TpShard *t, const bool *need);
/* Ships the server ranks their calls (the common CALL bytes, the worker
 * groups' count 'ngroups' and whether BSP pushes come summed up the tree)
 * and waits for them to take them; false when the call failed
 * (ps_fail_msg). */
bool tp_shard_start(struct PsRun *run, TpShard *t, const WBuf *common, int64_t seq, int64_t ngroups, bool tree);
/* A message from a server rank (consumed what it needs): false when it
 * is from another rank. */
bool tp_shard_on_message(struct PsRun *run, TpShard *t, struct MpiMsg *m);
/* Every server rank sent its last shard (true without shards). */
bool tp_shard_done(const TpShard *t);
/* A server rank silent past DML_MPI_TIMEOUT fails the call (true); gap:
 * seconds rank 0 itself was not watching. */
bool tp_shard_silent(struct PsRun *run, TpShard *t);
void tp_shard_gap(TpShard *t, double gap);
/* END to the server ranks; the ENDACKs still owed. */
bool tp_shard_end(TpShard *t);
int tp_shard_acks_left(const TpShard *t);
/* After the server thread joined: run->model becomes the whole model. */
Status tp_shard_gather(struct PsRun *run, TpShard *t);
/* Server thread, end of epoch e: the whole model in *whole when
 * validation or a checkpoint needs it (waits for every server's shard of
 * that epoch; an error in run->SI when the call aborts meanwhile). */
Status tp_shard_epoch_model(struct PsRun *run, TpShard *t, int64_t e, Value *whole);
/* With run->mu held, on abort: wakes a server thread waiting in it. */
void tp_shard_wake(TpShard *t);
/* Server thread, after it handled worker's push (epoch, batch): under
 * SBP, record= and replay= the other servers handle the pushes in rank
 * 0's order, which this keeps (signalling 'wake', the bridge's, under
 * run->mu) for tp_shard_pump. */
void tp_shard_applied(struct PsRun *run, TpShard *t, int worker, int64_t epoch, int64_t batch, pthread_cond_t *wake);
/* The bridge: sends the server ranks the order kept since its last call
 * (MM_SHARD_ORDER); true when it sent some. */
bool tp_shard_pump(struct PsRun *run, TpShard *t);
/* --stats: a line per server rank (1..S-1). */
void tp_shard_stats(struct PsRun *run, const TpShard *t, struct StrBuf *b);
void tp_shard_free(TpShard *t);
/* Shard s of S of a list of whole matrices (a model, gradients, a sum of
 * them): each entry's range of cells as a column; other entries NONE.
 * NONE when out of memory. */
Value tp_shard_cut(const List *l, int s, int S);
/* A worker rank: a push (borrowed) cut into S shards, shard s to rank s. */
bool tp_shard_push(int S, int worker, int64_t epoch, int64_t batch, Value payload);
/* A worker rank's pulls: for each of its n workers, the parts of its next
 * model from the S servers. */
TpShardIn *tp_shard_in_new(int S, int64_t n);
void tp_shard_in_free(TpShardIn *in);
/* A part from server 'shard' (taken) for the rank's worker j (0-based in
 * the rank): 1 and the whole model in *whole when it was the last one
 * missing (or the first, whole model), 0 while parts are missing, -1 when
 * malformed. Workers whose parts are the same messages (a BSP round's
 * model, sent once per rank) get the same joined model, so the rank holds
 * one copy. */
int tp_shard_in_take(TpShardIn *in, int64_t j, int shard, Value v, Value *whole);
/* A server rank: serves one call from its SHARD_CALL to rank 0's END;
 * false when rank 0 cannot be reached. */
bool tp_shard_serve(struct MpiMsg *call);

#endif
