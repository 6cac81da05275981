/* solve.c — the solver pipeline on a chain: options, DP or baseline, plan
 * reconstruction, replay by the simulator and the checks on it. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rk_solve.h"

struct rk_solver {
    const rk_chain *ch;
    rk_solve_params p;
    rk_dp_options opts;
    rk_dp_costs costs;
    int have_costs;
    rk_solver_info info;
};

static const char *algo_names[] = {"rockmate", "rotor", "sqrt", "none", "recompute-all", "checkmate"};

const char *rk_solve_algo_name(rk_solve_algo a) {
    return (a >= 0 && a <= RK_SOLVE_CHECKMATE) ? algo_names[a] : "?";
}

int rk_solve_algo_parse(const char *name) {
    for (int i = 0; i <= RK_SOLVE_CHECKMATE; i++)
        if (!strcmp(name, algo_names[i])) return i;
    if (!strcmp(name, "keep-all")) return RK_SOLVE_NONE;
    return -1;
}

void rk_solve_params_default(rk_solve_params *p) {
    memset(p, 0, sizeof *p);
    p->algo = RK_SOLVE_ROCKMATE;
    rk_dp_params_default(&p->dp);
    rk_checkmate_params_default(&p->cm);
    p->checkmate_options = 1;
}

static rk_dp_algo dp_algo_of(rk_solve_algo a) {
    switch (a) {
    case RK_SOLVE_ROCKMATE: return RK_DP_ROCKMATE;
    case RK_SOLVE_ROTOR: return RK_DP_ROTOR;
    case RK_SOLVE_SQRT: return RK_DP_SQRT;
    case RK_SOLVE_NONE: return RK_DP_KEEP_ALL;
    case RK_SOLVE_RECOMPUTE_ALL: return RK_DP_RECOMPUTE_ALL;
    default: return RK_DP_KEEP_ALL;
    }
}

rk_status rk_solver_new(const rk_chain *ch, const rk_solve_params *p, rk_solver **out, rk_error *err) {
    *out = NULL;
    rk_status r = rk_chain_validate(ch, "chain", err);
    if (r) return r;
    rk_solver *s = calloc(1, sizeof *s);
    if (!s) return rk_fail(err, RK_ENOMEM, "out of memory");
    s->ch = ch;
    s->p = *p;
    double t0 = omp_get_wtime();
    if (p->algo == RK_SOLVE_CHECKMATE) {
        *out = s;
        return RK_OK;
    }
    if (p->algo == RK_SOLVE_ROCKMATE) r = rk_dp_options_default(ch, &s->opts, err);
    else r = rk_dp_options_rotor(ch, &s->opts, err);
    if (r) goto fail;
    if (p->algo == RK_SOLVE_ROCKMATE && p->checkmate_options) {
        rk_option **co = NULL;
        int *cn = NULL;
        r = rk_checkmate_chain_options(ch, &p->cm, &co, &cn, &s->info.cm, err);
        if (r) goto fail;
        for (int c = 0; c < ch->n_classes && !r; c++)
            for (int i = 0; i < cn[c] && !r; i++) r = rk_dp_options_add(&s->opts, c, &co[c][i], err);
        rk_checkmate_chain_options_free(ch->n_classes, co, cn);
        if (r) goto fail;
    }
    r = rk_dp_costs_build(ch, &s->opts, &s->costs, err);
    if (r) goto fail;
    s->have_costs = 1;
    for (int c = 0; c < s->opts.n_classes; c++) s->info.n_options += s->opts.classes[c].n_options;
    s->info.options_time_s = omp_get_wtime() - t0;
    *out = s;
    return RK_OK;
fail:
    rk_solver_free(s);
    return r;
}

void rk_solver_free(rk_solver *s) {
    if (!s) return;
    if (s->have_costs) rk_dp_costs_free(&s->costs);
    rk_dp_options_free(&s->opts);
    free(s);
}

const rk_solver_info *rk_solver_get_info(const rk_solver *s) { return &s->info; }

rk_status rk_solver_min_budget(rk_solver *s, int64_t *out, rk_error *err) {
    if (s->p.algo == RK_SOLVE_CHECKMATE) {
        rk_schedule fa;
        rk_status r = rk_schedule_free_asap(s->ch, &fa, err);
        if (r) return r;
        *out = fa.predicted_peak; /* an upper bound: Checkmate may go lower */
        rk_schedule_free(&fa);
        return RK_OK;
    }
    return rk_dp_algo_min_budget(&s->costs, dp_algo_of(s->p.algo), &s->p.dp, out, err);
}

