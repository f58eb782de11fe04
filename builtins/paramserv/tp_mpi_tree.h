/* SPDX-License-Identifier: Apache-2.0
 * Worker groups and the reduction tree of the Open MPI transport (issue
 * 25; tp_mpi_tree.c).
 *
 * Groups: k workers run on G = min(k, N-1) worker ranks, group g (the
 * workers [first[g], first[g+1])) on rank g + 1 as threads sharing the
 * rank's model copy (servers=S: G = min(k, N-S), group g on rank g + S). Each group is a node of the tree that fixes the order
 * of a BSP round's sum (tree.c), so the groups are as even as that tree
 * allows: k = 8 on 2 ranks is 4 + 4, k = 6 on 2 ranks 4 + 2, k = 5 on 3
 * ranks 2 + 2 + 1.
 *
 * Pushes (BSP with dispatch=STATIC, unless DML_PS_TREE=0): a worker rank
 * adds its workers' gradients in the tree's order, then, for each node of
 * the tree above its group whose first worker is its own, adds the sum of
 * that node's right half, which the rank owning that half sends it
 * (MM_PUSH_SUM). The topmost such sum goes to the owner of the next node
 * up, or to rank 0 when that node is the root: rank 0 adds the root's two
 * halves, so it receives at most two gradient copies a round, for any k
 * (servers=S: each half goes cut into the S shards' ranges, range s to
 * server rank s, tp_mpi_shard.c).
 * A sum names the workers it covers and each one's last batch, so rank 0
 * counts every worker's push as if it had come alone (its payload NONE:
 * ps_enqueue_push_take). ASP, SSP, SBP and dispatch=DYNAMIC push per
 * worker straight to rank 0 (doc/paramserv.md says why).
 *
 * Models: a delivery of one model to several workers goes once to each of
 * their ranks, listing the workers there that take it (MM_MODEL_TREE,
 * list(model, 2 x n matrix of rank and worker)); when three or more ranks
 * take it and rank 0 has heard from them, down a tree of ranks as
 * tp_mpi.h describes. */
#ifndef DML_BUILTINS_PARAMSERV_TP_MPI_TREE_H
#define DML_BUILTINS_PARAMSERV_TP_MPI_TREE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mpi_comm.h"
#include "ps.h"

typedef struct TpGroups {
    int64_t k, n;               /* workers, groups (= worker ranks in use) */
    int64_t *first;             /* n + 1 entries: group g is [first[g], first[g+1]) */
} TpGroups;
/* k workers over at most 'ranks' worker ranks; false when out of memory. */
bool tp_groups_init(TpGroups *g, int64_t k, int64_t ranks);
void tp_groups_free(TpGroups *g);
/* The group (0-based) of worker w; its rank is that + 1. */
int64_t tp_group_of(const TpGroups *g, int64_t w);

/* Send 'model' to the workers pairs[2i+1] on ranks pairs[2i] (n pairs,
 * sorted by rank): one copy per rank; through peers ('tree') when three or
 * more ranks take it. 'seq': the call's number; 'shard': the server shard
 * it comes from (0: rank 0; servers=S: 1..S-1 from the server ranks; it
 * travels in the header's epoch). False on an MPI error or out of
 * memory. */
bool tp_mpi_send_models(Value model, const int *pairs, int n, bool tree, int64_t seq, int shard);
/* What a MM_MODEL_TREE (v, borrowed) names for rank 'self' of 'size',
 * whose workers are [lo, hi): those workers in *mine (*nmine >= 1), the
 * (rank, worker) pairs to pass on in *rest (*nrest, maybe 0); both
 * malloc'd. False (nothing allocated) when it is malformed: pairs out of
 * order or range, a worker twice, none for this rank or this rank's not
 * first. */
bool tp_models_read(Value v, int self, int size, int64_t lo, int64_t hi, int **rest, int *nrest, int **mine,
                    int *nmine);
/* A MM_MODEL_TREE arrived on rank 'self' (v taken): passes the model on
 * to the other ranks it names and returns it in *model with this rank's
 * workers in *mine (malloc'd, *nmine of them, each in [lo, hi)). False
 * when it is malformed (*mpi_err false) or an MPI error stopped the
 * forwarding (*mpi_err true). */
bool tp_mpi_take_models(Value v, int self, int size, int64_t lo, int64_t hi, int64_t seq, int shard, Value *model,
                        int **mine, int *nmine, bool *mpi_err);

/* Rank 0: a MM_PUSH_SUM (its value taken): the sum in *sum, the covered
 * workers and their last batches in w[0..n), b[0..n) (malloc'd). False when
 * malformed (a worker outside [0, k) or twice, or another call's seq). */
bool tp_push_sum_read(MpiMsg *m, int64_t k, int64_t seq, Value *sum, int64_t **w, int64_t **b, int64_t *n);
/* The server's side of a sum read by tp_push_sum_read: the first covered
 * worker's push carries the sum (taken), the others' are NONE, all queued
 * with ps_enqueue_push_take. Out of memory: the run fails (ps_fail_msg). */
void tp_push_sum_enqueue(PsRun *run, const int64_t *w, const int64_t *b, int64_t n, int64_t epoch, Value sum);

/* A worker rank's part of the pushes' tree, run by its bridge thread. */
typedef struct TpReduce TpReduce;
/* For group 'group' of g (group h on rank wr0 + h), whose workers push
 * groups[w] times an epoch (groups has g->k entries, copied) for 'epochs'
 * epochs; the sums run in an Interp of their own over prog ('threads'
 * kernel threads). With servers > 1 a half of the root goes to ranks
 * 0..servers-1, each its shard's range (tp_mpi_shard.c). NULL when out
 * of memory. */
TpReduce *tp_reduce_new(Program *prog, const TpGroups *g, int64_t group, int wr0, int servers, const int64_t *groups,
                        int64_t epochs, int64_t start_epoch, int64_t seq, atomic_int *abort, int threads, FILE *out);
/* One of the rank's workers pushed (payload taken). False with *err
 * (malloc'd) when it does not fit the round. */
bool tp_reduce_push(TpReduce *R, PsMsg *m, char **err);
/* A MM_PUSH_SUM from a peer (its value taken); messages of another call
 * are dropped. False with *err when it does not fit the round. */
bool tp_reduce_child(TpReduce *R, MpiMsg *m, char **err);
/* Completes every round whose pushes are all in, sending each sum on.
 * Returns 1 when something was sent, 0 when not, -1 on failure: *err
 * (malloc'd) for a failed sum, NULL for an MPI error. */
int tp_reduce_step(TpReduce *R, char **err);
/* Every round this rank takes part in has been sent on. */
bool tp_reduce_finished(const TpReduce *R);
void tp_reduce_free(TpReduce *R);

#endif
