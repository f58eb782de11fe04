/* SPDX-License-Identifier: Apache-2.0
 * transformencode, transformapply, transformdecode and transformcolmap
 * (doc/frames.md, "Transform"): a frame encoded as a matrix by a JSON spec
 * (recode, dummycode, bin, omit), the meta frame that records the mapping,
 * the same mapping applied to new frames and undone on matrices.
 *
 * The meta frame is upstream's: one STRING column per input column, named
 * as it; a recoded column holds "token·code" per distinct token (codes
 * 1..n in order of first appearance), a binned one "min·max" per bin.
 * Thread-safe: all state comes from the arguments. */
#include "registry.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/fmt.h"
#include "../runtime/frame.h"
#include "../runtime/matrix.h"
#include "../runtime/sparse_ops.h"
#include "json.h"

/* Upstream's Lop.OPERAND_DELIMITOR, U+00B7 in UTF-8. */
#define TF_DELIM "\xC2\xB7"
#define TF_DELIM_LEN 2

/* ==================================================================
 * The plan: what each input column becomes, and its mapping.
 * ================================================================== */

enum { IMP_NONE, IMP_MEAN, IMP_MODE, IMP_CONST };

typedef struct TfCol {
    bool rc, dc, bin, omit;
    int imp;            /* IMP_*: how missing cells are imputed */
    Str *impv;          /* the imputed value (text), once known */
    int64_t nbins;
    /* recode: tok[k] is the token of code k+1; slot[] hashes into tok */
    Str **tok;
    int64_t ntok, captok;
    int64_t *slot;      /* code, 0 = empty; nslot a power of two */
    int64_t nslot;
    double *bmin, *bmax;    /* bin: nbins each */
    int64_t start, width;   /* output columns [start, start + width) */
} TfCol;

typedef struct Tf {
    const char *fn;
    int64_t n;
    TfCol *c;
    int64_t out_cols;
    bool apply;         /* transformapply: impute needs the meta's values */
} Tf;

static void col_free(TfCol *c)
{
    for (int64_t k = 0; k < c->ntok; k++)
        str_release(c->tok[k]);
    free(c->tok);
    free(c->slot);
    free(c->bmin);
    free(c->bmax);
    str_release(c->impv);
}

static void tf_free(Tf *t)
{
    for (int64_t j = 0; t->c && j < t->n; j++)
        col_free(&t->c[j]);
    free(t->c);
    t->c = NULL;
}

static uint64_t tok_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ULL;
    return h;
}

/* The code of token s[0..n), or 0. */
static int64_t rc_find(const TfCol *c, const char *s, size_t n)
{
    if (!c->nslot)
        return 0;
    for (uint64_t h = tok_hash(s, n) & (uint64_t)(c->nslot - 1);; h = (h + 1) & (uint64_t)(c->nslot - 1)) {
        int64_t code = c->slot[h];
        if (!code)
            return 0;
        const Str *t = c->tok[code - 1];
        if ((size_t)t->len == n && !memcmp(t->s, s, n))
            return code;
    }
}

/* Gives the token the code 'code' (the next one when 0); false when out of
 * memory. A token already present keeps its code. */
static bool rc_add(TfCol *c, const char *s, size_t n, int64_t code)
{
    if (rc_find(c, s, n))
        return true;
    if (!code)
        code = c->ntok + 1;
    if (code > c->captok) {
        int64_t nc = c->captok ? c->captok * 2 : 16;
        while (nc < code)
            nc *= 2;
        Str **g = realloc(c->tok, (size_t)nc * sizeof *g);
        if (!g)
            return false;
        memset(g + c->captok, 0, (size_t)(nc - c->captok) * sizeof *g);
        c->tok = g;
        c->captok = nc;
    }
    if ((code > c->ntok ? code : c->ntok) * 2 > c->nslot) {
        int64_t ns = c->nslot ? c->nslot * 2 : 32;
        while (ns < code * 2)
            ns *= 2;
        int64_t *sl = calloc((size_t)ns, sizeof *sl);
        if (!sl)
            return false;
        for (int64_t k = 0; k < c->nslot; k++) {
            int64_t cd = c->slot[k];
            if (!cd)
                continue;
            uint64_t h = tok_hash(c->tok[cd - 1]->s, (size_t)c->tok[cd - 1]->len) & (uint64_t)(ns - 1);
            while (sl[h])
                h = (h + 1) & (uint64_t)(ns - 1);
            sl[h] = cd;
        }
        free(c->slot);
        c->slot = sl;
        c->nslot = ns;
    }
    if (c->tok[code - 1])   /* the code is taken by another token */
        return true;
    Str *t = str_new(s, n);
    if (!t)
        return false;
    c->tok[code - 1] = t;
    if (code > c->ntok)
        c->ntok = code;
    uint64_t h = tok_hash(s, n) & (uint64_t)(c->nslot - 1);
    while (c->slot[h])
        h = (h + 1) & (uint64_t)(c->nslot - 1);
    c->slot[h] = code;
    return true;
}

