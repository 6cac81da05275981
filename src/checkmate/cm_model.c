/* cm_model.c — the rk-Checkmate model of one CD-graph: presolved variables
 * (R, create, delete, P, U), the feasibility and memory constraints, the LP
 * for a pair of budgets, and the decoding of a solution into run/forget ops
 * checked by the simulator.  docs/ilp.md is the written formulation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm_internal.h"

double cm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------ linear builder */

typedef struct {
    int n, cap;
    int *col;
    double *val;
    double c0;
} lin;

static void lin_free(lin *l) {
    free(l->col);
    free(l->val);
    memset(l, 0, sizeof *l);
}
static void lin_reset(lin *l) {
    l->n = 0;
    l->c0 = 0;
}
static int lin_push(lin *l, int col, double v) {
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 16;
        int *c = realloc(l->col, (size_t)nc * sizeof *c);
        if (!c) return -1;
        l->col = c;
        double *w = realloc(l->val, (size_t)nc * sizeof *w);
        if (!w) return -1;
        l->val = w;
        l->cap = nc;
    }
    l->col[l->n] = col;
    l->val[l->n] = v;
    l->n++;
    return 0;
}
/* add coef * ref */
static int lin_ref(lin *l, int ref, double coef) {
    if (ref == CM_ZERO || coef == 0) return 0;
    if (ref == CM_ONE) {
        l->c0 += coef;
        return 0;
    }
    return lin_push(l, ref, coef);
}
static int lin_expr(lin *l, const rk_checkmate_model *m, cm_expr e, double coef) {
    l->c0 += coef * e.c0;
    for (int i = 0; i < e.n; i++)
        if (lin_push(l, m->tcol[e.start + i], coef * m->tval[e.start + i])) return -1;
    return 0;
}
static int lin_copy(lin *dst, const lin *src) {
    lin_reset(dst);
    dst->c0 = src->c0;
    for (int i = 0; i < src->n; i++)
        if (lin_push(dst, src->col[i], src->val[i])) return -1;
    return 0;
}

/* merge duplicate columns, drop zeros */
static void lin_normalize(lin *l) {
    if (l->n <= 1) {
        if (l->n == 1 && l->val[0] == 0) l->n = 0;
        return;
    }
    /* insertion sort on (col): expressions are short */
    for (int i = 1; i < l->n; i++) {
        int c = l->col[i];
        double v = l->val[i];
        int j = i - 1;
        while (j >= 0 && l->col[j] > c) {
            l->col[j + 1] = l->col[j];
            l->val[j + 1] = l->val[j];
            j--;
        }
        l->col[j + 1] = c;
        l->val[j + 1] = v;
    }
    int w = 0;
    for (int i = 0; i < l->n; i++) {
        if (w > 0 && l->col[w - 1] == l->col[i]) l->val[w - 1] += l->val[i];
        else {
            l->col[w] = l->col[i];
            l->val[w] = l->val[i];
            w++;
        }
    }
    int z = 0;
    for (int i = 0; i < w; i++)
        if (l->val[i] != 0) {
            l->col[z] = l->col[i];
            l->val[z] = l->val[i];
            z++;
        }
    l->n = z;
}

/* ------------------------------------------------------ model storage */

static int m_commit(rk_checkmate_model *m, lin *l, cm_expr *e) {
    lin_normalize(l);
    if ((long)m->n_terms + l->n > CM_MAX_TERMS) {
        m->too_big = 1;
        return -1;
    }
    if (m->n_terms + l->n > m->cap_terms) {
        int nc = m->cap_terms ? m->cap_terms : 1024;
        while (nc < m->n_terms + l->n) nc *= 2;
        int *c = realloc(m->tcol, (size_t)nc * sizeof *c);
        if (!c) return -1;
        m->tcol = c;
        double *v = realloc(m->tval, (size_t)nc * sizeof *v);
        if (!v) return -1;
        m->tval = v;
        m->cap_terms = nc;
    }
    e->start = m->n_terms;
    e->n = l->n;
    e->c0 = l->c0;
    if (l->n > 0) { /* an empty expression may have no arrays yet */
        memcpy(m->tcol + m->n_terms, l->col, (size_t)l->n * sizeof(int));
        memcpy(m->tval + m->n_terms, l->val, (size_t)l->n * sizeof(double));
    }
    m->n_terms += l->n;
    return 0;
}

static int m_col(rk_checkmate_model *m, cm_colkind kind, int t, int a, int b, double obj, double lb, double ub,
                 int integer) {
    if (m->n_cols == m->cap_cols) {
        int nc = m->cap_cols ? 2 * m->cap_cols : 256;
        cm_col *c = realloc(m->cols, (size_t)nc * sizeof *c);
        if (!c) return -1;
        m->cols = c;
        m->cap_cols = nc;
    }
    cm_col *c = &m->cols[m->n_cols];
    c->kind = kind;
    c->t = t;
    c->a = a;
    c->b = b;
    c->obj = obj;
    c->lb = lb;
    c->ub = ub;
    c->integer = integer;
    return m->n_cols++;
}

static const char FAMS[] = CM_FAMILIES;

/* Add a row lb <= l <= ub.  Constant rows are checked (FIXED) or recorded
 * (PEAK: fixed_peak).  Returns -1 on OOM. */
static int m_row(rk_checkmate_model *m, lin *l, double lb, double ub, cm_rhs kind, char fam, int t, int a, int b) {
    if (m->no_lp) return 0; /* rows are the LP's only */
    lin_normalize(l);
    if (l->n == 0) {
        if (kind == CM_RHS_PEAK) {
            int64_t v = (int64_t)llround(l->c0);
            if (v > m->fixed_peak) m->fixed_peak = v;
        } else if (kind == CM_RHS_FIXED) {
            if (l->c0 < lb - 1e-9 || l->c0 > ub + 1e-9) {
                if (!m->infeasible)
                    snprintf(m->why, sizeof m->why, "constant row %c[%d,%d,%d] = %g outside [%g, %g]", fam, t, a, b,
                             l->c0, lb, ub);
                m->infeasible = 1;
            }
        } else {
            /* constant SAVE row: keep it (checked at LP time) */
            goto keep;
        }
        return 0;
    }
keep:
    if (m->n_rows == m->cap_rows) {
        int nc = m->cap_rows ? 2 * m->cap_rows : 256;
        cm_row *r = realloc(m->rows, (size_t)nc * sizeof *r);
        if (!r) return -1;
        m->rows = r;
        m->cap_rows = nc;
    }
    cm_row *r = &m->rows[m->n_rows];
    if (m_commit(m, l, &r->e)) return -1;
    r->lb = lb;
    r->ub = ub;
    r->kind = kind;
    r->fam = fam;
    r->t = t;
    r->a = a;
    r->b = b;
    const char *f = strchr(FAMS, fam);
    if (f) m->n_fam[f - FAMS]++;
    m->n_rows++;
    return 0;
}

static int expr_is_const(const cm_expr *e, double v) { return e->n == 0 && e->c0 == v; }

