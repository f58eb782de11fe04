/* SPDX-License-Identifier: Apache-2.0
 * tokenize(target=F, spec=s, max_tokens=n) (doc/frames.md, "Tokenize"):
 * upstream's text tokenizer. Each row of F is a document: its text column
 * is split into tokens (by a regex, optionally into word n-grams) and each
 * document becomes rows "id columns, token, count" (the bag of words, long
 * format), at most max_tokens of them per document.
 *
 * dml implements the parts of upstream's spec whose results it knows for
 * certain (algo split and ngram with document n-grams; out count in long
 * format); the other choices (out position or hash, format_wide,
 * apply_padding, ngram_type token) are errors that say so, not guesses.
 * Thread-safe: all state comes from the arguments. */
#include "registry.h"

#include <locale.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../runtime/frame.h"
#include "json.h"

#define FN "tokenize"

/* ==================================================================
 * The spec
 * ================================================================== */

typedef struct TkSpec {
    bool ngram;
    int64_t min_gram, max_gram;
    bool custom_re;         /* 're' compiled; else Java's \s+ */
    regex_t re;
    bool sort_alpha;
    int64_t tcol;           /* 0-based text column */
    int64_t *ids;           /* 0-based id columns */
    int64_t nids;
} TkSpec;

static void tk_spec_free(TkSpec *t)
{
    if (t->custom_re)
        regfree(&t->re);
    free(t->ids);
}

static void ere_put(char *o, size_t *k, const char *rep)
{
    size_t rl = strlen(rep);
    memcpy(o + *k, rep, rl);
    *k += rl;
}

/* A bracket class [...] at j[*i], copied as it is (POSIX reads it alike)
 * when it has no escapes, nested classes or '&&'; *i moves to its ']'. */
static bool ere_bracket(const char *j, size_t n, size_t *i, char *o, size_t *k, const char **why)
{
    size_t e = *i + 1;
    if (e < n && j[e] == '^')
        e++;
    if (e < n && j[e] == ']') {
        *why = "a ']' first in [...]";
        return false;
    }
    while (e < n && j[e] != ']') {
        if (j[e] == '\\' || j[e] == '[' || (j[e] == '&' && e + 1 < n && j[e + 1] == '&')) {
            *why = "escapes, nested classes or '&&' inside [...]";
            return false;
        }
        e++;
    }
    if (e >= n) {
        *why = "an unclosed '['";
        return false;
    }
    memcpy(o + *k, j + *i, e - *i + 1);
    *k += e - *i + 1;
    *i = e;
    return true;
}

/* The escape of character e (after a backslash): a class (\s \d \w and
 * their complements), a control character (\t \n \r \f), or an escaped
 * punctuation character taken literally. */
static bool ere_escape(char e, char *o, size_t *k, const char **why)
{
    switch (e) {
    case 's': ere_put(o, k, "[ \t\n\v\f\r]"); return true;
    case 'S': ere_put(o, k, "[^ \t\n\v\f\r]"); return true;
    case 'd': ere_put(o, k, "[0-9]"); return true;
    case 'D': ere_put(o, k, "[^0-9]"); return true;
    case 'w': ere_put(o, k, "[a-zA-Z_0-9]"); return true;
    case 'W': ere_put(o, k, "[^a-zA-Z_0-9]"); return true;
    case 't': ere_put(o, k, "\t"); return true;
    case 'n': ere_put(o, k, "\n"); return true;
    case 'r': ere_put(o, k, "\r"); return true;
    case 'f': ere_put(o, k, "\f"); return true;
    default: break;
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
        *why = "escapes other than \\s \\S \\d \\D \\w \\W \\t \\n \\r \\f";
        return false;
    }
    if ((unsigned char)e >= 0x80) {
        *why = "a backslash before a non-ASCII character";
        return false;
    }
    /* an escaped punctuation character: itself, literally */
    if (e == '^' || e == '\\') {
        o[(*k)++] = '\\';
        o[(*k)++] = e;
    } else {
        o[(*k)++] = '[';
        o[(*k)++] = e;
        o[(*k)++] = ']';
    }
    return true;
}

