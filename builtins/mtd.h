/* SPDX-License-Identifier: Apache-2.0
 * The "<file>.mtd" metadata files that travel with data files: a JSON object
 * read by the JSON reader (json.h) and written with the keys in the
 * order upstream SystemDS writes them (doc/builtins.md, "write"). Pure functions
 * over buffers and FILE*, thread-safe. */
#ifndef DML_BUILTINS_MTD_H
#define DML_BUILTINS_MTD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "io/io_formats.h"

/* Parsed metadata. Absent keys are NULL strings, -1 numbers, header and
 * fill -1, has_default false. */
typedef struct Mtd {
    char *data_type;        /* "matrix", "scalar", "frame" */
    char *value_type;       /* "double", "int", "boolean", "string" */
    int64_t rows, cols;
    int64_t rows_in_block, cols_in_block;
    int64_t nnz;
    char *format;           /* "text", "csv", "binary", "mm", ... */
    char *description;
    char *author;
    int header;             /* csv: -1 absent, 0 FALSE, 1 TRUE */
    char *sep;              /* csv */
    char *created;          /* "yyyy-MM-dd HH:mm:ss z" */
    char *indsep;           /* libsvm: index/value separator ("indSep") */
    char *schema;           /* frames: the column value types, "STRING,FP64,..." */
    int fill;               /* csv: -1 absent, 0 FALSE, 1 TRUE */
    bool has_default;       /* csv: "default" given ... */
    double dflt;            /* ... the value of empty fields */
    char *na_strings;       /* csv: "naStrings", several joined by '·' */
} Mtd;

void mtd_init(Mtd *m);
void mtd_free(Mtd *m);

/* Parses the JSON text [buf, buf+len) into *m (which must be initialised;
 * on failure it is left freed and re-initialised). Unknown keys are ignored;
 * known keys must have the right type (a number may also be written as a
 * numeric string, a boolean as "true"/"false"). Errors name the file and the
 * line: "x.csv.mtd:3: expected ':' after the key". */
bool mtd_parse(const char *buf, size_t len, const char *name, Mtd *m, DiagErr *e);

/* Sets 'author' ($USER, else "SystemDS") and 'created' (local time now) on a
 * metadata record about to be written. Returns false on allocation failure. */
bool mtd_stamp(Mtd *m);

/* Writes *m as JSON, keys in upstream order, absent keys omitted, indented
 * with 4 spaces. Returns false when the stream reports an error. */
bool mtd_write(FILE *f, const Mtd *m);

#endif
