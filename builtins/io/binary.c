/* SPDX-License-Identifier: Apache-2.0
 * dml's own binary format: the parser over a buffer, the reader straight
 * from a file descriptor, and the writer. */
#include "internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char BIN_MAGIC[8] = {'D', 'M', 'L', 'B', 'I', 'N', '1', 0};

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

Matrix *io_parse_binary(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    const unsigned char *u = (const unsigned char *)buf;
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
    unsigned char hdr[24];
    ssize_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = io_read_full(fd, hdr, sizeof hdr);
    /* Not a plain uncompressed file of ours: take the general road, which
     * inflates gzip and produces the right message for anything else. */
    if (got != (ssize_t)sizeof hdr || memcmp(hdr, BIN_MAGIC, 8) != 0) {
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
