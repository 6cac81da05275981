"""rkmate — Rockmate rematerialization for PyTorch training, from Python.

``rkmate.optimize(module, example_inputs, budget="50%")`` returns a module
that trains in an ordinary PyTorch loop while its forward and backward run
the schedule rkmate found for that activation-memory budget: only some
activations are kept, the others are recomputed during the backward, with
gradients, BatchNorm running statistics and dropout masks bit for bit those
of plain training::

    import torch, rkmate
    m = rkmate.optimize(model, [x], budget="50%")
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for step in range(10):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()

``rkmate.plan(module, example_inputs, budget)`` only makes the schedule and
returns it with its predicted peak and time, for inspection.

How: the module (in training mode) is traced with ``torch.jit.trace`` into a
temporary directory; the native library ``_rkmate_ops.so`` (loaded with
``torch.ops.load_library``) traces it with rkmate's front end into a chain
of measured CD-graphs, solves it with rkmate's C library (rockmate, rotor,
sqrt, ...), replays the schedule with the simulator, and opens a training
session of rkmate's C++ executor on it.  The returned module's parameters
and buffers share their storage with the executor's copy of the model, so
any ``torch.optim`` optimizer steps them; an ``autograd.Function`` runs the
schedule up to its loss node in the forward and the rest in the backward.

Limits: CPU tensors; a module that returns one floating-point tensor, has
no data-dependent control flow (it must trace), and is called on inputs of
the example inputs' shapes and dtypes; gradients with respect to the inputs
are not computed.  In eval mode or under ``torch.no_grad()`` the original
module runs.  Loading the native library installs rkmate's counting CPU
allocator and turns TorchScript's graph optimizer off for the process
(rkmate's executor runs graphs node by node).  ``plan`` and ``optimize``
leave the global generator and the module's buffers as they found them.
"""

import os
import tempfile

import torch

__all__ = ["plan", "optimize", "Plan", "RkModule"]

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rkmate_ops.so")
_loaded = False

_DTYPES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
    torch.bool: "bool",
}


def _load():
    global _loaded
    if not _loaded:
        if not os.path.exists(_LIB):
            raise ImportError(f"rkmate: {_LIB} is missing: build rkmate with its libtorch part "
                              "(tools/run, or meson -Dtorch=enabled)")
        torch.ops.load_library(_LIB)
        _loaded = True


def _as_tuple(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    inputs = tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"rkmate: example input {i} is a {type(x).__name__}, expected a tensor")
        if x.device.type != "cpu":
            raise ValueError(f"rkmate: example input {i} is on {x.device}; the Python package runs on the CPU")
    return inputs


def _spec(x):
    if x.dtype not in _DTYPES:
        raise TypeError(f"rkmate: input dtype {x.dtype} is not supported")
    return "x".join(str(d) for d in x.shape) + ":" + _DTYPES[x.dtype]


class Plan:
    """A schedule for a module at a budget, with rkmate's predictions.

    Attributes: ``algo``; ``budget``, ``predicted_peak`` and
    ``keep_all_peak`` in bytes of activation memory (the keep-all peak is
    that of the schedule that recomputes nothing); ``predicted_time`` and
    ``baseline_time`` (every node once) in microseconds of one training
    step; ``n_ops``; ``schedule``: the schedule file's content (a dict, see
    docs/formats.md); ``directory``: where the traced model
    (``model.pt``), its chain (``chain.rkg``) and the schedule
    (``schedule.rks``) are."""

    def __init__(self, directory, algo, inputs, values, input_file):
        self.directory = directory
        self.algo = algo
        self.inputs = inputs
        self.input_file = input_file
        (budget, peak, time_us, keep_peak, base_us, n_ops) = values
        self.budget = int(budget)
        self.predicted_peak = int(peak)
        self.predicted_time = time_us
        self.keep_all_peak = int(keep_peak)
        self.baseline_time = base_us
        self.n_ops = int(n_ops)
        self.model_path = os.path.join(directory, "model.pt")
        self.chain_path = os.path.join(directory, "chain.rkg")
        self.schedule_path = os.path.join(directory, "schedule.rks")

    @property
    def schedule(self):
        import json
        with open(self.schedule_path) as f:
            return json.load(f)

    def __repr__(self):
        return (f"rkmate.Plan({self.algo}: budget {self.budget} B, predicted peak {self.predicted_peak} B "
                f"(keep-all {self.keep_all_peak} B), predicted step time {self.predicted_time:.0f} us "
                f"(+{100 * (self.predicted_time / self.baseline_time - 1):.1f} %), {self.n_ops} operations)")


