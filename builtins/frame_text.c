/* SPDX-License-Identifier: Apache-2.0
 * Frame builtins over the text of cells that upstream writes in DML on top
 * of Java lambdas (map()), which dml cannot run: correctTypos, dmv,
 * cooccurrenceMatrix and mdedup (doc/builtins.md, "Frames"). Upstream's
 * names and arguments; the rules are stated with each function, since the
 * lambdas behind upstream's versions are not pinned down for dml.
 * Thread-safe: no state beyond the arguments. */
#include "registry.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/frame.h"

/* ---- cell text ---- */

/* Cell (i, j) as a malloc'd string; NULL with *missing for a missing cell
 * (and NULL without it when memory runs out). */
static char *cell_dup(const FrameBlock *f, int64_t i, int64_t j, bool *missing)
{
    *missing = f->col[j].type == FT_STRING && !f->col[j].s[i];
    if (*missing)
        return NULL;
    StrBuf b;
    sb_init(&b);
    frame_cell_text(&b, f, i, j);
    sb_putn(&b, "", 0);
    if (b.oom) {
        sb_free(&b);
        return NULL;
    }
    char *s = strdup(b.p ? b.p : "");
    sb_free(&b);
    return s;
}

/* ---- a set of distinct strings, in order of first appearance ---- */

typedef struct Dict {
    char **key;
    int64_t *count;
    int64_t n, cap;
    int64_t *slot;          /* open addressing: index + 1, 0 empty */
    int64_t nslot;
} Dict;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void dict_free(Dict *d)
{
    for (int64_t k = 0; k < d->n; k++)
        free(d->key[k]);
    free(d->key);
    free(d->count);
    free(d->slot);
    memset(d, 0, sizeof *d);
}

/* Index of s, or -1. */
static int64_t dict_find(const Dict *d, const char *s)
{
    if (!d->nslot)
        return -1;
    uint64_t h = str_hash(s) & (uint64_t)(d->nslot - 1);
    while (d->slot[h]) {
        int64_t k = d->slot[h] - 1;
        if (!strcmp(d->key[k], s))
            return k;
        h = (h + 1) & (uint64_t)(d->nslot - 1);
    }
    return -1;
}

/* Adds one occurrence of s (taken: freed when already there). Index of s,
 * or -1 when memory runs out (s freed). */
static int64_t dict_add_take(Dict *d, char *s)
{
    int64_t k = dict_find(d, s);
    if (k >= 0) {
        d->count[k]++;
        free(s);
        return k;
    }
    if (d->n == d->cap) {
        int64_t cap = d->cap ? d->cap * 2 : 16;
        char **nk = realloc(d->key, sizeof *nk * (size_t)cap);
        if (nk)
            d->key = nk;
        int64_t *nc = nk ? realloc(d->count, sizeof *nc * (size_t)cap) : NULL;
        if (!nc) {
            free(s);
            return -1;
        }
        d->count = nc;
        d->cap = cap;
    }
    if ((d->n + 1) * 2 > d->nslot) {
        int64_t ns = d->nslot ? d->nslot * 2 : 32;
        int64_t *sl = calloc((size_t)ns, sizeof *sl);
        if (!sl) {
            free(s);
            return -1;
        }
        for (int64_t q = 0; q < d->n; q++) {
            uint64_t h = str_hash(d->key[q]) & (uint64_t)(ns - 1);
            while (sl[h])
                h = (h + 1) & (uint64_t)(ns - 1);
            sl[h] = q + 1;
        }
        free(d->slot);
        d->slot = sl;
        d->nslot = ns;
    }
    k = d->n++;
    d->key[k] = s;
    d->count[k] = 1;
    uint64_t h = str_hash(s) & (uint64_t)(d->nslot - 1);
    while (d->slot[h])
        h = (h + 1) & (uint64_t)(d->nslot - 1);
    d->slot[h] = k + 1;
    return k;
}

/* ---- Levenshtein distance over bytes, two rows ---- */

