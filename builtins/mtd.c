/* SPDX-License-Identifier: Apache-2.0
 * The .mtd metadata JSON: read by the JSON reader (json.h), the known keys
 * mapped onto Mtd, and the writer. Thread-safe. */
#include "mtd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"

void mtd_init(Mtd *m)
{
    memset(m, 0, sizeof *m);
    m->rows = m->cols = m->rows_in_block = m->cols_in_block = m->nnz = -1;
    m->header = m->fill = -1;
}

void mtd_free(Mtd *m)
{
    free(m->data_type);
    free(m->value_type);
    free(m->format);
    free(m->description);
    free(m->author);
    free(m->sep);
    free(m->created);
    free(m->indsep);
    free(m->schema);
    free(m->na_strings);
    mtd_init(m);
}

/* Where errors are reported: the file's name and the line. */
typedef struct J {
    const char *name;
    int line;
    DiagErr *e;
} J;

static bool jfail(J *j, const char *what)
{
    return diag_fail(j->e, "%s:%d: %s", j->name, j->line, what);
}

/* The line of byte offset 'off' (1 for the first), counted on from an
 * earlier offset *pos on line *line, which move to 'off'. */
static int line_at(const char *text, int64_t off, int64_t *pos, int *line)
{
    for (; *pos < off; (*pos)++)
        *line += text[*pos] == '\n';
    return *line;
}

/* ================================================================
 * Known keys
 * ================================================================ */

static bool key_string(J *j, const char *key, Js *v, char **slot)
{
    if (v->k != JS_STR) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a string", key);
        return jfail(j, msg);
    }
    free(*slot);
    *slot = v->s;
    v->s = NULL;
    return true;
}

static bool key_int(J *j, const char *key, const Js *v, int64_t *slot)
{
    double d = v->num;
    bool ok = v->k == JS_NUM;
    if (v->k == JS_STR)
        ok = io_parse_double(v->s, v->s + strlen(v->s), &d);
    if (!ok || d != floor(d) || d < 0 || d > 9.0e18) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a non-negative integer", key);
        return jfail(j, msg);
    }
    *slot = (int64_t)d;
    return true;
}

static bool key_double(J *j, const char *key, const Js *v, double *slot)
{
    double d = v->num;
    bool ok = v->k == JS_NUM;
    if (v->k == JS_STR)
        ok = io_parse_double(v->s, v->s + strlen(v->s), &d);
    if (!ok || !isfinite(d)) {
        char msg[96];
        snprintf(msg, sizeof msg, "'%s' must be a number", key);
        return jfail(j, msg);
    }
    *slot = d;
    return true;
}

static bool key_bool(J *j, const char *key, const Js *v, int *slot)
{
    if (v->k == JS_BOOL) {
        *slot = v->b;
        return true;
    }
    if (v->k == JS_STR && (strcmp(v->s, "true") == 0 || strcmp(v->s, "TRUE") == 0)) {
        *slot = 1;
        return true;
    }
    if (v->k == JS_STR && (strcmp(v->s, "false") == 0 || strcmp(v->s, "FALSE") == 0)) {
        *slot = 0;
        return true;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "'%s' must be true or false", key);
    return jfail(j, msg);
}

static bool apply_key(J *j, const char *key, Js *v, Mtd *m)
{
    if (strcmp(key, "data_type") == 0)
        return key_string(j, key, v, &m->data_type);
    if (strcmp(key, "value_type") == 0)
        return key_string(j, key, v, &m->value_type);
    if (strcmp(key, "format") == 0)
        return key_string(j, key, v, &m->format);
    /* description, author and created are informative: any JSON value
     * (upstream's own files hold an object as description); kept when a
     * string. */
    if (strcmp(key, "description") == 0)
        return v->k != JS_STR || key_string(j, key, v, &m->description);
    if (strcmp(key, "author") == 0)
        return v->k != JS_STR || key_string(j, key, v, &m->author);
    if (strcmp(key, "indSep") == 0)
        return key_string(j, key, v, &m->indsep);
    if (strcmp(key, "schema") == 0)
        return key_string(j, key, v, &m->schema);
    if (strcmp(key, "sep") == 0)
        return key_string(j, key, v, &m->sep);
    if (strcmp(key, "created") == 0)
        return v->k != JS_STR || key_string(j, key, v, &m->created);
    if (strcmp(key, "rows") == 0)
        return key_int(j, key, v, &m->rows);
    if (strcmp(key, "cols") == 0)
        return key_int(j, key, v, &m->cols);
    if (strcmp(key, "nnz") == 0)
        return key_int(j, key, v, &m->nnz);
    if (strcmp(key, "rows_in_block") == 0)
        return key_int(j, key, v, &m->rows_in_block);
    if (strcmp(key, "cols_in_block") == 0)
        return key_int(j, key, v, &m->cols_in_block);
    if (strcmp(key, "header") == 0)
        return key_bool(j, key, v, &m->header);
    /* fill, default and naStrings: csv read options a call may leave to
     * the .mtd, as upstream's read takes any of its parameters from it. */
    if (strcmp(key, "fill") == 0)
        return key_bool(j, key, v, &m->fill);
    if (strcmp(key, "default") == 0)
        return (m->has_default = true, key_double(j, key, v, &m->dflt));
    if (strcmp(key, "naStrings") == 0)
        return key_string(j, key, v, &m->na_strings);
    return true;    /* unknown keys (blocksize, ...) are ignored */
}

