/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the byte format of paramserv's Open MPI messages
 * (builtins/paramserv/wire.c, msg.c): every decoder that a rank applies to
 * bytes received from another rank, picked by the first input byte:
 *   0  a value with its cells (wr_value): a pushed gradient list, a model
 *   1  a value's layout (wr_value_layout, as mpi_poll reads one), its
 *      matrices' cells filled from the rest of the input, then looked at as
 *      a model tree message (tp_models_read) and a sum of pushes
 *      (tp_push_sum_read) would
 *   2  a CALL (ps_call_read) with its partition list(X, Y) as the value
 *      that follows it in the input
 *   3  strings (wr_str, wr_strn): HELLO's host names, FAIL's message
 *   4  a DONE's statistics (ps_stats_read)
 *   5  a DYNAMIC task (ps_task_read): a batchsize, then a value with cells
 * What decodes must encode back and decode to the same bytes again. Any
 * crash, leak, sanitizer report or round-trip mismatch is a bug, and so is
 * an allocation out of proportion to the input (the total allocated while
 * decoding is bounded by ALLOC_RATIO times the input's size, plus the
 * layout budget): a claimed count or size must be refused before anything
 * is allocated for it.
 *
 * Build and run: make fuzz; see tests/fuzz/README.md. */
#include "../../builtins/paramserv/msg.h"
#include "../../builtins/paramserv/tp_mpi_tree.h"
#include "alloc_count.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cells a layout may claim here (mpi_poll allows the host's memory). */
#define LAYOUT_BUDGET ((uint64_t)1 << 20)
#define ALLOC_RATIO 32

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* alloc_count.h's 'counting' is set while decoding; round trips do not count. */

/* Encoded a second time, the decoded value gives the same bytes. */
static void value_round_trip(Value v)
{
    int was = counting;
    counting = 0;
    WBuf a = {0}, b = {0};
    wb_value(&a, v);
    if (a.oom)
        abort();
    WRead r = {.p = a.p, .len = a.len};
    Value w = wr_value(&r);
    if (r.bad || r.pos != a.len)
        abort();
    wb_value(&b, w);
    if (b.oom || b.len != a.len || (a.len && memcmp(a.p, b.p, a.len) != 0))
        abort();
    val_release(w);
    wb_free(&a);
    wb_free(&b);
    counting = was;
}

static void fuzz_value(WRead *r)
{
    Value v = wr_value(r);
    if (r->bad && v.kind != VAL_NONE)
        abort();
    if (!r->bad)
        value_round_trip(v);
    val_release(v);
}

static void fuzz_layout(WRead *r)
{
    Value v = wr_value_layout(r, LAYOUT_BUDGET);
    if (r->bad) {
        if (v.kind != VAL_NONE)
            abort();
        return;
    }
    /* The cells arrive apart (mpi_poll); here from the rest of the input. */
    int64_t n = wire_matrices(v, NULL, 0);
    Matrix **mats = calloc((size_t)n + 1, sizeof *mats);
    if (!mats)
        abort();
    wire_matrices(v, mats, n);
    uint64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t bytes = sizeof(double) * (size_t)mat_len(mats[i]);
        total += bytes;
        if (!bytes)
            continue;
        size_t have = r->len - r->pos < bytes ? r->len - r->pos : bytes;
        memset(mats[i]->data, 0, bytes);
        memcpy(mats[i]->data, r->p + r->pos, have);
        r->pos += have;
    }
    free(mats);
    if (total > LAYOUT_BUDGET)
        abort();
    /* As a model tree message (tp_models_read): rank 1 of 8, workers 2..4. */
    int *rest, *mine, nrest, nmine;
    if (tp_models_read(v, 1, 8, 2, 5, &rest, &nrest, &mine, &nmine)) {
        for (int i = 0; i < nrest; i++)
            if (rest[2 * i] < 2 || rest[2 * i] >= 8 || rest[2 * i + 1] < 0)
                abort();
        for (int i = 0; i < nmine; i++)
            if (mine[i] < 2 || mine[i] >= 5)
                abort();
        free(rest);
        free(mine);
    }
    /* As a sum of pushes (tp_push_sum_read), k = 6, call 1. */
    MpiMsg pm = {.value = val_ref(v)};
    Value sum;
    int64_t *sw, *sb, sn;
    if (tp_push_sum_read(&pm, 6, 1, &sum, &sw, &sb, &sn)) {
        for (int64_t i = 0; i < sn; i++)
            if (sw[i] < 0 || sw[i] >= 6 || sb[i] < 1)
                abort();
        free(sw);
        free(sb);
        val_release(sum);
    }
    value_round_trip(v);
    val_release(v);
}