static int64_t levenshtein(const char *a, const char *b, int64_t *row)
{
    int64_t la = (int64_t)strlen(a), lb = (int64_t)strlen(b);
    int64_t *prev = row, *cur = row + lb + 1;
    for (int64_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (int64_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (int64_t j = 1; j <= lb; j++) {
            int64_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < c)
                c = prev[j] + 1;
            if (cur[j - 1] + 1 < c)
                c = cur[j - 1] + 1;
            cur[j] = c;
        }
        int64_t *t = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

static Status frame_arg(Interp *I, const BArgs *a, int i, const FrameBlock **out)
{
    if (a->v[i].kind != VAL_FRAME)
        return arg_type_error(I, a, i, "a frame");
    *out = a->v[i].f;
    return ST_OK;
}

/* A string frame of rows x 1 from the cells given (NULL: missing); takes
 * the strings. */
static Status string_column_take(Interp *I, char **cells, int64_t rows, Value *out)
{
    FrameBlock *r = frame_alloc(I, rows, 1, NULL);
    Status st = r ? ST_OK : ST_ERR;
    for (int64_t i = 0; i < rows; i++) {
        if (st == ST_OK && cells[i] && !(r->col[0].s[i] = str_from(cells[i])))
            st = err_set(I, "out of memory");
        free(cells[i]);
    }
    if (st != ST_OK) {
        frame_release(r);
        return st;
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* ---- correctTypos(strings, frequency_threshold=0.05, distance_threshold=2, is_verbose=FALSE) ---- */

/* A value whose share of the non-missing cells is at most
 * frequency_threshold is a typo candidate; it becomes the frequent value
 * (share above the threshold) nearest to it by Levenshtein distance, if
 * that distance is at most distance_threshold (ties: the more frequent,
 * then the one seen first). Missing cells stay missing. */
static Status bi_correctTypos(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f = NULL;
    double thr;
    int64_t dthr;
    bool verbose;
    TRY(frame_arg(I, a, 0, &f));
    TRY(arg_double(I, a, 1, 0.05, &thr));
    TRY(arg_int(I, a, 2, 2, &dthr));
    TRY(arg_bool(I, a, 3, false, &verbose));
    if (f->cols != 1)
        return err_set(I, "correctTypos(): strings must be a frame of one column, got %lld columns",
                       (long long)f->cols);
    if (!(thr >= 0 && thr <= 1))
        return err_set(I, "correctTypos(): frequency_threshold must be in [0, 1], got %g", thr);
    if (dthr < 0)
        return err_set(I, "correctTypos(): distance_threshold must be non-negative, got %lld", (long long)dthr);
    int64_t n = f->rows;
    Dict d = {0};
    int64_t *idx = malloc(sizeof *idx * (size_t)(n ? n : 1));
    Status st = idx ? ST_OK : err_set(I, "correctTypos(): out of memory");
    int64_t nobs = 0;
    for (int64_t i = 0; st == ST_OK && i < n; i++) {
        bool missing;
        char *s = cell_dup(f, i, 0, &missing);
        idx[i] = -1;
        if (missing)
            continue;
        if (!s || (idx[i] = dict_add_take(&d, s)) < 0)
            st = err_set(I, "correctTypos(): out of memory");
        nobs++;
    }
    int64_t *to = st == ST_OK ? malloc(sizeof *to * (size_t)(d.n ? d.n : 1)) : NULL;
    size_t maxlen = 0;
    for (int64_t k = 0; k < d.n; k++)
        if (strlen(d.key[k]) > maxlen)
            maxlen = strlen(d.key[k]);
    int64_t *row = to ? malloc(sizeof *row * (2 * maxlen + 4)) : NULL;
    if (st == ST_OK && (!to || !row))
        st = err_set(I, "correctTypos(): out of memory");
    for (int64_t k = 0; st == ST_OK && k < d.n; k++) {
        to[k] = k;
        if ((double)d.count[k] / (double)nobs > thr)
            continue;
        int64_t best = -1, bestd = dthr + 1;
        for (int64_t c = 0; c < d.n; c++) {
            if ((double)d.count[c] / (double)nobs <= thr)
                continue;
            int64_t dist = levenshtein(d.key[k], d.key[c], row);
            if (dist < bestd || (dist == bestd && best >= 0 && d.count[c] > d.count[best])) {
                best = c;
                bestd = dist;
            }
        }
        if (best >= 0 && bestd <= dthr) {
            to[k] = best;
            if (verbose && I->out)
                fprintf(I->out, "correctTypos: '%s' -> '%s'\n", d.key[k], d.key[best]);
        }
    }
    char **cells = st == ST_OK ? calloc((size_t)(n ? n : 1), sizeof *cells) : NULL;
    if (st == ST_OK && !cells)
        st = err_set(I, "correctTypos(): out of memory");
    for (int64_t i = 0; st == ST_OK && i < n; i++)
        if (idx[i] >= 0 && !(cells[i] = strdup(d.key[to[idx[i]]])))
            st = err_set(I, "correctTypos(): out of memory");
    if (st == ST_OK) {
        st = string_column_take(I, cells, n, out);  /* frees the strings */
    } else if (cells) {
        for (int64_t i = 0; i < n; i++)
            free(cells[i]);
    }
    free(cells);
    free(row);
    free(to);
    free(idx);
    dict_free(&d);
    return st;
}

/* ---- dmv(X, threshold=0.8, replace="NA") ---- */

/* The syntactic pattern of a value: each run of digits becomes 'D', of
 * letters 'A', of blanks ' '; other characters stay ("12.5" -> "D.D",
 * "N/A" -> "A/A", "-1" -> "-D"). */
static char *pattern_of(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1), *q = p;
    if (!p)
        return NULL;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        int cls = isdigit(c) ? 'D' : (isalpha(c) || c >= 0x80) ? 'A' : isspace(c) ? ' ' : 0;
        if (!cls) {
            *q++ = (char)c;
            i++;
            continue;
        }
        *q++ = (char)cls;
        while (i < n) {
            unsigned char e = (unsigned char)s[i];
            int ce = isdigit(e) ? 'D' : (isalpha(e) || e >= 0x80) ? 'A' : isspace(e) ? ' ' : 0;
            if (ce != cls)
                break;
            i++;
        }
    }
    *q = '\0';
    return p;
}

/* Disguised missing values: in each column, when one pattern covers at
 * least 'threshold' of the non-missing cells, the cells of other patterns
 * are values that stand for "missing" (-1 among counts, "N/A" among words)
 * and become 'replace'. The result is a frame of strings, names kept. */
static Status bi_dmv(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f = NULL;
    double thr;
    const char *rep;
    TRY(frame_arg(I, a, 0, &f));
    TRY(arg_double(I, a, 1, 0.8, &thr));
    TRY(arg_string(I, a, 2, "NA", &rep));
    if (!(thr >= 0 && thr <= 1))
        return err_set(I, "dmv(): threshold must be in [0, 1], got %g", thr);
    int64_t n = f->rows;
    FrameBlock *r = frame_alloc(I, n, f->cols, NULL);
    if (!r)
        return ST_ERR;
    Status st = ST_OK;
    char **pat = calloc((size_t)(n ? n : 1), sizeof *pat);
    if (!pat)
        st = err_set(I, "dmv(): out of memory");
    for (int64_t j = 0; st == ST_OK && j < f->cols; j++) {
        if (f->names && f->names[j] && !frame_set_name(r, j, f->names[j])) {
            st = err_set(I, "dmv(): out of memory");
            break;
        }
        Dict d = {0};
        int64_t nobs = 0;
        for (int64_t i = 0; st == ST_OK && i < n; i++) {
            bool missing;
            char *s = cell_dup(f, i, j, &missing);
            pat[i] = NULL;
            if (missing)
                continue;
            if (!s) {
                st = err_set(I, "dmv(): out of memory");
                break;
            }
            pat[i] = pattern_of(s);
            char *k = pat[i] ? strdup(pat[i]) : NULL;
            if (!k || dict_add_take(&d, k) < 0 || !(r->col[j].s[i] = str_from(s)))
                st = err_set(I, "dmv(): out of memory");
            free(s);
            nobs++;
        }
        int64_t dom = -1;
        for (int64_t k = 0; k < d.n; k++)
            if (dom < 0 || d.count[k] > d.count[dom])
                dom = k;
        if (st == ST_OK && dom >= 0 && (double)d.count[dom] >= thr * (double)nobs) {
            for (int64_t i = 0; st == ST_OK && i < n; i++) {
                if (!pat[i] || !strcmp(pat[i], d.key[dom]))
                    continue;
                str_release(r->col[j].s[i]);
                if (!(r->col[j].s[i] = str_from(rep)))
                    st = err_set(I, "dmv(): out of memory");
            }
        }
        for (int64_t i = 0; i < n; i++) {
            free(pat[i]);
            pat[i] = NULL;
        }
        dict_free(&d);
    }
    free(pat);
    if (st != ST_OK) {
        frame_release(r);
        return st;
    }
    *out = val_frame_take(r);
    return ST_OK;
}

/* ---- cooccurrenceMatrix(input, maxTokens, windowSize, distanceWeighting, symmetric) ---- */

/* The tokens of a text: runs of letters and digits (bytes >= 0x80 count as
 * letters), lower-cased, appended to *d (counted) and their indices to
 * *seq. False when memory runs out. */
static bool tokenize_row(const char *s, Dict *d, int64_t **seq, int64_t *n, int64_t *cap)
{
    for (size_t i = 0; s[i];) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c >= 0x80)) {
            i++;
            continue;
        }
        size_t b = i;
        while (s[i] && (isalnum((unsigned char)s[i]) || (unsigned char)s[i] >= 0x80))
            i++;
        char *t = malloc(i - b + 1);
        if (!t)
            return false;
        for (size_t k = 0; k < i - b; k++)
            t[k] = (char)tolower((unsigned char)s[b + k]);
        t[i - b] = '\0';
        int64_t k = dict_add_take(d, t);
        if (k < 0)
            return false;
        if (*n == *cap) {
            int64_t nc = *cap ? *cap * 2 : 64;
            int64_t *v = realloc(*seq, sizeof *v * (size_t)nc);
            if (!v)
                return false;
            *seq = v;
            *cap = nc;
        }
        (*seq)[(*n)++] = k;
    }
    return true;
}

