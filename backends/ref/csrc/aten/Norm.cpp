// Softmax and the norms: _softmax, _log_softmax and their backward ops,
// native_layer_norm, native_group_norm, the _native_batch_norm_legit family,
// and their backward ops. The glue checks arguments with eager CPU's
// messages, picks result dtypes (the mixed-dtype rule: a float16/bfloat16
// input may come with float32 parameters, whose dtype the statistics then
// take), allocates, and describes each operand with the shape its kernel
// takes (rows x row for layer norm, N x C x HxW for group norm, N x C x L for
// batch norm) without copying, unless a layout cannot be described so.
#include "aten/Glue.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>
#include <tuple>
#include <vector>

namespace opgen_ref {
namespace {

using Tensors = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// A descriptor of t (of numel rows * len elements) as `shape`, for t
// contiguous or channels-last as the kernel needs: shape's dims are merged
// runs of t's dims (the caller made sure they merge).
refkTensor describe_shape(const at::Tensor& t, std::initializer_list<int64_t> shape,
                          std::initializer_list<int64_t> strides, const char* op) {
  refkTensor d = describe(t, op);
  d.ndim = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t s : shape) d.sizes[i++] = s;
  i = 0;
  for (int64_t s : strides) d.strides[i++] = s;
  return d;
}

// An absent optional operand: data NULL, shape of none.
refkTensor absent() {
  refkTensor d{};
  d.dtype = refkFloat32;
  return d;
}

// t itself when contiguous, else a contiguous copy made by the library.
at::Tensor contiguous(const at::Tensor& t, const char* op) {
  if (t.is_contiguous()) return t;
  at::Tensor out = empty(t.sizes(), t.scalar_type(), t.device());
  copy_into(out, t, op);
  return out;
}

at::Tensor value(const std::optional<at::Tensor>& t) { return t.has_value() ? *t : at::Tensor(); }

// ---- softmax ---------------------------------------------------------------

at::Tensor softmax_forward(const at::Tensor& self, int64_t dim, bool half_to_float, bool log) {
  const char* name = log ? "_log_softmax" : "_softmax";
  const c10::Device device = common_device({&self}, name);
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(d >= 0 && d < std::max<int64_t>(self.dim(), 1), "dim must be non-negative and less than input dimensions");
  // The library computes half_to_float (CUDA's softmax of a float16 input
  // into float32); eager CPU refuses it, and so does this glue, as eager.
  TORCH_CHECK(!half_to_float, "softmax with half to float conversion is not supported on CPU");
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  if (self.numel() == 0) return out;
  const bool last = self.dim() == 0 || d == self.dim() - 1;
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"",
                              log ? "log_softmax" : "softmax", last ? "_lastdim" : "", "_kernel_impl\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  const refkTensor o = describe(out, name), i = describe(self, name);
  const refkContext ctx = context();
  check(refkSoftmax(&ctx, &o, &i, static_cast<int32_t>(d), log ? 1 : 0), name);
  return out;
}

at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim, at::ScalarType input_dtype,
                            bool log) {
  const char* name = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  const c10::Device device = common_device({&grad, &output}, name);
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(log || grad.sizes() == output.sizes(), "Expected tensor for argument #1 'grad' to have same size as ",
              "tensor for argument #2 'output'; but ", grad.sizes(), " does not equal ", output.sizes(),
              " (while checking arguments for softmax_backward)");
  const int64_t d = at::maybe_wrap_dim(dim, grad.dim());
  TORCH_CHECK(d >= 0 && d < std::max<int64_t>(grad.dim(), 1), "dim must be non-negative and less than input dimensions");
  // Eager's meta: a float32 gradient of a float16 input is float16 (CUDA's
  // half_to_float); otherwise grad's dtype.
  const bool to_half = grad.scalar_type() != input_dtype && grad.scalar_type() == c10::kFloat &&
                       input_dtype == c10::kHalf;
  const auto result = to_half ? c10::kHalf : grad.scalar_type();
  at::Tensor out = empty(grad.sizes(), result, device);
  if (output.numel() == 0) return out;
  const bool last = grad.dim() == 0 || d == grad.dim() - 1;
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(grad.scalar_type()), "\"", log ? "log_softmax" : "softmax",
                              last ? "_backward_lastdim" : "_backward", "_kernel_impl\" not implemented for '",
                              c10::toString(grad.scalar_type()), "'");
  TORCH_CHECK(output.scalar_type() == grad.scalar_type(), "expected scalar type ", grad.scalar_type(), " but found ",
              output.scalar_type());
  TORCH_CHECK(result == grad.scalar_type(), "expected scalar type ", grad.scalar_type(), " but found ", result);
  // Eager's log_softmax backward does not check output's size: it reads a
  // contiguous output as if it had grad's shape. So does this glue, where
  // output has the elements to read.
  refkTensor y = describe(output, name);
  at::Tensor y_storage = output;
  if (grad.sizes() != output.sizes()) {
    TORCH_CHECK(output.numel() >= grad.numel(), name, ": output has fewer elements (", output.numel(),
                ") than grad_output (", grad.numel(), ")");
    y_storage = contiguous(output, name);
    y = describe(y_storage, name);
    y.ndim = static_cast<int32_t>(grad.dim());
    int64_t stride = 1;
    for (int64_t i = grad.dim() - 1; i >= 0; --i) {
      y.sizes[i] = grad.size(i);
      y.strides[i] = stride;
      stride *= grad.size(i);
    }
  }
  const refkTensor gi = describe(out, name), g = describe(grad, name);
  const refkContext ctx = context();
  check(refkSoftmaxBackward(&ctx, &gi, &g, &y, static_cast<int32_t>(d), log ? 1 : 0), name);
  return out;
}

