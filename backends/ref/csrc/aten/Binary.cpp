// Binary pointwise operators (arithmetic, division with rounding modes,
// powers, comparisons, logical and bitwise ops) plus where, clamp and the
// ternary addcmul, addcdiv and lerp (refkTernary). Each is
// a line over `binary`: promote with result_dtype (Tensor or Scalar
// operands, wrapped numbers as eager treats them), broadcast with
// at::infer_size, cast the inputs to the compute dtype, call refkBinary.
#include "aten/Glue.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/result_type.h>
#include <ATen/ScalarOps.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

namespace opgen_ref {
namespace {

enum class Rule {
  Arith,     // result = promoted dtype
  ToFloat,   // integral results become the default float dtype (true division, atan2)
  Compare,   // compute in the promoted dtype, bool result
  Bitwise,   // integral or bool only
  NoBool,    // arithmetic that eager refuses for bool (fmod, remainder)
};

// A Python number as eager sees it in promotion: a 0-dim CPU tensor marked as
// a wrapped number (to_dtype turns it into a device scalar).
at::Tensor wrap(const at::Scalar& s) {
  at::Tensor t = at::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

void alpha_check(c10::ScalarType dtype, const at::Scalar& alpha) {
  TORCH_CHECK(!alpha.isBoolean() || dtype == c10::kBool, "Boolean alpha only supported for Boolean results.");
  TORCH_CHECK(c10::isFloatingType(dtype) || c10::isComplexType(dtype) || alpha.isIntegral(true),
              "For integral input tensors, argument alpha must not be a floating point number.");
}

// Note [In-place binary ops]: add_, sub_, mul_ and div_ are the glue's own,
// not derived (a meta check, the out-of-place kernel, then a copy into self:
// twice a small op's cost). They check what eager's TensorIterator checks of
// an in-place op, in its order: self has no internal overlap and does not
// partly overlap `other`, the broadcast shape is self's, and the result dtype
// can be cast to self's. The kernel then writes into self directly when self
// already has the compute dtype and every input is self itself, a fresh cast,
// or disjoint from self (a kernel reads each element before it writes it, so
// exact aliasing is safe); otherwise the result is computed out of place and
// copied in, which is what eager's store computes too.
void check_into(const at::Tensor& self, const at::Tensor& other, at::IntArrayRef shape, c10::ScalarType result) {
  at::assert_no_internal_overlap(self);
  at::assert_no_partial_overlap(self, other);
  TORCH_CHECK(self.sizes().equals(shape), "output with shape ", self.sizes(), " doesn't match the broadcast shape ",
              shape);
  TORCH_CHECK(c10::canCast(result, self.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", self.scalar_type());
}

bool writes_safely(const at::Tensor& self, const at::Tensor& input) {
  if (input.is_same(self) || !input.device().is_privateuseone()) return true;
  const at::MemOverlapStatus s = at::get_overlap_status(self, input);
  return s == at::MemOverlapStatus::No || s == at::MemOverlapStatus::Full;
}

// `into`: the in-place op's self (Note [In-place binary ops]); the result is
// then self.
at::Tensor binary(const at::Tensor& a, const at::Tensor& b, refkBinaryOp op, Rule rule, const char* name,
                  const at::Scalar& alpha = 1, const at::Tensor* into = nullptr) {
  const c10::Device device = common_device({&a, &b}, name);
  const c10::DeviceGuard guard(device);
  c10::ScalarType compute = result_dtype(a, b);
  c10::ScalarType result = compute;
  const bool integral = c10::isIntegralType(compute, /*includeBool=*/true);
  switch (rule) {
    case Rule::Arith: break;
    case Rule::ToFloat:
      if (integral) compute = result = c10::typeMetaToScalarType(c10::get_default_dtype());
      break;
    case Rule::Compare: result = c10::kBool; break;
    case Rule::Bitwise:
      TORCH_CHECK_NOT_IMPLEMENTED(integral, "\"", name, "\" not implemented for '", c10::toString(compute), "'");
      break;
    case Rule::NoBool:
      TORCH_CHECK_NOT_IMPLEMENTED(compute != c10::kBool, "\"", name, "\" not implemented for 'Bool'");
      break;
  }
  // Note [Complex dtypes] (RefKernels.h): the library adds, subtracts,
  // multiplies, divides and compares (eq, ne) complex tensors; any other op
  // refuses them.
  const bool complex_arith = c10::isComplexType(compute) && (op == refkAdd || op == refkSub || op == refkMul ||
                                                             op == refkDiv || op == refkEq || op == refkNe);
  // Note [Storage dtypes] (RefKernels.h): eq and ne are eager CPU's only
  // comparisons of uint16/32/64 and float8 (lt, le, gt, ge refuse them, as
  // kernel_dtype below does). They compare in a dtype the library computes
  // in that keeps every value apart: both operands rounded to the storage
  // dtype first (a Python number as eager rounds it), then widened exactly
  // (uint16 -> int32, uint32 -> int64, float8 -> float32, as c10 compares
  // float8 values) or, for uint64, as the same bits in int64.
  if (rule == Rule::Compare && (op == refkEq || op == refkNe) && is_storage_only(compute)) {
    const c10::ScalarType wide = c10::isFloat8Type(compute) ? c10::kFloat
                                 : compute == c10::kUInt16  ? c10::kInt
                                                            : c10::kLong;
    const at::Tensor x = to_dtype(to_dtype(a, compute, device, name), wide, device, name);
    const at::Tensor y = to_dtype(to_dtype(b, compute, device, name), wide, device, name);
    return binary(x, y, op, rule, name);
  }
  if (!complex_arith) kernel_dtype(compute, name);
  const auto shape = at::infer_size(a.sizes(), b.sizes());
  if (into != nullptr) check_into(*into, b, shape, result);
  // Note [Reduced-precision scalars]: ATen's CPU mul and true division keep a
  // scalar operand of a float16/bfloat16 op in float (its opmath) instead of
  // rounding it to the tensor's dtype (add and sub round it); computing in
  // float32 and rounding the result once gives the same numbers.
  const bool scalar_operand = (a.device().is_cpu() && a.dim() == 0) || (b.device().is_cpu() && b.dim() == 0);
  const bool opmath_scalar = scalar_operand && (compute == c10::kHalf || compute == c10::kBFloat16) &&
                             (op == refkMul || op == refkDiv);
  const c10::ScalarType kernel_compute = opmath_scalar ? c10::kFloat : compute;
  const at::Tensor x = to_dtype(a, kernel_compute, device, name);
  const at::Tensor y = to_dtype(b, kernel_compute, device, name);
  const bool direct = into != nullptr && !opmath_scalar && !complex_arith && into->scalar_type() == result &&
                      writes_safely(*into, x) && writes_safely(*into, y);
  at::Tensor out = direct ? *into : empty(shape, opmath_scalar ? kernel_compute : result, device);
  if (out.numel() == 0) return into != nullptr ? *into : opmath_scalar ? empty(shape, result, device) : out;
  const refkTensor o = complex_arith ? describe_storage(out, name) : describe(out, name);
  const refkTensor dx = complex_arith ? describe_storage_as(x, shape, name) : describe_as(x, shape, name);
  const refkTensor dy = complex_arith ? describe_storage_as(y, shape, name) : describe_as(y, shape, name);
  const refkContext ctx = context();
  check(refkBinary(&ctx, op, &o, &dx, &dy, kernel_scalar(alpha)), name);
  if (direct) return out;
  at::Tensor r = opmath_scalar ? to_dtype(out, result, device, name) : out;
  if (into == nullptr) return r;
  copy_into(*into, r, name);
  return *into;
}

at::Tensor add_sub(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha, refkBinaryOp op,
                   const char* name, const at::Tensor* into = nullptr) {
  const auto dtype = result_dtype(a, b);
  if (op == refkSub) {
    TORCH_CHECK(dtype != c10::kBool || (a.scalar_type() != c10::kBool && b.scalar_type() != c10::kBool),
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.");
    TORCH_CHECK(a.scalar_type() != c10::kBool && b.scalar_type() != c10::kBool,
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead.");
  }
  alpha_check(dtype, alpha);
  return binary(a, b, op, Rule::Arith, name, alpha, into);
}

refkBinaryOp division(std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return refkDiv;
  if (*mode == "trunc") return refkDivTrunc;
  if (*mode == "floor") return refkDivFloor;
  TORCH_CHECK(false, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
}

at::Tensor div_mode(const at::Tensor& a, const at::Tensor& b, std::optional<c10::string_view> mode,
                    const at::Tensor* into = nullptr) {
  const refkBinaryOp op = division(mode);
  return binary(a, b, op, op == refkDiv ? Rule::ToFloat : Rule::Arith, into != nullptr ? "div_" : "div", 1, into);
}

at::Tensor pow_impl(const at::Tensor& base, const at::Tensor& exponent) {
  TORCH_CHECK_NOT_IMPLEMENTED(result_dtype(base, exponent) != c10::kBool, "\"pow\" not implemented for 'Bool'");
  return binary(base, exponent, refkPow, Rule::Arith, "pow");
}

}  // namespace

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_sub(self, other, alpha, refkAdd, "add");
}
at::Tensor add(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return add_sub(self, wrap(other), alpha, refkAdd, "add");
}
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_sub(self, other, alpha, refkSub, "sub");
}
at::Tensor sub(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  return add_sub(self, wrap(other), alpha, refkSub, "sub");
}
at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkMul, Rule::Arith, "mul");
}
at::Tensor mul(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkMul, Rule::Arith, "mul");
}
at::Tensor div(const at::Tensor& self, const at::Tensor& other) { return div_mode(self, other, std::nullopt); }
at::Tensor div(const at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> rounding_mode) {
  return div_mode(self, other, rounding_mode);
}
at::Tensor div(const at::Tensor& self, const at::Scalar& other) { return div_mode(self, wrap(other), std::nullopt); }
at::Tensor div(const at::Tensor& self, const at::Scalar& other, std::optional<c10::string_view> rounding_mode) {
  return div_mode(self, wrap(other), rounding_mode);
}
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  add_sub(self, other, alpha, refkAdd, "add_", &self);
  return self;
}
at::Tensor& add_(at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  add_sub(self, wrap(other), alpha, refkAdd, "add_", &self);
  return self;
}
at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  add_sub(self, other, alpha, refkSub, "sub_", &self);
  return self;
}
at::Tensor& sub_(at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha) {
  add_sub(self, wrap(other), alpha, refkSub, "sub_", &self);
  return self;
}
at::Tensor& mul_(at::Tensor& self, const at::Tensor& other) {
  binary(self, other, refkMul, Rule::Arith, "mul_", 1, &self);
  return self;
}
at::Tensor& mul_(at::Tensor& self, const at::Scalar& other) {
  binary(self, wrap(other), refkMul, Rule::Arith, "mul_", 1, &self);
  return self;
}
at::Tensor& div_(at::Tensor& self, const at::Tensor& other) {
  div_mode(self, other, std::nullopt, &self);
  return self;
}
at::Tensor& div_(at::Tensor& self, const at::Scalar& other) {
  div_mode(self, wrap(other), std::nullopt, &self);
  return self;
}
at::Tensor fmod(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkFmod, Rule::NoBool, "fmod_cpu");
}
at::Tensor fmod(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkFmod, Rule::NoBool, "fmod_cpu");
}
at::Tensor remainder(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkRemainder, Rule::NoBool, "remainder_cpu");
}
at::Tensor remainder(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkRemainder, Rule::NoBool, "remainder_cpu");
}
at::Tensor pow(const at::Tensor& self, const at::Tensor& exponent) { return pow_impl(self, exponent); }
at::Tensor pow(const at::Scalar& self, const at::Tensor& exponent) { return pow_impl(wrap(self), exponent); }
at::Tensor pow(const at::Tensor& self, const at::Scalar& exponent) {
  TORCH_CHECK(!(c10::isIntegralType(self.scalar_type(), true) && exponent.isIntegral(true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // As ATen: x ** 0 is ones and x ** 1 a copy, for every dtype (bool too).
  if (exponent.equal(0.0) || exponent.equal(false) || exponent.equal(1.0) || exponent.equal(true)) {
    const c10::Device device = common_device({&self}, "pow");
    const c10::DeviceGuard guard(device);
    at::Tensor out = empty(self.sizes(), at::result_type(self, exponent), device);
    if (exponent.equal(0.0) || exponent.equal(false)) {
      const refkTensor d = describe(out, "pow");
      const refkContext ctx = context();
      if (out.numel() > 0) check(refkFill(&ctx, &d, refkScalar{1.0, 1}), "pow");
    } else {
      copy_into(out, self, "pow");
    }
    return out;
  }
  return pow_impl(self, wrap(exponent));
}
at::Tensor atan2(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkAtan2, Rule::ToFloat, "atan2");
}
at::Tensor& atan2_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const at::Tensor r = opgen_ref::atan2(self, other);
  TORCH_CHECK(c10::canCast(r.scalar_type(), out.scalar_type()), "result type ", r.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  resize_out(out, r.sizes());
  copy_into(out, r, "atan2.out");
  return out;
}
at::Tensor maximum(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkMaximum, Rule::Arith, "maximum");
}
at::Tensor minimum(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkMinimum, Rule::Arith, "minimum");
}

