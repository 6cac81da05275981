/* units.c — byte quantities with units: parsing ("800MB", "1.5GiB") and
 * formatting for humans. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rk_base.h"

rk_status rk_parse_bytes(const char *text, int64_t *out, rk_error *err) {
    if (!text || !*text)
        return rk_fail(err, RK_EINPUT, "expected a size like 800MB, 1.5GiB or 123456 (bytes), got an empty value");
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '-' || *p == '+')
        return rk_fail(err, RK_EINPUT, "'%s': a size cannot be signed", text);
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || errno || !isfinite(v) || v < 0)
        return rk_fail(err, RK_EINPUT, "'%s': expected a number of bytes, optionally with a unit (B, kB, MB, GB, KiB, MiB, GiB)", text);
    while (isspace((unsigned char)*end)) end++;
    static const struct { const char *u; double f; } units[] = {
        {"", 1}, {"b", 1},
        {"k", 1e3}, {"kb", 1e3}, {"m", 1e6}, {"mb", 1e6}, {"g", 1e9}, {"gb", 1e9}, {"t", 1e12}, {"tb", 1e12},
        {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
        {"ki", 1024.0}, {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcasecmp(end, units[i].u)) {
            double b = v * units[i].f;
            if (b > 9.2e18)
                return rk_fail(err, RK_EINPUT, "'%s': too large", text);
            double r = floor(b + 0.5);
            if (fabs(b - r) > 1e-6 * (b > 1 ? b : 1) && units[i].f == 1)
                return rk_fail(err, RK_EINPUT, "'%s': a number of bytes must be whole", text);
            *out = (int64_t)r;
            return RK_OK;
        }
    }
    return rk_fail(err, RK_EINPUT, "'%s': unknown unit '%s' (expected B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", text, end);
}

const char *rk_format_bytes(int64_t bytes, char *buf, size_t n) {
    double b = (double)bytes;
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double a = fabs(b);
    while (a >= 1024.0 && i < 4) {
        a /= 1024.0;
        b /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%lld B", (long long)bytes);
    else
        snprintf(buf, n, "%.2f %s", b, u[i]);
    return buf;
}