rk_status rk_solver_solve(rk_solver *s, int64_t budget, rk_schedule *sched, rk_solve_result *res, rk_error *err) {
    memset(res, 0, sizeof *res);
    rk_schedule_init(sched);
    res->budget = budget;
    res->baseline_time = rk_chain_baseline_time(s->ch);
    double t0 = omp_get_wtime();
    rk_status r;
    if (budget <= 0) return rk_fail(err, RK_EINPUT, "the budget must be a positive number of bytes");
    if (s->p.algo == RK_SOLVE_CHECKMATE) {
        double gap = 0;
        r = rk_checkmate_chain_schedule(s->ch, budget, &s->p.cm, sched, &gap, err);
        if (r) return r;
        res->checkmate_gap = gap;
    } else {
        rk_dp_plan plan;
        rk_dp_result dres;
        memset(&plan, 0, sizeof plan);
        r = rk_dp_solve(&s->costs, dp_algo_of(s->p.algo), budget, &s->p.dp, &plan, &dres, err);
        if (r) {
            rk_dp_plan_free(&plan);
            return r;
        }
        if (!dres.feasible) {
            rk_dp_plan_free(&plan);
            int64_t minb = -1;
            rk_error e2;
            char b1[32], b2[32];
            if (rk_dp_algo_min_budget(&s->costs, dp_algo_of(s->p.algo), &s->p.dp, &minb, &e2) == RK_OK)
                return rk_fail(err, RK_EINFEASIBLE,
                               "no %s schedule fits in %lld bytes (%s); the smallest budget that works is %lld bytes (%s)",
                               rk_solve_algo_name(s->p.algo), (long long)budget, rk_format_bytes(budget, b1, sizeof b1),
                               (long long)minb, rk_format_bytes(minb, b2, sizeof b2));
            return rk_fail(err, RK_EINFEASIBLE, "no %s schedule fits in %lld bytes", rk_solve_algo_name(s->p.algo),
                           (long long)budget);
        }
        r = rk_dp_plan_build(s->ch, &s->opts, &s->costs, &plan, sched, err);
        rk_dp_plan_free(&plan);
        if (r) return r;
        res->n_forwards = dres.n_forwards;
    }
    rk_schedule_set_algo(sched, rk_solve_algo_name(s->p.algo));
    sched->budget = budget;
    r = rk_simulate(s->ch, sched, &res->sim, err);
    if (r) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule does not replay: %.900s", rk_solve_algo_name(s->p.algo), msg);
    }
    if (res->sim.peak > budget) {
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule's simulated peak %lld exceeds the budget %lld",
                       rk_solve_algo_name(s->p.algo), (long long)res->sim.peak, (long long)budget);
    }
    if (sched->predicted_time >= 0 &&
        fabs(sched->predicted_time - res->sim.time) > 1e-9 * fmax(1.0, fabs(res->sim.time)) + 1e-6) {
        double pt = sched->predicted_time;
        rk_schedule_free(sched);
        return rk_fail(err, RK_EFAIL, "BUG: the %s schedule's predicted time %.17g differs from its simulated time %.17g",
                       rk_solve_algo_name(s->p.algo), pt, res->sim.time);
    }
    if (sched->predicted_peak < 0) sched->predicted_peak = res->sim.peak;
    if (sched->predicted_time < 0) sched->predicted_time = res->sim.time;
    res->feasible = 1;
    res->predicted_peak = sched->predicted_peak;
    res->predicted_time = sched->predicted_time;
    res->overhead = res->baseline_time > 0 ? res->predicted_time / res->baseline_time - 1 : 0;
    res->solve_time_s = omp_get_wtime() - t0;
    return RK_OK;
}
