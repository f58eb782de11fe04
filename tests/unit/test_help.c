/* SPDX-License-Identifier: Apache-2.0
 * The reference embedded from doc/ (builtins/help.c) covers everything a
 * user can call: every registered builtin, every function of
 * stdlib/builtin/ and every file of stdlib/nn/ (each of its functions on a
 * usage line) has a complete entry. A builtin added without its doc entry
 * fails here. Also: lookups by alias and "ns::f", the "no help" message
 * with a suggestion, and "did you mean" for function names.
 * Run from the repository root (tests/run.sh does): it reads stdlib/. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/help.h"
#include "builtins/registry.h"
#include "check.h"

static void check_builtin(const char *name, void *ctx)
{
    (void)ctx;
    const char *why = help_check(name, NULL);
    check_report_(why == NULL, __FILE__, __LINE__, "builtin %s: doc entry: %s (add it to doc/builtins.md)", name,
                  why ? why : "");
}

/* The function names "f = function(" at the start of a line in a DML file. */
static int dml_functions(const char *path, char names[][64], int cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        char name[64];
        int used = 0;
        if (sscanf(line, "%63[A-Za-z0-9_] = function%n", name, &used) == 1 && used > 0)
            snprintf(names[n++], 64, "%s", name);
    }
    fclose(f);
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .dml files of folder 'dir', sorted; returns how many (malloc'd). */
static int list_dml(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    char **v = NULL;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".dml") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            v = realloc(v, sizeof *v * (size_t)cap);
        }
        v[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

/* stdlib/builtin/X.dml: an entry X whose usage shows "X(". */
static void check_stdlib_builtins(void)
{
    char **files;
    int n = list_dml("stdlib/builtin", &files);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        char name[128], needle[140];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(files[i]) - 4), files[i]);
        snprintf(needle, sizeof needle, "%s(", name);
        const char *why = help_check(name, needle);
        check_report_(why == NULL, __FILE__, __LINE__, "stdlib/builtin/%s: doc entry: %s (add it to doc/builtins.md)",
                      files[i], why ? why : "");
        free(files[i]);
    }
    free(files);
}

/* stdlib/nn/<sub>/X.dml: an entry nn/<sub>/X.dml with a usage line per function. */
static void check_nn(const char *sub)
{
    char dir[64];
    snprintf(dir, sizeof dir, "stdlib/nn%s%s", *sub ? "/" : "", sub);
    char **files;
    int n = list_dml(dir, &files);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        char path[256], topic[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        snprintf(topic, sizeof topic, "nn/%s%s%s", sub, *sub ? "/" : "", files[i]);
        static char fns[64][64];
        int nf = dml_functions(path, fns, 64);
        CHECK(nf > 0);
        for (int k = 0; k < nf; k++) {
            char needle[96];
            snprintf(needle, sizeof needle, "%.60s(", fns[k]);
            const char *why = help_check(topic, needle);
            check_report_(why == NULL, __FILE__, __LINE__, "%s: function %s: doc entry: %s (see doc/nn.md)", topic,
                          fns[k], why ? why : "");
        }
        free(files[i]);
    }
    free(files);
}

static bool shows(const char *topic, const char *text)
{
    StrBuf b;
    sb_init(&b);
    help_topic(topic, &b);
    bool ok = b.p && strstr(b.p, text) != NULL;
    if (!ok)
        fprintf(stderr, "help(\"%s\") printed:\n%s\n", topic, b.p ? b.p : "");
    sb_free(&b);
    return ok;
}

static void test_lookup(void)
{
    CHECK(shows("rowSums", "rowSums(X)"));
    CHECK(shows("rowSums", "Example:"));
    CHECK(shows("isNA", "is.na"));                          /* an alias finds the entry */
    CHECK(shows("affine", "forward(X, W, b)"));
    CHECK(shows("nn/layers/affine.dml", "forward(X, W, b)"));
    CHECK(shows("affine::backward", "backward("));
    CHECK(shows("rowsums", "no help for 'rowsums' (did you mean rowSums?)"));
    CHECK(shows("zzzzzz", "no help for 'zzzzzz'; help() lists the topics"));
    StrBuf b;
    sb_init(&b);
    help_index(&b);
    CHECK(b.p && strstr(b.p, "rowSums") && strstr(b.p, "affine") && strstr(b.p, "paramserv"));
    sb_free(&b);
}

static void test_suggest_function(void)
{
    char buf[160];
    CHECK_STR(help_suggest_function(NULL, "rowsums", buf, sizeof buf), " (did you mean rowSums?)");
    CHECK_STR(help_suggest_function(NULL, "colSum", buf, sizeof buf), " (did you mean colSums?)");
    CHECK_STR(help_suggest_function(NULL, "getAcuracy", buf, sizeof buf), " (did you mean getAccuracy?)");
    CHECK_STR(help_suggest_function(NULL, "qqqqqqqq", buf, sizeof buf), "");
}

int main(void)
{
    builtin_each(check_builtin, NULL);
    check_stdlib_builtins();
    check_nn("");
    check_nn("layers");
    check_nn("optim");
    test_lookup();
    test_suggest_function();
    return CHECK_DONE();
}
