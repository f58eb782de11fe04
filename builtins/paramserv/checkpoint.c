/* SPDX-License-Identifier: Apache-2.0
 * paramserv checkpoints (upstream accepts 'checkpointing' but never wrote
 * one). File layout, native little-endian:
 *   "DMLPSCK3"  uint64 siglen  siglen bytes of signature (text)
 *   int64 epochs_done  int64 n  then n x (int64 rows, int64 cols,
 *   rows*cols doubles)  uint64 checksum of every byte before it
 * The signature (ps_ckpt_prepare) says which call wrote the file, so a
 * checkpoint is resumed only by the same training: same model shapes, same
 * features and labels (a fingerprint of their non-zero cells' positions
 * and bits, hash_matrix), same options. epochs,
 * checkpointing and verbose are left out of it: resuming to more epochs is
 * the point. seed= is in it only when given (without it no two runs agree).
 *
 * Written to "<path>.tmp<pid>.XXXXXX" in the same folder, then renamed over
 * the old checkpoint, so a crash mid-write never leaves a broken checkpoint;
 * the next run removes the temporaries of processes that no longer exist.
 * Called by the calling thread (prepare, resume) and the server thread
 * (write); keeps no state of its own. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../base/sparse.h"
#include "../../base/strbuf.h"
#include "../io/io_formats.h"
#include "ps.h"

static const char MAGIC[8] = {'D', 'M', 'L', 'P', 'S', 'C', 'K', '3'};
static const char MAGIC_V1[8] = {'D', 'M', 'L', 'P', 'S', 'C', 'K', '1'};
/* version 2: the data's fingerprint hashed every cell's bits (dense only) */
static const char MAGIC_V2[8] = {'D', 'M', 'L', 'P', 'S', 'C', 'K', '2'};

/* Bounds on what a reader accepts before allocating. */
#define SIG_MAX ((uint64_t)1 << 24)
#define HYPER_DEPTH 64

/* ---- hashing (not cryptographic: it finds flipped bits and changed data) ----
 * Four lanes of 64-bit words, each step a bijection of the lane, so any one
 * changed word always changes the result. */

typedef struct Hash {
    uint64_t lane[4];
    uint64_t bytes;
} Hash;

#define HPRIME 0x9E3779B97F4A7C15ULL

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t step(uint64_t h, uint64_t w) { return rotl64((h ^ w) * HPRIME, 29) * 0xBF58476D1CE4E5B9ULL; }

static void hash_init(Hash *h)
{
    h->lane[0] = 0x243F6A8885A308D3ULL;
    h->lane[1] = 0x13198A2E03707344ULL;
    h->lane[2] = 0xA4093822299F31D0ULL;
    h->lane[3] = 0x082EFA98EC4E6C89ULL;
    h->bytes = 0;
}

static void hash_bytes(Hash *h, const void *p, size_t len)
{
    const unsigned char *b = p;
    h->bytes += len;
    while (len >= 32) {
        uint64_t w[4];
        memcpy(w, b, 32);
        h->lane[0] = step(h->lane[0], w[0]);
        h->lane[1] = step(h->lane[1], w[1]);
        h->lane[2] = step(h->lane[2], w[2]);
        h->lane[3] = step(h->lane[3], w[3]);
        b += 32;
        len -= 32;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h->lane[0] = step(h->lane[0], w);
        b += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, b, len);
        h->lane[1] = step(h->lane[1], w ^ ((uint64_t)len << 56));
    }
}

static uint64_t hash_final(const Hash *h)
{
    uint64_t r = h->bytes * HPRIME;
    for (int i = 0; i < 4; i++)
        r = step(r, h->lane[i]);
    return r ^ (r >> 31);
}

/* A matrix's fingerprint: its shape, then its non-zero cells as (row-major
 * position, value bits) pairs in row-major order, hashed 256 pairs at a
 * time. The dense and the sparse form of the same values give the same
 * fingerprint (a sparse matrix stores no zeros, and -0.0 is a zero in
 * both), and a sparse one costs its non-zeros, not its cells. */
enum { FP_PAIRS = 256 };

typedef struct FpBuf {
    Hash h;
    uint64_t pair[2 * FP_PAIRS];
    int n;
} FpBuf;