def plan(module, example_inputs, budget="50%", algo="rockmate", checkmate_options=False, directory=None,
         seed=0):
    """Find a schedule for training ``module`` on inputs shaped like
    ``example_inputs`` (a tensor or a sequence of tensors) within ``budget``
    bytes of activation memory: an int, a text such as ``"800MB"``, or a
    percentage of the keep-all peak such as ``"50%"``.  ``algo``: rockmate
    (default), rotor, sqrt, none, recompute-all or checkmate;
    ``checkmate_options``: rockmate's block options from rk-Checkmate's ILP
    grid (slower) instead of the built-in ones.  The files go to
    ``directory`` (default: a new temporary directory).  Returns a Plan;
    raises RuntimeError("rkmate: ...") when no schedule fits."""
    _load()
    inputs = _as_tuple(example_inputs)
    specs = [_spec(x) for x in inputs]
    directory = directory or tempfile.mkdtemp(prefix="rkmate-")
    os.makedirs(directory, exist_ok=True)
    model_path = os.path.join(directory, "model.pt")
    input_file = os.path.join(directory, "inputs.pt")
    rng = torch.get_rng_state()
    saved = {n: b.detach().clone() for n, b in module.named_buffers()}
    was_training = module.training

    def restore_buffers():  # the trace's forward updated BatchNorm's statistics
        with torch.no_grad():
            for n, b in module.named_buffers():
                b.copy_(saved[n])

    try:
        module.train()
        traced = torch.jit.trace(module, inputs, check_trace=False)
        restore_buffers()  # before saving: the traced module shares the module's tensors
        traced.save(model_path)
        torch.save([x.detach() for x in inputs], input_file)
        values = torch.ops.rkmate.plan(model_path, specs, input_file, str(budget), algo, bool(checkmate_options),
                                       os.path.join(directory, "chain.rkg"), os.path.join(directory, "schedule.rks"),
                                       int(seed))
    finally:
        restore_buffers()
        module.train(was_training)
        torch.set_rng_state(rng)
    return Plan(directory, algo, specs, values, input_file)


class _Step(torch.autograd.Function):
    """Forward: the schedule up to its loss node; backward: the rest, from the
    output's gradient; returns the parameters' gradients."""

    @staticmethod
    def forward(ctx, rkmod, n_inputs, *args):
        ctx.rkmod = rkmod
        ctx.n_inputs = n_inputs
        return rkmod._session.forward(list(args[:n_inputs]))

    @staticmethod
    def backward(ctx, grad_out):
        m = ctx.rkmod
        grads = m._session.backward(grad_out.contiguous())
        by_name = {}
        for name, g in zip(m._names, grads):
            by_name.setdefault(name, g)
        return (None, None) + (None,) * ctx.n_inputs + tuple(by_name.get(n) for n in m._param_names)


class RkModule(torch.nn.Module):
    """The module ``rkmate.optimize`` returns: ``module`` (the original, whose
    parameters and buffers it shares) trained through the schedule of
    ``plan``.  Call it on tensors of the example inputs' shapes and dtypes."""

    def __init__(self, module, plan_, seed=0):
        super().__init__()
        self.module = module
        self.plan = plan_
        rng = torch.get_rng_state()
        try:
            self._session = torch.classes.rkmate.Session(plan_.model_path, plan_.inputs, plan_.input_file,
                                                          plan_.chain_path, plan_.schedule_path, int(seed))
        finally:
            torch.set_rng_state(rng)
        self._names = self._session.names(False)
        cpp = dict(zip(self._names, self._session.tensors(False)))
        cpp_buffers = dict(zip(self._session.names(True), self._session.tensors(True)))
        self._param_names = []
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name not in cpp:
                    raise RuntimeError(f"rkmate: parameter {name} is not in the traced model")
                p.data = cpp[name].detach()  # one storage: optimizer steps reach the executor
                self._param_names.append(name)
            for name, b in module.named_buffers():
                if name in cpp_buffers:
                    b.data = cpp_buffers[name].detach()
        self._params = [p for _, p in module.named_parameters()]
        self._n_inputs = len(plan_.inputs)

    def forward(self, *inputs):
        if not self.training or not torch.is_grad_enabled():
            return self.module(*inputs)
        if len(inputs) != self._n_inputs:
            raise TypeError(f"rkmate: the model was planned for {self._n_inputs} input(s), got {len(inputs)}")
        if any(x.requires_grad for x in inputs):
            raise ValueError("rkmate: gradients with respect to the inputs are not computed")
        return _Step.apply(self, self._n_inputs, *inputs, *self._params)


def optimize(module, example_inputs, budget="50%", algo="rockmate", checkmate_options=False, directory=None,
             seed=0):
    """Plan ``module`` at ``budget`` (see ``plan``) and return an RkModule
    that trains with that schedule in an ordinary loop (any torch.optim
    optimizer on its ``parameters()``, which are ``module``'s own)."""
    p = plan(module, example_inputs, budget, algo, checkmate_options, directory, seed)
    return RkModule(module, p, seed)
