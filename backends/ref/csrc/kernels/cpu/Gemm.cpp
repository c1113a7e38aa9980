// Matrix multiply of the CPU reference library: C = beta*C + alpha*A@B,
// batched over a leading dim. Rows of C are spread over threads; within a
// row, k-blocks of A's row scale rows of B into a row accumulator, so the
// innermost loop runs along contiguous rows of B and C and vectorizes.
// Accumulates in opmath (float for the half types), as ATen's CPU mm.
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

template <class T>
void gemm_typed(int threads, const refkTensor& c, const refkTensor& a, const refkTensor& b, refkScalar alpha_s,
                refkScalar beta_s) {
  using V = opmath_t<T>;
  const bool batched = c.ndim == 3;
  const int off = batched ? 1 : 0;
  const int64_t batch = batched ? c.sizes[0] : 1;
  const int64_t M = c.sizes[off], N = c.sizes[off + 1], K = a.sizes[off + 1];
  const V alpha = is_floating_v<T> ? V(alpha_s.f) : V(alpha_s.i);
  const V beta = is_floating_v<T> ? V(beta_s.f) : V(beta_s.i);
  const T* A = static_cast<const T*>(a.data);
  const T* B = static_cast<const T*>(b.data);
  T* Cp = static_cast<T*>(c.data);
  const int64_t as0 = a.strides[off], as1 = a.strides[off + 1];
  const int64_t bs0 = b.strides[off], bs1 = b.strides[off + 1];
  const int64_t cs0 = c.strides[off], cs1 = c.strides[off + 1];
  const int64_t ab = batched ? a.strides[0] : 0, bb = batched ? b.strides[0] : 0, cb = batched ? c.strides[0] : 0;
  // B as contiguous rows in opmath, once per batch entry: every row of C reads all of it.
  std::vector<V> packed(static_cast<size_t>(K * N));
  for (int64_t z = 0; z < batch; ++z) {
    const T* Bz = B + z * bb;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j) packed[static_cast<size_t>(k * N + j)] = load(Bz[k * bs0 + j * bs1]);
    }
    parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(K * N, 1)), threads, [&](int64_t i0, int64_t i1) {
      std::vector<V> acc(static_cast<size_t>(N));
      for (int64_t i = i0; i < i1; ++i) {
        std::fill(acc.begin(), acc.end(), V(0));
        const T* Ai = A + z * ab + i * as0;
        for (int64_t k = 0; k < K; ++k) {
          const V aik = load(Ai[k * as1]);
          const V* Bk = packed.data() + k * N;
          V* o = acc.data();
          for (int64_t j = 0; j < N; ++j) o[j] += aik * Bk[j];
        }
        T* Ci = Cp + z * cb + i * cs0;
        for (int64_t j = 0; j < N; ++j) {
          const V prior = beta == V(0) ? V(0) : beta * load(Ci[j * cs1]);
          Ci[j * cs1] = store<T>(prior + alpha * acc[static_cast<size_t>(j)]);
        }
      }
    });
  }
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkGemm(const refkContext* ctx, const refkTensor* c, const refkTensor* a, const refkTensor* b,
                               refkScalar alpha, refkScalar beta) {
  return guarded("gemm", [&] {
    const bool ok = (c->ndim == 2 || c->ndim == 3) && a->ndim == c->ndim && b->ndim == c->ndim &&
                    a->dtype == c->dtype && b->dtype == c->dtype;
    if (!ok) return fail(refkErrorInvalidValue, "gemm: 2-d or 3-d operands of one dtype expected");
    if (numel(*c) == 0) return refkSuccess;
    const Access access({c, a, b});
    return dispatch(c->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("gemm", c->dtype);
      } else {
        gemm_typed<T>(ctx->num_threads, *c, *a, *b, alpha, beta);
        return refkSuccess;
      }
    });
  });
}
