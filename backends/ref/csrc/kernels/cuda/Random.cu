// Random numbers, dropout and arange of the CUDA reference library: a
// thread per element. The generator (Philox-4x32-10), its counter layout
// and each element's value are common/Philox.h's, shared with the CPU
// library, so uniform and Bernoulli fills and dropout masks equal the CPU
// device's bit for bit.
#include "kernels/common/Philox.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

// Row-major position -> element offset of a descriptor.
struct Walk {
  int ndim;
  int64_t sizes[REFK_MAX_DIMS];
  int64_t strides[3][REFK_MAX_DIMS];
  __device__ int64_t at(int64_t i, int k) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (i % sizes[d]) * strides[k][d];
      i /= sizes[d];
    }
    return off;
  }
};

Walk walk_of(std::initializer_list<const refkTensor*> ts) {
  Walk w{};
  const refkTensor& shape = **ts.begin();
  w.ndim = shape.ndim;
  for (int d = 0; d < shape.ndim; ++d) w.sizes[d] = shape.sizes[d];
  int k = 0;
  for (const refkTensor* t : ts) {
    for (int d = 0; d < shape.ndim; ++d) w.strides[k][d] = t->strides[d];
    ++k;
  }
  return w;
}

template <class T>
__global__ void random_kernel(Walk w, int64_t n, T* out, refkDistribution dist, uint64_t seed, uint64_t offset,
                              double a, double b) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = refk::random_value<T>(dist, seed, offset, i, a, b);
    out[w.at(i, 0)] = store<T>(v);
  }
}

template <class T>
__global__ void dropout_kernel(Walk w, int64_t n, T* out, bool* mask, const T* in, double keep, double scale,
                               uint64_t seed, uint64_t offset) {
  using V = opmath_t<T>;
  const V s = static_cast<V>(scale);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const refk::Philox r(seed, offset + static_cast<uint64_t>(i / 4));
    const bool kept = refk::dropout_kept(r, i, keep);
    mask[w.at(i, 1)] = kept;
    out[w.at(i, 0)] = store<T>(load(in[w.at(i, 2)]) * V(kept) * s);
  }
}

template <class T>
__global__ void arange_kernel(int64_t n, int64_t stride_out, T* out, refkScalar start, refkScalar step) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (is_floating_v<T>) {
      using A = std::conditional_t<is_half_v<T>, float, double>;
      out[i * stride_out] = store<T>(static_cast<A>(start.f) + static_cast<A>(step.f) * static_cast<A>(i));
    } else {
      const uint64_t a = static_cast<uint64_t>(start.i), s = static_cast<uint64_t>(step.i);
      out[i * stride_out] = static_cast<T>(a + s * static_cast<uint64_t>(i));
    }
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkRandom(const refkContext* ctx, refkDistribution dist, const refkTensor* out, uint64_t seed,
                      uint64_t offset, double a, double b) {
  const int64_t n = numel(*out);
  if (n == 0) return refkSuccess;
  return dispatch(out->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (!is_floating_v<T>) {
      if (dist != refkBernoulli) return unsupported("random", out->dtype);
    }
    random_kernel<T><<<blocks_for(n), 256, 0, stream_of(ctx)>>>(walk_of({out}), n, static_cast<T*>(out->data), dist,
                                                                seed, offset, a, b);
    return launched("random");
  });
}

refkStatus refkDropout(const refkContext* ctx, const refkTensor* out, const refkTensor* mask, const refkTensor* in,
                       double keep, double scale, uint64_t seed, uint64_t offset) {
  if (auto s = check_shapes("dropout", {out, mask, in})) return s;
  if (auto s = checked(refk::check::dropout(*out, *mask, *in))) return s;
  const int64_t n = numel(*out);
  if (n == 0) return refkSuccess;
  return dispatch(out->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (!is_floating_v<T>) {
      return unsupported("dropout", out->dtype);
    } else {
      dropout_kernel<T><<<blocks_for(n), 256, 0, stream_of(ctx)>>>(
          walk_of({out, mask, in}), n, static_cast<T*>(out->data), static_cast<bool*>(mask->data),
          static_cast<const T*>(in->data), keep, scale, seed, offset);
      return launched("dropout");
    }
  });
}

refkStatus refkArange(const refkContext* ctx, const refkTensor* out, refkScalar start, refkScalar step) {
  if (out->ndim != 1) return fail(refkErrorInvalidValue, "arange: out must be 1-d");
  const int64_t n = out->sizes[0];
  if (n == 0) return refkSuccess;
  return dispatch(out->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("arange", out->dtype);
    } else {
      arange_kernel<T><<<blocks_for(n), 256, 0, stream_of(ctx)>>>(n, out->strides[0], static_cast<T*>(out->data),
                                                                  start, step);
      return launched("arange");
    }
  });
}

}  // extern "C"