static inline void fp_put(FpBuf *b, uint64_t pos, double v)
{
    b->pair[2 * b->n] = pos;
    memcpy(&b->pair[2 * b->n + 1], &v, 8);
    if (++b->n == FP_PAIRS) {
        hash_bytes(&b->h, b->pair, sizeof b->pair);
        b->n = 0;
    }
}

static uint64_t hash_matrix(const Matrix *m)
{
    FpBuf b;
    hash_init(&b.h);
    b.n = 0;
    hash_bytes(&b.h, &m->rows, 8);
    hash_bytes(&b.h, &m->cols, 8);
    if (m->sp) {
        const SpMat *s = m->sp;
        for (int64_t i = 0; i < s->rows; i++)
            for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
                fp_put(&b, (uint64_t)(i * s->cols + s->colidx[p]), s->vals[p]);
    } else {
        for (int64_t k = 0; k < mat_len(m); k++)
            if (m->data[k] != 0)
                fp_put(&b, (uint64_t)k, m->data[k]);
    }
    hash_bytes(&b.h, b.pair, (size_t)b.n * 16);
    return hash_final(&b.h);
}

/* Hyperparameters by value: names, scalars, matrices, nested lists. */
static void hash_value(Hash *h, Value v, int depth)
{
    uint64_t tag = (uint64_t)v.kind;
    hash_bytes(h, &tag, 8);
    switch (v.kind) {
    case VAL_INT: hash_bytes(h, &v.i, 8); break;
    case VAL_DOUBLE: hash_bytes(h, &v.d, 8); break;
    case VAL_BOOL: tag = v.b; hash_bytes(h, &tag, 8); break;
    case VAL_STRING: hash_bytes(h, v.s->s, (size_t)v.s->len); break;
    case VAL_MATRIX: tag = hash_matrix(v.m); hash_bytes(h, &tag, 8); break;
    case VAL_LIST:
        hash_bytes(h, &v.l->n, 8);
        if (depth >= HYPER_DEPTH)
            break;
        for (int64_t i = 0; i < v.l->n; i++) {
            if (v.l->names && v.l->names[i])
                hash_bytes(h, v.l->names[i]->s, (size_t)v.l->names[i]->len + 1);
            hash_value(h, v.l->items[i], depth + 1);
        }
        break;
    default: break;
    }
}

/* ---- the signature of a call ---- */

static const char *const UTYPES[] = {"BSP", "ASP", "SBP", "SSP"};
static const char *const FREQS[] = {"BATCH", "EPOCH", "NBATCHES"};
static const char *const SCHEMES[] = {"DISJOINT_CONTIGUOUS", "DISJOINT_ROUND_ROBIN", "DISJOINT_RANDOM",
                                      "OVERLAP_RESHUFFLE"};

/* A value inside one word: spaces (a path to upd's file may have them) and
 * '%' written as %20 and %25. */
static void put_word(StrBuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == ' ' || *s == '%')
            sb_printf(b, "%%%02X", (unsigned)*s);
        else
            sb_putn(b, s, 1);
    }
}

/* "key=value" words separated by single spaces; the first word is the
 * model's shapes, so that a mismatch there is reported first. */
static char *make_sig(const PsConfig *c)
{
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "model=");
    for (int64_t i = 0; i < c->model->n; i++) {
        if (c->model->items[i].kind != VAL_MATRIX) {
            sb_printf(&b, "%s%s", i ? "," : "", val_kind_name(c->model->items[i].kind));
            continue;
        }
        const Matrix *m = c->model->items[i].m;
        sb_printf(&b, "%s%lldx%lld", i ? "," : "", (long long)m->rows, (long long)m->cols);
    }
    sb_printf(&b, " features=%lldx%lld:%016llx labels=%lldx%lld:%016llx", (long long)c->X->rows,
              (long long)c->X->cols, (unsigned long long)hash_matrix(c->X), (long long)c->Y->rows,
              (long long)c->Y->cols, (unsigned long long)hash_matrix(c->Y));
    sb_puts(&b, " upd=");
    put_word(&b, c->upd_spec);
    sb_puts(&b, " agg=");
    put_word(&b, c->agg_spec);
    sb_printf(&b, " utype=%s freq=%s scheme=%s batchsize=%lld k=%lld modelAvg=%s", UTYPES[c->utype],
              FREQS[c->freq], SCHEMES[c->scheme], (long long)c->batchsize, (long long)c->k,
              c->model_avg ? "TRUE" : "FALSE");
    if (c->freq == PS_FREQ_NBATCHES)
        sb_printf(&b, " nbatches=%lld", (long long)c->nbatches);
    if (c->utype == PS_UTYPE_SBP)
        sb_printf(&b, " num_backup_workers=%lld", (long long)c->backup);
    if (c->utype == PS_UTYPE_SSP)
        sb_printf(&b, " staleness=%lld", (long long)c->staleness);
    if (c->seed_given)
        sb_printf(&b, " seed=%llu", (unsigned long long)c->seed);
    if (c->hyper) {
        Hash h;
        hash_init(&h);
        hash_value(&h, val_list_take(c->hyper), 0);
        sb_printf(&b, " hyperparams=%016llx", (unsigned long long)hash_final(&h));
    }
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    sb_putn(&b, "", 1);         /* NUL */
    return b.p;
}

