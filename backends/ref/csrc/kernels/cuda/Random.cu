// Random numbers, dropout and arange of the CUDA reference library. The
// generator is the CPU library's Philox-4x32-10 with the same counter
// layout (kernels/cpu/Random.cpp, Note [Philox offsets] in the runtime):
// element i (row-major) of a uniform or Bernoulli fill reads word i % 4 of
// counter offset + i / 4, of a normal fill words 2 * (i % 2) and
// 2 * (i % 2) + 1 of counter offset + i / 2. A thread per element computes
// exactly the CPU device's words, so uniform and Bernoulli fills and
// dropout masks equal the CPU device's bit for bit; normal fills go
// through log/cos/sqrt in double, where CUDA's and glibc's last bits may
// differ before rounding to the output dtype.
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

struct Philox {
  uint32_t w[4];
  __device__ Philox(uint64_t seed, uint64_t counter) {
    uint32_t c[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0};
    uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
      const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0];
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1];
      c[0] = n0;
      c[1] = static_cast<uint32_t>(p1);
      c[2] = n2;
      c[3] = static_cast<uint32_t>(p0);
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; ++i) w[i] = c[i];
  }
};

__device__ inline double unit(uint32_t x) { return static_cast<double>(x) * 0x1.0p-32; }

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
    double v;
    if (dist == refkNormal) {
      const Philox r(seed, offset + static_cast<uint64_t>(i / 2));
      const int j = static_cast<int>(i % 2) * 2;
      const double u1 = (static_cast<double>(r.w[j]) + 1.0) * 0x1.0p-32;
      const double u2 = unit(r.w[j + 1]);
      v = a + b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    } else {
      const Philox r(seed, offset + static_cast<uint64_t>(i / 4));
      const double u = unit(r.w[i % 4]);
      if (dist == refkBernoulli) {
        v = u < a ? 1.0 : 0.0;
      } else {
        v = a + (b - a) * u;
        if constexpr (is_floating_v<T>) {
          if (static_cast<double>(load(store<T>(v))) >= b && b > a) v = a;
        }
      }
    }
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
    const Philox r(seed, offset + static_cast<uint64_t>(i / 4));
    const bool kept = unit(r.w[i % 4]) < keep;
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
  if (mask->dtype != refkBool || out->dtype != in->dtype) {
    return fail(refkErrorInvalidValue, "dropout: a bool mask and one dtype for out and in expected");
  }
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
