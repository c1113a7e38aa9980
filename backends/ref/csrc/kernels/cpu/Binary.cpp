// Binary elementwise kernels of the CPU reference library: arithmetic,
// division with rounding modes, powers, comparisons, logical and bitwise
// ops, each a lambda per op over the loop planner's vectorizable rows. What
// an element computes where it is more than an operator (NaN propagation,
// Python-style modulo, floor division, integer powers, shifts past the
// width) is common/Pointwise.h's, shared with the CUDA library.
#include "kernels/common/Complex.h"
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

#include <atomic>

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

std::atomic<bool> g_zero_division{false};

// Records an integer division by zero; refkBinary then fails with ZeroDivisionError.
struct ZeroDivision {
  void operator()() const { g_zero_division.store(true, std::memory_order_relaxed); }
};

template <class T>
refkStatus binary_typed(int threads, refkBinaryOp op, const refkTensor& out, const refkTensor& a,
                        const refkTensor& b, refkScalar alpha_s) {
  using V = C<T>;
  const refkTensor* ops[3] = {&out, &a, &b};
  const Loop<3> loop(ops);
  auto same = [&](auto f) {
    if (out.dtype != a.dtype) return fail(refkErrorInvalidValue, "binary: output dtype must match the inputs'");
    typed_rows<T, T, 2>(loop, threads, f);
    return refkSuccess;
  };
  auto predicate = [&](auto f) {
    if (out.dtype != refkBool) return fail(refkErrorInvalidValue, "binary: comparisons write bool");
    typed_rows<bool, T, 2>(loop, threads, [f](V x, V y) -> bool { return f(x, y); });
    return refkSuccess;
  };
  switch (op) {
    case refkEq: return predicate([](V x, V y) { return x == y; });
    case refkNe: return predicate([](V x, V y) { return x != y; });
    case refkLt: return predicate([](V x, V y) { return x < y; });
    case refkLe: return predicate([](V x, V y) { return x <= y; });
    case refkGt: return predicate([](V x, V y) { return x > y; });
    case refkGe: return predicate([](V x, V y) { return x >= y; });
    case refkLogicalAnd: return predicate([](V x, V y) { return (x != V(0)) && (y != V(0)); });
    case refkLogicalOr: return predicate([](V x, V y) { return (x != V(0)) || (y != V(0)); });
    case refkLogicalXor: return predicate([](V x, V y) { return (x != V(0)) != (y != V(0)); });
    default: break;
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case refkBitwiseAnd:
      case refkMul:
      case refkMinimum: return same([](bool x, bool y) { return x && y; });
      case refkBitwiseOr:
      case refkAdd:
      case refkMaximum: return same([](bool x, bool y) { return x || y; });
      case refkBitwiseXor: return same([](bool x, bool y) { return x != y; });
      default: return unsupported("binary", a.dtype);
    }
  } else {
    switch (op) {
      case refkMul: return same([](V x, V y) { return V(x * y); });
      case refkMaximum: return same([](V x, V y) { return scalar::maximum(x, y); });
      case refkMinimum: return same([](V x, V y) { return scalar::minimum(x, y); });
      case refkRemainder: return same([](V x, V y) { return scalar::python_mod(x, y, ZeroDivision{}); });
      case refkDivFloor: return same([](V x, V y) { return scalar::floor_divide(x, y, ZeroDivision{}); });
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      const V alpha = static_cast<V>(alpha_s.i);
      switch (op) {
        case refkAdd:
          if (alpha == V(1)) return same([](V x, V y) { return V(x + y); });
          return same([alpha](V x, V y) { return V(x + alpha * y); });
        case refkSub: return same([alpha](V x, V y) { return V(x - alpha * y); });
        case refkDivTrunc: return same([](V x, V y) { return scalar::div_trunc_integral(x, y, ZeroDivision{}); });
        case refkFmod: return same([](V x, V y) { return scalar::fmod_integral(x, y, ZeroDivision{}); });
        case refkPow: return same([](V x, V y) { return scalar::int_pow(x, y); });
        case refkThresholdBackward:
          return same([alpha](V g, V x) { return scalar::threshold_backward(g, x, alpha); });
        case refkBitwiseAnd: return same([](V x, V y) { return V(x & y); });
        case refkBitwiseOr: return same([](V x, V y) { return V(x | y); });
        case refkBitwiseXor: return same([](V x, V y) { return V(x ^ y); });
        case refkLshift: return same([](V x, V y) { return scalar::lshift(x, y); });
        case refkRshift: return same([](V x, V y) { return scalar::rshift(x, y); });
        default: return unsupported("binary", a.dtype);
      }
    } else {
      const V alpha = static_cast<V>(alpha_s.f);
      switch (op) {
        case refkAdd:
          if (alpha == V(1)) return same([](V x, V y) { return x + y; });
          return same([alpha](V x, V y) { return x + alpha * y; });
        case refkSub: return same([alpha](V x, V y) { return x - alpha * y; });
        case refkDiv: return same([](V x, V y) { return x / y; });
        case refkDivTrunc: return same([](V x, V y) { return std::trunc(x / y); });
        case refkFmod: return same([](V x, V y) { return std::fmod(x, y); });
        case refkPow: return same([](V x, V y) { return scalar::pow(x, y); });
        case refkAtan2: return same([](V x, V y) { return std::atan2(x, y); });
        case refkHypot: return same([](V x, V y) { return std::hypot(x, y); });
        case refkCopysign: return same([](V x, V y) { return std::copysign(x, y); });
        case refkFmax: return same([](V x, V y) { return std::fmax(x, y); });
        case refkFmin: return same([](V x, V y) { return std::fmin(x, y); });
        case refkXlogy: return same([](V x, V y) { return scalar::xlogy(x, y); });
        case refkThresholdBackward:
          return same([alpha](V g, V x) { return scalar::threshold_backward(g, x, alpha); });
        case refkSigmoidBackward: return same([](V g, V y) { return scalar::sigmoid_backward(g, y); });
        case refkTanhBackward: return same([](V g, V y) { return scalar::tanh_backward(g, y); });
        case refkGeluBackwardNone: return same([](V g, V x) { return scalar::gelu_backward(g, x); });
        case refkGeluBackwardTanh: return same([](V g, V x) { return scalar::gelu_tanh_backward(g, x); });
        case refkLogaddexp: return same([](V x, V y) { return scalar::logaddexp(x, y); });
        default: return unsupported("binary", a.dtype);
      }
    }
  }
}
// Complex operands (Note [Complex dtypes] in RefKernels.h): add and sub
// (alpha real), mul and div (common/Complex.h); all of one complex dtype.
template <class Z>
refkStatus complex_binary(int threads, refkBinaryOp op, const refkTensor& out, const refkTensor& a,
                          const refkTensor& b, refkScalar alpha_s) {
  using R = decltype(Z{}.re);
  if (out.dtype != a.dtype) return fail(refkErrorInvalidValue, "binary: output dtype must match the inputs'");
  const R alpha = static_cast<R>(alpha_s.f);
  const refkTensor* ops[3] = {&out, &a, &b};
  const Loop<3> loop(ops);
  const auto rows = [&](auto f) {
    loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Z*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const Z*>(p[1] + i * s[1]), *reinterpret_cast<const Z*>(p[2] + i * s[2]));
      }
    });
    return refkSuccess;
  };
  switch (op) {
    case refkAdd: return rows([alpha](Z x, Z y) { return x + scaled(y, alpha); });
    case refkSub: return rows([alpha](Z x, Z y) { return x - scaled(y, alpha); });
    case refkMul: return rows([](Z x, Z y) { return x * y; });
    case refkDiv: return rows([](Z x, Z y) { return divide(x, y); });
    default: return unsupported("binary", a.dtype);
  }
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                      const refkTensor* b, refkScalar alpha) {
  return guarded("binary", [&] {
    if (auto s = check_shapes("binary", {out, a, b})) return s;
    if (a->dtype != b->dtype) return fail(refkErrorInvalidValue, "binary: inputs must share one dtype");
    const Access access({out, a, b});
    if (is_complex(a->dtype)) {
      return dispatch_complex(a->dtype, [&](auto tag) {
        return complex_binary<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
      });
    }
    g_zero_division.store(false);
    const refkStatus s = dispatch(a->dtype, [&](auto tag) {
      return binary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
    });
    if (s == refkSuccess && g_zero_division.load()) return fail(refkErrorInvalidValue, "ZeroDivisionError");
    return s;
  });
}

