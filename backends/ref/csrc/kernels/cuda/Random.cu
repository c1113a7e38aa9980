// Random numbers, dropout, arange and randperm of the CUDA reference
// library: a thread per element (randperm: its keys, then a bitonic sort of
// the (key, index) pairs). The generator (Philox-4x32-10), its counter layout
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

// ---- randperm (Note [Random permutations by sorting keys] in cpu/Random.cpp)

// Element i's key, padded to a power of two with keys after every real one.
__global__ void randperm_keys_kernel(int64_t n, int64_t padded, uint64_t seed, uint64_t offset, uint64_t* keys,
                                     int64_t* index) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < padded; i += stride) {
    if (i < n) {
      const refk::Philox r(seed, offset + static_cast<uint64_t>(i / 2));
      keys[i] = refk::randperm_key(r, i);
      index[i] = i;
    } else {
      keys[i] = UINT64_MAX;
      index[i] = INT64_MAX;
    }
  }
}

// One compare-exchange step of a bitonic sort of (key, index) pairs, which
// are all distinct, so the order is the CPU library's.
__global__ void bitonic_step_kernel(int64_t padded, int64_t j, int64_t k, uint64_t* keys, int64_t* index) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < padded; i += stride) {
    const int64_t l = i ^ j;
    if (l <= i) continue;
    const bool up = (i & k) == 0;
    const bool greater = keys[i] != keys[l] ? keys[i] > keys[l] : index[i] > index[l];
    if (greater == up) {
      const uint64_t tk = keys[i];
      keys[i] = keys[l];
      keys[l] = tk;
      const int64_t ti = index[i];
      index[i] = index[l];
      index[l] = ti;
    }
  }
}

template <class T>
__global__ void randperm_write_kernel(int64_t n, const int64_t* index, T* out, int64_t stride_out) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i * stride_out] = store<T>(index[i]);
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

refkStatus refkRandperm(const refkContext* ctx, const refkTensor* out, uint64_t seed, uint64_t offset) {
  if (out->ndim != 1) return fail(refkErrorInvalidValue, "randperm: out must be 1-d");
  const int64_t n = out->sizes[0];
  if (n == 0) return refkSuccess;
  if (out->dtype == refkBool) return unsupported("randperm", out->dtype);
  int64_t padded = 1;
  while (padded < n) padded *= 2;
  const cudaStream_t st = stream_of(ctx);
  uint64_t* keys = nullptr;
  const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&keys), static_cast<size_t>(padded) * 16, st);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("randperm: ") + cudaGetErrorString(e));
  int64_t* index = reinterpret_cast<int64_t*>(keys + padded);
  const unsigned blocks = blocks_for(padded);
  randperm_keys_kernel<<<blocks, 256, 0, st>>>(n, padded, seed, offset, keys, index);
  refkStatus s = launched("randperm");
  for (int64_t k = 2; s == refkSuccess && k <= padded; k *= 2) {
    for (int64_t j = k / 2; s == refkSuccess && j > 0; j /= 2) {
      bitonic_step_kernel<<<blocks, 256, 0, st>>>(padded, j, k, keys, index);
      s = launched("randperm");
    }
  }
  if (s == refkSuccess) {
    s = dispatch(out->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      randperm_write_kernel<T><<<blocks_for(n), 256, 0, st>>>(n, index, static_cast<T*>(out->data), out->strides[0]);
      return launched("randperm");
    });
  }
  cudaFreeAsync(keys, st);
  return s;
}

}  // extern "C"
