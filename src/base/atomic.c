/* atomic.c — atomic file writing: a temporary file in the target's folder,
 * fsync, then rename, so readers never see a partial file. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rk_base.h"

/* A name, not a folder: then the temporary file beside it (*tmp, the caller
 * frees it; *fd open), as the writer and the check make it. */
static rk_status open_temporary(const char *path, char **tmp, int *fd, rk_error *err) {
    *tmp = NULL;
    if (!path || !*path) return rk_fail(err, RK_EINPUT, "no output file name given");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return rk_fail(err, RK_EINPUT, "%s: is a directory, expected a file name", path);
    size_t n = strlen(path);
    *tmp = malloc(n + 16);
    if (!*tmp) return rk_fail(err, RK_ENOMEM, "out of memory");
    snprintf(*tmp, n + 16, "%s.tmpXXXXXX", path);
    *fd = mkstemp(*tmp);
    if (*fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        return rk_fail(err, RK_EINPUT, "%s: cannot create a file there: %s", path, strerror(e));
    }
    return RK_OK;
}

rk_status rk_check_output_file(const char *path, rk_error *err) {
    char *tmp;
    int fd;
    rk_status r = open_temporary(path, &tmp, &fd, err);
    if (r) return r;
    close(fd);
    unlink(tmp);
    free(tmp);
    return RK_OK;
}

rk_status rk_write_file_atomic(const char *path, const void *data, size_t len, rk_error *err) {
    char *tmp;
    int fd;
    rk_status r = open_temporary(path, &tmp, &fd, err);
    if (r) return r;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            return rk_fail(err, RK_EFAIL, "%s: write failed: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return rk_fail(err, RK_EFAIL, "%s: write failed: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return rk_fail(err, RK_EFAIL, "%s: cannot write: %s", path, strerror(e));
    }
    free(tmp);
    return RK_OK;
}