// The Tensor and Scalar overloads of the bitwise and comparison ops, written
// out (not by a macro) so that `gen --impl-path` and `gen --stubs` see them.
at::Tensor bitwise_and(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkBitwiseAnd, Rule::Bitwise, "bitwise_and_cpu");
}
at::Tensor bitwise_and(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkBitwiseAnd, Rule::Bitwise, "bitwise_and_cpu");
}
at::Tensor bitwise_or(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkBitwiseOr, Rule::Bitwise, "bitwise_or_cpu");
}
at::Tensor bitwise_or(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkBitwiseOr, Rule::Bitwise, "bitwise_or_cpu");
}
at::Tensor bitwise_xor(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkBitwiseXor, Rule::Bitwise, "bitwise_xor_cpu");
}
at::Tensor bitwise_xor(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkBitwiseXor, Rule::Bitwise, "bitwise_xor_cpu");
}
at::Tensor eq(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkEq, Rule::Compare, "eq");
}
at::Tensor eq(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkEq, Rule::Compare, "eq");
}
at::Tensor ne(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkNe, Rule::Compare, "ne");
}
at::Tensor ne(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkNe, Rule::Compare, "ne");
}
at::Tensor lt(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkLt, Rule::Compare, "lt");
}
at::Tensor lt(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkLt, Rule::Compare, "lt");
}
at::Tensor le(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkLe, Rule::Compare, "le");
}
at::Tensor le(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkLe, Rule::Compare, "le");
}
at::Tensor gt(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkGt, Rule::Compare, "gt");
}
at::Tensor gt(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkGt, Rule::Compare, "gt");
}
at::Tensor ge(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkGe, Rule::Compare, "ge");
}
at::Tensor ge(const at::Tensor& self, const at::Scalar& other) {
  return binary(self, wrap(other), refkGe, Rule::Compare, "ge");
}