/* Column j of the spec's frame named by v: a 1-based id when ids, else a
 * name. -1 (error set) when it names none; TF_COL_BEYOND (no error) for an
 * id past the frame's last column, which is ignored: upstream's builtin
 * scripts build one spec for a frame and apply it to frames with fewer
 * columns (a spec's id list is cut to the columns the frame has). */
#define TF_COL_BEYOND (-2)
static int64_t tf_col_ref(Interp *I, const Tf *t, const FrameBlock *names, bool ids, const Js *v)
{
    if (ids) {
        double d = v->k == JS_NUM ? v->num : v->k == JS_STR ? strtod(v->s, NULL) : NAN;
        if (d > (double)t->n && d == floor(d) && isfinite(d))
            return TF_COL_BEYOND;
        if (!(d >= 1 && d <= (double)t->n) || d != floor(d)) {
            if (v->k == JS_NUM || v->k == JS_STR)
                err_set(I, "%s(): the spec's column id %s is not one of 1..%lld", t->fn, v->s, (long long)t->n);
            else
                err_set(I, "%s(): the spec's column ids must be numbers (\"ids\": true)", t->fn);
            return -1;
        }
        return (int64_t)d - 1;
    }
    if (v->k != JS_STR && v->k != JS_NUM) {
        err_set(I, "%s(): the spec's columns must be names (or ids with \"ids\": true)", t->fn);
        return -1;
    }
    for (int64_t j = 0; j < t->n; j++) {
        char buf[256];
        if (!strcmp(frame_col_name(names, j, buf, sizeof buf), v->s))
            return j;
    }
    err_set(I, "%s(): Specified column '%s' does not exist.", t->fn, v->s);
    return -1;
}

/* The column list under 'key' (absent: none); sets the flag at 'off' in
 * each named column. */
static Status tf_list(Interp *I, Tf *t, const Js *spec, const char *key, const FrameBlock *names, bool ids,
                      size_t off)
{
    const Js *l = js_get(spec, key);
    if (!l || l->k == JS_NULL)
        return ST_OK;
    if (l->k != JS_ARR)
        return err_set(I, "%s(): the spec's \"%s\" must be a list of columns", t->fn, key);
    for (int64_t i = 0; i < l->n; i++) {
        int64_t j = tf_col_ref(I, t, names, ids, &l->item[i]);
        if (j == TF_COL_BEYOND)
            continue;
        if (j < 0)
            return ST_ERR;
        *(bool *)((char *)&t->c[j] + off) = true;
    }
    return ST_OK;
}

/* One entry of the spec's "impute": {name (or id), method: global_mean,
 * global_mode or constant, value (constant)}. */
static Status tf_impute_entry(Interp *I, Tf *t, const Js *b, const FrameBlock *names, bool ids)
{
    const Js *ref = b->k == JS_OBJ ? js_get(b, ids ? "id" : "name") : NULL;
    if (!ref)
        return err_set(I, "%s(): each entry of the spec's \"impute\" must be an object with \"%s\"", t->fn,
                       ids ? "id" : "name");
    int64_t j = tf_col_ref(I, t, names, ids, ref);
    if (j == TF_COL_BEYOND)
        return ST_OK;
    if (j < 0)
        return ST_ERR;
    const Js *m = js_get(b, "method");
    const char *method = m && m->s ? m->s : "";
    TfCol *c = &t->c[j];
    if (!strcasecmp(method, "global_mean")) {
        c->imp = IMP_MEAN;
    } else if (!strcasecmp(method, "global_mode")) {
        c->imp = IMP_MODE;
    } else if (!strcasecmp(method, "constant")) {
        const Js *v = js_get(b, "value");
        if (!v || !v->s || v->k == JS_NULL) {
            char nm[256];
            return err_set(I, "%s(): imputing column '%s' by a constant needs a \"value\"", t->fn,
                           frame_col_name(names, j, nm, sizeof nm));
        }
        c->imp = IMP_CONST;
        str_release(c->impv);
        if (!(c->impv = str_from(v->s)))
            return err_set(I, "%s(): out of memory", t->fn);
    } else {
        return err_set(I, "%s(): Unsupported imputation method: %s (expected global_mean, global_mode or constant)",
                       t->fn, m && m->s ? m->s : "none");
    }
    return ST_OK;
}

/* Builds the plan of the spec text for a frame of t->n columns named as
 * 'names' (the target, or the meta frame). */
