// Factory fills of the CPU reference library that are not a constant
// (refkFill) or random (Random.cpp): arange. Element i depends only on i, so
// threads (or GPU threads) fill any range independently.
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

// ATen's CPU arange computes start + step * i in at::acc_type<T, false>:
// double for float/double, float for the half types, int64 for integers
// (which then wrap to the dtype).
template <class T>
void arange_typed(int threads, const refkTensor& out, refkScalar start, refkScalar step) {
  const int64_t n = out.sizes[0], stride = out.strides[0];
  T* o = static_cast<T*>(out.data);
  parallel_for(n, kGrain, threads, [&](int64_t i0, int64_t i1) {
    if constexpr (is_floating_v<T>) {
      using A = std::conditional_t<is_half_v<T>, float, double>;
      const A a = static_cast<A>(start.f), s = static_cast<A>(step.f);
      for (int64_t i = i0; i < i1; ++i) o[i * stride] = store<T>(a + s * static_cast<A>(i));
    } else {
      // Two's-complement wrap without signed overflow.
      const uint64_t a = static_cast<uint64_t>(start.i), s = static_cast<uint64_t>(step.i);
      for (int64_t i = i0; i < i1; ++i) o[i * stride] = static_cast<T>(a + s * static_cast<uint64_t>(i));
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkArange(const refkContext* ctx, const refkTensor* out, refkScalar start, refkScalar step) {
  return guarded("arange", [&] {
    if (out->ndim != 1) return fail(refkErrorInvalidValue, "arange: out must be 1-d");
    if (out->sizes[0] == 0) return refkSuccess;
    const Access access({out});
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("arange", out->dtype);
      } else {
        arange_typed<T>(ctx->num_threads, *out, start, step);
        return refkSuccess;
      }
    });
  });
}
