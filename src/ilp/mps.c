/* mps.c — owns the MPS file format: rk_mps_read (fixed and free MPS, gzip
 * read transparently through zlib) and rk_mps_write (free MPS, written
 * atomically, full precision so that it reads back identically).
 *
 * Reader rules (the MPS standard as CPLEX, HiGHS and MIPLIB use it):
 *  - sections NAME, OBJSENSE/OBJSENS (MIN/MAX, same line or next), ROWS,
 *    COLUMNS, RHS, RANGES, BOUNDS, ENDATA; '*' lines are comments;
 *  - the first N row is the objective; further N rows are kept as free rows;
 *  - fields are separated by white space (free MPS); a line that does not
 *    parse that way is retried with the fixed-MPS columns (names with spaces);
 *  - the RHS of the objective row is minus the objective constant;
 *  - RANGES: E row R>0 -> [rhs, rhs+R], R<0 -> [rhs+R, rhs]; L row ->
 *    [rhs-|R|, rhs]; G row -> [rhs, rhs+|R|];
 *  - BOUNDS UP/LO/FX/FR/MI/PL/BV/LI/UI; UP with a negative value on a column
 *    whose lower bound was not set makes the lower bound -inf; |v| >= 1e30
 *    is infinite;
 *  - columns between MARKER INTORG and INTEND are integer; an integer column
 *    with no BOUNDS entry at all is binary ([0,1], the MIPLIB convention);
 *  - only the first RHS / RANGES / BOUNDS set is used. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lp_internal.h"

#define MPS_INF 1e30

static char *mps_strdup(const char *s) {
    size_t l = strlen(s) + 1;
    char *d = malloc(l);
    if (d) memcpy(d, s, l);
    return d;
}

/* ------------------------------------------------------------ name table */

typedef struct {
    int cap;       /* power of two */
    int *slot;     /* index+1, 0 = empty */
    char **names;  /* borrowed */
} mps_table;

