/* simplex_basis.c — changing an spx between solves: bases read and set
 * (by LU updates when few columns change), cut rows added and removed, and
 * snapshots of the basis and bounds restored for the search's nodes. */
#include "simplex_internal.h"

rk_status spx_get_basis(const spx *s, spx_basis *b) {
    b->n = s->n;
    b->m = s->m;
    b->col = malloc((size_t)(s->n ? s->n : 1));
    b->row = malloc((size_t)(s->m ? s->m : 1));
    if (!b->col || !b->row) { free(b->col); free(b->row); b->col = b->row = NULL; return RK_ENOMEM; }
    for (int j = 0; j < s->n; j++) b->col[j] = s->vst[j];
    for (int i = 0; i < s->m; i++) {
        int st = s->vst[s->n + i];
        b->row[i] = (signed char)(st == VS_LB ? 2 : st == VS_UB ? 1 : st);
    }
    return RK_OK;
}

rk_status spx_set_basis(spx *s, const spx_basis *b) {
    if (b->n != s->n || b->m != s->m) return RK_EINPUT;
    s->x_valid = s->d_valid = 0;
    int nb = 0;
    for (int j = 0; j < s->n; j++) nb += b->col[j] == 0;
    for (int i = 0; i < s->m; i++) nb += b->row[i] == 0;
    if (nb != s->m) return RK_EINPUT;
    /* Few basis changes: reach the new basis by LU updates instead of a
     * refactorization (B&B switches between nearby nodes all the time). */
    int N = s->n + s->m, nin = 0, nout = 0;
    int *ent = s->cand, *lpos = s->bad_pos;
    for (int j = 0; j < N; j++) {
        int tb = (j < s->n ? b->col[j] : b->row[j - s->n]) == 0;
        int cb = s->vst[j] == VS_BASIC;
        if (tb && !cb) ent[nin++] = j;
        else if (!tb && cb) lpos[nout++] = s->bpos[j];
    }
    int ok = nin == nout && (nin == 0 || (s->lu_ok && nin <= 50 && nin <= s->m / 4 + 1));
    for (int k = 0; k < nin && ok; k++) {
        int q = ent[k];
        double *alpha = s->alpha;
        for (int i = 0; i < s->m; i++) alpha[i] = 0.0;
        col_axpy(s, q, 1.0, alpha);
        lu_ftran(s->lu, alpha);
        double amax = 0.0, best = 0.0;
        int bt = -1;
        for (int i = 0; i < s->m; i++) {
            double v = fabs(alpha[i]);
            if (v > amax) amax = v;
        }
        for (int t = 0; t < nout; t++) {
            if (lpos[t] < 0) continue;
            double v = fabs(alpha[lpos[t]]);
            if (v > best) { best = v; bt = t; }
        }
        if (bt < 0 || best < 1e-9 || best < 1e-3 * amax) { ok = 0; break; }
        int p = lpos[bt], jo = s->head[p];
        lpos[bt] = -1;
        s->head[p] = q;
        s->bpos[q] = p;
        s->vst[q] = VS_BASIC;
        s->bpos[jo] = -1;
        s->vst[jo] = VS_LB;
        s->dse[p] = 1.0;
        int rc = lu_update(s->lu, p, alpha, NULL, 0);
        if (rc < 0) { s->lu_ok = 0; ok = 0; break; }
        if (rc > 0) s->need_refactor = 1;
    }
    if (ok) {
        for (int j = 0; j < N; j++) {
            int st = j < s->n ? b->col[j] : b->row[j - s->n];
            if (st == 0) continue;
            if (j >= s->n && st > 0 && st < 3) st = st == 1 ? VS_UB : VS_LB;
            if (st < 1 || st > 3) st = VS_LB;
            s->vst[j] = (signed char)st;
            fix_status(s, j);
        }
        s->solved_once = 1;
        return RK_OK;
    }
    int p = 0;
    for (int j = 0; j < s->n + s->m; j++) {
        int st = j < s->n ? b->col[j] : b->row[j - s->n];
        if (j >= s->n && st > 0 && st < 3) st = st == 1 ? VS_UB : VS_LB;
        if (st < 0 || st > 3) st = VS_LB;
        s->vst[j] = (signed char)st;
        if (st == VS_BASIC) {
            s->head[p] = j;
            s->bpos[j] = p;
            s->dse[p] = 1.0;
            p++;
        } else {
            s->bpos[j] = -1;
            fix_status(s, j);
        }
    }
    s->lu_ok = 0;
    s->solved_once = 1;
    return RK_OK;
}

void spx_basis_free(spx_basis *b) {
    if (!b) return;
    free(b->col);
    free(b->row);
    b->col = b->row = NULL;
}

long spx_iterations(const spx *s) { return s->iters; }

