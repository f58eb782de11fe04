/* SPDX-License-Identifier: Apache-2.0
 * Program: the loaded code. Modules (one per source file, keyed by the
 * namespace key of doc/language.md, "source"), their functions and namespace aliases, the
 * command-line $parameters, and the main script's statements. Built on one
 * thread (loading + resolve); read-only while more than one thread runs. */
#ifndef DML_RUNTIME_PROGRAM_H
#define DML_RUNTIME_PROGRAM_H

#include <pthread.h>
#include <stdbool.h>

#include "../parser/ast.h"
#include "../base/arena.h"
#include "interp.h"

/* Variable names of one frame layout (a function, or the top level). */
typedef struct SlotTable {
    const char **names;
    int n, cap;
} SlotTable;

typedef struct Module Module;

struct FuncDef {
    const char *name;
    Module *mod;
    const FuncDecl *decl;   /* params, outs, body */
    SlotTable slots;        /* params first (0..nparams-1), then outputs, then locals */
    int *out_slots;         /* slot of each output */
    uint64_t skip_outs;     /* outputs a call may leave unbound when dead (runtime/liveness.h) */
};

/* A call to a DML builtin written the SystemDS way: its file defines m_f
 * (first argument a matrix or list) and/or s_f (anything else), and the
 * variant is chosen at run time by the first argument (COMPAT.md 1).
 * fn[0]/argmap[0] = m_f, fn[1]/argmap[1] = s_f, fn[2]/argmap[2] = f_f; a
 * missing one is NULL. */
typedef struct CallVariants {
    const char *name;       /* f */
    FuncDef *fn[3];
    int *argmap[3];
    int nparams[3];
    const char *bind_err[3];    /* the call's arguments do not fit fn[i]: why */
    FuncDef *fnbound;       /* a variant they fit (the resolver's n->call.fn) */
} CallVariants;

typedef struct NsAlias { const char *alias; Module *mod; } NsAlias;

struct Module {
    const char *key;        /* namespace key, e.g. "./nn/layers/affine.dml" */
    const char *path;       /* file actually read */
    const char *dir;        /* folder of 'path' (for source() resolution) */
    FuncDef **funcs; int nfuncs, capfuncs;
    NsAlias *aliases; int naliases, capaliases;
    const char *wd;         /* setwd() value for later source statements, or NULL */
};

typedef struct CmdArg { const char *name; const char *text; } CmdArg;

/* A source file rank 0 loaded, shipped to an Open MPI worker rank (which
 * has no shared filesystem): source() and DML-bodied builtins look their
 * namespace key up here instead of searching the disk. */
typedef struct ShippedFile { const char *key, *path, *text; size_t len; } ShippedFile;

struct Program {
    Arena *arena;
    Module **mods; int nmods, capmods;
    Module *main;           /* the main script (key ".defaultNS") */
    SlotTable top;          /* slots of the top-level frame (grows in the REPL) */
    CmdArg *args; int nargs;    /* -nvargs name=value, or -args as "1", "2", ... */
    struct SourceText *texts;   /* every file's text, for carets in messages */
    const char *exe_dir;    /* folder of the dml executable (stdlib search) */
    Value *consts; int nconsts, capconsts;  /* immortal constants made by resolve */
    /* Guards loading DML builtins while scripts run (eval of a builtin not
     * yet loaded): it alone grows 'mods', 'texts', 'consts' and the arena
     * then, and eval's lookups in 'mods' take it. */
    pthread_mutex_t load_lock;
    const ShippedFile *shipped; int nshipped;   /* worker rank: the only files there are (borrowed) */
    struct Hitters *hh;     /* --stats heavy-hitter table, set before any Interp; owned by main */
    DiagSink sink;          /* warnings while loading (a skipped stray '.'); none: dropped */
};

Program *program_new(void);
void program_free(Program *p);
void program_set_args(Program *p, CmdArg *args, int nargs);

/* Look up a function: 'nskey' may be a namespace key ("./a.dml"), ".defaultNS",
 * or NULL for the main module. NULL if absent. */
FuncDef *program_find_func(const Program *p, const char *nskey, const char *name);
Module *program_find_module(const Program *p, const char *nskey);

/* ---- one module's lookups (module.c) ---- */
FuncDef *module_find_func(const Module *m, const char *name);
Module *module_find_alias(const Module *m, const char *alias);
/* True for the module of a DML-bodied builtin (our stdlib's or a SystemDS
 * tree's scripts/builtin/f.dml). */
bool module_is_builtin(const Module *m);

/* ---- slot tables (slots.c) ---- */
int slots_find(const SlotTable *t, const char *name);
int slots_add(SlotTable *t, const char *name);   /* returns the slot (existing or new) */
/* Frees the name array (the names are the arena's) and empties t. */
void slots_free(SlotTable *t);

/* ---- filled by the loader and the resolver (and paramserv) ---- */
Module *program_add_module(Program *p, const char *key, const char *path);
/* Namespace key of a path: "./" + path with "." and empty parts removed.
 * Returns a malloc'd string. */
char *program_normalize_key(const char *path);
/* Adds the parse-time constant v (taking it) to the table freed with the
 * Program, making it immortal. False (v released) when out of memory. */
bool program_add_const_take(Program *p, Value v);
/* Keep a copy of a file's text; returns the arena copy of 'file' for Locs. */
const char *program_add_text(Program *p, const char *file, const char *text, size_t len);
/* Error record e as users see it (diag_render_err): "file:line:col: msg",
 * the line of the loaded file it names and a caret, a final '\n' when 'nl';
 * malloc'd. NULL only when even the reserve "out of memory" is gone. */
char *program_render_err(const Program *p, const DiagErr *e, bool nl);
/* The whole text of a loaded file (the newest load of that name), or NULL. */
const char *program_file_text(const Program *p, const char *file, size_t *len);
/* The line 'line' (1-based) of a loaded file, for carets; NULL if unknown. */
const char *program_source_line(const Program *p, const char *file, int line, size_t *len);

/* ---- loading: parse a text, then resolve it (program_load.c) ---- */
/* Each returns false on error with *err set (base/diag.h): a syntax error,
 * or a load or resolve error, at its position in a file whose text the
 * Program keeps (program_render_err shows it with the caret), or without
 * position ("out of memory"). */

/* Load and resolve the main script (and everything it sources). Sets
 * *stmts and *n to its top-level statements. */
/* Warns through p->sink about each stray '.' the parser skipped (n at v). */
void program_warn_skipped(const Program *p, const Loc *v, int n);

bool program_load_main(Program *p, const char *path, const char *text, size_t len, Node ***stmts, int *n,
                       DiagErr *err);
/* REPL: parse and resolve one more chunk of input against the main module.
 * Sets *incomplete when the text ends inside an open construct. */
bool program_load_chunk(Program *p, const char *name, const char *text, size_t len, Node ***stmts, int *n,
                        bool *incomplete, DiagErr *err);
/* REPL: parse and resolve a single bare expression (PARSE_EXPR); never
 * reports "incomplete". */
bool program_load_expr(Program *p, const char *name, const char *text, size_t len, Node **expr, DiagErr *err);

#endif
