/* solution_io.c — owns solution files of the MILP solver: `name value`
 * lines, one column a line (what `rkmate milp -o` writes and what the
 * debug-solution mode reads).  Reading names every error by file, line and
 * what was expected; writing is atomic. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp_internal.h"

/* Open-addressing table from column names to indices. */
typedef struct {
    unsigned cap; /* power of two */
    int *slot;    /* index + 1, 0 = empty */
} sol_names;

static unsigned sol_hash(const char *s, size_t len) {
    unsigned h = 2166136261u;
    for (size_t k = 0; k < len; k++) h = (h ^ (unsigned char)s[k]) * 16777619u;
    return h;
}

static int sol_names_build(sol_names *t, const rk_lp *lp) {
    t->cap = 64;
    while (t->cap < 2u * (unsigned)lp->n + 2) t->cap *= 2;
    t->slot = calloc(t->cap, sizeof *t->slot);
    if (!t->slot) return -1;
    for (int j = 0; j < lp->n; j++) {
        const char *nm = rk_lp_col_name(lp, j);
        unsigned h = sol_hash(nm, strlen(nm)) & (t->cap - 1);
        while (t->slot[h]) h = (h + 1) & (t->cap - 1);
        t->slot[h] = j + 1;
    }
    return 0;
}

static int sol_names_find(const sol_names *t, const rk_lp *lp, const char *s, size_t len) {
    unsigned h = sol_hash(s, len) & (t->cap - 1);
    while (t->slot[h]) {
        int j = t->slot[h] - 1;
        const char *nm = rk_lp_col_name(lp, j);
        if (strlen(nm) == len && memcmp(nm, s, len) == 0) return j;
        h = (h + 1) & (t->cap - 1);
    }
    return -1;
}

static char *sol_slurp(const char *path, size_t *len, rk_error *err, rk_status *st) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        *st = rk_fail(err, RK_EINPUT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf) {
        *st = rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (rerr) {
        free(buf);
        *st = rk_fail(err, RK_EINPUT, "%s: read error", path);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

rk_status rk_milp_read_solution(const char *path, const rk_lp *lp, double **x, rk_error *err) {
    *x = NULL;
    rk_status st = RK_OK;
    size_t len;
    char *buf = sol_slurp(path, &len, err, &st);
    if (!buf) return st;
    sol_names t = {0};
    double *v = calloc((size_t)(lp->n ? lp->n : 1), sizeof *v);
    char *seen = calloc((size_t)(lp->n ? lp->n : 1), 1);
    if (!v || !seen || sol_names_build(&t, lp)) {
        st = rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if (memchr(buf, 0, len)) {
        st = rk_fail(err, RK_EINPUT, "%s: a binary file, expected 'name value' lines", path);
        goto done;
    }
    char *p = buf;
    for (long line = 1; *p; line++) {
        char *eol = strchr(p, '\n');
        if (eol) *eol = 0;
        char *s = p;
        p = eol ? eol + 1 : p + strlen(p);
        while (*s == ' ' || *s == '\t' || *s == '\r') s++;
        if (!*s || *s == '#') continue;
        char *ne = s;
        while (*ne && *ne != ' ' && *ne != '\t' && *ne != '\r') ne++;
        size_t nlen = (size_t)(ne - s);
        char *vs = ne;
        while (*vs == ' ' || *vs == '\t') vs++;
        if (!*vs || *vs == '\r') {
            st = rk_fail(err, RK_EINPUT, "%s:%ld: expected 'name value', found only '%.*s'", path, line, (int)nlen, s);
            goto done;
        }
        char *end;
        errno = 0;
        double val = strtod(vs, &end);
        while (*end == ' ' || *end == '\t' || *end == '\r') end++;
        if (end == vs || *end || errno == ERANGE || !isfinite(val)) {
            st = rk_fail(err, RK_EINPUT, "%s:%ld: expected a finite number as the value of %.*s, found '%s'", path, line,
                         (int)nlen, s, vs);
            goto done;
        }
        int j = sol_names_find(&t, lp, s, nlen);
        if (j < 0 && nlen == 9 && (strncmp(s, "Objective", 9) == 0 || strncmp(s, "objective", 9) == 0))
            continue; /* an objective line (SCIP's, HiGHS's), unless a column has that name */
        if (j < 0) {
            st = rk_fail(err, RK_EINPUT, "%s:%ld: no column named '%.*s' in the problem", path, line, (int)nlen, s);
            goto done;
        }
        if (seen[j]) {
            st = rk_fail(err, RK_EINPUT, "%s:%ld: column %.*s is given twice", path, line, (int)nlen, s);
            goto done;
        }
        seen[j] = 1;
        v[j] = val;
    }
done:
    free(t.slot);
    free(seen);
    free(buf);
    if (st == RK_OK) *x = v;
    else free(v);
    return st;
}

rk_status rk_milp_write_solution(const char *path, const rk_lp *lp, const double *x, rk_error *err) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) return rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    for (int j = 0; j < lp->n; j++) {
        const char *name = rk_lp_col_name(lp, j);
        double v = x[j];
        if (v == 0) v = 0; /* no "-0" */
        size_t need = strlen(name) + 40;
        if (len + need >= cap) {
            while (len + need >= cap) cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s %.17g\n", name, v);
    }
    rk_status st = rk_write_file_atomic(path, buf, len, err);
    free(buf);
    return st;
}
