/* SPDX-License-Identifier: Apache-2.0
 * Matrix file formats: parsers over in-memory buffers and writers over FILE*,
 * as pure functions with no Interp, so they can be unit-tested and fuzzed.
 * Every parser takes (buf, len) -- the buffer need not be NUL-terminated --
 * and a display 'name' used in messages ("data.csv:3: expected 4 fields,
 * found 3"). On failure a parser returns NULL / false and fills a DiagErr; it
 * never returns a partially filled matrix. All functions are thread-safe:
 * no global mutable state, no static buffers.
 *
 * Formats:
 *   text    "i j v" per line (1-based), only non-zeros; dims come from outside.
 *           Blank lines and lines starting with '%' are skipped; the line
 *           "0 0 0" marks an all-zero matrix. Entries in any order; of two
 *           at one cell the later wins.
 *   csv     fields separated by 'sep'; dims inferred by scanning.
 *   mm      MatrixMarket: "%%MatrixMarket matrix coordinate|array
 *           real|integer|double|pattern general|symmetric|skew-symmetric".
 *           Coordinate entries in any order (the later of two at one cell
 *           wins), explicit zeros dropped, symmetric ones mirrored.
 *   binary  dml's own format (upstream's Hadoop binary is implementation-
 *           defined per spec): the 8 bytes "DMLBIN1\0", int64 rows, int64
 *           cols, then rows*cols doubles in row-major order. All numbers are
 *           little-endian. The file length must be exactly 24 + 8*rows*cols.
 *           A sparse matrix is written in a second layout (the magic
 *           "DMLSPR1\0", then the CSR: see io_write_binary_csr); its
 *           arrays are checked (sp_check) before the matrix is accepted.
 *   libsvm  "label idx:val idx:val ..." (1-based idx); the matrix holds the
 *           features in columns 1..cols-1 and the label in the LAST column,
 *           as upstream SystemDS does. Indices of a line in any order; an
 *           index twice in a line is an error naming the line.
 * text, mm (coordinate), libsvm and the sparse binary layout are read into
 * a CSR with memory in proportion to the non-zeros; io_matrix_from_csr
 * (internal.h) decides the form of the result.
 *   idx     the MNIST format: bytes 0,0,type,ndims, then ndims big-endian
 *           int32 dims, then the data (type 0x08 ubyte, 0x09 byte, 0x0B
 *           int16, 0x0C int32, 0x0D float32, 0x0E float64; big-endian).
 *           N x d1 x ... becomes an N x (d1*...) matrix; ndims=1 gives N x 1.
 * Any of them may be gzip-compressed: io_read_file() inflates transparently. */
#ifndef DML_BUILTINS_IO_FORMATS_H
#define DML_BUILTINS_IO_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../../base/diag.h"
#include "../../base/frame.h"
#include "../../base/value.h"

/* Thread-safe strerror: the message for errno value 'err' (buf is used as
 * scratch space; 64 bytes suffice). */
const char *io_strerror(int err, char *buf, size_t cap);

/* ---- whole-file input ---- */

/* A malloc'd byte buffer; p[len] is always a NUL (not counted in len). */
typedef struct IoBuf {
    char *p;
    size_t len;
} IoBuf;

void io_buf_free(IoBuf *b);
/* Reads the whole file at 'path'. A gzip file (magic 1f 8b) is inflated.
 * Errors: "cannot open 'f.csv': No such file or directory", read errors,
 * corrupt gzip data. */
bool io_read_file(const char *path, IoBuf *out, DiagErr *e);
/* Inflates a gzip stream (several members are concatenated) into *out.
 * 'name' is used in messages. */
bool io_gunzip(const char *buf, size_t len, const char *name, IoBuf *out, DiagErr *e);

/* ---- sizes ---- */

/* Checks that a rows x cols matrix of doubles is representable and fits in
 * the machine's physical memory; the message names 'name'. */
bool io_check_dims(int64_t rows, int64_t cols, const char *name, DiagErr *e);
/* The same for a matrix that may be held sparse: its row pointers fit. */
bool io_check_sparse_dims(int64_t rows, int64_t cols, const char *name, DiagErr *e);
/* New zero-filled rows x cols matrix after io_check_dims; NULL with e set. */
Matrix *io_matrix_zero(int64_t rows, int64_t cols, const char *name, DiagErr *e);
/* Number of cells != 0 (NaN counts as non-zero); a sparse matrix's count. */
int64_t io_nnz(const Matrix *m);
/* A dense matrix a reader made ('m' taken): converted to the sparse form
 * when sp_prefer_sparse says so for its non-zeros (counted here, and kept
 * in m->nnz); m as it is when the CSR cannot be made. */
