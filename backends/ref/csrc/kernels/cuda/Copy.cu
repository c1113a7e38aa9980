// Copies, fills, where and clamp of the CUDA reference library, all on the
// shared elementwise launcher (Common.cuh). A same-dtype copy between dense
// operands of one layout is one cudaMemcpyAsync.
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

template <class D, class S>
struct Cast {
  __device__ void operator()(char* const (&p)[2]) const {
    if constexpr (std::is_same_v<D, S>) {
      *reinterpret_cast<D*>(p[0]) = *reinterpret_cast<const S*>(p[1]);
    } else {
      *reinterpret_cast<D*>(p[0]) = store<D>(load(*reinterpret_cast<const S*>(p[1])));
    }
  }
};

template <class T>
struct Set {
  T v;
  __device__ void operator()(char* const (&p)[1]) const { *reinterpret_cast<T*>(p[0]) = v; }
};

template <class T>
struct Select {
  __device__ void operator()(char* const (&p)[4]) const {
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(p[c ? 2 : 3]);
  }
};

template <class T>
struct ClampF {
  bool has_lo, has_hi;
  __device__ opmath_t<T> operator()(opmath_t<T> x, opmath_t<T> a, opmath_t<T> b) const {
    return refk::scalar::clamp(x, a, b, has_lo, has_hi);
  }
};

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkCopy(const refkContext* ctx, const refkTensor* dst, const refkTensor* src) {
  if (auto s = check_shapes("copy", {dst, src})) return s;
  const refkTensor* ops[2] = {dst, src};
  if (dst->dtype == src->dtype) {
    const Offsets<2> o = plan(ops);
    if (o.numel == 0) return refkSuccess;
    if (o.contiguous) {
      const cudaError_t e = cudaMemcpyAsync(dst->data, src->data, static_cast<size_t>(o.numel * itemsize(dst->dtype)),
                                            cudaMemcpyDeviceToDevice, stream_of(ctx));
      if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("copy: ") + cudaGetErrorString(e));
      return refkSuccess;
    }
  }
  return dispatch(src->dtype, [&](auto s_tag) {
    using S = typename decltype(s_tag)::type;
    return dispatch(dst->dtype, [&](auto d_tag) {
      using D = typename decltype(d_tag)::type;
      return for_each<2>("copy", ctx, ops, Cast<D, S>{});
    });
  });
}

refkStatus refkFill(const refkContext* ctx, const refkTensor* dst, refkScalar value) {
  const refkTensor* ops[1] = {dst};
  return dispatch(dst->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = from_scalar<T>(value);
    return for_each<1>("fill", ctx, ops, Set<T>{v});
  });
}

refkStatus refkWhere(const refkContext* ctx, const refkTensor* out, const refkTensor* cond, const refkTensor* a,
                     const refkTensor* b) {
  if (auto s = check_shapes("where", {out, cond, a, b})) return s;
  if (auto s = checked(refk::check::where(*out, *cond, *a, *b))) return s;
  const refkTensor* ops[4] = {out, cond, a, b};
  return dispatch(out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return for_each<4>("where", ctx, ops, Select<T>{});
  });
}

refkStatus refkClamp(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* lo,
                     const refkTensor* hi) {
  const bool has_lo = lo->data != nullptr, has_hi = hi->data != nullptr;
  const refkTensor* l = has_lo ? lo : in;
  const refkTensor* h = has_hi ? hi : in;
  if (auto s = check_shapes("clamp", {out, in, l, h})) return s;
  if (in->dtype != out->dtype || l->dtype != out->dtype || h->dtype != out->dtype) {
    return fail(refkErrorInvalidValue, "clamp: operands must share the output's dtype");
  }
  const refkTensor* ops[4] = {out, in, l, h};
  return dispatch(out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return typed<T, T, 3>("clamp", ctx, ops, ClampF<T>{has_lo, has_hi});
  });
}

}  // extern "C"
