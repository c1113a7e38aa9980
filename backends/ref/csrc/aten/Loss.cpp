// What autograd calls on the device for activations and losses: the
// activation backwards (threshold, gelu, sigmoid, tanh) as binary ops of the
// library (refkBinary), native_dropout_backward, mse_loss (+ backward) as
// compositions of the glue's own pointwise and reduction kernels in eager's
// order of operations, nll_loss's forward and backward over refkNllLoss, and
// log_sigmoid's (binary_cross_entropy_with_logits' log-sigmoid terms) over
// refkLogSigmoid.
#include "aten/Glue.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <tuple>

namespace opgen_ref {

// The glue's own kernels these compose (aten/Binary.cpp, aten/Reduce.cpp).
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor mul(const at::Tensor& self, const at::Tensor& other);
at::Tensor mul(const at::Tensor& self, const at::Scalar& other);
at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype);
at::Tensor mean(const at::Tensor& self, std::optional<at::ScalarType> dtype);

namespace {

enum class Types { All, Floating };

// out = op(grad, x) broadcast and promoted as eager's structured
// build_borrowing_binary_op; `kernel` is the name eager's dtype error uses.
at::Tensor backward_binary(const at::Tensor& grad, const at::Tensor& x, refkBinaryOp op, Types types,
                           const char* kernel, const at::Scalar& alpha = 0) {
  const c10::Device device = common_device({&grad, &x}, kernel);
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = result_dtype(grad, x);
  const bool ok = types == Types::All ? dtype != c10::kBool : c10::isFloatingType(dtype);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(dtype), "'");
  kernel_dtype(dtype, kernel);
  const auto shape = at::infer_size(grad.sizes(), x.sizes());
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const at::Tensor g = to_dtype(grad, dtype, device, kernel), v = to_dtype(x, dtype, device, kernel);
  const refkTensor o = describe(out, kernel), dg = describe_as(g, shape, kernel), dv = describe_as(v, shape, kernel);
  const refkContext ctx = context();
  check(refkBinary(&ctx, op, &o, &dg, &dv, kernel_scalar(alpha)), kernel);
  return out;
}

const char* reduction_name(int64_t reduction) {
  switch (reduction) {
    case at::Reduction::None: return "none";
    case at::Reduction::Mean: return "mean";
    case at::Reduction::Sum: return "sum";
  }
  TORCH_CHECK(false, reduction, " is not a valid value for reduction");
}

// Note [Index errors]: eager raises IndexError for a target out of range.
void check_loss(refkStatus s, const char* op) {
  if (s == refkErrorIndexOutOfBounds) TORCH_CHECK_INDEX(false, refkLastError());
  check(s, op);
}

// self as (batch, classes) and target as (batch): 1-d inputs are one row.
refkTensor rows(const at::Tensor& t, const char* op) {
  refkTensor d = describe(t, op);
  if (t.dim() == 1) {
    d.ndim = 2;
    d.sizes[1] = d.sizes[0];
    d.strides[1] = d.strides[0];
    d.sizes[0] = 1;
    d.strides[0] = 0;
  }
  return d;
}

void check_nll_args(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch_dim || (self.size(0) == target.size(0)), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
  (void)weight;
}

// The dtypes eager's nll_loss frames accept: floating self, int64 or uint8
// targets (read through an int64 accessor otherwise), a weight of self's dtype.
void check_nll_dtypes(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight, const char* frame) {
  const auto st = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(st) && has_kernel_dtype(st), "\"", frame,
                              "\" not implemented for '", c10::toString(st), "'");
  if (weight != nullptr) {
    TORCH_CHECK(weight->scalar_type() == st, "expected scalar type ", c10::toString(st), " but found ",
                c10::toString(weight->scalar_type()));
  }
  TORCH_CHECK(target.scalar_type() == c10::kLong || target.scalar_type() == c10::kByte,
              "expected scalar type Long but found ", c10::toString(target.scalar_type()));
}

}  // namespace

at::Tensor threshold_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& threshold) {
  return backward_binary(grad_output, self, refkThresholdBackward, Types::All, "threshold_cpu", threshold);
}