/* Java regex -> POSIX ERE for the subset whose matches agree: literals,
 * '.', bracket classes without escapes, the greedy quantifiers * + ? {m,n}
 * after an atom, and the escapes \s \S \d \D \w \W \t \n \r \f and
 * backslash-punctuation. Groups, alternation, anchors and the other escapes
 * (\b, \p{..}, \Q..\E, lazy or possessive quantifiers) are refused: POSIX
 * picks the longest match where Java picks the first, Java's $ also matches
 * before a final line break, and the results could differ. NULL (and *why)
 * when refused; else a malloc'd pattern. */
static char *java_to_ere(const char *j, const char **why)
{
    size_t n = strlen(j);
    char *o = malloc(n * 12 + 1);
    if (!o) {
        *why = "out of memory";
        return NULL;
    }
    size_t k = 0;
    bool after_quant = false;
    for (size_t i = 0; i < n; i++) {
        char c = j[i];
        switch (c) {
        case '(': case ')': case '|':
            *why = "groups and alternation ('(', ')', '|')";
            goto refuse;
        case '^': case '$':
            /* Java's $ also matches before a final line break */
            *why = "anchors ('^', '$')";
            goto refuse;
        case '.':
            /* Java's '.' matches no line terminator: \n \r U+0085 U+2028 U+2029 */
            ere_put(o, &k, "[^\n\r\xC2\x85\xE2\x80\xA8\xE2\x80\xA9]");
            after_quant = false;
            continue;
        case '*': case '+': case '?':
            if (k == 0) {
                *why = "a quantifier with nothing before it";
                goto refuse;
            }
            if (after_quant) {
                *why = "lazy or possessive quantifiers";
                goto refuse;
            }
            o[k++] = c;
            after_quant = true;
            continue;
        case '{': {
            size_t e = i + 1;
            while (e < n && (j[e] == ',' || (j[e] >= '0' && j[e] <= '9')))
                e++;
            if (e >= n || j[e] != '}' || e == i + 1 || after_quant || k == 0) {
                *why = "a '{' that is no greedy {m,n} quantifier";
                goto refuse;
            }
            memcpy(o + k, j + i, e - i + 1);
            k += e - i + 1;
            i = e;
            after_quant = true;
            continue;
        }
        case '[':
            if (!ere_bracket(j, n, &i, o, &k, why))
                goto refuse;
            after_quant = false;
            continue;
        case '\\':
            if (i + 1 >= n) {
                *why = "a trailing backslash";
                goto refuse;
            }
            if (!ere_escape(j[++i], o, &k, why))
                goto refuse;
            after_quant = false;
            continue;
        default:
            o[k++] = c;
            after_quant = false;
            continue;
        }
    }
    o[k] = '\0';
    return o;
refuse:
    free(o);
    return NULL;
}

/* POSIX regex runs bytewise in the C locale, where Java's matches whole
 * characters; C.UTF-8 (made once, never changed: safe from any thread)
 * makes '.', negated classes and \S match whole UTF-8 characters. NULL
 * when the system has no such locale: then custom regexes are refused. */
