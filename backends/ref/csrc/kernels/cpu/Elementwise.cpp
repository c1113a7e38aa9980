// Elementwise kernels of the CPU reference library: copy/cast, fill, unary,
// binary, where and clamp. Each op is a scalar functor in opmath (float for
// the half types); the loop planner (Common.h) runs it over coalesced,
// threaded rows, with a contiguous fast path the compiler vectorizes.
// Numerics follow ATen's CPU kernels where they define edge cases (NaN
// propagation, Python-style modulo, floor division, integer powers).
#include "kernels/cpu/Common.h"

#include <atomic>

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

template <class F>
refkStatus each_dtype(const char* op, refkDtype d, F&& f) {
  return dispatch(d, [&](auto tag) -> refkStatus { return f(tag); });
}

// ---- unary ------------------------------------------------------------------

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

// ---- binary -----------------------------------------------------------------

std::atomic<bool> g_zero_division{false};

template <class V>
V python_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    V m = std::fmod(a, b);
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) m += b;
    return m;
  } else {
    if (b == 0) {
      g_zero_division.store(true, std::memory_order_relaxed);
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return 0;  // INT_MIN % -1 traps
    }
    V m = a % b;
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
  }
}

template <class V>
V floor_divide(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (b == V(0)) return a / b;
    const V m = std::fmod(a, b);
    V div = (a - m) / b;
    if (m != V(0) && ((b < V(0)) != (m < V(0)))) div -= V(1);
    if (div == V(0)) return std::copysign(V(0), a / b);
    V fl = std::floor(div);
    if (div - fl > V(0.5)) fl += V(1);
    return fl;
  } else {
    if (b == 0) {
      g_zero_division.store(true, std::memory_order_relaxed);
      return 0;
    }
    if constexpr (std::is_signed_v<V>) {
      if (b == V(-1)) return V(-a);
    }
    const V q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? V(q - 1) : q;
  }
}

template <class V>
V int_pow(V base, V exp) {
  if constexpr (std::is_signed_v<V>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  V result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<V>(result * base);
    exp = static_cast<V>(exp >> 1);
    base = static_cast<V>(base * base);
  }
  return result;
}

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
      case refkMaximum:
        return same([](V x, V y) {
          if constexpr (is_floating_v<T>) {
            if (std::isnan(x) || std::isnan(y)) return x + y;
          }
          return x > y ? x : y;
        });
      case refkMinimum:
        return same([](V x, V y) {
          if constexpr (is_floating_v<T>) {
            if (std::isnan(x) || std::isnan(y)) return x + y;
          }
          return x < y ? x : y;
        });
      case refkRemainder: return same([](V x, V y) { return python_mod(x, y); });
      case refkDivFloor: return same([](V x, V y) { return floor_divide(x, y); });
      default: break;
    }
    if constexpr (is_integral_v<T>) {
      const V alpha = static_cast<V>(alpha_s.i);
      switch (op) {
        case refkAdd:
          if (alpha == V(1)) return same([](V x, V y) { return V(x + y); });
          return same([alpha](V x, V y) { return V(x + alpha * y); });
        case refkSub: return same([alpha](V x, V y) { return V(x - alpha * y); });
        case refkDivTrunc:
          return same([](V x, V y) {
            if (y == 0) {
              g_zero_division.store(true, std::memory_order_relaxed);
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(-x);
            }
            return V(x / y);
          });
        case refkFmod:
          return same([](V x, V y) {
            if (y == 0) {
              g_zero_division.store(true, std::memory_order_relaxed);
              return V(0);
            }
            if constexpr (std::is_signed_v<V>) {
              if (y == V(-1)) return V(0);
            }
            return V(x % y);
          });
        case refkPow: return same([](V x, V y) { return int_pow(x, y); });
        case refkBitwiseAnd: return same([](V x, V y) { return V(x & y); });
        case refkBitwiseOr: return same([](V x, V y) { return V(x | y); });
        case refkBitwiseXor: return same([](V x, V y) { return V(x ^ y); });
        case refkLshift:
          return same([](V x, V y) {
            using U = std::make_unsigned_t<V>;
            if (y < 0 || y >= V(sizeof(V) * 8)) return V(0);
            return static_cast<V>(static_cast<U>(x) << y);
          });
        case refkRshift:
          return same([](V x, V y) {
            const V bits = V(sizeof(V) * 8);
            if (y < 0 || y >= bits) {
              if constexpr (std::is_signed_v<V>) return V(x >> (bits - 1));
              return V(0);
            }
            return V(x >> y);
          });
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
        case refkPow:
          return same([](V x, V y) {
            if (y == V(2)) return x * x;
            return std::pow(x, y);
          });
        case refkAtan2: return same([](V x, V y) { return std::atan2(x, y); });
        case refkHypot: return same([](V x, V y) { return std::hypot(x, y); });
        case refkCopysign: return same([](V x, V y) { return std::copysign(x, y); });
        case refkFmax: return same([](V x, V y) { return std::fmax(x, y); });
        case refkFmin: return same([](V x, V y) { return std::fmin(x, y); });
        case refkXlogy:
          return same([](V x, V y) {
            if (std::isnan(y)) return y;
            if (x == V(0)) return V(0);
            return x * std::log(y);
          });
        case refkLogaddexp:
          return same([](V x, V y) {
            if (std::isinf(x) && x == y) return x;
            const V m = std::max(x, y);
            return m + std::log1p(std::exp(-std::abs(x - y)));
          });
        default: return unsupported("binary", a.dtype);
      }
    }
  }
}

