/* SPDX-License-Identifier: Apache-2.0
 * builtins/families.h, the one list of builtin families, tells the truth:
 * each line
 *     X(f)   / * file.c: what it holds * /
 * names the file under builtins/ that defines bi_f_table, and every table
 * defined under builtins/ has such a line (a table left out would never be
 * looked up).
 * Run from the repository root (tests/run.sh does): it reads the sources. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "runtime/loader.h"

enum { MAX_TABLES = 64, NAME_LEN = 64, PATH_LEN = 256 };

typedef struct Table {
    char name[NAME_LEN];
    char file[PATH_LEN];        /* families.h comment: "builtins/<file>" */
} Table;

/* Copies the identifier at s (letters, digits, '_') into out. */
static void ident(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap && (s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
                           (s[n] >= '0' && s[n] <= '9')))
        n++;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* True when builtins/<file> defines 'table' ("const BuiltinDef name[] = {"). */
static bool defines(const char *path, const char *table)
{
    char *text = loader_read_file(path, &(size_t){0}, NULL);
    if (!text)
        return false;
    char want[NAME_LEN + 32];
    snprintf(want, sizeof want, "const BuiltinDef %s[] = {", table);
    bool ok = strstr(text, want) != NULL;
    free(text);
    return ok;
}

/* Checks every table defined in the .c files of folder 'dir' against the list. */
static void check_folder(const char *dir, const Table *t, int n)
{
    DIR *d = opendir(dir);
    if (!check_report_(d != NULL, __FILE__, __LINE__, "cannot open folder %s", dir))
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0)
            continue;
        char path[PATH_LEN * 2];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = loader_read_file(path, &(size_t){0}, NULL);
        if (!check_report_(text != NULL, __FILE__, __LINE__, "cannot read %s", path))
            continue;
        for (const char *p = strstr(text, "\nconst BuiltinDef bi_"); p; p = strstr(p + 1, "\nconst BuiltinDef bi_")) {
            char name[NAME_LEN];
            ident(p + strlen("\nconst BuiltinDef "), name, sizeof name);
            int k = 0;
            while (k < n && strcmp(t[k].name, name) != 0)
                k++;
            char file[PATH_LEN * 2];
            snprintf(file, sizeof file, "builtins/%s", k < n ? t[k].file : "");
            check_report_(k < n && strcmp(file, path) == 0, __FILE__, __LINE__,
                          "%s defines %s, which builtins/families.h %s", path, name,
                          k < n ? "says is in another file" : "does not list");
        }
        free(text);
    }
    closedir(d);
}

int main(void)
{
    char *fam = loader_read_file("builtins/families.h", &(size_t){0}, NULL);
    if (!CHECK(fam != NULL))
        return CHECK_DONE();
    static Table t[MAX_TABLES];
    int n = 0;
    const char *row = "\n    X(";
    for (const char *p = strstr(fam, row); p && n < MAX_TABLES; p = strstr(p + 1, row)) {
        Table *x = &t[n];
        char fam_name[NAME_LEN];
        ident(p + strlen(row), fam_name, sizeof fam_name);
        snprintf(x->name, sizeof x->name, "bi_%.*s_table", NAME_LEN - 10, fam_name);
        const char *eol = strchr(p + 1, '\n');
        const char *c = strstr(p, "/* ");
        const char *colon = c ? strchr(c, ':') : NULL;
        if (!check_report_(c && colon && (!eol || colon < eol), __FILE__, __LINE__,
                           "families.h: X(%s) has no '/* file.c: ...' comment", fam_name))
            continue;
        snprintf(x->file, sizeof x->file, "%.*s", (int)(colon - c - 3), c + 3);
        char path[PATH_LEN + 16];
        snprintf(path, sizeof path, "builtins/%s", x->file);
        check_report_(defines(path, x->name), __FILE__, __LINE__, "families.h: %s is not defined in %s", x->name,
                      path);
        n++;
    }
    CHECK(n >= 20);     /* the list was found at all */
    check_folder("builtins", t, n);
    check_folder("builtins/io", t, n);
    check_folder("builtins/paramserv", t, n);
    free(fam);
    return CHECK_DONE();
}