Matrix *io_matrix_settle(Matrix *m);

/* ---- parsers: owned Matrix on success, NULL with e set on failure ---- */

typedef struct IoCsvOpts {
    bool header;            /* skip the first line */
    const char *sep;        /* field separator, non-empty (default ",") */
    bool fill;              /* empty fields become fill_value (else an error) */
    double fill_value;
    const char *const *na;  /* strings read as NaN (after trimming) */
    int nna;
    int64_t rows, cols;     /* expected dims, or -1 to infer */
} IoCsvOpts;

void io_csv_opts_init(IoCsvOpts *o);

/* CSV. Fields are trimmed of blanks; a field in double quotes may contain
 * the separator. A trailing '\r' and trailing blank lines are ignored.
 * When rows/cols are given the file must have exactly that shape. */
Matrix *io_parse_csv(const char *buf, size_t len, const char *name, const IoCsvOpts *o, DiagErr *e);
/* text ("i j v"); rows and cols are required (>= 0). */
Matrix *io_parse_text(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e);
/* MatrixMarket; rows/cols (-1 = not given) must agree with the header. */
Matrix *io_parse_mm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e);
/* dml binary; rows/cols (-1 = not given) must agree with the header. */
Matrix *io_parse_binary(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e);
/* The binary format straight from a file into the matrix, without an
 * intermediate buffer (a gzip'd file takes the buffered road). */
Matrix *io_read_binary_file(const char *path, int64_t rows, int64_t cols, DiagErr *e);
/* IDX (already inflated); rows/cols (-1 = not given) must agree. */
Matrix *io_parse_idx(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e);
/* libsvm; cols (including the label column) and rows are inferred when -1. */
Matrix *io_parse_libsvm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e);
/* Same, entries split by blanks or the first character of 'sep' (default
 * ","), index and value by 'indsep' (default ":"). */
Matrix *io_parse_libsvm_sep(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                            const char *sep, const char *indsep, DiagErr *e);

/* True when the file name says IDX: ends in "-idx<k>-ubyte", ".idx<k>-ubyte"
 * or ".idx", optionally followed by ".gz". */
bool io_name_is_idx(const char *path);

/* Scalar file: the whole content, trimmed for numbers and booleans.
 * value_type is "int", "double", "boolean" or "string". On success *out is
 * an owned value (a Str for strings). */
bool io_parse_scalar(const char *buf, size_t len, const char *name, const char *value_type, Value *out,
                     DiagErr *e);

/* Parses one number in [s, e) the way CSV cells are read: surrounding blanks
 * ignored, decimal/exponent/Infinity/NaN forms accepted, nothing else.
 * Exposed for the unit tests. */
bool io_parse_double(const char *s, const char *e, double *out);

/* ---- writers: return false when the stream reports an error ---- */

typedef struct IoCsvWriteOpts {
    bool header;            /* first line C1<sep>C2... */
    const char *sep;
    bool sparse;            /* zeros written as nothing instead of "0" */
} IoCsvWriteOpts;

bool io_write_text(FILE *f, const Matrix *m);
bool io_write_csv(FILE *f, const Matrix *m, const IoCsvWriteOpts *o);
bool io_write_mm(FILE *f, const Matrix *m);
bool io_write_binary(FILE *f, const Matrix *m);
/* The sparse layout of the binary format ("DMLSPR1\0", int64 rows, cols,
 * nnz, then the CSR's row pointers (int64), column indices (int32) and
 * values, little-endian), which io_parse_binary reads too. */
struct SpMat;
bool io_write_binary_csr(FILE *f, const struct SpMat *s);
bool io_write_libsvm(FILE *f, const Matrix *m);
/* libsvm as upstream writes it: label (last column), then sep, j, indsep,
 * value per nonzero feature; io_write_libsvm uses sep "," and indsep ":". */
bool io_write_libsvm_sep(FILE *f, const Matrix *m, const char *sep, const char *indsep);
/* The DML string form of a scalar (ints plain, doubles as Java
 * Double.toString, booleans TRUE/FALSE, strings as is), no newline. */
bool io_write_scalar(FILE *f, Value v);

/* ---- frames (frame_csv.c) ---- */

typedef struct IoFrameCsvOpts {
    bool header;            /* the first line holds the column names */
    const char *sep;        /* field separator, non-empty (default ",") */
    bool fill;              /* empty fields are missing (else an error) */
    const char *const *na;  /* strings read as missing (after trimming) */
    int nna;
    int64_t rows, cols;     /* expected dims, or -1 to infer */
    const FrameType *schema;    /* 'nschema' column types, or NULL: all STRING */
    int64_t nschema;
    const bool *narrow;         /* with schema: FP32 / INT32 columns, or NULL */
} IoFrameCsvOpts;

