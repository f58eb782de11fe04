/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/paramserv/checkpoint.c: a checkpoint round-trips;
 * a flipped byte, a NaN written over a value, a truncated or extended file
 * is refused as corrupt (checksum); a checkpoint of another call (data,
 * options) is refused naming what differs; resuming says what it skips;
 * prepare finds an unwritable path before training and removes the
 * temporaries of killed writers (only theirs); a write leaves no temporary.
 * Works in a fresh folder under /tmp, removed at the end. Prints
 * "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/paramserv/ps.h"
#include "../../base/sparse.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char dir[64];

static Matrix *mat_seq(int64_t r, int64_t c, double start)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++)
        m->data[i] = start + (double)i * 0.25;
    return m;
}

static List *model_new(void)
{
    List *l = list_new(2, false);
    list_push_take(l, val_matrix_take(mat_seq(3, 2, 1.0)), NULL);
    list_push_take(l, val_matrix_take(mat_seq(1, 2, -4.0)), NULL);
    return l;
}

typedef struct Fixture {
    List *model;
    Matrix *X, *Y;
    PsConfig c;
    char path[128];
} Fixture;

static void fixture_init(Fixture *f, const char *name)
{
    memset(f, 0, sizeof *f);
    f->model = model_new();
    f->X = mat_seq(10, 3, 0.5);
    f->Y = mat_seq(10, 1, 2.0);
    snprintf(f->path, sizeof f->path, "%s/%s", dir, name);
    PsConfig *c = &f->c;
    c->model = f->model;
    c->X = f->X;
    c->Y = f->Y;
    c->upd_spec = "./lib/m.dml::gradients";
    c->agg_spec = "./lib/m.dml::aggregation";
    c->utype = PS_UTYPE_BSP;
    c->freq = PS_FREQ_BATCH;
    c->scheme = PS_SCHEME_DC;
    c->epochs = 5;
    c->batchsize = 4;
    c->k = 2;
    c->nbatches = 1;
    c->backup = 1;
    c->staleness = 1;
    c->seed = 7;
    c->seed_given = true;
    c->ckpt = PS_CKPT_EPOCH;
    c->ckpt_path = f->path;
    c->verbose = false;
}

static void fixture_free(Fixture *f)
{
    ps_config_free(&f->c);
    list_release(f->model);
    mat_release(f->X);
    mat_release(f->Y);
}

/* The pending error message ("" when none); clears it. */
static char last_err[1024];
static const char *take_err(Interp *I)
{
    snprintf(last_err, sizeof last_err, "%s", I->err.msg ? I->err.msg : "");
    err_clear(I);
    return last_err;
}

static bool contains(const char *s, const char *part) { return strstr(s, part) != NULL; }

/* Resume and expect an error containing 'part'. */
static void expect_resume_error(Interp *I, Fixture *f, const char *part)
{
    Value m = val_none();
    int64_t done = -1;
    bool found = true;
    Status st = ps_ckpt_resume(I, &f->c, &m, &done, &found);
    CHECK(st == ST_ERR);
    CHECK(!found);
    const char *e = take_err(I);
    if (!check_report_(contains(e, part), __FILE__, __LINE__, "error \"%s\" should contain \"%s\"", e, part))
        return;
    CHECK(m.kind == VAL_NONE);
}

static long file_size(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fclose(fp);
    return n;
}

