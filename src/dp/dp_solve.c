/* dp_solve.c — rk_dp_solve, the DP module's entry point: the algorithms
 * behind `rkmate solve`, rk-Rotor / Rotor (the DP table, with the keep-all /
 * sqrt(n) / recompute-all plans of the same family as a fallback against slot
 * rounding), and the baselines sqrt(n), keep-everything and
 * recompute-everything; the smallest budget of each. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

const char *rk_dp_algo_name(rk_dp_algo a) {
    switch (a) {
    case RK_DP_ROCKMATE: return "rockmate";
    case RK_DP_ROTOR: return "rotor";
    case RK_DP_SQRT: return "sqrt";
    case RK_DP_KEEP_ALL: return "none";
    case RK_DP_RECOMPUTE_ALL: return "recompute-all";
    }
    return "?";
}

int rk_dp_algo_parse(const char *name) {
    if (!strcmp(name, "rockmate")) return RK_DP_ROCKMATE;
    if (!strcmp(name, "rotor")) return RK_DP_ROTOR;
    if (!strcmp(name, "sqrt")) return RK_DP_SQRT;
    if (!strcmp(name, "none") || !strcmp(name, "keep-all")) return RK_DP_KEEP_ALL;
    if (!strcmp(name, "recompute-all")) return RK_DP_RECOMPUTE_ALL;
    return -1;
}

typedef rk_status (*rule_fn)(const rk_dp_costs *, rk_dp_plan *, rk_error *);
static rk_status sqrt_default(const rk_dp_costs *c, rk_dp_plan *p, rk_error *err) {
    return rk_dp_plan_sqrt(c, 0, p, err);
}
static const struct {
    const char *name;
    rule_fn fn;
} rules[] = {{"keep-all", rk_dp_plan_keep_all}, {"sqrt", sqrt_default}, {"recompute-all", rk_dp_plan_recompute_all}};

static int has_keep_all(const rk_dp_costs *c) {
    for (int k = 0; k < c->n_classes; k++)
        if (c->classes[k].keep_all < 1 || c->classes[k].keep_all >= c->classes[k].n_options) return 0;
    return 1;
}

static rk_status rule_plan(const rk_dp_costs *c, int which, rk_dp_plan *p, rk_dp_eval *ev, rk_error *err) {
    rk_status r = rules[which].fn(c, p, err);
    if (r) return r;
    if ((r = rk_dp_plan_evaluate(c, p, ev, err))) rk_dp_plan_free(p);
    return r;
}

static void result_from(rk_dp_result *res, const rk_dp_eval *ev, const char *source) {
    res->feasible = 1;
    res->predicted_peak = ev->peak;
    res->predicted_time = ev->time;
    res->n_forwards = ev->n_forwards;
    res->source = source;
}

/* Rotor's view of costs with more options: {none, keep_all} per class. */
static rk_status rotor_view(const rk_dp_costs *c, rk_dp_costs *r, rk_error *err) {
    if (!has_keep_all(c)) return rk_fail(err, RK_EINPUT, "rotor needs a keep-all option in every class");
    int *two = malloc((size_t)c->n_classes * sizeof *two);
    if (!two) return rk_fail(err, RK_ENOMEM, "out of memory");
    for (int k = 0; k < c->n_classes; k++) two[k] = 2;
    rk_status st = rk_dp_costs_alloc(r, c->n_classes, two, c->n_blocks);
    free(two);
    if (st) return rk_fail(err, st, "out of memory");
    memcpy(r->block_class, c->block_class, (size_t)c->n_blocks * sizeof *r->block_class);
    for (int k = 0; k < c->n_classes; k++) {
        rk_dp_class_cost *d = &r->classes[k];
        const rk_dp_class_cost *s = &c->classes[k];
        d->input_size = s->input_size;
        d->output_size = s->output_size;
        d->output_grad_size = s->output_grad_size;
        d->keep_all = 1;
        d->opt[0] = s->opt[0];
        d->opt[1] = s->opt[s->keep_all];
    }
    return RK_OK;
}

static int needs_rotor_view(const rk_dp_costs *c) {
    for (int k = 0; k < c->n_classes; k++)
        if (c->classes[k].n_options != 2 || c->classes[k].keep_all != 1) return 1;
    return 0;
}

static rk_status solve_impl(const rk_dp_costs *c, rk_dp_algo algo, int64_t budget, const rk_dp_params *p,
                            rk_dp_plan *plan, rk_dp_result *res, rk_error *err);

rk_status rk_dp_solve(const rk_dp_costs *c, rk_dp_algo algo, int64_t budget, const rk_dp_params *p,
                      rk_dp_plan *plan, rk_dp_result *res, rk_error *err) {
    if (algo != RK_DP_ROTOR || !needs_rotor_view(c)) return solve_impl(c, algo, budget, p, plan, res, err);
    memset(plan, 0, sizeof *plan);
    memset(res, 0, sizeof *res);
    rk_status r = rk_dp_costs_check(c, err);
    if (r) return r;
    rk_dp_costs rc;
    if ((r = rotor_view(c, &rc, err))) return r;
    r = solve_impl(&rc, algo, budget, p, plan, res, err);
    if (!r && res->feasible) { /* option 1 of the view is each class's keep_all */
        int W = c->n_blocks + 1;
        for (int s = 0; s < c->n_blocks; s++)
            for (int t = s + 1; t <= c->n_blocks; t++)
                if (plan->code[s * W + t] == 1) plan->code[s * W + t] = c->classes[c->block_class[s]].keep_all;
    }
    rk_dp_costs_free(&rc);
    return r;
}