/* Record the data that may be present at a sure step (see cm_knap). */
static int m_knap(rk_checkmate_model *m, cm_rhs kind, int t, int step, int r, const rk_graph *g, const cm_expr *cur,
                  const char *is_in, const char *fixed, int64_t base) {
    if (m->n_knap == m->cap_knap) {
        int nc = m->cap_knap ? 2 * m->cap_knap : 64;
        cm_knap *k = realloc(m->knap, (size_t)nc * sizeof *k);
        if (!k) return -1;
        m->knap = k;
        m->cap_knap = nc;
    }
    cm_knap *k = &m->knap[m->n_knap];
    k->kind = kind;
    k->t = t;
    k->k = step;
    k->r = r;
    k->mand = base;
    k->start = m->n_opt;
    k->n = 0;
    for (int d = 0; d < g->n_d; d++) {
        if (is_in[d] || fixed[d] || g->d[d].size <= 0) continue;
        if (expr_is_const(&cur[d], 0)) continue;
        if (expr_is_const(&cur[d], 1)) {
            k->mand += g->d[d].size;
            continue;
        }
        if (m->n_opt == m->cap_opt) {
            int nc = m->cap_opt ? 2 * m->cap_opt : 256;
            int *a = realloc(m->opt_d, (size_t)nc * sizeof *a);
            if (!a) return -1;
            m->opt_d = a;
            cm_expr *b = realloc(m->opt_e, (size_t)nc * sizeof *b);
            if (!b) return -1;
            m->opt_e = b;
            m->cap_opt = nc;
        }
        m->opt_d[m->n_opt] = d;
        m->opt_e[m->n_opt] = cur[d];
        m->n_opt++;
        k->n++;
    }
    m->n_knap++;
    return 0;
}

void rk_checkmate_model_free(rk_checkmate_model *m) {
    if (!m) return;
    free(m->cols);
    free(m->rows);
    free(m->tcol);
    free(m->tval);
    free(m->stage_start);
    free(m->steps);
    free(m->dels);
    free(m->knap);
    free(m->opt_d);
    free(m->opt_e);
    free(m->names);
    free(m->name_at);
    free(m);
}

int rk_checkmate_model_num_cols(const rk_checkmate_model *m) { return m->n_cols; }
int cm_model_no_ilp(const rk_checkmate_model *m, const rk_checkmate_params *p) {
    return m->no_lp || (p->ilp_max_cols > 0 && m->n_cols > p->ilp_max_cols);
}
int rk_checkmate_model_num_rows(const rk_checkmate_model *m) { return m->n_rows; }

/* ---------------------------------------------------------------- build */

/* per data: sorted positions touching it */
typedef struct {
    int n;
    int *pos;         /* topo positions, ascending, unique */
    char *is_prod, *is_use;
} touch_list;

typedef struct {
    int step;         /* index into m->steps */
    int d;
    int ref;          /* create ref */
    cm_expr x;        /* deletion expression (for dels) */
} tmp_ev;

static int cmp_tmp_ev(const void *a, const void *b) {
    const tmp_ev *x = a, *y = b;
    if (x->step != y->step) return (x->step > y->step) - (x->step < y->step);
    return (x->d > y->d) - (x->d < y->d);
}

#define OOM_IF(cond)                                                                                                   \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            r = rk_fail(err, RK_ENOMEM, "rk-Checkmate: out of memory building the model");                             \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* A data that may have a twin: not an input, an input grad, the output or
 * its grad. */
static int twin_candidate(const rk_graph *g, const char *is_in, const char *is_ig, int d) {
    return !is_in[d] && !is_ig[d] && d != g->output && d != g->output_grad;
}

/* Twins: two candidates (twin_candidate) with the same producers and the
 * same users by the same edge kinds. */
static int is_twin(const rk_graph *g, int d1, int d2) {
    const rk_dnode *a = &g->d[d1], *b = &g->d[d2];
    if ((a->kind == RK_D_GRAD) != (b->kind == RK_D_GRAD)) return 0;
    if (a->n_producers != b->n_producers || a->n_users != b->n_users) return 0;
    for (int i = 0; i < a->n_producers; i++)
        if (a->producers[i] != b->producers[i]) return 0;
    for (int i = 0; i < a->n_users; i++) {
        int u = a->users[i];
        if (u != b->users[i]) return 0;
        for (int q = 0; q < g->c[u].n_uses; q++) {
            const rk_use *x = &g->c[u].uses[q];
            if (x->data != d1) continue;
            int same = 0;
            for (int r = 0; r < g->c[u].n_uses; r++)
                same |= g->c[u].uses[r].data == d2 && g->c[u].uses[r].kind == x->kind;
            if (!same) return 0;
        }
    }
    return 1;
}

/* Twin rows (docs/ilp.md): for every twin d2 of an earlier data d1, each
 * C/X/P column of d2 equals the column of d1 at the same stage and step.
 * Returns -1 on OOM. */
static int m_twin_rows(rk_checkmate_model *m, lin *l, const char *is_in, const char *is_ig) {
    const rk_graph *g = m->g;
    int D = g->n_d, nc = m->n_cols;
    int *twin_of = malloc((size_t)(D ? D : 1) * sizeof *twin_of);
    int *first = malloc((size_t)(D ? D : 1) * sizeof *first), *next = malloc((size_t)(nc ? nc : 1) * sizeof *next);
    int r = !twin_of || !first || !next ? -1 : 0;
    for (int d = 0; d < D && !r; d++) {
        twin_of[d] = -1;
        first[d] = -1;
        if (!twin_candidate(g, is_in, is_ig, d)) continue;
        for (int e = 0; e < d && twin_of[d] < 0; e++)
            if (twin_candidate(g, is_in, is_ig, e) && twin_of[e] < 0 && is_twin(g, e, d)) twin_of[d] = e;
    }
    /* the C/X/P columns of each data, as lists in column order */
    for (int j = nc - 1; j >= 0 && !r; j--) {
        const cm_col *c = &m->cols[j];
        if (c->kind == CM_COL_R || c->kind == CM_COL_N) continue;
        next[j] = first[c->a];
        first[c->a] = j;
    }
    for (int d = 0; d < D && !r; d++) {
        if (twin_of[d] < 0) continue;
        for (int j2 = first[d]; j2 >= 0 && !r; j2 = next[j2]) {
            const cm_col *c2 = &m->cols[j2];
            for (int j1 = first[twin_of[d]]; j1 >= 0; j1 = next[j1]) {
                const cm_col *c1 = &m->cols[j1];
                if (c1->kind != c2->kind || c1->t != c2->t || c1->b != c2->b) continue;
                lin_reset(l);
                if (lin_push(l, j1, 1) || lin_push(l, j2, -1) ||
                    m_row(m, l, 0, 0, CM_RHS_FIXED, 'w', c2->t, d, j2))
                    r = -1;
                break;
            }
        }
    }
    free(twin_of);
    free(first);
    free(next);
    return r;
}

static void col_name(const rk_checkmate_model *m, int j, char *buf, size_t n) {
    const cm_col *c = &m->cols[j];
    switch (c->kind) {
    case CM_COL_R: snprintf(buf, n, "R%d_%d", c->t, c->a); break;
    case CM_COL_C: snprintf(buf, n, "C%d_%d_%d", c->t, c->a, c->b); break;
    case CM_COL_X: snprintf(buf, n, "X%d_%d_%d", c->t, c->a, c->b); break;
    case CM_COL_P: snprintf(buf, n, "P%d_%d", c->t, c->a); break;
    case CM_COL_N: snprintf(buf, n, "N%d", c->a); break;
    default: snprintf(buf, n, "V%d_%d", c->t, c->a); break;
    }
}

/* The names of the columns and rows, made once for all budgets' LPs
 * (formatting them for every LP was ~2 % of the grid).  -1 on OOM. */
