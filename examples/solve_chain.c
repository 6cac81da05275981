/* solve_chain.c — example consumer of the installed solver API (rk_solve.h,
 * rk_graph.h): read a chain (.rkg, e.g. from `rkmate trace`), find a schedule
 * under a memory budget, write it (.rks), then read the file back and replay
 * it with the simulator, as any user of a schedule should.
 *
 * Build against an installed rkmate:
 *   cc solve_chain.c $(pkg-config --cflags --libs rkmate) -o solve_chain
 *   cc -static solve_chain.c $(pkg-config --cflags --libs --static rkmate) -o solve_chain
 * Run:
 *   ./solve_chain CHAIN.rkg BUDGET OUT.rks [ALGO [PxS]]
 * BUDGET is bytes or with a unit (150kB, 1.5GiB); ALGO is rockmate (default),
 * rotor, sqrt, none, recompute-all or checkmate; PxS is rockmate's
 * rk-Checkmate budget grid (default 20x20).  Prints the simulated peak and
 * time of the written schedule.  Exit status 0 ok, 1 failure, 2 bad input,
 * 3 no schedule fits the budget. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rk_solve.h"

static int report(const char *prog, rk_status st, const rk_error *err) {
    fprintf(stderr, "%s: %s\n", prog, err->msg);
    switch (st) {
    case RK_EINPUT: return 2;
    case RK_EINFEASIBLE: return 3;
    default: return 1;
    }
}

int main(int argc, char **argv) {
    const char *prog = argv[0];
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: %s CHAIN.rkg BUDGET OUT.rks [ALGO [PxS]]\n", prog);
        return 2;
    }
    const char *chain_path = argv[1], *out_path = argv[3];
    if (!strcmp(chain_path, out_path)) {
        fprintf(stderr, "%s: refusing to write the schedule over the chain file %s\n", prog, chain_path);
        return 2;
    }
    rk_error err = {{0}};
    int64_t budget;
    rk_status st = rk_parse_bytes(argv[2], &budget, &err);
    if (st != RK_OK) return report(prog, st, &err);

    rk_solve_params par;
    rk_solve_params_default(&par);
    if (argc >= 5) {
        int algo = rk_solve_algo_parse(argv[4]);
        if (algo < 0) {
            fprintf(stderr, "%s: unknown algorithm '%s'\n", prog, argv[4]);
            return 2;
        }
        par.algo = (rk_solve_algo)algo;
    }
    if (argc == 6) {
        int p, s;
        char c;
        if (sscanf(argv[5], "%dx%d%c", &p, &s, &c) != 2 || p < 1 || s < 1 || p > 1000 || s > 1000) {
            fprintf(stderr, "%s: grid: expected PxS like 20x20, got '%s'\n", prog, argv[5]);
            return 2;
        }
        par.cm.grid_peak = p;
        par.cm.grid_save = s;
    }

    rk_chain ch;
    st = rk_chain_read(chain_path, &ch, &err);
    if (st != RK_OK) return report(prog, st, &err);
    printf("chain %d blocks %d classes\n", ch.n_blocks, ch.n_classes);

    rk_solver *solver = NULL;
    rk_schedule sched;
    rk_schedule_init(&sched);
    int code = 0;
    rk_solve_result res;
    if ((st = rk_solver_new(&ch, &par, &solver, &err)) != RK_OK ||
        (st = rk_solver_solve(solver, budget, &sched, &res, &err)) != RK_OK ||
        (st = rk_schedule_write(out_path, &ch, &sched, &err)) != RK_OK) {
        code = report(prog, st, &err);
        goto done;
    }
    printf("algorithm %s\n", rk_solve_algo_name(par.algo));
    printf("budget %" PRId64 "\n", budget);
    printf("predicted %" PRId64 " bytes %.6f us\n", res.predicted_peak, res.predicted_time);

    /* What was written is what a user runs: read it back and replay it. */
    rk_schedule back;
    rk_schedule_init(&back);
    rk_sim_result sim;
    if ((st = rk_schedule_read(out_path, &ch, &back, &err)) != RK_OK ||
        (st = rk_simulate(&ch, &back, &sim, &err)) != RK_OK) {
        code = report(prog, st, &err);
    } else {
        printf("simulated %" PRId64 " bytes %.6f us %d ops\n", sim.peak, sim.time, back.n_ops);
        printf("overhead %.6f\n", sim.overhead);
    }
    rk_schedule_free(&back);
done:
    rk_schedule_free(&sched);
    rk_solver_free(solver);
    rk_chain_free(&ch);
    return code;
}
