// Matrix multiply of the CUDA reference library: a tiled shared-memory
// kernel of our own (no cuBLAS), C = beta * C + alpha * A @ B over any
// strides, batched over blockIdx.z. Each 16x16 thread block computes a
// 64x64 tile of C, every thread a 4x4 patch, stepping through K in slices
// of 16 staged in shared memory; products accumulate in opmath (float for
// the half types, the dtype itself otherwise, as the CPU library).
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

constexpr int kTile = 64, kSlice = 16, kDim = 16, kPer = kTile / kDim;

struct GemmArgs {
  int64_t M, N, K;
  int64_t as0, as1, bs0, bs1, cs0, cs1, ab, bb, cb;
};

template <class T>
__global__ void gemm_kernel(GemmArgs g, const T* A, const T* B, T* C, opmath_t<T> alpha, opmath_t<T> beta) {
  using V = opmath_t<T>;
  __shared__ V As[kSlice][kTile + 1];
  __shared__ V Bs[kSlice][kTile + 1];
  const int64_t z = blockIdx.z;
  const T* Az = A + z * g.ab;
  const T* Bz = B + z * g.bb;
  T* Cz = C + z * g.cb;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile, col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kDim + tx;
  V acc[kPer][kPer];
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) acc[i][j] = V(0);
  for (int64_t k0 = 0; k0 < g.K; k0 += kSlice) {
    // 256 threads stage 64x16 of A and 16x64 of B (4 elements each).
    for (int e = tid; e < kTile * kSlice; e += kDim * kDim) {
      const int r = e / kSlice, k = e % kSlice;
      const int64_t gr = row0 + r, gk = k0 + k;
      As[k][r] = gr < g.M && gk < g.K ? load(Az[gr * g.as0 + gk * g.as1]) : V(0);
      const int kb = e / kTile, c = e % kTile;
      const int64_t gkb = k0 + kb, gc = col0 + c;
      Bs[kb][c] = gkb < g.K && gc < g.N ? load(Bz[gkb * g.bs0 + gc * g.bs1]) : V(0);
    }
    __syncthreads();
    for (int k = 0; k < kSlice; ++k) {
      V a[kPer], b[kPer];
      for (int i = 0; i < kPer; ++i) a[i] = As[k][ty + i * kDim];
      for (int j = 0; j < kPer; ++j) b[j] = Bs[k][tx + j * kDim];
      for (int i = 0; i < kPer; ++i)
        for (int j = 0; j < kPer; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < kPer; ++i) {
    const int64_t r = row0 + ty + i * kDim;
    if (r >= g.M) continue;
    for (int j = 0; j < kPer; ++j) {
      const int64_t c = col0 + tx + j * kDim;
      if (c >= g.N) continue;
      T* dst = Cz + r * g.cs0 + c * g.cs1;
      const V prior = beta == V(0) ? V(0) : beta * load(*dst);
      *dst = store<T>(prior + alpha * acc[i][j]);
    }
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkGemm(const refkContext* ctx, const refkTensor* c, const refkTensor* a, const refkTensor* b,
                               refkScalar alpha, refkScalar beta) {
  const bool ok = (c->ndim == 2 || c->ndim == 3) && a->ndim == c->ndim && b->ndim == c->ndim &&
                  a->dtype == c->dtype && b->dtype == c->dtype;
  if (!ok) return fail(refkErrorInvalidValue, "gemm: 2-d or 3-d operands of one dtype expected");
  if (numel(*c) == 0) return refkSuccess;
  const bool batched = c->ndim == 3;
  const int off = batched ? 1 : 0;
  GemmArgs g{c->sizes[off], c->sizes[off + 1], a->sizes[off + 1], a->strides[off], a->strides[off + 1],
             b->strides[off], b->strides[off + 1], c->strides[off], c->strides[off + 1],
             batched ? a->strides[0] : 0, batched ? b->strides[0] : 0, batched ? c->strides[0] : 0};
  const int64_t batch = batched ? c->sizes[0] : 1;
  if (batch > 65535) return fail(refkErrorInvalidValue, "gemm: more than 65535 batches");
  const dim3 grid(static_cast<unsigned>((g.N + kTile - 1) / kTile), static_cast<unsigned>((g.M + kTile - 1) / kTile),
                  static_cast<unsigned>(batch));
  return dispatch(c->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("gemm", c->dtype);
    } else {
      using V = opmath_t<T>;
      const V al = is_floating_v<T> ? V(alpha.f) : V(alpha.i);
      const V be = is_floating_v<T> ? V(beta.f) : V(beta.i);
      gemm_kernel<T><<<grid, dim3(kDim, kDim), 0, stream_of(ctx)>>>(g, static_cast<const T*>(a->data),
                                                                     static_cast<const T*>(b->data),
                                                                     static_cast<T*>(c->data), al, be);
      return launched("gemm");
    }
  });
}
