/* SPDX-License-Identifier: Apache-2.0
 * Record and replay of asynchronous paramserv runs (issue 26; ps.h).
 *
 * A record is a text file:
 *   DMLPSREC2                       (DMLPSREC1: an older dml's, whose
 *                                   data fingerprint hashed every cell)
 *   sig <the call's signature: ps_call_sig>
 *   n <pushes>
 *   <worker> <epoch> <batch>        one line per push, in the order the
 *                                   server applied them (1-based numbers;
 *                                   batch as the push names it: its last
 *                                   batch under STATIC, its task under
 *                                   DYNAMIC)
 *   end <16 hex digits: a hash of every byte before this line>
 * written to a temporary next to the path and renamed once the run has
 * ended well, so a killed run leaves no half-written record.
 *
 * Why the order is enough: under ASP and SSP, and SBP with STATIC
 * dispatch, which model a worker pulls is decided by the pushes applied
 * before (a worker pulls right after its push is applied, or when SSP's
 * clock lets it, or with DYNAMIC gets its next task then), and a worker's
 * push depends only on the model it pulled, its rows and its random
 * stream. Applying the pushes in the recorded order therefore hands every
 * worker the same model versions, and the run repeats bit for bit,
 * whatever the timing: a push that arrives early waits for its turn. BSP
 * (and SBP with DYNAMIC dispatch, which is BSP) is reproducible from seed=
 * alone, so record= and replay= are refused there. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/io_formats.h"
#include "ps.h"

struct PsRecord {
    char *sig;                  /* this call's */
    PsOrder ord;                /* 0-based worker and epoch */
    bool replay;
    int64_t next;               /* replaying: the next entry to apply */
};

bool ps_order_reserve(PsOrder *o, int64_t more)
{
    if (o->n + more <= o->cap)
        return true;
    int64_t cap = o->cap ? o->cap : 64;
    while (cap < o->n + more)
        cap *= 2;
    int64_t *e = realloc(o->e, sizeof *e * 3 * (size_t)cap);
    if (!e)
        return false;
    o->e = e;
    o->cap = cap;
    return true;
}

bool ps_order_push(PsOrder *o, int64_t worker, int64_t epoch, int64_t batch)
{
    if (!ps_order_reserve(o, 1))
        return false;
    o->e[3 * o->n] = worker;
    o->e[3 * o->n + 1] = epoch;
    o->e[3 * o->n + 2] = batch;
    o->n++;
    return true;
}

void ps_order_free(PsOrder *o)
{
    free(o->e);
    *o = (PsOrder){0};
}

void ps_record_free(PsRecord *r)
{
    if (!r)
        return;
    free(r->sig);
    ps_order_free(&r->ord);
    free(r);
}

/* The pushes a run of c makes in all. */
static Status pushes_of(Interp *I, const PsConfig *c, int64_t *out)
{
    PsPart *parts = NULL;
    int64_t np = 0;
    TRY(ps_partition(I, c, &parts, &np));
    int64_t per = 0;
    for (int64_t i = 0; i < np; i++) {
        int64_t nb, g;
        ps_worker_shape(c, parts[i].X->rows, &nb, &g);
        per += g;
    }
    ps_parts_free(parts, np);
    *out = ps_mul_sat(per, c->epochs);
    return ST_OK;
}

/* Reads and checks the record at c->replay_path into r. */
static Status load(Interp *I, const PsConfig *c, PsRecord *r)
{
    const char *path = c->replay_path;
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(I, "paramserv: cannot read replay='%s': %s", path, strerror(errno));
    StrBuf all;
    sb_init(&all);
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        sb_putn(&all, buf, got);
    bool rerr = ferror(f);
    fclose(f);
    if (rerr || all.oom) {
        sb_free(&all);
        return err_set(I, "paramserv: cannot read replay='%s': %s", path, rerr ? "read error" : "out of memory");
    }
    Status st = ST_OK;
    const char *why = NULL;
    char *text = all.p ? all.p : (char *)"";
    size_t len = all.len;
    /* The checksum line: the last one. */
    const char *endl = NULL;
    for (size_t i = len; i-- > 0;)
        if (i == 0 || text[i - 1] == '\n') {
            if (i < len && strncmp(text + i, "end ", 4) == 0) {
                endl = text + i;
                break;
            }
            if (i + 1 < len)
                break;          /* the last line is not the checksum */
        }
    uint64_t sum = 0;
    if (strncmp(text, "DMLPSREC1\n", 10) == 0)
        why = "it was recorded by an older dml, which fingerprinted the data another way; record the run again";
    else if (strncmp(text, "DMLPSREC2\n", 10) != 0)
        why = "it is not a paramserv record (no DMLPSREC2 header)";
    else if (!endl || sscanf(endl, "end %16" SCNx64, &sum) != 1)
        why = "it is truncated (no end line)";
    else if (sum != ps_hash_bytes(text, (size_t)(endl - text)))
        why = "it is damaged (its checksum does not match)";
    if (why) {
        st = err_set(I, "paramserv: replay='%s' cannot be used: %s", path, why);
        sb_free(&all);
        return st;
    }
    /* The signature line. */
    char *p = text + 10;
    char *nl = strchr(p, '\n');
    if (strncmp(p, "sig ", 4) != 0 || !nl || nl > endl) {
        sb_free(&all);
        return err_set(I, "paramserv: replay='%s' cannot be used: it is damaged (no sig line)", path);
    }
    *nl = '\0';
    const char *theirs = p + 4, *a, *b;
    size_t al, bl;
    if (ps_sig_difference(r->sig, theirs, &a, &al, &b, &bl)) {
        if (!a)
            st = err_set(I, "paramserv: replay='%s' was recorded by another paramserv call (it also records "
                         "'%.*s')", path, (int)bl, b);
        else if (!b)
            st = err_set(I, "paramserv: replay='%s' was recorded by another paramserv call (this call has %.*s, the "
                         "record has none)", path, (int)al, a);
        else if (strncmp(a, "features=", 9) == 0 || strncmp(a, "labels=", 7) == 0)
            st = err_set(I, "paramserv: replay='%s' was recorded by another paramserv call on other data: %.*s "
                         "there, %.*s here", path, (int)bl, b, (int)al, a);
        else
            st = err_set(I, "paramserv: replay='%s' was recorded by another paramserv call: it has %.*s, this call "
                         "has %.*s", path, (int)bl, b, (int)al, a);
        sb_free(&all);
        return st;
    }
    p = nl + 1;
    long long n = -1;
    int used = 0;
    if (sscanf(p, "n %lld\n%n", &n, &used) != 1 || used == 0 || n < 0) {
        sb_free(&all);
        return err_set(I, "paramserv: replay='%s' cannot be used: it is damaged (no push count)", path);
    }
    p += used;
    int64_t want;
    if (pushes_of(I, c, &want) != ST_OK) {
        sb_free(&all);
        return ST_ERR;
    }
    if (n != want) {
        sb_free(&all);
        return err_set(I, "paramserv: replay='%s' records %lld pushes, but this call makes %lld", path, n,
                       (long long)want);
    }
    for (long long i = 0; i < n; i++) {
        long long w, e, bt;
        int u = 0;
        if (p >= endl || sscanf(p, "%lld %lld %lld\n%n", &w, &e, &bt, &u) != 3 || u == 0 || w < 1 || w > c->k ||
            e < 1 || e > c->epochs || bt < 0) {
            sb_free(&all);
            return err_set(I, "paramserv: replay='%s' cannot be used: push %lld of the record is malformed", path,
                           i + 1);
        }
        if (!ps_order_push(&r->ord, w - 1, e - 1, bt)) {
            sb_free(&all);
            return err_set(I, "out of memory");
        }
        p += u;
    }
    sb_free(&all);
    if (p != endl)
        return err_set(I, "paramserv: replay='%s' cannot be used: it has more pushes than it says", path);
    return ST_OK;
}

