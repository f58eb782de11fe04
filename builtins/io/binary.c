/* SPDX-License-Identifier: Apache-2.0
 * dml's own binary format: the parser over a buffer, the reader straight
 * from a file descriptor, and the writer. */
#include "internal.h"

#include "../../base/sparse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char BIN_MAGIC[8] = {'D', 'M', 'L', 'B', 'I', 'N', '1', 0};
/* The sparse layout: magic, int64 rows, cols, nnz, then the CSR arrays
 * (rows + 1 int64 row pointers, nnz int32 column indices, nnz doubles). */
static const char SPR_MAGIC[8] = {'D', 'M', 'L', 'S', 'P', 'R', '1', 0};
enum { SPR_HEADER = 32 };

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

static void store_le64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++, v >>= 8)
        p[k] = (unsigned char)v;
}

/* Where the sparse layout's arrays come from: a buffer, or a file read as
 * it goes (straight into the arrays). */
typedef struct Src {
    const unsigned char *buf;
    size_t pos;
    int fd;             /* -1: the buffer */
} Src;

/* n bytes into dst; false on a short read (errno set on a read error). */
static bool src_read(Src *src, void *dst, size_t n)
{
    if (!n)
        return true;
    if (src->fd < 0) {
        memcpy(dst, src->buf + src->pos, n);
        src->pos += n;
        return true;
    }
    errno = 0;
    ssize_t got = io_read_full(src->fd, dst, n);
    return got >= 0 && (size_t)got == n;
}

/* Little-endian words of 'width' bytes, read in place, to the host's order. */
static void from_le(void *p, size_t count, int width)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)p;
    (void)count;
    (void)width;
#else
    unsigned char *u = p;
    for (size_t k = 0; k < count; k++, u += width)
        for (int a = 0, b = width - 1; a < b; a++, b--) {
            unsigned char t = u[a];
            u[a] = u[b];
            u[b] = t;
        }
#endif
}

/* The sparse layout after its magic: hdr holds the 32 header bytes, 'len'
 * the whole file's length; the arrays come from src. Sizes are checked
 * against the length before anything is allocated, the invariants
 * (sp_check) before the matrix is accepted. */
static Matrix *parse_sparse(const unsigned char *hdr, uint64_t len, Src *src, const char *name, int64_t rows,
                            int64_t cols, DiagErr *e)
{
    uint64_t r = load_le64(hdr + 8), c = load_le64(hdr + 16), nz = load_le64(hdr + 24);
    if (r > (uint64_t)INT64_MAX / 16 || c > (uint64_t)INT32_MAX || nz > (uint64_t)INT64_MAX / 16) {
        diag_fail(e, "%s: corrupt sparse header (dimensions or non-zeros out of range)", name);
        return NULL;
    }
    if (!io_dim_agrees(name, "rows", rows, (int64_t)r, e) || !io_dim_agrees(name, "columns", cols, (int64_t)c, e))
        return NULL;
    uint64_t need = 8 * (r + 1) + 12 * nz;
    if (len - SPR_HEADER != need) {
        diag_fail(e, "%s: a sparse %llu x %llu matrix with %llu non-zeros needs %llu data bytes, the file has %llu",
                  name, (unsigned long long)r, (unsigned long long)c, (unsigned long long)nz,
                  (unsigned long long)need, (unsigned long long)(len - SPR_HEADER));
        return NULL;
    }
    if (!io_check_sparse((int64_t)r, (int64_t)c, (int64_t)nz, name, e))
        return NULL;
    SpMat *s = sp_new((int64_t)r, (int64_t)c, (int64_t)nz);
    if (!s) {
        diag_fail(e, "%s: out of memory for a sparse %llu x %llu matrix", name, (unsigned long long)r,
                  (unsigned long long)c);
        return NULL;
    }
    char eb[64];
    if (!src_read(src, s->rowptr, 8 * ((size_t)r + 1)) || !src_read(src, s->colidx, 4 * (size_t)nz) ||
        !src_read(src, s->vals, 8 * (size_t)nz)) {
        if (errno)
            diag_fail(e, "cannot read '%s': %s", name, io_strerror(errno, eb, sizeof eb));
        else
            diag_fail(e, "%s: the file shrank while being read", name);
        sp_free(s);
        return NULL;
    }
    from_le(s->rowptr, (size_t)r + 1, 8);
    from_le(s->colidx, (size_t)nz, 4);
    from_le(s->vals, (size_t)nz, 8);
    s->nnz = (int64_t)nz;
    const char *bad = sp_check(s);
    if (bad) {
        diag_fail(e, "%s: corrupt sparse matrix (%s)", name, bad);
        sp_free(s);
        return NULL;
    }
    return io_matrix_from_csr(s, name, e);
}

