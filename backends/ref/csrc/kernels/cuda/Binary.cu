// Binary elementwise kernels of the CUDA reference library: one kernel per
// dtype and form (same dtype, bool out), the op the table's uniform switch
// (Note [Pointwise op tables] in common/UnaryOps.h); which ops exist and
// each element's numerics are common/BinaryOps.h's, shared with the CPU
// library. Integer division by zero raises as on the CPU
// device: the kernel sets a device flag, and the host reads it back (one
// stream sync, only for integer division and modulo).
#include "kernels/common/BinaryOps.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

__device__ int g_zero_division;

// Records an integer division by zero for the host to read back.
struct ZeroDivision {
  __device__ void operator()() const { g_zero_division = 1; }
};

// One op of the table (common/BinaryOps.h), chosen per element by the
// table's switch; PREDICATE: the kernel's form (bool out or the inputs' dtype).
template <class T, bool PREDICATE>
struct Binary {
  refkBinaryOp op;
  refkScalar alpha;
  __device__ std::conditional_t<PREDICATE, bool, opmath_t<T>> operator()(opmath_t<T> x, opmath_t<T> y) const {
    std::conditional_t<PREDICATE, bool, opmath_t<T>> r{};
    refk::binary::with_fn<T, ZeroDivision>(op, alpha, [&](auto fn) {
      if constexpr (decltype(fn)::predicate == PREDICATE) r = fn(x, y);
    });
    return r;
  }
};

// refkTernary's ops; the weight of a scalar lerp is a kernel argument.
template <class T>
struct Ternary {
  refkTernaryOp op;
  opmath_t<T> s;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> p, opmath_t<T> q) const {
    if constexpr (is_floating_v<T>) {
      switch (op) {
        case refkAddcdiv: return refk::scalar::addcdiv(x, p, q, s);
        case refkLerp: return refk::scalar::lerp(x, p, q);
        default: break;
      }
    }
    return refk::scalar::addcmul(x, p, q, s);
  }
};
template <class T>
struct LerpScalar {
  opmath_t<T> w;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> e) const { return refk::scalar::lerp(x, e, w); }
};

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                                 const refkTensor* b, refkScalar alpha) {
  if (auto s = check_shapes("binary", {out, a, b})) return s;
  if (auto s = checked(refk::check::binary(op, *out, *a, *b))) return s;
  const bool check_zero = refk::binary::may_divide_by_zero(op, a->dtype) && numel(*out) > 0;
  int* flag = nullptr;
  if (check_zero) {
    if (cudaGetSymbolAddress(reinterpret_cast<void**>(&flag), g_zero_division) != cudaSuccess ||
        cudaMemsetAsync(flag, 0, sizeof(int), stream_of(ctx)) != cudaSuccess) {
      return launched("binary");
    }
  }
  const refkTensor* ops[3] = {out, a, b};
  const refkStatus s = dispatch(a->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (refk::binary::is_predicate(op)) return typed<bool, T, 2>("binary", ctx, ops, Binary<T, true>{op, alpha});
    return typed<T, T, 2>("binary", ctx, ops, Binary<T, false>{op, alpha});
  });
  if (s != refkSuccess || !check_zero) return s;
  int hit = 0;
  if (cudaMemcpyAsync(&hit, flag, sizeof(int), cudaMemcpyDeviceToHost, stream_of(ctx)) != cudaSuccess ||
      cudaStreamSynchronize(stream_of(ctx)) != cudaSuccess) {
    return launched("binary");
  }
  return hit != 0 ? fail(refkErrorInvalidValue, "ZeroDivisionError") : refkSuccess;
}

extern "C" refkStatus refkTernary(const refkContext* ctx, refkTernaryOp op, const refkTensor* out,
                                  const refkTensor* self, const refkTensor* a, const refkTensor* b,
                                  refkScalar value) {
  if (auto s = checked(refk::check::ternary(op, *out, *self, *a, *b))) return s;
  return dispatch(out->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("ternary", out->dtype);
    } else {
      using V = opmath_t<T>;
      if constexpr (is_floating_v<T>) {
        if (op == refkLerp && b->data == nullptr) {
          const refkTensor* ops[3] = {out, self, a};
          return typed<T, T, 2>("ternary", ctx, ops, LerpScalar<T>{V(value.f)});
        }
      }
      const refkTensor* ops[4] = {out, self, a, b};
      return typed<T, T, 3>("ternary", ctx, ops, Ternary<T>{op, is_floating_v<T> ? V(value.f) : V(value.i)});
    }
  });
}