at::Tensor logical_and(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkLogicalAnd, Rule::Compare, "logical_and");
}
at::Tensor logical_or(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkLogicalOr, Rule::Compare, "logical_or");
}
at::Tensor logical_xor(const at::Tensor& self, const at::Tensor& other) {
  return binary(self, other, refkLogicalXor, Rule::Compare, "logical_xor");
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const c10::Device device = common_device({&condition, &self, &other}, "where");
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(condition.scalar_type() == c10::kBool || condition.scalar_type() == c10::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition.scalar_type());
  const auto dtype = result_dtype(self, other);
  complex_kernel_dtype(dtype, "where");
  const auto shape = at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes());
  const at::Tensor c = to_dtype(condition, c10::kBool, device, "where");
  const at::Tensor x = to_dtype(self, dtype, device, "where");
  const at::Tensor y = to_dtype(other, dtype, device, "where");
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe_complex(out, "where"), dc = describe_as(c, shape, "where"),
                   dx = describe_complex_as(x, shape, "where"), dy = describe_complex_as(y, shape, "where");
  const refkContext ctx = context();
  check(refkWhere(&ctx, &o, &dc, &dx, &dy), "where");
  return out;
}

namespace {

// clamp's bounds: Scalars or tensors, each possibly absent.
at::Tensor clamp_impl(const at::Tensor& self, const at::Tensor& lo, const at::Tensor& hi) {
  TORCH_CHECK(lo.defined() || hi.defined(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  const c10::Device device = common_device({&self, &lo, &hi}, "clamp");
  const c10::DeviceGuard guard(device);
  ResultDtype promoted;
  promoted += self;
  promoted += lo;
  promoted += hi;
  const c10::ScalarType dtype = promoted.get();
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"clamp_cpu\" not implemented for 'Bool'");
  kernel_dtype(dtype, "clamp");
  auto shape = self.sizes().vec();
  if (lo.defined()) shape = at::infer_size(shape, lo.sizes());
  if (hi.defined()) shape = at::infer_size(shape, hi.sizes());
  const at::Tensor x = to_dtype(self, dtype, device, "clamp");
  const at::Tensor l = lo.defined() ? to_dtype(lo, dtype, device, "clamp") : at::Tensor();
  const at::Tensor h = hi.defined() ? to_dtype(hi, dtype, device, "clamp") : at::Tensor();
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, "clamp"), dx = describe_as(x, shape, "clamp");
  refkTensor dl{}, dh{};
  if (l.defined()) dl = describe_as(l, shape, "clamp");
  if (h.defined()) dh = describe_as(h, shape, "clamp");
  const refkContext ctx = context();
  check(refkClamp(&ctx, &o, &dx, &dl, &dh), "clamp");
  return out;
}

}  // namespace

