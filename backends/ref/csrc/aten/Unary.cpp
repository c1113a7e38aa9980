// Unary pointwise operators: math, rounding, predicates and activations,
// and the activations' gradients (refkUnaryBackward).
// Each is one line over `unary`, which applies the operator's dtype rule
// (Note [What the glue decides]) and calls refkUnary.
#include "aten/Glue.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

namespace opgen_ref {
namespace {

enum class Rule {
  Same,          // result dtype = input dtype, any dtype
  NoBool,        // same, but bool inputs are refused as eager does
  ToFloat,       // integral/bool inputs compute in the default float dtype (sin of an int)
  FloatOnly,     // floating inputs only (gelu, elu)
  IntegralOnly,  // integral and bool inputs only (bitwise_not)
  Predicate,     // bool result (isnan)
};

at::Tensor unary(const at::Tensor& self, refkUnaryOp op, Rule rule, const char* name, refkUnaryParams p = {}) {
  const c10::Device device = common_device({&self}, name);
  const c10::DeviceGuard guard(device);
  const auto in_type = self.scalar_type();
  const bool integral = c10::isIntegralType(in_type, /*includeBool=*/true);
  c10::ScalarType compute = in_type;
  c10::ScalarType result = in_type;
  switch (rule) {
    case Rule::Same: break;
    case Rule::NoBool:
      TORCH_CHECK_NOT_IMPLEMENTED(in_type != c10::kBool, "\"", name, "\" not implemented for 'Bool'");
      break;
    case Rule::ToFloat:
      if (integral) compute = result = c10::typeMetaToScalarType(c10::get_default_dtype());
      break;
    case Rule::FloatOnly:
      TORCH_CHECK_NOT_IMPLEMENTED(!integral, "\"", name, "\" not implemented for '", c10::toString(in_type), "'");
      break;
    case Rule::IntegralOnly:
      TORCH_CHECK_NOT_IMPLEMENTED(integral, "\"", name, "\" not implemented for '", c10::toString(in_type), "'");
      break;
    case Rule::Predicate: result = c10::kBool; break;
  }
  kernel_dtype(compute, name);
  const at::Tensor in = to_dtype(self, compute, device, name);
  at::Tensor out = empty(self.sizes(), result, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, name);
  const refkTensor i = describe(in, name);
  const refkContext ctx = context();
  check(refkUnary(&ctx, op, &o, &i, &p), name);
  return out;
}

// The gradient of an activation (refkUnaryBackward): eager's binary-op
// rules over grad and self (promotion, broadcasting), floating dtypes only.
at::Tensor unary_backward(const at::Tensor& grad, const at::Tensor& self, refkUnaryOp op, const char* name,
                          refkUnaryParams p = {}) {
  const c10::Device device = common_device({&grad, &self}, name);
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = result_dtype(grad, self);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(dtype), "\"", name, "\" not implemented for '",
                              c10::toString(dtype), "'");
  kernel_dtype(dtype, name);
  const auto shape = at::infer_size(grad.sizes(), self.sizes());
  const at::Tensor g = to_dtype(grad, dtype, device, name), x = to_dtype(self, dtype, device, name);
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, name), dg = describe_as(g, shape, name), dx = describe_as(x, shape, name);
  const refkContext ctx = context();
  check(refkUnaryBackward(&ctx, op, &o, &dg, &dx, &p), name);
  return out;
}

refkUnaryParams softplus_params(const at::Scalar& beta, const at::Scalar& threshold) {
  return {beta.toDouble(), threshold.toDouble(), 0, 0};
}

}  // namespace

