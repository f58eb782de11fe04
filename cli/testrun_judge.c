/* SPDX-License-Identifier: Apache-2.0
 * The test runner's judging: the exit status and output of a finished test
 * against its expectations, with a line diff in the failure report. */
#define _GNU_SOURCE
#include "testrun_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ======================================================================
 * Diff
 * ====================================================================== */

typedef struct Line { const char *p; size_t len; bool nl; } Line;

static Line *split_lines(const char *s, size_t len, size_t *n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n')
            cnt++;
    if (len > 0 && s[len - 1] != '\n')
        cnt++;
    Line *v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v) {
        *n = 0;
        return NULL;
    }
    size_t k = 0, start = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n') {
            v[k++] = (Line){s + start, i - start, true};
            start = i + 1;
        }
    if (start < len)
        v[k++] = (Line){s + start, len - start, false};
    *n = k;
    return v;
}

static bool line_eq(const Line *a, const Line *b)
{
    return a->len == b->len && a->nl == b->nl && memcmp(a->p, b->p, a->len) == 0;
}

/* A report with a line budget: detail lines beyond the cap are counted,
 * not printed. */
typedef struct Report { StrBuf *b; int lines, dropped; } Report;

static void rep_line(Report *r, char tag, const Line *l)
{
    if (r->lines >= REPORT_MAX_LINES) {
        r->dropped++;
        return;
    }
    r->lines++;
    sb_puts(r->b, "    ");
    sb_putn(r->b, &tag, 1);
    sb_putn(r->b, l->p, l->len);
    sb_puts(r->b, "\n");
    if (!l->nl && tag != '@') {
        if (r->lines >= REPORT_MAX_LINES) {
            r->dropped++;
            return;
        }
        r->lines++;
        sb_puts(r->b, "    \\ No newline at end of file\n");
    }
}

static void rep_text(Report *r, const char *text)
{
    if (r->lines >= REPORT_MAX_LINES) {
        r->dropped++;
        return;
    }
    r->lines++;
    sb_puts(r->b, "    ");
    sb_puts(r->b, text);
    sb_puts(r->b, "\n");
}

typedef enum EditOp { E_SAME, E_DEL, E_ADD } EditOp;
typedef struct Edit { EditOp op; size_t ai, bi; } Edit;

/* Edit script from a to b: common prefix and suffix, LCS in between (or a
 * plain replace when the middle is too large for the table). */
