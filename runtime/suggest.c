/* SPDX-License-Identifier: Apache-2.0
 * "Did you mean": the closest known name to a misspelt one (suggest.h). */
#include "suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "program.h"

void suggest_init(Suggest *s, const char *want)
{
    s->want = want;
    s->best[0] = '\0';
    s->best_d = 1 << 30;
}

/* Optimal string alignment distance (Levenshtein plus swapping two
 * neighbours), letters compared without case; a case-only difference costs
 * nothing here and is ranked by the caller. Names longer than the buffer
 * are never close. */
static int distance(const char *a, const char *b)
{
    enum { MAXN = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAXN || m >= MAXN)
        return 1 << 30;
    int d[MAXN][MAXN];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

void suggest_offer(Suggest *s, const char *cand)
{
    if (!cand || !*cand || strcmp(cand, s->want) == 0 || strlen(cand) >= sizeof s->best)
        return;
    size_t len = strlen(s->want);
    /* Short names are close to too much: "x" is one edit from every other
     * one-letter name. Allow 1 edit from 3 letters, 2 from 6. */
    int limit = len >= 6 ? 2 : len >= 3 ? 1 : 0;
    int d = distance(s->want, cand);
    if (d > limit)
        return;
    /* Rank: edit distance, then a case-only match (d == 0) beats nothing
     * else; ties keep the first offered. */
    if (d < s->best_d) {
        s->best_d = d;
        snprintf(s->best, sizeof s->best, "%s", cand);
    }
}

const char *suggest_best(const Suggest *s)
{
    return s->best[0] ? s->best : NULL;
}

const char *suggest_variable(const CallFrame *f, const char *name, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (!f || !f->names)
        return buf;
    Suggest s;
    suggest_init(&s, name);
    for (int i = 0; i < f->names->n && i < f->nslots; i++)
        if (f->slots[i].kind != VAL_NONE)
            suggest_offer(&s, f->names->names[i]);
    if (suggest_best(&s))
        snprintf(buf, cap, " (did you mean '%s'?)", suggest_best(&s));
    return buf;
}