// ---- shared norm checks ----------------------------------------------------

// Eager CPU's mixed-dtype rule for norms: parameters of another dtype than
// the input must all be float32 and the input float16 or bfloat16. Returns
// the parameters' dtype (the statistics' dtype).
c10::ScalarType param_dtype(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  std::optional<c10::ScalarType> mixed;
  for (const at::Tensor* p : params) {
    if (p->defined() && p->scalar_type() != input.scalar_type()) mixed = p->scalar_type();
  }
  if (!mixed) return input.scalar_type();
  for (const at::Tensor* p : params) {
    TORCH_CHECK(!p->defined() || p->scalar_type() == c10::kFloat,
                "mixed dtype (CPU): expect parameter to have scalar type of Float");
  }
  TORCH_CHECK(input.scalar_type() == c10::kHalf || input.scalar_type() == c10::kBFloat16,
              "mixed dtype (CPU): all inputs must share same datatype.");
  return c10::kFloat;
}

void check_floating(const at::Tensor& t, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", kernel, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "'");
}

// Eager CPU allocates a parameter's gradient like the parameter, and an
// absent one has no device to allocate on.
at::Tensor like_param(const at::Tensor& param, c10::Device device) {
  TORCH_CHECK(param.defined(), "tensor does not have a device");
  return empty(param.sizes(), param.scalar_type(), device);
}

}  // namespace

at::Tensor _softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward(self, dim, half_to_float, false);
}
at::Tensor _log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward(self, dim, half_to_float, true);
}
at::Tensor _softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                  at::ScalarType input_dtype) {
  return softmax_backward(grad_output, output, dim, input_dtype, false);
}
at::Tensor _log_softmax_backward_data(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                      at::ScalarType input_dtype) {
  return softmax_backward(grad_output, output, dim, input_dtype, true);
}

// ---- layer norm --------------------------------------------------------------

namespace {

// Rows (M) and row length (N) of a layer norm, with eager's checks.
std::pair<int64_t, int64_t> layer_norm_rows(const at::Tensor& input, at::IntArrayRef normalized_shape,
                                            const at::Tensor& weight, const at::Tensor& bias) {
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one ",
              "element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!weight.defined() || weight.sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ", weight.sizes(),
              " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!bias.defined() || bias.sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got bias of shape ", bias.sizes(),
              " and normalized_shape = ", normalized_shape);
  const auto shape = input.sizes();
  if (input.dim() < nd || !shape.slice(input.dim() - nd).equals(normalized_shape)) {
    std::ostringstream ss;
    ss << "Given normalized_shape=" << normalized_shape << ", expected input with shape [*";
    for (int64_t s : normalized_shape) ss << ", " << s;
    ss << "], but got input of size" << shape;
    TORCH_CHECK(false, ss.str());
  }
  const int64_t axis = input.dim() - nd;
  int64_t M = 1, N = 1;
  for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? M : N) *= shape[d];
  return {M, N};
}