static void patch(const char *path, long off, const void *bytes, size_t n)
{
    FILE *fp = fopen(path, "r+b");
    CHECK(fp != NULL);
    if (!fp)
        return;
    fseek(fp, off, SEEK_SET);
    fwrite(bytes, 1, n, fp);
    fclose(fp);
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        fwrite(buf, 1, n, b);
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

/* Offset of the first double of matrix 1 in a checkpoint of 'f'. */
static long first_value_offset(const Fixture *f)
{
    return 8 + 8 + (long)strlen(f->c.ckpt_sig) + 8 + 8 + 16;
}

/* Entries of 'dir' whose name starts with 'prefix'. */
static int count_entries(const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
            n++;
    if (d)
        closedir(d);
    return n;
}

static void test_round_trip(Interp *I)
{
    Fixture f;
    fixture_init(&f, "rt.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(f.c.ckpt_sig != NULL);
    Value m = val_none();
    int64_t done = -1;
    bool found = true;
    CHECK(ps_ckpt_resume(I, &f.c, &m, &done, &found) == ST_OK);
    CHECK(!found);              /* no file yet */
    CHECK(ps_ckpt_write(I, &f.c, f.model, 2) == ST_OK);
    CHECK_INT(count_entries("rt.ckpt.tmp"), 0);
    CHECK(ps_ckpt_resume(I, &f.c, &m, &done, &found) == ST_OK);
    CHECK(found);
    CHECK_INT(done, 2);
    if (found && m.kind == VAL_LIST) {
        CHECK_INT(m.l->n, 2);
        for (int64_t i = 0; i < 2 && i < m.l->n; i++) {
            const Matrix *a = m.l->items[i].m, *b = f.model->items[i].m;
            CHECK(a->rows == b->rows && a->cols == b->cols);
            CHECK(memcmp(a->data, b->data, sizeof(double) * (size_t)mat_len(a)) == 0);
        }
    }
    val_release(m);
    fixture_free(&f);
}

static void test_corruption(Interp *I)
{
    Fixture f;
    fixture_init(&f, "bad.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(ps_ckpt_write(I, &f.c, f.model, 3) == ST_OK);
    char good[160];
    snprintf(good, sizeof good, "%s/good.copy", dir);
    copy_file(f.path, good);
    long off = first_value_offset(&f);
    long size = file_size(f.path);

    /* One flipped bit in a value. */
    unsigned char byte;
    FILE *fp = fopen(f.path, "rb");
    fseek(fp, off + 3, SEEK_SET);
    CHECK(fread(&byte, 1, 1, fp) == 1);
    fclose(fp);
    byte ^= 0x10;
    patch(f.path, off + 3, &byte, 1);
    expect_resume_error(I, &f, "is corrupt (checksum mismatch)");

    /* A NaN written over the last value of matrix 2. */
    copy_file(good, f.path);
    double nan = NAN;
    patch(f.path, size - 8 - 8, &nan, 8);
    expect_resume_error(I, &f, "is corrupt (checksum mismatch)");

    /* A flipped byte in the signature is damage too, not "another call". */
    copy_file(good, f.path);
    char ch;
    fp = fopen(f.path, "rb");
    fseek(fp, 16 + 30, SEEK_SET);
    CHECK(fread(&ch, 1, 1, fp) == 1);
    fclose(fp);
    ch ^= 0x01;
    patch(f.path, 16 + 30, &ch, 1);
    expect_resume_error(I, &f, "is corrupt");

    /* The epoch count is covered too. */
    copy_file(good, f.path);
    int64_t epochs = 9;
    patch(f.path, 16 + (long)strlen(f.c.ckpt_sig), &epochs, 8);
    expect_resume_error(I, &f, "is corrupt (checksum mismatch)");

    /* Truncated: without its checksum, and in the middle of the values. */
    copy_file(good, f.path);
    CHECK(truncate(f.path, size - 8) == 0);
    expect_resume_error(I, &f, "is corrupt (truncated)");
    CHECK(truncate(f.path, off + 12) == 0);
    expect_resume_error(I, &f, "is corrupt (truncated)");

    /* A byte appended. */
    copy_file(good, f.path);
    fp = fopen(f.path, "ab");
    fputc('x', fp);
    fclose(fp);
    expect_resume_error(I, &f, "is corrupt (trailing bytes)");

    /* The intact copy still loads. */
    copy_file(good, f.path);
    Value m = val_none();
    int64_t done = 0;
    bool found = false;
    CHECK(ps_ckpt_resume(I, &f.c, &m, &done, &found) == ST_OK);
    CHECK(found && done == 3);
    val_release(m);

    /* Not a checkpoint at all, and the format before signatures. */
    fp = fopen(f.path, "wb");
    fputs("1,2,3\n", fp);
    fclose(fp);
    expect_resume_error(I, &f, "is not a paramserv checkpoint");
    fp = fopen(f.path, "wb");
    fwrite("DMLPSCK1", 1, 8, fp);
    fclose(fp);
    expect_resume_error(I, &f, "was written by an older dml");
    fp = fopen(f.path, "wb");
    fwrite("DMLPSCK2", 1, 8, fp);
    fclose(fp);
    expect_resume_error(I, &f, "was written by an older dml, which fingerprinted the data another way");
    unlink(good);
    fixture_free(&f);
}

/* The data's fingerprint reads the non-zero cells: the sparse form of the
 * same values (the dense one holding zeros and a -0.0) resumes a
 * checkpoint the dense form wrote, and a changed non-zero, a zero made
 * non-zero or a value moved to another cell does not. */
static void test_sparse_fingerprint(Interp *I)
{
    Fixture f;
    fixture_init(&f, "sparse.ckpt");
    for (int64_t k = 0; k < 30; k++)
        f.X->data[k] = k % 4 ? 0.0 : 1.0 + (double)k;
    f.X->data[6] = -0.0;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(ps_ckpt_write(I, &f.c, f.model, 2) == ST_OK);
    Matrix *dense = f.X;
    Matrix *sp = mat_new_sparse_take(sp_from_dense(dense->data, 10, 3, -1));
    CHECK(sp && sp->sp && sp->sp->nnz == 8);
    f.c.X = sp;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    Value m = val_none();
    int64_t done = 0;
    bool found = false;
    CHECK(ps_ckpt_resume(I, &f.c, &m, &done, &found) == ST_OK);
    CHECK(found && done == 2);
    val_release(m);
    /* the same non-zeros, one moved a cell on */
    double moved[30];
    memcpy(moved, dense->data, sizeof moved);
    moved[5] = moved[4];
    moved[4] = 0;
    Matrix *other = mat_new_sparse_take(sp_from_dense(moved, 10, 3, -1));
    f.c.X = other;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "on other data: its features (10x3 there, 10x3 here) differ");
    mat_release(other);
    /* a zero cell made non-zero, in the dense form */
    f.c.X = dense;
    dense->data[1] = 1e-300;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "on other data: its features (10x3 there, 10x3 here) differ");
    dense->data[1] = 0;
    mat_release(sp);
    fixture_free(&f);
}

/* A checkpoint of another call: each difference is named. */
static void test_other_call(Interp *I)
{
    Fixture f;
    fixture_init(&f, "other.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(ps_ckpt_write(I, &f.c, f.model, 1) == ST_OK);

    f.c.batchsize = 5;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "it has batchsize=4, this call has batchsize=5");
    f.c.batchsize = 4;

    f.c.scheme = PS_SCHEME_DRR;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "it has scheme=DISJOINT_CONTIGUOUS, this call has scheme=DISJOINT_ROUND_ROBIN");
    f.c.scheme = PS_SCHEME_DC;

    f.c.seed = 8;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "it has seed=7, this call has seed=8");
    /* Without seed= the seed is random per run and not part of the call. */
    f.c.seed_given = false;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "it also records 'seed=7'");
    f.c.seed_given = true;
    f.c.seed = 7;

    f.X->data[17] += 1e-12;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "on other data: its features (10x3 there, 10x3 here) differ");
    f.X->data[17] -= 1e-12;

    /* A path with a space stays one word of the signature. */
    f.c.upd_spec = "./my dir/m.dml::gradients";
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    expect_resume_error(I, &f, "it has upd=./lib/m.dml::gradients, this call has upd=./my%20dir/m.dml::gradients");
    char spaced[160];
    snprintf(spaced, sizeof spaced, "%s/with space.ckpt", dir);
    f.c.ckpt_path = spaced;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(ps_ckpt_write(I, &f.c, f.model, 4) == ST_OK);
    Value sm = val_none();
    int64_t sdone = 0;
    bool sfound = false;
    CHECK(ps_ckpt_resume(I, &f.c, &sm, &sdone, &sfound) == ST_OK);
    CHECK(sfound && sdone == 4);
    val_release(sm);
    f.c.ckpt_path = f.path;
    f.c.upd_spec = "./lib/m.dml::gradients";

    /* The model's shapes come first. */
    Fixture g;
    fixture_init(&g, "other.ckpt");
    val_release(g.model->items[1]);
    g.model->items[1] = val_matrix_take(mat_seq(2, 1, 0));
    CHECK(ps_ckpt_prepare(I, &g.c) == ST_OK);
    expect_resume_error(I, &g, "it has model=3x2,1x2, this call has model=3x2,2x1");
    fixture_free(&g);

    /* epochs, checkpointing and verbose are not part of it. */
    f.c.epochs = 50;
    f.c.ckpt = PS_CKPT_EPOCH10;
    f.c.verbose = false;
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    Value m = val_none();
    int64_t done = 0;
    bool found = false;
    CHECK(ps_ckpt_resume(I, &f.c, &m, &done, &found) == ST_OK);
    CHECK(found && done == 1);
    val_release(m);
    fixture_free(&f);
}