static Status tf_spec(Interp *I, Tf *t, const char *text, const FrameBlock *names)
{
    t->c = calloc((size_t)t->n + 1, sizeof *t->c);
    if (!t->c)
        return err_set(I, "%s(): out of memory", t->fn);
    Js spec;
    const char *why;
    int64_t off;
    if (!js_parse(text, &spec, &why, &off))
        return err_set(I, "%s(): the spec is not valid JSON: %s at offset %lld", t->fn, why, (long long)off);
    Status st = ST_OK;
    if (spec.k != JS_OBJ)
        st = err_set(I, "%s(): the spec must be a JSON object, e.g. {\"recode\": [\"a\"]}", t->fn);
    static const char *const unsupported[] = {"hash", "udf", "word_embedding", "bag_of_words", NULL};
    for (int k = 0; st == ST_OK && unsupported[k]; k++) {
        const Js *u = js_get(&spec, unsupported[k]);
        if (u && !(u->k == JS_ARR && u->n == 0) && u->k != JS_NULL)
            st = err_set(I, "%s(): the spec's \"%s\" is not supported by dml (supported: ids, recode, dummycode, "
                         "bin, omit, impute)", t->fn, unsupported[k]);
    }
    const Js *idv = st == ST_OK ? js_get(&spec, "ids") : NULL;
    bool ids = idv && ((idv->k == JS_BOOL && idv->b) || (idv->k == JS_STR && !strcasecmp(idv->s, "true")));
    if (st == ST_OK)
        st = tf_list(I, t, &spec, "recode", names, ids, offsetof(TfCol, rc));
    if (st == ST_OK)
        st = tf_list(I, t, &spec, "dummycode", names, ids, offsetof(TfCol, dc));
    if (st == ST_OK)
        st = tf_list(I, t, &spec, "omit", names, ids, offsetof(TfCol, omit));
    const Js *bins = st == ST_OK ? js_get(&spec, "bin") : NULL;
    if (bins && bins->k != JS_ARR && bins->k != JS_NULL)
        st = err_set(I, "%s(): the spec's \"bin\" must be a list of objects", t->fn);
    for (int64_t i = 0; bins && bins->k == JS_ARR && st == ST_OK && i < bins->n; i++) {
        const Js *b = &bins->item[i];
        const Js *ref = b->k == JS_OBJ ? js_get(b, ids ? "id" : "name") : NULL;
        if (!ref) {
            st = err_set(I, "%s(): each entry of the spec's \"bin\" must be an object with \"%s\"", t->fn,
                         ids ? "id" : "name");
            break;
        }
        int64_t j = tf_col_ref(I, t, names, ids, ref);
        if (j == TF_COL_BEYOND)
            continue;
        if (j < 0) {
            st = ST_ERR;
            break;
        }
        const Js *m = js_get(b, "method"), *nb = js_get(b, "numbins");
        const char *method = m && m->s ? m->s : "equi-width";
        if (strcasecmp(method, "equi-width")) {
            st = strcasecmp(method, "equi-height")
                     ? err_set(I, "%s(): Unsupported binning method: %s", t->fn, method)
                     : err_set(I, "%s(): binning method equi-height is not supported by dml (equi-width is)", t->fn);
            break;
        }
        double n = nb ? (nb->k == JS_NUM ? nb->num : nb->s ? strtod(nb->s, NULL) : NAN) : 1;
        if (!(n >= 1 && n <= 1e6) || n != floor(n)) {
            st = err_set(I, "%s(): the number of bins of column %lld must be an integer in 1..1000000", t->fn,
                         (long long)j + 1);
            break;
        }
        t->c[j].bin = true;
        t->c[j].nbins = (int64_t)n;
    }
    const Js *imps = st == ST_OK ? js_get(&spec, "impute") : NULL;
    if (imps && imps->k != JS_ARR && imps->k != JS_NULL)
        st = err_set(I, "%s(): the spec's \"impute\" must be a list of objects", t->fn);
    for (int64_t i = 0; imps && imps->k == JS_ARR && st == ST_OK && i < imps->n; i++)
        st = tf_impute_entry(I, t, &imps->item[i], names, ids);
    for (int64_t j = 0; st == ST_OK && j < t->n; j++) {
        TfCol *c = &t->c[j];
        char buf[256];
        if (c->rc && c->bin)
            st = err_set(I, "%s(): column '%s' is both recoded and binned", t->fn,
                         frame_col_name(names, j, buf, sizeof buf));
        /* Dummycoding needs codes: recoded unless binned, as upstream. */
        if (c->dc && !c->bin)
            c->rc = true;
    }
    js_free(&spec);
    return st;
}

/* Output columns: a dummycoded column spreads over its domain. */
static void tf_layout(Tf *t)
{
    int64_t s = 0;
    for (int64_t j = 0; j < t->n; j++) {
        TfCol *c = &t->c[j];
        c->start = s;
        c->width = !c->dc ? 1 : c->rc ? c->ntok : c->nbins;
        s += c->width;
    }
    t->out_cols = s;
}

/* ==================================================================
 * Cells
 * ================================================================== */

