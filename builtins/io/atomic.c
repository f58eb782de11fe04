/* SPDX-License-Identifier: Apache-2.0
 * Atomic replacement of files through a temporary in the same directory,
 * so a reader never sees a half-written file. */
#include "internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process umask, read without changing it: umask(2) both reads and
 * sets, which would race with other threads creating files. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return mask;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Umask:", 6) == 0) {
            mask = (mode_t)strtoul(line + 6, NULL, 8);
            break;
        }
    fclose(f);
    return mask;
}

bool io_tmp_open(const char *path, IoTmp *t, DiagErr *e)
{
    char eb[64];
    t->f = NULL;
    t->tmp_path = NULL;
    size_t n = strlen(path);
    char *tmp = malloc(n + 12);
    if (!tmp)
        return diag_fail(e, "cannot write '%s': out of memory", path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmpXXXXXX", 11);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        free(tmp);
        return diag_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    /* mkstemp makes the file 0600; give it the mode open(2) would have. */
    (void)fchmod(fd, 0666 & ~current_umask());
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int err = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return diag_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    t->f = f;
    t->tmp_path = tmp;
    return true;
}

void io_tmp_abort(IoTmp *t)
{
    if (t->f)
        fclose(t->f);
    if (t->tmp_path) {
        unlink(t->tmp_path);
        free(t->tmp_path);
    }
    t->f = NULL;
    t->tmp_path = NULL;
}

bool io_tmp_close(IoTmp *t, const char *path, DiagErr *e)
{
    char eb[64];
    errno = 0;
    bool ok = fflush(t->f) == 0 && !ferror(t->f);
    int err = errno;
    if (fclose(t->f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    t->f = NULL;
    if (!ok) {
        io_tmp_abort(t);
        return diag_fail(e, "cannot write '%s': %s", path, io_strerror(err ? err : EIO, eb, sizeof eb));
    }
    return true;
}

bool io_tmp_rename(IoTmp *t, const char *path, DiagErr *e)
{
    char eb[64];
    if (rename(t->tmp_path, path) != 0) {
        int err = errno;
        io_tmp_abort(t);
        return diag_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    free(t->tmp_path);
    t->tmp_path = NULL;
    return true;
}

bool io_tmp_commit(IoTmp *t, const char *path, DiagErr *e)
{
    return io_tmp_close(t, path, e) && io_tmp_rename(t, path, e);
}
