// scatter (src, value, add, reduce.two) of the CUDA reference library: a
// thread per column of index (its dims other than `dim`) walking `dim` in
// ascending order, as the CPU library's threads do, so every element
// combines what lands on it in the same order on both devices (two columns
// never write one element). Each step, identity and the mean's division are
// common/Scatter.h's. float16/bfloat16 reductions run in a float copy of
// self and round once (Note [Scatter accumulation] in cpu/Scatter.cpp);
// mean counts in an int64 scratch of self's shape. Index errors follow Note
// [Index errors on the device].
#include "kernels/common/Scatter.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace scatter = refk::scatter;

// The columns: index's shape with `dim` of size 1; element strides of
// index, target, src and counts per dim, and each one's step along `dim`.
struct Cols {
  int ndim = 0;
  int64_t D = 0, bound = 0;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t st[4][REFK_MAX_DIMS] = {};
  int64_t step[4] = {};

  __device__ void at(int64_t c, int64_t (&off)[4]) const {
    for (int k = 0; k < 4; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = c % sizes[d];
      c /= sizes[d];
      for (int k = 0; k < 4; ++k) off[k] += i * st[k][d];
    }
  }
};

Cols cols_of(const refkTensor& index, int dim, const refkTensor& target, const refkTensor* src,
             const refkTensor* counts) {
  Cols c;
  c.ndim = index.ndim;
  c.D = index.sizes[dim];
  c.bound = target.sizes[dim];
  const refkTensor* ops[4] = {&index, &target, src, counts};
  for (int d = 0; d < index.ndim; ++d) {
    c.sizes[d] = d == dim ? 1 : index.sizes[d];
    for (int k = 0; k < 4; ++k) c.st[k][d] = ops[k] != nullptr ? ops[k]->strides[d] : 0;
  }
  for (int k = 0; k < 4; ++k) c.step[k] = ops[k] != nullptr ? ops[k]->strides[dim] : 0;
  return c;
}

template <class A, class S>
__device__ A widen(S s) {
  if constexpr (std::is_same_v<A, S>) {
    return s;
  } else {
    return static_cast<A>(load(s));
  }
}

// target (A) combines src (S) or `fixed` along dim over each column.
template <class S, class A, class I, refkScatterReduce R>
__global__ void scatter_kernel(Cols c, int64_t ncols, const I* index, A* target, const S* src, A fixed,
                               int64_t* counts, int* bad) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; col < ncols; col += stride) {
    int64_t off[4];
    c.at(col, off);
    for (int64_t i = 0; i < c.D; ++i) {
      const int64_t v = static_cast<int64_t>(index[off[0] + i * c.step[0]]);
      if (v < 0 || v >= c.bound) {
        *bad = 1;
        break;
      }
      A& t = target[off[1] + v * c.step[1]];
      const A x = src != nullptr ? widen<A>(src[off[2] + i * c.step[2]]) : fixed;
      t = scatter::step<R>(t, x);
      if (counts != nullptr) ++counts[off[3] + v * c.step[3]];
    }
  }
}

template <class T>
__global__ void mean_kernel(int64_t n, int ndim, refkTensor self, const int64_t* counts, bool include_self) {
  using A = opmath_t<T>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (counts[i] == 0) continue;
    int64_t off = 0, rem = i;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (rem % self.sizes[d]) * self.strides[d];
      rem /= self.sizes[d];
    }
    T& t = static_cast<T*>(self.data)[off];
    t = scatter::mean_of<T, A>(t, counts[i], include_self);
  }
}

template <class S, class A, class I>
refkStatus pass(const refkContext* ctx, refkScatterReduce r, const Cols& c, int64_t ncols, const refkTensor& index,
                const refkTensor& target, const refkTensor* src, A fixed, int64_t* counts, int* bad) {
  const I* ip = static_cast<const I*>(index.data);
  A* tp = static_cast<A*>(target.data);
  const S* sp = src != nullptr ? static_cast<const S*>(src->data) : nullptr;
  const unsigned blocks = blocks_for(ncols);
  const cudaStream_t st = stream_of(ctx);
  if constexpr (is_half_v<A>) {
    // The half types only assign in their own type (reductions run in float).
    if (r != refkScatterAssign) return fail(refkErrorInvalidValue, "scatter: half types reduce in float");
    scatter_kernel<S, A, I, refkScatterAssign><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
    return launched("scatter");
  } else {
    switch (r) {
      case refkScatterAssign:
        scatter_kernel<S, A, I, refkScatterAssign><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
        break;
      case refkScatterAdd:
        scatter_kernel<S, A, I, refkScatterAdd><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
        break;
      case refkScatterMean:
        scatter_kernel<S, A, I, refkScatterMean><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
        break;
      case refkScatterMultiply:
        scatter_kernel<S, A, I, refkScatterMultiply><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts,
                                                                                      bad);
        break;
      case refkScatterAmax:
        scatter_kernel<S, A, I, refkScatterAmax><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
        break;
      case refkScatterAmin:
        scatter_kernel<S, A, I, refkScatterAmin><<<blocks, kBlockThreads, 0, st>>>(c, ncols, ip, tp, sp, fixed, counts, bad);
        break;
    }
    return launched("scatter");
  }
}

