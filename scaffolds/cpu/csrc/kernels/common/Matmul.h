// Matrix multiplication core shared by mm, bmm, addmm, matmul, linear...:
// C[n x m] = A[n x k] * B[k x m] on contiguous row-major operands, with
// at::acc_type accumulation. Kernels handle shapes, batching, dtypes and
// epilogues (bias, alpha/beta) around it.
#pragma once

#include <ATen/AccumulateType.h>

#include <cstdint>
#include <vector>

namespace kernels {

template <typename scalar_t>
void gemm(int64_t n, int64_t m, int64_t k, const scalar_t* a, const scalar_t* b, scalar_t* c) {
  using acc_t = at::acc_type<scalar_t, /*is_cuda=*/false>;
  std::vector<acc_t> row(static_cast<size_t>(m));
  for (int64_t i = 0; i < n; ++i) {
    std::fill(row.begin(), row.end(), acc_t(0));
    for (int64_t p = 0; p < k; ++p) {
      const acc_t av = static_cast<acc_t>(a[i * k + p]);
      const scalar_t* brow = b + p * m;
      for (int64_t j = 0; j < m; ++j) row[j] += av * static_cast<acc_t>(brow[j]);
    }
    for (int64_t j = 0; j < m; ++j) c[i * m + j] = static_cast<scalar_t>(row[j]);
  }
}

} // namespace kernels