static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_init(void)
{
    utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* An integer-valued JSON number in [lo, hi] into *out. */
static bool js_int(const Js *v, int64_t lo, int64_t hi, int64_t *out)
{
    /* the range first: casting NaN or a number beyond int64 is undefined */
    if (!v || v->k != JS_NUM || !(v->num >= (double)lo && v->num <= (double)hi) || v->num != (double)(int64_t)v->num)
        return false;
    *out = (int64_t)v->num;
    return true;
}

static bool js_true(const Js *v)
{
    return v && v->k == JS_BOOL && v->b;
}

static Status tk_algo_params(Interp *I, TkSpec *t, const Js *ap)
{
    if (ap && ap->k != JS_OBJ)
        return err_set(I, FN "(): the spec's \"algo_params\" must be an object");
    const Js *re = ap ? js_get(ap, "regex") : NULL;
    if (re) {
        if (re->k != JS_STR)
            return err_set(I, FN "(): the spec's \"regex\" must be a string");
        if (strcmp(re->s, "\\s+") != 0) {
            const char *why = NULL;
            char *ere = java_to_ere(re->s, &why);
            if (!ere)
                return err_set(I, FN "(): the regex '%s' uses %s, which dml does not support", re->s, why);
            pthread_once(&utf8_once, utf8_init);
            if (!utf8_locale) {
                free(ere);
                return err_set(I, FN "(): a custom regex needs the C.UTF-8 locale, which this system lacks");
            }
            locale_t old = uselocale(utf8_locale);
            int rc = regcomp(&t->re, ere, REG_EXTENDED);
            uselocale(old);
            free(ere);
            if (rc != 0)
                return err_set(I, FN "(): the regex '%s' is not valid", re->s);
            t->custom_re = true;
            regmatch_t m;
            old = uselocale(utf8_locale);
            rc = regexec(&t->re, "", 1, &m, 0);
            uselocale(old);
            if (rc == 0)
                return err_set(I, FN "(): the regex '%s' matches the empty string, which dml does not support",
                               re->s);
        }
    }
    if (!t->ngram)
        return ST_OK;
    t->min_gram = 1;
    t->max_gram = 2;
    const Js *mn = ap ? js_get(ap, "min_gram") : NULL, *mx = ap ? js_get(ap, "max_gram") : NULL;
    if (mn && !js_int(mn, 1, 1000000, &t->min_gram))
        return err_set(I, FN "(): the spec's \"min_gram\" must be an integer in 1..1000000");
    if (mx && !js_int(mx, 1, 1000000, &t->max_gram))
        return err_set(I, FN "(): the spec's \"max_gram\" must be an integer in 1..1000000");
    const Js *ty = ap ? js_get(ap, "ngram_type") : NULL;
    if (ty && !(ty->k == JS_STR && strcasecmp(ty->s, "document") == 0))
        return err_set(I, FN "(): the spec's \"ngram_type\" %s is not supported by dml (\"document\" is)",
                       ty->k == JS_STR ? ty->s : "(not a string)");
    return ST_OK;
}

static Status tk_out_params(Interp *I, TkSpec *t, const Js *op)
{
    if (op && op->k != JS_OBJ)
        return err_set(I, FN "(): the spec's \"out_params\" must be an object");
    const Js *sa = op ? js_get(op, "sort_alpha") : NULL;
    if (sa && sa->k != JS_BOOL)
        return err_set(I, FN "(): the spec's \"sort_alpha\" must be true or false");
    t->sort_alpha = js_true(sa);
    return ST_OK;
}

/* Reads the spec's keys in upstream's order: algo, algo_params, out,
 * out_params, tokenize_col, id_cols, format_wide. 'ncols' is the frame's. */
static Status tk_spec_read(Interp *I, TkSpec *t, const Js *s, int64_t ncols)
{
    if (s->k != JS_OBJ)
        return err_set(I, FN "(): the spec must be a JSON object, e.g. {\"algo\": \"split\", \"out\": \"count\", "
                       "\"id_cols\": [1], \"tokenize_col\": 2}");
    const Js *algo = js_get(s, "algo");
    if (!algo || algo->k != JS_STR)
        return err_set(I, FN "(): the spec needs \"algo\" (\"split\" or \"ngram\")");
    if (!strcmp(algo->s, "ngram"))
        t->ngram = true;
    else if (strcmp(algo->s, "split") != 0)
        return err_set(I, FN "(): Algorithm {algo=%s} is not supported.", algo->s);
    TRY(tk_algo_params(I, t, js_get(s, "algo_params")));
    const Js *out = js_get(s, "out");
    if (!out || out->k != JS_STR)
        return err_set(I, FN "(): the spec needs \"out\" (\"count\", \"position\" or \"hash\")");
    if (!strcmp(out->s, "position") || !strcmp(out->s, "hash"))
        return err_set(I, FN "(): output representation \"%s\" is not supported by dml (\"count\" is)", out->s);
    if (strcmp(out->s, "count") != 0)
        return err_set(I, FN "(): Output representation {out=%s} is not supported.", out->s);
    TRY(tk_out_params(I, t, js_get(s, "out_params")));
    const Js *tc = js_get(s, "tokenize_col");
    if (!tc)
        return err_set(I, FN "(): the spec needs \"tokenize_col\" (the 1-based column of the text)");
    if (!js_int(tc, 1, ncols, &t->tcol))
        return err_set(I, FN "(): the spec's \"tokenize_col\" must be a column of the frame, 1..%lld",
                       (long long)ncols);
    t->tcol--;
    const Js *ids = js_get(s, "id_cols");
    if (!ids || ids->k != JS_ARR)
        return err_set(I, FN "(): the spec needs \"id_cols\", a list of 1-based columns (may be empty)");
    t->ids = malloc((size_t)(ids->n ? ids->n : 1) * sizeof *t->ids);
    if (!t->ids)
        return err_set(I, FN "(): out of memory");
    for (int64_t k = 0; k < ids->n; k++) {
        if (!js_int(&ids->item[k], 1, ncols, &t->ids[k]))
            return err_set(I, FN "(): entry %lld of the spec's \"id_cols\" must be a column of the frame, 1..%lld",
                           (long long)k + 1, (long long)ncols);
        t->ids[k]--;
    }
    t->nids = ids->n;
    const Js *wide = js_get(s, "format_wide"), *pad = js_get(s, "apply_padding");
    if (wide && wide->k != JS_BOOL)
        return err_set(I, FN "(): the spec's \"format_wide\" must be true or false");
    if (js_true(wide))
        return err_set(I, FN "(): \"format_wide\": true is not supported by dml (the long format is)");
    if (js_true(pad))
        return err_set(I, FN "(): \"apply_padding\": true is not supported by dml");
    return ST_OK;
}

/* ==================================================================
 * Splitting a document
 * ================================================================== */

/* A token: bytes [s, s + n) of some text that outlives it. */
typedef struct Span { const char *s; size_t n; } Span;

typedef struct Spans { Span *v; int64_t n, cap; } Spans;

static bool spans_push(Spans *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        int64_t nc = l->cap ? l->cap * 2 : 16;
        Span *g = realloc(l->v, (size_t)nc * sizeof *g);
        if (!g)
            return false;
        l->v = g;
        l->cap = nc;
    }
    l->v[l->n++] = (Span){s, n};
    return true;
}