static int m_names(rk_checkmate_model *m) {
    int N = m->n_cols + m->n_rows;
    long cap = 16L * N + 16, len = 0;
    m->names = malloc((size_t)cap);
    m->name_at = malloc((size_t)(N ? N : 1) * sizeof *m->name_at);
    if (!m->names || !m->name_at) return -1;
    for (int k = 0; k < N; k++) {
        char buf[64];
        if (k < m->n_cols) {
            col_name(m, k, buf, sizeof buf);
        } else {
            const cm_row *rw = &m->rows[k - m->n_cols];
            snprintf(buf, sizeof buf, "%c%d_%d_%d", rw->fam, rw->t, rw->a, rw->b < 0 ? 9999 : rw->b);
        }
        long l = (long)strlen(buf) + 1;
        if (len + l > cap) {
            cap = 2 * cap + l;
            char *nn = realloc(m->names, (size_t)cap);
            if (!nn) return -1;
            m->names = nn;
        }
        memcpy(m->names + len, buf, (size_t)l);
        m->name_at[k] = len;
        len += l;
    }
    return 0;
}

rk_status rk_checkmate_model_build(const rk_graph *g, rk_checkmate_model **out, rk_error *err) {
    return cm_model_build(g, 0, 0, out, NULL, err);
}

/* The model is too large (cm_model_build): RK_ENOMEM, *too_large = 1 and
 * what passed which limit. */
static rk_status too_large_fail(const rk_graph *g, int *too_large, rk_error *err, long steps, long cols,
                                const char *what, long limit) {
    if (too_large) *too_large = 1;
    return rk_fail(err, RK_ENOMEM,
                   "rk-Checkmate: the model of this %d-node, %d-data graph is too large (%ld steps, %ld "
                   "columns): %s would pass %ld",
                   g->n_c, g->n_d, steps, cols, what, limit);
}

/* The terms stage t's memory rows and knapsack records would add: each of
 * its steps has a row over every data's presence expression (cur). */
static long stage_memory_terms(const rk_checkmate_model *m, int s0, int s1, const cm_expr *cur) {
    long per = 4;
    for (int d = 0; d < m->g->n_d; d++) per += cur[d].n + 1;
    return (long)(s1 - s0) * 2 * per;
}