std::vector<int64_t> stats_shape(const at::Tensor& input, int64_t nd) {
  std::vector<int64_t> s(input.sizes().begin(), input.sizes().end() - nd);
  s.resize(static_cast<size_t>(input.dim()), 1);
  return s;
}

}  // namespace

Tensors native_layer_norm(const at::Tensor& input, at::IntArrayRef normalized_shape,
                          const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
                          double eps) {
  const char* name = "native_layer_norm";
  const at::Tensor weight = value(weight_opt), bias = value(bias_opt);
  const c10::Device device = common_device({&input, &weight, &bias}, name);
  const c10::DeviceGuard guard(device);
  const auto [M, N] = layer_norm_rows(input, normalized_shape, weight, bias);
  const auto stats = param_dtype(input, {&weight, &bias});
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  at::Tensor out = empty(input.sizes(), input.scalar_type(), device);
  at::Tensor mean = empty(stats_shape(input, nd), stats, device);
  at::Tensor rstd = empty(stats_shape(input, nd), stats, device);
  if (M == 0) return {out, mean, rstd};
  check_floating(input, "LayerNormKernelImpl");
  const at::Tensor x = contiguous(input, name);
  const refkTensor o = describe_shape(out, {M, N}, {N, 1}, name), i = describe_shape(x, {M, N}, {N, 1}, name);
  const refkTensor m = describe_shape(mean, {M}, {1}, name), r = describe_shape(rstd, {M}, {1}, name);
  const at::Tensor w = weight.defined() ? contiguous(weight, name) : weight;
  const at::Tensor b = bias.defined() ? contiguous(bias, name) : bias;
  const refkTensor dw = w.defined() ? describe_shape(w, {N}, {1}, name) : absent();
  const refkTensor db = b.defined() ? describe_shape(b, {N}, {1}, name) : absent();
  const refkContext ctx = context();
  check(refkLayerNorm(&ctx, &o, &m, &r, &i, &dw, &db, eps), name);
  return {out, mean, rstd};
}

Tensors native_layer_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                   at::IntArrayRef normalized_shape, const at::Tensor& mean, const at::Tensor& rstd,
                                   const std::optional<at::Tensor>& weight_opt,
                                   const std::optional<at::Tensor>& bias_opt, std::array<bool, 3> output_mask) {
  const char* name = "native_layer_norm_backward";
  const at::Tensor weight = value(weight_opt), bias = value(bias_opt);
  const c10::Device device = common_device({&grad_out, &input, &mean, &rstd, &weight, &bias}, name);
  const c10::DeviceGuard guard(device);
  const auto [M, N] = layer_norm_rows(input, normalized_shape, weight, bias);
  at::Tensor dx, dw, db;
  if (output_mask[0]) dx = empty(input.sizes(), input.scalar_type(), device);
  if (output_mask[1]) dw = like_param(weight, device);
  if (output_mask[2]) db = like_param(bias, device);
  if (M == 0) {
    // Sums over no rows.
    for (at::Tensor* t : {&dw, &db}) {
      if (t->defined() && t->numel() > 0) {
        const refkTensor d = describe(*t, name);
        const refkContext ctx = context();
        check(refkFill(&ctx, &d, refkScalar{0.0, 0}), name);
      }
    }
    return {dx, dw, db};
  }
  if (N == 0) return {dx, dw, db};
  check_floating(input, "LayerNormBackwardKernelImpl");
  TORCH_CHECK(grad_out.numel() == input.numel(), name, ": grad_out must have input's shape");
  const at::Tensor g = contiguous(grad_out, name), x = contiguous(input, name);
  const at::Tensor m = contiguous(mean, name), r = contiguous(rstd, name);
  TORCH_CHECK(m.numel() == M && r.numel() == M, name, ": mean and rstd must have ", M, " elements");
  const at::Tensor w = weight.defined() ? contiguous(weight, name) : weight;
  const refkTensor ddx = dx.defined() ? describe_shape(dx, {M, N}, {N, 1}, name) : absent();
  const refkTensor ddw = dw.defined() ? describe_shape(dw, {N}, {1}, name) : absent();
  const refkTensor ddb = db.defined() ? describe_shape(db, {N}, {1}, name) : absent();
  const refkTensor dg = describe_shape(g, {M, N}, {N, 1}, name), di = describe_shape(x, {M, N}, {N, 1}, name);
  const refkTensor dm = describe_shape(m, {M}, {1}, name), dr = describe_shape(r, {M}, {1}, name);
  const refkTensor dwt = w.defined() ? describe_shape(w, {N}, {1}, name) : absent();
  const refkContext ctx = context();
  check(refkLayerNormBackward(&ctx, &ddx, &ddw, &ddb, &dg, &di, &dm, &dr, &dwt), name);
  return {dx, dw, db};
}

