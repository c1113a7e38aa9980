// The op tables of refkUnary and refkUnaryBackward, written once for both
// devices (Note [One definition per semantics] in Dtypes.h) and shaped like
// foreach::with_fn (Pointwise.h): Fn<T, OP> is one op's element function in
// opmath, and with_fn<T>(op, params, f) calls f(Fn<T, OP>) for the runtime
// op, returning false where the op does not exist for storage type T.
//
// Note [Pointwise op tables]: the CPU library instantiates one row loop per
// op from with_fn (a loop the compiler vectorizes); the CUDA library calls
// with_fn inside one kernel per dtype and form (the switch is uniform across
// a launch, so the library compiles once per dtype, not per (op, dtype)).
// Both answer which (op, dtype) pairs exist from the same table
// (supported()), so no device keeps a matrix of its own, and an op added to
// RefKernels.h is refused on both until the table has it.
#pragma once

#include "kernels/common/Pointwise.h"

namespace refk {
namespace unary {

// A form of one refkUnaryOp with a loop of its own: round to nonzero decimals.
constexpr int kRoundDecimals = -1;

// Ops that write bool (any input dtype).
REFK_HOST_DEVICE constexpr bool is_predicate(int op) {
  return op == refkIsNan || op == refkIsInf || op == refkIsPosInf || op == refkIsNegInf || op == refkIsFinite ||
         op == refkLogicalNot || op == refkSignbit;
}

template <class T, int OP>
struct Fn {
  using V = opmath_t<T>;
  static constexpr bool predicate = is_predicate(OP);
  refkUnaryParams p;