static bool java_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The next match of the separator at or after 'from' in text[0..n):
 * [*ms, *me); false when there is none. */
static bool next_sep(const TkSpec *t, const char *text, size_t n, size_t from, size_t *ms, size_t *me)
{
    if (!t->custom_re) {
        size_t i = from;
        while (i < n && !java_space(text[i]))
            i++;
        if (i >= n)
            return false;
        size_t e = i;
        while (e < n && java_space(text[e]))
            e++;
        *ms = i;
        *me = e;
        return true;
    }
    regmatch_t m = {.rm_so = (regoff_t)from, .rm_eo = (regoff_t)n};
    /* REG_STARTEND: search text[from..n) (patterns have no anchors) */
    locale_t old = uselocale(utf8_locale);
    int rc = regexec(&t->re, text, 1, &m, REG_STARTEND);
    uselocale(old);
    if (rc != 0)
        return false;
    *ms = (size_t)m.rm_so;
    *me = (size_t)m.rm_eo;
    return true;
}

/* Java's text.split(regex): the pieces between matches; a match at the
 * very start gives a leading empty piece, trailing empty pieces are
 * dropped, and a text with no match is one piece (so "" is [""]). The
 * separator never matches the empty string (checked with the spec). */
static bool split_java(const TkSpec *t, const char *text, size_t n, Spans *out)
{
    size_t pos = 0, ms, me;
    int64_t first = out->n;
    bool any = false;
    while (pos <= n && next_sep(t, text, n, pos, &ms, &me)) {
        any = true;
        if (!spans_push(out, text + pos, ms - pos))
            return false;
        pos = me;
    }
    if (!any)
        return spans_push(out, text, n);
    if (!spans_push(out, text + pos, n - pos))
        return false;
    while (out->n > first && out->v[out->n - 1].n == 0)
        out->n--;
    return true;
}

/* ==================================================================
 * Counting (the "count" output)
 * ================================================================== */

/* Distinct tokens of one document in order of first appearance. */
typedef struct Bag {
    char **tok;
    size_t *len;
    int64_t *count;
    int64_t n, cap;
    int64_t *slot;      /* index + 1 into tok, 0 = empty; nslot a power of two */
    int64_t nslot;
    uint64_t bytes;     /* the tokens' text, held against the memory cap */
} Bag;

static void bag_clear(Bag *b)
{
    for (int64_t k = 0; k < b->n; k++)
        free(b->tok[k]);
    b->n = 0;
    b->bytes = 0;
    if (b->slot)
        memset(b->slot, 0, (size_t)b->nslot * sizeof *b->slot);
}