/* A recode token: the cell's text; false for a missing value (a missing or
 * empty string, NaN). 'b' holds the text of a non-string cell. */
static bool cell_token(const FrameBlock *f, int64_t i, int64_t j, StrBuf *b, const char **s, size_t *n)
{
    const FrameCol *c = &f->col[j];
    if (c->type == FT_STRING) {
        const Str *x = c->s[i];
        if (!x || x->len == 0)
            return false;
        *s = x->s;
        *n = (size_t)x->len;
        return true;
    }
    if (c->type == FT_DOUBLE && isnan(c->d[i]))
        return false;
    b->len = 0;
    double d = c->type == FT_DOUBLE ? c->d[i] : 0.5;
    if (d == trunc(d) && fabs(d) < 1e7 && !(d == 0 && signbit(d))) {
        /* An integral FP64 (categories coded as numbers) without the
         * general Double.toString: "12.0", as it would write it. */
        char tmp[24], *p = tmp + sizeof tmp;
        int64_t v = (int64_t)fabs(d);
        *--p = '0';
        *--p = '.';
        do
            *--p = (char)('0' + v % 10);
        while ((v /= 10) > 0);
        if (d < 0)
            *--p = '-';
        sb_putn(b, p, (size_t)(tmp + sizeof tmp - p));
    } else {
        frame_cell_text(b, f, i, j);
    }
    *s = b->p ? b->p : "";
    *n = b->len;
    return !b->oom;
}

static bool cell_missing(const FrameBlock *f, int64_t i, int64_t j)
{
    const FrameCol *c = &f->col[j];
    return c->type == FT_STRING ? !c->s[i] || c->s[i]->len == 0 : c->type == FT_DOUBLE && isnan(c->d[i]);
}

/* The value imputed for cell (i, j) when it is missing, else NULL. */
static const Str *imputed(const TfCol *c, const FrameBlock *f, int64_t i, int64_t j)
{
    return c->impv && cell_missing(f, i, j) ? c->impv : NULL;
}

static bool parse_num(const char *s, double *out)
{
    char *e;
    *out = strtod(s, &e);
    return e != s && !*e;
}

/* The cell as a number; an error naming it when it is a string that is no
 * number. */
static Status cell_num(Interp *I, const Tf *t, const FrameBlock *f, int64_t i, int64_t j, double *out)
{
    if (frame_cell_double(f, i, j, out))
        return ST_OK;
    char where[300];
    return err_set(I, "%s(): the cell at %s holds '%s', which is not a number (recode it in the spec)", t->fn,
                   frame_cell_where(f, i, j, where, sizeof where), f->col[j].s[i]->s);
}

/* The cell as a number after imputation. */
static Status col_num(Interp *I, const Tf *t, const TfCol *c, const FrameBlock *f, int64_t i, int64_t j,
                      double *out)
{
    const Str *iv = imputed(c, f, i, j);
    if (!iv)
        return cell_num(I, t, f, i, j, out);
    if (parse_num(iv->s, out))
        return ST_OK;
    char nm[256];
    return err_set(I, "%s(): column '%s' imputes '%s', which is not a number (recode it in the spec)", t->fn,
                   frame_col_name(f, j, nm, sizeof nm), iv->s);
}

/* The recode token of a cell after imputation; false when missing. */
static bool col_token(const TfCol *c, const FrameBlock *f, int64_t i, int64_t j, StrBuf *b, const char **s,
                      size_t *n)
{
    const Str *iv = imputed(c, f, i, j);
    if (!iv)
        return cell_token(f, i, j, b, s, n);
    *s = iv->s;
    *n = (size_t)iv->len;
    return iv->len > 0;
}

/* The bin (1..nbins) of v: the first bin whose maximum is >= v, as
 * upstream's binary search over the maxima; NaN stays NaN. */
