/* SPDX-License-Identifier: Apache-2.0
 * What paramserv's Open MPI messages carry (mpi_comm.h lists the types):
 * one walk per payload for both directions (WIO, wire.h), and the checks a
 * receiving rank applies to what it decoded before anything uses it. Pure
 * functions of the bytes, no MPI: tp_mpi_server.c and tp_mpi_worker.c use them,
 * and tests/fuzz/fuzz_wire.c feeds them whatever it likes. */
#ifndef DML_BUILTINS_PARAMSERV_MSG_H
#define DML_BUILTINS_PARAMSERV_MSG_H

#include <stdbool.h>
#include <stdint.h>

#include "ps.h"
#include "wire.h"

/* The part of a CALL that is the same for every worker rank: every file
 * rank 0 loaded, the $parameters, the functions and the configuration.
 * Rank 0 points it at its program (owning only the files array); a worker
 * rank reads it, owning everything (ps_call_free). */
typedef struct CallMsg {
    const char *main_path, *main_text;
    size_t main_len;
    CmdArg *args;
    int64_t nargs;
    ShippedFile *files;
    int64_t nfiles;
    const char *upd_key, *upd_name, *agg_key, *agg_name, *agg_spec;
    PsConfig opt;               /* the options params.h marks 'wire'; nothing else of it is set */
    int64_t start_epoch;
    Value hyper;
    int64_t k;                  /* read: the call's workers */
} CallMsg;

/* Writes or reads a CALL's common part; false when reading runs out of
 * memory or the count of args or files is malformed. */
bool ps_call_xfer(WIO *x, CallMsg *m);
/* A CALL as a worker rank read it (*m zeroed first, hyper NONE). */
void ps_call_free(CallMsg *m);
/* The part of a CALL for one worker: its id and the number of workers.
 * Its partition follows as MM_PART, whose cells go straight from the
 * matrices into the worker's (no copy into the payload: a partition may be
 * past 2 GiB, and a copy would double it). */
void ps_part_xfer(WIO *x, int64_t *id, int64_t *k);
/* A worker rank's statistics, sent with DONE. */
void ps_stats_xfer(WIO *x, PsWorkerStats *s);
/* Rank 0 reading them: false (and *s zeroed) unless every time is finite
 * and not negative and every count and byte total is in [0, 2^53], so
 * that rank 0's sums over the ranks cannot overflow. */
bool ps_stats_read(WRead *r, PsWorkerStats *s);

/* A worker rank's CALL: decodes rd into *m (zeroed first; the caller
 * ps_call_frees it, success or not) and the worker's id into *id, and
 * checks it with the partition that came with it (list(X, Y)). NULL when
 * the call can be served: every string the worker uses is there, the
 * options are in range, *id is in [0, k), X and Y have as many rows, and
 * batchsize and nbatches are at most X's rows (as rank 0 bounds them by
 * the data's rows: a batch never has more, and batch arithmetic cannot
 * overflow). Else why not: "malformed paramserv call" or "out of memory".
 * *id is 0 unless it was read and is an int. */
const char *ps_call_read(WRead *rd, CallMsg *m, Value part, int64_t *id);

/* DYNAMIC: an MM_TASK's value is list(model, X, Y, meta): the model for
 * the task, its rows, and meta = [part, group, id, j0] (PsTask). */
Value ps_task_value(Value model, Matrix *X, Matrix *Y, const PsTask *t);
/* A worker rank reading one for epoch 'epoch': false when it is
 * malformed (not such a list, X and Y with other row counts or none, meta
 * not four whole numbers in [0, 2^53]); else *model (owned) and *t (its
 * X and Y owned, rows [0, rows), batches [j0, j0 + rows / batchsize
 * rounded up)). */
bool ps_task_read(Value v, int64_t epoch, int64_t batchsize, Value *model, PsTask *t);


#endif
