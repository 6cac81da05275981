/* rk_exec_torch.h — C++ additions to rk_exec.h for code that links libtorch
 * itself (the Python package's TorchScript class, python/rkmate): a training
 * step of a session split at the loss node, so that the caller computes the
 * loss and steps the parameters (an autograd.Function around the model):
 * rk_train_forward runs the schedule up to its loss node and returns a copy
 * of the output; rk_train_backward runs the rest from the output's gradient
 * and returns the parameters' gradients (in rk_train_tensors' order;
 * undefined where a parameter got none), leaving the parameters' own .grad
 * empty.  Open the session with optimizer RK_OPTIM_NONE and keep_generator
 * set: the caller seeds and the session leaves the generator as it found it.
 * Errors are thrown as std::runtime_error ("rkmate: ..."). */
#ifndef RK_EXEC_TORCH_H
#define RK_EXEC_TORCH_H

#include <string>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>

#include "rk_exec.h"

RK_API at::Tensor rk_train_forward(rk_train *t, const std::vector<at::Tensor> &inputs);
RK_API std::vector<at::Tensor> rk_train_backward(rk_train *t, const at::Tensor &grad_out);
/* The module's parameters (buffers = false) or buffers, by name (the
 * tensors themselves: a caller may share their storage). */
RK_API std::vector<std::pair<std::string, at::Tensor>> rk_train_tensors(rk_train *t, bool buffers);

/* The tracer's counting CPU allocator, for measurements outside a trace
 * (tools/bench/split_bwd.py, through the Python package's operators):
 * rk_exec_count_cpu_memory installs it for the process (once; loading a
 * model does it too), rk_exec_cpu_bytes gives the bytes allocated through it
 * now (peak = false) or at their peak since the last rk_exec_cpu_reset_peak,
 * which sets the peak to the current bytes. */
RK_API void rk_exec_count_cpu_memory(void);
RK_API int64_t rk_exec_cpu_bytes(bool peak);
RK_API void rk_exec_cpu_reset_peak(void);

#endif