static void bag_free(Bag *b)
{
    bag_clear(b);
    free(b->tok);
    free(b->len);
    free(b->count);
    free(b->slot);
}

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 1099511628211ULL;
    return h;
}

static bool bag_grow(Bag *b)
{
    int64_t nc = b->cap ? b->cap * 2 : 16;
    char **t = realloc(b->tok, (size_t)nc * sizeof *t);
    if (!t)
        return false;
    b->tok = t;
    size_t *l = realloc(b->len, (size_t)nc * sizeof *l);
    if (!l)
        return false;
    b->len = l;
    int64_t *c = realloc(b->count, (size_t)nc * sizeof *c);
    if (!c)
        return false;
    b->count = c;
    b->cap = nc;
    int64_t ns = nc * 2;
    int64_t *sl = calloc((size_t)ns, sizeof *sl);
    if (!sl)
        return false;
    for (int64_t k = 0; k < b->n; k++) {
        uint64_t h = fnv(b->tok[k], b->len[k]) & (uint64_t)(ns - 1);
        while (sl[h])
            h = (h + 1) & (uint64_t)(ns - 1);
        sl[h] = k + 1;
    }
    free(b->slot);
    b->slot = sl;
    b->nslot = ns;
    return true;
}

/* Counts one occurrence of the token made of the 'np' spans p[], joined by
 * single spaces (an n-gram; a plain token when np is 1). */
static bool bag_add(Bag *b, const Span *p, int64_t np)
{
    size_t n = 0;
    for (int64_t k = 0; k < np; k++)
        n += p[k].n + (k > 0);
    char *s = malloc(n + 1);
    if (!s)
        return false;
    size_t at = 0;
    for (int64_t k = 0; k < np; k++) {
        if (k > 0)
            s[at++] = ' ';
        memcpy(s + at, p[k].s, p[k].n);
        at += p[k].n;
    }
    s[n] = '\0';
    if (b->n == b->cap && !bag_grow(b)) {
        free(s);
        return false;
    }
    uint64_t h = fnv(s, n) & (uint64_t)(b->nslot - 1);
    for (; b->slot[h]; h = (h + 1) & (uint64_t)(b->nslot - 1)) {
        int64_t k = b->slot[h] - 1;
        if (b->len[k] == n && !memcmp(b->tok[k], s, n)) {
            b->count[k]++;
            free(s);
            return true;
        }
    }
    b->slot[h] = b->n + 1;
    b->tok[b->n] = s;
    b->len[b->n] = n;
    b->count[b->n] = 1;
    b->n++;
    b->bytes += n + 1 + sizeof *b->tok + sizeof *b->len + sizeof *b->count + 2 * sizeof *b->slot;
    return true;
}

/* Java's String.compareTo on UTF-8 text: by UTF-16 code units, so a
 * character beyond U+FFFF (a surrogate pair, 0xD800..) sorts before
 * U+E000..U+FFFF. Malformed bytes compare as themselves. */
static uint32_t next_unit(const unsigned char **p, const unsigned char *e, uint32_t *low)
{
    const unsigned char *s = *p;
    uint32_t c = *s++;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (more && s + more <= e) {
        c &= 0x3Fu >> more;
        for (int k = 0; k < more; k++)
            c = (c << 6) | (s[k] & 0x3Fu);
        s += more;
    }
    *p = s;
    if (c >= 0x10000) {
        *low = 0xDC00 + ((c - 0x10000) & 0x3FF);
        return 0xD800 + ((c - 0x10000) >> 10);
    }
    *low = 0;
    return c;
}

static int java_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    const unsigned char *p = (const unsigned char *)a, *pe = p + na;
    const unsigned char *q = (const unsigned char *)b, *qe = q + nb;
    uint32_t pl = 0, ql = 0;
    while ((p < pe || pl) && (q < qe || ql)) {
        uint32_t x, y;
        if (pl) {
            x = pl;
            pl = 0;
        } else {
            x = next_unit(&p, pe, &pl);
        }
        if (ql) {
            y = ql;
            ql = 0;
        } else {
            y = next_unit(&q, qe, &ql);
        }
        if (x != y)
            return x < y ? -1 : 1;
    }
    bool amore = p < pe || pl, bmore = q < qe || ql;
    return amore - bmore;
}


static int cmp_order(const Bag *b, int64_t x, int64_t y)
{
    return java_cmp(b->tok[x], b->len[x], b->tok[y], b->len[y]);
}

