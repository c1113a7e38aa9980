// Unary elementwise kernels of the CPU reference library: math, rounding,
// predicates and activations. Each op is a lambda in opmath (float for the
// half types), run by the loop planner (Common.h) over coalesced, threaded
// rows with a contiguous fast path the compiler vectorizes. What an element
// computes where it is more than one math function (ATen's CPU edge cases)
// is common/Pointwise.h's, shared with the CUDA library.
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

template <class T>
refkStatus unary_typed(int threads, refkUnaryOp op, const refkTensor& out, const refkTensor& in,
                       const refkUnaryParams& p) {
  using V = C<T>;
  const refkTensor* ops[2] = {&out, &in};
  const Loop<2> loop(ops);
  auto same = [&](auto f) {
    if (out.dtype != in.dtype) return fail(refkErrorInvalidValue, "unary: output dtype must match the input's");
    typed_rows<T, T, 1>(loop, threads, f);
    return refkSuccess;
  };
  auto predicate = [&](auto f) {
    if (out.dtype != refkBool) return fail(refkErrorInvalidValue, "unary: predicates write bool");
    typed_rows<bool, T, 1>(loop, threads, [f](V x) -> bool { return f(x); });
    return refkSuccess;
  };
  switch (op) {
    case refkLogicalNot: return predicate([](V x) { return !(x != V(0)); });
    case refkIsNan:
      return predicate([](V x) {
        if constexpr (is_floating_v<T>) return std::isnan(x);
        return false;
      });
    case refkIsInf:
      return predicate([](V x) {
        if constexpr (is_floating_v<T>) return std::isinf(x);
        return false;
      });
    case refkIsPosInf:
      return predicate([](V x) {
        if constexpr (is_floating_v<T>) return x == std::numeric_limits<V>::infinity();
        return false;
      });
    case refkIsNegInf:
      return predicate([](V x) {
        if constexpr (is_floating_v<T>) return x == -std::numeric_limits<V>::infinity();
        return false;
      });
    case refkIsFinite:
      return predicate([](V x) {
        if constexpr (is_floating_v<T>) return std::isfinite(x);
        return true;
      });
    case refkSignbit: return predicate([](V x) { return scalar::signbit(x); });
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (op == refkBitwiseNot) return same([](bool x) { return !x; });
    return unsupported("unary", in.dtype);
  } else {
    switch (op) {
      case refkAbs: return same([](V x) { return scalar::abs(x); });
      case refkNeg: return same([](V x) { return V(-x); });
      case refkSign:
      case refkSgn: return same([](V x) { return scalar::sign(x); });
      case refkRelu: return same([](V x) { return scalar::relu(x); });
      case refkSquare: return same([](V x) { return V(x * x); });
      case refkHardtanh:
        return same([lo = V(p.p0), hi = V(p.p1)](V x) { return scalar::hardtanh(x, lo, hi); });
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      switch (op) {
        case refkBitwiseNot: return same([](V x) { return V(~x); });
        case refkCeil:
        case refkFloor:
        case refkRound:
        case refkTrunc: return same([](V x) { return x; });
        default: return unsupported("unary", in.dtype);
      }
    } else {
      const V one(1);
      switch (op) {
        case refkCeil: return same([](V x) { return std::ceil(x); });
        case refkFloor: return same([](V x) { return std::floor(x); });
        case refkTrunc: return same([](V x) { return std::trunc(x); });
        case refkFrac: return same([](V x) { return x - std::trunc(x); });
        case refkRound:
          if (p.i == 0) return same([](V x) { return std::nearbyint(x); });
          return same([d = p.i](V x) { return scalar::round_decimals(x, d); });
        case refkExp: return same([](V x) { return std::exp(x); });
        case refkExp2: return same([](V x) { return std::exp2(x); });
        case refkExpm1: return same([](V x) { return std::expm1(x); });
        case refkLog: return same([](V x) { return std::log(x); });
        case refkLog2: return same([](V x) { return std::log2(x); });
        case refkLog10: return same([](V x) { return std::log10(x); });
        case refkLog1p: return same([](V x) { return std::log1p(x); });
        case refkSin: return same([](V x) { return std::sin(x); });
        case refkCos: return same([](V x) { return std::cos(x); });
        case refkTan: return same([](V x) { return std::tan(x); });
        case refkAsin: return same([](V x) { return std::asin(x); });
        case refkAcos: return same([](V x) { return std::acos(x); });
        case refkAtan: return same([](V x) { return std::atan(x); });
        case refkSinh: return same([](V x) { return std::sinh(x); });
        case refkCosh: return same([](V x) { return std::cosh(x); });
        case refkTanh: return same([](V x) { return std::tanh(x); });
        case refkAsinh: return same([](V x) { return std::asinh(x); });
        case refkAcosh: return same([](V x) { return std::acosh(x); });
        case refkAtanh: return same([](V x) { return std::atanh(x); });
        case refkErf: return same([](V x) { return std::erf(x); });
        case refkErfc: return same([](V x) { return std::erfc(x); });
        case refkSqrt: return same([](V x) { return std::sqrt(x); });
        case refkRsqrt: return same([one](V x) { return one / std::sqrt(x); });
        case refkReciprocal: return same([one](V x) { return one / x; });
        case refkSigmoid: return same([](V x) { return scalar::sigmoid(x); });
        case refkSilu: return same([](V x) { return scalar::silu(x); });
        case refkGeluNone: return same([](V x) { return scalar::gelu(x); });
        case refkGeluTanh: return same([](V x) { return scalar::gelu_tanh(x); });
        case refkElu:
          return same([alpha = V(p.p0), scale = V(p.p1), input_scale = V(p.p2)](V x) {
            return scalar::elu(x, alpha, scale, input_scale);
          });
        case refkLeakyRelu: return same([slope = V(p.p0)](V x) { return scalar::leaky_relu(x, slope); });
        case refkHardsigmoid: return same([](V x) { return scalar::hardsigmoid(x); });
        case refkHardswish: return same([](V x) { return scalar::hardswish(x); });
        case refkSoftplus:
          return same([beta = V(p.p0), threshold = V(p.p1)](V x) { return scalar::softplus(x, beta, threshold); });
        case refkMish: return same([](V x) { return scalar::mish(x); });
        default: return unsupported("unary", in.dtype);
      }
    }
  }
}
}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
                     const refkUnaryParams* params) {
  return guarded("unary", [&] {
    if (auto s = check_shapes("unary", {out, in})) return s;
    const Access access({out, in});
    const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
    return dispatch(in->dtype, [&](auto tag) {
      return unary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *in, p);
    });
  });
}

