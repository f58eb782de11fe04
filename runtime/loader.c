/* SPDX-License-Identifier: Apache-2.0
 * The loader (see loader.h): where DML files are found, reading them, and
 * parsing one into a new module of the Program. */
#include "loader.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/arena.h"
#include "../parser/parse.h"

/* ---- reading files ---- */

char *loader_read_file(const char *path, size_t *len, DiagErr *err)
{
    DiagErr scratch;
    if (!err)
        err = &scratch;
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_fail(err, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat fst;
    if (fstat(fileno(f), &fst) == 0 && S_ISDIR(fst.st_mode)) {
        fclose(f);
        diag_fail(err, "cannot read '%s': is a directory", path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        bool oom = !buf;
        free(buf);
        diag_fail(err, "cannot read '%s'%s", path, oom ? ": out of memory" : "");
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool try_path(char *out, size_t cap, const char *dir, const char *rel)
{
    int n = dir ? snprintf(out, cap, "%s/%s", dir, rel) : snprintf(out, cap, "%s", rel);
    return n > 0 && (size_t)n < cap && is_file(out);
}

/* Where a source("path") is read from, in order: the path as given (relative
 * to the working directory, as upstream), "scripts/" + path (upstream's
 * fallback), the sourcing file's folder, each folder of DML_PATH, then the
 * stdlib installed with dml (a leading "scripts/" is dropped there, so
 * upstream's source("scripts/nn/...") finds our stdlib too). */
/* Find 'path' in the stdlib folders only (DML_STDLIB, next to the executable,
 * under the install prefix). */
static bool loader_find_stdlib(const Program *p, const char *path, char *out, size_t cap)
{
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    if (strncmp(rel, "scripts/", 8) == 0)
        rel += 8;
    const char *lib = getenv("DML_STDLIB");
    if (lib && *lib && try_path(out, cap, lib, rel))
        return true;
    if (p->exe_dir) {
        static const char *const rels[] = {"../share/dml/stdlib", "stdlib", "../stdlib", "../../stdlib"};
        char dir[PATH_MAX];
        for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
            snprintf(dir, sizeof dir, "%s/%s", p->exe_dir, rels[i]);
            /* The folder without its "..": messages and stack traces name
             * .../stdlib/builtin/glm.dml, not .../build/release/../../stdlib/... */
            char canon[PATH_MAX];
            if (realpath(dir, canon) && try_path(out, cap, canon, rel))
                return true;
        }
    }
#ifdef DML_STDLIB_DIR
    if (try_path(out, cap, DML_STDLIB_DIR, rel))
        return true;
#endif
    return false;
}

bool loader_find_source(const Program *p, const char *path, const char *from_dir, char *out, size_t cap)
{
    if (path[0] == '/')
        return try_path(out, cap, NULL, path);
    if (try_path(out, cap, NULL, path))
        return true;
    if (try_path(out, cap, "scripts", path))
        return true;
    if (from_dir && strcmp(from_dir, ".") != 0 && try_path(out, cap, from_dir, path))
        return true;
    const char *env = getenv("DML_PATH");
    if (env && *env) {
        char *copy = strdup(env), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            if (*d && try_path(out, cap, d, path)) {
                free(copy);
                return true;
            }
        }
        free(copy);
    }
    return loader_find_stdlib(p, path, out, cap);
}


bool loader_find_data(const Program *p, const char *path, char *out, size_t cap)
{
    if (strncmp(path, "data/", 5) != 0 || is_file(path) || !p->exe_dir)
        return false;
    /* bin/dml -> share/dml/data; build/<mode>/dml -> the tree's data/. */
    static const char *const rels[] = {"../share/dml", "../.."};
    char dir[PATH_MAX];
    for (size_t i = 0; i < sizeof rels / sizeof rels[0]; i++) {
        snprintf(dir, sizeof dir, "%s/%s", p->exe_dir, rels[i]);
        if (try_path(out, cap, dir, path))
            return true;
    }
    return false;
}

/* ---- DML-bodied builtins (COMPAT.md 1) ----
 * A call to an unknown f loads f's file once (module key "<builtin>/f.dml")
 * from the first of: the working directory's scripts/builtin/f.dml (then
 * scripts/scripts/builtin/f.dml, upstream's second try), the SystemDS tree
 * named by $SYSTEMDS_ROOT, and our stdlib's builtin/f.dml. A SystemDS tree
 * thus wins over our stdlib; a native builtin wins over both. The file
 * defines f (our stdlib's convention) or m_f/s_f/f_f (upstream's). */
static bool find_builtin_file(const Program *p, const char *name, char *out, size_t cap)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "scripts/builtin/%s.dml", name);
    static const char *const local[] = {NULL, "scripts"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        int k = local[i] ? snprintf(out, cap, "%s/%s", local[i], rel) : snprintf(out, cap, "%s", rel);
        FILE *f = k > 0 && (size_t)k < cap ? fopen(out, "r") : NULL;
        if (f) {
            fclose(f);
            return true;
        }
    }
    const char *root = getenv("SYSTEMDS_ROOT");
    if (root && *root) {
        int k = snprintf(out, cap, "%s/%s", root, rel);
        FILE *f = k > 0 && (size_t)k < cap ? fopen(out, "r") : NULL;
        if (f) {
            fclose(f);
            return true;
        }
    }
    return loader_find_stdlib(p, rel + strlen("scripts/"), out, cap);
}

/* ---- parsing files into modules ---- */

static Module *module_by_key(const Program *p, const char *key)
{
    for (int i = 0; i < p->nmods; i++)
        if (strcmp(p->mods[i]->key, key) == 0)
            return p->mods[i];
    return NULL;
}

