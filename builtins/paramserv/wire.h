/* SPDX-License-Identifier: Apache-2.0
 * The byte format of what crosses Open MPI between dml ranks: scalars,
 * strings, matrices (raw little-endian doubles, bit for bit) and lists, in
 * a growable buffer. Sizes are 64-bit, so a buffer may pass 2 GiB (it is
 * sent in chunks, mpi_comm.c). The reader never trusts the bytes: a short or
 * malformed buffer sets 'bad' and yields zeros, never a crash. Any thread;
 * one buffer per thread. */
#ifndef DML_BUILTINS_PARAMSERV_WIRE_H
#define DML_BUILTINS_PARAMSERV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../base/strbuf.h"
#include "../../base/value.h"

/* The writer's buffer is the growable byte buffer (base/strbuf.h): the bytes
 * are p[0..len) ('oom' set: an allocation failed, the buffer is incomplete);
 * the NUL StrBuf keeps after them is not part of the message. */
typedef StrBuf WBuf;

static inline void wb_free(WBuf *b) { sb_free(b); }
static inline void wb_bytes(WBuf *b, const void *p, size_t n)
{
    if (n)                      /* p may be NULL then (the cells of an empty matrix) */
        sb_putn(b, p, n);
}
void wb_i64(WBuf *b, int64_t v);
void wb_f64(WBuf *b, double v);
void wb_str(WBuf *b, const char *s);                /* NULL is written as absent */
void wb_strn(WBuf *b, const char *s, size_t n);
/* Scalars, strings, matrices and lists of them (depth-limited). */
void wb_value(WBuf *b, Value v);
/* The same without the matrices' cells: the layout of a message whose
 * matrix data travels separately (mpi_send_value). */
void wb_value_layout(WBuf *b, Value v);
/* The matrices of v in the order the layout lists them (depth first):
 * stores up to cap of them in out, returns how many there are. */
int64_t wire_matrices(Value v, Matrix **out, int64_t cap);

typedef struct WRead {
    const char *p;
    size_t len, pos;
    bool bad;
    bool oom;                   /* 'bad' because memory ran out, not because the bytes are malformed */
} WRead;

int64_t wr_i64(WRead *r);
double wr_f64(WRead *r);
/* A string written by wb_str as a new malloc'd copy (NULL when absent). */
char *wr_str(WRead *r);
/* A string in place: pointer into the buffer and its length. */
const char *wr_strn(WRead *r, size_t *n);
/* A value written by wb_value, owned; NONE (and 'bad' set) on malformed
 * input or when memory runs out ('oom' set too). */
Value wr_value(WRead *r);
/* A value written by wb_value_layout: its matrices allocated, cells unset.
 * Malformed ('bad') when their cells would take more than max_bytes in
 * all: such a matrix is refused before it is allocated. */
Value wr_value_layout(WRead *r, uint64_t max_bytes);

/* One walk over a message's fields serves both directions: with 'w' set
 * each call writes the field, with 'r' set it reads the field into the same
 * variable, so the writer and the reader of a message are one function and
 * cannot drift apart. Reading never trusts the bytes (r->bad, as above). */
typedef struct WIO {
    WBuf *w;
    WRead *r;
} WIO;

void wio_i64(WIO *x, int64_t *v);
void wio_u64(WIO *x, uint64_t *v);
void wio_f64(WIO *x, double *v);
/* A string (NULL is absent); read: a new malloc'd copy. */
void wio_str(WIO *x, const char **s);
/* n bytes of text; read: a malloc'd NUL-terminated copy (never NULL unless
 * r->bad) and its length. */
void wio_text(WIO *x, const char **s, size_t *n);
/* A value (wb_value / wr_value); read: owned. */
void wio_value(WIO *x, Value *v);

#endif