at::Tensor gelu_backward(const at::Tensor& grad_output, const at::Tensor& self, c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return backward_binary(grad_output, self, approximate == "tanh" ? refkGeluBackwardTanh : refkGeluBackwardNone,
                         Types::Floating, "GeluBackwardKernelImpl");
}

at::Tensor sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  return backward_binary(grad_output, output, refkSigmoidBackward, Types::Floating, "sigmoid_backward_cpu");
}

at::Tensor tanh_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  return backward_binary(grad_output, output, refkTanhBackward, Types::Floating, "tanh_backward_cpu");
}

// Eager's CPU grad_output * mask * scale, in that order (the scale as a
// Python number: Note [Reduced-precision scalars]); any mask dtype promotes.
at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  return opgen_ref::mul(opgen_ref::mul(grad_output, mask), at::Scalar(scale));
}

// (input - target)^2, then the mean or sum over everything, as eager's
// mse_loss.out: the difference is rounded to the dtype before it is squared.
at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  reduction_name(reduction);
  const c10::ScalarType dtype = result_dtype(self, target);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(dtype), "\"mse_cpu\" not implemented for '", c10::toString(dtype),
                              "'");
  const at::Tensor diff = opgen_ref::sub(self, target, 1);
  const at::Tensor loss = opgen_ref::mul(diff, diff);
  if (reduction == at::Reduction::Mean) return opgen_ref::mean(loss, std::nullopt);
  if (reduction == at::Reduction::Sum) return opgen_ref::sum(loss, std::nullopt, false, std::nullopt);
  return loss;
}