/* Length of the word starting at s (up to a space or the end). */
static size_t word_len(const char *s)
{
    size_t n = 0;
    while (s[n] && s[n] != ' ')
        n++;
    return n;
}

/* The first word of 'x' whose key is missing from 'y' or has another value
 * there: *a is that word, *b the word of 'y' with its key (NULL when
 * missing). Returns false when every word of 'x' is in 'y'. */
static bool word_missing(const char *x, const char *y, const char **a, size_t *alen, const char **b, size_t *blen)
{
    for (const char *w = x; *w;) {
        size_t wl = word_len(w);
        const char *eq = memchr(w, '=', wl);
        size_t kl = eq ? (size_t)(eq - w) + 1 : wl;
        const char *t = y, *hit = NULL;
        while (*t) {
            size_t tl = word_len(t);
            if (tl >= kl && memcmp(t, w, kl) == 0) {
                hit = t;
                break;
            }
            t += tl;
            while (*t == ' ')
                t++;
        }
        if (!hit || word_len(hit) != wl || memcmp(hit, w, wl) != 0) {
            *a = w;
            *alen = wl;
            *b = hit;
            *blen = hit ? word_len(hit) : 0;
            return true;
        }
        w += wl;
        while (*w == ' ')
            w++;
    }
    return false;
}

/* The first difference between our signature and the file's: a word of
 * ours (*a) against the file's (*b, NULL when it lacks the key), or, when
 * all of ours match, a word only the file has (*a NULL, *b that word). */
static bool first_difference(const char *mine, const char *theirs, const char **a, size_t *alen, const char **b,
                             size_t *blen)
{
    if (word_missing(mine, theirs, a, alen, b, blen))
        return true;
    if (word_missing(theirs, mine, b, blen, a, alen)) {
        *a = NULL;
        *alen = 0;
        return true;
    }
    return false;
}

char *ps_call_sig(const PsConfig *c)
{
    char *base = make_sig(c);
    if (!base)
        return NULL;
    StrBuf b;
    sb_init(&b);
    sb_puts(&b, base);
    free(base);
    static const char *const DISPATCH[] = {"STATIC", "DYNAMIC"};
    sb_printf(&b, " epochs=%lld dispatch=%s", (long long)c->epochs, DISPATCH[c->dispatch]);
    if (!c->seed_given)
        sb_printf(&b, " seed=%llu", (unsigned long long)c->seed);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    sb_putn(&b, "", 1);
    return b.p;
}

bool ps_sig_difference(const char *mine, const char *theirs, const char **a, size_t *alen, const char **b,
                       size_t *blen)
{
    return first_difference(mine, theirs, a, alen, b, blen);
}

uint64_t ps_hash_bytes(const void *p, size_t len)
{
    Hash h;
    hash_init(&h);
    hash_bytes(&h, p, len);
    return hash_final(&h);
}

/* ---- temporaries ---- */

/* Creates the temporary for 'path'; *tmp is malloc'd. Returns the fd or -1
 * (errno set). */