  REFK_HOST_DEVICE auto operator()(V x) const {
    if constexpr (OP == refkLogicalNot) return !(x != V(0));
    else if constexpr (OP == refkSignbit) return scalar::signbit(x);
    // Integers are finite numbers.
    else if constexpr (predicate && !is_floating_v<T>) return OP == refkIsFinite;
    else if constexpr (OP == refkIsNan) return bool(std::isnan(x));
    else if constexpr (OP == refkIsInf) return bool(std::isinf(x));
    else if constexpr (OP == refkIsPosInf) return x == std::numeric_limits<V>::infinity();
    else if constexpr (OP == refkIsNegInf) return x == -std::numeric_limits<V>::infinity();
    else if constexpr (OP == refkIsFinite) return bool(std::isfinite(x));
    else if constexpr (OP == refkBitwiseNot) {
      if constexpr (std::is_same_v<T, bool>) return !x;
      else return V(~x);
    }
    else if constexpr (OP == refkAbs) return scalar::abs(x);
    else if constexpr (OP == refkNeg) return V(-x);
    else if constexpr (OP == refkSign || OP == refkSgn) return scalar::sign(x);
    else if constexpr (OP == refkRelu) return scalar::relu(x);
    else if constexpr (OP == refkSquare) return V(x * x);
    else if constexpr (OP == refkHardtanh) return scalar::hardtanh(x, V(p.p0), V(p.p1));
    // Integral ceil, floor, round and trunc are the identity.
    else if constexpr (is_integral_v<T>) return x;
    else if constexpr (OP == refkCeil) return std::ceil(x);
    else if constexpr (OP == refkFloor) return std::floor(x);
    else if constexpr (OP == refkTrunc) return std::trunc(x);
    else if constexpr (OP == refkFrac) return x - std::trunc(x);
    else if constexpr (OP == refkRound) return std::nearbyint(x);
    else if constexpr (OP == kRoundDecimals) return scalar::round_decimals(x, p.i);
    else if constexpr (OP == refkExp) return std::exp(x);
    else if constexpr (OP == refkExp2) return std::exp2(x);
    else if constexpr (OP == refkExpm1) return std::expm1(x);
    else if constexpr (OP == refkLog) return std::log(x);
    else if constexpr (OP == refkLog2) return std::log2(x);
    else if constexpr (OP == refkLog10) return std::log10(x);
    else if constexpr (OP == refkLog1p) return std::log1p(x);
    else if constexpr (OP == refkSin) return std::sin(x);
    else if constexpr (OP == refkCos) return std::cos(x);
    else if constexpr (OP == refkTan) return std::tan(x);
    else if constexpr (OP == refkAsin) return std::asin(x);
    else if constexpr (OP == refkAcos) return std::acos(x);
    else if constexpr (OP == refkAtan) return std::atan(x);
    else if constexpr (OP == refkSinh) return std::sinh(x);
    else if constexpr (OP == refkCosh) return std::cosh(x);
    else if constexpr (OP == refkTanh) return std::tanh(x);
    else if constexpr (OP == refkAsinh) return std::asinh(x);
    else if constexpr (OP == refkAcosh) return std::acosh(x);
    else if constexpr (OP == refkAtanh) return std::atanh(x);
    else if constexpr (OP == refkErf) return std::erf(x);
    else if constexpr (OP == refkErfc) return std::erfc(x);
    else if constexpr (OP == refkSqrt) return std::sqrt(x);
    else if constexpr (OP == refkRsqrt) return V(1) / std::sqrt(x);
    else if constexpr (OP == refkReciprocal) return V(1) / x;
    else if constexpr (OP == refkSigmoid) return scalar::sigmoid(x);
    else if constexpr (OP == refkSilu) return scalar::silu(x);
    else if constexpr (OP == refkGeluNone) return scalar::gelu(x);
    else if constexpr (OP == refkGeluTanh) return scalar::gelu_tanh(x);
    else if constexpr (OP == refkElu) return scalar::elu(x, V(p.p0), V(p.p1), V(p.p2));
    else if constexpr (OP == refkLeakyRelu) return scalar::leaky_relu(x, V(p.p0));
    else if constexpr (OP == refkHardsigmoid) return scalar::hardsigmoid(x);
    else if constexpr (OP == refkHardswish) return scalar::hardswish(x);
    else if constexpr (OP == refkSoftplus) return scalar::softplus(x, V(p.p0), V(p.p1));
    else {
      static_assert(OP == refkMish, "unary::Fn: an op with_fn does not list");
      return scalar::mish(x);
    }
  }
};

template <class Fn, class F>
REFK_HOST_DEVICE inline bool apply(const refkUnaryParams& p, F& f) {
  f(Fn{p});
  return true;
}

#define REFK_UNARY_CASE(OP) \
  case OP: return apply<Fn<T, OP>>(p, f)

// Calls f(Fn<T, OP>{p}) for the runtime op; false (f not called) where the
// op does not exist for T: predicates for every dtype, bitwise_not alone on
// bool, abs..hardtanh on numbers, bitwise_not and the identity roundings on
// integers, the math and activations on floating dtypes.
template <class T, class F>
REFK_HOST_DEVICE bool with_fn(refkUnaryOp op, const refkUnaryParams& p, F&& f) {
  switch (op) {
    REFK_UNARY_CASE(refkLogicalNot);
    REFK_UNARY_CASE(refkIsNan);
    REFK_UNARY_CASE(refkIsInf);
    REFK_UNARY_CASE(refkIsPosInf);
    REFK_UNARY_CASE(refkIsNegInf);
    REFK_UNARY_CASE(refkIsFinite);
    REFK_UNARY_CASE(refkSignbit);
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (op == refkBitwiseNot) return apply<Fn<T, refkBitwiseNot>>(p, f);
    return false;
  } else {
    switch (op) {
      REFK_UNARY_CASE(refkAbs);
      REFK_UNARY_CASE(refkNeg);
      REFK_UNARY_CASE(refkSign);
      REFK_UNARY_CASE(refkSgn);
      REFK_UNARY_CASE(refkRelu);
      REFK_UNARY_CASE(refkSquare);
      REFK_UNARY_CASE(refkHardtanh);
      REFK_UNARY_CASE(refkCeil);
      REFK_UNARY_CASE(refkFloor);
      REFK_UNARY_CASE(refkTrunc);
      case refkRound:
        if (is_integral_v<T> || p.i == 0) return apply<Fn<T, refkRound>>(p, f);
        return apply<Fn<T, kRoundDecimals>>(p, f);
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      if (op == refkBitwiseNot) return apply<Fn<T, refkBitwiseNot>>(p, f);
      return false;
    } else {
      switch (op) {
        REFK_UNARY_CASE(refkFrac);
        REFK_UNARY_CASE(refkExp);
        REFK_UNARY_CASE(refkExp2);
        REFK_UNARY_CASE(refkExpm1);
        REFK_UNARY_CASE(refkLog);
        REFK_UNARY_CASE(refkLog2);
        REFK_UNARY_CASE(refkLog10);
        REFK_UNARY_CASE(refkLog1p);
        REFK_UNARY_CASE(refkSin);
        REFK_UNARY_CASE(refkCos);
        REFK_UNARY_CASE(refkTan);
        REFK_UNARY_CASE(refkAsin);
        REFK_UNARY_CASE(refkAcos);
        REFK_UNARY_CASE(refkAtan);
        REFK_UNARY_CASE(refkSinh);
        REFK_UNARY_CASE(refkCosh);
        REFK_UNARY_CASE(refkTanh);
        REFK_UNARY_CASE(refkAsinh);
        REFK_UNARY_CASE(refkAcosh);
        REFK_UNARY_CASE(refkAtanh);
        REFK_UNARY_CASE(refkErf);
        REFK_UNARY_CASE(refkErfc);
        REFK_UNARY_CASE(refkSqrt);
        REFK_UNARY_CASE(refkRsqrt);
        REFK_UNARY_CASE(refkReciprocal);
        REFK_UNARY_CASE(refkSigmoid);
        REFK_UNARY_CASE(refkSilu);
        REFK_UNARY_CASE(refkGeluNone);
        REFK_UNARY_CASE(refkGeluTanh);
        REFK_UNARY_CASE(refkElu);
        REFK_UNARY_CASE(refkLeakyRelu);
        REFK_UNARY_CASE(refkHardsigmoid);
        REFK_UNARY_CASE(refkHardswish);
        REFK_UNARY_CASE(refkSoftplus);
        REFK_UNARY_CASE(refkMish);
        default: return false;
      }
    }
  }
}

// refkUnaryBackward's ops: grad_input = Fn(g, x), g the incoming gradient
// and x the forward's input, floating dtypes only.
template <class T, int OP>
struct BackwardFn {
  using V = opmath_t<T>;
  refkUnaryParams p;