static Edit *diff_edits(const Line *a, size_t na, const Line *b, size_t nb, size_t *ne)
{
    Edit *e = malloc((na + nb + 1) * sizeof *e);
    if (!e) {
        *ne = 0;
        return NULL;
    }
    size_t k = 0, pre = 0, suf = 0;
    while (pre < na && pre < nb && line_eq(&a[pre], &b[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre && line_eq(&a[na - 1 - suf], &b[nb - 1 - suf]))
        suf++;
    for (size_t i = 0; i < pre; i++)
        e[k++] = (Edit){E_SAME, i, i};
    size_t ma = na - pre - suf, mb = nb - pre - suf;
    const Line *A = a + pre, *B = b + pre;
    unsigned *t = NULL;
    if (ma > 0 && mb > 0 && (ma + 1) * (mb + 1) <= DIFF_MAX_CELLS)
        t = calloc((ma + 1) * (mb + 1), sizeof *t);
    if (t) {
        /* t[i][j] = LCS length of A[i..] and B[j..] */
        size_t w = mb + 1;
        for (size_t i = ma; i-- > 0;)
            for (size_t j = mb; j-- > 0;)
                t[i * w + j] = line_eq(&A[i], &B[j]) ? t[(i + 1) * w + j + 1] + 1
                             : (t[(i + 1) * w + j] >= t[i * w + j + 1] ? t[(i + 1) * w + j]
                                                                       : t[i * w + j + 1]);
        size_t i = 0, j = 0;
        while (i < ma && j < mb) {
            if (line_eq(&A[i], &B[j])) {
                e[k++] = (Edit){E_SAME, pre + i, pre + j};
                i++;
                j++;
            } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
                e[k++] = (Edit){E_DEL, pre + i, pre + j};
                i++;
            } else {
                e[k++] = (Edit){E_ADD, pre + i, pre + j};
                j++;
            }
        }
        for (; i < ma; i++)
            e[k++] = (Edit){E_DEL, pre + i, pre + mb};
        for (; j < mb; j++)
            e[k++] = (Edit){E_ADD, pre + ma, pre + j};
        free(t);
    } else {
        for (size_t i = 0; i < ma; i++)
            e[k++] = (Edit){E_DEL, pre + i, pre};
        for (size_t j = 0; j < mb; j++)
            e[k++] = (Edit){E_ADD, pre + ma, pre + j};
    }
    for (size_t i = 0; i < suf; i++)
        e[k++] = (Edit){E_SAME, na - suf + i, nb - suf + i};
    *ne = k;
    return e;
}

/* Appends a unified-style diff of expected vs actual to r. */
static void rep_diff(Report *r, const char *exp, size_t elen, const char *act, size_t alen)
{
    size_t na, nb, ne;
    Line *a = split_lines(exp, elen, &na);
    Line *b = split_lines(act, alen, &nb);
    Edit *e = (a && b) ? diff_edits(a, na, b, nb, &ne) : NULL;
    if (!e) {
        rep_text(r, "(out of memory computing the diff)");
        free(a);
        free(b);
        return;
    }
    rep_text(r, "--- expected");
    rep_text(r, "+++ actual");
    size_t i = 0;
    while (i < ne) {
        if (e[i].op == E_SAME) {
            i++;
            continue;
        }
        /* A hunk: from the first change back DIFF_CONTEXT lines, forward
         * until DIFF_CONTEXT*2 unchanged lines in a row (or the end). */
        size_t start = i >= DIFF_CONTEXT ? i - DIFF_CONTEXT : 0;
        while (start < i && e[start].op != E_SAME)
            start++;
        size_t end = i, same = 0;
        while (end < ne) {
            if (e[end].op == E_SAME) {
                if (++same > 2 * DIFF_CONTEXT)
                    break;
            } else {
                same = 0;
            }
            end++;
        }
        if (same > DIFF_CONTEXT)
            end -= same - DIFF_CONTEXT;     /* keep only DIFF_CONTEXT trailing lines */
        size_t ca = 0, cb = 0;
        for (size_t x = start; x < end; x++) {
            if (e[x].op != E_ADD)
                ca++;
            if (e[x].op != E_DEL)
                cb++;
        }
        char hdr[96];
        snprintf(hdr, sizeof hdr, "@@ -%zu,%zu +%zu,%zu @@", e[start].ai + (ca ? 1 : 0), ca,
                 e[start].bi + (cb ? 1 : 0), cb);
        rep_text(r, hdr);
        for (size_t x = start; x < end; x++) {
            if (e[x].op == E_SAME)
                rep_line(r, ' ', &a[e[x].ai]);
            else if (e[x].op == E_DEL)
                rep_line(r, '-', &a[e[x].ai]);
            else
                rep_line(r, '+', &b[e[x].bi]);
        }
        i = end;
    }
    free(e);
    free(a);
    free(b);
}

/* Appends up to 'max' lines of text (stderr) with a label. */
static void rep_excerpt(Report *r, const char *label, const char *s, size_t len, int max)
{
    if (len == 0)
        return;
    size_t n;
    Line *l = split_lines(s, len, &n);
    if (!l)
        return;
    rep_text(r, label);
    for (size_t i = 0; i < n && (int)i < max; i++)
        rep_line(r, '|', &l[i]);
    if ((int)n > max) {
        char m[64];
        snprintf(m, sizeof m, "|... (%zu more lines)", n - (size_t)max);
        rep_text(r, m);
    }
    free(l);
}

/* ======================================================================
 * Judging
 * ====================================================================== */

static size_t first_line_len(const char *s, size_t len)
{
    const char *nl = memchr(s, '\n', len);
    size_t n = nl ? (size_t)(nl - s) : len;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    return n;
}

static void fail_head(Test *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_head(Test *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    t->passed = false;
    sb_printf(&t->report, "FAIL %s: %s\n", t->path, msg);
}

/* A finished test's output beside what it should have printed. */
typedef struct Outcome {
    const char *out, *err;          /* what it printed */
    size_t olen, elen;
    const char *exp_out, *exp_err;  /* its X.out and X.err, when it has them */
    size_t exp_olen;
    size_t el, al;                  /* first lines of X.err and of stderr */
    const char *out_path, *err_path;
    int status;
    bool out_ok, err_ok;
} Outcome;

/* --update: rewrites the golden files when only their content differs (a
 * wrong exit status or a crash is never "updated away"); a file named
 * explicitly without golden output gets a new X.out. True when they were
 * written. */
static bool update_golden(const Test *t, const Outcome *u)
{
    bool ok = true;
    if (!u->out_ok || (!t->has_out && !t->has_err && !tr_has_marker(t->path))) {
        ok = tr_write_file(u->out_path, u->out, u->olen);
        printf("%s %s\n", ok ? "updated" : "cannot write", u->out_path);
    }
    if (!u->err_ok && ok) {
        StrBuf line = {0};
        sb_putn(&line, u->err, u->al);
        sb_puts(&line, "\n");
        ok = line.p && !line.oom && tr_write_file(u->err_path, line.p, line.len);
        printf("%s %s\n", ok ? "updated" : "cannot write", u->err_path);
        free(line.p);
    }
    return ok;
}

/* The failure's report: what differs (exit status, stderr's first line,
 * stdout) with excerpts and a diff. */
static void report_mismatch(Test *t, Report *r, const Outcome *u)
{
    if (u->status != t->want_status) {
        fail_head(t, "exit status %d, expected %d", u->status, t->want_status);
        if (!t->has_err || u->status == 0)
            rep_excerpt(r, "stderr:", u->err, u->elen, 8);
        else if (!u->err_ok) {
            rep_excerpt(r, "stderr:", u->err, u->elen, 3);
        }
        if (!u->out_ok)
            rep_diff(r, u->exp_out, u->exp_olen, u->out, u->olen);
        else if (!t->has_out && u->olen > 0 && u->status != 0)
            rep_excerpt(r, "stdout:", u->out, u->olen, 5);
    } else if (!u->err_ok) {
        fail_head(t, "first line of stderr differs from %s", u->err_path);
        StrBuf eb = {0}, ab = {0};
        sb_puts(&eb, "expected: ");
        sb_putn(&eb, u->exp_err, u->el);
        sb_puts(&ab, "actual:   ");
        sb_putn(&ab, u->err, u->al);
        rep_text(r, eb.p ? eb.p : "");
        rep_text(r, ab.p ? ab.p : "");
        free(eb.p);
        free(ab.p);
        if (!u->out_ok)
            rep_diff(r, u->exp_out, u->exp_olen, u->out, u->olen);
    } else if (!u->out_ok) {
        fail_head(t, "stdout differs from %s", u->out_path);
        rep_diff(r, u->exp_out, u->exp_olen, u->out, u->olen);
        rep_excerpt(r, "stderr:", u->err, u->elen, 5);
    }
}

/* Reads the captured output and decides pass/fail; fills t->report. */
void tr_test_judge(Test *t, const Opts *o)
{
    Report r = {&t->report, 0, 0};
    t->passed = true;
    if (t->start_error) {
        fail_head(t, "%s", t->start_error);
        return;
    }
    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    if (t->too_much_output) {
        close(t->out_fd);
        close(t->err_fd);
        t->out_fd = t->err_fd = -1;
        fail_head(t, "stopped: printed more than %d MiB", (int)(OUTPUT_MAX >> 20));
        goto done;
    }
    if (lseek(t->out_fd, 0, SEEK_SET) < 0 || !tr_read_fd(t->out_fd, &out, &olen))
        out = tr_xstrdup(""), olen = 0;
    if (lseek(t->err_fd, 0, SEEK_SET) < 0 || !tr_read_fd(t->err_fd, &err, &elen))
        err = tr_xstrdup(""), elen = 0;
    close(t->out_fd);
    close(t->err_fd);
    t->out_fd = t->err_fd = -1;
    if (!out || !err) {
        fail_head(t, "out of memory reading the output");
        goto done;
    }

    if (t->timed_out) {
        fail_head(t, "timed out after %g s", o->timeout);
        rep_excerpt(&r, "stderr:", err, elen, 5);
        goto done;
    }
    if (WIFSIGNALED(t->wstatus)) {
        int sig = WTERMSIG(t->wstatus);
        const char *name = strsignal(sig);
        fail_head(t, "killed by signal %d (%s)", sig, name ? name : "?");
        rep_excerpt(&r, "stderr:", err, elen, 10);
        goto done;
    }
    int status = WIFEXITED(t->wstatus) ? WEXITSTATUS(t->wstatus) : -1;

    char *exp_out = NULL, *exp_err = NULL;
    size_t exp_olen = 0, exp_elen = 0;
    char *out_path = tr_stem_path(t->path, ".out"), *err_path = tr_stem_path(t->path, ".err");
    if (t->has_out && (!out_path || !tr_read_file(out_path, &exp_out, &exp_olen))) {
        fail_head(t, "cannot read %s", out_path ? out_path : ".out file");
        goto done2;
    }
    if (t->has_err && (!err_path || !tr_read_file(err_path, &exp_err, &exp_elen))) {
        fail_head(t, "cannot read %s", err_path ? err_path : ".err file");
        goto done2;
    }

    bool status_ok = status == t->want_status;
    Outcome u = {out, err, olen, elen, exp_out, exp_err, exp_olen, 0, 0, out_path, err_path, status, false, false};
    u.out_ok = !t->has_out || (olen == exp_olen && memcmp(out, exp_out, olen) == 0);
    u.el = t->has_err ? first_line_len(exp_err, exp_elen) : 0;
    u.al = first_line_len(err, elen);
    u.err_ok = !t->has_err || (u.el == u.al && memcmp(exp_err, err, u.el) == 0);
    bool updated = o->update && status_ok && (!u.out_ok || !u.err_ok || (!t->has_out && !t->has_err)) &&
                   update_golden(t, &u);
    if (!updated)
        report_mismatch(t, &r, &u);
done2:
    free(exp_out);
    free(exp_err);
    free(out_path);
    free(err_path);
done:
    if (r.dropped > 0)
        sb_printf(&t->report, "    ... (%d more lines)\n", r.dropped);
    if (t->passed && o->verbose)
        sb_printf(&t->report, "ok %s\n", t->path);
    free(out);
    free(err);
}