at::Tensor abs(const at::Tensor& self) { return unary(self, refkAbs, Rule::NoBool, "abs_cpu"); }
at::Tensor neg(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != c10::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
              "use the `~` or `logical_not()` operator instead.");
  return unary(self, refkNeg, Rule::Same, "neg");
}
at::Tensor sign(const at::Tensor& self) {
  if (self.scalar_type() == c10::kBool) return to_dtype(self, c10::kBool, self.device(), "sign").clone();
  return unary(self, refkSign, Rule::Same, "sign");
}
at::Tensor ceil(const at::Tensor& self) { return unary(self, refkCeil, Rule::NoBool, "ceil_vml_cpu"); }
at::Tensor floor(const at::Tensor& self) { return unary(self, refkFloor, Rule::NoBool, "floor_vml_cpu"); }
at::Tensor round(const at::Tensor& self) { return unary(self, refkRound, Rule::NoBool, "round_vml_cpu"); }
at::Tensor trunc(const at::Tensor& self) { return unary(self, refkTrunc, Rule::NoBool, "trunc_vml_cpu"); }

at::Tensor exp(const at::Tensor& self) { return unary(self, refkExp, Rule::ToFloat, "exp"); }
at::Tensor expm1(const at::Tensor& self) { return unary(self, refkExpm1, Rule::ToFloat, "expm1"); }
at::Tensor log(const at::Tensor& self) { return unary(self, refkLog, Rule::ToFloat, "log"); }
at::Tensor log2(const at::Tensor& self) { return unary(self, refkLog2, Rule::ToFloat, "log2"); }
at::Tensor log10(const at::Tensor& self) { return unary(self, refkLog10, Rule::ToFloat, "log10"); }
at::Tensor log1p(const at::Tensor& self) { return unary(self, refkLog1p, Rule::ToFloat, "log1p"); }
at::Tensor sin(const at::Tensor& self) { return unary(self, refkSin, Rule::ToFloat, "sin"); }
at::Tensor cos(const at::Tensor& self) { return unary(self, refkCos, Rule::ToFloat, "cos"); }
at::Tensor tan(const at::Tensor& self) { return unary(self, refkTan, Rule::ToFloat, "tan"); }
at::Tensor asin(const at::Tensor& self) { return unary(self, refkAsin, Rule::ToFloat, "asin"); }
at::Tensor acos(const at::Tensor& self) { return unary(self, refkAcos, Rule::ToFloat, "acos"); }
at::Tensor atan(const at::Tensor& self) { return unary(self, refkAtan, Rule::ToFloat, "atan"); }
at::Tensor sinh(const at::Tensor& self) { return unary(self, refkSinh, Rule::ToFloat, "sinh"); }
at::Tensor cosh(const at::Tensor& self) { return unary(self, refkCosh, Rule::ToFloat, "cosh"); }
at::Tensor tanh(const at::Tensor& self) { return unary(self, refkTanh, Rule::ToFloat, "tanh"); }
at::Tensor asinh(const at::Tensor& self) { return unary(self, refkAsinh, Rule::ToFloat, "asinh"); }
at::Tensor acosh(const at::Tensor& self) { return unary(self, refkAcosh, Rule::ToFloat, "acosh"); }
at::Tensor atanh(const at::Tensor& self) { return unary(self, refkAtanh, Rule::ToFloat, "atanh"); }
at::Tensor erf(const at::Tensor& self) { return unary(self, refkErf, Rule::ToFloat, "erf"); }
at::Tensor sqrt(const at::Tensor& self) { return unary(self, refkSqrt, Rule::ToFloat, "sqrt"); }
at::Tensor rsqrt(const at::Tensor& self) { return unary(self, refkRsqrt, Rule::ToFloat, "rsqrt"); }
at::Tensor reciprocal(const at::Tensor& self) { return unary(self, refkReciprocal, Rule::ToFloat, "reciprocal"); }
at::Tensor sigmoid(const at::Tensor& self) { return unary(self, refkSigmoid, Rule::ToFloat, "sigmoid"); }

at::Tensor bitwise_not(const at::Tensor& self) {
  return unary(self, refkBitwiseNot, Rule::IntegralOnly, "bitwise_not_cpu");
}
at::Tensor logical_not(const at::Tensor& self) { return unary(self, refkLogicalNot, Rule::Predicate, "logical_not"); }
at::Tensor isnan(const at::Tensor& self) { return unary(self, refkIsNan, Rule::Predicate, "isnan"); }
at::Tensor isinf(const at::Tensor& self) { return unary(self, refkIsInf, Rule::Predicate, "isinf"); }