template <class T>
refkStatus copy_from(int threads, const refkTensor& dst, const refkTensor& src) {
  const refkTensor* ops[2] = {&dst, &src};
  const Loop<2> loop(ops);
  return dispatch(dst.dtype, [&](auto tag) -> refkStatus {
    using D = typename decltype(tag)::type;
    if constexpr (std::is_same_v<D, T>) {
      loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
        if (s[0] == static_cast<int64_t>(sizeof(T)) && s[1] == static_cast<int64_t>(sizeof(T))) {
          std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(T));
          return;
        }
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], sizeof(T));
      });
    } else {
      typed_rows<D, T, 1>(loop, threads, [](C<T> v) { return v; });
    }
    return refkSuccess;
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkCopy(const refkContext* ctx, const refkTensor* dst, const refkTensor* src) {
  return guarded("copy", [&] {
    if (auto s = check_shapes("copy", {dst, src})) return s;
    const Access access({dst, src});
    return dispatch(src->dtype, [&](auto tag) { return copy_from<typename decltype(tag)::type>(ctx->num_threads, *dst, *src); });
  });
}

refkStatus refkFill(const refkContext* ctx, const refkTensor* dst, refkScalar value) {
  return guarded("fill", [&] {
    const Access access({dst});
    const refkTensor* ops[1] = {dst};
    const Loop<1> loop(ops);
    return dispatch(dst->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      T v;
      if constexpr (is_floating_v<T>) {
        v = store<T>(value.f);
      } else if constexpr (std::is_same_v<T, bool>) {
        v = value.i != 0 || value.f != 0;
      } else {
        v = static_cast<T>(value.i);
      }
      loop.run(ctx->num_threads, [&](char* const* p, const int64_t* s, int64_t n) {
        if (s[0] == static_cast<int64_t>(sizeof(T))) {
          T* o = reinterpret_cast<T*>(p[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = v;
          return;
        }
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
      });
      return refkSuccess;
    });
  });
}

refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
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

refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                      const refkTensor* b, refkScalar alpha) {
  return guarded("binary", [&] {
    if (auto s = check_shapes("binary", {out, a, b})) return s;
    if (a->dtype != b->dtype) return fail(refkErrorInvalidValue, "binary: inputs must share one dtype");
    const Access access({out, a, b});
    g_zero_division.store(false);
    const refkStatus s = dispatch(a->dtype, [&](auto tag) {
      return binary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
    });
    if (s == refkSuccess && g_zero_division.load()) return fail(refkErrorInvalidValue, "ZeroDivisionError");
    return s;
  });
}

refkStatus refkWhere(const refkContext* ctx, const refkTensor* out, const refkTensor* cond, const refkTensor* a,
                     const refkTensor* b) {
  return guarded("where", [&] {
    if (auto s = check_shapes("where", {out, cond, a, b})) return s;
    if (cond->dtype != refkBool || a->dtype != out->dtype || b->dtype != out->dtype) {
      return fail(refkErrorInvalidValue, "where: bool condition and one value dtype expected");
    }
    const Access access({out, cond, a, b});
    const refkTensor* ops[4] = {out, cond, a, b};
    const Loop<4> loop(ops);
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      loop.run(ctx->num_threads, [&](char* const* p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
          *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * s[c ? 2 : 3]);
        }
      });
      return refkSuccess;
    });
  });
}

refkStatus refkClamp(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* lo,
                     const refkTensor* hi) {
  return guarded("clamp", [&] {
    const bool has_lo = lo->data != nullptr, has_hi = hi->data != nullptr;
    // An absent bound reads the input again (never selected).
    const refkTensor* l = has_lo ? lo : in;
    const refkTensor* h = has_hi ? hi : in;
    if (auto s = check_shapes("clamp", {out, in, l, h})) return s;
    if (in->dtype != out->dtype || l->dtype != out->dtype || h->dtype != out->dtype) {
      return fail(refkErrorInvalidValue, "clamp: operands must share the output's dtype");
    }
    const Access access({out, in, l, h});
    const refkTensor* ops[4] = {out, in, l, h};
    const Loop<4> loop(ops);
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      typed_rows<T, T, 3>(loop, ctx->num_threads, [has_lo, has_hi](C<T> x, C<T> a, C<T> b) {
        if constexpr (is_floating_v<T>) {
          if (std::isnan(x)) return x;
          if (has_lo && std::isnan(a)) return a;
          if (has_hi && std::isnan(b)) return b;
        }
        if (has_lo && x < a) x = a;
        if (has_hi && x > b) x = b;
        return x;
      });
      return refkSuccess;
    });
  });
}

}  // extern "C"
