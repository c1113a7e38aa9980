// Copies, fills, where and clamp of the CUDA reference library, all on the
// shared elementwise launcher (Common.cuh); copies and fills take the
// storage dtypes too (Note [Storage dtypes]). A same-dtype copy between dense
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

// One thread per element of a tril/triu: its matrix row and column from
// the row-major index, the element copied or zeroed as bytes (any dtype).
struct TriangleArgs {
  refkTensor out, in;
  int64_t diagonal;
  bool upper;
  int64_t item;
};

__device__ inline int64_t element_offset(const refkTensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

__global__ void triangle_kernel(TriangleArgs a, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int nd = a.out.ndim;
  const int64_t cols = a.out.sizes[nd - 1], rows = a.out.sizes[nd - 2];
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int64_t j = k % cols, i = (k / cols) % rows;
    char* po = static_cast<char*>(a.out.data) + element_offset(a.out, k) * a.item;
    const char* pi = static_cast<const char*>(a.in.data) + element_offset(a.in, k) * a.item;
    const bool keep = refk::triangle_keeps(i, j, a.diagonal, a.upper);
    for (int64_t b = 0; b < a.item; ++b) po[b] = keep ? pi[b] : 0;
  }
}

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
  return refk::dispatch_storage(src->dtype, [&](auto s_tag) {
    using S = typename decltype(s_tag)::type;
    return refk::dispatch_storage(dst->dtype, [&](auto d_tag) {
      using D = typename decltype(d_tag)::type;
      return for_each<2>("copy", ctx, ops, Cast<D, S>{});
    });
  });
}

refkStatus refkFill(const refkContext* ctx, const refkTensor* dst, refkScalar value) {
  const refkTensor* ops[1] = {dst};
  return refk::dispatch_storage(dst->dtype, [&](auto tag) {
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
  const refk::check::ClampOperands bounds = refk::check::clamp_operands(*in, *lo, *hi);
  if (auto s = checked(refk::check::clamp(*out, *in, bounds))) return s;
  const refkTensor* l = bounds.lo;
  const refkTensor* h = bounds.hi;
  const refkTensor* ops[4] = {out, in, l, h};
  return dispatch(out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return typed<T, T, 3>("clamp", ctx, ops, ClampF<T>{has_lo, has_hi});
  });
}

refkStatus refkTriangle(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int64_t diagonal,
                        int32_t upper) {
  if (auto s = check_shapes("triangle", {out, in})) return s;
  if (out->ndim < 2) return fail(refkErrorInvalidValue, "triangle: operands need at least 2 dims");
  if (out->dtype != in->dtype) return fail(refkErrorInvalidValue, "triangle: out and in must share one dtype");
  int64_t n = 1;
  for (int d = 0; d < out->ndim; ++d) n *= out->sizes[d];
  if (n == 0) return refkSuccess;
  const TriangleArgs a{*out, *in, diagonal, upper != 0, itemsize(out->dtype)};
  triangle_kernel<<<blocks_for(n), 256, 0, stream_of(ctx)>>>(a, n);
  return launched("triangle");
}

}  // extern "C"
