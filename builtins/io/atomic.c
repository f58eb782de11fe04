/* SPDX-License-Identifier: Apache-2.0
 * Atomic replacement of files through a temporary in the same directory,
 * so a reader never sees a half-written file. */
/* nftw and FTW_DEPTH are XSI: ask for them whatever flags the build passes
 * (the fuzz targets compile this file without pkg-config's -D flags). */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process umask (io_formats.h), read without changing it: umask(2) both reads and
 * sets, which would race with other threads creating files. */
mode_t io_current_umask(void)
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

/* "<path>.tmp<pid>.XXXXXX" (malloc'd; NULL when out of memory): the pid
 * tells a temporary whose writer is gone from one being written. */
static char *tmp_name(const char *path)
{
    size_t n = strlen(path) + 40;
    char *tmp = malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp%ld.XXXXXX", path, (long)getpid());
    return tmp;
}

/* The pid in 'name' when it is "<base>.tmp<pid>.XXXXXX", else 0. */
static long tmp_owner(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp", 4) != 0)
        return 0;
    const char *p = name + bl + 4;
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || pid <= 0 || *end != '.' || strlen(end + 1) != 6)
        return 0;
    return pid;
}

/* Contract in io_formats.h. */
void io_remove_stale_tmps(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    DIR *d = dir ? opendir(dir) : NULL;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            long pid = tmp_owner(de->d_name, base);
            /* a live process's temporary may be being written right now */
            if (pid == 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
                continue;
            size_t len = strlen(dir) + strlen(de->d_name) + 2;
            char *full = malloc(len);
            if (full) {
                snprintf(full, len, "%s/%s", dir, de->d_name);
                io_remove_tree(full);
                free(full);
            }
        }
        closedir(d);
    }
    free(dir);
}

bool io_tmp_open(const char *path, IoTmp *t, DiagErr *e)
{
    char eb[64];
    t->f = NULL;
    t->tmp_path = NULL;
    io_remove_stale_tmps(path);
    char *tmp = tmp_name(path);
    if (!tmp)
        return diag_fail(e, "cannot write '%s': out of memory", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        free(tmp);
        return diag_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    /* mkstemp makes the file 0600; give it the mode open(2) would have. */
    (void)fchmod(fd, 0666 & ~io_current_umask());
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

/* A fresh name "<path><suffix>XXXXXX" that nothing holds (malloc'd), made
 * as an empty folder by mkdtemp so no other writer can take it; NULL with
 * errno set on failure. */
static char *fresh_dir(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    char *p = malloc(n + k + 7);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(p, path, n);
    memcpy(p + n, suffix, k);
    memcpy(p + n + k, "XXXXXX", 7);
    if (!mkdtemp(p)) {
        int err = errno;
        free(p);
        errno = err;
        return NULL;
    }
    return p;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(p) : unlink(p)) == 0 || errno == ENOENT ? 0 : -1;
}

/* Contract in io_formats.h. */
bool io_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) == 0;
    /* depth first, links not followed; nftw walks without recursion limits
     * of ours (its own depth is bounded by the file system's) */
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

/* Contract in io_formats.h. */
bool io_commit_pair(IoTmp *data, const char *path, IoTmp *meta, const char *mtd_path, DiagErr *e)
{
    char eb[64];
    if (!io_tmp_close(data, path, e)) {
        io_tmp_abort(meta);
        return false;
    }
    if (!io_tmp_close(meta, mtd_path, e)) {
        io_tmp_abort(data);
        return false;
    }
    /* The old data file stays reachable under a second name until the
     * metadata is in place, so that a failure then can put it back. */
    char *bak = NULL;
    struct stat st;
    /* (a link of the old name itself: a symbolic link is kept as one) */
    bool old_file = lstat(path, &st) == 0 && !S_ISDIR(st.st_mode);
    if (old_file) {
        bak = malloc(strlen(path) + 12);
        if (bak) {
            strcpy(bak, path);
            strcat(bak, ".oldXXXXXX");
            int fd = mkstemp(bak);
            if (fd < 0 || (close(fd), unlink(bak) != 0) || link(path, bak) != 0) {
                int err = errno;
                free(bak);
                io_tmp_abort(data);
                io_tmp_abort(meta);
                return diag_fail(e, "cannot write '%s': cannot keep the old file while replacing it: %s", path,
                                 io_strerror(err, eb, sizeof eb));
            }
        }
    }
    if (!bak && old_file) {
        io_tmp_abort(data);
        io_tmp_abort(meta);
        return diag_fail(e, "cannot write '%s': out of memory", path);
    }
    bool had_old = bak != NULL;
    if (!io_tmp_rename(data, path, e)) {
        io_tmp_abort(meta);
        if (bak)
            unlink(bak);
        free(bak);
        return false;
    }
    bool ok = io_tmp_rename(meta, mtd_path, e);
    if (!ok) {
        /* put the old data back (or take the new away): all or nothing */
        if (had_old)
            (void)rename(bak, path);
        else
            (void)unlink(path);
    } else if (bak) {
        unlink(bak);
    }
    free(bak);
    return ok;
}

/* Contract in io_formats.h. */
char *io_tmp_dir_open(const char *path, DiagErr *e)
{
    char eb[64];
    io_remove_stale_tmps(path);
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp%ld.", (long)getpid());
    char *d = fresh_dir(path, suffix);
    if (!d)
        diag_fail(e, "cannot write '%s': %s", path, io_strerror(errno, eb, sizeof eb));
    else
        (void)chmod(d, 0777 & ~io_current_umask());
    return d;
}

/* Contract in io_formats.h. */
bool io_commit_dir(char *tmp_dir, const char *path, IoTmp *meta, const char *mtd_path, DiagErr *e)
{
    char eb[64];
    bool ok = false;
    char *old = NULL;
    struct stat st;
    if (!io_tmp_close(meta, mtd_path, e))
        goto out;
    if (lstat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            diag_fail(e, "cannot write a list to '%s': it exists and is not a folder", path);
            goto out;
        }
        /* the old folder moves aside (onto an empty folder of a fresh
         * name, which rename replaces) until the new one is in place */
        old = fresh_dir(path, ".old");
        if (!old || rename(path, old) != 0) {
            diag_fail(e, "cannot write '%s': %s", path, io_strerror(errno, eb, sizeof eb));
            if (old)
                rmdir(old);
            free(old);
            old = NULL;
            goto out;
        }
    }
    if (rename(tmp_dir, path) != 0) {
        diag_fail(e, "cannot write '%s': %s", path, io_strerror(errno, eb, sizeof eb));
        if (old)
            (void)rename(old, path);
        goto out;
    }
    if (!io_tmp_rename(meta, mtd_path, e)) {
        /* the new folder goes back to its temporary name, the old returns */
        (void)rename(path, tmp_dir);
        if (old)
            (void)rename(old, path);
        goto out;
    }
    ok = true;
    if (old)
        io_remove_tree(old);
out:
    io_tmp_abort(meta);
    if (!ok)
        io_remove_tree(tmp_dir);
    free(old);
    free(tmp_dir);
    return ok;
}