static void call_encode(WBuf *b, CallMsg *m, int64_t id, int64_t k)
{
    ps_call_xfer(&(WIO){.w = b}, m);
    ps_part_xfer(&(WIO){.w = b}, &id, &k);
    if (b->oom)
        abort();
}

static void fuzz_call(WRead *r)
{
    CallMsg m;
    int64_t id;
    /* The partition follows the CALL: decode it first from where the
     * CALL ends, so the CALL is read from the bytes before it. */
    WRead probe = *r;
    CallMsg skip;
    int64_t sid;
    ps_call_read(&probe, &skip, val_none(), &sid);
    ps_call_free(&skip);
    WRead pr = {.p = r->p + probe.pos, .len = r->len - probe.pos};
    Value part = probe.bad ? val_none() : wr_value(&pr);
    const char *why = ps_call_read(r, &m, part, &id);
    if (!why) {
        /* What a worker rank goes on to use. */
        const Matrix *X = part.l->items[0].m;
        int64_t rows = X->rows > 0 ? X->rows : 1;
        if (!m.main_path || !m.main_text || m.opt.batchsize < 1 || m.opt.batchsize > rows || m.opt.nbatches < 1 ||
            m.opt.nbatches > rows || id < 0 || part.l->items[1].m->rows != X->rows)
            abort();
        for (int64_t i = 0; i < m.nargs; i++)
            if (!m.args[i].name || !m.args[i].text)
                abort();
        for (int64_t i = 0; i < m.nfiles; i++)
            if (!m.files[i].key || !m.files[i].path || !m.files[i].text)
                abort();
        /* Written back and read again: the same call. k is the CALL's
         * last field. */
        counting = 0;
        int64_t k;
        memcpy(&k, r->p + r->pos - sizeof k, sizeof k);
        WBuf a = {0}, b = {0};
        call_encode(&a, &m, id, k);
        WRead ra = {.p = a.p, .len = a.len};
        CallMsg m2;
        int64_t id2;
        if (ps_call_read(&ra, &m2, part, &id2) || id2 != id || ra.pos != a.len)
            abort();
        call_encode(&b, &m2, id2, k);
        if (b.len != a.len || memcmp(a.p, b.p, a.len) != 0)
            abort();
        ps_call_free(&m2);
        wb_free(&a);
        wb_free(&b);
        counting = 1;
    } else if (strcmp(why, "malformed paramserv call") != 0 && strcmp(why, "out of memory") != 0) {
        abort();
    }
    ps_call_free(&m);
    val_release(part);
}

static void fuzz_strings(WRead *r)
{
    while (!r->bad) {
        WRead peek = *r;
        size_t n;
        const char *p = wr_strn(&peek, &n);
        char *s = wr_str(r);
        if (s && (!p || strncmp(s, p, n) != 0 || s[n] != '\0'))
            abort();
        if (r->pos != peek.pos || r->bad != peek.bad)
            abort();
        free(s);
        if (!s && !r->bad && r->pos == r->len)
            break;
    }
}

