// The embedding's dense gradient in the CUDA reference library. As in the
// CPU library, whoever owns a weight row walks all indices in order, so
// every row sums its contributions in ascending index order and results are
// deterministic (no atomics on values): a block owns a range of rows and a
// thread one column of them, neighbouring threads neighbouring columns.
// Each addition is common/Loss.h's embedding_add, shared with the CPU
// library. (The lookup itself is refkIndexSelect.)
#include "kernels/common/Loss.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace loss = refk::loss;

constexpr int kColumns = 128;

template <class I>
__global__ void count_kernel(int64_t n, const I* idx, int64_t is, int64_t rows, unsigned long long* counts) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t k = static_cast<int64_t>(idx[i * is]);
    if (k >= 0 && k < rows) atomicAdd(counts + k, 1ull);
  }
}

struct Grad {
  int64_t rows, dim, n, rows_per;
  int64_t gws0, gws1, gs0, gs1, is;
  int64_t padding_idx;
};

template <class T, class I>
__global__ void embedding_backward_kernel(Grad p, T* gw, const T* g, const I* idx, const unsigned long long* counts,
                                          int* bad) {
  using V = opmath_t<T>;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= p.dim) return;
  const int64_t k0 = static_cast<int64_t>(blockIdx.y) * p.rows_per;
  const int64_t k1 = k0 + p.rows_per < p.rows ? k0 + p.rows_per : p.rows;
  for (int64_t k = k0; k < k1; ++k) gw[k * p.gws0 + j * p.gws1] = store<T>(V(0));
  for (int64_t i = 0; i < p.n; ++i) {
    const int64_t k = static_cast<int64_t>(idx[i * p.is]);
    if (k < 0 || k >= p.rows) {
      *bad = 1;
      continue;
    }
    if (k < k0 || k >= k1 || k == p.padding_idx) continue;
    const V scale = static_cast<V>(
        loss::embedding_scale(counts != nullptr, counts != nullptr ? static_cast<int64_t>(counts[k]) : 1));
    T& acc = gw[k * p.gws0 + j * p.gws1];
    acc = loss::embedding_add<T>(acc, g[i * p.gs0 + j * p.gs1], scale);
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkEmbeddingBackward(const refkContext* ctx, const refkTensor* grad_weight,
                                            const refkTensor* grad, const refkTensor* indices, int64_t padding_idx,
                                            int32_t scale_grad_by_freq) {
  if (auto s = checked(refk::check::embedding_backward(*grad_weight, *grad, *indices))) return s;
  const int64_t rows = grad_weight->sizes[0], dim = grad_weight->sizes[1], n = indices->sizes[0];
  if (rows * dim == 0) {
    // Nothing to write, but every index is still checked.
    std::vector<int64_t> v;
    if (auto s = index_values("embedding_backward", *indices, v)) return s;
    for (const int64_t k : v) {
      if (k < 0 || k >= rows) return index_error(k, 0, rows);
    }
    return refkSuccess;
  }
  const cudaStream_t stream = stream_of(ctx);
  ErrorFlag bad(stream);
  if (auto s = bad.init("embedding_backward")) return s;
  // Rows split so that about 16k threads run; every block walks all indices.
  const int64_t col_blocks = (dim + kColumns - 1) / kColumns;
  int64_t parts = 16384 / (col_blocks * kColumns);
  parts = parts < 1 ? 1 : (parts > rows ? rows : (parts > 65535 ? 65535 : parts));
  Grad p{rows, dim, n, (rows + parts - 1) / parts, grad_weight->strides[0], grad_weight->strides[1],
         grad->strides[0], grad->strides[1], indices->strides[0], padding_idx};
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>((rows + p.rows_per - 1) / p.rows_per));
  unsigned long long* counts = nullptr;
  const refkStatus launch = dispatch(grad->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return dispatch_index(indices->dtype, [&](auto itag) -> refkStatus {
      using I = typename decltype(itag)::type;
      const I* idx = static_cast<const I*>(indices->data);
      if (scale_grad_by_freq != 0 && n > 0) {
        cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&counts), rows * sizeof(unsigned long long), stream);
        if (e == cudaSuccess) e = cudaMemsetAsync(counts, 0, rows * sizeof(unsigned long long), stream);
        if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("embedding_backward: ") + cudaGetErrorString(e));
        count_kernel<I><<<blocks_for(n), kBlockThreads, 0, stream>>>(n, idx, p.is, rows, counts);
        if (auto s = launched("embedding_backward")) return s;
      }
      embedding_backward_kernel<T, I><<<grid, kColumns, 0, stream>>>(p, static_cast<T*>(grad_weight->data),
                                                                      static_cast<const T*>(grad->data), idx, counts,
                                                                      bad.get());
      return launched("embedding_backward");
    });
  });
  if (counts != nullptr) cudaFreeAsync(counts, stream);
  return bad.finish("embedding_backward", launch, "an index", [&] {
    std::vector<int64_t> v;
    if (auto s = index_values("embedding_backward", *indices, v)) return s;
    for (const int64_t k : v) {
      if (k < 0 || k >= rows) return index_error(k, 0, rows);
    }
    return refkSuccess;
  });
}
