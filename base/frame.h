/* SPDX-License-Identifier: Apache-2.0
 * Frames: the storage of DML's tabular value (doc/frames.md). A frame is
 * rows x cols cells held column by column; each column has one value type
 * (upstream's schema: STRING, FP64, INT64, BOOLEAN) and a name. Like a
 * matrix, a FrameBlock is a reference-counted heap object behind a Value
 * (value.h's ownership rule applies) and is immutable once shared.
 *
 * String cells are Str references (shared between frames, never copied) and
 * may be NULL: a missing value, as upstream's null. Numeric and boolean
 * cells are plain arrays. Column names are NULL for "the default name" (C1,
 * C2, ... as upstream), so a frame made from a matrix allocates no names.
 *
 * Storage only: no Interp; functions return NULL/false on failure and never
 * set a DML error (runtime/frame.h has the Interp-level operations). */
#ifndef DML_BASE_FRAME_H
#define DML_BASE_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

/* A column's value type. The order is the order of the promotion used when
 * a common type is needed (rbind of differing schemas is an error, so only
 * the readers use it). */
typedef enum FrameType { FT_STRING, FT_DOUBLE, FT_INT, FT_BOOL } FrameType;
enum { FT_COUNT = 4 };

typedef struct FrameCol {
    FrameType type;
    bool narrow;        /* upstream's 32-bit types: FP32 (FT_DOUBLE, cells
                         * rounded to float) or INT32 (FT_INT, cells within
                         * 32 bits); stored wide, narrowed on the way in */
    union {             /* 'rows' entries; NULL when the frame has no rows */
        double *d;
        int64_t *i;
        uint8_t *b;     /* 0 or 1 */
        Str **s;        /* owned references; NULL entries are missing values */
        void *p;
    };
} FrameCol;

struct FrameBlock {
    Obj h;
    int64_t rows, cols;
    FrameCol *col;      /* 'cols' entries; NULL when cols == 0 */
    Str **names;        /* 'cols' entries or NULL; a NULL entry is the default name */
    Str **mv;           /* 'cols' entries or NULL: upstream's column metadata
                         * "mvValue", the value transformencode imputed for
                         * missing cells (kept by slicing and binding) */
};

/* New frame of rows x cols with the given column types (NULL: all FT_STRING),
 * every cell zero, FALSE or missing, default names. NULL if the size
 * overflows or memory runs out. */
FrameBlock *frame_new_raw(int64_t rows, int64_t cols, const FrameType *types);
/* Deep copy (the cell strings and names are shared, not copied), count 1.
 * NULL on allocation failure. */
FrameBlock *frame_clone_raw(const FrameBlock *f);
/* Rows [r0, r1) x columns [c0, c1) as a new frame, names kept. NULL on
 * allocation failure. */
FrameBlock *frame_slice_raw(const FrameBlock *f, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
/* Called by obj_free when the last reference goes. */
void frame_free(FrameBlock *f);

/* Sets column j's name (NULL: the default); takes a new reference to 'name'.
 * False on allocation failure (the frame is unchanged). */
bool frame_set_name(FrameBlock *f, int64_t j, Str *name);
/* Sets column j's imputed value (NULL: none); takes a new reference.
 * False on allocation failure (the frame is unchanged). */
bool frame_set_mv(FrameBlock *f, int64_t j, Str *mv);
/* Column j's name written into buf (the stored one, else "C<j+1>"). */
const char *frame_col_name(const FrameBlock *f, int64_t j, char *buf, size_t cap);
/* True when every column has the default name. */
bool frame_default_names(const FrameBlock *f);

/* Upstream's name of a type ("STRING", "FP64", "INT64", "BOOLEAN"). */
const char *frame_type_name(FrameType t);
/* Upstream's name of a column's type: also "FP32" and "INT32". */
const char *frame_col_type_name(const FrameCol *c);
/* The type named by a schema word, case-insensitive: STRING, FP64, FP32,
 * DOUBLE, INT64, INT32, INT, BOOLEAN, BOOL; *narrow (may be NULL) says
 * FP32 or INT32 (stored as FT_DOUBLE, FT_INT). False when the word names no
 * type. */
bool frame_type_parse(const char *s, size_t n, FrameType *out, bool *narrow);
/* Marks the columns j with narrow[j] as FP32 / INT32 (narrow may be NULL:
 * nothing); call on a fresh frame, before cells are stored. */
void frame_set_narrow(FrameBlock *f, const bool *narrow);
/* A number of an FP32 column as stored: the double rounded to float (other
 * columns: unchanged). */
double frame_narrow_double(const FrameCol *c, double d);

/* Cell (i, j) as a DML scalar: a new reference for strings (a missing
 * string is the empty string), NONE only when a string cannot be allocated. */
Value frame_get(const FrameBlock *f, int64_t i, int64_t j);
/* Stores the text s[0..n) in cell (i, j), read as the column's type: FP64
 * as a decimal or NaN/Infinity, INT64 as an integer (also "3.0"), BOOLEAN as
 * true/false/t/f/1/0 (any case), STRING as is (n == 0 stores "", not a
 * missing value). Blanks around numbers are ignored. False when the text is
 * not of that type (nothing stored), or, with *oom set, when a string
 * cannot be allocated. */
bool frame_put_text(FrameBlock *f, int64_t i, int64_t j, const char *s, size_t n, bool *oom);
/* Copies cell (si, sj) of 'src' into (di, dj) of 'dst', whose column must
 * have the same type. */
void frame_copy_cell(FrameBlock *dst, int64_t di, int64_t dj, const FrameBlock *src, int64_t si, int64_t sj);

#endif
