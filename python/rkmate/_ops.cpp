// _ops.cpp — the native part of the rkmate Python package: a library loaded
// with torch.ops.load_library that registers
//   torch.ops.rkmate.plan: trace a TorchScript file (rk_exec_trace), solve at a
//     budget with the C library (rk_solver_*), replay the schedule with the
//     simulator and write the chain and the schedule;
//   torch.classes.rkmate.Session: a training session of rk_exec.h opened on
//     those files, whose steps are split at the loss (rk_exec_torch.h) for the
//     package's autograd.Function, and whose parameters and buffers the
//     Python module shares.
// Errors reach Python as RuntimeError("rkmate: ...").
#include <torch/custom_class.h>
#include <torch/script.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "rk_exec.h"
#include "rk_exec_torch.h"
#include "rk_graph.h"
#include "rk_solve.h"

namespace {

void check(rk_status st, const rk_error &e, const std::string &what) {
    if (st != RK_OK) throw std::runtime_error("rkmate: " + what + ": " + e.msg);
}

void fill_inputs(rk_exec_options &o, const std::vector<std::string> &specs, const std::string &input_file) {
    o.input_file = input_file.empty() ? nullptr : input_file.c_str();
    if (specs.empty() || specs.size() > RK_EXEC_MAX_INPUTS)
        throw std::runtime_error("rkmate: between 1 and " + std::to_string(RK_EXEC_MAX_INPUTS) + " inputs");
    o.n_inputs = (int)specs.size();
    for (size_t i = 0; i < specs.size(); i++) o.inputs[i] = specs[i].c_str();
}

// [budget, predicted peak, predicted time (us), keep-all peak, time of every node once (us), ops]
std::vector<double> plan(const std::string &model, const std::vector<std::string> &inputs,
                         const std::string &input_file, const std::string &budget,
                         const std::string &algo, bool checkmate_options, const std::string &chain_out,
                         const std::string &sched_out, int64_t seed) {
    rk_exec_options o{};
    o.model_path = model.c_str();
    fill_inputs(o, inputs, input_file);
    o.seed = (uint64_t)seed;
    o.measure = 1;
    int a = rk_solve_algo_parse(algo.c_str());
    if (a < 0) throw std::runtime_error("rkmate: algo '" + algo + "': expected rockmate, rotor, sqrt, none, "
                                        "recompute-all or checkmate");
    rk_error e;
    e.msg[0] = 0;
    rk_chain ch;
    check(rk_exec_trace(&o, &ch, nullptr, &e), e, "tracing");
    struct Guard {
        rk_chain *ch;
        rk_schedule sc;
        rk_solver *sv = nullptr;
        ~Guard() {
            if (sv) rk_solver_free(sv);
            rk_schedule_free(&sc);
            rk_chain_free(ch);
        }
    } g{&ch, {}};
    rk_schedule_init(&g.sc);
    rk_schedule keep;
    rk_schedule_init(&keep);
    rk_sim_result ks;
    rk_status st = rk_schedule_keep_all(&ch, &keep, &e);
    if (st == RK_OK) st = rk_simulate(&ch, &keep, &ks, &e);
    rk_schedule_free(&keep);
    check(st, e, "keep-all schedule");
    int64_t b;
    if (!budget.empty() && budget.back() == '%') {
        char *end;
        double pc = strtod(budget.c_str(), &end);
        if (end != budget.c_str() + budget.size() - 1 || !(pc > 0) || pc > 1000)
            throw std::runtime_error("rkmate: budget '" + budget + "': expected a percentage in (0, 1000]");
        b = (int64_t)((double)ks.peak * pc / 100.0);
    } else {
        check(rk_parse_bytes(budget.c_str(), &b, &e), e, "budget");
    }
    rk_solve_params par;
    rk_solve_params_default(&par);
    par.algo = (rk_solve_algo)a;
    par.checkmate_options = checkmate_options ? 1 : 0;
    check(rk_solver_new(&ch, &par, &g.sv, &e), e, "solver");
    rk_solve_result sr;
    check(rk_solver_solve(g.sv, b, &g.sc, &sr, &e), e, "solving at " + std::to_string(b) + " bytes");
    rk_sim_result sim;
    check(rk_simulate(&ch, &g.sc, &sim, &e), e, "the simulator refuses the schedule");
    g.sc.budget = b;
    check(rk_chain_write(chain_out.c_str(), &ch, &e), e, "writing the chain");
    check(rk_schedule_write(sched_out.c_str(), &ch, &g.sc, &e), e, "writing the schedule");
    return {(double)b, (double)sim.peak, sim.time, (double)ks.peak, sr.baseline_time, (double)g.sc.n_ops};
}

struct Session : torch::CustomClassHolder {
    rk_train *t = nullptr;
    rk_chain ch{};
    rk_schedule sc{};
    bool have_ch = false;
    std::vector<std::string> specs;
    std::string model, input_file;