static void fuzz_stats(WRead *r)
{
    PsWorkerStats s;
    size_t at = r->pos;
    if (!ps_stats_read(r, &s)) {
        PsWorkerStats zero = {0};
        if (memcmp(&s, &zero, sizeof s) != 0)
            abort();
        return;
    }
    WBuf b = {0};
    ps_stats_xfer(&(WIO){.w = &b}, &s);
    if (b.oom || b.len != r->pos - at || memcmp(b.p, r->p + at, b.len) != 0)
        abort();
    wb_free(&b);
}

static void fuzz_task(WRead *r)
{
    int64_t bs = wr_i64(r);
    Value v = wr_value(r);
    Value model;
    PsTask t;
    if (ps_task_read(v, 0, bs, &model, &t)) {
        /* What the worker loop goes on to use (worker.c run_group). */
        if (model.kind != VAL_LIST || !t.X || !t.Y || t.X->rows != t.Y->rows || t.row0 != 0 ||
            t.row1 != t.X->rows || t.row1 < 1 || t.j1 <= t.j0 || bs < 1 || (t.j1 - t.j0 - 1) > (t.row1 - 1) / bs)
            abort();
        val_release(model);
        ps_task_clear(&t);
    } else if (model.kind != VAL_NONE || t.X || t.Y) {
        abort();
    }
    val_release(v);
}

/* ---- the seed corpus (DML_FUZZ_SEEDS=dir): real messages from the
 * encoders, and hand-made hostile ones ---- */

static const char *seed_dir;

static void put_seed(const char *name, int mode, const WBuf *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", seed_dir, name);
    FILE *f = fopen(path, "wb");
    unsigned char m = (unsigned char)mode;
    if (!f || fwrite(&m, 1, 1, f) != 1 || (b->len && fwrite(b->p, 1, b->len, f) != b->len) || fclose(f) != 0)
        abort();
}

/* The same bytes as a value (mode 0) and as a layout (mode 1), the seeds
 * named value_<what>_<n> and layout_<what>_<n>. */
static void put_seed_both(const char *what, int n, const WBuf *b)
{
    char name[128];
    snprintf(name, sizeof name, "value_%s_%d", what, n);
    put_seed(name, 0, b);
    snprintf(name, sizeof name, "layout_%s_%d", what, n);
    put_seed(name, 1, b);
}

static Matrix *mat_seq(int64_t r, int64_t c, double start)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++)
        m->data[i] = start + (double)i * 0.5;
    return m;
}

/* A model as nn scripts make one: list(W1, b1, W2, b2), optionally named. */
static Value model_value(bool named)
{
    List *l = list_new(4, named);
    list_push_take(l, val_matrix_take(mat_seq(4, 3, 0.25)), named ? "W1" : NULL);
    list_push_take(l, val_matrix_take(mat_seq(1, 3, -1)), named ? "b1" : NULL);
    list_push_take(l, val_matrix_take(mat_seq(3, 2, 2)), named ? "W2" : NULL);
    list_push_take(l, val_matrix_take(mat_seq(1, 2, 0)), named ? "b2" : NULL);
    return val_list_take(l);
}

static Value hyper_value(void)
{
    List *l = list_new(4, true);
    list_push_take(l, val_double(0.01), "lr");
    list_push_take(l, val_int(32), "batch");
    list_push_take(l, val_bool(true), "nesterov");
    list_push_take(l, val_str_take(str_from("adam")), "optimizer");
    List *in = list_new(2, false);
    list_push_take(in, val_double(0.9), NULL);
    list_push_take(in, val_none(), NULL);
    list_push_take(l, val_list_take(in), "betas");
    return val_list_take(l);
}

/* wb_value's header of a list, for lists the encoder would not write. */
static void list_head(WBuf *b, int64_t n, bool named)
{
    wb_i64(b, 6);       /* WIRE_LIST */
    wb_i64(b, n);
    wb_i64(b, named);
}