// norm * (input - target) * grad_output with norm = 2 / numel (mean) or 2,
// each product rounded to the dtype, norm converted to it first, as eager's
// mse_backward_cpu_kernel.
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  const c10::Device device = common_device({&grad_output, &self, &target}, "mse_loss_backward");
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = self.scalar_type();
  for (const at::Tensor* t : {&target, &grad_output}) {
    TORCH_CHECK(t->scalar_type() == dtype, "Found dtype ", c10::toString(t->scalar_type()), " but expected ",
                c10::toString(dtype));
  }
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"mse_backward_cpu_out\" not implemented for 'Bool'");
  const double norm = reduction == at::Reduction::Mean ? 2. / static_cast<double>(self.numel()) : 2.;
  fill_value(norm, dtype, "mse_loss_backward");  // eager's Scalar::to<T>: an integral dtype refuses inf
  // eager's zeros_like(input) output is resized to the broadcast shape of
  // the three operands, which sub and mul below produce.
  const at::Tensor diff = opgen_ref::sub(self, target, 1);
  const at::Tensor scaled = opgen_ref::mul(scalar_tensor_on(norm, dtype, device), diff);
  return opgen_ref::mul(scaled, grad_output);
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  const at::Tensor* w = weight.has_value() && weight->defined() ? &*weight : nullptr;
  const c10::Device device = common_device({&self, &target, w}, "nll_loss_forward");
  const c10::DeviceGuard guard(device);
  check_nll_args(self, target, w);
  TORCH_CHECK(!(self.dim() == 1 && target.dim() == 1),
              "Expected target to be 0D when input is 1D, but got target.dim =", target.dim());
  const int64_t n_classes = self.size(-1);
  TORCH_CHECK(w == nullptr || (w->dim() == 1 && w->numel() == n_classes), "weight tensor should be defined either for all ",
              n_classes, " classes or no classes but got weight tensor of shape: ", w ? w->sizes() : at::IntArrayRef{});
  check_nll_dtypes(self, target, w, "nll_loss_out_frame");
  const bool per_element = reduction == at::Reduction::None && self.dim() == 2;
  at::Tensor out = per_element ? empty({self.size(0)}, self.scalar_type(), device) : empty({}, self.scalar_type(), device);
  at::Tensor total_weight = empty({}, self.scalar_type(), device);
  const refkTensor o = describe(out, "nll_loss_forward"), tw = describe(total_weight, "nll_loss_forward"),
                   x = rows(self, "nll_loss_forward"), t = describe_nonempty(target, "nll_loss_forward");
  refkTensor dw{};
  if (w != nullptr) dw = describe(*w, "nll_loss_forward");
  const refkContext ctx = context();
  check_loss(refkNllLoss(&ctx, &o, &tw, &x, &t, w ? &dw : nullptr, static_cast<int32_t>(reduction), ignore_index),
             "nll_loss_forward");
  return {out, total_weight};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  const at::Tensor* w = weight.has_value() && weight->defined() ? &*weight : nullptr;
  const c10::Device device = common_device({&grad_output, &self, &target, w, &total_weight}, "nll_loss_backward");
  const c10::DeviceGuard guard(device);
  check_nll_args(self, target, w);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a  single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  TORCH_CHECK(w == nullptr || w->numel() == self.size(-1), "weight tensor should be defined either for all or no classes");
  const bool per_element = reduction == at::Reduction::None && self.dim() == 2;
  if (per_element) {
    TORCH_CHECK(grad_output.dim() == 1 && grad_output.size(0) == self.size(0), "Expected grad_output to have ",
                "size ", self.size(0), " at dimension 0 but got ", grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  check_nll_dtypes(self, target, w, "nll_loss_backward_out_frame");
  for (const at::Tensor* t : {&grad_output, &total_weight}) {
    TORCH_CHECK(t->scalar_type() == self.scalar_type(), "expected scalar type ", c10::toString(self.scalar_type()),
                " but found ", c10::toString(t->scalar_type()));
  }
  at::Tensor grad_input = empty(self.sizes(), self.scalar_type(), device);
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor tw_dev = to_dtype(total_weight, self.scalar_type(), device, "nll_loss_backward");
  const refkTensor gi = rows(grad_input, "nll_loss_backward"), go = describe_nonempty(grad_output, "nll_loss_backward"),
                   t = describe_nonempty(target, "nll_loss_backward"), tw = describe(tw_dev, "nll_loss_backward");
  refkTensor dw{};
  if (w != nullptr) dw = describe(*w, "nll_loss_backward");
  const refkContext ctx = context();
  check_loss(refkNllLossBackward(&ctx, &gi, &go, &t, w ? &dw : nullptr, &tw, static_cast<int32_t>(reduction),
                                 ignore_index),
             "nll_loss_backward");
  return grad_input;
}

// log_sigmoid as eager CPU: the result and the buffer the backward reads
// (exp(-|x|)), both contiguous; the backward is TensorIterator's, all of
// self's dtype, broadcasting self, buffer and grad together.
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  const c10::Device device = common_device({&self}, "log_sigmoid_forward");
  const c10::DeviceGuard guard(device);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"log_sigmoid_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  kernel_dtype(self.scalar_type(), "log_sigmoid_cpu");
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  at::Tensor buffer = empty(self.sizes(), self.scalar_type(), device);
  if (out.numel() == 0) return {out, buffer};
  const refkTensor o = describe(out, "log_sigmoid"), b = describe(buffer, "log_sigmoid"),
                   i = describe(self, "log_sigmoid");
  const refkContext ctx = context();
  check(refkLogSigmoid(&ctx, &o, &b, &i), "log_sigmoid");
  return {out, buffer};
}

at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& buffer) {
  const c10::Device device = common_device({&grad_output, &self, &buffer}, "log_sigmoid_backward");
  const c10::DeviceGuard guard(device);
  const auto dtype = self.scalar_type();
  for (const at::Tensor* t : {&grad_output, &buffer}) {
    TORCH_CHECK(t->scalar_type() == dtype, "Found dtype ", t->scalar_type(), " but expected ", dtype);
  }
  const auto shape = at::infer_size(at::infer_size(grad_output.sizes(), self.sizes()), buffer.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(dtype), "\"log_sigmoid_backward_cpu\" not implemented for '",
                              c10::toString(dtype), "'");
  kernel_dtype(dtype, "log_sigmoid_backward_cpu");
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, "log_sigmoid_backward"), g = describe_as(grad_output, shape, "log_sigmoid_backward"),
                   x = describe_as(self, shape, "log_sigmoid_backward"),
                   b = describe_as(buffer, shape, "log_sigmoid_backward");
  const refkContext ctx = context();
  check(refkLogSigmoidBackward(&ctx, &o, &g, &x, &b), "log_sigmoid_backward");
  return out;
}

}  // namespace opgen_ref
