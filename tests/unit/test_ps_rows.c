/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/paramserv/tp_mpi_rows.c, the rows of DYNAMIC
 * tasks kept on worker ranks: rank 0 plans "keep" the first time a rank
 * gets a task and "kept" after, per rank, and stops planning "keep" past
 * PS_ROWS_KEEP_BYTES; a worker rank keeps the rows it is told to keep and
 * puts them back into a task sent without them, so ps_task_read sees the
 * same rows; a task whose plan is missing or unknown, or that asks for rows
 * never kept or of other columns, is refused. Prints "N passed, N failed";
 * exits non-zero on failure. */
#include "../../builtins/paramserv/tp_mpi_rows.h"

#include <stdlib.h>
#include <string.h>

#include "../../builtins/paramserv/msg.h"
#include "check.h"

static void test_plan(void)
{
    PsRowsSent s;
    CHECK(ps_rows_sent_init(&s, 2));
    CHECK(ps_rows_plan(&s, 0, 3, 100) == PS_ROWS_KEEP);
    CHECK(ps_rows_plan(&s, 0, 3, 100) == PS_ROWS_KEPT);
    CHECK(ps_rows_plan(&s, 1, 3, 100) == PS_ROWS_KEEP);     /* per rank */
    CHECK(ps_rows_plan(&s, 0, 500, 100) == PS_ROWS_KEEP);   /* ids past the first table */
    CHECK(ps_rows_plan(&s, 0, 500, 100) == PS_ROWS_KEPT);
    /* Past the bound: rows go every time. */
    CHECK(ps_rows_plan(&s, 1, 7, PS_ROWS_KEEP_BYTES) == PS_ROWS_ONCE);
    CHECK(ps_rows_plan(&s, 1, 7, PS_ROWS_KEEP_BYTES) == PS_ROWS_ONCE);
    CHECK(ps_rows_plan(&s, 1, 8, PS_ROWS_KEEP_BYTES - 100) == PS_ROWS_KEEP);
    CHECK(ps_rows_plan(&s, 1, 9, 1) == PS_ROWS_ONCE);
    CHECK(ps_rows_plan(&s, 2, 1, 1) == PS_ROWS_ONCE && ps_rows_plan(&s, 0, -1, 1) == PS_ROWS_ONCE);
    CHECK(s.kept == 2 && s.sent == 9);
    ps_rows_sent_free(&s);
}

/* A task as rank 0 sends it: rows (n of them, X's cells 1..) and plan. */
static Value task_of(int64_t id, int64_t n, int64_t cols, int plan)
{
    List *ml = list_new(1, false);
    list_push_take(ml, val_matrix_take(mat_new_zero_raw(2, 2)), NULL);
    Value model = val_list_take(ml);
    Matrix *X = mat_new_raw(n, cols), *Y = mat_new_zero_raw(n, 1);
    for (int64_t i = 0; i < n * cols; i++)
        X->data[i] = (double)(i + 1);
    PsTask t = {.epoch = 1, .id = id, .part = 0, .group = id, .j0 = id};
    Value v = ps_task_value(model, X, Y, &t);
    val_release(model);
    CHECK(ps_rows_mark(v, plan));
    return v;
}

static void test_take(void)
{
    PsRowsKept c = {0};
    Value m;
    PsTask t;
    /* Kept the first time, put back the second. */
    Value v = task_of(4, 3, 2, PS_ROWS_KEEP);
    CHECK(ps_rows_take(&c, v) == 1 && v.l->n == 4);
    CHECK(ps_task_read(v, 1, 3, &m, &t) && t.X->rows == 3);
    val_release(m);
    ps_task_clear(&t);
    val_release(v);
    v = task_of(4, 0, 2, PS_ROWS_KEPT);
    CHECK(ps_rows_take(&c, v) == 1);
    CHECK(ps_task_read(v, 2, 3, &m, &t) && t.X->rows == 3 && t.X->data[5] == 6.0 && t.Y->rows == 3);
    val_release(m);
    ps_task_clear(&t);
    val_release(v);
    /* Once: used, not kept. */
    v = task_of(9, 2, 2, PS_ROWS_ONCE);
    CHECK(ps_rows_take(&c, v) == 1 && v.l->n == 4);
    val_release(v);
    v = task_of(9, 0, 2, PS_ROWS_KEPT);
    CHECK(ps_rows_take(&c, v) == 0);
    val_release(v);
    /* Kept rows of other columns, an unknown plan, rows with "kept". */
    v = task_of(4, 0, 5, PS_ROWS_KEPT);
    CHECK(ps_rows_take(&c, v) == 0);
    val_release(v);
    v = task_of(4, 3, 2, 7);
    CHECK(ps_rows_take(&c, v) == 0);
    val_release(v);
    v = task_of(4, 3, 2, PS_ROWS_KEPT);
    CHECK(ps_rows_take(&c, v) == 0);
    val_release(v);
    /* No plan at all (list(model, X, Y, meta)), and not a list. */
    List *ml = list_new(1, false);
    Value model = val_list_take(ml);
    PsTask t0 = {.epoch = 1, .id = 1};
    v = ps_task_value(model, mat_new_zero_raw(1, 2), mat_new_zero_raw(1, 1), &t0);
    CHECK(ps_rows_take(&c, v) == 0);
    val_release(v);
    CHECK(ps_rows_take(&c, model) == 0);
    val_release(model);
    ps_rows_kept_free(&c);
    CHECK(c.cap == 0 && c.X == NULL);
}

int main(void)
{
    test_plan();
    test_take();
    return CHECK_DONE();
}
