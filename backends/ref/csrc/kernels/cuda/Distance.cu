// cdist and pdist of the CUDA reference library: a thread per output (one
// row pair), each summing common/Distance.h's distance in double along the
// rows in order, as the CPU library does, so both devices give every
// output the same value.
#include "kernels/common/Distance.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

struct Three {
  int64_t s0, s1, s2;
};
Three three_of(const refkTensor& t) { return Three{t.strides[0], t.strides[1], t.strides[2]}; }

template <class T>
__global__ void cdist_kernel(int64_t B, int64_t P, int64_t R, int64_t M, T* out, Three so, const T* x1, Three s1,
                             const T* x2, Three s2, double p) {
  const int64_t total = B * P * R;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t j = e % R, i = (e / R) % P, b = e / (R * P);
    const double d = M == 0 ? 0.0
                            : refk::dist::distance(x1 + b * s1.s0 + i * s1.s1, s1.s2, x2 + b * s2.s0 + j * s2.s1,
                                                   s2.s2, M, p);
    out[b * so.s0 + i * so.s1 + j * so.s2] = static_cast<T>(d);
  }
}

template <class T>
__global__ void pdist_kernel(int64_t total, int64_t N, int64_t M, T* out, int64_t os, const T* x, int64_t xs0,
                             int64_t xs1, double p) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    int64_t i, j;
    refk::dist::pdist_pair(e, N, i, j);
    const double d = M == 0 ? 0.0 : refk::dist::distance(x + i * xs0, xs1, x + j * xs0, xs1, M, p);
    out[e * os] = static_cast<T>(d);
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkCdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x1,
                                const refkTensor* x2, double p) {
  if (auto s = checked(refk::check::cdist(*out, *x1, *x2))) return s;
  const int64_t total = numel(*out);
  if (total == 0) return refkSuccess;
  return dispatch_floating<refk::Floating::no_half>("cdist", out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cdist_kernel<T><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
        out->sizes[0], out->sizes[1], out->sizes[2], x1->sizes[2], static_cast<T*>(out->data), three_of(*out),
        static_cast<const T*>(x1->data), three_of(*x1), static_cast<const T*>(x2->data), three_of(*x2), p);
    return launched("cdist");
  });
}

extern "C" refkStatus refkPdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x, double p) {
  if (auto s = checked(refk::check::pdist(*out, *x))) return s;
  const int64_t total = numel(*out);
  if (total == 0) return refkSuccess;
  return dispatch_floating<refk::Floating::no_half>("pdist", out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pdist_kernel<T><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
        total, x->sizes[0], x->sizes[1], static_cast<T*>(out->data), out->strides[0], static_cast<const T*>(x->data),
        x->strides[0], x->strides[1], p);
    return launched("pdist");
  });
}