static double bin_code(const TfCol *c, double v)
{
    if (isnan(v))
        return NAN;
    int64_t lo = 0, hi = c->nbins;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->bmax[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (double)(lo + 1 > c->nbins ? c->nbins : lo + 1);
}

/* ==================================================================
 * Building the mapping (encode) and reading it back (apply, decode)
 * ================================================================== */

/* The value global_mean or global_mode imputes in column j: the mean of
 * its numbers (Kahan sum; NaN when there are none) in Java's text, or its
 * most frequent token (the first to reach the count; none when the column
 * is all missing). */
static Status tf_impute_build(Interp *I, const Tf *t, TfCol *c, const FrameBlock *f, int64_t j)
{
    if (c->imp == IMP_MEAN) {
        double sum = 0, comp = 0;
        int64_t cnt = 0;
        for (int64_t i = 0; i < f->rows; i++) {
            double v;
            TRY(cell_num(I, t, f, i, j, &v));
            if (isnan(v))
                continue;
            double y = v - comp, s2 = sum + y;
            comp = (s2 - sum) - y;
            sum = s2;
            cnt++;
        }
        char buf[32];
        fmt_double_java(cnt ? sum / (double)cnt : NAN, buf);
        return (c->impv = str_from(buf)) ? ST_OK : err_set(I, "%s(): out of memory", t->fn);
    }
    TfCol tmp = {0};
    int64_t *cnt = NULL, best = 0;
    StrBuf b;
    sb_init(&b);
    bool oom = false;
    for (int64_t i = 0; i < f->rows && !oom; i++) {
        const char *s;
        size_t n;
        if (!cell_token(f, i, j, &b, &s, &n)) {
            oom = b.oom;
            continue;
        }
        int64_t had = tmp.ntok;
        if (!rc_add(&tmp, s, n, 0)) {
            oom = true;
            break;
        }
        if (tmp.ntok > had) {
            int64_t *g = realloc(cnt, (size_t)tmp.captok * sizeof *g);
            if (!g) {
                oom = true;
                break;
            }
            cnt = g;
            cnt[tmp.ntok - 1] = 0;
        }
        int64_t code = rc_find(&tmp, s, n);
        if (++cnt[code - 1] > (best ? cnt[best - 1] : 0))
            best = code;
    }
    if (!oom && best) {
        c->impv = tmp.tok[best - 1];
        val_retain(val_str_take(c->impv));
    }
    free(cnt);
    col_free(&tmp);
    sb_free(&b);
    return oom ? err_set(I, "%s(): out of memory", t->fn) : ST_OK;
}

static Status tf_build(Interp *I, Tf *t, const FrameBlock *f)
{
    for (int64_t j = 0; j < t->n; j++)
        if (t->c[j].imp == IMP_MEAN || t->c[j].imp == IMP_MODE)
            TRY(tf_impute_build(I, t, &t->c[j], f, j));
    StrBuf b;
    sb_init(&b);
    for (int64_t j = 0; j < t->n; j++) {
        TfCol *c = &t->c[j];
        if (c->rc) {
            for (int64_t i = 0; i < f->rows; i++) {
                const char *s;
                size_t n;
                if (!col_token(c, f, i, j, &b, &s, &n)) {
                    if (b.oom)
                        break;
                    continue;
                }
                if (!rc_add(c, s, n, 0)) {
                    sb_free(&b);
                    return err_set(I, "%s(): out of memory", t->fn);
                }
            }
            if (b.oom) {
                sb_free(&b);
                return err_set(I, "%s(): out of memory", t->fn);
            }
        } else if (c->bin) {
            double lo = INFINITY, hi = -INFINITY;
            for (int64_t i = 0; i < f->rows; i++) {
                double v;
                if (col_num(I, t, c, f, i, j, &v) != ST_OK) {
                    sb_free(&b);
                    return ST_ERR;
                }
                if (!isnan(v)) {
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
            if (lo > hi) {
                char nm[256];
                sb_free(&b);
                return err_set(I, "%s(): column '%s' has no value to bin", t->fn,
                               frame_col_name(f, j, nm, sizeof nm));
            }
            c->bmin = malloc((size_t)c->nbins * sizeof *c->bmin);
            c->bmax = malloc((size_t)c->nbins * sizeof *c->bmax);
            if (!c->bmin || !c->bmax) {
                sb_free(&b);
                return err_set(I, "%s(): out of memory", t->fn);
            }
            double w = (hi - lo) / (double)c->nbins;
            for (int64_t k = 0; k < c->nbins; k++) {
                c->bmin[k] = lo + (double)k * w;
                c->bmax[k] = lo + (double)(k + 1) * w;
            }
        }
    }
    sb_free(&b);
    tf_layout(t);
    return ST_OK;
}

/* Splits a meta cell "a·b" at its last delimiter. */
static bool meta_split(const Str *s, size_t *alen, const char **b)
{
    if (!s)
        return false;
    for (int64_t k = s->len - TF_DELIM_LEN; k >= 0; k--) {
        if (!memcmp(s->s + k, TF_DELIM, TF_DELIM_LEN)) {
            *alen = (size_t)k;
            *b = s->s + k + TF_DELIM_LEN;
            return true;
        }
    }
    return false;
}

/* The mapping from the meta frame M (one column per input column). */
static Status tf_read_meta(Interp *I, Tf *t, const FrameBlock *M)
{
    if (M->cols != t->n)
        return err_set(I, "%s(): the meta frame has %lld columns but the data has %lld", t->fn, (long long)M->cols,
                       (long long)t->n);
    for (int64_t j = 0; j < t->n; j++) {
        TfCol *c = &t->c[j];
        /* global_mean and global_mode impute what transformencode found,
         * kept in the meta frame's column metadata as upstream does. */
        if (t->apply && (c->imp == IMP_MEAN || c->imp == IMP_MODE)) {
            char nm[256];
            if (!M->mv || !M->mv[j])
                return err_set(I, "%s(): the meta frame holds no imputed value for column '%s' (only the meta frame "
                               "transformencode returned carries them; one read from a file does not)", t->fn,
                               frame_col_name(M, j, nm, sizeof nm));
            c->impv = M->mv[j];
            val_retain(val_str_take(c->impv));
        }
        if (!c->rc && !c->bin)
            continue;
        if (M->col[j].type != FT_STRING)
            return err_set(I, "%s(): column %lld of the meta frame is %s, not STRING", t->fn, (long long)j + 1,
                           frame_col_type_name(&M->col[j]));
        int64_t nb = 0;
        if (c->bin) {
            for (int64_t i = 0; i < M->rows && M->col[j].s[i]; i++)
                nb++;
            c->nbins = nb;
            c->bmin = malloc(((size_t)nb + 1) * sizeof *c->bmin);
            c->bmax = malloc(((size_t)nb + 1) * sizeof *c->bmax);
            if (!c->bmin || !c->bmax)
                return err_set(I, "%s(): out of memory", t->fn);
            if (nb == 0)
                return err_set(I, "%s(): column %lld of the meta frame holds no bins", t->fn, (long long)j + 1);
        }
        for (int64_t i = 0; i < M->rows; i++) {
            const Str *s = M->col[j].s[i];
            if (!s || (c->bin && i >= nb))
                continue;
            size_t alen;
            const char *rest;
            bool ok = meta_split(s, &alen, &rest);
            double x = 0, y = 0;
            if (ok && c->bin) {
                char *a = strndup(s->s, alen);
                ok = a && parse_num(a, &x) && parse_num(rest, &y);
                free(a);
                c->bmin[i] = x;
                c->bmax[i] = y;
            } else if (ok) {
                ok = parse_num(rest, &y) && y >= 1 && y == floor(y) && y <= (double)M->rows;
                if (ok && !rc_add(c, s->s, alen, (int64_t)y))
                    return err_set(I, "%s(): out of memory", t->fn);
            }
            if (!ok)
                return err_set(I, "%s(): meta frame cell [%lld, %lld] ('%.60s') is not \"%s\"", t->fn,
                               (long long)i + 1, (long long)j + 1, s->s,
                               c->bin ? "min" TF_DELIM "max" : "token" TF_DELIM "code");
        }
    }
    tf_layout(t);
    return ST_OK;
}

/* ==================================================================
 * Encoding rows (encode, apply)
 * ================================================================== */

static Status tf_apply(Interp *I, const Tf *t, const FrameBlock *f, Matrix **out)
{
    uint8_t *keep = malloc((size_t)f->rows + 1);
    if (!keep)
        return err_set(I, "%s(): out of memory", t->fn);
    int64_t rows = 0;
    for (int64_t i = 0; i < f->rows; i++) {
        keep[i] = 1;
        for (int64_t j = 0; j < t->n && keep[i]; j++)
            if (t->c[j].omit && cell_missing(f, i, j) && !t->c[j].impv)
                keep[i] = 0;
        rows += keep[i];
    }
    /* At most one non-zero per input column and row: where that many would
     * already be held sparse (dummy coding's wide one-hot blocks), the
     * result is built as CSR, never at its dense size; the format rule on
     * its actual count then gives what the dense path gives (the rule is
     * monotone in the count). */
    Matrix *m = NULL;
    SpMat *sp = NULL;
    double bound = (double)rows * (double)t->n;
    if (bound < (double)INT64_MAX / 2 && sp_prefer_sparse(rows, t->out_cols, (int64_t)bound)) {
        sp = sp_new(rows, t->out_cols, 0);
        if (!sp) {
            free(keep);
            return err_set(I, "%s(): out of memory", t->fn);
        }
    } else if (!(m = mat_alloc_zero(I, rows, t->out_cols))) {
        free(keep);
        return ST_ERR;
    }
    StrBuf b;
    sb_init(&b);
    Status st = ST_OK;
    for (int64_t i = 0, r = 0; i < f->rows && st == ST_OK; i++) {
        if (!keep[i])
            continue;
        double *row = m ? mat_row(m, r) : NULL;
        for (int64_t j = 0; j < t->n && st == ST_OK; j++) {
            const TfCol *c = &t->c[j];
            double v;
            if (c->rc) {
                const char *s;
                size_t n;
                int64_t code = col_token(c, f, i, j, &b, &s, &n) ? rc_find(c, s, n) : 0;
                if (b.oom)
                    st = err_set(I, "%s(): out of memory", t->fn);
                v = code ? (double)code : NAN;
            } else {
                st = col_num(I, t, c, f, i, j, &v);
                if (c->bin)
                    v = bin_code(c, v);
            }
            int64_t col = -1;
            if (!c->dc)
                col = c->start;
            else if (v >= 1 && v <= (double)c->width) {
                col = c->start + (int64_t)v - 1;
                v = 1;
            }
            if (col < 0 || st != ST_OK)
                continue;
            if (row)
                row[col] = v;
            else if (v != 0) {      /* -0.0 too: a zero in the sparse form */
                if (sp->nnz == sp->cap && !sp_reserve(sp, sp->nnz + 1)) {
                    st = err_set(I, "%s(): out of memory", t->fn);
                    break;
                }
                sp->colidx[sp->nnz] = (int32_t)col;
                sp->vals[sp->nnz++] = v;
            }
        }
        if (sp)
            sp->rowptr[r + 1] = sp->nnz;
        r++;
    }
    sb_free(&b);
    free(keep);
    if (st != ST_OK) {
        mat_release(m);
        sp_free(sp);
        return st;
    }
    if (sp && !(m = mat_from_sp_take(I, sp, t->fn)))
        return ST_ERR;
    *out = m;
    return ST_OK;
}

/* The meta frame of the mapping: one STRING column per input column,
 * named as f's. */
static Status tf_meta(Interp *I, const Tf *t, const FrameBlock *f, FrameBlock **out)
{
    int64_t rows = 0;
    for (int64_t j = 0; j < t->n; j++) {
        const TfCol *c = &t->c[j];
        int64_t n = c->rc ? c->ntok : c->bin ? c->nbins : 0;
        rows = n > rows ? n : rows;
    }
    FrameBlock *M = frame_alloc(I, rows, t->n, NULL);
    if (!M)
        return ST_ERR;
    for (int64_t j = 0; j < t->n; j++) {
        const TfCol *c = &t->c[j];
        bool ok = (!f->names || frame_set_name(M, j, f->names[j])) && (!c->impv || frame_set_mv(M, j, c->impv));
        for (int64_t k = 0; ok && c->rc && k < c->ntok; k++) {
            const Str *s = c->tok[k];
            char code[32];
            int cl = snprintf(code, sizeof code, TF_DELIM "%lld", (long long)k + 1);
            ok = (M->col[j].s[k] = str_concat(s->s, (size_t)s->len, code, (size_t)cl)) != NULL;
        }
        for (int64_t k = 0; ok && c->bin && k < c->nbins; k++) {
            char a[32], b[32];
            fmt_double_java(c->bmin[k], a);
            fmt_double_java(c->bmax[k], b);
            ok = (M->col[j].s[k] = str_printf("%s" TF_DELIM "%s", a, b)) != NULL;
        }
        if (!ok) {
            frame_release(M);
            return err_set(I, "%s(): out of memory", t->fn);
        }
    }
    *out = M;
    return ST_OK;
}

/* ==================================================================
 * Builtins
 * ================================================================== */

enum { A_TARGET, A_SPEC, A_META };

static Status args_frame_spec(Interp *I, const BArgs *a, const FrameBlock **f, const char **spec)
{
    if (a->v[A_TARGET].kind != VAL_FRAME)
        return arg_type_error(I, a, A_TARGET, "a frame");
    if (a->v[A_SPEC].kind != VAL_STRING)
        return arg_type_error(I, a, A_SPEC, "a string (the JSON spec)");
    *f = a->v[A_TARGET].f;
    *spec = a->v[A_SPEC].s->s;
    return ST_OK;
}

/* [X, M] = transformencode(target=F, spec=s) */
static Status bi_transformencode(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f;
    const char *spec;
    TRY(args_frame_spec(I, a, &f, &spec));
    Tf t = {.fn = "transformencode", .n = f->cols};
    Matrix *X = NULL;
    FrameBlock *M = NULL;
    Status st = tf_spec(I, &t, spec, f);
    if (st == ST_OK)
        st = tf_build(I, &t, f);
    if (st == ST_OK)
        st = tf_apply(I, &t, f, &X);
    if (st == ST_OK)
        st = tf_meta(I, &t, f, &M);
    tf_free(&t);
    if (st != ST_OK) {
        mat_release(X);
        return st;
    }
    /* dummy coding makes mostly zeros: sparse by the format rule */
    out[0] = val_matrix_take(mat_maybe_sparse_take(X, -1));
    out[1] = val_frame_take(M);
    return ST_OK;
}

/* X = transformapply(target=F, spec=s, meta=M) */
static Status bi_transformapply(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *f;
    const char *spec;
    TRY(args_frame_spec(I, a, &f, &spec));
    if (a->v[A_META].kind != VAL_FRAME)
        return arg_type_error(I, a, A_META, "a frame (transformencode's meta frame)");
    Tf t = {.fn = "transformapply", .n = f->cols, .apply = true};
    Matrix *X = NULL;
    Status st = tf_spec(I, &t, spec, f);
    if (st == ST_OK)
        st = tf_read_meta(I, &t, a->v[A_META].f);
    if (st == ST_OK)
        st = tf_apply(I, &t, f, &X);
    tf_free(&t);
    if (st != ST_OK)
        return st;
    *out = val_matrix_take(mat_maybe_sparse_take(X, -1));
    return ST_OK;
}

/* Decodes column j of row i of X into cell (i, j) of the STRING frame F. */
static bool decode_cell(const TfCol *c, const double *row, FrameBlock *F, int64_t i, int64_t j)
{
    double v;
    if (c->dc) {
        v = NAN;
        for (int64_t k = 0; k < c->width; k++) {
            if (row[c->start + k] != 0) {
                v = (double)(k + 1);
                break;
            }
        }
    } else {
        v = row[c->start];
    }
    char buf[64];
    if (c->rc) {
        double r = round(v);
        if (!(r >= 1 && r <= (double)c->ntok) || !c->tok[(int64_t)r - 1])
            return true;    /* no such code: a missing value */
        Str *s = c->tok[(int64_t)r - 1];
        val_retain(val_str_take(s));
        F->col[j].s[i] = s;
        return true;
    }
    if (c->bin) {
        double key = round(v);
        if (!(key >= 1 && key <= (double)c->nbins))
            return true;
        double lo = c->bmin[(int64_t)key - 1], hi = c->bmax[(int64_t)key - 1];
        v = lo + (hi - lo) / 2 + (v - key) * (hi - lo);    /* the bin's centre, plus fractions */
    }
    fmt_double_java(v, buf);
    return (F->col[j].s[i] = str_from(buf)) != NULL;
}

/* F = transformdecode(target=X, spec=s, meta=M) */
static Status bi_transformdecode(Interp *I, const BArgs *a, Value *out)
{
    Matrix *X;
    TRY(arg_matrix(I, a, A_TARGET, &X));
    if (a->v[A_SPEC].kind != VAL_STRING)
        return arg_type_error(I, a, A_SPEC, "a string (the JSON spec)");
    if (a->v[A_META].kind != VAL_FRAME)
        return arg_type_error(I, a, A_META, "a frame (transformencode's meta frame)");
    const FrameBlock *M = a->v[A_META].f;
    Tf t = {.fn = "transformdecode", .n = M->cols};
    Status st = tf_spec(I, &t, a->v[A_SPEC].s->s, M);
    if (st == ST_OK)
        st = tf_read_meta(I, &t, M);
    if (st == ST_OK && X->cols != t.out_cols)
        st = err_set(I, "transformdecode(): the matrix has %lld columns but the spec and meta frame encode %lld",
                     (long long)X->cols, (long long)t.out_cols);
    FrameBlock *F = st == ST_OK ? frame_alloc(I, X->rows, t.n, NULL) : NULL;
    if (st == ST_OK && !F)
        st = ST_ERR;
    for (int64_t j = 0; st == ST_OK && j < t.n; j++) {
        if (M->names && !frame_set_name(F, j, M->names[j]))
            st = err_set(I, "transformdecode(): out of memory");
        for (int64_t i = 0; st == ST_OK && i < X->rows; i++)
            if (!decode_cell(&t.c[j], mat_row(X, i), F, i, j))
                st = err_set(I, "transformdecode(): out of memory");
    }
    tf_free(&t);
    if (st != ST_OK) {
        frame_release(F);
        return st;
    }
    *out = val_frame_take(F);
    return ST_OK;
}

/* C = transformcolmap(target=M, spec=s): per input column j, the row
 * [j, first, last] of the 1-based output columns it encodes to. */
static Status bi_transformcolmap(Interp *I, const BArgs *a, Value *out)
{
    const FrameBlock *M;
    const char *spec;
    TRY(args_frame_spec(I, a, &M, &spec));
    Tf t = {.fn = "transformcolmap", .n = M->cols};
    Status st = tf_spec(I, &t, spec, M);
    if (st == ST_OK)
        st = tf_read_meta(I, &t, M);
    Matrix *C = st == ST_OK ? mat_alloc(I, t.n, 3) : NULL;
    if (st == ST_OK && !C)
        st = ST_ERR;
    for (int64_t j = 0; st == ST_OK && j < t.n; j++) {
        double *row = mat_row(C, j);
        row[0] = (double)(j + 1);
        row[1] = (double)(t.c[j].start + 1);
        row[2] = (double)(t.c[j].start + t.c[j].width);
    }
    tf_free(&t);
    if (st != ST_OK)
        return st;
    *out = val_matrix_take(C);
    return ST_OK;
}

const BuiltinDef bi_transform_table[] = {
    {"transformencode", bi_transformencode, "target,spec", 2, BIND_NAMED, 2, BF_MULTI | BF_NAMED_ONLY},
    {"transformapply", bi_transformapply, "target,spec,meta", 3, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"transformdecode", bi_transformdecode, "target,spec,meta", 3, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"transformcolmap", bi_transformcolmap, "target,spec", 2, BIND_NAMED, 1, BF_NAMED_ONLY},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