/* A frame from csv text (doc/frames.md, "csv"): fields as io_parse_csv
 * splits them (trimmed, a double-quoted field may hold the separator and
 * "" for a quote), each read as its column's type; an empty or NA field is
 * a missing value (STRING), 0 or FALSE. Errors name the line and field:
 * "f.csv:3: field 2 ('x') is not FP64". */
FrameBlock *io_parse_frame_csv(const char *buf, size_t len, const char *name, const IoFrameCsvOpts *o, DiagErr *e);
/* Writes a frame as csv: the column names first when o->header, then one
 * line per row, cells in their text form (FP64 as Java's Double.toString),
 * a missing string as nothing; a string holding the separator, a quote or a
 * line break is written in double quotes so that it reads back. */
bool io_write_frame_csv(FILE *f, const FrameBlock *fr, const IoCsvWriteOpts *o);

/* ---- frames (frame_text.c) ---- */

/* A rows x cols frame from text "i j value" lines (1-based; the value is
 * the rest of the line after one blank, read as its column's type; lines
 * with i < 1 are upstream's column metadata and skipped); cells not given
 * are missing (0, FALSE). 'schema' has 'nschema' entries (and 'narrow'
 * marks FP32 / INT32 among them, or is NULL), or is NULL: all STRING.
 * Dimensions are required (-1: an error). */
FrameBlock *io_parse_frame_text(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                                const FrameType *schema, const bool *narrow, int64_t nschema, DiagErr *e);
/* Writes a frame as text: "i j value" for every cell but missing strings,
 * row by row, values in their text form (FP64 as Java's Double.toString). */
bool io_write_frame_text(FILE *f, const FrameBlock *fr);

/* ---- atomic replacement of a file ----
 * io_tmp_open creates "<path>.tmp<pid>.XXXXXX" in the target's directory
 * (first removing such temporaries of processes that are gone: a writer
 * killed half-way leaves one until the next write of that path); the
 * caller writes to *f, then io_tmp_commit flushes, closes and renames it
 * over 'path' (or removes it and fails), and io_tmp_abort closes and removes
 * it. Either way no half-written file is ever visible under 'path'. */
typedef struct IoTmp {
    FILE *f;
    char *tmp_path;         /* malloc'd */
} IoTmp;

bool io_tmp_open(const char *path, IoTmp *t, DiagErr *e);
bool io_tmp_close(IoTmp *t, const char *path, DiagErr *e);   /* flush+close, keep the temporary */
bool io_tmp_rename(IoTmp *t, const char *path, DiagErr *e);  /* after close: rename over path */
void io_tmp_abort(IoTmp *t);
/* io_tmp_close + io_tmp_rename. */
bool io_tmp_commit(IoTmp *t, const char *path, DiagErr *e);
/* Puts a data file and its .mtd, both written to temporaries, in place
 * together: closes both, renames the data, then the metadata; when that
 * fails the old data file (kept under a second name meanwhile) comes back.
 * On failure nothing under 'path' or 'mtd_path' has changed and no
 * temporary is left; both IoTmp are consumed either way. */
bool io_commit_pair(IoTmp *data, const char *path, IoTmp *meta, const char *mtd_path, DiagErr *e);
/* A fresh empty folder "<path>.tmpXXXXXX" to build a folder in (malloc'd;
 * NULL and *e on failure). */
char *io_tmp_dir_open(const char *path, DiagErr *e);
/* Swaps the folder tmp_dir in as 'path' (an old folder there is removed
 * once the new one and its metadata, 'meta' written to a temporary, are
 * both in place). On failure the old folder and .mtd are untouched and
 * tmp_dir is removed. Consumes tmp_dir and meta either way. */
bool io_commit_dir(char *tmp_dir, const char *path, IoTmp *meta, const char *mtd_path, DiagErr *e);
/* The process umask, read from /proc without setting it (umask(2) would
 * race with other threads creating files); 022 when it cannot be read.
 * Temporaries made by mkstemp (mode 0600) get 0666 & ~umask before they
 * are renamed into place, as open(2) would have given them. */
mode_t io_current_umask(void);
/* Removes the temporaries "<path>.tmp<pid>.XXXXXX" (files or folders) of
 * processes that no longer run. */
void io_remove_stale_tmps(const char *path);
/* Removes a file, or a folder with everything in it (links not followed);
 * true when nothing is left. */
bool io_remove_tree(const char *path);

#endif