rk_status cm_model_build(const rk_graph *g, int ilp_max_cols, long max_cols, rk_checkmate_model **out,
                         int *too_large, rk_error *err) {
    *out = NULL;
    if (too_large) *too_large = 0;
    if (!g || !g->finalized) return rk_fail(err, RK_EINPUT, "rk-Checkmate: graph not finalized");
    rk_status r = RK_OK;
    int T = g->n_c, D = g->n_d;
    rk_checkmate_model *m = calloc(1, sizeof *m);
    int *pos = calloc((size_t)T + 1, sizeof(int));
    int *need = malloc((size_t)(D + 1) * sizeof(int));
    int *ufwd = malloc((size_t)(T + 1) * sizeof(int));
    int *first_prod = malloc((size_t)(D + 1) * sizeof(int));
    int *last_prod = malloc((size_t)(D + 1) * sizeof(int));
    char *is_in = calloc((size_t)D + 1, 1), *is_ig = calloc((size_t)D + 1, 1);
    touch_list *tl = calloc((size_t)D + 1, sizeof *tl);
    int *R = NULL; /* R[t * T + k]: made once the model's size is known to fit */
    long est_steps = 0, est_cols = 0, est_terms = 0;
    int *Pcur = malloc((size_t)(D + 1) * sizeof(int)), *Pnext = malloc((size_t)(D + 1) * sizeof(int));
    tmp_ev *cre = NULL, *del = NULL, *aft = NULL;
    int n_cre = 0, cap_cre = 0, n_del = 0, cap_del = 0, n_aft = 0, cap_aft = 0;
    cm_expr *cur = malloc((size_t)(D + 1) * sizeof(cm_expr));
    char *fixedd = calloc((size_t)D + 1, 1);
    lin a = {0}, l = {0}, U = {0};
    int *mark = calloc((size_t)T + 1, sizeof(int));
    OOM_IF(!m || !pos || !need || !ufwd || !first_prod || !last_prod || !is_in || !is_ig || !tl || !Pcur ||
           !Pnext || !mark || !cur || !fixedd);
    m->g = g;
    m->T = T;
    for (int i = 0; i < T; i++) pos[g->topo[i]] = i;
    m->t_loss = pos[g->loss];
    for (int i = 0; i < T; i++) {
        rk_ckind k = g->c[g->topo[i]].kind;
        if (k == RK_C_FWD) {
            if (i > m->t_loss) {
                r = rk_fail(err, RK_EINPUT, "rk-Checkmate: forward node '%s' after the loss in the topological order",
                            g->c[g->topo[i]].name);
                goto done;
            }
            m->n_fwd++;
        } else if (i < m->t_loss) {
            r = rk_fail(err, RK_EINPUT, "rk-Checkmate: %s node '%s' before the loss in the topological order",
                        rk_ckind_name(k), g->c[g->topo[i]].name);
            goto done;
        }
    }
    for (int k = 0; k < g->n_inputs; k++) {
        is_in[g->inputs[k]] = 1;
        if (g->input_grads[k] >= 0) is_ig[g->input_grads[k]] = 1;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        if (!is_in[g->inputs[k]]) continue;
        m->input_size += g->d[g->inputs[k]].size;
        is_in[g->inputs[k]] = 2; /* counted once */
    }
    m->output_size = g->d[g->output].size;

    /* touch lists: producers and real users, as positions */
    for (int d = 0; d < D; d++) {
        const rk_dnode *dn = &g->d[d];
        if (dn->kind != RK_D_GRAD && dn->n_producers > 1) {
            r = rk_fail(err, RK_EINPUT, "rk-Checkmate: %s node '%s' has %d producers; only grads may have several",
                        rk_dkind_name(dn->kind), dn->name, dn->n_producers);
            goto done;
        }
        int cap = dn->n_producers + dn->n_users + 1;
        tl[d].pos = malloc((size_t)cap * sizeof(int));
        tl[d].is_prod = calloc((size_t)cap, 1);
        tl[d].is_use = calloc((size_t)cap, 1);
        OOM_IF(!tl[d].pos || !tl[d].is_prod || !tl[d].is_use);
        /* mark[pos] = 1 prod, 2 use, 3 both */
        for (int i = 0; i < dn->n_producers; i++) mark[pos[dn->producers[i]]] |= 1;
        for (int i = 0; i < dn->n_users; i++) {
            const rk_cnode *c = &g->c[dn->users[i]];
            for (int u = 0; u < c->n_uses; u++)
                if (c->uses[u].data == d && c->uses[u].kind != RK_EDGE_FAKE) mark[pos[dn->users[i]]] |= 2;
        }
        first_prod[d] = -1;
        last_prod[d] = -1;
        for (int i = 0; i < dn->n_producers; i++) {
            int p = pos[dn->producers[i]];
            if (first_prod[d] < 0 || p < first_prod[d]) first_prod[d] = p;
            if (p > last_prod[d]) last_prod[d] = p;
        }
        int n = 0;
        /* collect marked positions in ascending order */
        int *tmp = malloc((size_t)cap * 2 * sizeof(int));
        OOM_IF(!tmp);
        int nt = 0;
        for (int i = 0; i < dn->n_producers; i++) tmp[nt++] = pos[dn->producers[i]];
        for (int i = 0; i < dn->n_users; i++) tmp[nt++] = pos[dn->users[i]];
        for (int i = 0; i < nt; i++) {
            int p = tmp[i];
            if (!mark[p]) continue;
            tl[d].pos[n] = p;
            tl[d].is_prod[n] = (mark[p] & 1) != 0;
            tl[d].is_use[n] = (mark[p] & 2) != 0;
            n++;
            mark[p] = 0;
        }
        free(tmp);
        /* sort ascending (few entries) */
        for (int i = 1; i < n; i++) {
            int p = tl[d].pos[i];
            char ip = tl[d].is_prod[i], iu = tl[d].is_use[i];
            int j = i - 1;
            while (j >= 0 && tl[d].pos[j] > p) {
                tl[d].pos[j + 1] = tl[d].pos[j];
                tl[d].is_prod[j + 1] = tl[d].is_prod[j];
                tl[d].is_use[j + 1] = tl[d].is_use[j];
                j--;
            }
            tl[d].pos[j + 1] = p;
            tl[d].is_prod[j + 1] = ip;
            tl[d].is_use[j + 1] = iu;
        }
        tl[d].n = n;
    }

    /* last stage at which a forward node's recomputation can be useful, and
     * the last stage at which each data can be needed */
    for (int d = 0; d < D; d++) need[d] = -1;
    for (int i = 0; i < T; i++) ufwd[i] = i;
    /* data needed by non-forward users (fixed positions) */
    for (int d = 0; d < D; d++) {
        if (is_ig[d]) need[d] = T;
        for (int i = 0; i < tl[d].n; i++)
            if (tl[d].is_use[i] && g->c[g->topo[tl[d].pos[i]]].kind != RK_C_FWD && tl[d].pos[i] > need[d])
                need[d] = tl[d].pos[i];
    }
    /* forward nodes in reverse order: users of a node's outputs come later */
    for (int i = m->n_fwd - 1; i >= 0; i--) {
        const rk_cnode *c = &g->c[g->topo[i]];
        int u = i;
        for (int o = 0; o < c->n_outs; o++) {
            int d = c->outs[o];
            int nd = need[d];
            for (int j = 0; j < tl[d].n; j++)
                if (tl[d].is_use[j] && g->c[g->topo[tl[d].pos[j]]].kind == RK_C_FWD && ufwd[tl[d].pos[j]] > nd)
                    nd = ufwd[tl[d].pos[j]];
            need[d] = nd;
            if (nd > u) u = nd;
        }
        ufwd[i] = u;
    }
    /* inputs of forward nodes: need through forward users too */
    for (int d = 0; d < D; d++)
        for (int j = 0; j < tl[d].n; j++)
            if (tl[d].is_use[j] && g->c[g->topo[tl[d].pos[j]]].kind == RK_C_FWD && ufwd[tl[d].pos[j]] > need[d])
                need[d] = ufwd[tl[d].pos[j]];

    /* the model's size before it is made: a step per stage and per R
     * column (forward node k at a stage t in (k, ufwd[k]]), a presence (P)
     * column per data and stage where its presence is free (the C and X
     * columns of the events come on top), and the memory rows: each step's
     * row has a term per data whose presence is free at its stage */
    {
        long *at = calloc((size_t)T + 2, sizeof *at), *fr = calloc((size_t)T + 2, sizeof *fr);
        if (!at || !fr) {
            free(at);
            free(fr);
            OOM_IF(1);
        }
        for (int k = 0; k < m->n_fwd; k++) {
            int last = ufwd[k] < T - 1 ? ufwd[k] : T - 1;
            if (last <= k) continue;
            at[k + 1]++;
            at[last + 1]--;
        }
        for (int d = 0; d < D; d++) {
            if (is_in[d] || is_ig[d] || first_prod[d] < 0) continue;
            int from = g->d[d].kind == RK_D_GRAD ? last_prod[d] : first_prod[d];
            int to = need[d] < T - 1 ? need[d] : T - 1;
            if (to <= from) continue;
            est_cols += to - from;
            if (g->d[d].size <= 0) continue;
            fr[from + 1]++;
            fr[to + 1]--;
        }
        long steps_t = 1, free_t = 0;
        est_steps = T;
        for (int t = 0; t < T; t++) {
            if (t > 0) steps_t += at[t];
            free_t += fr[t];
            est_steps += steps_t - 1;
            est_terms += steps_t * free_t;
        }
        est_cols += est_steps - T;
        free(at);
        free(fr);
        if (max_cols > 0 && est_cols > max_cols) {
            r = too_large_fail(g, too_large, err, est_steps, est_cols, "its columns", max_cols);
            goto done;
        }
        if ((ilp_max_cols <= 0 || est_cols <= ilp_max_cols) && est_terms > CM_MAX_TERMS) {
            r = too_large_fail(g, too_large, err, est_steps, est_cols,
                               "its memory rows (a row per step over the data that may be present), in terms,",
                               CM_MAX_TERMS);
            goto done;
        }
        if ((long)T * T > 2 * CM_MAX_TERMS) {
            r = too_large_fail(g, too_large, err, est_steps, est_cols, "its stage x node table", 2 * CM_MAX_TERMS);
            goto done;
        }
        R = malloc((size_t)T * (size_t)T * sizeof(int));
        OOM_IF(!R);
    }

    /* R references */
    m->time_const = 0;
    for (int t = 0; t < T; t++) {
        for (int k = 0; k < T; k++) R[t * T + k] = CM_ZERO;
        R[t * T + t] = CM_ONE;
        m->time_const += g->c[g->topo[t]].time;
        for (int k = 0; k < t && k < m->n_fwd; k++)
            if (t <= ufwd[k]) {
                int c = m_col(m, CM_COL_R, t, k, 0, g->c[g->topo[k]].time, 0, 1, 1);
                OOM_IF(c < 0);
                R[t * T + k] = c;
            }
    }
    /* too many columns for an ILP: no rows (the bulk of the model is the
     * memory rows, steps x data: cm_model_build) */
    if (ilp_max_cols > 0 && m->n_cols > ilp_max_cols) m->no_lp = 1;
    /* recomputation counts: N_k = sum_t R[t][k], an integer column of
     * its own for every forward node with two or more R columns (docs/ilp.md:
     * branching on it decides "recompute k or not" over all stages at once) */
    for (int k = 0; k < m->n_fwd; k++) {
        int cnt = 0;
        for (int t = 0; t < T; t++) cnt += R[t * T + k] >= 0;
        if (cnt < 2) continue;
        int c = m_col(m, CM_COL_N, 0, k, 0, 0, 0, cnt, 1);
        OOM_IF(c < 0);
        lin_reset(&l);
        for (int t = 0; t < T; t++)
            if (R[t * T + k] >= 0) OOM_IF(lin_push(&l, R[t * T + k], 1));
        OOM_IF(lin_push(&l, c, -1));
        OOM_IF(m_row(m, &l, 0, 0, CM_RHS_FIXED, 'r', 0, k, -1));
    }

    /* presence at the start of stage 0 */
    for (int d = 0; d < D; d++) Pcur[d] = is_in[d] ? CM_ONE : CM_ZERO;

    m->stage_start = malloc((size_t)(T + 1) * sizeof(int));
    OOM_IF(!m->stage_start);
    for (int t = 0; t < T; t++) {
        if (ilp_max_cols > 0 && m->n_cols > ilp_max_cols) m->no_lp = 1;
        if (max_cols > 0 && m->n_cols > max_cols) {
            r = too_large_fail(g, too_large, err, est_steps, m->n_cols, "its columns", max_cols);
            goto done;
        }
        /* steps of stage t */
        m->stage_start[t] = m->n_steps;
        for (int k = 0; k <= t; k++) {
            if (R[t * T + k] == CM_ZERO) continue;
            if (m->n_steps == m->cap_steps) {
                int nc = m->cap_steps ? 2 * m->cap_steps : 256;
                cm_step *s = realloc(m->steps, (size_t)nc * sizeof *s);
                OOM_IF(!s);
                m->steps = s;
                m->cap_steps = nc;
            }
            cm_step *s = &m->steps[m->n_steps++];
            s->k = k;
            s->R = R[t * T + k];
            s->del_start = 0;
            s->n_del = 0;
            mark[k] = m->n_steps - 1; /* step index of position k in this stage */
        }
        int s0 = m->stage_start[t], s1 = m->n_steps;
        n_cre = n_del = n_aft = 0;
        for (int d = 0; d < D; d++) {
            if (is_in[d]) {
                Pnext[d] = CM_ONE;
                continue;
            }
            const rk_dnode *dn = &g->d[d];
            int is_grad = dn->kind == RK_D_GRAD;
            /* presence rule at the start of stage t+1 */
            int rule; /* CM_ZERO, CM_ONE, or 0 = free */
            int tn = t + 1;
            if (first_prod[d] < 0 || tn <= first_prod[d]) rule = CM_ZERO;
            else if (is_grad && tn <= last_prod[d]) rule = CM_ONE;
            else if (is_ig[d]) rule = CM_ONE;
            else if (tn > need[d]) rule = CM_ZERO;
            else rule = 0;
            /* events of d in stage t */
            int ev[64], nev = 0, *evp = ev;
            int *evbuf = NULL;
            if (tl[d].n > 64) {
                evbuf = malloc((size_t)tl[d].n * sizeof(int));
                OOM_IF(!evbuf);
                evp = evbuf;
            }
            for (int i = 0; i < tl[d].n; i++) {
                int k = tl[d].pos[i];
                if (k > t || R[t * T + k] == CM_ZERO) continue;
                evp[nev++] = i;
            }
            if (nev == 0) {
                free(evbuf);
                if (rule == 0) Pnext[d] = Pcur[d];
                else {
                    Pnext[d] = rule;
                    if (Pcur[d] != rule) {
                        lin_reset(&l);
                        OOM_IF(lin_ref(&l, Pcur[d], 1));
                        double v = rule == CM_ONE ? 1 : 0;
                        OOM_IF(m_row(m, &l, v, v, CM_RHS_FIXED, 'e', t, d, -1));
                    }
                }
                continue;
            }
            lin_reset(&a);
            OOM_IF(lin_ref(&a, Pcur[d], 1));
            for (int e = 0; e < nev; e++) {
                int i = evp[e];
                int k = tl[d].pos[i];
                int Rk = R[t * T + k];
                int step = mark[k];
                if (tl[d].is_prod[i]) {
                    int cref;
                    lin_normalize(&a);
                    int a_zero = a.n == 0 && a.c0 == 0;
                    if (is_grad && k != first_prod[d]) cref = CM_ZERO;
                    else if (a_zero && Rk == CM_ONE) cref = CM_ONE;
                    else {
                        cref = m_col(m, CM_COL_C, t, d, k, 0, 0, 1, 1);
                        OOM_IF(cref < 0);
                    }
                    if (cref >= 0) {
                        /* c <= R */
                        lin_reset(&l);
                        OOM_IF(lin_ref(&l, cref, 1) || lin_ref(&l, Rk, -1));
                        OOM_IF(m_row(m, &l, -INFINITY, 0, CM_RHS_FIXED, 'c', t, d, k));
                        /* a + c <= 1 */
                        OOM_IF(lin_copy(&l, &a) || lin_ref(&l, cref, 1));
                        OOM_IF(m_row(m, &l, -INFINITY, 1, CM_RHS_FIXED, 'n', t, d, k));
                    }
                    /* a + c >= R: the outputs are present after the run */
                    OOM_IF(lin_copy(&l, &a) || lin_ref(&l, cref, 1) || lin_ref(&l, Rk, -1));
                    OOM_IF(m_row(m, &l, 0, INFINITY, CM_RHS_FIXED, 'p', t, d, k));
                    OOM_IF(lin_ref(&a, cref, 1));
                    if (cref != CM_ZERO) {
                        if (n_cre == cap_cre) {
                            cap_cre = cap_cre ? 2 * cap_cre : 256;
                            tmp_ev *x = realloc(cre, (size_t)cap_cre * sizeof *x);
                            OOM_IF(!x);
                            cre = x;
                        }
                        cre[n_cre].step = step;
                        cre[n_cre].d = d;
                        cre[n_cre].ref = cref;
                        n_cre++;
                    }
                }
                if (tl[d].is_use[i]) {
                    /* a >= R: inputs present when the node runs */
                    OOM_IF(lin_copy(&l, &a) || lin_ref(&l, Rk, -1));
                    OOM_IF(m_row(m, &l, 0, INFINITY, CM_RHS_FIXED, 'u', t, d, k));
                }
                /* deletion after the step */
                int forbid = is_ig[d] || (is_grad && (t < last_prod[d] || k < last_prod[d]));
                lin xl = {0};
                int has_del = 0;
                if (e < nev - 1) {
                    if (!forbid) {
                        int xc = m_col(m, CM_COL_X, t, d, k, 0, 0, 1, 1);
                        OOM_IF(xc < 0);
                        /* a - x >= 0 */
                        OOM_IF(lin_copy(&l, &a) || lin_ref(&l, xc, -1));
                        OOM_IF(m_row(m, &l, 0, INFINITY, CM_RHS_FIXED, 'x', t, d, k));
                        OOM_IF(lin_ref(&a, xc, -1));
                        OOM_IF(lin_ref(&xl, xc, 1));
                        has_del = 1;
                    }
                } else {
                    int pn = rule;
                    if (rule == 0) {
                        pn = m_col(m, CM_COL_P, t + 1, d, 0, 0, 0, 1, 1);
                        OOM_IF(pn < 0);
                    }
                    Pnext[d] = pn;
                    OOM_IF(lin_copy(&l, &a) || lin_ref(&l, pn, -1));
                    if (forbid) {
                        OOM_IF(m_row(m, &l, 0, 0, CM_RHS_FIXED, 'e', t, d, k));
                    } else {
                        OOM_IF(m_row(m, &l, 0, INFINITY, CM_RHS_FIXED, 'x', t, d, k));
                        OOM_IF(lin_copy(&xl, &l));
                        lin_normalize(&xl);
                        has_del = !(xl.n == 0 && xl.c0 == 0);
                    }
                }
                if (has_del) {
                    if (n_del == cap_del) {
                        cap_del = cap_del ? 2 * cap_del : 256;
                        tmp_ev *x = realloc(del, (size_t)cap_del * sizeof *x);
                        if (!x) {
                            lin_free(&xl);
                            OOM_IF(1);
                        }
                        del = x;
                    }
                    del[n_del].step = step;
                    del[n_del].d = d;
                    del[n_del].ref = 0;
                    if (m_commit(m, &xl, &del[n_del].x)) {
                        lin_free(&xl);
                        OOM_IF(1);
                    }
                    n_del++;
                }
                lin_free(&xl);
                /* presence after the step (deletion included): for the
                 * memory rows only */
                if (m->no_lp) continue;
                if (n_aft == cap_aft) {
                    cap_aft = cap_aft ? 2 * cap_aft : 256;
                    tmp_ev *x = realloc(aft, (size_t)cap_aft * sizeof *x);
                    OOM_IF(!x);
                    aft = x;
                }
                aft[n_aft].step = step;
                aft[n_aft].d = d;
                aft[n_aft].ref = 0;
                if (e < nev - 1) {
                    OOM_IF(m_commit(m, &a, &aft[n_aft].x));
                } else {
                    lin_reset(&l);
                    OOM_IF(lin_ref(&l, Pnext[d], 1));
                    OOM_IF(m_commit(m, &l, &aft[n_aft].x));
                }
                n_aft++;
            }
            free(evbuf);
        }
        /* group deletions and creations per step (deterministic order) */
        qsort(del, (size_t)n_del, sizeof *del, cmp_tmp_ev);
        qsort(cre, (size_t)n_cre, sizeof *cre, cmp_tmp_ev);
        for (int i = 0; i < n_del; i++) {
            if (m->n_dels == m->cap_dels) {
                int nc = m->cap_dels ? 2 * m->cap_dels : 256;
                cm_del *x = realloc(m->dels, (size_t)nc * sizeof *x);
                OOM_IF(!x);
                m->dels = x;
                m->cap_dels = nc;
            }
            cm_step *s = &m->steps[del[i].step];
            if (s->n_del == 0) s->del_start = m->n_dels;
            s->n_del++;
            m->dels[m->n_dels].d = del[i].d;
            m->dels[m->n_dels].x = del[i].x;
            m->n_dels++;
        }
        /* memory rows, written over the 0/1 presence of every data (the
         * knapsack structure stays visible to the solver); none past the
         * limits (no ILP on this model then, or a clean failure) */
        if (!m->no_lp) {
            qsort(aft, (size_t)n_aft, sizeof *aft, cmp_tmp_ev);
            for (int d = 0; d < D; d++) {
                lin_reset(&l);
                if (!is_in[d]) OOM_IF(lin_ref(&l, Pcur[d], 1));
                OOM_IF(m_commit(m, &l, &cur[d]));
            }
            long more = stage_memory_terms(m, s0, s1, cur);
            if ((long)m->n_terms + m->n_opt + more > CM_MAX_TERMS) {
                r = too_large_fail(g, too_large, err, est_steps, m->n_cols,
                                   "its memory rows (a row per step over the data that may be present), in terms,",
                                   CM_MAX_TERMS);
                goto done;
            }
        }
        int ic = 0, ia = 0;
        for (int s = s0; s < s1 && !m->no_lp; s++) {
            cm_step *st = &m->steps[s];
            const rk_cnode *c = &g->c[g->topo[st->k]];
            /* the simulator's step overhead: a negative one offsets only the
             * gradients c alone produces, which are created when c runs */
            int64_t ohb = rk_cnode_step_overhead(g, g->topo[st->k]);
            double oh = (double)ohb;
            lin_reset(&U);
            U.c0 = (double)m->input_size;
            for (int d = 0; d < D; d++)
                if (!is_in[d] && g->d[d].size > 0) OOM_IF(lin_expr(&U, m, cur[d], (double)g->d[d].size));
            /* memory at the step: present + overhead R + fresh outputs */
            OOM_IF(lin_copy(&l, &U) || lin_ref(&l, st->R, oh));
            while (ic < n_cre && cre[ic].step == s) {
                OOM_IF(lin_ref(&l, cre[ic].ref, (double)g->d[cre[ic].d].size));
                ic++;
            }
            OOM_IF(m_row(m, &l, -INFINITY, 0, CM_RHS_PEAK, 'm', t, st->k, 0));
            if (t == m->t_loss && st->k == m->t_loss) {
                /* saved at the loss: present - inputs - output <= M_save */
                OOM_IF(lin_copy(&l, &U));
                l.c0 -= (double)(m->input_size + m->output_size);
                OOM_IF(m_row(m, &l, -INFINITY, 0, CM_RHS_SAVE, 's', t, st->k, 0));
            }
            {
                /* what the step needs when its node runs */
                memset(fixedd, 0, (size_t)D + 1);
                int64_t base = m->input_size + ohb;
                for (int u = 0; u < c->n_uses; u++) {
                    int d = c->uses[u].data;
                    if (c->uses[u].kind == RK_EDGE_FAKE || is_in[d] || fixedd[d]) continue;
                    fixedd[d] = 1;
                    base += g->d[d].size;
                }
                for (int o = 0; o < c->n_outs; o++) {
                    int d = c->outs[o];
                    if (is_in[d] || fixedd[d]) continue;
                    fixedd[d] = 1;
                    base += g->d[d].size;
                }
                OOM_IF(m_knap(m, CM_RHS_PEAK, t, st->k, st->R, g, cur, is_in, fixedd, base));
                if (t == m->t_loss && st->k == t) {
                    memset(fixedd, 0, (size_t)D + 1);
                    fixedd[g->output] = 1;
                    OOM_IF(m_knap(m, CM_RHS_SAVE, t, st->k, CM_ONE, g, cur, is_in, fixedd, 0));
                }
            }
            while (ia < n_aft && aft[ia].step == s) {
                cur[aft[ia].d] = aft[ia].x;
                ia++;
            }
        }
        int *sw = Pcur;
        Pcur = Pnext;
        Pnext = sw;
    }
    m->stage_start[T] = m->n_steps;
    /* at the end: only inputs and input grads (the rules make P[T] constant) */
    for (int d = 0; d < D; d++) {
        if (is_in[d]) continue;
        int want = is_ig[d] ? CM_ONE : CM_ZERO;
        if (Pcur[d] != want) {
            lin_reset(&l);
            OOM_IF(lin_ref(&l, Pcur[d], 1));
            double v = want == CM_ONE ? 1 : 0;
            OOM_IF(m_row(m, &l, v, v, CM_RHS_FIXED, 'e', T, d, -1));
        }
    }
    if (!m->no_lp) {
        OOM_IF(m_twin_rows(m, &l, is_in, is_ig));
        OOM_IF(m_names(m));
    }
done:
    if (r == RK_ENOMEM && m && m->too_big)
        r = too_large_fail(g, too_large, err, est_steps, m->n_cols, "its terms", CM_MAX_TERMS);
    if (tl)
        for (int d = 0; d < D; d++) {
            free(tl[d].pos);
            free(tl[d].is_prod);
            free(tl[d].is_use);
        }
    free(tl);
    free(pos);
    free(need);
    free(ufwd);
    free(first_prod);
    free(last_prod);
    free(is_in);
    free(is_ig);
    free(R);
    free(Pcur);
    free(Pnext);
    free(cre);
    free(del);
    free(aft);
    free(cur);
    free(fixedd);
    free(mark);
    lin_free(&a);
    lin_free(&l);
    lin_free(&U);
    if (r) {
        rk_checkmate_model_free(m);
        return r;
    }
    *out = m;
    return RK_OK;
}