static void seed_values(void)
{
    Value vals[] = {val_int(-7), val_double(0.0 / 0.0), val_bool(true), val_str_take(str_from("a string")),
                    val_matrix_take(mat_seq(2, 3, 1)), val_matrix_take(mat_seq(0, 5, 0)), model_value(true),
                    model_value(false), hyper_value(), val_none()};
    const char *names[] = {"value_int", "value_nan", "value_bool", "value_string", "value_matrix",
                           "value_matrix_0x5", "value_model_named", "value_model", "value_hyper", "value_none"};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        WBuf b = {0};
        wb_value(&b, vals[i]);
        put_seed(names[i], 0, &b);
        wb_free(&b);
        /* Its layout with the cells after it: what mpi_send_value sends. */
        wb_value_layout(&b, vals[i]);
        int64_t n = wire_matrices(vals[i], NULL, 0);
        Matrix **mats = calloc((size_t)n + 1, sizeof *mats);
        wire_matrices(vals[i], mats, n);
        for (int64_t k = 0; k < n; k++)
            wb_bytes(&b, mats[k]->data, sizeof(double) * (size_t)mat_len(mats[k]));
        free(mats);
        char lname[64];
        snprintf(lname, sizeof lname, "layout_%s", names[i] + 6);
        put_seed(lname, 1, &b);
        wb_free(&b);
        val_release(vals[i]);
    }
    /* A model tree message: list(model, ranks to pass it on to). */
    List *t = list_new(2, false);
    list_push_take(t, model_value(false), NULL);
    Matrix *fwd = mat_new_raw(1, 3);
    fwd->data[0] = 3, fwd->data[1] = 5, fwd->data[2] = 7;
    list_push_take(t, val_matrix_take(fwd), NULL);
    Value tv = val_list_take(t);
    WBuf b = {0};
    wb_value_layout(&b, tv);
    Matrix *mats[8];
    int64_t n = wire_matrices(tv, mats, 8);
    for (int64_t k = 0; k < n; k++)
        wb_bytes(&b, mats[k]->data, sizeof(double) * (size_t)mat_len(mats[k]));
    put_seed("layout_model_tree", 1, &b);
    wb_free(&b);
    val_release(tv);
    /* Hostile: sizes and counts. */
    int64_t dims[][2] = {{(int64_t)1 << 60, 1}, {1, (int64_t)1 << 60}, {(int64_t)1 << 30, (int64_t)1 << 30},
                         {-1, 4}, {INT64_MAX, INT64_MAX}, {131072, 1}};
    for (int i = 0; i < 6; i++) {
        wb_i64(&b, 5);  /* WIRE_MATRIX */
        wb_i64(&b, dims[i][0]);
        wb_i64(&b, dims[i][1]);
        put_seed_both("matrix_claims", i, &b);
        wb_free(&b);
    }
    /* Many matrices, each within the layout budget, past it together. */
    list_head(&b, 64, false);
    for (int i = 0; i < 64; i++) {
        wb_i64(&b, 5);
        wb_i64(&b, 512);
        wb_i64(&b, 512);
    }
    put_seed("layout_many_matrices", 1, &b);
    wb_free(&b);
    int64_t counts[] = {(int64_t)1 << 60, INT64_MAX, -1, 1000};
    for (int i = 0; i < 4; i++) {
        list_head(&b, counts[i], i == 3);
        wb_i64(&b, 2);
        wb_i64(&b, 1);
        char name[64];
        snprintf(name, sizeof name, "value_list_claims_%d", i);
        put_seed(name, 0, &b);
        wb_free(&b);
    }
    /* Nested 64 deep (the most wb_value writes) and 65 (refused), each
     * level claiming the whole rest of the message. */
    for (int depth = 64; depth <= 65; depth++) {
        for (int i = 0; i < depth; i++)
            list_head(&b, 4096, false);
        wb_i64(&b, 2);
        wb_i64(&b, 42);
        for (int i = 0; i < 512; i++)
            wb_i64(&b, 0);
        put_seed_both("nested", depth, &b);
        wb_free(&b);
    }
    wb_i64(&b, 99);     /* no such kind */
    put_seed("value_bad_kind", 0, &b);
    wb_free(&b);
    wb_i64(&b, 4);      /* a string longer than the message */
    wb_i64(&b, (int64_t)1 << 62);
    wb_bytes(&b, "abc", 3);
    put_seed("value_string_claims", 0, &b);
    wb_free(&b);
}

