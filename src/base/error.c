/* error.c — rk_error filling and the log callback's default (stderr). */
#include <stdarg.h>
#include <stdio.h>

#include "rk_base.h"

rk_status rk_fail(rk_error *err, rk_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void rk_log_silent(void *user, rk_log_level level, const char *line) {
    (void)user;
    (void)level;
    (void)line;
}

void rk_log_printf(const rk_log *log, rk_log_level level, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (log && log->fn) {
        log->fn(log->user, level, line);
        return;
    }
    fprintf(stderr, "%s\n", line);
}