// ---- group norm --------------------------------------------------------------

namespace {

void check_group_norm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, int64_t N, int64_t C,
                      int64_t HxW, int64_t group) {
  TORCH_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be divisible by num_groups, but ",
              "got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, but got weight of ",
              "shape ", weight.sizes(), " and input of shape ", input.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape ",
              bias.sizes(), " and input of shape ", input.sizes());
  TORCH_CHECK(input.numel() == N * C * HxW, "Expected X.numel() == N * C * HxW to be true, but got false.  (Could ",
              "this error message be improved?  If so, please report an enhancement request to PyTorch.)");
}

refkTensor describe_nchw(const at::Tensor& t, int64_t N, int64_t C, int64_t HxW, const char* op) {
  return describe_shape(t, {N, C, HxW}, {C * HxW, HxW, 1}, op);
}

refkTensor describe_vec(const at::Tensor& t, int64_t n, const char* op) {
  return t.defined() ? describe_shape(t, {n}, {t.dim() > 0 ? t.stride(0) : 1}, op) : absent();
}

}  // namespace

Tensors native_group_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight_opt,
                          const std::optional<at::Tensor>& bias_opt, int64_t N, int64_t C, int64_t HxW, int64_t group,
                          double eps) {
  const char* name = "native_group_norm";
  const at::Tensor weight = value(weight_opt), bias = value(bias_opt);
  const c10::Device device = common_device({&input, &weight, &bias}, name);
  const c10::DeviceGuard guard(device);
  check_group_norm(input, weight, bias, N, C, HxW, group);
  const auto stats = param_dtype(input, {&weight, &bias});
  at::Tensor out = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  at::Tensor mean = empty({N, group}, stats, device), rstd = empty({N, group}, stats, device);
  if (N == 0) return {out, mean, rstd};
  check_floating(input, "GroupNormKernelImpl");
  // Channels-last inputs are normalized through a contiguous copy.
  const at::Tensor x = contiguous(input, name);
  const at::Tensor y = out.is_contiguous() ? out : empty(input.sizes(), input.scalar_type(), device);
  const refkTensor o = describe_nchw(y, N, C, HxW, name), i = describe_nchw(x, N, C, HxW, name);
  const refkTensor m = describe(mean, name), r = describe(rstd, name);
  const refkTensor dw = describe_vec(weight, C, name), db = describe_vec(bias, C, name);
  const refkContext ctx = context();
  check(refkGroupNorm(&ctx, &o, &m, &r, &i, &dw, &db, group, eps), name);
  if (!y.is_same(out)) copy_into(out, y, name);
  return {out, mean, rstd};
}

Tensors native_group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
                                   const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, int64_t N,
                                   int64_t C, int64_t HxW, int64_t group, std::array<bool, 3> output_mask) {
  const char* name = "native_group_norm_backward";
  const at::Tensor weight = value(weight_opt);
  const c10::Device device = common_device({&grad_out, &input, &mean, &rstd, &weight}, name);
  const c10::DeviceGuard guard(device);
  check_group_norm(input, weight, at::Tensor(), N, C, HxW, group);
  TORCH_CHECK(grad_out.numel() == input.numel() && mean.numel() == N * group && rstd.numel() == N * group, name,
              ": grad_out, mean and rstd must match the input");
  at::Tensor dx, dw, db;
  if (output_mask[0]) dx = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  if (output_mask[1]) dw = like_param(weight, device);
  if (output_mask[2]) db = like_param(weight, device);
  if (N == 0 || C == 0) return {dx, dw, db};
  check_floating(input, "GroupNormBackwardKernelImpl");
  // Eager CPU's backward takes one dtype throughout.
  for (const at::Tensor* t : {&grad_out, &mean, &rstd, &weight}) {
    TORCH_CHECK(!t->defined() || t->scalar_type() == input.scalar_type(), "expected scalar type ",
                input.scalar_type(), " but found ", t->scalar_type());
  }
  const at::Tensor g = contiguous(grad_out, name), x = contiguous(input, name);
  const at::Tensor gx = !dx.defined() || dx.is_contiguous() ? dx : empty(input.sizes(), input.scalar_type(), device);
  const refkTensor ddx = gx.defined() ? describe_nchw(gx, N, C, HxW, name) : absent();
  const refkTensor ddw = describe_vec(dw, C, name), ddb = describe_vec(db, C, name);
  const refkTensor dg = describe_nchw(g, N, C, HxW, name), di = describe_nchw(x, N, C, HxW, name);
  const refkTensor dm = describe_shape(mean, {N, group}, {group, 1}, name);
  const refkTensor dr = describe_shape(rstd, {N, group}, {group, 1}, name);
  TORCH_CHECK(mean.is_contiguous() && rstd.is_contiguous(), name, ": mean and rstd must be contiguous");
  const refkTensor dwt = describe_vec(weight, C, name);
  const refkContext ctx = context();
  check(refkGroupNormBackward(&ctx, &ddx, &ddw, &ddb, &dg, &di, &dm, &dr, &dwt, group), name);
  if (gx.defined() && !gx.is_same(dx)) copy_into(dx, gx, name);
  return {dx, dw, db};
}