static void seed_calls(void)
{
    static const char main_text[] =
        "source(\"lib/m.dml\") as m\n"
        "model = list(matrix(0.5, 3, 2), matrix(0, 1, 2))\n"
        "X = rand(rows=10, cols=3, seed=1); Y = rand(rows=10, cols=2, seed=2)\n"
        "out = paramserv(model=model, features=X, labels=Y, upd=\"m::gradients\", agg=\"m::aggregation\",\n"
        "    k=2, epochs=3, batchsize=4, hyperparams=list(lr=0.1))\n";
    static const char lib_text[] =
        "gradients = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features,\n"
        "    matrix[double] labels) return (list[unknown] gradients) { gradients = model }\n"
        "aggregation = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients)\n"
        "    return (list[unknown] model_result) { model_result = model }\n";
    CmdArg args[] = {{"$1", "data/x.csv"}, {"$out", ""}};
    ShippedFile files[] = {{"./lib/m.dml", "lib/m.dml", lib_text, sizeof lib_text - 1}};
    CallMsg m = {.main_path = "train.dml", .main_text = main_text, .main_len = sizeof main_text - 1,
                 .args = args, .nargs = 2, .files = files, .nfiles = 1, .upd_key = "./lib/m.dml",
                 .upd_name = "gradients", .agg_key = "./lib/m.dml", .agg_name = "aggregation",
                 .agg_spec = "m::aggregation",
                 .opt = {.utype = PS_UTYPE_BSP, .freq = PS_FREQ_BATCH, .epochs = 3, .batchsize = 4, .nbatches = 1,
                         .model_avg = false, .seed = 42},
                 .start_epoch = 0, .hyper = hyper_value()};
    List *p = list_new(2, false);
    list_push_take(p, val_matrix_take(mat_seq(5, 3, 0)), NULL);
    list_push_take(p, val_matrix_take(mat_seq(5, 2, 1)), NULL);
    Value part = val_list_take(p);
    struct {
        const char *name;
        int64_t id, k, batchsize, freq;
    } v[] = {{"call_ok", 0, 2, 4, PS_FREQ_BATCH}, {"call_ok_nbatches", 1, 2, 4, PS_FREQ_NBATCHES},
             {"call_batchsize_int64max", 1, 2, INT64_MAX, PS_FREQ_EPOCH}, {"call_id_out_of_range", 2, 2, 4, 0},
             {"call_bad_freq", 0, 1, 4, 7}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        WBuf b = {0};
        m.opt.batchsize = v[i].batchsize;
        m.opt.freq = (PsFreq)v[i].freq;
        m.opt.nbatches = v[i].freq == PS_FREQ_NBATCHES ? INT64_MAX : 1;
        call_encode(&b, &m, v[i].id, v[i].k);
        wb_value(&b, part);
        put_seed(v[i].name, 2, &b);
        wb_free(&b);
    }
    /* A shipped file whose key is absent (NULL). */
    ShippedFile nokey[] = {{NULL, "lib/m.dml", lib_text, sizeof lib_text - 1}};
    m.files = nokey;
    m.opt.batchsize = 4;
    m.opt.freq = PS_FREQ_BATCH;
    m.opt.nbatches = 1;
    WBuf b = {0};
    call_encode(&b, &m, 0, 2);
    wb_value(&b, part);
    put_seed("call_file_key_absent", 2, &b);
    wb_free(&b);
    /* Y shorter than X. */
    m.files = files;
    call_encode(&b, &m, 0, 2);
    List *q = list_new(2, false);
    list_push_take(q, val_matrix_take(mat_seq(5, 3, 0)), NULL);
    list_push_take(q, val_matrix_take(mat_seq(2, 2, 1)), NULL);
    Value short_part = val_list_take(q);
    wb_value(&b, short_part);
    put_seed("call_labels_short", 2, &b);
    wb_free(&b);
    val_release(short_part);
    /* Counts of args and files past the message. */
    wb_str(&b, "train.dml");
    wb_strn(&b, "x = 1\n", 6);
    wb_i64(&b, (int64_t)1 << 61);
    put_seed("call_nargs_claims", 2, &b);
    wb_free(&b);
    val_release(part);
    val_release(m.hyper);
}