/* What resuming prints on stderr. */
/* The sink the CLI installs (cli_stderr_sink): notes written to stderr. */
static void to_stderr(void *ctx, DiagLevel level, const char *text, size_t n)
{
    (void)ctx;
    (void)level;
    fwrite(text, 1, n, stderr);
}

static char *resume_stderr(Interp *I, Fixture *f, int64_t epochs)
{
    I->sink = (DiagSink){.write = to_stderr};
    char out[160];
    snprintf(out, sizeof out, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *fp = fopen(out, "w+");
    dup2(fileno(fp), 2);
    f->c.epochs = epochs;
    f->c.verbose = true;
    Value m = val_none();
    int64_t done = 0;
    bool found = false;
    Status st = ps_ckpt_resume(I, &f->c, &m, &done, &found);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(st == ST_OK && found);
    val_release(m);
    static char text[1024];
    rewind(fp);
    size_t n = fread(text, 1, sizeof text - 1, fp);
    text[n] = '\0';
    fclose(fp);
    unlink(out);
    return text;
}

static void test_resume_messages(Interp *I)
{
    Fixture f;
    fixture_init(&f, "msg.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(ps_ckpt_write(I, &f.c, f.model, 2) == ST_OK);
    char want[512];
    snprintf(want, sizeof want, "[paramserv] resuming from checkpoint '%s': epochs 1-2 were trained by an earlier "
             "run and are skipped; training epochs 3-5\n", f.path);
    CHECK_STR(resume_stderr(I, &f, 5), want);
    snprintf(want, sizeof want, "[paramserv] checkpoint '%s' already holds 2 epochs of this training (1 asked): "
             "returning its model, no epoch is trained; delete the file to train from the start\n", f.path);
    CHECK_STR(resume_stderr(I, &f, 1), want);
    fixture_free(&f);
}

static void touch(const char *name)
{
    char p[192];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    if (fp) {
        fputs("partial", fp);
        fclose(fp);
    }
}

static bool exists(const char *name)
{
    char p[192];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void test_prepare(Interp *I)
{
    /* A process that is gone: a child that has exited and been reaped. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    char dead[96], live[96];
    snprintf(dead, sizeof dead, "tmp.ckpt.tmp%ld.a1B2c3", (long)child);
    snprintf(live, sizeof live, "tmp.ckpt.tmp%ld.d4E5f6", (long)getppid());
    touch(dead);
    touch(live);
    touch("tmp.ckpt.tmpnotapid");          /* not ours: left alone */
    touch("other.ckpt.tmp1.zzzzzz");        /* another checkpoint's */
    Fixture f;
    fixture_init(&f, "tmp.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_OK);
    CHECK(!exists(dead));
    CHECK(exists(live));
    CHECK(exists("tmp.ckpt.tmpnotapid"));
    CHECK(exists("other.ckpt.tmp1.zzzzzz"));
    CHECK(!exists("tmp.ckpt"));              /* prepare writes no checkpoint */
    CHECK_INT(count_entries("tmp.ckpt.tmp"), 2);
    fixture_free(&f);
    char p[192];
    const char *left[] = {live, "tmp.ckpt.tmpnotapid", "other.ckpt.tmp1.zzzzzz"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, left[i]);
        unlink(p);
    }

    /* Unwritable: a folder that does not exist, and a path that is one. */
    fixture_init(&f, "no/such/folder/x.ckpt");
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_ERR);
    char want[256];
    snprintf(want, sizeof want, "paramserv: cannot write checkpoint '%s': No such file or directory", f.path);
    CHECK_STR(take_err(I), want);
    fixture_free(&f);
    fixture_init(&f, "");
    f.path[strlen(f.path) - 1] = '\0';      /* the folder itself */
    CHECK(ps_ckpt_prepare(I, &f.c) == ST_ERR);
    snprintf(want, sizeof want, "paramserv: cannot write checkpoint '%s': Is a directory", f.path);
    CHECK_STR(take_err(I), want);
    fixture_free(&f);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/dml_ckpt_unit.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    Interp I;
    interp_init(&I, NULL, 1);
    test_round_trip(&I);
    test_corruption(&I);
    test_other_call(&I);
    test_sparse_fingerprint(&I);
    test_resume_messages(&I);
    test_prepare(&I);
    interp_destroy(&I);
    /* Remove what the tests left (checkpoints only; the folder is ours). */
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[400];
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return CHECK_DONE();
}
