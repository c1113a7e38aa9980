// Fused glue: the kernels behind backend.yaml's `autograd:` gelu entry (its
// backward, gelu_grad_fused) and the custom operators fused_bias_gelu and
// fused_bias_gelu_backward, over the kernel library's refkBiasGelu and
// refkBiasGeluBackward; and the custom operator fused_rms_norm over
// refkRmsNorm (its backward is a formula in backend.yaml). Each checks what
// eager would (floating dtypes, the approximate string) and that bias or
// weight is one vector over self's last dimension.
#include "aten/Glue.h"

#include <ATen/DeviceGuard.h>

#include <tuple>
#include <vector>

namespace opgen_ref {

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<c10::ScalarType> dtype);

namespace {

bool tanh_flag(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

void check_operands(const at::Tensor& self, const at::Tensor* bias, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()) && has_kernel_dtype(self.scalar_type()), "\"",
                              op, "\" not implemented for '", c10::toString(self.scalar_type()), "'");
  if (bias != nullptr) {
    TORCH_CHECK(self.dim() >= 1, op, ": self must have at least one dimension");
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == self.size(-1), op,
                ": bias must be a vector of self's last dimension (", self.size(-1), "), got shape ", bias->sizes());
    TORCH_CHECK(bias->scalar_type() == self.scalar_type(), op, ": bias has dtype ",
                c10::toString(bias->scalar_type()), " but self has ", c10::toString(self.scalar_type()));
  }
}

at::Tensor bias_gelu_forward(const at::Tensor& self, const at::Tensor* bias, c10::string_view approximate,
                             const char* op) {
  const bool tanh = tanh_flag(approximate);
  check_operands(self, bias, op);
  const c10::Device device = bias ? common_device({&self, bias}, op) : common_device({&self}, op);
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, op), x = describe(self, op);
  const refkTensor b = bias ? describe_as(*bias, self.sizes(), op) : refkTensor{};
  const refkContext ctx = context();
  check(refkBiasGelu(&ctx, &o, &x, bias ? &b : nullptr, tanh ? 1 : 0), op);
  return out;
}

at::Tensor bias_gelu_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor* bias,
                              c10::string_view approximate, const char* op) {
  const bool tanh = tanh_flag(approximate);
  check_operands(self, bias, op);
  TORCH_CHECK(grad.sizes() == self.sizes(), op, ": grad has shape ", grad.sizes(), " but self has ", self.sizes());
  const c10::Device device = bias ? common_device({&grad, &self, bias}, op) : common_device({&grad, &self}, op);
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  if (out.numel() == 0) return out;
  const at::Tensor g = to_dtype(grad, self.scalar_type(), device, op);
  const refkTensor o = describe(out, op), dg = describe(g, op), x = describe(self, op);
  const refkTensor b = bias ? describe_as(*bias, self.sizes(), op) : refkTensor{};
  const refkContext ctx = context();
  check(refkBiasGeluBackward(&ctx, &o, &dg, &x, bias ? &b : nullptr, tanh ? 1 : 0), op);
  return out;
}

// self as its rows: M x N over the last dimension, N = self.size(-1), for
// self contiguous (the caller made sure).
refkTensor rows_of(const at::Tensor& self, const char* op) {
  refkTensor d = describe(self, op);
  const int64_t n = self.size(-1);
  d.ndim = 2;
  d.sizes[0] = self.numel() / n;
  d.sizes[1] = n;
  d.strides[0] = n;
  d.strides[1] = 1;
  return d;
}

}  // namespace

at::Tensor fused_rms_norm(const at::Tensor& self, const at::Tensor& weight, double eps) {
  const char* op = "fused_rms_norm";
  check_operands(self, nullptr, op);
  TORCH_CHECK(self.dim() >= 1, op, ": self must have at least one dimension");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == self.size(-1), op,
              ": weight must be a vector of self's last dimension (", self.size(-1), "), got shape ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == self.scalar_type(), op, ": weight has dtype ",
              c10::toString(weight.scalar_type()), " but self has ", c10::toString(self.scalar_type()));
  const c10::Device device = common_device({&self, &weight}, op);
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  if (out.numel() == 0) return out;
  at::Tensor x = self;
  if (!self.is_contiguous()) {
    x = empty(self.sizes(), self.scalar_type(), device);
    copy_into(x, self, op);
  }
  const refkTensor o = rows_of(out, op), i = rows_of(x, op), w = describe(weight, op);
  const refkContext ctx = context();
  check(refkRmsNorm(&ctx, &o, &i, &w, eps), op);
  return out;
}

at::Tensor fused_bias_gelu(const at::Tensor& self, const at::Tensor& bias, c10::string_view approximate) {
  return bias_gelu_forward(self, &bias, approximate, "fused_bias_gelu");
}

::std::tuple<at::Tensor, at::Tensor> fused_bias_gelu_backward(const at::Tensor& grad, const at::Tensor& self,
                                                              const at::Tensor& bias, c10::string_view approximate) {
  at::Tensor grad_self = bias_gelu_backward(grad, self, &bias, approximate, "fused_bias_gelu_backward");
  // The bias gradient sums grad_self over every dimension but the last.
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < grad_self.dim(); ++d) dims.push_back(d);
  at::Tensor grad_bias = dims.empty() ? grad_self.clone() : sum(grad_self, dims, false, std::nullopt);
  return {grad_self, grad_bias};
}

at::Tensor gelu_grad_fused(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  return bias_gelu_backward(grad, self, nullptr, approximate, "gelu_grad_fused");
}

}  // namespace opgen_ref
