/* SPDX-License-Identifier: Apache-2.0
 * dispatch="DYNAMIC" on Open MPI ranks: a task's rows are shipped to a
 * worker rank once, not every epoch (issue 26). A task (PsTask) names the
 * same rows of the same partition in every epoch of a call, so a rank that
 * was sent them keeps them, by task id, for the rest of the call, and rank
 * 0 then sends that rank the task without its rows. Rank 0 decides alone
 * (it tracks what each rank holds) and says so in the task's message, so
 * the two sides cannot disagree; the rows are the same bytes either way, so
 * the results do not change. What a rank keeps is bounded by
 * PS_ROWS_KEEP_BYTES per call; past that, rows travel with every task as
 * before.
 *
 * On the wire: rank 0 appends a 1x1 matrix to the MM_TASK value
 * list(model, X, Y, meta) (msg.h): 0 the rows are here, use them once; 1
 * the rows are here, keep them; 2 no rows (X and Y have 0 rows): use the
 * ones kept for this task id. The worker rank takes it off again before
 * ps_task_read. */
#ifndef DML_BUILTINS_PARAMSERV_TP_MPI_ROWS_H
#define DML_BUILTINS_PARAMSERV_TP_MPI_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../base/value.h"

/* The most bytes of rows (X and Y cells) a worker rank keeps in one call:
 * 1 GiB, a small share of a cluster node's memory; a data set that fits
 * ends up wholly on every rank after a few epochs (each rank keeps the
 * tasks it was handed), so it crosses the network at most k times in a
 * call instead of once per epoch. */
#define PS_ROWS_KEEP_BYTES ((uint64_t)1 << 30)

enum { PS_ROWS_ONCE = 0, PS_ROWS_KEEP = 1, PS_ROWS_KEPT = 2 };

/* Rank 0: which task ids each of k worker ranks keeps. */
typedef struct PsRowsSent {
    int k;
    uint64_t *used;             /* bytes each keeps */
    uint8_t **have;             /* have[i][id]: worker i keeps task id's rows */
    int64_t *cap;               /* of have[i] */
    int64_t kept, sent;         /* statistics: tasks sent without rows, with */
} PsRowsSent;
bool ps_rows_sent_init(PsRowsSent *s, int k);
void ps_rows_sent_free(PsRowsSent *s);
/* What to send worker i for task 'id' whose rows are 'bytes' (X and Y):
 * PS_ROWS_KEPT, PS_ROWS_KEEP (recorded as kept from now on) or
 * PS_ROWS_ONCE (over the bound, or out of memory to track it). */
int ps_rows_plan(PsRowsSent *s, int i, int64_t id, uint64_t bytes);
/* Appends the plan to a task value (list(model, X, Y, meta)); false when
 * out of memory. */
bool ps_rows_mark(Value task, int plan);

/* A worker rank: the rows it keeps in one call. */
typedef struct PsRowsKept {
    Value *X, *Y;               /* by task id (NONE: not kept) */
    int64_t cap;
} PsRowsKept;
void ps_rows_kept_free(PsRowsKept *c);
/* A task value as it arrived (owned by the caller, changed in place):
 * follows its plan and takes the plan off, so that ps_task_read sees
 * list(model, X, Y, meta) with the task's rows. 1 done; 0 it is
 * malformed (no plan, an unknown one, or rows asked for that were never
 * kept); -1 out of memory to keep them. */
int ps_rows_take(PsRowsKept *c, Value task);

#endif
