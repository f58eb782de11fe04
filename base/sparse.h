/* SPDX-License-Identifier: Apache-2.0
 * Sparse matrix storage: compressed sparse rows (CSR), the form upstream's
 * sparse blocks take when they are read-only. Storage only, like value.h
 * for the dense form: allocation, conversions to and from dense row-major
 * doubles, the format decision and the memory estimate. The kernels are in
 * runtime/sparse_ops.h. Not yet a DML value: doc/sparse-plan.md says how
 * Matrix gains this form.
 *
 * Layout, for a rows x cols matrix with nnz stored entries:
 *   rowptr[0..rows]  int64, rowptr[0] = 0, rowptr[rows] = nnz; row i's
 *                    entries are [rowptr[i], rowptr[i+1])
 *   colidx[0..nnz)   int32, strictly ascending within a row
 *   vals[0..nnz)     double, never 0.0 (nor -0.0); NaN and +-Inf are
 *                    non-zeros and are stored
 * 12 bytes per non-zero plus 8 per row. Column indices are 32-bit: a matrix
 * with more than INT32_MAX columns cannot be sparse (sp_prefer_sparse says
 * no), as upstream's int[] column indices. -0.0 is a zero: converting a
 * dense matrix drops it (upstream does the same), so a sparse matrix turns
 * a dense -0.0 into +0.0.
 *
 * Invariants (sp_check tests them): the three arrays are consistent, the
 * columns in range and ascending per row, no stored zero. Thread-safe: no
 * shared state; an SpMat is mutated only by its one owner. */
#ifndef DML_BASE_SPARSE_H
#define DML_BASE_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SpMat {
    int64_t rows, cols;
    int64_t nnz;        /* == rowptr[rows] */
    int64_t cap;        /* entries allocated in colidx and vals (>= nnz) */
    int64_t *rowptr;    /* rows + 1 entries, never NULL */
    int32_t *colidx;    /* cap entries; NULL when cap == 0 */
    double *vals;       /* cap entries; NULL when cap == 0 */
    /* The owners' count of rowptr and colidx, which matrices of the same
     * structure share (sp_new_like): shared arrays are read-only, and the
     * last owner frees them. NULL: this matrix's own, not shareable. */
    struct SpIdx *idx;
} SpMat;

/* Upstream's turn point (MatrixBlock.SPARSITY_TURN_POINT): below this share
 * of non-zeros a matrix is held sparse, if it is also large enough
 * (SP_MIN_CELLS) and the sparse form is smaller than the dense one. */
#define SP_SPARSITY_TURN_POINT 0.4
/* Matrices of fewer cells stay dense whatever their sparsity: their dense
 * form is at most 128 KiB (inside L2), where dense kernels win and a format
 * switch costs more than it saves. dml's own rule (upstream decides by the
 * turn point and the size comparison alone). */
#define SP_MIN_CELLS 16384

/* ---- allocation (NULL on size overflow, over the matrix memory cap, or
 * out of memory) ---- */
/* An empty rows x cols matrix (no entries) with room for 'cap' entries. */
SpMat *sp_new(int64_t rows, int64_t cols, int64_t cap);
void sp_free(SpMat *s);
/* Room for at least 'cap' entries (grows by at least half again);
 * false, and s unchanged, when the memory is not there. */
bool sp_reserve(SpMat *s, int64_t cap);
/* Gives back the unused capacity (realloc to nnz; never fails: on a failed
 * shrink the larger block stays). */
void sp_shrink(SpMat *s);
/* Deep copy with cap == nnz. */
SpMat *sp_clone(const SpMat *s);
/* A matrix with s's structure: s's rowptr and colidx, shared (no copy),
 * and room for s->nnz values, not set (nnz and cap == s->nnz). NULL on
 * failure or when s's arrays cannot be shared (the caller copies them
 * then). Both matrices stay free to be used and freed on any thread. */
SpMat *sp_new_like(const SpMat *s);

/* ---- conversions ---- */
/* Non-zeros (x != 0, NaN included) of n doubles. */
int64_t sp_count_nnz(const double *x, int64_t n);
/* CSR of the row-major rows x cols array 'x' (x may be NULL when a
 * dimension is 0); 'nnz' is its non-zero count when known, or -1. NULL on
 * failure or when cols > INT32_MAX. */
SpMat *sp_from_dense(const double *x, int64_t rows, int64_t cols, int64_t nnz);
/* Writes the dense row-major form into out[0 .. rows*cols). */
void sp_to_dense(const SpMat *s, double *out);

/* ---- format decision and memory ---- */
/* Bytes the CSR form of a rows x cols matrix with nnz entries takes
 * (arrays and header); UINT64_MAX on overflow. */
uint64_t sp_bytes(int64_t rows, int64_t nnz);
/* Bytes of the dense form (data only); UINT64_MAX on overflow. */
uint64_t sp_dense_bytes(int64_t rows, int64_t cols);
/* Whether a rows x cols matrix with nnz non-zeros is held sparse: at least
 * SP_MIN_CELLS cells, sparsity below SP_SPARSITY_TURN_POINT, the CSR form
 * smaller than the dense one, and at most INT32_MAX columns. The same rule
 * decides both ways: a sparse result for which it says no goes back to
 * dense (upstream's examineSparsity), a dense one for which it says yes
 * becomes sparse where its non-zeros are counted anyway. */
bool sp_prefer_sparse(int64_t rows, int64_t cols, int64_t nnz);
/* The smallest cell count held sparse: SP_MIN_CELLS, or the environment
 * variable DML_SPARSE_MIN_CELLS (a debug switch: 0 also drops the size
 * comparison, so that small test matrices take the sparse paths). */
int64_t sp_min_cells(void);

/* ---- column sums ----
 * colSums (and colMeans) of a matrix with many rows sum each block of
 * rows by itself, every column's Kahan sum starting at 0 in each block,
 * then add the blocks' sums and corrections in order with compensation;
 * dense (builtins/aggregate.c) and sparse (runtime/sparse_ops.c) alike, so
 * they agree to the bit, and the blocks run on threads. The rows of a
 * block, from the shape alone: all rows up to 2^17; else at most 16
 * blocks of at least 2^17 rows, fewer where their sums (16 bytes a column)
 * would pass 64 MB. */
static inline int64_t sp_col_block_rows(int64_t rows, int64_t cols)
{
    enum { MIN_ROWS = 1 << 17, MAX_BLOCKS = 16 };
    int64_t nb = rows / MIN_ROWS, room = cols > 0 ? (64 << 20) / (16 * cols) : MAX_BLOCKS;
    if (nb > MAX_BLOCKS)
        nb = MAX_BLOCKS;
    if (nb > room)
        nb = room;
    if (nb <= 1)
        return rows > 0 ? rows : 1;
    return (rows + nb - 1) / nb;
}

/* ---- checks ---- */
/* NULL when the invariants hold, else what is broken (a static string). */
const char *sp_check(const SpMat *s);

#endif
