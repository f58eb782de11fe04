/* SPDX-License-Identifier: Apache-2.0
 * The kernel's shell requests that use the session: execute (run a cell,
 * show its last bare expression, report its error), complete, inspect and
 * is_complete. Reading, running, showing, completing and help are the
 * session's (cli/session.c, shared with the REPL); errors are rendered by
 * the same code as on the command line (cli.c). Main thread only. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../builtins/help.h"
#include "../runtime/tostring.h"
#include "cli.h"
#include "kernel_int.h"

/* ==== errors ============================================================== */

typedef struct CellError {
    const char *ename;
    char *text;                 /* rendered: "file:line:col: msg", line, caret, stack */
} CellError;

/* Runs 'render' into a string (open_memstream), for the renderers that
 * write to a FILE. */
static char *capture_runtime_error(Interp *I)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    cli_report_error(I, f);
    fclose(f);
    return buf;
}

static char *capture_diag(const Program *p, const DiagErr *e)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    cli_report_diag(p, e, f);
    fclose(f);
    return buf;
}

/* error content: ename, evalue (the first line), traceback (the lines). */
static json_t *error_content(const CellError *e)
{
    const char *text = e->text ? e->text : "out of memory";
    json_t *tb = json_array();
    const char *p = text;
    while (tb && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        json_array_append_new(tb, kjson_text(p, n));
        p += n + (nl ? 1 : 0);
    }
    const char *nl = strchr(text, '\n');
    json_t *ev = kjson_text(text, nl ? (size_t)(nl - text) : strlen(text));
    return json_pack("{s:s, s:o, s:o}", "ename", e->ename, "evalue", ev, "traceback", tb);
}

/* ==== values ============================================================== */

typedef struct Shown {
    StrBuf text, html;
    int nvalues;
    bool any_matrix;
} Shown;

/* Rows and columns of a matrix in the HTML table (the text form shows
 * SESSION_SHOW_MAX). */
#define HTML_ROWS 30
#define HTML_COLS 20

static void html_escape(StrBuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '&': sb_puts(b, "&amp;"); break;
        default: sb_putn(b, s + i, 1);
        }
    }
}

static void show_value(void *ctx, Value v)
{
    Shown *sh = ctx;
    size_t at = sh->text.len;
    session_show_sb(&sh->text, v);
    sh->nvalues++;
    if (v.kind == VAL_MATRIX) {
        sh->any_matrix = true;
        tostring_matrix_html_sb(&sh->html, v.m, HTML_ROWS, HTML_COLS);
    } else {
        sb_puts(&sh->html, "<pre>");
        html_escape(&sh->html, sh->text.p + at, sh->text.len - at);
        sb_puts(&sh->html, "</pre>\n");
    }
}

/* ==== execute ============================================================= */

/* A copy of text[0..len) with text[0..split) blanked (newlines kept), so
 * the expression after 'split' keeps its line and column in the cell. */
static char *blank_prefix(const char *text, size_t len, size_t split)
{
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++)
        s[i] = i < split && text[i] != '\n' ? ' ' : text[i];
    s[len] = '\0';
    return s;
}

/* Runs one cell; false with *e set when it failed. */
static bool run_cell(Kernel *k, const char *name, const char *text, size_t len, Shown *sh, CellError *e)
{
    Session *s = &k->s;
    char topic[256];
    if (session_help_request(s, text, topic, sizeof topic)) {
        StrBuf b;
        sb_init(&b);
        help_topic(topic, &b);
        if (b.len)
            fwrite(b.p, 1, b.len, k->cell_out);
        sb_free(&b);
        s->ninput++;
        return true;
    }
    size_t split;
    bool has_expr;
    DiagErr perr;
    CellRead r = session_read_cell(name, text, len, &split, &has_expr, &perr);
    if (r != CELL_OK) {
        e->ename = "ParseException";
        e->text = diag_render_err(&perr, text, len, true);
        return false;
    }
    s->ninput++;
    Node **stmts = NULL, *expr = NULL;
    int n = 0;
    DiagErr lerr;
    size_t send = has_expr ? split : len;
    if (send > 0) {
        bool incomplete;
        if (!program_load_chunk(s->prog, name, text, send, &stmts, &n, &incomplete, &lerr)) {
            e->ename = "LanguageException";
            e->text = capture_diag(s->prog, &lerr);
            return false;
        }
    }
    if (has_expr) {
        char *etext = blank_prefix(text, len, split);
        bool ok = etext && program_load_expr(s->prog, name, etext, len, &expr, &lerr);
        free(etext);
        if (!ok) {
            e->ename = "LanguageException";
            e->text = etext ? capture_diag(s->prog, &lerr) : NULL;
            return false;
        }
        /* Errors in the statements read their lines from the whole cell. */
        if (split > 0)
            program_add_text(s->prog, name, text, len);
    }
    Status st = ST_OK;
    if (n > 0)
        st = session_run_stmts(s, stmts, n);
    if (st == ST_OK && expr)
        st = session_run_expr(s, expr, show_value, sh);
    if (st != ST_OK) {
        e->ename = s->I.err.interrupted ? "Interrupted" : "DMLRuntimeException";
        e->text = capture_runtime_error(&s->I);
        err_clear(&s->I);
        return false;
    }
    return true;
}

