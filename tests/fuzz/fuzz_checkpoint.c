/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for paramserv checkpoint files (builtins/paramserv/
 * checkpoint.c): the input is the file's bytes, read (ps_ckpt_read, from
 * memory) for one fixed paramserv call, a named two-matrix model with
 * hyperparameters. Reading must fail with an error that names the file, or
 * succeed with the call's model shapes; a file that succeeds must be the
 * very bytes ps_ckpt_write writes for what was read. Any crash, leak,
 * sanitizer report or mismatch is a bug, and so is an allocation out of
 * proportion to the input (ALLOC_RATIO times its size, plus the model):
 * a damaged length must not cost memory the file does not hold.
 *
 * DML_FUZZ_SEEDS=dir makes the start-up write the seed corpus there:
 * checkpoints ps_ckpt_write wrote for this call and for calls that differ
 * from it (data, options, shapes), and hand-made damaged ones.
 *
 * Build and run: make fuzz; see tests/fuzz/README.md. */
#include "../../builtins/paramserv/ps.h"
#include "alloc_count.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALLOC_RATIO 4

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Fixture {
    List *model, *hyper;
    Matrix *X, *Y;
    PsConfig c;
    char path[96];
} Fixture;

static Interp I;
static Fixture F;
static char dir[64];

static Matrix *mat_seq(int64_t r, int64_t c, double start)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; m && i < r * c; i++)
        m->data[i] = start + (double)i * 0.25;
    return m;
}

/* The call: model list(W = 3x2, b = 1x2) (or 'shapes' more matrices
 * when asked, for seeds of another call), batchsize 'bs'. */
static void fixture_init(Fixture *f, const char *name, int64_t bs, int extra)
{
    memset(f, 0, sizeof *f);
    f->model = list_new(2, true);
    list_push_take(f->model, val_matrix_take(mat_seq(3, 2, 1.0)), "W");
    list_push_take(f->model, val_matrix_take(mat_seq(1, 2, -4.0)), "b");
    for (int i = 0; i < extra; i++)
        list_push_take(f->model, val_matrix_take(mat_seq(2, 2, 0.5)), "extra");
    f->hyper = list_new(2, true);
    list_push_take(f->hyper, val_double(0.01), "lr");
    list_push_take(f->hyper, val_matrix_take(mat_seq(1, 3, 7.0)), "mask");
    f->X = mat_seq(10, 3, 0.5);
    f->Y = mat_seq(10, 1, 2.0);
    snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    PsConfig *c = &f->c;
    c->model = f->model;
    c->hyper = f->hyper;
    c->X = f->X;
    c->Y = f->Y;
    c->upd_spec = "./lib/m.dml::gradients";
    c->agg_spec = "./lib/m.dml::aggregation";
    c->utype = PS_UTYPE_BSP;
    c->freq = PS_FREQ_BATCH;
    c->scheme = PS_SCHEME_DC;
    c->epochs = 5;
    c->batchsize = bs;
    c->k = 2;
    c->nbatches = 1;
    c->backup = 1;
    c->staleness = 1;
    c->seed = 7;
    c->seed_given = true;
    c->ckpt = PS_CKPT_EPOCH;
    c->ckpt_path = f->path;
    if (ps_ckpt_prepare(&I, c) != ST_OK)
        abort();
}

static void fixture_free(Fixture *f)
{
    ps_config_free(&f->c);
    list_release(f->model);
    list_release(f->hyper);
    mat_release(f->X);
    mat_release(f->Y);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096)))
            abort();
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void put_file(const char *seeds, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", seeds, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
        abort();
}

/* A checkpoint of f's call with 'done' epochs, as a seed named 'name'. */
static void seed_written(const char *seeds, Fixture *f, int64_t done, const char *name)
{
    if (ps_ckpt_write(&I, &f->c, f->model, done) != ST_OK)
        abort();
    size_t n;
    char *b = slurp(f->path, &n);
    put_file(seeds, name, b, n);
    free(b);
    unlink(f->path);
}

