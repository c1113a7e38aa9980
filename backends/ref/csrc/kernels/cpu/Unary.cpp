// Unary elementwise kernels of the CPU reference library: math, rounding,
// predicates and activations. Each op is a scalar functor in opmath (float
// for the half types), run by the loop planner (Common.h) over coalesced,
// threaded rows with a contiguous fast path the compiler vectorizes.
// Numerics follow ATen's CPU kernels where they define edge cases.
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
    case refkSignbit:
      return predicate([](V x) {
        // Through the bits: GCC 12 fails to compile a vectorized std::signbit.
        if constexpr (std::is_same_v<V, float>) return (float_to_bits(x) >> 31) != 0;
        if constexpr (std::is_same_v<V, double>) {
          uint64_t w;
          std::memcpy(&w, &x, 8);
          return (w >> 63) != 0;
        }
        if constexpr (std::is_signed_v<V>) return x < 0;
        return false;
      });
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (op == refkBitwiseNot) return same([](bool x) { return !x; });
    return unsupported("unary", in.dtype);
  } else {
    switch (op) {
      case refkAbs:
        return same([](V x) {
          if constexpr (std::is_unsigned_v<V>) return x;
          else return x < V(0) ? V(-x) : V(x == V(0) ? V(0) : x);
        });
      case refkNeg: return same([](V x) { return V(-x); });
      case refkSign:
      case refkSgn: return same([](V x) { return V((V(0) < x) - (x < V(0))); });
      case refkRelu: return same([](V x) { return x < V(0) ? V(0) : x; });
      case refkSquare: return same([](V x) { return V(x * x); });
      case refkHardtanh:
        return same([lo = V(p.p0), hi = V(p.p1)](V x) {
          if constexpr (is_floating_v<T>) {
            if (std::isnan(x)) return x;
          }
          return x < lo ? lo : (x > hi ? hi : x);
        });
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
      const V one(1), zero(0);
      switch (op) {
        case refkCeil: return same([](V x) { return std::ceil(x); });
        case refkFloor: return same([](V x) { return std::floor(x); });
        case refkTrunc: return same([](V x) { return std::trunc(x); });
        case refkFrac: return same([](V x) { return x - std::trunc(x); });
        case refkRound:
          if (p.i == 0) return same([](V x) { return std::nearbyint(x); });
          return same([d = p.i](V x) {
            const V ten = std::pow(V(10), V(std::abs(d)));
            return d < 0 ? std::nearbyint(x / ten) * ten : std::nearbyint(x * ten) / ten;
          });
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
        case refkSigmoid: return same([one](V x) { return one / (one + std::exp(-x)); });
        case refkSilu: return same([one](V x) { return x / (one + std::exp(-x)); });
        case refkGeluNone:
          // As ATen's vectorized float kernels: +inf gives NaN, except in double.
          return same([](V x) {
            if (!std::is_same_v<T, double> && x == std::numeric_limits<V>::infinity()) {
              return std::numeric_limits<V>::quiet_NaN();
            }
            // ATen's vectorized float order, x * (1 + erf) * 0.5, overflows near the
            // dtype's max; its double kernel scales first.
            const V e = V(1) + std::erf(x * V(0.70710678118654752440));
            if constexpr (std::is_same_v<T, double>) return V(0.5) * x * e;
            return x * e * V(0.5);
          });
        case refkGeluTanh:
          return same([](V x) {
            const V inner = V(0.79788456080286535588) * (x + V(0.044715) * x * x * x);
            return V(0.5) * x * (V(1) + std::tanh(inner));
          });
        case refkElu:
          return same([alpha = V(p.p0), scale = V(p.p1), input_scale = V(p.p2), zero](V x) {
            return x <= zero ? std::expm1(x * input_scale) * alpha * scale : x * scale;
          });
        case refkLeakyRelu: return same([slope = V(p.p0), zero](V x) { return x > zero ? x : x * slope; });
        case refkHardsigmoid:
          return same([](V x) { return std::min(std::max(x + V(3), V(0)), V(6)) / V(6); });
        case refkHardswish:
          return same([](V x) { return x * std::min(std::max(x + V(3), V(0)), V(6)) / V(6); });
        case refkSoftplus:
          return same([beta = V(p.p0), threshold = V(p.p1)](V x) {
            return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
          });
        case refkMish: return same([](V x) { return x * std::tanh(std::log1p(std::exp(x))); });
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
