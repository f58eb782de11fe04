/* SPDX-License-Identifier: Apache-2.0
 * paramserv checkpoints (upstream accepts 'checkpointing' but never wrote
 * one). File layout, little-endian:
 *   "DMLPSCK1"  int64 epochs_done  int64 n  then n x (int64 rows, int64 cols,
 *   rows*cols doubles)
 * Written to a temporary in the same folder, then renamed over the old
 * checkpoint, so a crash mid-write never leaves a broken file behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps.h"

static const char MAGIC[8] = {'D', 'M', 'L', 'P', 'S', 'C', 'K', '1'};

Status ps_ckpt_write(Interp *I, const char *path, const List *model, int64_t epochs_done)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp)
        return err_set(I, "out of memory");
    snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        Status st = err_set(I, "paramserv: cannot write checkpoint '%s': %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    FILE *f = fdopen(fd, "wb");
    bool ok = f != NULL;
    int64_t n = model->n;
    ok = ok && fwrite(MAGIC, 1, 8, f) == 8 && fwrite(&epochs_done, 8, 1, f) == 1 && fwrite(&n, 8, 1, f) == 1;
    for (int64_t i = 0; ok && i < n; i++) {
        const Matrix *m = model->items[i].m;
        size_t len = (size_t)mat_len(m);
        ok = fwrite(&m->rows, 8, 1, f) == 1 && fwrite(&m->cols, 8, 1, f) == 1 &&
             (len == 0 || fwrite(m->data, sizeof(double), len, f) == len);
    }
    if (f) {
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
    } else
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        Status st = err_set(I, "paramserv: cannot write checkpoint '%s': %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        free(tmp);
        return st;
    }
    free(tmp);
    return ST_OK;
}

Status ps_ckpt_read(Interp *I, const char *path, const List *like, Value *model, int64_t *epochs_done, bool *found)
{
    *found = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return ST_OK;
        return err_set(I, "paramserv: cannot open checkpoint '%s': %s", path, strerror(errno));
    }
    char magic[8];
    int64_t done = 0, n = 0;
    List *l = NULL;
    Status st = ST_OK;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 8) != 0 || fread(&done, 8, 1, f) != 1 ||
        fread(&n, 8, 1, f) != 1 || done < 0) {
        st = err_set(I, "paramserv: '%s' is not a paramserv checkpoint", path);
        goto out;
    }
    if (n != like->n) {
        st = err_set(I, "paramserv: checkpoint '%s' holds %lld matrices but the model has %lld (delete it to start "
                     "over)", path, (long long)n, (long long)like->n);
        goto out;
    }
    l = list_new(n, like->names != NULL);
    if (!l) {
        st = err_set(I, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r, c;
        const Matrix *want = like->items[i].m;
        if (fread(&r, 8, 1, f) != 1 || fread(&c, 8, 1, f) != 1 || r != want->rows || c != want->cols) {
            st = err_set(I, "paramserv: checkpoint '%s' does not match the model (matrix %lld should be %lldx%lld; "
                         "delete the file to start over)", path, (long long)i + 1, (long long)want->rows,
                         (long long)want->cols);
            goto out;
        }
        Matrix *m = mat_alloc(I, r, c);
        if (!m) {
            st = ST_ERR;
            goto out;
        }
        size_t len = (size_t)(r * c);
        if (len && fread(m->data, sizeof(double), len, f) != len) {
            val_release(val_matrix_take(m));
            st = err_set(I, "paramserv: checkpoint '%s' is truncated", path);
            goto out;
        }
        list_push_take(l, val_matrix_take(m), like->names ? like->names[i]->s : NULL);
    }
    *model = val_list_take(l);
    l = NULL;
    *epochs_done = done;
    *found = true;
out:
    if (l)
        val_release(val_list_take(l));
    fclose(f);
    return st;
}