at::Tensor clamp(const at::Tensor& self, const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  return clamp_impl(self, min ? wrap(*min) : at::Tensor(), max ? wrap(*max) : at::Tensor());
}
at::Tensor clamp(const at::Tensor& self, const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max) {
  return clamp_impl(self, min.value_or(at::Tensor()), max.value_or(at::Tensor()));
}

namespace {

// addcmul, addcdiv and lerp (refkTernary): eager's ternary TensorIterator,
// promoting self, a and b (lerp: all of self's dtype) and broadcasting them.
// The value (lerp's scalar weight) is converted as ATen's CPU kernels
// convert it: to the dtype for integers, to opmath (float for the half
// types) for floating ones, refusing what overflows.
at::Tensor ternary(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const at::Scalar& value,
                   refkTernaryOp op, const char* name) {
  const c10::Device device = common_device({&self, &a, &b}, name);
  const c10::DeviceGuard guard(device);
  ResultDtype promoted;
  promoted += self;
  promoted += a;
  promoted += b;
  const c10::ScalarType dtype = promoted.get();
  if (op == refkAddcmul) {
    TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"addcmul_cpu_out\" not implemented for 'Bool'");
  } else if (op == refkLerp) {
    TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(dtype), "\"", b.defined() ? "lerp_kernel_tensor" : "lerp_kernel_scalar",
                                "\" not implemented for '", c10::toString(dtype), "'");
  }
  kernel_dtype(dtype, name);
  auto shape = at::infer_size(self.sizes(), a.sizes());
  if (b.defined()) shape = at::infer_size(shape, b.sizes());
  const at::Tensor x = to_dtype(self, dtype, device, name), y = to_dtype(a, dtype, device, name);
  const at::Tensor z = b.defined() ? to_dtype(b, dtype, device, name) : at::Tensor();
  const c10::ScalarType opmath = dtype == c10::kHalf || dtype == c10::kBFloat16 ? c10::kFloat : dtype;
  const refkScalar v = b.defined() && op == refkLerp ? refkScalar{0, 0} : fill_value(value, opmath, name);
  at::Tensor out = empty(shape, dtype, device);
  if (out.numel() == 0) return out;
  const refkTensor o = describe(out, name), dx = describe_as(x, shape, name), dy = describe_as(y, shape, name);
  refkTensor dz{};
  if (z.defined()) dz = describe_as(z, shape, name);
  const refkContext ctx = context();
  check(refkTernary(&ctx, op, &o, &dx, &dy, &dz, v), name);
  return out;
}