/* ------------------------------------------------------------------ LP */

double cm_obj_offset(const rk_checkmate_model *m) { return m->time_const; }

rk_status cm_model_lp(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save, int peak_var, int64_t fwd_extra,
                      rk_lp **out, rk_error *err) {
    *out = NULL;
    if (m->no_lp)
        return rk_fail(err, RK_EFAIL, "rk-Checkmate: the model (%d columns, %d steps) was built without its rows "
                       "(too large for an ILP); it has no LP", m->n_cols, m->n_steps);
    if (m->infeasible) return rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: the graph has no schedule (%s)", m->why);
    if (!peak_var && m->fixed_peak > m_peak)
        return rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: a step needs %lld bytes whatever the schedule; M_peak = %lld",
                       (long long)m->fixed_peak, (long long)m_peak);
    rk_lp *lp = rk_lp_new();
    if (!lp) return rk_fail(err, RK_ENOMEM, "out of memory");
    char name[64];
    for (int j = 0; j < m->n_cols; j++) {
        const cm_col *c = &m->cols[j];
        if (rk_lp_add_col(lp, m->names + m->name_at[j], peak_var ? 0 : c->obj, c->lb, c->ub, c->integer) < 0)
            goto oom;
    }
    int mcol = -1;
    if (peak_var) {
        mcol = rk_lp_add_col(lp, "Mpeak", 1, (double)m->fixed_peak, INFINITY, 0);
        if (mcol < 0) goto oom;
    } else {
        /* the objective is the recomputation time: the time of the runs
         * fixed to 1 (every node once) is added back when decoding
         * (cm_obj_offset); keeping it out of the LP keeps the objective's
         * granularity that of the R columns */
        rk_lp_set_obj_const(lp, 0);
    }
    int *cols = NULL;
    double *vals = NULL;
    int cap = 0;
    int loss_stage = -1; /* stages follow g->topo */
    if (peak_var && fwd_extra > 0)
        for (int t = 0; t < m->g->n_c; t++)
            if (m->g->topo[t] == m->g->loss) loss_stage = t;
    for (int i = 0; i < m->n_rows; i++) {
        const cm_row *rw = &m->rows[i];
        double lb = rw->lb - rw->e.c0, ub = rw->ub - rw->e.c0;
        int extra = 0;
        if (rw->kind == CM_RHS_PEAK) {
            if (peak_var) extra = 1;
            else ub += (double)m_peak + 0.5;
            if (peak_var && rw->t < loss_stage) ub -= (double)fwd_extra;
        } else if (rw->kind == CM_RHS_SAVE) {
            if (m_save < 0 || peak_var) continue;
            ub += (double)m_save + 0.5;
            if (rw->e.n == 0) {
                if (ub < 0) {
                    free(cols);
                    free(vals);
                    rk_lp_free(lp);
                    return rk_fail(err, RK_EINFEASIBLE, "rk-Checkmate: the saved memory is fixed above M_save");
                }
                continue;
            }
        }
        int ri = rk_lp_add_row(lp, m->names + m->name_at[m->n_cols + i], lb, ub);
        if (ri < 0) goto oom2;
        if (rw->e.n + 1 > cap) {
            cap = 2 * (rw->e.n + 1);
            int *c2 = realloc(cols, (size_t)cap * sizeof *c2);
            if (!c2) goto oom2;
            cols = c2;
            double *v2 = realloc(vals, (size_t)cap * sizeof *v2);
            if (!v2) goto oom2;
            vals = v2;
        }
        memcpy(cols, m->tcol + rw->e.start, (size_t)rw->e.n * sizeof(int));
        memcpy(vals, m->tval + rw->e.start, (size_t)rw->e.n * sizeof(double));
        int n = rw->e.n;
        if (extra) {
            cols[n] = mcol;
            vals[n] = -1;
            n++;
        }
        if (rk_lp_add_row_coefs(lp, ri, n, cols, vals)) goto oom2;
    }
    /* budget-dependent implied bounds at the sure steps: a data that
     * cannot fit beside what the step needs is absent (a row e <= 0), two
     * that cannot fit together are not both present (e1 + e2 <= 1) */
    if (!peak_var) {
        lin l1 = {0};
        for (int q = 0; q < m->n_knap; q++) {
            const cm_knap *k = &m->knap[q];
            int64_t cap;
            if (k->kind == CM_RHS_PEAK) cap = m_peak - k->mand;
            else if (m_save >= 0) cap = m_save - k->mand;
            else continue;
            if (cap < 0) {
                /* the step's node cannot run at all under this budget */
                if (k->r == CM_ONE) {
                    lin_free(&l1);
                    free(cols);
                    free(vals);
                    rk_lp_free(lp);
                    return rk_fail(err, RK_EINFEASIBLE,
                                   "rk-Checkmate: stage %d needs %lld bytes whatever the schedule; budget %lld",
                                   k->t, (long long)(k->mand + (k->kind == CM_RHS_PEAK ? 0 : 0)),
                                   (long long)(k->kind == CM_RHS_PEAK ? m_peak : m_save));
                }
                lin_reset(&l1);
                if (lin_ref(&l1, k->r, 1)) goto oom3;
                snprintf(name, sizeof name, "kr%d_%d", k->t, k->k);
                int ri = rk_lp_add_row(lp, name, -INFINITY, 0);
                if (ri < 0 || rk_lp_add_row_coefs(lp, ri, l1.n, l1.col, l1.val)) goto oom3;
                continue;
            }
            int npair = 0;
            for (int a = 0; a < k->n; a++) {
                int da = m->opt_d[k->start + a];
                int64_t sa = m->g->d[da].size;
                lin_reset(&l1);
                if (sa > cap) {
                    /* absent whenever the step's node runs: e + r <= 1 */
                    if (lin_expr(&l1, m, m->opt_e[k->start + a], 1) || lin_ref(&l1, k->r, 1)) goto oom3;
                    lin_normalize(&l1);
                    if (l1.n == 0) continue;
                    snprintf(name, sizeof name, "k%c%d_%d_%d", k->kind == CM_RHS_PEAK ? 'm' : 's', k->t, k->k, da);
                    int ri = rk_lp_add_row(lp, name, -INFINITY, 1 - l1.c0);
                    if (ri < 0 || rk_lp_add_row_coefs(lp, ri, l1.n, l1.col, l1.val)) goto oom3;
                    continue;
                }
                for (int b2 = a + 1; b2 < k->n && npair < 400 && k->r == CM_ONE; b2++) {
                    int db = m->opt_d[k->start + b2];
                    int64_t sb = m->g->d[db].size;
                    if (sb > cap || sa + sb <= cap) continue;
                    lin_reset(&l1);
                    if (lin_expr(&l1, m, m->opt_e[k->start + a], 1) || lin_expr(&l1, m, m->opt_e[k->start + b2], 1))
                        goto oom3;
                    lin_normalize(&l1);
                    if (l1.n == 0) continue;
                    snprintf(name, sizeof name, "k%c%d_%d_%d_%d", k->kind == CM_RHS_PEAK ? 'm' : 's', k->t, k->k, da, db);
                    int ri = rk_lp_add_row(lp, name, -INFINITY, 1 - l1.c0);
                    if (ri < 0 || rk_lp_add_row_coefs(lp, ri, l1.n, l1.col, l1.val)) goto oom3;
                    npair++;
                }
            }
        }
        lin_free(&l1);
        goto fin;
    oom3:
        lin_free(&l1);
        goto oom2;
    }