Status ps_record_prepare(Interp *I, PsConfig *c)
{
    if (c->record_path && c->replay_path)
        return err_set(I, "paramserv: record= and replay= cannot be given together (a replay repeats a recorded "
                       "run; record it once, then replay it)");
    const char *arg = c->record_path ? "record" : "replay";
    if (c->utype == PS_UTYPE_BSP || (c->utype == PS_UTYPE_SBP && c->dispatch == PS_DISPATCH_DYNAMIC))
        return err_set(I, "paramserv: %s= is for asynchronous runs (ASP, SSP, SBP with STATIC dispatch); a seeded "
                       "%s run gives the same model every time without it", arg,
                       c->utype == PS_UTYPE_BSP ? "BSP" : "DYNAMIC SBP");
    if (c->ckpt != PS_CKPT_NONE)
        return err_set(I, "paramserv: %s= cannot be combined with checkpointing (a resumed run starts part-way "
                       "through the record)", arg);
    PsRecord *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(I, "out of memory");
    c->rec = r;
    r->sig = ps_call_sig(c);
    if (!r->sig)
        return err_set(I, "out of memory");
    if (c->replay_path) {
        r->replay = true;
        return load(I, c, r);
    }
    /* Prove now that the record can be written: a temporary next to it. */
    struct stat sb;
    if (stat(c->record_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return err_set(I, "paramserv: cannot write record='%s': %s", c->record_path, strerror(EISDIR));
    io_remove_stale_tmps(c->record_path);
    char *tmp;
    int fd = ps_open_tmp(c->record_path, &tmp);
    if (fd < 0)
        return err_set(I, "paramserv: cannot write record='%s': %s", c->record_path, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    return ST_OK;
}

Status ps_record_add(PsRecord *r, Interp *I, int worker, int64_t epoch, int64_t batch)
{
    if (r->replay)
        return ST_OK;
    if (!ps_order_push(&r->ord, worker, epoch, batch))
        return err_set(I, "out of memory");
    return ST_OK;
}

bool ps_replaying(const PsRecord *r)
{
    return r && r->replay;
}

bool ps_replay_next(const PsRecord *r, int *worker, int64_t *epoch, int64_t *batch)
{
    if (r->next >= r->ord.n)
        return false;
    *worker = (int)r->ord.e[3 * r->next];
    *epoch = r->ord.e[3 * r->next + 1];
    *batch = r->ord.e[3 * r->next + 2];
    return true;
}

void ps_replay_advance(PsRecord *r)
{
    r->next++;
}

Status ps_record_finish(Interp *I, const PsConfig *c)
{
    const PsRecord *r = c->rec;
    if (!r || r->replay)
        return ST_OK;
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "DMLPSREC2\nsig %s\nn %lld\n", r->sig, (long long)r->ord.n);
    for (int64_t i = 0; i < r->ord.n; i++)
        sb_printf(&b, "%lld %lld %lld\n", (long long)r->ord.e[3 * i] + 1, (long long)r->ord.e[3 * i + 1] + 1,
                  (long long)r->ord.e[3 * i + 2]);
    if (b.oom) {
        sb_free(&b);
        return err_set(I, "out of memory");
    }
    sb_printf(&b, "end %016" PRIx64 "\n", ps_hash_bytes(b.p, b.len));
    const char *path = c->record_path;
    errno = 0;
    bool ok = !b.oom && ps_write_file(path, b.p, b.len);
    sb_free(&b);
    if (!ok)
        return err_set(I, "paramserv: cannot write record='%s': %s", path, strerror(errno ? errno : ENOMEM));
    return ST_OK;
}
