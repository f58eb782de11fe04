/* SPDX-License-Identifier: Apache-2.0
 * Frames in the runtime (doc/frames.md): allocation that reports failure as
 * a DML error, conversion of cells to and from DML scalars and text, the
 * matrix conversions, toString(), and the slicing and left indexing that
 * index.c hooks in. The storage itself is base/frame.h. Thread-safe: pure
 * functions over their arguments and the caller's Interp. */
#ifndef DML_RUNTIME_FRAME_H
#define DML_RUNTIME_FRAME_H

#include "../base/frame.h"
#include "../base/strbuf.h"
#include "interp.h"
#include "tostring.h"

/* frame_new_raw with a DML error ("out of memory ...") on failure. */
FrameBlock *frame_alloc(Interp *I, int64_t rows, int64_t cols, const FrameType *types);
/* Takes 'f'; returns a frame safe to mutate: 'f' itself when unshared, else
 * a copy (and 'f' is released). NULL (error set) on allocation failure. */
FrameBlock *frame_make_unique_take(Interp *I, FrameBlock *f);

/* Stores the DML scalar v in cell (i, j) of the (unshared) frame f,
 * converted to the column's type: numbers and booleans convert as numbers
 * (a fractional double does not fit an INT64 column), strings are parsed
 * (frame_put_text), anything becomes a STRING in its Java form ("1.0",
 * "true"). Error naming the cell and the column when v does not fit. */
Status frame_put_value(Interp *I, FrameBlock *f, int64_t i, int64_t j, Value v);
/* Appends cell (i, j) as text: STRING as is (missing: nothing), FP64 in
 * Java's Double.toString form, INT64 in decimal, BOOLEAN as true/false. */
void frame_cell_text(StrBuf *b, const FrameBlock *f, int64_t i, int64_t j);
/* The cell as a double: numbers as they are, booleans 1/0, strings parsed
 * (a missing or empty string is NaN); false for a string that is no number. */
bool frame_cell_double(const FrameBlock *f, int64_t i, int64_t j, double *out);
/* "row 2, column 'age' (FP64)" of cell (i, j), 0-based in, 1-based out. */
const char *frame_cell_where(const FrameBlock *f, int64_t i, int64_t j, char *buf, size_t cap);

/* replace(target=F, pattern=p, replacement=r) on a frame, as upstream's
 * FrameBlock.replaceOperations: every cell whose text (frame_cell_text) is
 * p's string form, and every missing string cell when that form is "NaN",
 * becomes r's string form read as the column's type (an error naming the
 * cell when it is not of that type). */
Status frame_replace(Interp *I, const FrameBlock *f, Value pat, Value rep, Value *out);

/* as.frame(matrix): FP64 columns with default names. */
FrameBlock *frame_from_matrix(Interp *I, const Matrix *m);
/* as.matrix(frame): every cell as a double (frame_cell_double); a string
 * that is no number is an error naming the cell. 'fn' names the caller. */
Status frame_to_matrix(Interp *I, const FrameBlock *f, const char *fn, Matrix **out);

/* toString() of a frame (doc/frames.md, "printing"): a header line
 * "# FRAME: nrow = R, ncol = C", a line of column names and a line of value
 * types, each after "#" and o->sep, then the first o->rows rows of the first
 * o->cols columns, cells joined by o->sep, each row ended by o->linesep.
 * FP64 cells show o->decimal fraction digits as matrices do. */
void frame_tostring_sb(StrBuf *b, const FrameBlock *f, const ToStringOpts *o);

/* Left indexing F[r0+1:r1, c0+1:c1] = v on 'f' (taken; *res is what the
 * variable holds afterwards, NULL only on a failed copy). v (taken) is a
 * frame of the range's shape, whose cells convert to the target columns'
 * types, or a scalar for a single cell. */
Status frame_assign_take(Interp *I, FrameBlock *f, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Value v,
                         const Loc *loc, FrameBlock **res);

/* cbind/rbind of the frames v[0..n) ('fname' names the builtin): cbind
 * needs equal row counts and concatenates the columns and their names;
 * rbind needs equal column counts and the same schema (a column whose type
 * differs is an error naming it) and keeps the first frame's names. */
Status frame_bind(Interp *I, const char *fname, const Value *v, int n, bool by_cols, Value *out);

/* parfor's result merge (COMPAT.md 9): true when a and b have the same
 * shape and schema; then frame_merge_changed copies every cell of 'v' that
 * differs from 'orig' into the (unshared) 'res'. */
bool frame_same_layout(const FrameBlock *a, const FrameBlock *b);
void frame_merge_changed(FrameBlock *res, const FrameBlock *orig, const FrameBlock *v);

#endif
