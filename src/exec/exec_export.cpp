// exec_export.cpp — the torch.export front end: reads a `torch.export.save`
// archive (MODEL.pt2: a zip with the graph of ATen operators as JSON,
// models/model.json in torch's export schema, and the weights as raw tensor
// data, data/weights/ and data/constants/) and rebuilds it as a TorchScript
// module whose forward graph has one node per ATen call: parameters, buffers
// and lifted constants become the module's attributes (read by prim::GetAttr
// as in a traced model), every call is inserted with its schema bound, so the
// rest of rk-GB and the executor run it exactly as a traced model, through
// libtorch's operator registry.  Only static shapes (no symbolic sizes).
#include <torch/script.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <jansson.h>

#include <cstring>

#include "exec_internal.h"

namespace rkx {

namespace {

struct Json { // owns a jansson value
    json_t *j = nullptr;
    ~Json() { if (j) json_decref(j); }
};

struct Reader {
    std::string path;
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;

    [[noreturn]] void bad(const std::string &what) const {
        fail(RK_EINPUT, path + ": " + what);
    }
    std::vector<char> record(const std::string &name) const {
        if (!zip->hasRecord(name)) bad("no " + name + " in the archive (not a torch.export.save file?)");
        auto rec = zip->getRecord(name);
        const char *p = static_cast<const char *>(std::get<0>(rec).get());
        return std::vector<char>(p, p + std::get<1>(rec));
    }
    void json(const std::string &name, Json &out) const {
        std::vector<char> b = record(name);
        json_error_t e;
        out.j = json_loadb(b.data(), b.size(), 0, &e);
        if (!out.j) bad(name + ": JSON error at line " + std::to_string(e.line) + ": " + e.text);
    }
};

json_t *member(const Reader &R, json_t *o, const char *key, const std::string &where) {
    json_t *v = json_is_object(o) ? json_object_get(o, key) : nullptr;
    if (!v) R.bad(where + ": no \"" + key + "\"");
    return v;
}

// The export schema's enums (torch/_export/serde/schema.py).
at::ScalarType scalar_type(const Reader &R, json_int_t v) {
    static const std::map<json_int_t, at::ScalarType> m = {
        {1, at::kByte}, {2, at::kChar},  {3, at::kShort}, {4, at::kInt},   {5, at::kLong},
        {6, at::kHalf}, {7, at::kFloat}, {8, at::kDouble}, {9, at::kComplexHalf}, {10, at::kComplexFloat},
        {11, at::kComplexDouble}, {12, at::kBool}, {13, at::kBFloat16}};
    auto it = m.find(v);
    if (it == m.end()) R.bad("unsupported dtype code " + std::to_string((long long)v) + " in the export schema");
    return it->second;
}

int64_t sym_int(const Reader &R, json_t *v, const std::string &where) {
    json_t *i = json_object_get(v, "as_int");
    if (!json_is_integer(i))
        R.bad(where + ": a symbolic size (dynamic shape); rkmate needs static shapes (export without dynamic_shapes)");
    return (int64_t)json_integer_value(i);
}

std::vector<int64_t> sym_ints(const Reader &R, json_t *a, const std::string &where) {
    std::vector<int64_t> r;
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) r.push_back(sym_int(R, e, where));
    return r;
}

// One weight or constant: raw storage bytes described by tensor_meta, or a pickle.
at::Tensor read_tensor(const Reader &R, const std::string &dir, const char *name, json_t *cfg) {
    std::string where = dir + " \"" + name + "\"";
    const char *file = json_string_value(member(R, cfg, "path_name", where));
    if (!file) R.bad(where + ": path_name is not a string");
    std::vector<char> bytes = R.record(dir + "/" + file);
    if (json_is_true(json_object_get(cfg, "use_pickle"))) {
        IValue v = torch::jit::pickle_load(bytes);
        if (!v.isTensor()) R.bad(where + ": the pickled value is not a tensor");
        return v.toTensor();
    }
    json_t *meta = member(R, cfg, "tensor_meta", where);
    at::ScalarType st = scalar_type(R, json_integer_value(member(R, meta, "dtype", where)));
    std::vector<int64_t> sizes = sym_ints(R, member(R, meta, "sizes", where), where);
    std::vector<int64_t> strides = sym_ints(R, member(R, meta, "strides", where), where);
    int64_t offset = sym_int(R, member(R, meta, "storage_offset", where), where);
    int64_t esz = (int64_t)c10::elementSize(st);
    int64_t need = offset + 1; // elements the view reaches
    for (size_t d = 0; d < sizes.size(); d++) {
        if (sizes[d] == 0) { need = 0; break; }
        need += (sizes[d] - 1) * strides[d];
    }
    if ((int64_t)bytes.size() < need * esz || bytes.size() % esz)
        R.bad(where + ": " + std::to_string(bytes.size()) + " bytes do not hold the tensor its metadata describes");
    at::Tensor storage = at::empty({(int64_t)bytes.size() / esz}, at::TensorOptions().dtype(st));
    if (!bytes.empty()) memcpy(storage.data_ptr(), bytes.data(), bytes.size());
    at::Tensor t = storage.as_strided(sizes, strides, offset).clone(at::MemoryFormat::Preserve);
    if (json_is_true(json_object_get(meta, "requires_grad"))) t.requires_grad_(true);
    return t;
}

// name -> tensor for every entry of DIR/model_*_config.json.
std::map<std::string, at::Tensor> read_tensors(const Reader &R, const std::string &dir, const std::string &cfgname) {
    std::map<std::string, at::Tensor> out;
    if (!R.zip->hasRecord(dir + "/" + cfgname)) return out;
    Json cfg;
    R.json(dir + "/" + cfgname, cfg);
    json_t *c = member(R, cfg.j, "config", dir + "/" + cfgname);
    const char *k;
    json_t *v;
    json_object_foreach(c, k, v) out[k] = read_tensor(R, dir, k, v);
    return out;
}

// A node argument: a Value (tensors, tensor lists) or a constant.
struct Arg {
    Value *v = nullptr;
    IValue iv;
    Arg(Value *x) : v(x) {}
    Arg(IValue x) : iv(std::move(x)) {}
    torch::jit::NamedValue named(const std::string &n) const {
        return v ? torch::jit::NamedValue(n, v) : torch::jit::NamedValue(n, iv);
    }
    torch::jit::NamedValue positional() const { return v ? torch::jit::NamedValue(v) : torch::jit::NamedValue(iv); }
};

Arg argument(const Reader &R, torch::jit::Graph &g,
                                std::map<std::string, Value *> &vals, json_t *arg, const std::string &where) {
    const char *kind = nullptr;
    json_t *v = nullptr;
    json_object_foreach(arg, kind, v) break;
    if (!kind) R.bad(where + ": empty argument");
    std::string k = kind;
    auto tensor = [&](json_t *t) -> Value * {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (!n || !vals.count(n)) R.bad(where + ": unknown tensor " + (n ? n : "?"));
        return vals.at(n);
    };
    if (k == "as_tensor") return Arg(tensor(v));
    if (k == "as_tensors") {
        std::vector<Value *> items;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) items.push_back(tensor(e));
        return Arg(g.insertNode(g.createList(c10::TensorType::get(), items))->output());
    }
    if (k == "as_none") return IValue();
    if (k == "as_int") return IValue((int64_t)json_integer_value(v));
    if (k == "as_float") return IValue(json_number_value(v));
    if (k == "as_bool") return IValue(json_is_true(v));
    if (k == "as_string") return IValue(std::string(json_string_value(v) ? json_string_value(v) : ""));
    if (k == "as_sym_int") return IValue(sym_int(R, v, where));
    if (k == "as_ints" || k == "as_sym_ints") {
        std::vector<int64_t> r;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) r.push_back(k == "as_ints" ? (int64_t)json_integer_value(e) : sym_int(R, e, where));
        return IValue(r);
    }
    if (k == "as_floats") {
        std::vector<double> r;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) r.push_back(json_number_value(e));
        return IValue(r);
    }
    if (k == "as_bools") {
        c10::List<bool> r;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) r.push_back(json_is_true(e));
        return IValue(r);
    }
    if (k == "as_scalar_type") return IValue(scalar_type(R, json_integer_value(v)));
    if (k == "as_device") {
        const char *t = json_string_value(json_object_get(v, "type"));
        json_t *ix = json_object_get(v, "index");
        std::string d = t ? t : "cpu";
        if (json_is_integer(ix)) d += ":" + std::to_string((long long)json_integer_value(ix));
        return IValue(c10::Device(d));
    }
    if (k == "as_layout") {
        if (json_integer_value(v) != 7) R.bad(where + ": only the strided layout is supported");
        return IValue(at::kStrided);
    }
    if (k == "as_memory_format") {
        static const at::MemoryFormat mf[] = {at::MemoryFormat::Contiguous, at::MemoryFormat::Contiguous,
                                              at::MemoryFormat::ChannelsLast, at::MemoryFormat::ChannelsLast3d,
                                              at::MemoryFormat::Preserve};
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > 4) R.bad(where + ": unknown memory format code");
        return IValue(mf[i]);
    }
    R.bad(where + ": argument kind " + k + " is not supported");
}

} // namespace

