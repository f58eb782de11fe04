/* SPDX-License-Identifier: Apache-2.0
 * Every DML_* environment variable the code reads is documented: each
 * string literal "DML_..." in the sources (any .c/.h/.y/.l outside tests/,
 * bench/ and build/) has a complete entry in doc/environment.md, whose usage
 * lines name it, so `help("DML_THREADS")` answers. And the other way round:
 * every topic of doc/environment.md is a variable the code still reads.
 * Run from the repository root (tests/run.sh does): it walks the sources. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtins/help.h"
#include "check.h"

enum { MAX_VARS = 128, NAME_MAX_LEN = 64, WALK_MAX_DEPTH = 16 };

typedef struct Vars {
    char name[MAX_VARS][NAME_MAX_LEN];
    char where[MAX_VARS][1024];     /* the first file that reads it */
    int n;
    bool overflow;
} Vars;

static int find_var(const Vars *v, const char *name)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->name[i], name) == 0)
            return i;
    return -1;
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* Adds each "DML_[A-Z0-9_]+" string literal of file 'path' to v. */
static void scan_file(const char *path, Vars *v)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        check_report_(false, __FILE__, __LINE__, "cannot read %s", path);
        return;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        for (const char *p = strstr(line, "\"DML_"); p; p = strstr(p + 1, "\"DML_")) {
            const char *s = p + 1, *e = s;
            while ((*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_')
                e++;
            if (*e != '"' || e - s >= NAME_MAX_LEN)
                continue;
            char name[NAME_MAX_LEN];
            snprintf(name, sizeof name, "%.*s", (int)(e - s), s);
            if (find_var(v, name) >= 0)
                continue;
            if (v->n == MAX_VARS) {
                v->overflow = true;
                continue;
            }
            snprintf(v->name[v->n], NAME_MAX_LEN, "%s", name);
            snprintf(v->where[v->n], sizeof v->where[0], "%s", path);
            v->n++;
        }
    }
    fclose(f);
}

/* Walks folder 'dir' ("." is the root: its tests/, bench/, build/ and
 * hidden folders are left out). */
static void walk(const char *dir, int depth, Vars *v)
{
    if (depth > WALK_MAX_DEPTH)
        return;
    DIR *d = opendir(dir);
    if (!d) {
        check_report_(false, __FILE__, __LINE__, "cannot open folder %s", dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (nm[0] == '.')
            continue;
        if (depth == 0 && (strcmp(nm, "tests") == 0 || strcmp(nm, "bench") == 0 || strcmp(nm, "build") == 0))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            walk(path, depth + 1, v);
        else if (S_ISREG(st.st_mode) && (has_suffix(nm, ".c") || has_suffix(nm, ".h") || has_suffix(nm, ".y") ||
                                         has_suffix(nm, ".l")))
            scan_file(path, v);
    }
    closedir(d);
}

static void documented_is_read(const char *name, void *ctx)
{
    const Vars *v = ctx;
    check_report_(find_var(v, name) >= 0, __FILE__, __LINE__,
                  "doc/environment.md documents %s, which no source file reads (remove its entry)", name);
}

int main(void)
{
    static Vars v;
    walk(".", 0, &v);
    CHECK(!v.overflow);
    /* Guards against walking the wrong folder: these are read for sure. */
    CHECK(find_var(&v, "DML_THREADS") >= 0);
    CHECK(find_var(&v, "DML_PATH") >= 0);
    for (int i = 0; i < v.n; i++) {
        const char *why = help_check(v.name[i], v.name[i]);
        check_report_(why == NULL, __FILE__, __LINE__, "%s (read in %s): doc entry: %s (add it to doc/environment.md)",
                      v.name[i], v.where[i], why ? why : "");
    }
    help_each_name("doc/environment.md", documented_is_read, &v);
    return CHECK_DONE();
}