void lerp_dtypes(const at::Tensor& self, const at::Tensor& end, const at::Tensor* weight) {
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.dtype(), " for `end` but got dtype ",
              end.dtype());
  if (weight != nullptr) {
    TORCH_CHECK(self.scalar_type() == weight->scalar_type(), "expected dtype ", self.dtype(),
                " for `weight` but got dtype ", weight->dtype());
  }
}

}  // namespace

at::Tensor addcmul(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                   const at::Scalar& value) {
  return ternary(self, tensor1, tensor2, value, refkAddcmul, "addcmul");
}
at::Tensor addcdiv(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,
                   const at::Scalar& value) {
  TORCH_CHECK(!(c10::isIntegralType(tensor1.scalar_type(), true) && c10::isIntegralType(tensor2.scalar_type(), true)),
              "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
              "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
              "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
              "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
              "(input + value * tensor1 / tensor2), for all dtypes.");
  return ternary(self, tensor1, tensor2, value, refkAddcdiv, "addcdiv");
}
at::Tensor lerp(const at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
  lerp_dtypes(self, end, nullptr);
  return ternary(self, end, at::Tensor(), weight, refkLerp, "lerp");
}
at::Tensor lerp(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  lerp_dtypes(self, end, &weight);
  return ternary(self, end, weight, 0, refkLerp, "lerp");
}

}  // namespace opgen_ref