bool is_export_archive(const std::string &path) {
    try {
        caffe2::serialize::PyTorchStreamReader z(path);
        return z.hasRecord("models/model.json");
    } catch (const std::exception &) {
        return false;
    }
}

torch::jit::Module load_exported(const std::string &path) {
    Reader R;
    R.path = path;
    try {
        R.zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    } catch (const c10::Error &e) {
        R.bad(std::string("cannot open the archive: ") + e.what_without_backtrace());
    }
    Json model;
    R.json("models/model.json", model);
    json_t *gm = member(R, model.j, "graph_module", "model.json");
    json_t *graph = member(R, gm, "graph", "graph_module");
    json_t *sig = member(R, gm, "signature", "graph_module");
    std::map<std::string, at::Tensor> weights = read_tensors(R, "data/weights", "model_weights_config.json");
    std::map<std::string, at::Tensor> consts = read_tensors(R, "data/constants", "model_constants_config.json");

    torch::jit::Module mod(c10::QualifiedName("__torch__.rkmate.ExportedProgram"));
    auto g = std::make_shared<torch::jit::Graph>();
    Value *self = g->addInput("self")->setType(mod.type());
    std::map<std::string, Value *> vals;
    std::set<std::string> attrs;
    size_t i;
    json_t *spec;
    json_array_foreach(member(R, sig, "input_specs", "signature"), i, spec) {
        const char *kind = nullptr;
        json_t *s = nullptr;
        json_object_foreach(spec, kind, s) break;
        std::string k = kind ? kind : "";
        std::string where = "input spec " + std::to_string(i) + " (" + k + ")";
        if (k == "user_input") {
            json_t *a = member(R, s, "arg", where);
            json_t *t = json_object_get(a, "as_tensor");
            if (!t) R.bad(where + ": only tensor inputs are supported");
            const char *n = json_string_value(member(R, t, "name", where));
            vals[n] = g->addInput(n)->setType(c10::TensorType::get());
            continue;
        }
        const char *target = nullptr;
        bool param = k == "parameter";
        if (param) target = json_string_value(json_object_get(s, "parameter_name"));
        else if (k == "buffer") target = json_string_value(json_object_get(s, "buffer_name"));
        else if (k == "tensor_constant") target = json_string_value(json_object_get(s, "tensor_constant_name"));
        else R.bad(where + ": input kind " + k + " is not supported");
        const char *n = json_string_value(member(R, member(R, s, "arg", where), "name", where));
        if (!target || !n) R.bad(where + ": no name");
        at::Tensor t;
        if (weights.count(target)) t = weights.at(target);
        else if (consts.count(target)) t = consts.at(target);
        else R.bad(where + ": no data for " + target + " in data/weights or data/constants");
        std::string attr = n; // the placeholder's name: a valid identifier
        if (!attrs.insert(attr).second) R.bad(where + ": " + attr + " twice");
        if (param) t.requires_grad_(true);
        mod.register_parameter(attr, t, /*is_buffer=*/!param);
        vals[n] = g->insertGetAttr(self, attr);
        vals[n]->setDebugName(n);
    }
    json_t *node;
    json_array_foreach(member(R, graph, "nodes", "graph"), i, node) {
        const char *tgt = json_string_value(member(R, node, "target", "node"));
        std::string target = tgt ? tgt : "";
        const char *nname = json_string_value(json_object_get(node, "name"));
        std::string where = std::string("node ") + (nname ? nname : std::to_string(i)) + " (" + target + ")";
        const std::string pre = "torch.ops.aten.";
        if (target.compare(0, 10, "_operator.") == 0 || target.compare(0, 10, "torch.sym_") == 0)
            R.bad(where + ": arithmetic or a check on symbolic sizes: a size that depends on tensor data (e.g. "
                          "the result of nonzero or of a boolean-mask index) is not supported; rkmate needs "
                          "static shapes (the TorchScript file of torch.jit.trace fixes them to the example's)");
        if (target.compare(0, pre.size(), pre) != 0)
            R.bad(where + ": only ATen operators are supported (torch.export.export without custom ops)");
        std::string op = target.substr(pre.size());
        op = op.substr(0, op.find('.')); // overload: resolved by the argument types
        std::vector<torch::jit::NamedValue> args, kwargs;
        size_t j;
        json_t *in;
        json_array_foreach(member(R, node, "inputs", where), j, in) {
            const char *an = json_string_value(member(R, in, "name", where));
            if (!an) R.bad(where + ": an argument without a name");
            Arg v = argument(R, *g, vals, member(R, in, "arg", where), where);
            json_t *kind = json_object_get(in, "kind");
            if (json_is_integer(kind) && json_integer_value(kind) == 2) kwargs.push_back(v.named(an)); // keyword
            else args.push_back(v.positional());
        }
        Value *out;
        try {
            out = g->insert(c10::Symbol::fromQualString("aten::" + op), args, kwargs);
        } catch (const std::exception &e) {
            std::string m = e.what();
            R.bad(where + ": no matching ATen schema: " + m.substr(0, m.find('\n')));
        }
        json_t *outs = member(R, node, "outputs", where);
        std::vector<Value *> produced{out};
        if (json_array_size(outs) > 1 || (json_array_size(outs) == 1 && json_object_get(json_array_get(outs, 0), "as_tensors"))) {
            Node *u;
            if (out->type()->kind() == c10::TypeKind::TupleType) u = g->insertNode(g->createTupleUnpack(out));
            else u = g->insertNode(g->createListUnpack(out, (int)json_array_size(json_object_get(json_array_get(outs, 0), "as_tensors"))));
            produced.assign(u->outputs().begin(), u->outputs().end());
        }
        std::vector<json_t *> names;
        json_t *o;
        json_array_foreach(outs, j, o) {
            if (json_t *ts = json_object_get(o, "as_tensors")) {
                size_t q;
                json_t *e;
                json_array_foreach(ts, q, e) names.push_back(e);
            } else if (json_t *t = json_object_get(o, "as_tensor")) {
                names.push_back(t);
            } else {
                names.push_back(nullptr); // a non-tensor or absent output
            }
        }
        if (names.empty()) continue; // no output the program uses (e.g. a metadata assertion)
        if (names.size() != produced.size())
            R.bad(where + ": " + std::to_string(names.size()) + " outputs named, the operator gives " +
                  std::to_string(produced.size()));
        for (size_t q = 0; q < names.size(); q++) {
            if (!names[q]) continue;
            const char *n = json_string_value(json_object_get(names[q], "name"));
            if (!n) R.bad(where + ": an output without a name");
            vals[n] = produced[q];
            produced[q]->setDebugName(n);
        }
    }
    std::vector<Value *> outs;
    json_array_foreach(member(R, sig, "output_specs", "signature"), i, spec) {
        json_t *u = json_object_get(spec, "user_output");
        if (!u) R.bad("output spec " + std::to_string(i) + ": only user outputs are supported (no buffer mutations)");
        json_t *t = json_object_get(member(R, u, "arg", "output spec"), "as_tensor");
        const char *n = t ? json_string_value(json_object_get(t, "name")) : nullptr;
        if (!n || !vals.count(n)) R.bad("output spec " + std::to_string(i) + ": not a tensor of the graph");
        outs.push_back(vals.at(n));
    }
    if (outs.size() == 1) g->registerOutput(outs[0]);
    else g->registerOutput(g->insertNode(g->createTuple(outs))->output());
    auto fn = mod._ivalue()->compilation_unit()->create_function(c10::QualifiedName(*mod.type()->name(), "forward"), g);
    mod.type()->addMethod(fn);
    return mod;
}

} // namespace rkx
