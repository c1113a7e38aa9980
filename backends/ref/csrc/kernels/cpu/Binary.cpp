// Binary elementwise kernels of the CPU reference library: arithmetic,
// division with rounding modes, powers, comparisons, logical and bitwise
// ops. Which ops exist and what an element computes is common/BinaryOps.h's
// table, shared with the CUDA library (Note [Pointwise op tables]); here
// each op becomes a row loop over the loop planner's vectorizable rows.
// Complex add, sub, mul, div, eq and ne are this library's alone (common/Complex.h).
#include "kernels/common/Complex.h"
#include "kernels/common/BinaryOps.h"
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

// One row loop per op of the table (common/BinaryOps.h).
template <class T>
void binary_typed(int threads, refkBinaryOp op, const refkTensor& out, const refkTensor& a, const refkTensor& b,
                  refkScalar alpha) {
  const refkTensor* ops[3] = {&out, &a, &b};
  const Loop<3> loop(ops);
  binary::with_fn<T, ZeroDivision>(op, alpha, [&](auto fn) {
    if constexpr (decltype(fn)::predicate) {
      typed_rows<bool, T, 2>(loop, threads, fn);
    } else {
      typed_rows<T, T, 2>(loop, threads, fn);
    }
  });
}

// Complex operands (Note [Complex dtypes] in RefKernels.h): add and sub
// (alpha real), mul and div (common/Complex.h), all of one complex dtype;
// eq and ne (both parts equal, as c10::complex's ==) write bool.
template <class Z>
refkStatus complex_binary(int threads, refkBinaryOp op, const refkTensor& out, const refkTensor& a,
                          const refkTensor& b, refkScalar alpha_s) {
  using R = decltype(Z{}.re);
  const bool compare = op == refkEq || op == refkNe;
  if (out.dtype != (compare ? refkBool : a.dtype)) {
    return fail(refkErrorInvalidValue, compare ? "binary: comparisons write bool"
                                               : "binary: output dtype must match the inputs'");
  }
  const R alpha = static_cast<R>(alpha_s.f);
  const refkTensor* ops[3] = {&out, &a, &b};
  const Loop<3> loop(ops);
  const auto rows = [&](auto f) {
    using Out = decltype(f(Z{}, Z{}));
    loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
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
    case refkEq: return rows([](Z x, Z y) { return x == y; });
    case refkNe: return rows([](Z x, Z y) { return !(x == y); });
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
    if (auto s = checked(check::binary(op, *out, *a, *b))) return s;
    const Access access({out, a, b});
    if (is_complex(a->dtype)) {
      return dispatch_complex(a->dtype, [&](auto tag) {
        return complex_binary<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
      });
    }
    g_zero_division.store(false);
    const refkStatus s = dispatch(a->dtype, [&](auto tag) {
      binary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *a, *b, alpha);
      return refkSuccess;
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
