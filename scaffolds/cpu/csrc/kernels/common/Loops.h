// Strided iteration: the one loop nest every elementwise kernel, fill and
// random kernel shares. It walks a shape in row-major order and hands the
// body each operand's element offset, so kernels never compute indices and
// never need contiguous inputs (broadcast operands have stride 0).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace kernels {

using Strides = std::vector<int64_t>;

// Strides of `t` seen through the broadcast shape `shape`: 0 along every
// dimension that `t` lacks or has size 1 for.
inline Strides broadcast_strides(const at::Tensor& t, at::IntArrayRef shape) {
  Strides s(shape.size(), 0);
  const int64_t lead = static_cast<int64_t>(shape.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) {
    s[lead + d] = t.size(d) == 1 ? 0 : t.stride(d);
  }
  return s;
}

// The broadcast shape of two shapes, as eager PyTorch computes it.
inline std::vector<int64_t> broadcast_shape(at::IntArrayRef a, at::IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TORCH_CHECK(da == db || da == 1 || db == 1, op, ": the size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Calls f(std::array<int64_t, N> offsets) for every index of `shape`.
template <size_t N, typename F>
void for_each_offset(at::IntArrayRef shape, const std::array<Strides, N>& strides, F&& f) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  int64_t numel = 1;
  for (auto n : shape) numel *= n;
  if (numel == 0) return;
  std::array<int64_t, N> off{};
  if (ndim == 0) {
    f(off);
    return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(ndim), 0);
  const int64_t inner = shape[ndim - 1];
  std::array<int64_t, N> inner_stride{};
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][ndim - 1];
  for (int64_t done = 0; done < numel; done += inner) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      f(o);
      for (size_t k = 0; k < N; ++k) o[k] += inner_stride[k];
    }
    // Carry into the outer dimensions.
    for (int64_t d = ndim - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

inline Strides strides_of(const at::Tensor& t) { return Strides(t.strides().begin(), t.strides().end()); }

} // namespace kernels
