/* SPDX-License-Identifier: Apache-2.0
 * The runtime does not know builtins by name (doc/internals.md, "A
 * builtin"): what it needs of one (result type, fusion kernel, parfor and
 * liveness properties) is in the builtin's row. So no string literal in
 * base/ or runtime/ (comments aside) spells a builtin's name, except the
 * few listed below, each a word that happens to be a builtin's name too.
 * Run from the repository root (tests/run.sh does): it reads the sources. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/registry.h"
#include "check.h"
#include "runtime/loader.h"

/* Literals allowed in one file; "*" allows every literal of that file. */
static const struct Allowed {
    const char *file, *literal, *why;
} allowed[] = {
    {"base/frame.c", "t", "a boolean cell spelled \"t\""},
    {"base/value.c", "matrix", "the name of a value's type"},
    {"base/value.c", "list", "the name of a value's type"},
    {"base/value.c", "frame", "the name of a value's type"},
    {"runtime/eval.c", "matrix", "the name of a value's type"},
    {"runtime/eval.c", "list", "the name of a value's type"},
    {"runtime/eval.c", "frame", "the name of a value's type"},
    {"runtime/index.c", "matrix", "what is indexed, in messages"},
    {"runtime/index.c", "frame", "what is indexed, in messages"},
    {"runtime/resolve.c", "log", "parfor's option log="},
    {"runtime/upstream_dml_builtins.h", "*", "the names of upstream's DML-bodied builtins"},
};

enum { MAX_NAMES = 1024 };
static const char *names[MAX_NAMES];
static int nnames;

static void add_name(const char *name, void *ctx)
{
    (void)ctx;
    if (nnames < MAX_NAMES)
        names[nnames++] = name;
}

static bool is_builtin(const char *s)
{
    for (int i = 0; i < nnames; i++)
        if (strcmp(names[i], s) == 0)
            return true;
    return false;
}

static bool is_allowed(const char *file, const char *lit)
{
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(allowed[i].file, file) == 0 &&
            (strcmp(allowed[i].literal, "*") == 0 || strcmp(allowed[i].literal, lit) == 0))
            return true;
    return false;
}

/* Reports every string literal of the file that is a builtin's name and
 * not allowed there. Comments and character constants are skipped. */
static void scan_file(const char *path)
{
    char *text = loader_read_file(path, &(size_t){0}, NULL);
    if (!check_report_(text != NULL, __FILE__, __LINE__, "cannot read %s", path))
        return;
    int line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++;
        else if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
                line += *p == '\n';
            if (!*p)
                break;
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (*p == '\'') {
            for (p++; *p && *p != '\'' && *p != '\n'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p)
                break;
        } else if (*p == '"') {
            const char *start = ++p;
            for (; *p && *p != '"' && *p != '\n'; p++)
                if (*p == '\\' && p[1])
                    p++;
            char lit[128];
            size_t len = (size_t)(p - start);
            if (len < sizeof lit) {
                memcpy(lit, start, len);
                lit[len] = '\0';
                check_report_(!is_builtin(lit) || is_allowed(path, lit), __FILE__, __LINE__,
                              "%s:%d: \"%s\" is a builtin's name: put what the code needs to know of it in "
                              "the builtin's row (runtime/builtin_api.h)", path, line, lit);
            }
            if (!*p)
                break;
        }
    }
    free(text);
}

static void scan_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!check_report_(d != NULL, __FILE__, __LINE__, "cannot open folder %s", dir))
        return;
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 3 || (strcmp(e->d_name + len - 2, ".c") != 0 && strcmp(e->d_name + len - 2, ".h") != 0))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        scan_file(path);
        files++;
    }
    closedir(d);
    CHECK(files > 5);   /* the folder was read at all */
}

int main(void)
{
    builtin_registry_install();
    builtin_each(add_name, NULL);
    CHECK(nnames > 100);
    CHECK(is_builtin("rowSums"));
    scan_folder("base");
    scan_folder("runtime");
    return CHECK_DONE();
}