static void seed_strings_stats(void)
{
    WBuf b = {0};
    wb_str(&b, "node-0");
    wb_str(&b, "node-1.cluster.example");
    wb_str(&b, NULL);
    wb_str(&b, "");
    put_seed("strings_hosts", 3, &b);
    wb_free(&b);
    wb_str(&b, "paramserv: worker 2 (rank 2 on node-1) failed: Error in m::gradients: nonconformable");
    put_seed("strings_fail", 3, &b);
    wb_free(&b);
    wb_i64(&b, INT64_MAX);
    wb_bytes(&b, "host", 4);
    put_seed("strings_claims", 3, &b);
    wb_free(&b);
    PsWorkerStats st = {.compute = 1.5, .local_agg = 0.25, .wait = 0.125, .slice = 0.01, .cpu = 2.5,
                        .pulls = 30, .pushes = 30, .batches = 30, .bytes_pulled = 1 << 20, .bytes_pushed = 1 << 19};
    ps_stats_xfer(&(WIO){.w = &b}, &st);
    put_seed("stats_done", 4, &b);
    wb_free(&b);
    st.pulls = INT64_MAX;
    st.wait = -1.0 / 0.0;
    ps_stats_xfer(&(WIO){.w = &b}, &st);
    put_seed("stats_int64max_pulls", 4, &b);
    b.len -= 5;
    put_seed("stats_truncated", 4, &b);
    wb_free(&b);
}

/* DYNAMIC tasks: a real one (a 2-entry model, 5 rows, meta [1, 2, 7, 4]),
 * one whose meta is not whole, one with labels short of the features. */
static void seed_tasks(void)
{
    List *m = list_new(2, false);
    list_push_take(m, val_matrix_take(mat_seq(3, 2, 0)), NULL);
    list_push_take(m, val_matrix_take(mat_seq(1, 2, 1)), NULL);
    Value model = val_list_take(m);
    PsTask t = {.epoch = 0, .part = 1, .group = 2, .id = 7, .j0 = 4};
    const struct {
        const char *name;
        int64_t yrows;
        double meta3;
    } v[] = {{"task_ok", 5, 4}, {"task_meta_fraction", 5, 4.5}, {"task_labels_short", 2, 4}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        Value tv = ps_task_value(model, mat_seq(5, 3, 0), mat_seq(v[i].yrows, 1, 1), &t);
        tv.l->items[3].m->data[3] = v[i].meta3;
        WBuf b = {0};
        wb_i64(&b, 2);
        wb_value(&b, tv);
        put_seed(v[i].name, 5, &b);
        wb_free(&b);
        val_release(tv);
    }
    val_release(model);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    seed_dir = getenv("DML_FUZZ_SEEDS");
    if (seed_dir) {
        seed_values();
        seed_calls();
        seed_strings_stats();
        seed_tasks();
    }
    alloc_count_install();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* A copy of exactly the input, so reading past it is an ASan report. */
    char *buf = malloc(size - 1 ? size - 1 : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    WRead r = {.p = buf, .len = size - 1};
    allocated = 0;
    counting = 1;
    switch (data[0] % 6) {
    case 0: fuzz_value(&r); break;
    case 1: fuzz_layout(&r); break;
    case 2: fuzz_call(&r); break;
    case 3: fuzz_strings(&r); break;
    case 4: fuzz_stats(&r); break;
    default: fuzz_task(&r); break;
    }
    counting = 0;
    if (allocated > ALLOC_RATIO * size + LAYOUT_BUDGET + 65536)
        abort();
    free(buf);
    return 0;
}