static unsigned mps_hash(const char *s) {
    unsigned h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static int mps_table_find(const mps_table *t, char **names, const char *s) {
    if (!t->cap) return -1;
    unsigned m = (unsigned)t->cap - 1, h = mps_hash(s) & m;
    while (t->slot[h]) {
        int i = t->slot[h] - 1;
        if (strcmp(names[i], s) == 0) return i;
        h = (h + 1) & m;
    }
    return -1;
}

/* Insert index i (names[i] set) ; n = number of names after insertion. */
static int mps_table_insert(mps_table *t, char **names, int i, int n) {
    if (2 * n >= t->cap) {
        int nc = t->cap ? 2 * t->cap : 64;
        while (2 * n >= nc) nc *= 2;
        int *ns = calloc((size_t)nc, sizeof *ns);
        if (!ns) return -1;
        for (int k = 0; k < t->cap; k++)
            if (t->slot[k]) {
                unsigned h = mps_hash(names[t->slot[k] - 1]) & (unsigned)(nc - 1);
                while (ns[h]) h = (h + 1) & (unsigned)(nc - 1);
                ns[h] = t->slot[k];
            }
        free(t->slot);
        t->slot = ns;
        t->cap = nc;
    }
    unsigned m = (unsigned)t->cap - 1, h = mps_hash(names[i]) & m;
    while (t->slot[h]) h = (h + 1) & m;
    t->slot[h] = i + 1;
    return 0;
}

/* ------------------------------------------------------------ reader state */

typedef struct {
    char *name;
    char type;        /* 'N', 'E', 'L', 'G' */
    double rhs, range;
    int has_range;
} mps_row;

typedef struct {
    char *name;
    double obj, lb, ub;
    int integer;
    int has_bound;    /* any BOUNDS entry */
    int lb_set;
} mps_col;

typedef struct {
    int row, col;
    double val;
} mps_entry;

typedef struct {
    const char *path;
    long line;
    rk_error *err;
    /* rows */
    mps_row *rows;
    char **row_names;
    int n_rows, cap_rows;
    mps_table row_tab;
    int obj_row;      /* -1 until the first N row */
    /* columns */
    mps_col *cols;
    char **col_names;
    int n_cols, cap_cols;
    mps_table col_tab;
    /* entries */
    mps_entry *ent;
    long n_ent, cap_ent;
    int *row_mark;    /* last column that set this row (duplicate check) */
    int cap_mark;
    int obj_mark;
    int in_int;
    int maximize;
    double obj_const;
    int obj_const_set;
    char *rhs_set, *range_set, *bound_set;
    rk_status st;     /* status of the last hard failure */
} mps_reader;

static void mps_reader_free(mps_reader *r) {
    for (int i = 0; i < r->n_rows; i++) free(r->rows[i].name);
    for (int j = 0; j < r->n_cols; j++) free(r->cols[j].name);
    free(r->rows);
    free(r->row_names);
    free(r->row_tab.slot);
    free(r->cols);
    free(r->col_names);
    free(r->col_tab.slot);
    free(r->ent);
    free(r->row_mark);
    free(r->rhs_set);
    free(r->range_set);
    free(r->bound_set);
}

static rk_status mps_oom(mps_reader *r) {
    r->st = RK_ENOMEM;
    return rk_fail(r->err, RK_ENOMEM, "%s: line %ld: out of memory", r->path, r->line);
}

#define MPS_FAIL(r, ...) mps_fail_at(r, __VA_ARGS__)
static rk_status mps_fail_at(mps_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static rk_status mps_fail_at(mps_reader *r, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->st = RK_EINPUT;
    return rk_fail(r->err, RK_EINPUT, "%s: line %ld: %s", r->path, r->line, msg);
}

static int mps_parse_number(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end) return -1;
    if (isnan(v)) return -1;
    if (errno == ERANGE && fabs(v) > 1) v = v > 0 ? INFINITY : -INFINITY;
    *out = v;
    return 0;
}

static double mps_inf(double v) {
    if (v >= MPS_INF) return INFINITY;
    if (v <= -MPS_INF) return -INFINITY;
    return v;
}

/* Split a line into whitespace-separated tokens (in place). */
static int mps_tokens(char *s, char **tok, int max) {
    int n = 0;
    while (*s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        if (n == max) return max + 1;
        tok[n++] = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = 0;
    }
    return n;
}

/* Fixed-MPS fields: columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61 (1-based).
 * Fills up to 6 fields (trimmed copies into buf), empty fields as "". */
static void mps_fixed_fields(const char *line, char fld[6][64]) {
    static const int beg[6] = {1, 4, 14, 24, 39, 49};
    static const int len[6] = {2, 8, 8, 12, 8, 12};
    size_t L = strlen(line);
    for (int f = 0; f < 6; f++) {
        fld[f][0] = 0;
        if ((size_t)beg[f] >= L) continue;
        int a = beg[f], b = beg[f] + len[f];
        if ((size_t)b > L) b = (int)L;
        /* the last numeric fields may run a little past the standard width */
        if (f == 3 || f == 5) {
            while ((size_t)b < L && !isspace((unsigned char)line[b])) b++;
        }
        while (a < b && isspace((unsigned char)line[a])) a++;
        while (b > a && isspace((unsigned char)line[b - 1])) b--;
        int n = b - a;
        if (n > 63) n = 63;
        memcpy(fld[f], line + a, (size_t)n);
        fld[f][n] = 0;
    }
}

static int mps_add_row(mps_reader *r, const char *name, char type) {
    if (r->n_rows == r->cap_rows) {
        int nc = r->cap_rows ? 2 * r->cap_rows : 64;
        mps_row *nr = realloc(r->rows, (size_t)nc * sizeof *nr);
        if (!nr) return -1;
        r->rows = nr;
        char **nn = realloc(r->row_names, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        r->row_names = nn;
        r->cap_rows = nc;
    }
    mps_row *row = &r->rows[r->n_rows];
    memset(row, 0, sizeof *row);
    row->name = mps_strdup(name);
    if (!row->name) return -1;
    row->type = type;
    r->row_names[r->n_rows] = row->name;
    r->n_rows++;
    if (mps_table_insert(&r->row_tab, r->row_names, r->n_rows - 1, r->n_rows)) return -1;
    return r->n_rows - 1;
}

static int mps_add_col(mps_reader *r, const char *name) {
    if (r->n_cols == r->cap_cols) {
        int nc = r->cap_cols ? 2 * r->cap_cols : 64;
        mps_col *ncs = realloc(r->cols, (size_t)nc * sizeof *ncs);
        if (!ncs) return -1;
        r->cols = ncs;
        char **nn = realloc(r->col_names, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        r->col_names = nn;
        r->cap_cols = nc;
    }
    mps_col *c = &r->cols[r->n_cols];
    memset(c, 0, sizeof *c);
    c->name = mps_strdup(name);
    if (!c->name) return -1;
    c->lb = 0;
    c->ub = INFINITY;
    c->integer = r->in_int;
    r->col_names[r->n_cols] = c->name;
    r->n_cols++;
    if (mps_table_insert(&r->col_tab, r->col_names, r->n_cols - 1, r->n_cols)) return -1;
    return r->n_cols - 1;
}

static int mps_add_entry(mps_reader *r, int row, int col, double v) {
    if (r->n_ent == r->cap_ent) {
        long nc = r->cap_ent ? 2 * r->cap_ent : 1024;
        mps_entry *ne = realloc(r->ent, (size_t)nc * sizeof *ne);
        if (!ne) return -1;
        r->ent = ne;
        r->cap_ent = nc;
    }
    r->ent[r->n_ent].row = row;
    r->ent[r->n_ent].col = col;
    r->ent[r->n_ent].val = v;
    r->n_ent++;
    return 0;
}

enum { SEC_NONE, SEC_NAME, SEC_OBJSENSE, SEC_ROWS, SEC_COLUMNS, SEC_RHS, SEC_RANGES, SEC_BOUNDS, SEC_END };

static const char *mps_section_expect(int sec) {
    switch (sec) {
    case SEC_ROWS: return "a row: type (N, E, L or G) and name";
    case SEC_COLUMNS: return "column name, then row name and value pairs (1 or 2), or a MARKER line";
    case SEC_RHS: return "[set name] row name and value (1 or 2 pairs)";
    case SEC_RANGES: return "[set name] row name and value (1 or 2 pairs)";
    case SEC_BOUNDS: return "bound type, [set name], column name and value";
    case SEC_OBJSENSE: return "MIN or MAX";
    default: return "a section name";
    }
}

/* ------------------------------------------------------------ records
 * Each returns 0 on success, 1 when the fields do not fit (the caller may
 * retry with fixed fields), or -1 after rk_fail (hard error). */

static int mps_rec_row(mps_reader *r, int n, char **f) {
    if (n != 2) return 1;
    const char *t = f[0];
    char type = (char)toupper((unsigned char)t[0]);
    if (t[1] || !(type == 'N' || type == 'E' || type == 'L' || type == 'G')) {
        MPS_FAIL(r, "unknown row type '%s' (expected N, E, L or G)", t);
        return -1;
    }
    if (mps_table_find(&r->row_tab, r->row_names, f[1]) >= 0) {
        MPS_FAIL(r, "duplicate row name '%s'", f[1]);
        return -1;
    }
    int i = mps_add_row(r, f[1], type);
    if (i < 0) { mps_oom(r); return -1; }
    if (type == 'N' && r->obj_row < 0) r->obj_row = i;
    return 0;
}

/* Check a (row, value) pair of COLUMNS: soft failure (1) when the row is
 * unknown or the value is not a number, so the caller may retry. */
static int mps_check_pair(mps_reader *r, const char *cname, const char *rname, const char *vtext, int *row,
                          double *v) {
    *row = mps_table_find(&r->row_tab, r->row_names, rname);
    if (*row < 0) {
        MPS_FAIL(r, "unknown row '%s' in COLUMNS (expected a row declared in ROWS)", rname);
        return 1;
    }
    if (mps_parse_number(vtext, v)) {
        MPS_FAIL(r, "expected a number for column '%s' row '%s', got '%s'", cname, rname, vtext);
        return 1;
    }
    return 0;
}

static int mps_set_coef(mps_reader *r, int col, int i, double v) {
    const char *rname = r->rows[i].name;
    if (!isfinite(v)) {
        MPS_FAIL(r, "coefficient of column '%s' row '%s' is not finite", r->cols[col].name, rname);
        return -1;
    }
    if (i >= r->cap_mark) {
        int nc = r->cap_mark ? r->cap_mark : 64;
        while (nc <= i) nc *= 2;
        int *nm = realloc(r->row_mark, (size_t)nc * sizeof *nm);
        if (!nm) { mps_oom(r); return -1; }
        for (int k = r->cap_mark; k < nc; k++) nm[k] = -1;
        r->row_mark = nm;
        r->cap_mark = nc;
    }
    if (r->row_mark[i] == col) {
        MPS_FAIL(r, "duplicate entry for column '%s' row '%s'", r->cols[col].name, rname);
        return -1;
    }
    r->row_mark[i] = col;
    if (i == r->obj_row) {
        r->cols[col].obj = v;
        return 0;
    }
    if (v == 0) return 0;
    if (mps_add_entry(r, i, col, v)) { mps_oom(r); return -1; }
    return 0;
}

static int mps_rec_column(mps_reader *r, int n, char **f, int *cur_col) {
    /* MARKER lines: name 'MARKER' 'INTORG'|'INTEND' */
    if (n == 3 && strcmp(f[1], "'MARKER'") == 0) {
        if (strcmp(f[2], "'INTORG'") == 0) r->in_int = 1;
        else if (strcmp(f[2], "'INTEND'") == 0) r->in_int = 0;
        else {
            MPS_FAIL(r, "unknown marker %s (expected 'INTORG' or 'INTEND')", f[2]);
            return -1;
        }
        return 0;
    }
    if (n != 3 && n != 5) return 1;
    int rows[2];
    double vals[2];
    for (int p = 0; 2 * p + 1 < n; p++)
        if (mps_check_pair(r, f[0], f[2 * p + 1], f[2 * p + 2], &rows[p], &vals[p])) return 2;
    int j;
    if (*cur_col >= 0 && strcmp(r->cols[*cur_col].name, f[0]) == 0) {
        j = *cur_col;
    } else {
        j = mps_table_find(&r->col_tab, r->col_names, f[0]);
        if (j >= 0) {
            MPS_FAIL(r, "column '%s' appears again after other columns (expected its entries to be contiguous)", f[0]);
            return -1;
        }
        j = mps_add_col(r, f[0]);
        if (j < 0) { mps_oom(r); return -1; }
        *cur_col = j;
    }
    for (int p = 0; 2 * p + 1 < n; p++)
        if (mps_set_coef(r, j, rows[p], vals[p])) return -1;
    return 0;
}

/* RHS / RANGES: [set] row value [row value] */
static int mps_rec_rhs_range(mps_reader *r, int n, char **f, int ranges) {
    int first;
    char **setp = ranges ? &r->range_set : &r->rhs_set;
    if (n == 2 || n == 4) first = 0;
    else if (n == 3 || n == 5) first = 1;
    else return 1;
    const char *what = ranges ? "RANGES" : "RHS";
    int rows[2];
    double vals[2];
    int np = 0;
    for (int p = first; p + 1 < n; p += 2, np++) {
        rows[np] = mps_table_find(&r->row_tab, r->row_names, f[p]);
        if (rows[np] < 0) {
            MPS_FAIL(r, "unknown row '%s' in %s (expected a row declared in ROWS)", f[p], what);
            return 2;
        }
        if (mps_parse_number(f[p + 1], &vals[np])) {
            MPS_FAIL(r, "expected a number for row '%s' in %s, got '%s'", f[p], what, f[p + 1]);
            return 2;
        }
    }
    if (first) {
        if (!*setp) {
            *setp = mps_strdup(f[0]);
            if (!*setp) { mps_oom(r); return -1; }
        } else if (strcmp(*setp, f[0]) != 0) {
            return 0; /* a later set: ignored */
        }
    }
    for (int p = 0; p < np; p++) {
        int i = rows[p];
        double v = vals[p];
        if (ranges) {
            if (r->rows[i].type == 'N') continue;
            if (r->rows[i].has_range) {
                MPS_FAIL(r, "duplicate range for row '%s'", r->rows[i].name);
                return -1;
            }
            if (!isfinite(v)) {
                MPS_FAIL(r, "range of row '%s' is not finite", r->rows[i].name);
                return -1;
            }
            r->rows[i].range = v;
            r->rows[i].has_range = 1;
        } else if (i == r->obj_row) {
            r->obj_const = -v;
            r->obj_const_set = 1;
        } else {
            r->rows[i].rhs = v;
        }
    }
    return 0;
}

static int mps_rec_bound(mps_reader *r, int n, char **f) {
    if (n < 2 || n > 4) return 1;
    char type[4] = {0};
    if (strlen(f[0]) != 2) {
        MPS_FAIL(r, "unknown bound type '%s' (expected UP, LO, FX, FR, MI, PL, BV, LI or UI)", f[0]);
        return -1;
    }
    type[0] = (char)toupper((unsigned char)f[0][0]);
    type[1] = (char)toupper((unsigned char)f[0][1]);
    int needs_value;
    if (!strcmp(type, "UP") || !strcmp(type, "LO") || !strcmp(type, "FX") || !strcmp(type, "LI") ||
        !strcmp(type, "UI"))
        needs_value = 1;
    else if (!strcmp(type, "FR") || !strcmp(type, "MI") || !strcmp(type, "PL") || !strcmp(type, "BV"))
        needs_value = 0;
    else if (!strcmp(type, "SC")) {
        MPS_FAIL(r, "semi-continuous bounds (SC) are not supported");
        return -1;
    } else {
        MPS_FAIL(r, "unknown bound type '%s' (expected UP, LO, FX, FR, MI, PL, BV, LI or UI)", f[0]);
        return -1;
    }
    const char *set = NULL, *cname, *vtext = NULL;
    if (needs_value) {
        if (n == 4) { set = f[1]; cname = f[2]; vtext = f[3]; }
        else if (n == 3) { cname = f[1]; vtext = f[2]; }
        else {
            MPS_FAIL(r, "bound %s needs a value (expected type, [set name], column name and value)", type);
            return 2;
        }
    } else {
        if (n == 4) { set = f[1]; cname = f[2]; vtext = f[3]; }
        else if (n == 3) {
            /* "BV set col" or "BV col value" */
            if (mps_table_find(&r->col_tab, r->col_names, f[2]) >= 0) { set = f[1]; cname = f[2]; }
            else { cname = f[1]; vtext = f[2]; }
        } else cname = f[1];
    }
    if (set) {
        if (!r->bound_set) {
            r->bound_set = mps_strdup(set);
            if (!r->bound_set) { mps_oom(r); return -1; }
        } else if (strcmp(r->bound_set, set) != 0) {
            return 0;
        }
    }
    int j = mps_table_find(&r->col_tab, r->col_names, cname);
    if (j < 0) {
        MPS_FAIL(r, "unknown column '%s' in BOUNDS (expected a column declared in COLUMNS)", cname);
        return 2;
    }
    double v = 0;
    if (vtext && mps_parse_number(vtext, &v)) {
        MPS_FAIL(r, "expected a number for the %s bound of column '%s', got '%s'", type, cname, vtext);
        return 2;
    }
    v = mps_inf(v);
    mps_col *c = &r->cols[j];
    c->has_bound = 1;
    if (!strcmp(type, "UP") || !strcmp(type, "UI")) {
        if (v == -INFINITY) { MPS_FAIL(r, "upper bound of column '%s' is -infinity", cname); return -1; }
        c->ub = v;
        if (v < 0 && c->lb == 0 && !c->lb_set) c->lb = -INFINITY;
        if (type[1] == 'I') c->integer = 1;
    } else if (!strcmp(type, "LO") || !strcmp(type, "LI")) {
        if (v == INFINITY) { MPS_FAIL(r, "lower bound of column '%s' is +infinity", cname); return -1; }
        c->lb = v;
        c->lb_set = 1;
        if (type[1] == 'I') c->integer = 1;
    } else if (!strcmp(type, "FX")) {
        if (!isfinite(v)) { MPS_FAIL(r, "fixed value of column '%s' is not finite", cname); return -1; }
        c->lb = c->ub = v;
        c->lb_set = 1;
    } else if (!strcmp(type, "FR")) {
        c->lb = -INFINITY;
        c->ub = INFINITY;
        c->lb_set = 1;
    } else if (!strcmp(type, "MI")) {
        c->lb = -INFINITY;
        c->lb_set = 1;
    } else if (!strcmp(type, "PL")) {
        c->ub = INFINITY;
    } else { /* BV */
        c->lb = 0;
        c->ub = 1;
        c->lb_set = 1;
        c->integer = 1;
    }
    return 0;
}

static int mps_rec_objsense(mps_reader *r, const char *w) {
    char u[16];
    size_t k = 0;
    for (; w[k] && k < sizeof u - 1; k++) u[k] = (char)toupper((unsigned char)w[k]);
    u[k] = 0;
    if (!strcmp(u, "MAX") || !strcmp(u, "MAXIMIZE") || !strcmp(u, "MAXIMISE")) r->maximize = 1;
    else if (!strcmp(u, "MIN") || !strcmp(u, "MINIMIZE") || !strcmp(u, "MINIMISE")) r->maximize = 0;
    else {
        MPS_FAIL(r, "unknown objective sense '%s' (expected MIN or MAX)", w);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ line input */

typedef struct {
    gzFile gz;
    char *buf;
    size_t cap;
} mps_input;

/* Read one line (without the newline).  Returns 1 on a line, 0 at EOF,
 * -1 on error. */
static int mps_getline(mps_input *in) {
    size_t len = 0;
    if (!in->buf) {
        in->cap = 4096;
        in->buf = malloc(in->cap);
        if (!in->buf) return -1;
    }
    in->buf[0] = 0;
    for (;;) {
        if (!gzgets(in->gz, in->buf + len, (int)(in->cap - len))) {
            int e;
            gzerror(in->gz, &e);
            if (e != Z_OK && e != Z_STREAM_END) return -1;
            if (len == 0) return 0;
            break;
        }
        len += strlen(in->buf + len);
        if (len > 0 && in->buf[len - 1] == '\n') break;
        if (len + 1 < in->cap) {
            if (gzeof(in->gz)) break;
            continue;
        }
        size_t nc = in->cap * 2;
        char *nb = realloc(in->buf, nc);
        if (!nb) return -1;
        in->buf = nb;
        in->cap = nc;
    }
    while (len > 0 && (in->buf[len - 1] == '\n' || in->buf[len - 1] == '\r')) in->buf[--len] = 0;
    return 1;
}

static int mps_section_of(const char *w) {
    if (!strcmp(w, "NAME")) return SEC_NAME;
    if (!strcmp(w, "OBJSENSE") || !strcmp(w, "OBJSENS")) return SEC_OBJSENSE;
    if (!strcmp(w, "ROWS")) return SEC_ROWS;
    if (!strcmp(w, "COLUMNS")) return SEC_COLUMNS;
    if (!strcmp(w, "RHS")) return SEC_RHS;
    if (!strcmp(w, "RANGES")) return SEC_RANGES;
    if (!strcmp(w, "BOUNDS")) return SEC_BOUNDS;
    if (!strcmp(w, "ENDATA")) return SEC_END;
    return -1;
}

static int mps_section_order_ok(int prev, int next) {
    /* NAME, OBJSENSE?, ROWS, COLUMNS, RHS?, RANGES?, BOUNDS?, ENDATA */
    switch (next) {
    case SEC_NAME: return prev == SEC_NONE;
    case SEC_OBJSENSE: return prev == SEC_NONE || prev == SEC_NAME;
    case SEC_ROWS: return prev == SEC_NONE || prev == SEC_NAME || prev == SEC_OBJSENSE;
    case SEC_COLUMNS: return prev == SEC_ROWS;
    case SEC_RHS: return prev == SEC_COLUMNS;
    case SEC_RANGES: return prev == SEC_COLUMNS || prev == SEC_RHS;
    case SEC_BOUNDS: return prev == SEC_COLUMNS || prev == SEC_RHS || prev == SEC_RANGES;
    case SEC_END: return prev >= SEC_COLUMNS || prev == SEC_ROWS;
    }
    return 0;
}

static int mps_dispatch(mps_reader *r, int sec, int n, char **f, int *cur_col) {
    switch (sec) {
    case SEC_ROWS: return mps_rec_row(r, n, f);
    case SEC_COLUMNS: return mps_rec_column(r, n, f, cur_col);
    case SEC_RHS: return mps_rec_rhs_range(r, n, f, 0);
    case SEC_RANGES: return mps_rec_rhs_range(r, n, f, 1);
    case SEC_BOUNDS: return mps_rec_bound(r, n, f);
    case SEC_OBJSENSE:
        if (n != 1) return 1;
        return mps_rec_objsense(r, f[0]) ? -1 : 0;
    }
    return 1;
}

static rk_status mps_parse(mps_reader *r, mps_input *in) {
    int sec = SEC_NONE, cur_col = -1;
    char *tok[8];
    char fixed[6][64];
    char *ftok[6];
    char *copy = NULL;
    size_t copy_cap = 0;
    for (;;) {
        int g = mps_getline(in);
        if (g < 0) {
            free(copy);
            return rk_fail(r->err, RK_EINPUT, "%s: line %ld: read error (corrupt gzip data?)", r->path, r->line + 1);
        }
        if (g == 0) break;
        r->line++;
        char *line = in->buf;
        if (line[0] == '*' || line[0] == 0) continue;
        size_t L = strlen(line);
        if (L + 1 > copy_cap) {
            copy_cap = 2 * (L + 1);
            char *nc = realloc(copy, copy_cap);
            if (!nc) { free(copy); return mps_oom(r); }
            copy = nc;
        }
        memcpy(copy, line, L + 1);
        int n = mps_tokens(line, tok, 7);
        if (n == 0) continue;
        if (!isspace((unsigned char)copy[0])) {
            /* a section header */
            int s = mps_section_of(tok[0]);
            if (s < 0) {
                if (sec == SEC_OBJSENSE && n == 1 && mps_rec_objsense(r, tok[0]) == 0) continue;
                free(copy);
                return MPS_FAIL(r, "unknown section '%s' (expected NAME, OBJSENSE, ROWS, COLUMNS, RHS, RANGES, BOUNDS or ENDATA)", tok[0]);
            }
            if (!mps_section_order_ok(sec, s)) {
                free(copy);
                return MPS_FAIL(r, "section %s out of place (expected NAME, ROWS, COLUMNS, RHS, RANGES, BOUNDS, ENDATA in this order)", tok[0]);
            }
            sec = s;
            if (s == SEC_END) break;
            if (s == SEC_OBJSENSE && n >= 2) {
                if (n > 2 || mps_rec_objsense(r, tok[1])) {
                    free(copy);
                    if (n > 2) return MPS_FAIL(r, "expected OBJSENSE MIN or MAX");
                    return r->st;
                }
            } else if (s != SEC_NAME && !(s == SEC_RHS || s == SEC_RANGES || s == SEC_BOUNDS) && n > 1) {
                free(copy);
                return MPS_FAIL(r, "unexpected text after section name %s", tok[0]);
            }
            if (s == SEC_COLUMNS) cur_col = -1;
            continue;
        }
        if (sec == SEC_NONE || sec == SEC_NAME) {
            free(copy);
            return MPS_FAIL(r, "data line outside a section (expected ROWS first)");
        }
        int rc = n > 6 ? 1 : mps_dispatch(r, sec, n, tok, &cur_col);
        if (rc < 0) { free(copy); return r->st; }
        if (rc == 0) continue;
        /* retry with the fixed-MPS columns (names containing spaces) */
        rk_error saved = *r->err;
        mps_fixed_fields(copy, fixed);
        int fn = 0, same = 1;
        for (int k = 0; k < 6; k++)
            if (fixed[k][0]) ftok[fn++] = fixed[k];
        if (fn != n) same = 0;
        for (int k = 0; same && k < fn; k++)
            if (strcmp(ftok[k], tok[k])) same = 0;
        int rc2 = 1;
        if (!same && fn > 0) rc2 = mps_dispatch(r, sec, fn, ftok, &cur_col);
        if (rc2 == 0) continue;
        free(copy);
        if (rc2 < 0 && r->st == RK_ENOMEM) return RK_ENOMEM;
        *r->err = saved;
        if (rc == 1) return MPS_FAIL(r, "wrong number of fields (expected %s)", mps_section_expect(sec));
        return RK_EINPUT;
    }
    free(copy);
    if (sec != SEC_END) {
        r->line++;
        return MPS_FAIL(r, "unexpected end of file (expected ENDATA)");
    }
    if (r->n_rows == 0 && r->n_cols == 0 && r->obj_row < 0) {
        return MPS_FAIL(r, "ENDATA before any ROWS section (expected ROWS and COLUMNS)");
    }
    return RK_OK;
}

static int mps_cmp_entry(const void *a, const void *b) {
    const mps_entry *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return 0;
}

static rk_status mps_build(mps_reader *r, rk_lp **out) {
    rk_lp *lp = rk_lp_new();
    if (!lp) return mps_oom(r);
    int *row_id = malloc((size_t)(r->n_rows + 1) * sizeof *row_id);
    if (!row_id) { rk_lp_free(lp); return mps_oom(r); }
    for (int i = 0; i < r->n_rows; i++) {
        row_id[i] = -1;
        if (i == r->obj_row) continue;
        mps_row *w = &r->rows[i];
        double lb, ub, rhs = w->rhs;
        switch (w->type) {
        case 'E': lb = ub = rhs; break;
        case 'L': lb = -INFINITY; ub = rhs; break;
        case 'G': lb = rhs; ub = INFINITY; break;
        default: lb = -INFINITY; ub = INFINITY; break;
        }
        if (w->has_range && w->type != 'N') {
            double R = w->range;
            if (w->type == 'E') {
                if (R > 0) ub = rhs + R;
                else if (R < 0) lb = rhs + R;
            } else if (w->type == 'L') {
                lb = rhs - fabs(R);
            } else {
                ub = rhs + fabs(R);
            }
        }
        lb = mps_inf(lb);
        ub = mps_inf(ub);
        row_id[i] = rk_lp_add_row(lp, w->name, lb, ub);
        if (row_id[i] < 0) { free(row_id); rk_lp_free(lp); return mps_oom(r); }
    }
    for (int j = 0; j < r->n_cols; j++) {
        mps_col *c = &r->cols[j];
        double lb = c->lb, ub = c->ub;
        if (c->integer && !c->has_bound) { lb = 0; ub = 1; }
        if (rk_lp_add_col(lp, c->name, c->obj, lb, ub, c->integer) != j) {
            free(row_id);
            rk_lp_free(lp);
            return mps_oom(r);
        }
    }
    if (r->n_ent > 1) qsort(r->ent, (size_t)r->n_ent, sizeof *r->ent, mps_cmp_entry);
    int *cols = NULL;
    double *vals = NULL;
    if (r->n_ent) {
        cols = malloc((size_t)r->n_ent * sizeof *cols);
        vals = malloc((size_t)r->n_ent * sizeof *vals);
        if (!cols || !vals) { free(cols); free(vals); free(row_id); rk_lp_free(lp); return mps_oom(r); }
    }
    for (long k = 0; k < r->n_ent;) {
        long e = k;
        int i = r->ent[k].row;
        int cnt = 0;
        while (e < r->n_ent && r->ent[e].row == i) {
            cols[cnt] = r->ent[e].col;
            vals[cnt] = r->ent[e].val;
            cnt++;
            e++;
        }
        if (row_id[i] >= 0) {
            rk_status st = rk_lp_add_row_coefs(lp, row_id[i], cnt, cols, vals);
            if (st != RK_OK) {
                free(cols); free(vals); free(row_id); rk_lp_free(lp);
                return rk_fail(r->err, st, "%s: cannot store the coefficients of row '%s'", r->path, r->rows[i].name);
            }
        }
        k = e;
    }
    free(cols);
    free(vals);
    free(row_id);
    rk_lp_set_maximize(lp, r->maximize);
    if (r->obj_const_set) rk_lp_set_obj_const(lp, r->obj_const);
    *out = lp;
    return RK_OK;
}

rk_status rk_mps_read(const char *path, rk_lp **out, rk_error *err) {
    *out = NULL;
    mps_input in = {0};
    in.gz = gzopen(path, "rb");
    if (!in.gz) return rk_fail(err, RK_EINPUT, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    gzbuffer(in.gz, 1 << 17);
    mps_reader r;
    memset(&r, 0, sizeof r);
    r.path = path;
    r.err = err;
    r.obj_row = -1;
    err->msg[0] = 0;
    rk_status st = mps_parse(&r, &in);
    gzclose(in.gz);
    free(in.buf);
    if (st == RK_OK) st = mps_build(&r, out);
    mps_reader_free(&r);
    return st;
}

/* ------------------------------------------------------------ writer */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} mps_buf;

static void mps_put(mps_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void mps_put(mps_buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if (b->p && b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = b->cap ? 2 * b->cap : 1 << 16;
        while (nc < b->len + (size_t)k + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
}

/* Shortest text that reads back as exactly v. */
static const char *mps_num(char *buf, double v) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

static int mps_name_ok(const char *s) {
    if (!s || !*s) return 0;
    if (*s == '$') return 1; /* fine in free MPS */
    for (; *s; s++)
        if (isspace((unsigned char)*s)) return 0;
    return 1;
}

/* A ranged row lb <= ax <= ub is written as G (rhs lb, range R: the reader
 * computes lb + R) or as L (rhs ub, range R: ub - R); pick R, and the form,
 * so that the reader gets both sides back exactly.  Returns 'G' or 'L'. */
static char mps_range_form(double lb, double ub, double *R) {
    double r = ub - lb;
    for (int k = 0; k < 64 && lb + r != ub; k++) r = lb + r < ub ? nextafter(r, INFINITY) : nextafter(r, -INFINITY);
    if (lb + r == ub) { *R = r; return 'G'; }
    r = ub - lb;
    for (int k = 0; k < 64 && ub - r != lb; k++) r = ub - r > lb ? nextafter(r, INFINITY) : nextafter(r, -INFINITY);
    if (ub - r == lb) { *R = r; return 'L'; }
    *R = ub - lb;
    return 'G';
}

rk_status rk_mps_write(const char *path, const rk_lp *lp, rk_error *err) {
    lp_csc A;
    if (lp_matrix(lp, &A)) return rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    int n = lp->n, m = lp->m;
    /* names must be unique and contain no spaces */
    mps_table rt = {0}, ct = {0};
    rk_status st = RK_OK;
    for (int i = 0; i < m && st == RK_OK; i++) {
        if (!mps_name_ok(lp->row_name[i]))
            st = rk_fail(err, RK_EINPUT, "%s: row %d name '%s' cannot be written in free MPS (empty or has spaces)", path, i, lp->row_name[i] ? lp->row_name[i] : "");
        else if (mps_table_find(&rt, lp->row_name, lp->row_name[i]) >= 0)
            st = rk_fail(err, RK_EINPUT, "%s: duplicate row name '%s'", path, lp->row_name[i]);
        else if (mps_table_insert(&rt, lp->row_name, i, i + 1))
            st = rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    }
    for (int j = 0; j < n && st == RK_OK; j++) {
        if (!mps_name_ok(lp->col_name[j]))
            st = rk_fail(err, RK_EINPUT, "%s: column %d name '%s' cannot be written in free MPS (empty or has spaces)", path, j, lp->col_name[j] ? lp->col_name[j] : "");
        else if (mps_table_find(&ct, lp->col_name, lp->col_name[j]) >= 0)
            st = rk_fail(err, RK_EINPUT, "%s: duplicate column name '%s'", path, lp->col_name[j]);
        else if (mps_table_insert(&ct, lp->col_name, j, j + 1))
            st = rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    }
    /* objective row name: unique */
    char objname[64] = "OBJ";
    for (int k = 1; st == RK_OK && mps_table_find(&rt, lp->row_name, objname) >= 0; k++)
        snprintf(objname, sizeof objname, "OBJ_%d", k);
    free(rt.slot);
    free(ct.slot);
    if (st != RK_OK) return st;

    mps_buf b = {0};
    char n1[40], n2[40];
    mps_put(&b, "* written by rkmate %s\nNAME          RKMATE\n", RKMATE_VERSION_STRING);
    if (lp->maximize) mps_put(&b, "OBJSENSE\n    MAX\n");
    mps_put(&b, "ROWS\n N  %s\n", objname);
    char *rtype = malloc((size_t)(m ? m : 1));
    double *rng = malloc((size_t)(m ? m : 1) * sizeof *rng);
    if (!rtype || !rng) {
        free(rtype);
        free(rng);
        free(b.p);
        return rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < m; i++) {
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        char t = lb == ub ? 'E' : (lb == -INFINITY && ub == INFINITY) ? 'N' : lb == -INFINITY ? 'L' : 'G';
        rng[i] = 0;
        if (t == 'G' && ub != INFINITY) t = mps_range_form(lb, ub, &rng[i]);
        rtype[i] = t;
        mps_put(&b, " %c  %s\n", t, lp->row_name[i]);
    }
    mps_put(&b, "COLUMNS\n");
    int in_int = 0, marker = 0;
    for (int j = 0; j < n; j++) {
        if (lp->is_int[j] && !in_int) {
            mps_put(&b, "    MARKER%d  'MARKER'  'INTORG'\n", marker++);
            in_int = 1;
        } else if (!lp->is_int[j] && in_int) {
            mps_put(&b, "    MARKER%d  'MARKER'  'INTEND'\n", marker++);
            in_int = 0;
        }
        const char *cn = lp->col_name[j];
        int wrote = 0;
        if (lp->obj[j] != 0 || A.start[j] == A.start[j + 1]) {
            mps_put(&b, "    %s  %s  %s\n", cn, objname, mps_num(n1, lp->obj[j]));
            wrote = 1;
        }
        (void)wrote;
        for (long p = A.start[j]; p < A.start[j + 1]; p++)
            mps_put(&b, "    %s  %s  %s\n", cn, lp->row_name[A.index[p]], mps_num(n1, A.value[p]));
    }
    if (in_int) mps_put(&b, "    MARKER%d  'MARKER'  'INTEND'\n", marker++);
    mps_put(&b, "RHS\n");
    if (lp->obj_const != 0) mps_put(&b, "    RHS  %s  %s\n", objname, mps_num(n1, -lp->obj_const));
    for (int i = 0; i < m; i++) {
        double rhs = rtype[i] == 'L' ? lp->row_ub[i] : lp->row_lb[i];
        if (rtype[i] == 'N') continue;
        if (rhs != 0) mps_put(&b, "    RHS  %s  %s\n", lp->row_name[i], mps_num(n1, rhs));
    }
    int any_range = 0;
    for (int i = 0; i < m; i++) {
        double lb = lp->row_lb[i], ub = lp->row_ub[i];
        if (lb == ub || lb == -INFINITY || ub == INFINITY) continue;
        if (!any_range) mps_put(&b, "RANGES\n");
        any_range = 1;
        mps_put(&b, "    RNG  %s  %s\n", lp->row_name[i], mps_num(n1, rng[i]));
    }
    free(rtype);
    free(rng);
    mps_put(&b, "BOUNDS\n");
    for (int j = 0; j < n; j++) {
        double lb = lp->col_lb[j], ub = lp->col_ub[j];
        const char *cn = lp->col_name[j];
        if (lb == ub && isfinite(lb)) {
            mps_put(&b, " FX BND  %s  %s\n", cn, mps_num(n1, lb));
            continue;
        }
        if (lb == -INFINITY && ub == INFINITY) {
            mps_put(&b, " FR BND  %s\n", cn);
            continue;
        }
        int any = 0;
        if (lb == -INFINITY) { mps_put(&b, " MI BND  %s\n", cn); any = 1; }
        else if (lb != 0) { mps_put(&b, " LO BND  %s  %s\n", cn, mps_num(n1, lb)); any = 1; }
        else if (ub < 0) { mps_put(&b, " LO BND  %s  0\n", cn); any = 1; }
        if (ub != INFINITY) { mps_put(&b, " UP BND  %s  %s\n", cn, mps_num(n2, ub)); any = 1; }
        if (!any && lp->is_int[j]) mps_put(&b, " PL BND  %s\n", cn);
    }
    mps_put(&b, "ENDATA\n");
    if (b.oom) {
        free(b.p);
        return rk_fail(err, RK_ENOMEM, "%s: out of memory", path);
    }
    st = rk_write_file_atomic(path, b.p, b.len, err);
    free(b.p);
    return st;
}
