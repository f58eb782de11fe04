/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the readers that build a CSR (builtins/io/csr.c):
 * text/ijv, MatrixMarket coordinate, libsvm and the sparse binary layout.
 * The first byte picks the reader and its options (dimensions for text,
 * separators for libsvm); the rest is the file. What parses must survive
 * its round trips: written as text, MatrixMarket, libsvm and sparse
 * binary, each must read back to the same cells (a sparse result to the
 * same CSR); the sparse binary bytes
 * of the result, read back, must be the very bytes written. Any crash,
 * leak, sanitizer report or mismatch is a bug.
 *
 * Build: make fuzz (build/fuzz/fuzz_sparse_io); replay: make fuzz-replay.
 * IO_MAX_BYTES (set by the Makefile's fuzz flags) caps what a header may
 * ask for. */
#include "../../base/sparse.h"
#include "../../builtins/io/io_formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The cell (i, j) whatever the matrix's form. */
static double cell(const Matrix *m, int64_t i, int64_t j)
{
    return mat_get(m, i, j);
}

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void must_equal(const Matrix *a, const Matrix *b)
{
    if (!b || a->rows != b->rows || a->cols != b->cols)
        abort();
    if (a->sp || b->sp) {
        /* the same values give the same form, and the same CSR */
        const SpMat *x = a->sp, *y = b->sp;
        if (!x || !y || x->nnz != y->nnz || sp_check(x) || sp_check(y))
            abort();
        for (int64_t i = 0; i <= x->rows; i++)
            if (x->rowptr[i] != y->rowptr[i])
                abort();
        for (int64_t p = 0; p < x->nnz; p++)
            if (x->colidx[p] != y->colidx[p] || !same(x->vals[p], y->vals[p]))
                abort();
        return;
    }
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t j = 0; j < a->cols; j++)
            if (!same(cell(a, i, j), cell(b, i, j)))
                abort();
}

typedef bool (*Writer)(FILE *, const Matrix *);

static char *write_mem(Writer w, const Matrix *m, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    bool ok = w(f, m);
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The CSR of m (whatever its form). */
static SpMat *csr_of(const Matrix *m)
{
    return m->sp ? sp_clone(m->sp) : sp_from_dense(m->data, m->rows, m->cols, -1);
}

static bool write_csr(FILE *f, const Matrix *m)
{
    SpMat *s = csr_of(m);
    bool ok = s && io_write_binary_csr(f, s);
    sp_free(s);
    return ok;
}

static void round_trips(const Matrix *m)
{
    /* Cells the writers print with Java's shortest digits read back
     * exactly, so every format must give the same matrix. */
    DiagErr e;
    size_t len;
    char *b = write_mem(io_write_text, m, &len);
    if (b) {
        Matrix *r = io_parse_text(b, len, "rt", m->rows, m->cols, &e);
        must_equal(m, r);
        mat_release(r);
        free(b);
    }
    b = write_mem(io_write_mm, m, &len);
    if (b) {
        Matrix *r = io_parse_mm(b, len, "rt", -1, -1, &e);
        must_equal(m, r);
        mat_release(r);
        free(b);
    }
    if (m->cols > 0 && m->cols <= INT32_MAX && (b = write_mem(io_write_libsvm, m, &len))) {
        Matrix *r = io_parse_libsvm(b, len, "rt", m->rows, m->cols, &e);
        must_equal(m, r);
        mat_release(r);
        free(b);
    }
    b = write_mem(write_csr, m, &len);
    if (b) {
        Matrix *r = io_parse_binary(b, len, "rt", -1, -1, &e);
        must_equal(m, r);
        mat_release(r);
        free(b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned sel = data[0];
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    DiagErr e;
    Matrix *m = NULL;
    switch (sel & 3) {
    case 0: {
        /* text: dimensions from the selector (up to 31 x 31), or a large
         * shape for the sparse form */
        int64_t rows = (sel >> 2) & 7, cols = (sel >> 5) & 7;
        if (rows == 7 && cols == 7)
            rows = cols = 100000;
        else {
            rows *= 4;
            cols *= 4;
        }
        m = io_parse_text(buf, len, "f", rows, cols, &e);
        break;
    }
    case 1:
        m = io_parse_mm(buf, len, "f", -1, -1, &e);
        break;
    case 2: {
        static const char *const seps[] = {",", " ", ";", "\t"};
        static const char *const inds[] = {":", "=", "::", ":"};
        int64_t cols = (sel >> 6) == 3 ? 9 : -1;
        m = io_parse_libsvm_sep(buf, len, "f", -1, cols, seps[(sel >> 2) & 3], inds[(sel >> 4) & 3], &e);
        break;
    }
    case 3: {
        m = io_parse_binary(buf, len, "f", -1, -1, &e);
        /* A sparse file that was accepted is in canonical form (sp_check):
         * written again it is the same bytes. */
        if (m && len >= 8 && !memcmp(buf, "DMLSPR1", 8)) {
            size_t wl;
            char *w = write_mem(write_csr, m, &wl);
            if (w && (wl != len || memcmp(w, buf, len)))
                abort();
            free(w);
        }
        break;
    }
    }
    if (m) {
        /* Round trips of a dense result cost rows x cols cells: only for
         * small ones; a sparse one costs its non-zeros and rows. */
        if (m->sp ? m->rows <= 200000 : m->rows * m->cols <= 4096)
            round_trips(m);
        mat_release(m);
    }
    return 0;
}
