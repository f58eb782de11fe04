/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/paramserv/msg.c, what a worker rank makes of the
 * CALL and model tree messages it receives: a CALL round-trips; one with
 * an absent string (a shipped file's key, an argument's name), an option
 * out of range, an id past k, or labels with fewer rows than the features
 * is refused as malformed before anything uses it; every truncation is
 * refused as malformed (one that cut a count short used to read as "out
 * of memory"); batchsize and nbatches past the partition's rows are
 * bounded by them. A tree message names only other worker ranks. A
 * DONE's statistics are refused past what rank 0 can sum. Prints
 * "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/paramserv/msg.h"
#include "../../builtins/paramserv/tp_mpi_tree.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char MALFORMED[] = "malformed paramserv call";

static Value part_of(int64_t xrows, int64_t yrows)
{
    List *l = list_new(2, false);
    list_push_take(l, val_matrix_take(mat_new_zero_raw(xrows, 3)), NULL);
    list_push_take(l, val_matrix_take(mat_new_zero_raw(yrows, 1)), NULL);
    return val_list_take(l);
}

static CmdArg args[] = {{"$1", "x.csv"}, {"$2", ""}};
static ShippedFile files[] = {{"./m.dml", "m.dml", "f = function() {}\n", 18}};

static CallMsg sample(void)
{
    return (CallMsg){.main_path = "main.dml", .main_text = "x = 1\n", .main_len = 6, .args = args, .nargs = 2,
                     .files = files, .nfiles = 1, .upd_key = "./m.dml", .upd_name = "upd", .agg_key = "./m.dml",
                     .agg_name = "agg", .agg_spec = "m::agg",
                     .opt = {.utype = PS_UTYPE_SSP, .freq = PS_FREQ_NBATCHES, .epochs = 2, .batchsize = 4,
                             .nbatches = 2, .seed = 9, .servers = 1},
                     .start_epoch = 1, .hyper = val_none()};
}

static void encode(WBuf *b, CallMsg *m, int64_t id, int64_t k)
{
    ps_call_xfer(&(WIO){.w = b}, m);
    ps_part_xfer(&(WIO){.w = b}, &id, &k);
}

/* Decodes b with 'part'; returns ps_call_read's answer, *out the call. */
static const char *decode(const WBuf *b, Value part, CallMsg *out, int64_t *id)
{
    WRead r = {.p = b->p, .len = b->len};
    return ps_call_read(&r, out, part, id);
}

static void test_round_trip(void)
{
    CallMsg m = sample();
    WBuf b = {0};
    encode(&b, &m, 1, 3);
    Value part = part_of(10, 10);
    CallMsg c;
    int64_t id;
    CHECK(decode(&b, part, &c, &id) == NULL);
    CHECK(id == 1);
    CHECK(strcmp(c.main_path, "main.dml") == 0 && c.main_len == 6 && strcmp(c.main_text, "x = 1\n") == 0);
    CHECK(c.nargs == 2 && strcmp(c.args[0].name, "$1") == 0 && strcmp(c.args[1].text, "") == 0);
    CHECK(c.nfiles == 1 && strcmp(c.files[0].key, "./m.dml") == 0 && c.files[0].len == 18);
    CHECK(c.opt.utype == PS_UTYPE_SSP && c.opt.freq == PS_FREQ_NBATCHES && c.opt.epochs == 2 && c.opt.batchsize == 4 &&
          c.opt.nbatches == 2 && c.opt.seed == 9 && c.start_epoch == 1);
    ps_call_free(&c);
    /* Every strict prefix is refused and leaks nothing. */
    int refused = 0;
    for (size_t n = 0; n < b.len; n++) {
        WRead r = {.p = b.p, .len = n};
        const char *why = ps_call_read(&r, &c, part, &id);
        refused += why && strcmp(why, MALFORMED) == 0;
        ps_call_free(&c);
    }
    CHECK(refused == (int)b.len);
    wb_free(&b);
    val_release(part);
}

/* An absent string that the loader would take for a C string (strcmp,
 * strlen of NULL on the worker rank). */
static void test_absent_strings_refused(void)
{
    Value part = part_of(10, 10);
    ShippedFile nokey[] = {{NULL, "m.dml", "", 0}};
    ShippedFile nopath[] = {{"./m.dml", NULL, "", 0}};
    CmdArg noname[] = {{NULL, "v"}};
    CmdArg notext[] = {{"$1", NULL}};
    for (int i = 0; i < 6; i++) {
        CallMsg m = sample();
        if (i == 0)
            m.files = nokey;
        else if (i == 1)
            m.files = nopath;
        else if (i == 2)
            m.args = noname, m.nargs = 1;
        else if (i == 3)
            m.args = notext, m.nargs = 1;
        else if (i == 4)
            m.upd_name = NULL;
        else
            m.main_path = NULL;
        WBuf b = {0};
        encode(&b, &m, 0, 2);
        CallMsg c;
        int64_t id;
        const char *why = decode(&b, part, &c, &id);
        CHECK(why && strcmp(why, MALFORMED) == 0);
        ps_call_free(&c);
        wb_free(&b);
    }
    val_release(part);
}

static void test_options_refused(void)
{
    Value part = part_of(10, 10);
    for (int i = 0; i < 9; i++) {
        CallMsg m = sample();
        int64_t id = 0, k = 2;
        switch (i) {
        case 0: m.opt.utype = (PsUtype)4; break;
        case 1: m.opt.freq = (PsFreq)-1; break;
        case 2: m.opt.batchsize = 0; break;
        case 3: m.opt.nbatches = -3; break;
        case 4: m.opt.epochs = 0; break;
        case 5: m.start_epoch = -1; break;
        case 6: id = 2; break;
        case 7: id = -1; break;
        default: k = (int64_t)1 << 40; break;
        }
        WBuf b = {0};
        encode(&b, &m, id, k);
        CallMsg c;
        int64_t got;
        const char *why = decode(&b, part, &c, &got);
        CHECK(why && strcmp(why, MALFORMED) == 0);
        ps_call_free(&c);
        wb_free(&b);
    }
    val_release(part);
}

/* The partition must be list(X, Y) with as many rows in each: the worker
 * slices Y's rows by X's (reading past Y's cells otherwise). */
static void test_partition_checked(void)
{
    CallMsg m = sample();
    WBuf b = {0};
    encode(&b, &m, 0, 2);
    Value parts[] = {part_of(10, 4), val_none(), val_matrix_take(mat_new_zero_raw(2, 2))};
    for (int i = 0; i < 3; i++) {
        CallMsg c;
        int64_t id;
        const char *why = decode(&b, parts[i], &c, &id);
        CHECK(why && strcmp(why, MALFORMED) == 0);
        ps_call_free(&c);
        val_release(parts[i]);
    }
    wb_free(&b);
}

/* batchsize=2^63-1 (as a hostile or damaged CALL may say) is bounded by
 * the partition's rows, so (rows + batchsize - 1) cannot overflow. */
static void test_batch_bounds(void)
{
    CallMsg m = sample();
    m.opt.batchsize = INT64_MAX;
    m.opt.nbatches = INT64_MAX;
    WBuf b = {0};
    encode(&b, &m, 0, 2);
    Value part = part_of(7, 7), empty = part_of(0, 0);
    CallMsg c;
    int64_t id;
    CHECK(decode(&b, part, &c, &id) == NULL);
    CHECK(c.opt.batchsize == 7 && c.opt.nbatches == 7);
    ps_call_free(&c);
    CHECK(decode(&b, empty, &c, &id) == NULL);
    CHECK(c.opt.batchsize == 1 && c.opt.nbatches == 1);
    ps_call_free(&c);
    val_release(part);
    val_release(empty);
    wb_free(&b);
}

/* list(model, 2 x n matrix): ranks on the first row, workers on the second. */
static Value tree_of(const double *ranks, const double *workers, int64_t n)
{
    List *l = list_new(2, false);
    list_push_take(l, val_list_take(list_new(0, false)), NULL);
    Matrix *m = mat_new_raw(2, n);
    for (int64_t i = 0; i < n; i++) {
        m->data[i] = ranks[i];
        m->data[n + i] = workers[i];
    }
    list_push_take(l, val_matrix_take(m), NULL);
    return val_list_take(l);
}

/* A model for several workers on several ranks (tp_mpi_tree.h): rank 1 of
 * 6, running workers 0..2, takes its own and passes on the rest; pairs out
 * of order, out of range, twice, or none for this rank are refused. */
static void test_models_read(void)
{
    double r[] = {1, 1, 2, 2, 5}, w[] = {0, 2, 3, 4, 9};
    Value v = tree_of(r, w, 5);
    int *rest, *mine, nrest, nmine;
    CHECK(tp_models_read(v, 1, 6, 0, 3, &rest, &nrest, &mine, &nmine));
    CHECK(nmine == 2 && mine[0] == 0 && mine[1] == 2 && nrest == 3 && rest[0] == 2 && rest[1] == 3 &&
          rest[4] == 5 && rest[5] == 9);
    free(rest);
    free(mine);
    val_release(v);
    double bad_r[][3] = {{1, 1, 2}, {1, 2, 1}, {2, 1, 3}, {1, 6, 2}, {1, 0, 2}, {1, NAN, 2}, {1, 1.5, 2}, {1, 1, 2},
                         {1, 2, 3}};
    double bad_w[][3] = {{1, 1, 3}, {0, 3, 1}, {3, 0, 4}, {0, 3, 4}, {0, 3, 4}, {0, 3, 4}, {0, 3, 4}, {2, 1, 3},
                         {5, 3, 4}};
    for (int i = 0; i < 9; i++) {
        v = tree_of(bad_r[i], bad_w[i], 3);
        CHECK(!tp_models_read(v, 1, 6, 0, 3, &rest, &nrest, &mine, &nmine) && !rest && !mine);
        val_release(v);
    }
    CHECK(!tp_models_read(val_int(3), 1, 6, 0, 3, &rest, &nrest, &mine, &nmine));
}

/* A sum of pushes (MM_PUSH_SUM) as rank 0 reads it: the workers it covers
 * and their batches; another call's, a worker twice or beyond k, or a
 * batch below 1 are refused. */
static void test_push_sum_read(void)
{
    double good[] = {7, 2, 3, 0, 3};
    double bad[][5] = {{6, 2, 3, 0, 3}, {7, 2, 3, 2, 3}, {7, 2, 3, 4, 3}, {7, 2, 0, 0, 3}, {7, -1, 3, 0, 3},
                       {7, 2, 3, 0, NAN}};
    for (int i = 0; i < 7; i++) {
        const double *d = i == 0 ? good : bad[i - 1];
        List *l = list_new(2, false);
        list_push_take(l, val_list_take(list_new(0, false)), NULL);
        Matrix *m = mat_new_raw(1, 5);
        memcpy(m->data, d, sizeof good);
        list_push_take(l, val_matrix_take(m), NULL);
        MpiMsg msg = {.value = val_list_take(l)};
        Value sum;
        int64_t *w, *b, n;
        bool ok = tp_push_sum_read(&msg, 4, 7, &sum, &w, &b, &n);
        CHECK(ok == (i == 0));
        if (ok) {
            CHECK(n == 2 && w[0] == 2 && b[0] == 3 && w[1] == 0 && b[1] == 3 && sum.kind == VAL_LIST);
            free(w);
            free(b);
            val_release(sum);
        }
        CHECK(msg.value.kind == VAL_NONE);
    }
}

/* A DONE's statistics: what a rank sent comes back; counts that rank 0's
 * sums over the ranks would overflow, negative counts and times, NaN
 * times, a short message are refused (and zeroed). */
static void test_stats_read(void)
{
    PsWorkerStats good = {.compute = 1.5, .wait = 0.25, .cpu = 3, .pulls = 10, .pushes = 10, .batches = 40,
                          .bytes_pulled = 4096, .bytes_pushed = 2048};
    for (int i = 0; i < 7; i++) {
        PsWorkerStats s = good;
        switch (i) {
        case 1: s.pulls = INT64_MAX; break;
        case 2: s.batches = -1; break;
        case 3: s.bytes_pushed = UINT64_MAX; break;
        case 4: s.wait = NAN; break;
        case 5: s.cpu = -1; break;
        case 6: s.compute = INFINITY; break;
        default: break;
        }
        WBuf b = {0};
        ps_stats_xfer(&(WIO){.w = &b}, &s);
        WRead r = {.p = b.p, .len = b.len};
        PsWorkerStats got;
        bool ok = ps_stats_read(&r, &got);
        CHECK(ok == (i == 0));
        CHECK(ok ? got.pulls == 10 && got.bytes_pushed == 2048 && got.wait == 0.25
                 : got.pulls == 0 && got.compute == 0);
        r = (WRead){.p = b.p, .len = b.len - 1};
        CHECK(!ps_stats_read(&r, &got));
        wb_free(&b);
    }
}

/* DYNAMIC's MM_TASK value: what ps_task_value makes, ps_task_read reads
 * back (7 rows in batches of 3: batches j0 .. j0 + 3); malformed ones are
 * refused with nothing owned. */
static void test_task(void)
{
    List *ml = list_new(1, false);
    list_push_take(ml, val_matrix_take(mat_new_raw(2, 2)), NULL);
    Value model = val_list_take(ml);
    PsTask t = {.epoch = 3, .id = 5, .part = 1, .group = 2, .j0 = 6};
    Value v = ps_task_value(model, mat_new_raw(7, 4), mat_new_raw(7, 1), &t);
    CHECK(v.kind == VAL_LIST);
    Value m2;
    PsTask r;
    CHECK(ps_task_read(v, 3, 3, &m2, &r));
    CHECK(r.epoch == 3 && r.id == 5 && r.part == 1 && r.group == 2 && r.j0 == 6 && r.j1 == 9 && r.row0 == 0 &&
          r.row1 == 7 && r.X->cols == 4 && r.Y->cols == 1 && m2.kind == VAL_LIST && m2.l == model.l);
    val_release(m2);
    ps_task_clear(&r);
    CHECK(r.X == NULL && r.epoch == -1);
    /* A negative epoch, batchsize 0, a fractional meta, labels short. */
    CHECK(!ps_task_read(v, -1, 3, &m2, &r) && m2.kind == VAL_NONE && !r.X);
    CHECK(!ps_task_read(v, 0, 0, &m2, &r));
    v.l->items[3].m->data[1] = 2.5;
    CHECK(!ps_task_read(v, 0, 3, &m2, &r));
    v.l->items[3].m->data[1] = 2;
    Matrix *y = v.l->items[2].m;
    v.l->items[2] = val_matrix_take(mat_new_raw(6, 1));
    CHECK(!ps_task_read(v, 0, 3, &m2, &r));
    mat_release(y);
    CHECK(!ps_task_read(model, 0, 3, &m2, &r));
    val_release(v);
    val_release(model);
}

int main(void)
{
    test_task();
    test_stats_read();
    test_round_trip();
    test_absent_strings_refused();
    test_options_refused();
    test_partition_checked();
    test_batch_bounds();
    test_models_read();
    test_push_sum_read();
    return CHECK_DONE();
}