Matrix *io_parse_binary(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    const unsigned char *u = (const unsigned char *)buf;
    if (len >= 8 && memcmp(buf, SPR_MAGIC, 8) == 0) {
        if (len < SPR_HEADER) {
            diag_fail(e, "%s: truncated sparse header (%zu of %d bytes)", name, len, (int)SPR_HEADER);
            return NULL;
        }
        Src src = {u + SPR_HEADER, 0, -1};
        return parse_sparse(u, len, &src, name, rows, cols, e);
    }
    if (len < 24 || memcmp(buf, BIN_MAGIC, 8) != 0) {
        diag_fail(e, "%s: not a dml binary matrix file (missing the DMLBIN1 header)", name);
        return NULL;
    }
    uint64_t r = load_le64(u + 8), c = load_le64(u + 16);
    if (r > (uint64_t)INT64_MAX || c > (uint64_t)INT64_MAX) {
        diag_fail(e, "%s: corrupt header (dimensions out of range)", name);
        return NULL;
    }
    if (!io_dim_agrees(name, "rows", rows, (int64_t)r, e) || !io_dim_agrees(name, "columns", cols, (int64_t)c, e))
        return NULL;
    if (!io_check_dims((int64_t)r, (int64_t)c, name, e))
        return NULL;
    uint64_t need = r * c * 8;
    if (len - 24 != need) {
        diag_fail(e, "%s: a %llu x %llu matrix needs %llu data bytes, the file has %llu", name,
                (unsigned long long)r, (unsigned long long)c, (unsigned long long)need,
                (unsigned long long)(len - 24));
        return NULL;
    }
    Matrix *m = io_matrix_raw((int64_t)r, (int64_t)c, name, e);
    if (!m)
        return NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (need)
        memcpy(m->data, u + 24, need);
#else
    for (uint64_t k = 0; k < r * c; k++) {
        uint64_t bits = load_le64(u + 24 + 8 * k);
        memcpy(&m->data[k], &bits, 8);
    }
#endif
    return m;
}