// The CPU library's error: the first column (row-major) with an index out
// of range, and in it the first along `dim`; success when there is none.
refkStatus first_bad(const refkTensor& index, int dim, int64_t bound) {
  std::vector<int64_t> v;
  if (auto s = index_values("scatter", index, v)) return s;
  const int n = index.ndim;
  int64_t rm[REFK_MAX_DIMS];  // row-major strides of index's shape
  int64_t acc = 1;
  for (int d = n - 1; d >= 0; --d) rm[d] = acc, acc *= index.sizes[d];
  int64_t ncols = 1;
  for (int d = 0; d < n; ++d) ncols *= d == dim ? 1 : index.sizes[d];
  for (int64_t col = 0; col < ncols; ++col) {
    int64_t base = 0, rem = col;
    for (int d = n - 1; d >= 0; --d) {
      if (d == dim) continue;
      base += (rem % index.sizes[d]) * rm[d];
      rem /= index.sizes[d];
    }
    for (int64_t i = 0; i < index.sizes[dim]; ++i) {
      const int64_t x = v[static_cast<size_t>(base + i * rm[dim])];
      if (x < 0 || x >= bound) return index_error(x, dim, bound);
    }
  }
  return refkSuccess;
}

template <class T, class I>
refkStatus scatter_typed(const refkContext* ctx, const refkTensor& self, int dim, const refkTensor& index,
                         const refkTensor* src, refkScalar value, refkScatterReduce reduce, bool include_self,
                         int* bad) {
  int64_t ncols = 1;
  for (int d = 0; d < index.ndim; ++d) ncols *= d == dim ? 1 : index.sizes[d];
  const cudaStream_t st = stream_of(ctx);
  if (reduce == refkScatterAssign) {
    const Cols c = cols_of(index, dim, self, src, nullptr);
    return pass<T, T, I>(ctx, reduce, c, ncols, index, self, src, scatter::value_of<T>(value), nullptr, bad);
  }
  // Note [Scatter accumulation] (cpu/Scatter.cpp): the half types reduce in
  // a float copy of self.
  constexpr bool kWide = is_half_v<T>;
  using A = opmath_t<T>;
  const int64_t n = numel(self);
  void* wide = nullptr;
  int64_t* counts = nullptr;
  auto release = [&] {
    if (wide != nullptr) cudaFreeAsync(wide, st);
    if (counts != nullptr) cudaFreeAsync(counts, st);
  };
  refkTensor target = self;
  if constexpr (kWide) {
    if (cudaMallocAsync(&wide, static_cast<size_t>(n) * sizeof(float), st) != cudaSuccess) {
      release();
      return fail(refkErrorInvalidValue, "scatter: out of device memory for the float copy");
    }
    target = contiguous_like(wide, refkFloat32, self);
    if (auto s = refkCopy(ctx, &target, &self)) {
      release();
      return s;
    }
  }
  refkTensor counts_desc{};
  if (reduce == refkScatterMean) {
    cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&counts), static_cast<size_t>(n) * sizeof(int64_t), st);
    if (e == cudaSuccess) e = cudaMemsetAsync(counts, 0, static_cast<size_t>(n) * sizeof(int64_t), st);
    if (e != cudaSuccess) {
      release();
      return fail(refkErrorInvalidValue, std::string("scatter: ") + cudaGetErrorString(e));
    }
    counts_desc = contiguous_like(counts, refkInt64, self);
  }
  const Cols c = cols_of(index, dim, target, src, counts != nullptr ? &counts_desc : nullptr);
  refkStatus s = refkSuccess;
  if (!include_self) {
    // Elements that receive values start from the reduction's identity.
    s = pass<A, A, I>(ctx, refkScatterAssign, c, ncols, index, target, nullptr, scatter::identity<A>(reduce), nullptr,
                      bad);
  }
  if (s == refkSuccess) {
    s = pass<T, A, I>(ctx, reduce, c, ncols, index, target, src, scatter::value_of<A>(value), counts, bad);
  }
  if (s == refkSuccess && kWide) s = refkCopy(ctx, &self, &target);
  if constexpr (!std::is_same_v<T, bool>) {
    if (s == refkSuccess && reduce == refkScatterMean) {
      mean_kernel<T><<<blocks_for(n), kBlockThreads, 0, st>>>(n, self.ndim, self, counts, include_self);
      s = launched("scatter");
    }
  }
  release();
  return s;
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkScatter(const refkContext* ctx, const refkTensor* self, int32_t dim, const refkTensor* index,
                                  const refkTensor* src, refkScalar value, refkScatterReduce reduce,
                                  int32_t include_self) {
  const bool has_src = src != nullptr && src->data != nullptr;
  if (auto s = checked(refk::check::scatter(*self, dim, *index, has_src ? src : nullptr))) return s;
  if (numel(*index) == 0) return refkSuccess;
  if (reduce == refkScatterMean && self->dtype == refkBool) return unsupported("scatter mean", self->dtype);
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("scatter")) return s;
  const refkStatus launch = dispatch(self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return dispatch_index(index->dtype, [&](auto itag) {
      using I = typename decltype(itag)::type;
      return scatter_typed<T, I>(ctx, *self, dim, *index, has_src ? src : nullptr, value, reduce, include_self != 0,
                                 bad.get());
    });
  });
  return bad.finish("scatter", launch, "an index", [&] { return first_bad(*index, dim, self->sizes[dim]); });
}