void kernel_execute(Kernel *k, const KMsg *req)
{
    json_t *c = req->content;
    const char *code = json_string_value(json_object_get(c, "code"));
    bool silent = json_is_true(json_object_get(c, "silent"));
    json_t *sh_j = json_object_get(c, "store_history");
    bool store = !silent && (!sh_j || json_is_true(sh_j));
    if (store)
        k->exec_count++;
    int count = k->exec_count;
    if (!code) {
        kernel_log("execute_request without code");
        code = "";
    }
    if (!silent)
        kernel_publish(k, "execute_input", json_pack("{s:s, s:i}", "code", code, "execution_count", count));
    char name[32];
    snprintf(name, sizeof name, "In[%d]", count);
    Shown sh = {0};
    sb_init(&sh.text);
    sb_init(&sh.html);
    CellError e = {0};
    bool ok = run_cell(k, name, code, strlen(code), &sh, &e);
    kernel_flush(k);
    if (ok && sh.nvalues && !silent) {
        json_t *data = json_object();
        /* without the final newline, as notebooks show text/plain */
        size_t n = sh.text.len;
        if (n && sh.text.p[n - 1] == '\n')
            n--;
        if (data && !sh.text.oom)
            json_object_set_new(data, "text/plain", kjson_text(sh.text.p, n));
        if (data && sh.any_matrix && !sh.html.oom)
            json_object_set_new(data, "text/html", kjson_text(sh.html.p, sh.html.len));
        if (data)
            kernel_publish(k, "execute_result",
                           json_pack("{s:i, s:o, s:{}}", "execution_count", count, "data", data, "metadata"));
    }
    sb_free(&sh.text);
    sb_free(&sh.html);
    json_t *reply;
    if (ok) {
        reply = json_pack("{s:s, s:i, s:[], s:{}}", "status", "ok", "execution_count", count, "payload",
                          "user_expressions");
    } else {
        if (!silent)
            kernel_publish(k, "error", error_content(&e));
        reply = error_content(&e);
        if (reply) {
            json_object_set_new(reply, "status", json_string("error"));
            json_object_set_new(reply, "execution_count", json_integer(count));
        }
        free(e.text);
    }
    kernel_send(k, k->shell, req, "execute_reply", reply);
}

/* ==== positions: Jupyter counts code points ================================ */

static size_t cp_to_byte(const char *s, size_t len, long long cp)
{
    size_t i = 0;
    for (long long c = 0; c < cp && i < len; c++)
        i += diag_char(s + i, len - i, NULL);
    return i;
}

static long long byte_to_cp(const char *s, size_t len, size_t b)
{
    long long c = 0;
    for (size_t i = 0; i < b && i < len; c++)
        i += diag_char(s + i, len - i, NULL);
    return c;
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':';
}

/* The code and the cursor of a complete/inspect request, in bytes. */
static bool code_cursor(const KMsg *req, const char **code, size_t *len, size_t *cur)
{
    *code = json_string_value(json_object_get(req->content, "code"));
    if (!*code)
        return false;
    *len = strlen(*code);
    json_t *cp = json_object_get(req->content, "cursor_pos");
    long long pos = json_is_integer(cp) ? json_integer_value(cp) : (long long)*len;
    *cur = cp_to_byte(*code, *len, pos < 0 ? 0 : pos);
    return true;
}

/* ==== complete ============================================================ */

typedef struct Matches {
    char **v;
    size_t n, cap;
} Matches;