namespace refk {
namespace {

template <class T>
refkStatus unary_backward_typed(int threads, refkUnaryOp op, const refkTensor& grad_in, const refkTensor& grad,
                                const refkTensor& x, const refkUnaryParams& p) {
  using V = C<T>;
  const refkTensor* ops[3] = {&grad_in, &grad, &x};
  const Loop<3> loop(ops);
  auto rows = [&](auto f) {
    typed_rows<T, T, 2>(loop, threads, f);
    return refkSuccess;
  };
  switch (op) {
    case refkSilu: return rows([](V g, V v) { return scalar::silu_backward(g, v); });
    case refkMish: return rows([](V g, V v) { return scalar::mish_backward(g, v); });
    case refkSoftplus:
      return rows([beta = V(p.p0), threshold = V(p.p1)](V g, V v) {
        return scalar::softplus_backward(g, v, beta, threshold);
      });
    case refkHardsigmoid: return rows([](V g, V v) { return scalar::hardsigmoid_backward(g, v); });
    case refkHardswish: return rows([](V g, V v) { return scalar::hardswish_backward(g, v); });
    case refkHardtanh:
      return rows([lo = V(p.p0), hi = V(p.p1)](V g, V v) { return scalar::hardtanh_backward(g, v, lo, hi); });
    default: return fail(refkErrorNotImplemented, "unary backward: no gradient of this op");
  }
}

}  // namespace
}  // namespace refk

extern "C" refkStatus refkUnaryBackward(const refkContext* ctx, refkUnaryOp op, const refkTensor* grad_in,
                                        const refkTensor* grad, const refkTensor* x, const refkUnaryParams* params) {
  return guarded("unary backward", [&] {
    if (auto s = check_shapes("unary backward", {grad_in, grad, x})) return s;
    if (grad_in->dtype != x->dtype || grad->dtype != x->dtype) {
      return fail(refkErrorInvalidValue, "unary backward: operands must share one dtype");
    }
    const Access access({grad_in, grad, x});
    const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
    return dispatch(x->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        return unary_backward_typed<T>(ctx->num_threads, op, *grad_in, *grad, *x, p);
      } else {
        return unsupported("unary backward", x->dtype);
      }
    });
  });
}