/* Insertion-merge sort of the indices ord[0..n) by token (stable, no
 * global state: qsort_r is not portable C11). */
static bool sort_tokens(const Bag *b, int64_t *ord, int64_t n)
{
    int64_t *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return false;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = cmp_order(b, ord[j], ord[i]) < 0 ? ord[j++] : ord[i++];
            while (i < mid)
                tmp[k++] = ord[i++];
            while (j < hi)
                tmp[k++] = ord[j++];
        }
        memcpy(ord, tmp, (size_t)n * sizeof *ord);
    }
    free(tmp);
    return true;
}

/* ==================================================================
 * The result rows
 * ================================================================== */

typedef struct Rows {
    int64_t *doc;       /* input row */
    Str **tok;
    int64_t *count;
    int64_t n, cap;
} Rows;

static void rows_free(Rows *r)
{
    for (int64_t k = 0; k < r->n; k++)
        str_release(r->tok[k]);
    free(r->doc);
    free(r->tok);
    free(r->count);
}

static bool rows_push(Rows *r, int64_t doc, const char *s, size_t n, int64_t count)
{
    if (r->n == r->cap) {
        int64_t nc = r->cap ? r->cap * 2 : 64;
        int64_t *d = realloc(r->doc, (size_t)nc * sizeof *d);
        if (!d)
            return false;
        r->doc = d;
        Str **t = realloc(r->tok, (size_t)nc * sizeof *t);
        if (!t)
            return false;
        r->tok = t;
        int64_t *c = realloc(r->count, (size_t)nc * sizeof *c);
        if (!c)
            return false;
        r->count = c;
        r->cap = nc;
    }
    Str *t = str_new(s, n);
    if (!t)
        return false;
    r->doc[r->n] = doc;
    r->tok[r->n] = t;
    r->count[r->n] = count;
    r->n++;
    return true;
}

/* One document: its tokens (or n-grams) counted, the first max_tokens
 * distinct ones (in order of appearance, or sorted) appended to 'r'. */
static Status tk_document(Interp *I, const TkSpec *t, const char *text, size_t n, int64_t doc, int64_t max_tokens,
                          Spans *sp, Bag *bag, Rows *r)
{
    sp->n = 0;
    bag_clear(bag);
    if (!split_java(t, text, n, sp))
        return err_set(I, FN "(): out of memory");
    int64_t lo = t->ngram ? t->min_gram : 1, hi = t->ngram ? t->max_gram : 1;
    /* n-grams of every length up to the document's: quadratic in its
     * tokens, so the bag is held to the memory cap and the loop polls
     * for an interrupt */
    int64_t work = 0;
    for (int64_t g = lo; g <= hi; g++)
        for (int64_t i = 0; i + g <= sp->n; i++) {
            if (!bag_add(bag, sp->v + i, g))
                return err_set(I, FN "(): out of memory");
            if (!mat_cap_allows(bag->bytes))
                return err_set(I, FN "(): out of memory: the distinct tokens of row %lld need more than %llu bytes",
                               (long long)doc + 1, (unsigned long long)bag->bytes);
            if (++work % 4096 == 0 && interp_interrupted(I))
                return eval_raise_interrupt(I, NULL);
        }
    int64_t *ord = malloc((size_t)(bag->n ? bag->n : 1) * sizeof *ord);
    if (!ord)
        return err_set(I, FN "(): out of memory");
    for (int64_t k = 0; k < bag->n; k++)
        ord[k] = k;
    if (t->sort_alpha && !sort_tokens(bag, ord, bag->n)) {
        free(ord);
        return err_set(I, FN "(): out of memory");
    }
    int64_t keep = bag->n < max_tokens ? bag->n : max_tokens;
    for (int64_t k = 0; k < keep; k++) {
        int64_t x = ord[k];
        if (!rows_push(r, doc, bag->tok[x], bag->len[x], bag->count[x])) {
            free(ord);
            return err_set(I, FN "(): out of memory");
        }
    }
    free(ord);
    return ST_OK;
}

static Str *str_ref(Str *s)
{
    if (s)
        obj_retain(&s->h);
    return s;
}

/* The result frame: the id columns as STRING (their cells' text), then
 * token (STRING) and count (INT64). */