  REFK_HOST_DEVICE V operator()(V g, V x) const {
    if constexpr (OP == refkSilu) return scalar::silu_backward(g, x);
    else if constexpr (OP == refkMish) return scalar::mish_backward(g, x);
    else if constexpr (OP == refkSoftplus) return scalar::softplus_backward(g, x, V(p.p0), V(p.p1));
    else if constexpr (OP == refkHardsigmoid) return scalar::hardsigmoid_backward(g, x);
    else if constexpr (OP == refkHardswish) return scalar::hardswish_backward(g, x);
    else {
      static_assert(OP == refkHardtanh, "unary::BackwardFn: an op backward_with_fn does not list");
      return scalar::hardtanh_backward(g, x, V(p.p0), V(p.p1));
    }
  }
};

#define REFK_UNARY_BACKWARD_CASE(OP) \
  case OP: return apply<BackwardFn<T, OP>>(p, f)

// with_fn for refkUnaryBackward: false for an op without a gradient here.
template <class T, class F>
REFK_HOST_DEVICE bool backward_with_fn(refkUnaryOp op, const refkUnaryParams& p, F&& f) {
  switch (op) {
    REFK_UNARY_BACKWARD_CASE(refkSilu);
    REFK_UNARY_BACKWARD_CASE(refkMish);
    REFK_UNARY_BACKWARD_CASE(refkSoftplus);
    REFK_UNARY_BACKWARD_CASE(refkHardsigmoid);
    REFK_UNARY_BACKWARD_CASE(refkHardswish);
    REFK_UNARY_BACKWARD_CASE(refkHardtanh);
    default: return false;
  }
}

#undef REFK_UNARY_CASE
#undef REFK_UNARY_BACKWARD_CASE

// A visitor that does nothing: with_fn(op, p, Ignore{}) asks the table
// whether the op exists.
struct Ignore {
  template <class Fn>
  REFK_HOST_DEVICE void operator()(const Fn&) const {}
};

// Whether refkUnary computes `op` on dtype `d` (complex: no; dispatch
// refuses it); and refkUnaryBackward.
inline bool supported(refkUnaryOp op, refkDtype d) {
  if (is_complex(d) || is_storage_only(d)) return false;
  const refkUnaryParams none{0, 0, 0, 0};
  return dispatch(d, [&](auto tag) { return with_fn<typename decltype(tag)::type>(op, none, Ignore{}); });
}
inline bool has_backward(refkUnaryOp op) { return backward_with_fn<float>(op, refkUnaryParams{0, 0, 0, 0}, Ignore{}); }

}  // namespace unary
}  // namespace refk