rk_status spx_add_rows(spx *s, int nrows, const double *lb, const double *ub,
                              const int *start, const int *idx, const double *val) {
    s->x_valid = s->d_valid = 0;
    if (nrows <= 0) return RK_OK;
    int n = s->n, m0 = s->m, m1 = m0 + nrows;
    long add = start[nrows] - start[0];
    for (long p = start[0]; p < start[nrows]; p++)
        if (idx[p] < 0 || idx[p] >= n) return RK_EINPUT;
    /* save N-indexed data (logicals shift nothing: they are appended) */
    if (sx_alloc_arrays(s, n, m1)) return RK_ENOMEM;
    for (int j = n + m0; j < n + m1; j++) { s->arow[j] = 0.0; s->amark[j] = 0; }
    /* new row scales */
    for (int k = 0; k < nrows; k++) {
        double hi = 0.0;
        for (int p = start[k]; p < start[k + 1]; p++) hi = fmax(hi, fabs(val[p] * s->cs[idx[p]]));
        s->rs[m0 + k] = hi > 0 ? pow2_round(1.0 / hi) : 1.0;
    }
    /* rebuild CSC with the new entries */
    long nnz0 = s->Acs[n];
    long *ns = calloc((size_t)n + 1, sizeof *ns);
    int *ni = malloc((size_t)(nnz0 + add + 1) * sizeof *ni);
    double *nv = malloc((size_t)(nnz0 + add + 1) * sizeof *nv);
    if (!ns || !ni || !nv) { free(ns); free(ni); free(nv); return RK_ENOMEM; }
    for (int j = 0; j < n; j++) ns[j + 1] = s->Acs[j + 1] - s->Acs[j];
    for (int k = 0; k < nrows; k++)
        for (int p = start[k]; p < start[k + 1]; p++) ns[idx[p] + 1]++;
    for (int j = 0; j < n; j++) ns[j + 1] += ns[j];
    long *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
    if (!fill) { free(ns); free(ni); free(nv); return RK_ENOMEM; }
    for (int j = 0; j < n; j++) {
        fill[j] = ns[j];
        for (long p = s->Acs[j]; p < s->Acs[j + 1]; p++) { ni[fill[j]] = s->Aci[p]; nv[fill[j]] = s->Acv[p]; fill[j]++; }
    }
    for (int k = 0; k < nrows; k++)
        for (int p = start[k]; p < start[k + 1]; p++) {
            int j = idx[p];
            if (val[p] == 0.0) continue;
            ni[fill[j]] = m0 + k;
            nv[fill[j]] = val[p] * s->cs[j] * s->rs[m0 + k];
            fill[j]++;
        }
    /* compact (zeros skipped leave holes) */
    long w = 0;
    for (int j = 0; j < n; j++) {
        long b = ns[j], e = fill[j];
        ns[j] = w;
        for (long p = b; p < e; p++) { ni[w] = ni[p]; nv[w] = nv[p]; w++; }
    }
    ns[n] = w;
    free(fill);
    free(s->Acs); free(s->Aci); free(s->Acv);
    s->Acs = ns; s->Aci = ni; s->Acv = nv;
    s->m = m1;
    if (sx_build_rowwise(s)) return RK_ENOMEM;
    for (int k = 0; k < nrows; k++) {
        int i = m0 + k, j = n + i;
        s->c[j] = 0.0;
        s->cw[j] = 0.0;
        s->lb[j] = -ub[k] * s->rs[i];
        s->ub[j] = -lb[k] * s->rs[i];
        s->vst[j] = VS_BASIC;
        s->bpos[j] = i;
        s->head[i] = j;
        s->dse[i] = 1.0;
        s->dvx[j] = 1.0;
        s->x[j] = 0.0;
        s->d[j] = 0.0;
    }
    s->lu_ok = 0;
    return RK_OK;
}

rk_status spx_remove_rows(spx *s, const char *drop) {
    int n = s->n, m = s->m;
    int *map = malloc((size_t)(m ? m : 1) * sizeof *map); /* old row -> new row, -1 dropped */
    if (!map) return RK_ENOMEM;
    int m1 = 0;
    for (int i = 0; i < m; i++) {
        if (drop[i] && s->vst[n + i] != VS_BASIC) { free(map); return RK_EINPUT; }
        map[i] = drop[i] ? -1 : m1++;
    }
    if (m1 == m) { free(map); return RK_OK; }
    /* the pivot-row work list may name logicals that go */
    for (int k = 0; k < s->alen; k++) s->arow[s->alist[k]] = 0.0;
    s->alen = 0;
    memset(s->amark, 0, (size_t)(n + m));
    /* matrix: drop the entries of the dropped rows, renumber the others */
    long w = 0;
    for (int j = 0; j < n; j++) {
        long b = s->Acs[j], e = s->Acs[j + 1];
        s->Acs[j] = w;
        for (long p = b; p < e; p++) {
            int i = map[s->Aci[p]];
            if (i < 0) continue;
            s->Aci[w] = i;
            s->Acv[w] = s->Acv[p];
            w++;
        }
    }
    s->Acs[n] = w;
    /* logicals (N-indexed) and row-indexed data move down; the basis loses
     * the dropped rows' basic logicals, its other positions keep their order */
    int pos = 0;
    for (int k = 0; k < m; k++) {
        int j = s->head[k];
        int keep = j < n || map[j - n] >= 0;
        if (!keep) continue;
        s->head[pos] = j < n ? j : n + map[j - n];
        s->dse[pos] = s->dse[k];
        pos++;
    }
    for (int i = 0; i < m; i++) {
        int t = map[i];
        if (t < 0 || t == i) continue;
        int a = n + i, b = n + t;
        s->c[b] = s->c[a]; s->cw[b] = s->cw[a]; s->lb[b] = s->lb[a]; s->ub[b] = s->ub[a];
        s->vst[b] = s->vst[a]; s->x[b] = s->x[a]; s->d[b] = s->d[a]; s->dvx[b] = s->dvx[a];
        s->arow[b] = 0.0; s->amark[b] = 0;
        s->rs[t] = s->rs[i];
    }
    free(map);
    s->m = m1;
    for (int j = 0; j < n + m1; j++) s->bpos[j] = -1;
    for (int k = 0; k < m1; k++) s->bpos[s->head[k]] = k;
    if (sx_build_rowwise(s)) return RK_ENOMEM;
    s->lu_ok = 0;
    s->x_valid = s->d_valid = 0;
    return RK_OK;
}

