/* rk_base.h — public API of the base layer every module of rkmate stands on:
 * status codes and error messages, the log callback, atomic file writing, byte
 * quantities with units, the export macro and the version.
 *
 * Conventions (shared by every module of rkmate):
 *  - sizes are bytes (int64_t); times are microseconds (double);
 *  - library calls return an rk_status and fill an rk_error; they never exit,
 *    and they print only through an rk_log the caller may set (default: stderr);
 *  - no global state: every object is owned by the caller.
 */
#ifndef RK_BASE_H
#define RK_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RK_API marks the functions of the public API: the library is built with
 * -fvisibility=hidden, so nothing else is exported from librkmate.so. */
#if defined(__GNUC__) && defined(RK_BUILDING_LIBRARY)
#define RK_API __attribute__((visibility("default")))
#else
#define RK_API
#endif

#define RKMATE_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum {
    RK_OK = 0,
    RK_EFAIL = 1,    /* a failure that is not the input's fault */
    RK_EINPUT = 2,   /* the user's input is bad (file, value, schedule) */
    RK_ENOMEM = 3,   /* out of memory */
    RK_EINFEASIBLE = 4 /* no schedule fits the budget */
} rk_status;

typedef struct {
    char msg[1024];
} rk_error;

/* Fill err->msg with printf-style text; returns `code` for `return rk_fail(...)`. */
RK_API rk_status rk_fail(rk_error *err, rk_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------------- log */

/* Progress and verbose lines of a long solve go through an rk_log that the
 * caller puts in the solver's parameters (as HiGHS's log callback or GLPK's
 * glp_term_hook).  `fn` receives one line at a time, without its newline;
 * fn == NULL (the default) prints the line and a newline on stderr.  Pass
 * rk_log_silent as fn to drop every line. */
typedef enum { RK_LOG_INFO = 0, RK_LOG_DETAIL = 1, RK_LOG_WARNING = 2 } rk_log_level;
typedef void (*rk_log_fn)(void *user, rk_log_level level, const char *line);
typedef struct {
    rk_log_fn fn;
    void *user;
} rk_log;

/* A log function that drops everything. */
RK_API void rk_log_silent(void *user, rk_log_level level, const char *line);
/* Format one line and hand it to `log` (NULL log: stderr). */
RK_API void rk_log_printf(const rk_log *log, rk_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------ files */

/* Atomic file writing for any module: write `len` bytes to `path` via a
 * temporary file in the same folder, fsync and rename, so that readers never
 * see a partial file. */
RK_API rk_status rk_write_file_atomic(const char *path, const void *data, size_t len, rk_error *err);
/* Whether rk_write_file_atomic could write path now (a name, not a folder,
 * in a folder where a file can be made: a temporary file is made there and
 * removed), with its messages; before long work whose result goes there. */
RK_API rk_status rk_check_output_file(const char *path, rk_error *err);

/* --------------------------------------------------------------- units */

/* Parse "800MB", "1.5GiB", "12345", "64k" into bytes.  Decimal units (kB, MB,
 * GB, TB, also k/M/G/T) are powers of 1000; binary (KiB, MiB, GiB, TiB) of
 * 1024; "B" is bytes.  RK_EINPUT on bad text. */
RK_API rk_status rk_parse_bytes(const char *text, int64_t *out, rk_error *err);
/* Format bytes for humans ("1.50 GiB"); buf of at least 32. */
RK_API const char *rk_format_bytes(int64_t bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