// ---- batch norm --------------------------------------------------------------

namespace {

// t as N x C x L: its spatial dims merge into one (contiguous and
// channels-last layouts do), else a contiguous copy.
at::Tensor channels_view(const at::Tensor& t, refkTensor& d, const char* op) {
  const int64_t N = t.size(0), C = t.size(1);
  int64_t L = 1;
  for (int64_t i = 2; i < t.dim(); ++i) L *= t.size(i);
  int64_t inner = 1;  // the stride of the merged spatial dim
  bool merges = true;
  int64_t expect = -1;
  for (int64_t i = t.dim() - 1; i >= 2; --i) {
    if (t.size(i) == 1) continue;
    if (expect == -1) {
      inner = t.stride(i);
    } else {
      merges = merges && t.stride(i) == expect;
    }
    expect = t.stride(i) * t.size(i);
  }
  if (!merges) {
    const at::Tensor c = contiguous(t, op);
    d = describe_shape(c, {N, C, L}, {C * L, L, 1}, op);
    return c;
  }
  d = describe_shape(t, {N, C, L}, {t.stride(0), t.stride(1), inner}, op);
  return t;
}

void check_batch_norm(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  const int64_t C = input.size(1);  // IndexError for a 1-d input, as eager
  TORCH_CHECK(input.numel() > 0, "input tensor must have at least one element, but got input_sizes = ", input.sizes());
  for (const at::Tensor* p : params) {
    TORCH_CHECK(!p->defined() || p->numel() == C, "running_mean should contain ", C, " elements not ", p->numel());
  }
}

Tensors batch_norm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                   const at::Tensor& running_mean, const at::Tensor& running_var, bool training, double momentum,
                   double eps, const char* name) {
  const c10::Device device = common_device({&input, &weight, &bias, &running_mean, &running_var}, name);
  const c10::DeviceGuard guard(device);
  const int64_t C = input.size(1);  // IndexError for a 1-d input, as eager
  const auto stats = param_dtype(input, {&weight, &bias, &running_mean, &running_var});
  check_floating(input, "batch_norm");
  at::Tensor out = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  at::Tensor save_mean = empty({training ? C : 0}, stats, device);
  at::Tensor save_invstd = empty({training ? C : 0}, stats, device);
  if (!training && input.numel() == 0) return {out, save_mean, save_invstd};
  check_batch_norm(input, {&weight, &bias, &running_mean, &running_var});
  refkTensor di{}, dout{};
  const at::Tensor x = channels_view(input, di, name);
  const at::Tensor y = channels_view(out, dout, name);
  const refkTensor sm = training ? describe(save_mean, name) : absent();
  const refkTensor si = training ? describe(save_invstd, name) : absent();
  const refkTensor dw = describe_vec(weight, C, name), db = describe_vec(bias, C, name);
  const refkTensor rm = describe_vec(running_mean, C, name), rv = describe_vec(running_var, C, name);
  const refkContext ctx = context();
  check(refkBatchNorm(&ctx, &dout, &sm, &si, &di, &dw, &db, &rm, &rv, training ? 1 : 0, momentum, eps), name);
  if (!y.is_same(out)) copy_into(out, y, name);
  return {out, save_mean, save_invstd};
}

}  // namespace