static Status tk_result(Interp *I, const TkSpec *t, const FrameBlock *f, const Rows *r, Value *out)
{
    int64_t nc = t->nids + 2;
    FrameType *types = malloc((size_t)nc * sizeof *types);
    if (!types)
        return err_set(I, FN "(): out of memory");
    for (int64_t j = 0; j < nc; j++)
        types[j] = FT_STRING;
    types[nc - 1] = FT_INT;
    FrameBlock *res = frame_alloc(I, r->n, nc, types);
    free(types);
    if (!res)
        return ST_ERR;
    StrBuf b;
    sb_init(&b);
    for (int64_t i = 0; i < r->n; i++) {
        for (int64_t k = 0; k < t->nids; k++) {
            int64_t j = t->ids[k];
            if (f->col[j].type == FT_STRING) {
                res->col[k].s[i] = str_ref(f->col[j].s[r->doc[i]]);
                continue;
            }
            b.len = 0;
            frame_cell_text(&b, f, r->doc[i], j);
            if (!(res->col[k].s[i] = sb_to_str(&b))) {
                sb_free(&b);
                frame_release(res);
                return err_set(I, FN "(): out of memory");
            }
        }
        res->col[nc - 2].s[i] = str_ref(r->tok[i]);
        res->col[nc - 1].i[i] = r->count[i];
    }
    sb_free(&b);
    *out = val_frame_take(res);
    return ST_OK;
}

/* ==================================================================
 * The builtin
 * ================================================================== */

enum { A_TARGET, A_SPEC, A_MAX };

static Status tk_run(Interp *I, const TkSpec *t, const FrameBlock *f, int64_t max_tokens, Value *out)
{
    Spans sp = {0};
    Bag bag = {0};
    Rows r = {0};
    StrBuf b;
    sb_init(&b);
    Status st = ST_OK;
    for (int64_t i = 0; st == ST_OK && i < f->rows; i++) {
        if (f->col[t->tcol].type == FT_STRING && !f->col[t->tcol].s[i]) {
            char where[160];
            st = err_set(I, FN "(): the text at %s is missing",
                         frame_cell_where(f, i, t->tcol, where, sizeof where));
            break;
        }
        b.len = 0;
        frame_cell_text(&b, f, i, t->tcol);
        if (b.oom) {
            st = err_set(I, FN "(): out of memory");
            break;
        }
        st = tk_document(I, t, b.len ? b.p : "", b.len, i, max_tokens, &sp, &bag, &r);
    }
    sb_free(&b);
    free(sp.v);
    bag_free(&bag);
    if (st == ST_OK)
        st = tk_result(I, t, f, &r, out);
    rows_free(&r);
    return st;
}

/* F2 = tokenize(target=F, spec=s, max_tokens=n) */
static Status bi_tokenize(Interp *I, const BArgs *a, Value *out)
{
    if (a->v[A_TARGET].kind != VAL_FRAME)
        return arg_type_error(I, a, A_TARGET, "a frame");
    if (a->v[A_SPEC].kind != VAL_STRING)
        return arg_type_error(I, a, A_SPEC, "a string (the JSON spec)");
    if (!arg_given(a, A_MAX))
        return err_set(I, FN "(): max_tokens is required (the most tokens kept per document)");
    if (!val_is_number(a->v[A_MAX]))
        return arg_type_error(I, a, A_MAX, "an integer");
    int64_t max_tokens;
    TRY(arg_int(I, a, A_MAX, 0, &max_tokens));
    if (max_tokens < 0)
        return err_set(I, FN "(): max_tokens must be >= 0, got %lld", (long long)max_tokens);
    const FrameBlock *f = a->v[A_TARGET].f;
    Js spec;
    const char *why;
    int64_t off;
    if (!js_parse(a->v[A_SPEC].s->s, &spec, &why, &off))
        return err_set(I, FN "(): the spec is not valid JSON: %s at offset %lld", why, (long long)off);
    TkSpec t = {0};
    Status st = tk_spec_read(I, &t, &spec, f->cols);
    js_free(&spec);
    if (st == ST_OK)
        st = tk_run(I, &t, f, max_tokens, out);
    tk_spec_free(&t);
    return st;
}

const BuiltinDef bi_tokenize_table[] = {
    {"tokenize", bi_tokenize, "target,spec,max_tokens", 2, BIND_NAMED, 1, BF_NAMED_ONLY},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
