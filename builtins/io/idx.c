/* SPDX-License-Identifier: Apache-2.0
 * IDX, the MNIST format: recognising its file names and the parser. */
#include "internal.h"

static uint64_t load_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = (v << 8) | p[k];
    return v;
}

bool io_name_is_idx(const char *path)
{
    size_t n = strlen(path);
    if (n >= 3 && strcmp(path + n - 3, ".gz") == 0)
        n -= 3;
    if (n >= 4 && memcmp(path + n - 4, ".idx", 4) == 0)
        return true;
    /* "-idx3-ubyte", ".idx1-ubyte", ... */
    if (n >= 11 && memcmp(path + n - 6, "-ubyte", 6) == 0 && (path[n - 11] == '-' || path[n - 11] == '.') &&
        memcmp(path + n - 10, "idx", 3) == 0 && path[n - 7] >= '1' && path[n - 7] <= '9')
        return true;
    return false;
}

Matrix *io_parse_idx(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, DiagErr *e)
{
    const unsigned char *u = (const unsigned char *)buf;
    if (len < 4 || u[0] != 0 || u[1] != 0) {
        diag_fail(e, "%s: not an IDX file (bad magic number)", name);
        return NULL;
    }
    int type = u[2], nd = u[3], esz;
    switch (type) {
    case 0x08: case 0x09: esz = 1; break;
    case 0x0B: esz = 2; break;
    case 0x0C: case 0x0D: esz = 4; break;
    case 0x0E: esz = 8; break;
    default:
        diag_fail(e, "%s: unknown IDX element type 0x%02x", name, type);
        return NULL;
    }
    if (nd < 1) {
        diag_fail(e, "%s: an IDX file needs at least one dimension", name);
        return NULL;
    }
    size_t hdr = 4 + 4 * (size_t)nd;
    if (len < hdr) {
        diag_fail(e, "%s: truncated IDX header", name);
        return NULL;
    }
    int64_t n = (int64_t)load_be(u + 4, 4), d = 1;
    for (int k = 1; k < nd; k++) {
        int64_t dk = (int64_t)load_be(u + 4 + 4 * k, 4);
        if (dk != 0 && d > INT64_MAX / 16 / dk) {
            diag_fail(e, "%s: IDX dimensions too large", name);
            return NULL;
        }
        d *= dk;
    }
    if (!io_dim_agrees(name, "rows", rows, n, e) || !io_dim_agrees(name, "columns", cols, d, e))
        return NULL;
    if (!io_check_dims(n, d, name, e))
        return NULL;
    uint64_t cells = (uint64_t)n * (uint64_t)d, need = cells * (uint64_t)esz;
    if (len - hdr != need) {
        diag_fail(e, "%s: expected %llu bytes of IDX data, found %llu", name, (unsigned long long)need,
                (unsigned long long)(len - hdr));
        return NULL;
    }
    Matrix *m = io_matrix_raw(n, d, name, e);
    if (!m)
        return NULL;
    const unsigned char *p = u + hdr;
    double *dst = m->data;
    switch (type) {
    case 0x08:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = p[k];
        break;
    case 0x09:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (signed char)p[k];
        break;
    case 0x0B:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (int16_t)(uint16_t)load_be(p + 2 * k, 2);
        break;
    case 0x0C:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (int32_t)(uint32_t)load_be(p + 4 * k, 4);
        break;
    case 0x0D:
        for (uint64_t k = 0; k < cells; k++) {
            uint32_t bits = (uint32_t)load_be(p + 4 * k, 4);
            float f;
            memcpy(&f, &bits, 4);
            dst[k] = f;
        }
        break;
    default:
        for (uint64_t k = 0; k < cells; k++) {
            uint64_t bits = load_be(p + 8 * k, 8);
            memcpy(&dst[k], &bits, 8);
        }
        break;
    }
    return m;
}