namespace refk {
namespace {

template <class T>
refkStatus ternary_typed(int threads, refkTernaryOp op, const refkTensor& out, const refkTensor& self,
                         const refkTensor& a, const refkTensor& b, refkScalar value) {
  using V = C<T>;
  if constexpr (is_floating_v<T>) {
    if (op == refkLerp && b.data == nullptr) {
      const refkTensor* ops[3] = {&out, &self, &a};
      typed_rows<T, T, 2>(Loop<3>(ops), threads, [w = V(value.f)](V x, V e) { return scalar::lerp(x, e, w); });
      return refkSuccess;
    }
    const refkTensor* ops[4] = {&out, &self, &a, &b};
    const Loop<4> loop(ops);
    const V s = V(value.f);
    switch (op) {
      case refkAddcmul:
        typed_rows<T, T, 3>(loop, threads, [s](V x, V p, V q) { return scalar::addcmul(x, p, q, s); });
        break;
      case refkAddcdiv:
        typed_rows<T, T, 3>(loop, threads, [s](V x, V p, V q) { return scalar::addcdiv(x, p, q, s); });
        break;
      case refkLerp: typed_rows<T, T, 3>(loop, threads, [](V x, V e, V w) { return scalar::lerp(x, e, w); }); break;
    }
    return refkSuccess;
  } else {
    // check::ternary lets only addcmul through for integers.
    const refkTensor* ops[4] = {&out, &self, &a, &b};
    typed_rows<T, T, 3>(Loop<4>(ops), threads,
                        [s = V(value.i)](V x, V p, V q) { return scalar::addcmul(x, p, q, s); });
    return refkSuccess;
  }
}

}  // namespace
}  // namespace refk

extern "C" refkStatus refkTernary(const refkContext* ctx, refkTernaryOp op, const refkTensor* out,
                                  const refkTensor* self, const refkTensor* a, const refkTensor* b,
                                  refkScalar value) {
  return guarded("ternary", [&] {
    if (auto s = checked(check::ternary(op, *out, *self, *a, *b))) return s;
    const Access access({out, self, a, b});
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("ternary", out->dtype);
      } else {
        return ternary_typed<T>(ctx->num_threads, op, *out, *self, *a, *b, value);
      }
    });
  });
}
