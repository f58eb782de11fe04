/* SPDX-License-Identifier: Apache-2.0
 * Program: its tables. Modules and their functions and aliases, the
 * parse-time constants, and the text of every loaded file (for carets under
 * errors). Lookups within one module: module.c; slot tables: slots.c. Filled on the loading thread only (by loader.c and
 * resolve.c); the Program is read-only while scripts run. */
#include "program.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/diag.h"
#include "../base/failalloc.h"

typedef struct SourceText {
    struct SourceText *next;
    const char *file;       /* arena string, also used in Locs */
    char *text;             /* malloc'd copy */
    size_t len;
} SourceText;

Program *program_new(void)
{
    failalloc_reserve();
    Program *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->arena = arena_new();
    pthread_mutex_init(&p->load_lock, NULL);
    p->main = p->arena ? program_add_module(p, ".defaultNS", "<main>") : NULL;
    if (!p->main) {
        program_free(p);
        return NULL;
    }
    return p;
}

void program_free(Program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nmods; i++) {
        Module *m = p->mods[i];
        for (int j = 0; j < m->nfuncs; j++) {
            slots_free(&m->funcs[j]->slots);
            free(m->funcs[j]->out_slots);
            free(m->funcs[j]);
        }
        free(m->funcs);
        free(m->aliases);
        free(m);
    }
    free(p->mods);
    slots_free(&p->top);
    for (SourceText *t = p->texts; t;) {
        SourceText *next = t->next;
        free(t->text);
        free(t);
        t = next;
    }
    for (int i = 0; i < p->nconsts; i++) {
        Value v = p->consts[i];
        if (val_is_obj(v)) {
            atomic_store(&v.o->rc, 1);
            val_release(v);
        }
    }
    free(p->consts);
    arena_free(p->arena);
    pthread_mutex_destroy(&p->load_lock);
    free(p);
}

void program_set_args(Program *p, CmdArg *args, int nargs)
{
    p->args = arena_alloc(p->arena, sizeof *args * (size_t)(nargs > 0 ? nargs : 1));
    if (arena_failed(p->arena)) {   /* reported when the program is loaded */
        p->args = NULL;
        p->nargs = 0;
        return;
    }
    for (int i = 0; i < nargs; i++) {
        p->args[i].name = arena_strdup(p->arena, args[i].name);
        p->args[i].text = arena_strdup(p->arena, args[i].text);
    }
    p->nargs = nargs;
}

/* ---- constants ---- */

bool program_add_const_take(Program *p, Value v)
{
    if (p->nconsts == p->capconsts) {
        int cap = p->capconsts ? p->capconsts * 2 : 32;
        Value *c = realloc(p->consts, sizeof *p->consts * (size_t)cap);
        if (!c) {
            val_release(v);
            return false;
        }
        p->consts = c;
        p->capconsts = cap;
    }
    if (val_is_obj(v))
        obj_make_immortal(v.o);
    p->consts[p->nconsts++] = v;
    return true;
}

/* ---- modules ---- */

Module *program_add_module(Program *p, const char *key, const char *path)
{
    if (p->nmods == p->capmods) {
        int cap = p->capmods ? p->capmods * 2 : 8;
        Module **mods = realloc(p->mods, sizeof *p->mods * (size_t)cap);
        if (!mods)
            return NULL;
        p->mods = mods;
        p->capmods = cap;
    }
    Module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    const char *slash = strrchr(path, '/');
    m->key = arena_strdup(p->arena, key);
    m->path = arena_strdup(p->arena, path);
    m->dir = slash ? arena_strndup(p->arena, path, (size_t)(slash - path)) : ".";
    if (!m->key || !m->path || !m->dir) {
        free(m);
        return NULL;
    }
    p->mods[p->nmods++] = m;
    return m;
}

/* "a/./b//c.dml" and "./a/b/c.dml" both become "./a/b/c.dml"; absolute
 * paths keep their leading '/'. The result is the namespace key. */
char *program_normalize_key(const char *path)
{
    size_t n = strlen(path);
    char *out = malloc(n + 3);
    if (!out)
        return NULL;
    size_t o = 0;
    bool abs = path[0] == '/';
    if (abs)
        out[o++] = '/';
    else {
        out[o++] = '.';
        out[o++] = '/';
    }
    const char *s = path;
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t len = (size_t)(e - s);
        if (len == 0)
            break;
        if (!(len == 1 && s[0] == '.')) {
            if (o > 0 && out[o - 1] != '/')
                out[o++] = '/';
            memcpy(out + o, s, len);
            o += len;
        }
        s = e;
    }
    out[o] = '\0';
    return out;
}

Module *program_find_module(const Program *p, const char *nskey)
{
    if (!nskey || strcmp(nskey, ".defaultNS") == 0)
        return p->main;
    for (int i = 0; i < p->nmods; i++)
        if (strcmp(p->mods[i]->key, nskey) == 0)
            return p->mods[i];
    /* Accept "a/b.dml" for "./a/b.dml" and other spellings of the same path. */
    char *k = program_normalize_key(nskey);
    Module *found = NULL;
    for (int i = 0; i < p->nmods && !found && k; i++) {
        char *mk = program_normalize_key(p->mods[i]->key);
        if (mk && strcmp(mk, k) == 0)
            found = p->mods[i];
        free(mk);
    }
    free(k);
    return found;
}

FuncDef *program_find_func(const Program *p, const char *nskey, const char *name)
{
    Module *m = program_find_module(p, nskey);
    return m ? module_find_func(m, name) : NULL;
}

/* ---- source text ---- */

const char *program_add_text(Program *p, const char *file, const char *text, size_t len)
{
    SourceText *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->file = arena_strdup(p->arena, file);
    t->text = t->file && len < (size_t)-1 ? malloc(len + 1) : NULL;
    if (!t->text) {
        free(t);
        return NULL;
    }
    memcpy(t->text, text, len);
    t->text[len] = '\0';
    t->len = len;
    t->next = p->texts;
    p->texts = t;
    return t->file;
}

const char *program_file_text(const Program *p, const char *file, size_t *len)
{
    for (const SourceText *t = p->texts; t; t = t->next)
        if (t->file == file || strcmp(t->file, file) == 0) {
            *len = t->len;
            return t->text;
        }
    return NULL;
}

const char *program_source_line(const Program *p, const char *file, int line, size_t *len)
{
    for (const SourceText *t = p->texts; t; t = t->next)
        if (t->file == file || strcmp(t->file, file) == 0)
            return diag_line(t->text, t->len, line, len);
    return NULL;
}

char *program_render_err(const Program *p, const DiagErr *e, bool nl)
{
    size_t len = 0;
    const char *text = e->has_loc && e->loc.file ? program_file_text(p, e->loc.file, &len) : NULL;
    char *s = diag_render_err(e, text, len, nl);
    return s ? s : failalloc_msg_dup(e->msg);    /* the reserve "out of memory" at worst */
}
