/* SPDX-License-Identifier: Apache-2.0
 * The reference embedded in the binary (the Markdown of doc/, built into dml_doc_text
 * by tools/embed_doc.sh): topic lookup for help() and the REPL's ?name, the
 * topic list, the coverage check, and "did you mean" for function names
 * (help_suggest_function, the resolver's BuiltinTable.suggest_function).
 * The index is built once (pthread_once) and read-only afterwards, so any
 * thread may call these. Entry format: doc/README.md. */
#ifndef DML_BUILTINS_HELP_H
#define DML_BUILTINS_HELP_H

#include <stdbool.h>
#include <stddef.h>

#include "../base/strbuf.h"

/* Appends the entry for 'topic' ("rowSums", "affine", "nn/layers/affine.dml",
 * "affine::forward") formatted for a terminal. Returns false when there is
 * none; b then holds a "no help for" line, with the closest topic if any. */
bool help_topic(const char *topic, StrBuf *b);
/* Appends the topic list (help() with no argument). */
void help_index(StrBuf *b);
/* Calls fn(name) for every topic name of the entries in doc file 'file'
 * ("doc/builtins.md"; NULL for every file). */
void help_each_name(const char *file, void (*fn)(const char *name, void *ctx), void *ctx);
/* NULL when 'topic' has a complete entry (a usage line with "->", a
 * description, an example), else what is wrong (a static string). When
 * 'needle' is not NULL, the entry's usage lines must also contain it. */
const char *help_check(const char *topic, const char *needle);

typedef struct Module Module;
/* " (did you mean rowSums?)" for an undefined function 'name' called in
 * module 'm': builtins, the functions of 'm', the DML-bodied builtins.
 * "" when nothing is close. Writes into buf. */
const char *help_suggest_function(const Module *m, const char *name, char *buf, size_t cap);

#endif