int ps_open_tmp(const char *path, char **tmp)
{
    size_t len = strlen(path) + 40;
    *tmp = malloc(len);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(*tmp, len, "%s.tmp%ld.XXXXXX", path, (long)getpid());
    int fd = mkstemp(*tmp);
    if (fd >= 0)
        (void)fchmod(fd, 0666 & ~io_current_umask());  /* mkstemp's 0600 is not what the user's umask asks */
    if (fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        errno = e;
    }
    return fd;
}

bool ps_write_file(const char *path, const char *p, size_t len)
{
    char *tmp;
    int fd = ps_open_tmp(path, &tmp);
    if (fd < 0)
        return false;
    bool ok = true;
    size_t off = 0;
    while (ok && off < len) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno ? errno : EIO;
        unlink(tmp);
        free(tmp);
        errno = e;
        return false;
    }
    free(tmp);
    return true;
}

Status ps_ckpt_prepare(Interp *I, PsConfig *c)
{
    /* A checkpoint holds matrices; a scalar in the model (allowed
     * otherwise, as upstream allows it) cannot be saved. */
    for (int64_t i = 0; i < c->model->n; i++)
        if (c->model->items[i].kind != VAL_MATRIX)
            return err_set(I, "paramserv: checkpointing saves models of matrices, but model entry %lld is a %s",
                           (long long)i + 1, val_kind_name(c->model->items[i].kind));
    struct stat sb;
    if (stat(c->ckpt_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return err_set(I, "paramserv: cannot write checkpoint '%s': %s", c->ckpt_path, strerror(EISDIR));
    io_remove_stale_tmps(c->ckpt_path);   /* writers killed mid-write (io_formats.h) */
    char *tmp;
    int fd = ps_open_tmp(c->ckpt_path, &tmp);
    if (fd < 0)
        return err_set(I, "paramserv: cannot write checkpoint '%s': %s", c->ckpt_path, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    free(c->ckpt_sig);
    c->ckpt_sig = make_sig(c);
    if (!c->ckpt_sig)
        return err_set(I, "out of memory");
    return ST_OK;
}

/* ---- writing ---- */

static bool put(FILE *f, Hash *h, const void *p, size_t len)
{
    hash_bytes(h, p, len);
    return len == 0 || fwrite(p, 1, len, f) == len;
}

Status ps_ckpt_write(Interp *I, const PsConfig *c, const List *model, int64_t epochs_done)
{
    const char *path = c->ckpt_path;
    if (!c->ckpt_sig)
        return err_set(I, "paramserv: internal error: checkpoint '%s' written before ps_ckpt_prepare", path);
    char *tmp;
    int fd = ps_open_tmp(path, &tmp);
    if (fd < 0)
        return err_set(I, "paramserv: cannot write checkpoint '%s': %s", path, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    bool ok = f != NULL;
    Hash h;
    hash_init(&h);
    uint64_t siglen = strlen(c->ckpt_sig);
    int64_t n = model->n;
    ok = ok && put(f, &h, MAGIC, 8) && put(f, &h, &siglen, 8) && put(f, &h, c->ckpt_sig, siglen) &&
         put(f, &h, &epochs_done, 8) && put(f, &h, &n, 8);
    for (int64_t i = 0; ok && i < n; i++) {
        const Matrix *m = model->items[i].m;
        ok = put(f, &h, &m->rows, 8) && put(f, &h, &m->cols, 8) &&
             put(f, &h, m->data, sizeof(double) * (size_t)mat_len(m));
    }
    uint64_t sum = hash_final(&h);
    ok = ok && fwrite(&sum, 8, 1, f) == 1;
    errno = 0;
    if (f) {
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
    } else
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        Status st = err_set(I, "paramserv: cannot write checkpoint '%s': %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        free(tmp);
        return st;
    }
    free(tmp);
    return ST_OK;
}

/* ---- reading ---- */

static bool get(FILE *f, Hash *h, void *p, size_t len)
{
    if (len && fread(p, 1, len, f) != len)
        return false;
    hash_bytes(h, p, len);
    return true;
}

/* The signature's siglen bytes, NUL-terminated, into a malloc'd *sig;
 * false when the file ends first or memory runs out. Read in growing
 * pieces, so a damaged length costs no more memory than about twice what
 * the file holds; hashed in one piece, as put() wrote it. */
static bool get_sig(FILE *f, Hash *h, uint64_t siglen, char **sig)
{
    size_t have = 0, cap = 0;
    char *s = NULL;
    while (have < siglen) {
        size_t piece = have > 4096 ? have : 4096;    /* as much again as came */
        size_t want = siglen - have < piece ? (size_t)(siglen - have) : piece;
        if (have + want > cap) {
            cap = cap ? cap * 2 : 256;
            while (cap < have + want)
                cap *= 2;
            char *t = realloc(s, cap + 1);
            if (!t)
                break;
            s = t;
        }
        if (fread(s + have, 1, want, f) != want)
            break;
        have += want;
    }
    if (have < siglen || !(s || (s = malloc(1)))) {
        free(s);
        return false;
    }
    s[siglen] = '\0';
    hash_bytes(h, s, (size_t)siglen);
    *sig = s;
    return true;
}

/* The signature of the file must be ours; else an error naming the first
 * option (or data) that differs. */
static Status check_sig(Interp *I, const PsConfig *c, const char *theirs)
{
    const char *a, *b;
    size_t al, bl;
    if (!first_difference(c->ckpt_sig, theirs, &a, &al, &b, &bl))
        return ST_OK;
    const char *path = c->ckpt_path;
    if (!a)
        return err_set(I, "paramserv: checkpoint '%s' was written by another paramserv call (it also records "
                       "'%.*s'); delete it or choose another checkpoint_path", path, (int)bl, b);
    size_t kl = (size_t)((const char *)memchr(a, '=', al) - a);
    if (!b)
        return err_set(I, "paramserv: checkpoint '%s' was written by another paramserv call (this call has %.*s, "
                       "the checkpoint has no %.*s); delete it or choose another checkpoint_path", path, (int)al, a,
                       (int)kl, a);
    if (strncmp(a, "features=", 9) == 0 || strncmp(a, "labels=", 7) == 0) {
        /* "features=RxC:fingerprint": show the shapes, not the hashes. */
        const char *ac = memchr(a, ':', al), *bc = memchr(b, ':', bl);
        int ad = (int)(ac ? ac - a : (ptrdiff_t)al), bd = (int)(bc ? bc - b : (ptrdiff_t)bl);
        return err_set(I, "paramserv: checkpoint '%s' was written by another paramserv call on other data: its %.*s "
                       "(%.*s there, %.*s here) differ; delete it or choose another checkpoint_path", path, (int)kl,
                       a, bd - (int)kl - 1, b + kl + 1, ad - (int)kl - 1, a + kl + 1);
    }
    if (strncmp(a, "hyperparams=", 12) == 0)
        return err_set(I, "paramserv: checkpoint '%s' was written by another paramserv call: its hyperparams differ; "
                       "delete it or choose another checkpoint_path", path);
    return err_set(I, "paramserv: checkpoint '%s' was written by another paramserv call: it has %.*s, this call "
                   "has %.*s; delete it or choose another checkpoint_path", path, (int)bl, b, (int)al, a);
}

Status ps_ckpt_read(Interp *I, const PsConfig *c, FILE *f, Value *model, int64_t *epochs_done)
{
    const char *path = c->ckpt_path;
    const List *like = c->model;
    if (!c->ckpt_sig)
        return err_set(I, "paramserv: internal error: checkpoint '%s' read before ps_ckpt_prepare", path);
    Hash h;
    hash_init(&h);
    char magic[8];
    uint64_t siglen = 0, sum;
    char *sig = NULL;
    int64_t done = 0, n = 0;
    List *l = NULL;
    Status st = ST_OK;
    if (!get(f, &h, magic, 8) ||
        (memcmp(magic, MAGIC, 8) != 0 && memcmp(magic, MAGIC_V1, 8) != 0 && memcmp(magic, MAGIC_V2, 8) != 0)) {
        st = err_set(I, "paramserv: '%s' is not a paramserv checkpoint", path);
        goto out;
    }
    if (memcmp(magic, MAGIC_V1, 8) == 0) {
        st = err_set(I, "paramserv: checkpoint '%s' was written by an older dml and records no call to match; "
                     "delete it to start over", path);
        goto out;
    }
    if (memcmp(magic, MAGIC_V2, 8) == 0) {
        st = err_set(I, "paramserv: checkpoint '%s' was written by an older dml, which fingerprinted the data "
                     "another way; delete it to start over", path);
        goto out;
    }
    if (!get(f, &h, &siglen, 8) || siglen > SIG_MAX || !get_sig(f, &h, siglen, &sig) ||
        !get(f, &h, &done, 8) || !get(f, &h, &n, 8) || done < 0 || n < 0) {
        st = err_set(I, "paramserv: checkpoint '%s' is corrupt (a damaged header); delete it to start over", path);
        goto out;
    }
    if (strlen(sig) != siglen) {
        st = err_set(I, "paramserv: checkpoint '%s' is corrupt (a damaged header); delete it to start over", path);
        goto out;
    }
    /* A file that does not fit this model is most likely another call's:
     * say which option differs when the signature tells; else it is
     * damaged. The checksum is checked before the signature, so a flipped
     * bit in the signature reads as damage too. */
    if (n != like->n) {
        if ((st = check_sig(I, c, sig)) == ST_OK)
            st = err_set(I, "paramserv: checkpoint '%s' is corrupt (%lld matrices for a model of %lld); delete it "
                         "to start over", path, (long long)n, (long long)like->n);
        goto out;
    }
    l = list_new(n, like->names != NULL);
    if (!l) {
        st = err_set(I, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r, cc;
        const Matrix *want = like->items[i].m;
        if (!get(f, &h, &r, 8) || !get(f, &h, &cc, 8) || r != want->rows || cc != want->cols) {
            if ((st = check_sig(I, c, sig)) == ST_OK)
                st = err_set(I, "paramserv: checkpoint '%s' is corrupt (matrix %lld is not the %lldx%lld it "
                             "records); delete it to start over", path, (long long)i + 1, (long long)want->rows,
                             (long long)want->cols);
            goto out;
        }
        Matrix *m = mat_alloc(I, r, cc);
        if (!m) {
            st = ST_ERR;
            goto out;
        }
        if (!list_push_take(l, val_matrix_take(m), like->names ? like->names[i]->s : NULL)) {
            st = err_set(I, "out of memory");
            goto out;
        }
        if (!get(f, &h, m->data, sizeof(double) * (size_t)mat_len(m))) {
            st = err_set(I, "paramserv: checkpoint '%s' is corrupt (truncated); delete it to start over", path);
            goto out;
        }
    }
    if (fread(&sum, 8, 1, f) != 1 || fgetc(f) != EOF) {
        st = err_set(I, "paramserv: checkpoint '%s' is corrupt (%s); delete it to start over", path,
                     feof(f) ? "truncated" : "trailing bytes");
        goto out;
    }
    if (sum != hash_final(&h)) {
        st = err_set(I, "paramserv: checkpoint '%s' is corrupt (checksum mismatch); delete it to start over", path);
        goto out;
    }
    if ((st = check_sig(I, c, sig)) != ST_OK)
        goto out;
    *model = val_list_take(l);
    l = NULL;
    *epochs_done = done;
out:
    if (l)
        list_release(l);
    free(sig);
    return st;
}

Status ps_ckpt_resume(Interp *I, const PsConfig *c, Value *model, int64_t *epochs_done, bool *found)
{
    const char *path = c->ckpt_path;
    *found = false;
    if (!c->ckpt_sig)
        return err_set(I, "paramserv: internal error: checkpoint '%s' read before ps_ckpt_prepare", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return ST_OK;
        return err_set(I, "paramserv: cannot open checkpoint '%s': %s", path, strerror(errno));
    }
    int64_t done;
    Status st = ps_ckpt_read(I, c, f, model, &done);
    fclose(f);
    if (st != ST_OK)
        return st;
    *epochs_done = done;
    *found = true;
    if (c->verbose) {
        if (done < c->epochs)
            diag_note(&I->sink, DIAG_PROGRESS, "[paramserv] resuming from checkpoint '%s': epochs 1-%lld were "
                      "trained by an earlier run and are skipped; training epochs %lld-%lld\n", path, (long long)done,
                      (long long)done + 1, (long long)c->epochs);
        else
            diag_note(&I->sink, DIAG_PROGRESS, "[paramserv] checkpoint '%s' already holds %lld epochs of this "
                      "training (%lld asked): returning its model, no epoch is trained; delete the file to train "
                      "from the start\n", path, (long long)done, (long long)c->epochs);
    }
    return ST_OK;
}