Tensors _native_batch_norm_legit(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                 const std::optional<at::Tensor>& bias, at::Tensor& running_mean,
                                 at::Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm(input, value(weight), value(bias), running_mean, running_var, training, momentum, eps,
                    "_native_batch_norm_legit");
}

Tensors _native_batch_norm_legit(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                 const std::optional<at::Tensor>& bias, bool training, double momentum, double eps) {
  TORCH_CHECK(training, "_native_batch_norm_legit.no_stats: evaluation without running stats is undefined");
  return batch_norm(input, value(weight), value(bias), at::Tensor(), at::Tensor(), training, momentum, eps,
                    "_native_batch_norm_legit.no_stats");
}

Tensors _native_batch_norm_legit_no_training(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                             const std::optional<at::Tensor>& bias, const at::Tensor& running_mean,
                                             const at::Tensor& running_var, double momentum, double eps) {
  return batch_norm(input, value(weight), value(bias), running_mean, running_var, false, momentum, eps,
                    "_native_batch_norm_legit_no_training");
}

// What F.batch_norm itself reaches on this device (at::_batch_norm_impl_index
// calls native_batch_norm for every backend without cuDNN or MIOpen); the
// _legit overloads above are its core-ATen decomposition.
Tensors native_batch_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                          const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
                          const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  TORCH_CHECK(training || (value(running_mean).defined() && value(running_var).defined()),
              "running_mean and running_var must be defined in evaluation mode");
  return batch_norm(input, value(weight), value(bias), value(running_mean), value(running_var), training, momentum,
                    eps, "native_batch_norm");
}

Tensors native_batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                   const std::optional<at::Tensor>& weight_opt,
                                   const std::optional<at::Tensor>& running_mean_opt,
                                   const std::optional<at::Tensor>& running_var_opt,
                                   const std::optional<at::Tensor>& save_mean_opt,
                                   const std::optional<at::Tensor>& save_invstd_opt, bool train, double eps,
                                   std::array<bool, 3> output_mask) {
  const char* name = "native_batch_norm_backward";
  const at::Tensor weight = value(weight_opt), running_mean = value(running_mean_opt);
  const at::Tensor running_var = value(running_var_opt), save_mean = value(save_mean_opt);
  const at::Tensor save_invstd = value(save_invstd_opt);
  const c10::Device device =
      common_device({&grad_out, &input, &weight, &running_mean, &running_var, &save_mean, &save_invstd}, name);
  const c10::DeviceGuard guard(device);
  check_batch_norm(input, {&weight, &running_mean, &running_var});
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out must have input's shape");
  const int64_t C = input.size(1);
  if (train) {
    TORCH_CHECK(save_mean.defined() && save_invstd.defined() && save_mean.numel() == C && save_invstd.numel() == C,
                name, ": training needs save_mean and save_invstd of ", C, " elements");
  } else {
    TORCH_CHECK(running_mean.defined() && running_var.defined(), name, ": evaluation needs running stats");
  }
  const auto stats = param_dtype(input, {&weight, &running_mean, &running_var, &save_mean, &save_invstd});
  check_floating(input, "batch_norm_backward_cpu");
  at::Tensor dx, dw, db;
  if (output_mask[0]) dx = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  if (output_mask[1]) dw = empty({C}, weight.defined() ? weight.scalar_type() : stats, device);
  if (output_mask[2]) db = empty({C}, weight.defined() ? weight.scalar_type() : stats, device);
  refkTensor dg{}, di{}, ddx = absent();
  const at::Tensor g = channels_view(grad_out, dg, name), x = channels_view(input, di, name);
  at::Tensor gx = dx;
  if (dx.defined()) gx = channels_view(dx, ddx, name);
  const refkTensor ddw = describe_vec(dw, C, name), ddb = describe_vec(db, C, name);
  const refkTensor dwt = describe_vec(weight, C, name);
  const refkTensor rm = describe_vec(running_mean, C, name), rv = describe_vec(running_var, C, name);
  const refkTensor sm = describe_vec(save_mean, C, name), si = describe_vec(save_invstd, C, name);
  const refkContext ctx = context();
  check(refkBatchNormBackward(&ctx, &ddx, &ddw, &ddb, &dg, &di, &dwt, &rm, &rv, &sm, &si, train ? 1 : 0, eps), name);
  if (gx.defined() && !gx.is_same(dx)) copy_into(dx, gx, name);
  return {dx, dw, db};
}

}  // namespace opgen_ref