fin:
    free(cols);
    free(vals);
    *out = lp;
    return RK_OK;
oom2:
    free(cols);
    free(vals);
oom:
    rk_lp_free(lp);
    return rk_fail(err, RK_ENOMEM, "out of memory building the LP");
}

rk_status rk_checkmate_model_lp(const rk_checkmate_model *m, int64_t m_peak, int64_t m_save, rk_lp **lp,
                                rk_error *err) {
    return cm_model_lp(m, m_peak, m_save, 0, 0, lp, err);
}

/* Round the integer columns of x to the nearest integer (every column of the
 * model is integer: 0/1, and the recomputation counts N). */
void cm_fix_continuous(const rk_checkmate_model *m, double *x) {
    for (int j = 0; j < m->n_cols; j++)
        if (m->cols[j].integer) x[j] = floor(x[j] + 0.5);
}

/* ------------------------------------------------------------- decoding */

static int ref_val(int ref, const double *x) {
    if (ref == CM_ZERO) return 0;
    if (ref == CM_ONE) return 1;
    return x[ref] > 0.5;
}

rk_status rk_checkmate_model_decode_ops(const rk_checkmate_model *m, const double *x, rk_op **ops, int *n_ops,
                                        double *objective, rk_error *err) {
    const rk_graph *g = m->g;
    int cap = m->n_steps + m->n_dels + 4, n = 0;
    rk_op *o = malloc((size_t)cap * sizeof *o);
    if (!o) return rk_fail(err, RK_ENOMEM, "out of memory");
    double obj = m->time_const;
    for (int t = 0; t < m->T; t++) {
        for (int s = m->stage_start[t]; s < m->stage_start[t + 1]; s++) {
            const cm_step *st = &m->steps[s];
            int run = ref_val(st->R, x);
            if (run) {
                o[n].kind = RK_OP_RUN;
                o[n].block = 0;
                o[n].node = g->topo[st->k];
                o[n].option = -1;
                n++;
                if (st->R >= 0) obj += g->c[g->topo[st->k]].time;
            }
            for (int i = 0; i < st->n_del; i++) {
                const cm_del *dl = &m->dels[st->del_start + i];
                double v = dl->x.c0;
                for (int j = 0; j < dl->x.n; j++) v += m->tval[dl->x.start + j] * ref_val(m->tcol[dl->x.start + j], x);
                if (fabs(v) > 1e-6 && fabs(v - 1) > 1e-6) {
                    free(o);
                    return rk_fail(err, RK_EFAIL,
                                   "BUG: rk-Checkmate: deletion of '%s' at stage %d step %d evaluates to %g (not 0/1)",
                                   g->d[dl->d].name, t, st->k, v);
                }
                if (v > 0.5) {
                    o[n].kind = RK_OP_FORGET;
                    o[n].block = 0;
                    o[n].node = dl->d;
                    o[n].option = -1;
                    n++;
                }
            }
        }
    }
    *ops = o;
    *n_ops = n;
    if (objective) *objective = obj;
    return RK_OK;
}