/* Parse text[0..len) read from 'found' as a new module keyed 'key'. */
static bool load_text(Program *p, const char *key, const char *found, const char *text, size_t len,
                      Loaded *out, DiagErr *e)
{
    const char *fname = program_add_text(p, found, text, len);
    if (!fname)
        return diag_fail(e, "out of memory");
    ParseOut po = {0};
    if (!parse_source(p->arena, fname, text, len, PARSE_PROGRAM, &po)) {
        *e = po.err;
        return false;
    }
    program_warn_skipped(p, po.skipped, po.nskipped);
    out->mod = program_add_module(p, key, fname);
    if (!out->mod)
        return diag_fail(e, "out of memory");
    out->stmts = po.stmts;
    out->n = po.n;
    return true;
}

/* Read and parse the file 'found' as a new module keyed 'key'. */
static bool load_file(Program *p, const char *key, const char *found, Loaded *out, DiagErr *e)
{
    size_t len;
    char *text = loader_read_file(found, &len, e);
    if (!text)
        return false;
    bool ok = load_text(p, key, found, text, len, out, e);
    free(text);
    return ok;
}

/* Worker rank: the module keyed 'key' from the files rank 0 shipped. */
static bool load_shipped(Program *p, const char *key, Loaded *out, DiagErr *e)
{
    for (int i = 0; i < p->nshipped; i++) {
        const ShippedFile *f = &p->shipped[i];
        if (strcmp(f->key, key) == 0)
            return load_text(p, key, f->path, f->text, f->len, out, e);
    }
    return diag_fail(e, "source file '%s' was not shipped by rank 0", key);
}

bool loader_source(Program *p, const Module *from, const char *path, Loaded *out, DiagErr *e)
{
    *out = (Loaded){0};
    const char *wd = from->wd ? from->wd : ".";
    char joined[PATH_MAX];
    size_t wdlen = strlen(wd);
    if (path[0] == '/' || (strncmp(path, wd, wdlen) == 0 && path[wdlen] == '/'))
        snprintf(joined, sizeof joined, "%s", path);
    else
        snprintf(joined, sizeof joined, "%s/%s", wd, path);
    char *key = program_normalize_key(joined);
    if (!key)
        return diag_fail(e, "out of memory");
    bool ok = true;
    out->mod = module_by_key(p, key);
    if (!out->mod) {
        char found[PATH_MAX];
        if (p->shipped) {
            ok = load_shipped(p, key, out, e);
            goto have;
        }
        /* Search with the working-dir-joined path minus a leading "./". */
        const char *rel = joined;
        while (rel[0] == '.' && rel[1] == '/')
            rel += 2;
        struct stat st;
        bool found_ok = loader_find_source(p, rel, from->dir, found, sizeof found);
        if (!found_ok && stat(rel, &st) == 0 && S_ISDIR(st.st_mode)) {
            ok = diag_fail(e, "cannot source '%s': is a directory", path);
        } else if (!found_ok) {
            ok = diag_fail(e, "cannot find source file '%s' (searched the working directory, scripts/, "
                           "the sourcing file's folder, DML_PATH and the dml stdlib)", path);
        } else
            ok = load_file(p, key, found, out, e);
    }
have:
    free(key);
    return ok;
}

/* Contract in loader.h. */
bool loader_source_repl(Program *p, const Module *from, const char *path, Loaded *out, DiagErr *e)
{
    if (!loader_source(p, from, path, out, e))
        return false;
    if (out->n > 0 || !out->mod || p->shipped)
        return true;            /* parsed just now, or nothing to read again */
    Module *m = out->mod;
    size_t len, olen = 0;
    char *text = loader_read_file(m->path, &len, NULL);
    if (!text)
        return true;            /* gone or unreadable: keep what was loaded */
    const char *old = program_file_text(p, m->path, &olen);
    bool same = old && olen == len && memcmp(old, text, len) == 0;
    if (same) {
        /* Unchanged since it was last read. That read may have failed to
         * parse (the text is kept for the error's caret): then say so
         * again, rather than go on with the functions of an older text. */
        Arena *a = arena_new();
        if (!a) {
            free(text);
            return diag_fail(e, "out of memory");
        }
        ParseOut po = {0};
        bool ok = parse_source(a, m->path, text, len, PARSE_PROGRAM, &po);
        arena_free(a);
        free(text);
        if (!ok) {
            *e = po.err;
            e->loc.file = m->path;  /* the arena's copy is gone */
        }
        return ok;
    }
    /* Changed: parsed again into the same module, whose functions the
     * resolver then redefines in place (existing calls reach them). */
    const char *fname = program_add_text(p, m->path, text, len);
    free(text);
    if (!fname)
        return diag_fail(e, "out of memory");
    size_t n;
    const char *kept = program_file_text(p, fname, &n);
    ParseOut po = {0};
    if (!parse_source(p->arena, fname, kept, n, PARSE_PROGRAM, &po)) {
        *e = po.err;
        return false;
    }
    out->stmts = po.stmts;
    out->n = po.n;
    return true;
}

bool loader_builtin(Program *p, const char *name, Loaded *out, DiagErr *e)
{
    *out = (Loaded){0};
    char key[PATH_MAX], found[PATH_MAX];
    snprintf(key, sizeof key, "<builtin>/%s.dml", name);
    out->mod = module_by_key(p, key);
    if (out->mod)
        return true;
    if (p->shipped) {
        /* An Open MPI worker rank reads no files: the builtin's file is one
         * rank 0 shipped, under the same module key. */
        for (int i = 0; i < p->nshipped; i++)
            if (strcmp(p->shipped[i].key, key) == 0)
                return load_shipped(p, key, out, e);
        return true;
    }
    if (!find_builtin_file(p, name, found, sizeof found))
        return true;
    return load_file(p, key, found, out, e);
}