bool mtd_parse(const char *buf, size_t len, const char *name, Mtd *m, DiagErr *e)
{
    J j = {name, 1, e};
    /* A UTF-8 byte order mark is tolerated: some editors add one. */
    size_t bom = len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    int64_t first = js_skip_space(buf, len, (int64_t)bom), pos = 0;
    int line = 1;
    if ((size_t)first >= len || buf[first] != '{') {
        j.line = line_at(buf, first, &pos, &line);
        return jfail(&j, (size_t)first >= len ? "empty metadata file, expected a JSON object"
                                              : "expected a JSON object '{'");
    }
    /* Upstream's reader stops at the closing brace; what follows is ignored. */
    Js o;
    const char *why;
    int64_t off;
    if (!js_parse_n(buf + bom, len - bom, JS_FIRST_VALUE, &o, &why, &off)) {
        j.line = line_at(buf, (int64_t)bom + off, &pos, &line);
        jfail(&j, why);
        mtd_free(m);
        return false;
    }
    bool ok = true;
    for (int64_t i = 0; ok && i < o.n; i++) {
        /* a type error names the line of the value's ':' */
        j.line = line_at(buf, (int64_t)bom + o.item[i].at, &pos, &line);
        ok = apply_key(&j, o.key[i], &o.item[i], m);
    }
    js_free(&o);
    if (!ok)
        mtd_free(m);
    return ok;
}

/* ================================================================
 * Writing
 * ================================================================ */

bool mtd_stamp(Mtd *m)
{
    const char *user = getenv("USER");
    free(m->author);
    m->author = strdup(user && *user ? user : "SystemDS");
    char when[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
        strcpy(when, "1970-01-01 00:00:00 UTC");
    free(m->created);
    m->created = strdup(when);
    return m->author && m->created;
}

static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

/* Writes one "key": value entry, preceded by the separator of the previous
 * entry (so the last one carries no comma). */
static void entry_start(FILE *f, bool *first, const char *key)
{
    fputs(*first ? "{\n" : ",\n", f);
    *first = false;
    fprintf(f, "    \"%s\": ", key);
}

static void put_str(FILE *f, bool *first, const char *key, const char *v)
{
    if (!v)
        return;
    entry_start(f, first, key);
    put_json_string(f, v);
}

static void put_int(FILE *f, bool *first, const char *key, int64_t v)
{
    if (v < 0)
        return;
    entry_start(f, first, key);
    fprintf(f, "%lld", (long long)v);
}

bool mtd_write(FILE *f, const Mtd *m)
{
    bool first = true;
    put_str(f, &first, "data_type", m->data_type);
    put_str(f, &first, "value_type", m->value_type);
    put_int(f, &first, "rows", m->rows);
    put_int(f, &first, "cols", m->cols);
    put_str(f, &first, "schema", m->schema);
    put_int(f, &first, "rows_in_block", m->rows_in_block);
    put_int(f, &first, "cols_in_block", m->cols_in_block);
    put_int(f, &first, "nnz", m->nnz);
    put_str(f, &first, "format", m->format);
    put_str(f, &first, "description", m->description);
    put_str(f, &first, "author", m->author);
    if (m->header >= 0) {
        entry_start(f, &first, "header");
        fputs(m->header ? "true" : "false", f);
    }
    put_str(f, &first, "sep", m->sep);
    put_str(f, &first, "indSep", m->indsep);
    put_str(f, &first, "created", m->created);
    fputs(first ? "{\n}\n" : "\n}\n", f);
    return !ferror(f);
}