static rk_status solve_impl(const rk_dp_costs *c, rk_dp_algo algo, int64_t budget, const rk_dp_params *p,
                            rk_dp_plan *plan, rk_dp_result *res, rk_error *err) {
    rk_dp_params defp;
    if (!p) {
        rk_dp_params_default(&defp);
        p = &defp;
    }
    memset(res, 0, sizeof *res);
    memset(plan, 0, sizeof *plan);
    res->budget = budget;
    res->predicted_peak = -1;
    res->predicted_time = INFINITY;
    rk_status r = rk_dp_costs_check(c, err);
    if (r) return r;
    if (budget < 0) return rk_fail(err, RK_EINPUT, "budget %lld is negative", (long long)budget);
    rk_dp_eval ev;
    if (algo == RK_DP_SQRT || algo == RK_DP_KEEP_ALL || algo == RK_DP_RECOMPUTE_ALL) {
        int which = algo == RK_DP_KEEP_ALL ? 0 : algo == RK_DP_SQRT ? 1 : 2;
        if ((r = rule_plan(c, which, plan, &ev, err))) return r;
        res->source = rules[which].name;
        if (ev.peak <= budget) result_from(res, &ev, rules[which].name);
        else {
            rk_dp_plan_free(plan);
            res->predicted_peak = ev.peak; /* what it would need */
        }
        return RK_OK;
    }
    if (algo != RK_DP_ROCKMATE && algo != RK_DP_ROTOR) return rk_fail(err, RK_EINPUT, "unknown algorithm %d", algo);
    rk_dp_table *t;
    double t0 = omp_get_wtime();
    if ((r = rk_dp_table_fill(c, budget, p, &t, err))) return r;
    res->fill_time_s = omp_get_wtime() - t0;
    res->table_bytes = rk_dp_table_bytes(t);
    res->unit = rk_dp_table_unit(t);
    res->slots = rk_dp_table_slots(t);
    if (rk_dp_table_feasible(t)) {
        r = rk_dp_table_plan(t, plan, err);
        if (!r) r = rk_dp_plan_evaluate(c, plan, &ev, err);
        if (!r && ev.peak > budget)
            r = rk_fail(err, RK_EFAIL, "internal: the DP plan needs %lld bytes, over the budget %lld",
                        (long long)ev.peak, (long long)budget);
        if (r) {
            rk_dp_plan_free(plan);
            rk_dp_table_free(t);
            return r;
        }
        result_from(res, &ev, "dp");
    }
    rk_dp_table_free(t);
    if (p->fallback && has_keep_all(c)) {
        for (int k = 0; k < (int)(sizeof rules / sizeof rules[0]); k++) {
            rk_dp_plan q;
            if ((r = rule_plan(c, k, &q, &ev, err))) {
                rk_dp_plan_free(plan);
                return r;
            }
            /* strictly faster beyond rounding noise, or the only one that fits */
            if (ev.peak <= budget &&
                (!res->feasible || ev.time < res->predicted_time - 1e-9 * fabs(res->predicted_time))) {
                rk_dp_plan_free(plan);
                *plan = q;
                result_from(res, &ev, rules[k].name);
            } else {
                rk_dp_plan_free(&q);
            }
        }
    }
    return RK_OK;
}

rk_status rk_dp_algo_min_budget(const rk_dp_costs *c, rk_dp_algo algo, const rk_dp_params *p, int64_t *out,
                                rk_error *err) {
    rk_dp_params defp;
    if (!p) {
        rk_dp_params_default(&defp);
        p = &defp;
    }
    rk_status r = rk_dp_costs_check(c, err);
    if (r) return r;
    rk_dp_plan q;
    rk_dp_eval ev;
    if (algo == RK_DP_SQRT || algo == RK_DP_KEEP_ALL || algo == RK_DP_RECOMPUTE_ALL) {
        int which = algo == RK_DP_KEEP_ALL ? 0 : algo == RK_DP_SQRT ? 1 : 2;
        if ((r = rule_plan(c, which, &q, &ev, err))) return r;
        rk_dp_plan_free(&q);
        *out = ev.peak;
        return RK_OK;
    }
    int64_t best;
    if (algo == RK_DP_ROTOR && needs_rotor_view(c)) {
        rk_dp_costs rc;
        if ((r = rotor_view(c, &rc, err))) return r;
        r = rk_dp_min_budget(&rc, p->slots, &best, err);
        rk_dp_costs_free(&rc);
        if (r) return r;
    } else if ((r = rk_dp_min_budget(c, p->slots, &best, err))) {
        return r;
    }
    if (p->fallback && has_keep_all(c))
        for (int k = 0; k < (int)(sizeof rules / sizeof rules[0]); k++) {
            if ((r = rule_plan(c, k, &q, &ev, err))) return r;
            rk_dp_plan_free(&q);
            if (ev.peak < best) best = ev.peak;
        }
    *out = best;
    return RK_OK;
}
