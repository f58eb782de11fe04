/* SPDX-License-Identifier: Apache-2.0
 * The test runner's discovery: the .dml files under the operands, which of
 * them are tests (X.out, X.err, X.status, X.args, the "# test" marker),
 * sorted and without duplicates. */
#define _GNU_SOURCE
#include "testrun_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ======================================================================
 * Discovery
 * ====================================================================== */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends every *.dml under 'dir' (recursively; hidden entries skipped). */
static void walk_dir(const char *dir, int depth, StrList *out)
{
    if (depth > WALK_MAX_DEPTH)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        /* "./x.dml" reads worse than "x.dml" in reports. */
        char *p = strcmp(dir, ".") == 0 ? tr_xstrdup(e->d_name) : tr_path_join(dir, e->d_name);
        if (!p)
            continue;
        struct stat st;
        if (stat(p, &st) != 0) {
            free(p);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_dir(p, depth + 1, out);
            free(p);
        } else if (S_ISREG(st.st_mode) && tr_ends_with(e->d_name, ".dml")) {
            tr_sl_push_take(out, p);
        } else {
            free(p);
        }
    }
    closedir(d);
}

/* True when the first line of the file contains the marker "# test"
 * followed by the end of the line or a non-word character. */
bool tr_has_marker(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char line[512];
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return false;
    line[n] = '\0';
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    for (char *p = line; (p = strstr(p, "# test")) != NULL; p++) {
        char c = p[6];
        if (c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == ':' || c == '.'
            || c == ',' || c == ';' || c == '-')
            return true;
    }
    return false;
}

/* ======================================================================
 * Tests
 * ====================================================================== */


char *tr_stem_path(const char *path, const char *ext)
{
    size_t n = strlen(path) - 4;    /* minus ".dml" */
    size_t e = strlen(ext);
    char *p = malloc(n + e + 1);
    if (!p)
        return NULL;
    memcpy(p, path, n);
    memcpy(p + n, ext, e + 1);
    return p;
}

/* Fills t from its path. Returns false if the file is not a test (and was
 * not named explicitly). */
static bool test_init(Test *t, const char *path, bool explicit_file)
{
    memset(t, 0, sizeof *t);
    t->out_fd = t->err_fd = -1;
    char *out = tr_stem_path(path, ".out"), *err = tr_stem_path(path, ".err");
    if (!out || !err) {
        free(out);
        free(err);
        return false;
    }
    t->has_out = tr_is_regular(out);
    t->has_err = tr_is_regular(err);
    free(out);
    free(err);
    if (!t->has_out && !t->has_err && !explicit_file && !tr_has_marker(path))
        return false;

    t->path = tr_xstrdup(path);
    t->stem = tr_stem_path(path, "");
    const char *slash = strrchr(path, '/');
    if (slash) {
        t->dir = strndup(path, (size_t)(slash - path) + (slash == path));
        t->name = tr_xstrdup(slash + 1);
    } else {
        t->dir = tr_xstrdup(".");
        t->name = tr_xstrdup(path);
    }
    t->want_status = t->has_err ? 1 : 0;

    char *stfile = tr_stem_path(path, ".status");
    char *text = NULL;
    size_t len = 0;
    if (stfile && tr_read_file(stfile, &text, &len)) {
        char *end = NULL;
        long v = strtol(text, &end, 10);
        if (end != text && v >= 0 && v <= 255)
            t->want_status = (int)v;
        free(text);
    }
    free(stfile);

    char *argfile = tr_stem_path(path, ".args");
    if (argfile && tr_is_regular(argfile)) {
        if (!tr_read_file(argfile, &text, &len))
            t->args_error = tr_xstrdup("cannot read the .args file");
        else {
            if (!tr_split_words(text, &t->args))
                t->args_error = tr_xstrdup("unterminated quote in the .args file");
            free(text);
        }
    }
    free(argfile);
    return t->path && t->stem && t->dir && t->name;
}

void tr_test_free(Test *t)
{
    free(t->path);
    free(t->dir);
    free(t->name);
    free(t->stem);
    tr_sl_free(&t->args);
    free(t->args_error);
    free(t->start_error);
    free(t->report.p);
    if (t->out_fd >= 0)
        close(t->out_fd);
    if (t->err_fd >= 0)
        close(t->err_fd);
}

/* ======================================================================
 * Driver
 * ====================================================================== */

/* Collects the tests named by the operands, sorted by path, without
 * duplicates; the .dml files found in folders that are not tests (no X.out,
 * X.err or "# test" line) go to 'skipped'. Returns false (after a message)
 * on a bad operand. */
bool tr_collect(const Opts *o, Test **tests, size_t *ntests, StrList *skipped)
{
    StrList found = {0}, explicit_files = {0};
    bool ok = true;
    if (o->operands.n == 0)
        walk_dir(".", 0, &found);
    for (size_t i = 0; i < o->operands.n; i++) {
        char *op = tr_xstrdup(o->operands.v[i]);
        if (!op)
            continue;
        size_t n = strlen(op);
        while (n > 1 && op[n - 1] == '/')
            op[--n] = '\0';
        struct stat st;
        if (stat(op, &st) != 0) {
            fprintf(stderr, "dml test: %s: %s\n", op, strerror(errno));
            ok = false;
        } else if (S_ISDIR(st.st_mode)) {
            walk_dir(op, 0, &found);
        } else if (tr_ends_with(op, ".dml")) {
            tr_sl_push_take(&explicit_files, tr_xstrdup(op));
            tr_sl_push_take(&found, tr_xstrdup(op));
        } else {
            fprintf(stderr, "dml test: %s: not a directory or a .dml file\n", op);
            ok = false;
        }
        free(op);
    }
    if (!ok) {
        tr_sl_free(&found);
        tr_sl_free(&explicit_files);
        return false;
    }
    if (found.n > 1)
        qsort(found.v, found.n, sizeof *found.v, cmp_str);
    if (explicit_files.n > 1)
        qsort(explicit_files.v, explicit_files.n, sizeof *explicit_files.v, cmp_str);
    Test *v = calloc(found.n ? found.n : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < found.n; i++) {
        if (i > 0 && strcmp(found.v[i], found.v[i - 1]) == 0)
            continue;
        bool expl = explicit_files.n > 0
                    && bsearch(&found.v[i], explicit_files.v, explicit_files.n,
                               sizeof *explicit_files.v, cmp_str) != NULL;
        if (test_init(&v[k], found.v[i], expl)) {
            k++;
        } else {
            tr_test_free(&v[k]);
            if (!expl)
                tr_sl_push_take(skipped, tr_xstrdup(found.v[i]));
        }
    }
    tr_sl_free(&found);
    tr_sl_free(&explicit_files);
    *tests = v;
    *ntests = v ? k : 0;
    return v != NULL;
}

/* Kills t's process group (after a timeout or too much output); the next
 * tr_reap() collects it. */
