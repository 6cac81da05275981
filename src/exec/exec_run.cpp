// exec_run.cpp — rk_exec_run's job: re-trace the model, check that the chain
// is this model's, then alternate the plain PyTorch step (module forward +
// autograd) and the schedule's step (operations mapped onto model nodes and
// run by the Runtime), measuring peak activation memory and time of both and
// comparing gradients and output bit for bit.  Also the C API entry points
// (rk_exec.h), where C++ exceptions become status codes.
#include <torch/script.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "exec_internal.h"

namespace rkx {


std::vector<ClassGraph> match_chain(Model &M, const rk_chain *ch) {
    // The chain must be what tracing this model gives.
    size_t nb = M.block_begin.size();
    if ((size_t)ch->n_blocks != nb || (size_t)ch->n_classes < M.class_canon.size())
        fail(RK_EINPUT, "the chain (" + std::to_string(ch->n_blocks) + " blocks, " + std::to_string(ch->n_classes) +
                            " classes) is not this model's (" + std::to_string(nb) + " blocks, " +
                            std::to_string(M.class_canon.size()) + " classes): trace it again with the same inputs");
    // The tracer splits a class whose blocks receive their gradients in other
    // layouts (split_classes_by_grad_layout, exec_measure.cpp): the chain's
    // classes are this model's or finer; adopt them.
    {
        std::vector<int> rep(ch->n_classes, -1);
        for (size_t b = 0; b < nb; b++) {
            int c = ch->blocks[b].cls;
            if (c < 0 || c >= ch->n_classes || (rep[c] >= 0 && M.block_class[rep[c]] != M.block_class[b]) ||
                (rep[c] < 0 && c < (int)M.class_canon.size() && M.block_class[b] != c))
                fail(RK_EINPUT, "block " + std::to_string(b) + " of the chain has another class than this model's");
            if (rep[c] < 0) rep[c] = (int)b;
        }
        for (int c = 0; c < ch->n_classes; c++)
            if (rep[c] < 0)
                fail(RK_EINPUT, "class " + std::to_string(c) + " of the chain has no block: trace the model again");
        for (int c = (int)M.class_canon.size(); c < ch->n_classes; c++)
            M.class_canon.push_back(M.class_canon[M.block_class[rep[c]]] + ";chain class " + std::to_string(c));
        M.class_rep = rep;
        for (size_t b = 0; b < nb; b++) M.block_class[b] = ch->blocks[b].cls;
        M.st.n_classes = ch->n_classes;
    }
    std::vector<ClassGraph> cgs(M.class_canon.size());
    for (size_t c = 0; c < M.class_canon.size(); c++) {
        rk_graph gr;
        const rk_graph &fg = ch->classes[c];
        // Which backwards the chain splits in two: those with a weight part
        // (b<j>_<op>w; j is unique, so no other node has that name).
        int b0 = M.class_rep[c], first = M.block_begin[b0], m = M.block_end[b0] - first;
        cgs[c].split.assign(m, 0);
        {
            std::set<std::string> names;
            for (int i = 0; i < fg.n_c; i++)
                if (fg.c[i].kind == RK_C_BWD) names.insert(fg.c[i].name);
            for (int j = 0; j < m; j++) {
                std::string nm = "b" + std::to_string(j) + "_" + sanitize(M.groups[M.order[first + j]].op) + "w";
                cgs[c].split[j] = names.count(nm) ? 1 : 0;
            }
        }
        build_class_graph(M, b0, nullptr, 0, &gr, cgs[c]);
        bool same = fg.n_c == gr.n_c && fg.n_d == gr.n_d;
        for (int i = 0; same && i < gr.n_c; i++) same = !strcmp(fg.c[i].name, gr.c[i].name);
        for (int i = 0; same && i < gr.n_d; i++) same = !strcmp(fg.d[i].name, gr.d[i].name);
        rk_graph_free(&gr);
        cgs[c].bwd_reads_self.assign(fg.n_c, 0);
        for (int i = 0; same && i < fg.n_c; i++) {
            const CMapEntry &e = cgs[c].cmap[i];
            if (e.kind != 1 && e.kind != 3 && e.kind != 4) continue;
            for (int k = 0; k < fg.c[i].n_uses; k++) {
                int d = fg.c[i].uses[k].data;
                if (fg.c[i].uses[k].kind == RK_EDGE_REAL && d >= 0 && d < (int)cgs[c].dmap.size() &&
                    cgs[c].dmap[d].kind == 0 && cgs[c].dmap[d].local == e.local)
                    cgs[c].bwd_reads_self[i] = 1;
            }
        }
        if (!same)
            fail(RK_EINPUT, "class " + std::to_string(c) + " of the chain does not match this model's graph: trace "
                            "it again with the same model and inputs");
    }
    return cgs;
}

// The gradient of `sum()` is its scalar gradient expanded to the output's
// shape (SumBackward0): the plain step hands that to the output's function
// and never allocates it.  Through autograd, the output's leaf would take it
// as a copy in the leaf's layout (AccumulateGrad copies a tensor with zero
// strides): a whole output's bytes (25 KiB of logits on gru_lm, where it set
// the keep-all peak 3.6 % above the plain step's).  When the output is the
// leaf or a view covering each of its elements once (same storage, offset and
// element count, both dense: a reshape or permutation), the gradient reaching
// the leaf is that expanded scalar in the leaf's shape, as in the plain step
// (a view's backward reshapes or permutes an all-zero-stride tensor into
// another): it becomes .grad as it is.  Otherwise autograd does it.
static bool sum_grad_to_leaf(Model &M, Runtime &R, const at::Tensor &y, const at::Tensor &l) {
    const VInfo *I = &M.vi.at(M.output);
    while (I->alias) I = &M.vi.at(I->alias);
    if ((I->kind != VK::Data && I->kind != VK::View) || I->owner < 0) return false;
    GState &S = R.gs[I->owner];
    if (I->kind == VK::Data ? (size_t)I->part >= S.p.size() : S.p.size() != 1) return false;
    const at::Tensor &leaf = S.p[I->kind == VK::Data ? I->part : 0].leaf;
    if (!leaf.defined() || !leaf.requires_grad() || leaf.grad().defined()) return false;
    if (!y.has_storage() || !leaf.has_storage() || !y.is_non_overlapping_and_dense() ||
        !leaf.is_non_overlapping_and_dense() || y.numel() != leaf.numel() ||
        y.storage().unsafeGetStorageImpl() != leaf.storage().unsafeGetStorageImpl() ||
        y.storage_offset() != leaf.storage_offset() || y.scalar_type() != leaf.scalar_type())
        return false;
    leaf.mutable_grad() = at::ones_like(l).expand(leaf.sizes());
    return true;
}

// Both undefined, or both defined with the same sizes and values, bit for bit.
static bool same_tensor(const at::Tensor &x, const at::Tensor &y) {
    if (!x.defined() || !y.defined()) return x.defined() == y.defined();
    return x.sizes() == y.sizes() && at::equal(x, y);
}

// The groups whose data the schedule forgets right after op i (the forget
// ops before the next run), as their forget ops name them.
static std::vector<int> data_forgotten_after(Model &M, const std::vector<ClassGraph> &cgs, const rk_schedule *s, int i,
                                             int to) {
    std::vector<int> r;
    size_t nb = M.block_begin.size();
    for (int j = i + 1; j < to && s->ops[j].kind != RK_OP_RUN; j++) {
        const rk_op &op = s->ops[j];
        if (op.kind != RK_OP_FORGET || op.block < 0 || (size_t)op.block >= nb) continue;
        const ClassGraph &cg = cgs[M.block_class[op.block]];
        if (op.node < 0 || op.node >= (int)cg.dmap.size()) continue; // (refused when the op itself runs)
        const DMapEntry &e = cg.dmap[op.node];
        if (e.kind != 0) continue;
        r.push_back(e.local >= 0 ? M.order[M.block_begin[op.block] + e.local] : block_inputs(M, op.block)[-1 - e.local]);
    }
    return r;
}

double run_schedule_ops(Model &M, const std::vector<ClassGraph> &cgs, const rk_schedule *s, rk_loss_kind loss,
                        Runtime &R, at::Tensor *out, int from, int to, const at::Tensor *grad_out,
                        std::vector<int64_t> *op_step, std::vector<int64_t> *op_live) {
    size_t nb = M.block_begin.size();
    double loss_value = 0;
    if (to < 0 || to > s->n_ops) to = s->n_ops;
    // Op by op (a measured step only): the bytes while op `last` ran and after it.
    ActivationPeak *ap = ActivationPeak::current;
    int last = -1;
    auto log_op = [&]() {
        if (!ap || !op_step || last < 0) return;
        (*op_step)[last] = ap->take_op_peak();
        if (op_live) (*op_live)[last] = ap->A.cur() - param_grad_bytes_now(ap->ps);
    };
    for (int i = from; i < to; i++) {
        const rk_op &op = s->ops[i];
        if (op.kind == RK_OP_MARK) continue;
        if (ap) ap->boundary();
        log_op(); // (after the boundary, which takes the last op's peak in)
        last = i;
        if (op.block < 0 || (size_t)op.block >= nb) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad block");
        const ClassGraph &cg = cgs[M.block_class[op.block]];
        int first = M.block_begin[op.block];
        if (op.kind == RK_OP_RUN) {
            if (op.node < 0 || op.node >= (int)cg.cmap.size()) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad node");
            const CMapEntry &e = cg.cmap[op.node];
            if (e.kind == 0) R.fwd(M.order[first + e.local]);
            else if (e.kind == 1 || e.kind == 3 || e.kind == 4)
                R.bwd(M.order[first + e.local], (size_t)op.node < cg.bwd_reads_self.size() && cg.bwd_reads_self[op.node],
                      e.kind == 3 ? BWD_WEIGHT : e.kind == 4 ? BWD_INPUT : BWD_ALL,
                      e.kind == 1 ? data_forgotten_after(M, cgs, s, i, to) : std::vector<int>());
            else {
                if ((size_t)op.block != nb - 1) fail(RK_EINPUT, "schedule runs the loss of a block that is not last");
                at::Tensor y = R.materialize(M.output).toTensor();
                if (grad_out) { // the loss is the caller's: backward from its gradient
                    torch::autograd::backward({y}, {*grad_out});
                    continue;
                }
                at::Tensor l = loss == RK_LOSS_MEAN ? y.mean() : y.sum();
                loss_value = l.item<double>();
                if (out) {
                    PauseTracking p;
                    *out = keep_copy(y);
                }
                if (loss == RK_LOSS_SUM && sum_grad_to_leaf(M, R, y, l)) continue;
                backward_measured(l);
            }
        } else if (op.kind == RK_OP_FORGET) {
            if (op.node < 0 || op.node >= (int)cg.dmap.size()) fail(RK_EINPUT, "schedule op " + std::to_string(i) + ": bad data node");
            const DMapEntry &e = cg.dmap[op.node];
            int grp = e.local >= 0 ? M.order[first + e.local] : block_inputs(M, op.block)[-1 - e.local];
            if (e.kind == 0) R.forget_data(grp);
            else if (e.kind == 1) R.forget_phantom(grp);
            else if (e.kind == 3) R.forget_piece(M.groups[grp].pieces.at(e.piece));
            else if (e.kind == 4) R.forget_vsum_grad(M.groups[grp].vsums_owned.at(e.piece));
            else if (e.kind == 5) continue; // (a static sum's buffer: flushed after its last reader's backward)
            else R.forget_grad(grp);
        }
    }
    if (to == s->n_ops) R.flush_static_sums(); // readers that got no gradient
    if (ap && op_step) ap->boundary();
    log_op();
    return loss_value;
}

void run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s, const rk_run_options *ro,
         rk_run_result *res) {
    Model M;
    load_model(M, o);
    std::vector<ClassGraph> cgs = match_chain(M, ch);
    Mem A(M);
    NondeterminismWatch watch; // from here to the end of the check
    auto params = params_of(M);
    int64_t input_bytes = 0;
    for (auto &t : M.inputs) input_bytes += t.numel() * t.element_size();
    res->input_bytes = input_bytes;
    res->analysis_peak = M.st.analysis_peak;
    res->n_params = (int)params.size();
    param_memory(M, &res->param_bytes, &res->param_grad_bytes, &res->buffer_bytes);
    int iters = ro->iters > 0 ? ro->iters : 3;
    res->plain_repeatable = -1;
    res->grads_differing = 0;
    res->shared_grad_bytes = 0;
    std::vector<double> tp, tr;
    int64_t peak_plain = 0, peak_rk = 0;
    std::vector<at::Tensor> ref_grads, ref_out_v;
    at::Tensor ref_out, rk_out;
    std::vector<at::Tensor> rk_grads;
    double loss_value = 0;
    for (int it = 0; it <= iters; it++) { // iteration 0 warms up
        // The buffers as the plain step finds them: the schedule's step starts
        // from the same (a hand spectral norm's u, BatchNorm's statistics).
        std::vector<std::pair<at::Tensor, at::Tensor>> buffers;
        {
            PauseTracking p;
            at::NoGradGuard ng;
            for (const auto &b : M.module.named_buffers())
                if (b.value.defined()) buffers.push_back({b.value, b.value.clone()});
        }
        // Plain step: module forward + autograd backward.
        clear_param_grads(params);
        {
            if (it == 0) A.release_cache();
            int64_t base = A.cur();
            ActivationPeak ap(A, params); // .grad is not activation memory
            double a = A.now();
            at::Tensor y = plain_forward(M, o->seed);
            at::Tensor l = ro->loss == RK_LOSS_MEAN ? y.mean() : y.sum();
            backward_measured(l);
            double e = A.now() - a;
            int64_t pk = ap.finish() - base + input_bytes;
            if (it > 0) { tp.push_back(e); peak_plain = std::max(peak_plain, pk); }
            if (it == 0) res->baseline_reserved = ap.reserved;
            if (it == 0 && ro->check) {
                PauseTracking p;
                ref_out = keep_copy(y);
                for (auto &q : params) ref_grads.push_back(keep_copy(q.grad()));
            }
            if (it == 1 && ro->check) { // is the plain step itself repeatable on this device?
                PauseTracking p;
                // the references are CPU copies (keep_copy): compare CPU copies
                bool same = ref_out.defined() && same_tensor(keep_copy(y), ref_out);
                for (size_t i = 0; i < params.size() && same; i++)
                    same = same_tensor(keep_copy(params[i].grad()), ref_grads[i]);
                res->plain_repeatable = same ? 1 : 0;
            }
        }
        // The schedule (on fresh inputs: the plain step may have written them),
        // from the buffers the plain step started from, its static values
        // made again from them.
        {
            auto fresh = make_inputs(o);
            for (size_t i = 0; i < M.inputs.size(); i++) M.inputs[i] = fresh[i].to(M.dev);
            PauseTracking p;
            {
                at::NoGradGuard ng;
                for (auto &b : buffers) b.first.copy_(b.second);
            }
            buffers.clear();
            run_static_program(M);
        }
        clear_param_grads(params);
        {
            if (it == 0) A.release_cache();
            int64_t base = A.cur();
            ActivationPeak ap(A, params);
            double a = A.now();
            bool log = it == iters && ro->op_step;
            std::vector<int64_t> op_step(log ? s->n_ops : 0, INT64_MIN), op_live(op_step.size(), INT64_MIN);
            {
                Runtime R(M);
                loss_value = run_schedule_ops(M, cgs, s, ro->loss, R, it == 0 && ro->check ? &rk_out : nullptr, 0,
                                              -1, nullptr, log ? &op_step : nullptr, log ? &op_live : nullptr);
                res->shared_grad_bytes = std::max(res->shared_grad_bytes, R.shared_grad_bytes);
            }
            double e = A.now() - a;
            int64_t pk = ap.finish() - base + input_bytes;
            if (it > 0) { tr.push_back(e); peak_rk = std::max(peak_rk, pk); }
            if (it == 0) res->measured_reserved = ap.reserved;
            for (size_t i = 0; i < op_step.size(); i++) { // as the peak: from this step's start, inputs counted
                ro->op_step[i] = op_step[i] == INT64_MIN ? -1 : op_step[i] - base + input_bytes;
                if (ro->op_live) ro->op_live[i] = op_live[i] == INT64_MIN ? -1 : op_live[i] - base + input_bytes;
            }
            if (it == 0 && ro->check) {
                PauseTracking p;
                for (auto &q : params) rk_grads.push_back(keep_copy(q.grad()));
            }
        }
        // Inputs may have been forgotten by the schedule: make them again.
        auto fresh = make_inputs(o);
        for (size_t i = 0; i < M.inputs.size(); i++) M.inputs[i] = fresh[i].to(M.dev);
    }
    watch.copy_names(res->nondeterministic_kernels, sizeof res->nondeterministic_kernels);
    res->measured_peak = peak_rk;
    res->baseline_peak = peak_plain;
    res->measured_time = median(tr);
    res->baseline_time = median(tp);
    res->loss = loss_value;
    if (ro->check) {
        PauseTracking p;
        res->checked = 1;
        double mad = 0, mrd = 0;
        auto cmp = [&](const at::Tensor &x, const at::Tensor &y) { // equal?  and the differences
            bool eq = same_tensor(x, y);
            if (!x.defined() || !y.defined()) return eq;
            if (x.sizes() != y.sizes()) { mad = INFINITY; return eq; }
            at::Tensor xd = x.to(at::kDouble), yd = y.to(at::kDouble);
            double ad = (xd - yd).abs().max().item<double>();
            double sc = yd.abs().max().item<double>();
            mad = std::max(mad, ad);
            if (sc > 0) mrd = std::max(mrd, ad / sc);
            return eq;
        };
        int differing = 0;
        std::vector<std::string> names;
        for (const auto &np : M.module.named_parameters()) names.push_back(np.name);
        std::string listed;
        for (size_t i = 0; i < params.size(); i++) {
            double before = mad;
            mad = 0;
            bool eq = cmp(rk_grads[i], ref_grads[i]);
            double here = mad;
            mad = std::max(before, here);
            if (eq) continue;
            differing++;
            char item[320];
            snprintf(item, sizeof item, "%s%s:%.3g", listed.empty() ? "" : " ",
                     i < names.size() ? names[i].c_str() : ("#" + std::to_string(i)).c_str(), here);
            if (listed.size() + strlen(item) + 4 < sizeof res->grads_differing_names) listed += item;
            else if (listed.size() + 4 < sizeof res->grads_differing_names && listed.find("...") == std::string::npos)
                listed += " ...";
        }
        snprintf(res->grads_differing_names, sizeof res->grads_differing_names, "%s", listed.c_str());
        res->grads_differing = differing;
        res->output_equal = rk_out.defined() && cmp(rk_out, ref_out);
        res->grads_equal = differing == 0 && res->output_equal;
        res->max_abs_diff = mad;
        res->max_rel_diff = mrd;
    }
}

} // namespace rkx


extern "C" rk_status rk_exec_trace(const rk_exec_options *o, rk_chain *out, rk_trace_stats *st, rk_error *err) {
    rk_trace_stats tmp{};
    rk_status s = rkx::guarded(err, [&] { rkx::trace(o, out, &tmp); });
    if (st) *st = tmp;
    return s;
}

extern "C" rk_status rk_exec_run(const rk_exec_options *o, const rk_chain *ch, const rk_schedule *s,
                                 const rk_run_options *ro, rk_run_result *res, rk_error *err) {
    *res = rk_run_result{};
    return rkx::guarded(err, [&] { rkx::run(o, ch, s, ro, res); });
}

extern "C" int rk_exec_cuda_available(void) {
#ifdef RK_TORCH_CUDA
    return torch::cuda::is_available() ? 1 : 0;
#else
    return 0;
#endif
}