rk_status cm_decode_replay(const rk_checkmate_model *m, const double *x, rk_op **ops, int *n_ops, double *objective,
                           int64_t *peak, double *sim_time, rk_error *err) {
    rk_status r = rk_checkmate_model_decode_ops(m, x, ops, n_ops, objective, err);
    if (r) return r;
    rk_block_state st;
    if (rk_block_state_init(&st, m->g)) {
        free(*ops);
        *ops = NULL;
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    r = rk_block_replay(m->g, &st, *ops, *n_ops, "rk-Checkmate decoded schedule", err);
    if (!r) r = rk_block_check_complete(m->g, &st, "rk-Checkmate decoded schedule", err);
    if (r) {
        char buf[sizeof err->msg];
        snprintf(buf, sizeof buf, "BUG: rk-Checkmate: the decoded schedule fails the simulator: %.900s", err->msg);
        rk_block_state_free(&st);
        free(*ops);
        *ops = NULL;
        return rk_fail(err, RK_EFAIL, "%s", buf);
    }
    *peak = st.peak;
    *sim_time = st.time;
    rk_block_state_free(&st);
    return RK_OK;
}

static int time_equal(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))); }

rk_status rk_checkmate_model_decode_option(const rk_checkmate_model *m, const double *x, int64_t m_peak,
                                           int64_t m_save, rk_option *opt, double *objective, rk_error *err) {
    const rk_graph *g = m->g;
    memset(opt, 0, sizeof *opt);
    rk_op *ops = NULL;
    int n = 0;
    double obj = 0, st_time = 0;
    int64_t peak = 0;
    rk_status r = cm_decode_replay(m, x, &ops, &n, &obj, &peak, &st_time, err);
    if (r) return r;
    if (peak > m_peak) {
        free(ops);
        return rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: decoded schedule peaks at %lld bytes > M_peak = %lld",
                       (long long)peak, (long long)m_peak);
    }
    if (!time_equal(st_time, obj)) {
        free(ops);
        return rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: decoded schedule takes %.17g us, the ILP objective is %.17g",
                       st_time, obj);
    }
    int li = -1;
    for (int i = 0; i < n; i++)
        if (ops[i].kind == RK_OP_RUN && ops[i].node == g->loss) {
            li = i;
            break;
        }
    if (li < 0) {
        free(ops);
        return rk_fail(err, RK_EFAIL, "BUG: rk-Checkmate: decoded schedule never runs the loss");
    }
    opt->n_fwd = li;
    opt->n_bwd = n - li - 1;
    opt->fwd = malloc((size_t)(opt->n_fwd + 1) * sizeof(rk_op));
    opt->bwd = malloc((size_t)(opt->n_bwd + 1) * sizeof(rk_op));
    if (!opt->fwd || !opt->bwd) {
        free(ops);
        rk_option_free(opt);
        return rk_fail(err, RK_ENOMEM, "out of memory");
    }
    memcpy(opt->fwd, ops, (size_t)opt->n_fwd * sizeof(rk_op));
    memcpy(opt->bwd, ops + li + 1, (size_t)opt->n_bwd * sizeof(rk_op));
    free(ops);
    r = rk_option_evaluate(g, opt, err);
    if (r) {
        char buf[sizeof err->msg];
        snprintf(buf, sizeof buf, "BUG: rk-Checkmate: decoded option breaks the option contract: %.900s", err->msg);
        rk_option_free(opt);
        return rk_fail(err, RK_EFAIL, "%s", buf);
    }
    double tot = opt->fwd_time + g->c[g->loss].time + opt->bwd_time;
    const char *bad = NULL;
    if (opt->fwd_peak > m_peak || opt->bwd_peak > m_peak) bad = "peak above M_peak";
    else if (m_save >= 0 && opt->saved > m_save) bad = "saved memory above M_save";
    else if (!time_equal(tot, obj)) bad = "time differs from the ILP objective";
    if (bad) {
        rk_fail(err, RK_EFAIL,
                "BUG: rk-Checkmate: decoded option has %s (fwd peak %lld, bwd peak %lld, saved %lld, time %.17g; "
                "M_peak %lld, M_save %lld, objective %.17g)",
                bad, (long long)opt->fwd_peak, (long long)opt->bwd_peak, (long long)opt->saved, tot,
                (long long)m_peak, (long long)m_save, obj);
        rk_option_free(opt);
        return RK_EFAIL;
    }
    if (objective) *objective = obj;
    return RK_OK;
}
