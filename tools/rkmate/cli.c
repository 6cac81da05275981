/* cli.c — shared CLI helpers: error reporting, exit codes, value parsing. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

int cli_exit_code(rk_status st) {
    switch (st) {
    case RK_OK: return CLI_OK;
    case RK_EINPUT: return CLI_BADINPUT;
    case RK_EINFEASIBLE: return CLI_INFEASIBLE;
    default: return CLI_FAIL;
    }
}

int cli_report(const char *cmd, rk_status st, const rk_error *err) {
    fprintf(stderr, "rkmate %s: %s\n", cmd, err && err->msg[0] ? err->msg : "failed");
    return cli_exit_code(st);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "rkmate %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return CLI_BADINPUT;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        cli_usage_error(cmd, "%s: expected an integer in [%ld, %ld], got '%s'", opt, lo, hi, text);
        return 1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *text, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi) {
        cli_usage_error(cmd, "%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, text);
        return 1;
    }
    *out = v;
    return 0;
}

int cli_parse_bytes(const char *cmd, const char *opt, const char *text, int64_t *out) {
    rk_error err;
    if (rk_parse_bytes(text, out, &err) != RK_OK) {
        cli_usage_error(cmd, "%s: %s", opt, err.msg);
        return 1;
    }
    return 0;
}

int cli_progress_wanted(int quiet) { return !quiet && isatty(2); }

#include <sys/stat.h>
int cli_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) || stat(b, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int cli_check_output(const char *cmd, const char *out, const char *const *inputs, int n) {
    for (int i = 0; i < n; i++)
        if (inputs[i] && cli_same_file(out, inputs[i])) {
            cli_usage_error(cmd, "refusing to write the output over the input file '%s'", inputs[i]);
            return 1;
        }
    return 0;
}
