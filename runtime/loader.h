/* SPDX-License-Identifier: Apache-2.0
 * The loader: where DML files are found (source() paths, the stdlib,
 * DML-bodied builtins, read()'s bundled data), reading them, and parsing a
 * file into a new module of the Program. It neither declares nor binds: the
 * resolver asks it for the module of each source() and unknown function and
 * declares the statements it hands back (resolve.c). Loading thread only. */
#ifndef DML_RUNTIME_LOADER_H
#define DML_RUNTIME_LOADER_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/diag.h"
#include "program.h"

/* Whole file as a NUL-terminated malloc'd buffer; NULL on failure, with
 * the reason (no position) in *err when 'err' is not NULL. */
char *loader_read_file(const char *path, size_t *len, DiagErr *err);
/* Find the file for source("path"); writes the path to read into out. */
bool loader_find_source(const Program *p, const char *path, const char *from_dir, char *out, size_t cap);
/* read("data/..."): when the relative path 'path' starts with "data/" and
 * is not there in the working directory, the embedded data installed with
 * dml (share/dml/data, or the source tree's data/ next to a build) is used,
 * so the example scripts run from any folder. True (and the full path in
 * 'out') when such a file exists; false leaves 'path' to be read as given. */
bool loader_find_data(const Program *p, const char *path, char *out, size_t cap);

/* A module found by the loader: 'stmts' are the statements to declare when
 * the file was parsed just now; none (n == 0) when it was loaded before. */
typedef struct Loaded { Module *mod; Node **stmts; int n; } Loaded;
/* The module of source(path) written in module 'from': the one already
 * loaded under its namespace key, or the file found (loader_find_source,
 * or the files rank 0 shipped) and parsed. False on failure, with *e set: a
 * syntax error at its position in the file (whose text the Program keeps),
 * or, with no position, what went wrong, to be reported at the source(). */
bool loader_source(Program *p, const Module *from, const char *path, Loaded *out, DiagErr *e);
/* loader_source for the REPL, where files change between inputs: a file
 * loaded before whose text has changed is parsed again, its statements
 * handed back to be declared into the same module (so the functions of the
 * new text replace the old ones); one unchanged whose last text failed to
 * parse fails again with that error. */
bool loader_source_repl(Program *p, const Module *from, const char *path, Loaded *out, DiagErr *e);
/* The module of DML-bodied builtin 'name' (key "<builtin>/name.dml"; the
 * search order is in loader.c): the one loaded before, or its file parsed;
 * out->mod NULL when no file defines it. False (*e set as for
 * loader_source, a failure with no position to be reported at the call) on
 * a load error. */
bool loader_builtin(Program *p, const char *name, Loaded *out, DiagErr *e);

#endif