static void write_seeds(const char *seeds)
{
    seed_written(seeds, &F, 0, "ok_epochs0");
    seed_written(seeds, &F, 3, "ok_epochs3");
    seed_written(seeds, &F, INT64_MAX, "ok_epochs_int64max");
    Fixture g;
    fixture_init(&g, "other", 4, 0);            /* another batchsize */
    seed_written(seeds, &g, 1, "other_batchsize");
    fixture_free(&g);
    fixture_init(&g, "other", 2, 1);            /* another model */
    seed_written(seeds, &g, 1, "other_model");
    fixture_free(&g);
    /* Damaged by hand: from the good one, whose header is magic, siglen,
     * the signature, epochs, n. */
    size_t n;
    if (ps_ckpt_write(&I, &F.c, F.model, 2) != ST_OK)
        abort();
    char *b = slurp(F.path, &n);
    unlink(F.path);
    put_file(seeds, "truncated_half", b, n / 2);
    put_file(seeds, "truncated_checksum", b, n - 3);
    put_file(seeds, "magic_only", b, 8);
    uint64_t siglen;
    memcpy(&siglen, b + 8, 8);
    size_t at_n = 16 + (size_t)siglen + 8;
    char *d = malloc(n);
    uint64_t huge[] = {(uint64_t)1 << 60, (uint64_t)1 << 24, ((uint64_t)1 << 24) + 1, UINT64_MAX};
    const char *hname[] = {"siglen_2p60", "siglen_max", "siglen_max_plus1", "siglen_all_ones"};
    for (int i = 0; i < 4; i++) {
        memcpy(d, b, n);
        memcpy(d + 8, &huge[i], 8);
        put_file(seeds, hname[i], d, n);
    }
    int64_t counts[] = {INT64_MAX, -1, 1, 3};
    const char *cname[] = {"n_int64max", "n_negative", "n_fewer", "n_more"};
    for (int i = 0; i < 4; i++) {
        memcpy(d, b, n);
        memcpy(d + at_n, &counts[i], 8);
        put_file(seeds, cname[i], d, n);
    }
    int64_t dims[] = {(int64_t)1 << 60, 1};
    memcpy(d, b, n);
    memcpy(d + at_n + 8, dims, 16);
    put_file(seeds, "matrix_2p60_rows", d, n);
    int64_t neg = -5;
    memcpy(d, b, n);
    memcpy(d + at_n - 8, &neg, 8);
    put_file(seeds, "epochs_negative", d, n);
    memcpy(d, b, n);
    memcpy(d, "DMLPSCK1", 8);
    put_file(seeds, "magic_v1", d, n);
    memcpy(d, b, n);
    memcpy(d, "DMLPSCK2", 8);
    put_file(seeds, "magic_v2", d, n);
    memcpy(d, b, n);
    d[20] = '\0';                               /* a NUL inside the signature */
    put_file(seeds, "sig_nul", d, n);
    memcpy(d, b, n);
    d[n - 1] ^= 1;
    put_file(seeds, "checksum_flipped", d, n);
    put_file(seeds, "empty", "", 0);
    free(d);
    free(b);
}

static void cleanup(void)
{
    fixture_free(&F);
    interp_destroy(&I);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/dml_fuzz_ckpt.XXXXXX");
    if (!mkdtemp(dir))
        abort();
    interp_init(&I, NULL, 1);
    fixture_init(&F, "ck", 2, 0);
    const char *seeds = getenv("DML_FUZZ_SEEDS");
    if (seeds)
        write_seeds(seeds);
    atexit(cleanup);
    alloc_count_install();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* fmemopen refuses an empty buffer: an empty file is /dev/null. */
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    if (!f)
        return 0;
    Value m = val_none();
    int64_t done = -1;
    allocated = 0;
    counting = 1;
    Status st = ps_ckpt_read(&I, &F.c, f, &m, &done);
    counting = 0;
    fclose(f);
    if (allocated > ALLOC_RATIO * size + 65536)
        abort();
    if (st != ST_OK) {
        /* An error that names the file. */
        if (m.kind != VAL_NONE || !I.err.msg || !strstr(I.err.msg, F.path))
            abort();
        err_clear(&I);
        return 0;
    }
    const List *l = m.kind == VAL_LIST ? m.l : NULL;
    if (!l || l->n != F.model->n || done < 0)
        abort();
    for (int64_t i = 0; i < l->n; i++) {
        const Matrix *a = l->items[i].m, *b = F.model->items[i].m;
        if (l->items[i].kind != VAL_MATRIX || a->rows != b->rows || a->cols != b->cols ||
            strcmp(l->names[i]->s, F.model->names[i]->s) != 0)
            abort();
    }
    /* Written back: the same bytes. */
    if (ps_ckpt_write(&I, &F.c, l, done) != ST_OK)
        abort();
    size_t n;
    char *back = slurp(F.path, &n);
    unlink(F.path);
    if (n != size || memcmp(back, data, n) != 0)
        abort();
    free(back);
    val_release(m);
    return 0;
}