    Session(const std::string &model_path, const std::vector<std::string> &inputs, const std::string &inputs_path,
            const std::string &chain, const std::string &sched, int64_t seed)
        : specs(inputs), model(model_path), input_file(inputs_path) {
        rk_error e;
        e.msg[0] = 0;
        rk_schedule_init(&sc);
        check(rk_chain_read(chain.c_str(), &ch, &e), e, chain);
        have_ch = true;
        check(rk_schedule_read(sched.c_str(), &ch, &sc, &e), e, sched);
        rk_exec_options o{};
        o.model_path = model.c_str();
        fill_inputs(o, specs, input_file);
        o.seed = (uint64_t)seed;
        rk_train_options to{};
        to.optimizer = RK_OPTIM_NONE;
        to.keep_generator = 1;
        check(rk_train_open(&o, &ch, &sc, &to, &t, &e), e, "opening the session");
    }
    ~Session() override {
        rk_train_free(t);
        rk_schedule_free(&sc);
        if (have_ch) rk_chain_free(&ch);
    }
    at::Tensor forward(std::vector<at::Tensor> inputs) { return rk_train_forward(t, inputs); }
    // Undefined gradients come back as empty tensors (Python: None).
    std::vector<c10::optional<at::Tensor>> backward(at::Tensor grad_out) {
        std::vector<c10::optional<at::Tensor>> out;
        for (auto &g : rk_train_backward(t, grad_out))
            out.push_back(g.defined() ? c10::optional<at::Tensor>(g) : c10::nullopt);
        return out;
    }
    std::vector<std::string> names(bool buffers) {
        std::vector<std::string> n;
        for (auto &p : rk_train_tensors(t, buffers)) n.push_back(p.first);
        return n;
    }
    std::vector<at::Tensor> tensors(bool buffers) {
        std::vector<at::Tensor> v;
        for (auto &p : rk_train_tensors(t, buffers)) v.push_back(p.second);
        return v;
    }
};

} // namespace

TORCH_LIBRARY(rkmate, m) {
    m.class_<Session>("Session")
        .def(torch::init<std::string, std::vector<std::string>, std::string, std::string, std::string, int64_t>())
        .def("forward", &Session::forward)
        .def("backward", &Session::backward)
        .def("names", &Session::names)
        .def("tensors", &Session::tensors);
    // the tracer's counting CPU allocator (rk_exec_torch.h), for measurements
    // such as tools/bench/split_bwd.py's
    m.def("count_cpu_memory() -> ()", [] { rk_exec_count_cpu_memory(); });
    m.def("cpu_bytes(bool peak) -> int", [](bool peak) { return rk_exec_cpu_bytes(peak); });
    m.def("cpu_reset_peak() -> ()", [] { rk_exec_cpu_reset_peak(); });
    m.def("plan(str model, str[] inputs, str input_file, str budget, str algo, bool checkmate_options, str chain_out, "
          "str sched_out, int seed) -> float[]",
          &plan);
}