Matrix *io_read_binary_file(const char *path, int64_t rows, int64_t cols, DiagErr *e)
{
    char eb[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        diag_fail(e, "cannot open '%s': %s", path, io_strerror(errno, eb, sizeof eb));
        return NULL;
    }
    struct stat st;
    unsigned char hdr[SPR_HEADER];
    ssize_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = io_read_full(fd, hdr, 24);
    if (got == 24 && memcmp(hdr, SPR_MAGIC, 8) == 0 && io_read_full(fd, hdr + 24, 8) == 8) {
        Src src = {NULL, 0, fd};
        Matrix *m = parse_sparse(hdr, (uint64_t)st.st_size, &src, path, rows, cols, e);
        close(fd);
        return m;
    }
    /* Not a plain uncompressed file of ours: take the general road, which
     * inflates gzip and produces the right message for anything else. */
    if (got != 24 || memcmp(hdr, BIN_MAGIC, 8) != 0) {
        close(fd);
        IoBuf b;
        if (!io_read_file(path, &b, e))
            return NULL;
        Matrix *m = io_parse_binary(b.p, b.len, path, rows, cols, e);
        io_buf_free(&b);
        return m;
    }
    Matrix *m = NULL;
    uint64_t r = load_le64(hdr + 8), c = load_le64(hdr + 16);
    if (r > (uint64_t)INT64_MAX || c > (uint64_t)INT64_MAX) {
        diag_fail(e, "%s: corrupt header (dimensions out of range)", path);
        goto done;
    }
    if (!io_dim_agrees(path, "rows", rows, (int64_t)r, e) || !io_dim_agrees(path, "columns", cols, (int64_t)c, e) ||
        !io_check_dims((int64_t)r, (int64_t)c, path, e))
        goto done;
    uint64_t need = r * c * 8;
    if ((uint64_t)st.st_size - 24 != need) {
        diag_fail(e, "%s: a %llu x %llu matrix needs %llu data bytes, the file has %llu", path,
                (unsigned long long)r, (unsigned long long)c, (unsigned long long)need,
                (unsigned long long)((uint64_t)st.st_size - 24));
        goto done;
    }
    m = io_matrix_raw((int64_t)r, (int64_t)c, path, e);
    if (!m)
        goto done;
    got = need ? io_read_full(fd, m->data, need) : 0;
    if (got < 0 || (uint64_t)got != need) {
        if (got < 0)
            diag_fail(e, "cannot read '%s': %s", path, io_strerror(errno, eb, sizeof eb));
        else
            diag_fail(e, "%s: the file shrank while being read", path);
        mat_release(m);
        m = NULL;
        goto done;
    }
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    for (uint64_t k = 0; k < r * c; k++) {
        uint64_t bits = load_le64((const unsigned char *)&m->data[k]);
        memcpy(&m->data[k], &bits, 8);
    }
#endif
done:
    close(fd);
    return m;
}

bool io_write_binary(FILE *f, const Matrix *m)
{
    if (m->sp)
        return io_write_binary_csr(f, m->sp);
    Out o;
    if (!out_init(&o, f))
        return false;
    unsigned char hdr[24];
    memcpy(hdr, BIN_MAGIC, 8);
    store_le64(hdr + 8, (uint64_t)m->rows);
    store_le64(hdr + 16, (uint64_t)m->cols);
    out_put(&o, (const char *)hdr, sizeof hdr);
    int64_t len = m->rows * m->cols;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len)
        out_put(&o, (const char *)m->data, (size_t)len * 8);
#else
    for (int64_t k = 0; k < len; k++) {
        uint64_t bits;
        unsigned char le[8];
        memcpy(&bits, &m->data[k], 8);
        store_le64(le, bits);
        out_put(&o, (const char *)le, 8);
    }
#endif
    return out_done(&o);
}

/* Little-endian words of 'width' bytes from src to o. */
static void out_le(Out *o, const void *src, size_t count, int width)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (count)
        out_put(o, (const char *)src, count * (size_t)width);
#else
    const unsigned char *u = src;
    for (size_t k = 0; k < count; k++, u += width) {
        char le[8];
        for (int b = 0; b < width; b++)
            le[b] = (char)u[width - 1 - b];
        out_put(o, le, (size_t)width);
    }
#endif
}

bool io_write_binary_csr(FILE *f, const SpMat *s)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    unsigned char hdr[SPR_HEADER];
    memcpy(hdr, SPR_MAGIC, 8);
    store_le64(hdr + 8, (uint64_t)s->rows);
    store_le64(hdr + 16, (uint64_t)s->cols);
    store_le64(hdr + 24, (uint64_t)s->nnz);
    out_put(&o, (const char *)hdr, sizeof hdr);
    out_le(&o, s->rowptr, (size_t)s->rows + 1, 8);
    out_le(&o, s->colidx, (size_t)s->nnz, 4);
    out_le(&o, s->vals, (size_t)s->nnz, 8);
    return out_done(&o);
}