/* ------------------------------------------------------------ snapshot */

struct spx_state {
    int n, m;
    int *head, *bpos;
    signed char *vst;
    double *x, *d, *dse, *lb, *ub, *olb, *oub;
    unsigned long lu_gen;
    int neta, lu_ok, need_refactor, x_valid, d_valid;
    rk_lp_status last;
};

/* The arrays of a snapshot: engine -> state (to_state) or back. */
static void state_copy(spx *s, spx_state *st, int to_state) {
    int n = s->n, m = s->m;
    size_t N = (size_t)(n + m);
#define CP(a, b, k) (to_state ? memcpy((a), (b), (k) * sizeof *(a)) : memcpy((b), (a), (k) * sizeof *(a)))
    CP(st->head, s->head, (size_t)m);
    CP(st->bpos, s->bpos, N);
    CP(st->vst, s->vst, N);
    CP(st->x, s->x, N);
    CP(st->d, s->d, N);
    CP(st->dse, s->dse, (size_t)m);
    CP(st->lb, s->lb, N);
    CP(st->ub, s->ub, N);
    CP(st->olb, s->olb, (size_t)n);
    CP(st->oub, s->oub, (size_t)n);
#undef CP
}

void spx_state_free(spx_state *st) {
    if (!st) return;
    free(st->head); free(st->bpos); free(st->vst); free(st->x); free(st->d); free(st->dse);
    free(st->lb); free(st->ub); free(st->olb); free(st->oub);
    free(st);
}

spx_state *spx_state_save(const spx *s, spx_state *st) {
    int n = s->n, m = s->m, N = n + m;
    if (st && (st->n != n || st->m != m)) {
        spx_state_free(st);
        st = NULL;
    }
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return NULL;
        st->n = n;
        st->m = m;
        size_t mm = (size_t)(m ? m : 1), NN = (size_t)N, nn = (size_t)(n ? n : 1);
        st->head = malloc(mm * sizeof *st->head);
        st->bpos = malloc(NN * sizeof *st->bpos);
        st->vst = malloc(NN);
        st->x = malloc(NN * sizeof *st->x);
        st->d = malloc(NN * sizeof *st->d);
        st->dse = malloc(mm * sizeof *st->dse);
        st->lb = malloc(NN * sizeof *st->lb);
        st->ub = malloc(NN * sizeof *st->ub);
        st->olb = malloc(nn * sizeof *st->olb);
        st->oub = malloc(nn * sizeof *st->oub);
        if (!st->head || !st->bpos || !st->vst || !st->x || !st->d || !st->dse || !st->lb || !st->ub || !st->olb ||
            !st->oub) {
            spx_state_free(st);
            return NULL;
        }
    }
    state_copy((spx *)s, st, 1);
    st->lu_gen = lu_generation(s->lu);
    st->neta = lu_num_updates(s->lu);
    st->lu_ok = s->lu_ok;
    st->need_refactor = s->need_refactor;
    st->x_valid = s->x_valid;
    st->d_valid = s->d_valid;
    st->last = s->last;
    return st;
}

void spx_state_restore(spx *s, const spx_state *st) {
    int n = s->n, m = s->m;
    if (st->n != n || st->m != m) return;
    state_copy(s, (spx_state *)st, 0);
    sx_remove_perturbation(s);
    s->last = st->last;
    s->n_incr = 0;
    if (st->lu_ok && s->lu_ok && lu_generation(s->lu) == st->lu_gen && lu_num_updates(s->lu) >= st->neta) {
        lu_truncate_updates(s->lu, st->neta);
        s->need_refactor = st->need_refactor;
        s->x_valid = st->x_valid;
        s->d_valid = st->d_valid;
    } else {
        /* refactored since: the factors are of another basis */
        s->lu_ok = 0;
        s->need_refactor = 1;
        s->x_valid = s->d_valid = 0;
    }
}