/* A token's rank key: more frequent first, then the one seen first. */
typedef struct Rank { int64_t count, first; } Rank;
static int cmp_rank(const void *x, const void *y)
{
    const Rank *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Rows are texts (the cells of a row joined by blanks). The vocabulary is
 * the maxTokens most frequent tokens (all when maxTokens <= 0; ties: the one
 * seen first); wordPosition lists them (word, index) in that order. Each
 * pair of vocabulary tokens at most windowSize apart in a row adds 1 (or
 * 1/distance with distanceWeighting) to coocMatrix[left, right], and with
 * symmetric also to [right, left]. Tokens outside the vocabulary still take
 * up their positions. */
static Status bi_cooccurrenceMatrix(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f = NULL;
    int64_t maxTok, win;
    bool weighted, sym;
    TRY(frame_arg(I, a, 0, &f));
    TRY(arg_int(I, a, 1, 0, &maxTok));
    TRY(arg_int(I, a, 2, 5, &win));
    TRY(arg_bool(I, a, 3, true, &weighted));
    TRY(arg_bool(I, a, 4, true, &sym));
    if (win < 1)
        return err_set(I, "cooccurrenceMatrix(): windowSize must be at least 1, got %lld", (long long)win);
    Dict d = {0};
    int64_t *seq = NULL, nseq = 0, capseq = 0;
    int64_t *rowstart = malloc(sizeof *rowstart * (size_t)(f->rows + 1));
    Status st = rowstart ? ST_OK : err_set(I, "cooccurrenceMatrix(): out of memory");
    for (int64_t i = 0; st == ST_OK && i < f->rows; i++) {
        rowstart[i] = nseq;
        for (int64_t j = 0; st == ST_OK && j < f->cols; j++) {
            bool missing;
            char *s = cell_dup(f, i, j, &missing);
            if (missing)
                continue;
            if (!s || !tokenize_row(s, &d, &seq, &nseq, &capseq))
                st = err_set(I, "cooccurrenceMatrix(): out of memory");
            free(s);
        }
    }
    if (rowstart)
        rowstart[f->rows] = nseq;
    /* order: count descending, then first appearance (= dict index) */
    Rank *rk = st == ST_OK ? malloc(sizeof *rk * (size_t)(d.n ? d.n : 1)) : NULL;
    int64_t *ord = rk ? malloc(sizeof *ord * (size_t)(d.n ? d.n : 1)) : NULL;
    int64_t *vid = ord ? malloc(sizeof *vid * (size_t)(d.n ? d.n : 1)) : NULL;
    if (st == ST_OK && (!rk || !ord || !vid))
        st = err_set(I, "cooccurrenceMatrix(): out of memory");
    int64_t V = 0;
    if (st == ST_OK) {
        for (int64_t k = 0; k < d.n; k++)
            rk[k] = (Rank){d.count[k], k};
        qsort(rk, (size_t)d.n, sizeof *rk, cmp_rank);
        for (int64_t k = 0; k < d.n; k++)
            ord[k] = rk[k].first;
        V = maxTok > 0 && maxTok < d.n ? maxTok : d.n;
        for (int64_t k = 0; k < d.n; k++)
            vid[k] = -1;
        for (int64_t r = 0; r < V; r++)
            vid[ord[r]] = r;
    }
    Matrix *C = st == ST_OK ? mat_alloc_zero(I, V, V) : NULL;
    if (st == ST_OK && !C)
        st = ST_ERR;
    for (int64_t i = 0; st == ST_OK && i < f->rows; i++) {
        for (int64_t p = rowstart[i]; p < rowstart[i + 1]; p++) {
            int64_t x = vid[seq[p]];
            if (x < 0)
                continue;
            for (int64_t q = p + 1; q < rowstart[i + 1] && q - p <= win; q++) {
                int64_t y = vid[seq[q]];
                if (y < 0)
                    continue;
                double w = weighted ? 1.0 / (double)(q - p) : 1.0;
                C->data[x * V + y] += w;
                if (sym)
                    C->data[y * V + x] += w;
            }
        }
    }
    FrameBlock *wp = NULL;
    if (st == ST_OK) {
        FrameType types[2] = {FT_STRING, FT_INT};
        wp = frame_alloc(I, V, 2, types);
        if (!wp)
            st = ST_ERR;
        for (int64_t r = 0; st == ST_OK && r < V; r++) {
            if (!(wp->col[0].s[r] = str_from(d.key[ord[r]])))
                st = err_set(I, "cooccurrenceMatrix(): out of memory");
            wp->col[1].i[r] = r + 1;
        }
        Str *n1 = st == ST_OK ? str_from("word") : NULL, *n2 = n1 ? str_from("index") : NULL;
        if (st == ST_OK && (!n2 || !frame_set_name(wp, 0, n1) || !frame_set_name(wp, 1, n2)))
            st = err_set(I, "cooccurrenceMatrix(): out of memory");
        str_release(n1);
        str_release(n2);
    }
    free(rk);
    free(ord);
    free(vid);
    free(seq);
    free(rowstart);
    dict_free(&d);
    if (st != ST_OK) {
        if (C)
            val_release(val_matrix_take(C));
        frame_release(wp);
        return st;
    }
    out[0] = val_matrix_take(C);
    if (a->nout > 1)
        out[1] = val_frame_take(wp);
    else
        frame_release(wp);
    return ST_OK;
}

/* ---- mdedup(X, LHSfeatures, LHSthreshold, RHSfeatures, RHSthreshold, verbose) ---- */

/* Similarity of two cells' texts: 1 - Levenshtein distance / the longer
 * length (1 for two empty texts, 0 when either is missing). */
static double text_sim(const char *x, const char *y, int64_t *row)
{
    if (!x || !y)
        return 0;
    size_t lx = strlen(x), ly = strlen(y), l = lx > ly ? lx : ly;
    if (!l)
        return 1;
    return 1.0 - (double)levenshtein(x, y, row) / (double)l;
}

/* Matching dependencies: rows i != j are duplicates when the similarity of
 * every LHS column (1-based ids in LHSfeatures) reaches its LHSthreshold
 * and that of every RHS column reaches its RHSthreshold. MD is n x n, 1
 * for duplicate pairs (symmetric, 0 on the diagonal). */
static Status bi_mdedup(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f = NULL;
    Matrix *lf = NULL, *lt = NULL, *rf = NULL, *rt = NULL;
    bool verbose;
    TRY(frame_arg(I, a, 0, &f));
    TRY(arg_matrix(I, a, 1, &lf));
    TRY(arg_matrix(I, a, 2, &lt));
    TRY(arg_matrix(I, a, 3, &rf));
    TRY(arg_matrix(I, a, 4, &rt));
    TRY(arg_bool(I, a, 5, false, &verbose));
    if (mat_len(lf) != mat_len(lt) || mat_len(rf) != mat_len(rt))
        return err_set(I, "mdedup(): LHSfeatures and LHSthreshold (%lld, %lld values), RHSfeatures and "
                       "RHSthreshold (%lld, %lld) must match in length", (long long)mat_len(lf),
                       (long long)mat_len(lt), (long long)mat_len(rf), (long long)mat_len(rt));
    int64_t nf = mat_len(lf) + mat_len(rf);
    int64_t *col = malloc(sizeof *col * (size_t)(nf ? nf : 1));
    double *thr = malloc(sizeof *thr * (size_t)(nf ? nf : 1));
    Status st = col && thr ? ST_OK : err_set(I, "mdedup(): out of memory");
    for (int64_t k = 0; st == ST_OK && k < nf; k++) {
        double c = k < mat_len(lf) ? lf->data[k] : rf->data[k - mat_len(lf)];
        thr[k] = k < mat_len(lf) ? lt->data[k] : rt->data[k - mat_len(lf)];
        if (!(c >= 1 && c <= (double)f->cols && c == floor(c)))
            st = err_set(I, "mdedup(): feature %g is not a column of X (1..%lld)", c, (long long)f->cols);
        else
            col[k] = (int64_t)c - 1;
    }
    int64_t n = f->rows;
    char **txt = st == ST_OK ? calloc((size_t)(n * (nf ? nf : 1) + 1), sizeof *txt) : NULL;
    if (st == ST_OK && !txt)
        st = err_set(I, "mdedup(): out of memory");
    size_t maxlen = 0;
    for (int64_t i = 0; st == ST_OK && i < n; i++)
        for (int64_t k = 0; st == ST_OK && k < nf; k++) {
            bool missing;
            char *s = cell_dup(f, i, col[k], &missing);
            if (!s && !missing)
                st = err_set(I, "mdedup(): out of memory");
            txt[i * nf + k] = s;
            if (s && strlen(s) > maxlen)
                maxlen = strlen(s);
        }
    int64_t *row = st == ST_OK ? malloc(sizeof *row * (2 * maxlen + 4)) : NULL;
    Matrix *M = st == ST_OK && row ? mat_alloc_zero(I, n, n) : NULL;
    if (st == ST_OK && !row)
        st = err_set(I, "mdedup(): out of memory");
    else if (st == ST_OK && !M)
        st = ST_ERR;
    int64_t pairs = 0;
    for (int64_t i = 0; st == ST_OK && i < n; i++)
        for (int64_t j = i + 1; j < n; j++) {
            bool dup = true;
            for (int64_t k = 0; dup && k < nf; k++)
                dup = text_sim(txt[i * nf + k], txt[j * nf + k], row) >= thr[k];
            if (dup) {
                M->data[i * n + j] = M->data[j * n + i] = 1;
                pairs++;
            }
        }
    if (st == ST_OK && verbose && I->out)
        fprintf(I->out, "mdedup: %lld duplicate pairs among %lld rows\n", (long long)pairs, (long long)n);
    if (txt)
        for (int64_t k = 0; k < n * nf; k++)
            free(txt[k]);
    free(txt);
    free(row);
    free(col);
    free(thr);
    if (st != ST_OK) {
        if (M)
            val_release(val_matrix_take(M));
        return st;
    }
    *out = val_matrix_take(M);
    return ST_OK;
}

/* ---- dedup(X, gloveMatrix, vocab, similarityMeasure="cosine", threshold=0.8) ---- */

/* Row i's vector emb[i*d, (i+1)*d): the mean of the rows of E of its
 * tokens found in vd (vrow maps vd's index to E's row), and its norm nrm[i]
 * (0 for a row without known tokens). emb and nrm start zeroed. */
static Status mean_word_vectors(Interp *I, const FrameBlock *f, const Dict *vd, const int64_t *vrow,
                                const Matrix *E, double *emb, double *nrm)
{
    int64_t n = f->rows, d = E->cols;
    Status st = ST_OK;
    for (int64_t i = 0; st == ST_OK && i < n; i++) {
        Dict toks = {0};
        int64_t *seq = NULL, ns = 0, cap = 0, used = 0;
        for (int64_t j = 0; st == ST_OK && j < f->cols; j++) {
            bool missing;
            char *s = cell_dup(f, i, j, &missing);
            if (!missing && (!s || !tokenize_row(s, &toks, &seq, &ns, &cap)))
                st = err_set(I, "dedup(): out of memory");
            free(s);
        }
        for (int64_t p = 0; st == ST_OK && p < ns; p++) {
            int64_t k = dict_find(vd, toks.key[seq[p]]);
            if (k < 0)
                continue;
            used++;
            for (int64_t c = 0; c < d; c++)
                emb[i * d + c] += E->data[vrow[k] * d + c];
        }
        for (int64_t c = 0; c < d; c++) {
            if (used)
                emb[i * d + c] /= (double)used;
            nrm[i] += emb[i * d + c] * emb[i * d + c];
        }
        nrm[i] = sqrt(nrm[i]);
        free(seq);
        dict_free(&toks);
    }
    return st;
}

/* The rows i of f without dup[i], in order, as a new frame *U (names and
 * column types kept). */
static Status frame_rows_kept(Interp *I, const FrameBlock *f, const bool *dup, FrameBlock **U)
{
    int64_t n = f->rows, keep = 0;
    for (int64_t i = 0; i < n; i++)
        keep += !dup[i];
    FrameType *types = malloc(sizeof *types * (size_t)(f->cols ? f->cols : 1));
    if (!types)
        return err_set(I, "dedup(): out of memory");
    for (int64_t j = 0; j < f->cols; j++)
        types[j] = f->col[j].type;
    *U = frame_alloc(I, keep, f->cols, types);
    free(types);
    if (!*U)
        return ST_ERR;
    for (int64_t j = 0; j < f->cols; j++) {
        if (f->names && f->names[j] && !frame_set_name(*U, j, f->names[j]))
            return err_set(I, "dedup(): out of memory");
        const FrameCol *src = &f->col[j];
        FrameCol *dst = &(*U)->col[j];
        dst->narrow = src->narrow;
        for (int64_t i = 0, r = 0; i < n; i++) {
            if (dup[i])
                continue;
            switch (src->type) {
            case FT_STRING:
                dst->s[r] = src->s[i];
                if (dst->s[r])
                    val_retain(val_str_take(dst->s[r]));
                break;
            case FT_DOUBLE: dst->d[r] = src->d[i]; break;
            case FT_INT: dst->i[r] = src->i[i]; break;
            case FT_BOOL: dst->b[r] = src->b[i]; break;
            }
            r++;
        }
    }
    return ST_OK;
}

/* Near-duplicate rows by word vectors: a row's vector is the mean of the
 * vectors (rows of gloveMatrix) of its tokens found in vocab (tokens as
 * cooccurrenceMatrix makes them, over all the row's cells); rows i != j are
 * duplicates when the cosine similarity of their vectors reaches
 * threshold (a row without known tokens has none). Y_unique keeps the rows
 * that duplicate no earlier row; Y_duplicates is n x n, 1 for duplicate
 * pairs. */
static Status bi_dedup(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f = NULL, *voc = NULL;
    Matrix *E = NULL;
    const char *meas;
    double thr;
    TRY(frame_arg(I, a, 0, &f));
    TRY(arg_matrix(I, a, 1, &E));
    TRY(frame_arg(I, a, 2, &voc));
    TRY(arg_string(I, a, 3, "cosine", &meas));
    TRY(arg_double(I, a, 4, 0.8, &thr));
    if (strcmp(meas, "cosine") != 0)
        return err_set(I, "dedup(): similarityMeasure \"%s\" is not supported by dml (\"cosine\" is)", meas);
    if (voc->cols < 1 || voc->rows != E->rows)
        return err_set(I, "dedup(): vocab must name one word per row of gloveMatrix (%lld), got %lld x %lld",
                       (long long)E->rows, (long long)voc->rows, (long long)voc->cols);
    int64_t n = f->rows, d = E->cols;
    Dict vd = {0};
    Status st = ST_OK;
    for (int64_t r = 0; st == ST_OK && r < voc->rows; r++) {
        bool missing;
        char *w = cell_dup(voc, r, 0, &missing);
        if (missing)
            w = strdup("");
        if (!w || dict_add_take(&vd, w) < 0)
            st = err_set(I, "dedup(): out of memory");
    }
    /* vd's index k is the first vocab row with that word: map back */
    int64_t *vrow = st == ST_OK ? malloc(sizeof *vrow * (size_t)(vd.n ? vd.n : 1)) : NULL;
    if (st == ST_OK && !vrow)
        st = err_set(I, "dedup(): out of memory");
    for (int64_t k = 0, r = 0; st == ST_OK && r < voc->rows; r++) {
        bool missing;
        char *w = cell_dup(voc, r, 0, &missing);
        int64_t q = dict_find(&vd, w ? w : "");
        free(w);
        if (q == k)
            vrow[k++] = r;
    }
    double *emb = st == ST_OK ? calloc((size_t)(n * d + 1), sizeof *emb) : NULL;
    double *nrm = emb ? calloc((size_t)(n + 1), sizeof *nrm) : NULL;
    if (st == ST_OK && (!emb || !nrm))
        st = err_set(I, "dedup(): out of memory");
    if (st == ST_OK)
        st = mean_word_vectors(I, f, &vd, vrow, E, emb, nrm);
    Matrix *M = st == ST_OK ? mat_alloc_zero(I, n, n) : NULL;
    if (st == ST_OK && !M)
        st = ST_ERR;
    bool *dup = st == ST_OK ? calloc((size_t)(n + 1), sizeof *dup) : NULL;
    if (st == ST_OK && !dup)
        st = err_set(I, "dedup(): out of memory");
    for (int64_t i = 0; st == ST_OK && i < n; i++)
        for (int64_t j = i + 1; j < n; j++) {
            if (nrm[i] == 0 || nrm[j] == 0)
                continue;
            double dot = 0;
            for (int64_t c = 0; c < d; c++)
                dot += emb[i * d + c] * emb[j * d + c];
            if (dot / (nrm[i] * nrm[j]) >= thr) {
                M->data[i * n + j] = M->data[j * n + i] = 1;
                dup[j] = true;
            }
        }
    FrameBlock *U = NULL;
    if (st == ST_OK)
        st = frame_rows_kept(I, f, dup, &U);
    free(dup);
    free(emb);
    free(nrm);
    free(vrow);
    dict_free(&vd);
    if (st != ST_OK) {
        if (M)
            val_release(val_matrix_take(M));
        frame_release(U);
        return st;
    }
    out[0] = val_frame_take(U);
    if (a->nout > 1)
        out[1] = val_matrix_take(M);
    else
        val_release(val_matrix_take(M));
    return ST_OK;
}

const BuiltinDef bi_frame_text_table[] = {
    {"dedup", bi_dedup, "X,gloveMatrix,vocab,similarityMeasure,threshold", 3, BIND_NAMED, 2, BF_MULTI_OPT},
    {"correctTypos", bi_correctTypos, "strings,frequency_threshold,distance_threshold,is_verbose", 1, BIND_NAMED, 1,
     0},
    {"dmv", bi_dmv, "X,threshold,replace", 1, BIND_NAMED, 1, 0},
    {"cooccurrenceMatrix", bi_cooccurrenceMatrix, "input,maxTokens,windowSize,distanceWeighting,symmetric", 1,
     BIND_NAMED, 2, BF_MULTI_OPT},
    {"mdedup", bi_mdedup, "X,LHSfeatures,LHSthreshold,RHSfeatures,RHSthreshold,verbose", 5, BIND_NAMED, 1, 0},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