static void add_match(void *ctx, const char *name, SessionNameKind kind)
{
    (void)kind;
    Matches *m = ctx;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        char **v = realloc(m->v, cap * sizeof *v);
        if (!v)
            return;
        m->v = v;
        m->cap = cap;
    }
    char *s = strdup(name);
    if (s)
        m->v[m->n++] = s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void kernel_complete(Kernel *k, const KMsg *req)
{
    const char *code;
    size_t len, cur;
    if (!code_cursor(req, &code, &len, &cur)) {
        kernel_log("complete_request without code");
        return;
    }
    size_t start = cur;
    while (start > 0 && name_char(code[start - 1]))
        start--;
    char *prefix = strndup(code + start, cur - start);
    Matches m = {0};
    json_t *arr = json_array();
    if (prefix && arr) {
        session_each_name(&k->s, prefix, add_match, &m);
        if (m.n)
            qsort(m.v, m.n, sizeof *m.v, cmp_str);
        for (size_t i = 0; i < m.n; i++)
            if (i == 0 || strcmp(m.v[i], m.v[i - 1]) != 0)
                json_array_append_new(arr, json_string(m.v[i]));
    }
    for (size_t i = 0; i < m.n; i++)
        free(m.v[i]);
    free(m.v);
    free(prefix);
    kernel_send(k, k->shell, req, "complete_reply",
                arr ? json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", arr, "cursor_start",
                                (json_int_t)byte_to_cp(code, len, start), "cursor_end",
                                (json_int_t)byte_to_cp(code, len, cur), "metadata")
                    : NULL);
}

/* ==== inspect ============================================================= */

/* The name the cursor is on, else the function whose call's arguments it
 * is in ("rowSums(X|"). malloc'd, or NULL. */
static char *name_at(const char *code, size_t len, size_t cur)
{
    size_t a = cur, b = cur;
    while (a > 0 && name_char(code[a - 1]))
        a--;
    while (b < len && name_char(code[b]))
        b++;
    if (b > a)
        return strndup(code + a, b - a);
    int depth = 0;
    for (size_t i = cur; i-- > 0;) {
        if (code[i] == ')')
            depth++;
        else if (code[i] == '(' && depth-- == 0) {
            size_t e = i;
            while (e > 0 && (code[e - 1] == ' ' || code[e - 1] == '\t'))
                e--;
            size_t s = e;
            while (s > 0 && name_char(code[s - 1]))
                s--;
            return e > s ? strndup(code + s, e - s) : NULL;
        }
    }
    return NULL;
}

void kernel_inspect(Kernel *k, const KMsg *req)
{
    const char *code;
    size_t len, cur;
    if (!code_cursor(req, &code, &len, &cur)) {
        kernel_log("inspect_request without code");
        return;
    }
    char *name = name_at(code, len, cur);
    StrBuf b;
    sb_init(&b);
    bool found = false;
    if (name) {
        /* A variable of the session: its value; a name of the reference: its entry. */
        int slot = slots_find(&k->s.prog->top, name);
        if (slot >= 0 && slot < k->s.top.nslots && k->s.top.slots[slot].kind != VAL_NONE) {
            sb_printf(&b, "%s:\n", name);
            session_show_sb(&b, k->s.top.slots[slot]);
            found = true;
        } else {
            found = help_topic(name, &b);
        }
    }
    free(name);
    found = found && !b.oom;
    json_t *data = json_object();
    if (found && data)
        json_object_set_new(data, "text/plain", kjson_text(b.p, b.len));
    sb_free(&b);
    kernel_send(k, k->shell, req, "inspect_reply",
                data ? json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", found, "data", data,
                                 "metadata")
                     : NULL);
}

/* ==== is_complete ========================================================= */

void kernel_is_complete(Kernel *k, const KMsg *req)
{
    const char *code = json_string_value(json_object_get(req->content, "code"));
    const char *status = "invalid";
    char topic[256];
    if (!code) {
        kernel_log("is_complete_request without code");
        return;
    }
    size_t split;
    bool has_expr;
    DiagErr e;
    if (session_help_request(&k->s, code, topic, sizeof topic)) {
        status = "complete";
    } else {
        CellRead r = session_read_cell("<is_complete>", code, strlen(code), &split, &has_expr, &e);
        status = r == CELL_OK ? "complete" : r == CELL_INCOMPLETE ? "incomplete" : "invalid";
    }
    json_t *c = json_pack("{s:s}", "status", status);
    if (c && strcmp(status, "incomplete") == 0)
        json_object_set_new(c, "indent", json_string("  "));
    kernel_send(k, k->shell, req, "is_complete_reply", c);
}