at::Tensor relu(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, "Boolean inputs not supported for relu");
  return unary(self, refkRelu, Rule::Same, "relu");
}
at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return unary(self, approximate == "tanh" ? refkGeluTanh : refkGeluNone, Rule::FloatOnly, "GeluKernelImpl");
}
at::Tensor elu(const at::Tensor& self, const at::Scalar& alpha, const at::Scalar& scale,
               const at::Scalar& input_scale) {
  return unary(self, refkElu, Rule::FloatOnly, "elu_cpu",
               {alpha.toDouble(), scale.toDouble(), input_scale.toDouble(), 0});
}
at::Tensor hardtanh(const at::Tensor& self, const at::Scalar& min_val, const at::Scalar& max_val) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, "Bool inputs not supported for hardtanh");
  TORCH_CHECK(self.scalar_type() != c10::kByte || (min_val.toDouble() >= 0 && max_val.toDouble() >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return unary(self, refkHardtanh, Rule::Same, "hardtanh", {min_val.toDouble(), max_val.toDouble(), 0, 0});
}
at::Tensor leaky_relu(const at::Tensor& self, const at::Scalar& negative_slope) {
  return unary(self, refkLeakyRelu, Rule::FloatOnly, "leaky_relu_cpu", {negative_slope.toDouble(), 0, 0, 0});
}


// The activations eager models call directly (silu in LLaMA-style MLPs,
// softplus and mish in state-space and conv models) and their gradients.
at::Tensor silu(const at::Tensor& self) { return unary(self, refkSilu, Rule::FloatOnly, "silu_cpu"); }
at::Tensor mish(const at::Tensor& self) { return unary(self, refkMish, Rule::FloatOnly, "mish_cpu"); }
at::Tensor softplus(const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold) {
  return unary(self, refkSoftplus, Rule::FloatOnly, "softplus_cpu", softplus_params(beta, threshold));
}
at::Tensor hardsigmoid(const at::Tensor& self) {
  return unary(self, refkHardsigmoid, Rule::FloatOnly, "hardsigmoid_cpu");
}
at::Tensor hardswish(const at::Tensor& self) { return unary(self, refkHardswish, Rule::FloatOnly, "hardswish_cpu"); }

at::Tensor& silu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::Tensor& grad_input) {
  const at::Tensor r = unary_backward(grad_output, self, refkSilu, "silu_backward_cpu");
  TORCH_CHECK(c10::canCast(r.scalar_type(), grad_input.scalar_type()), "result type ", r.scalar_type(),
              " can't be cast to the desired output type ", grad_input.scalar_type());
  resize_out(grad_input, r.sizes());
  copy_into(grad_input, r, "silu_backward.grad_input");
  return grad_input;
}
at::Tensor softplus_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& beta,
                             const at::Scalar& threshold) {
  return unary_backward(grad_output, self, refkSoftplus, "softplus_backward_cpu", softplus_params(beta, threshold));
}
at::Tensor hardsigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  return unary_backward(grad_output, self, refkHardsigmoid, "hardsigmoid_backward");
}
// hardtanh's gradient (ReLU6 in MobileNet): eager's kernel, named as eager names it.
at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Scalar& min_val,
                             const at::Scalar& max_val) {
  return unary_backward(grad_output, self, refkHardtanh, "hardshrink_backward_cpu",
                        {min_val.toDouble(), max_val.toDouble(), 0, 0});
}
at::Tensor hardswish_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  return unary_backward(grad_output, self, refkHardswish, "hardswish_backward_cpu");
}

// Integers and bool are never infinite (the library answers false for them).
at::Tensor isposinf(const at::Tensor& self) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), "isposinf does not support complex inputs.");
  return unary(self, refkIsPosInf, Rule::Predicate, "isposinf");
}
at::Tensor isneginf(const at::Tensor& self) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), "isneginf does not support complex inputs.");
  return unary(self, refkIsNegInf, Rule::Predicate, "isneginf");
}

}  // namespace opgen_ref
