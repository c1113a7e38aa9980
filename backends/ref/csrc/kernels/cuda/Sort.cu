// sort and topk of the CUDA reference library: a thread per slice (the
// trailing dim), sorting the slice's positions with a stable bottom-up
// merge sort in device scratch, NaN largest and -0.0 equal to 0.0. Stable
// always, so it serves sort's stable and unstable forms alike; topk takes
// the first k of the slice sorted largest (or smallest) first, so of equal
// elements it picks the earliest (RefKernels.h leaves that choice to the
// library).
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

// Slices of the trailing dim: leading dims enumerate them (element strides
// of in, values, indices), K elements each, `step` apart.
struct Slices {
  int ndim = 0;
  int64_t count = 1, K = 0;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t st[3][REFK_MAX_DIMS] = {};
  int64_t step[3] = {};
  __device__ void at(int64_t r, int64_t (&off)[3]) const {
    off[0] = off[1] = off[2] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = r % sizes[d];
      r /= sizes[d];
      for (int k = 0; k < 3; ++k) off[k] += i * st[k][d];
    }
  }
};

Slices slices_of(const refkTensor& in, const refkTensor& values, const refkTensor& indices) {
  Slices s;
  const int last = in.ndim - 1;
  s.ndim = last;
  s.K = in.sizes[last];
  const refkTensor* ops[3] = {&in, &values, &indices};
  for (int d = 0; d < last; ++d) {
    s.sizes[d] = in.sizes[d];
    s.count *= in.sizes[d];
    for (int k = 0; k < 3; ++k) s.st[k][d] = ops[k]->strides[d];
  }
  for (int k = 0; k < 3; ++k) s.step[k] = ops[k]->strides[last];
  return s;
}

// a before b: ascending with NaN largest, or descending with NaN first.
template <class V>
__device__ bool before(V a, V b, bool descending) {
  if constexpr (is_floating_v<V>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) return descending ? (na && !nb) : (!na && nb);
  }
  return descending ? b < a : a < b;
}

template <class T>
__global__ void sort_kernel(Slices s, const T* in, T* values, int64_t* indices, int64_t take, bool descending,
                            int64_t* scratch) {
  using V = opmath_t<T>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < s.count; r += stride) {
    int64_t off[3];
    s.at(r, off);
    const T* x = in + off[0];
    int64_t* a = scratch + r * 2 * s.K;
    int64_t* b = a + s.K;
    for (int64_t i = 0; i < s.K; ++i) a[i] = i;
    for (int64_t width = 1; width < s.K; width *= 2) {
      for (int64_t lo = 0; lo < s.K; lo += 2 * width) {
        const int64_t mid = lo + width < s.K ? lo + width : s.K;
        const int64_t hi = lo + 2 * width < s.K ? lo + 2 * width : s.K;
        int64_t i = lo, j = mid, o = lo;
        while (i < mid && j < hi) {
          // Stable: the right run's element goes first only when strictly before.
          if (before(V(load(x[a[j] * s.step[0]])), V(load(x[a[i] * s.step[0]])), descending)) {
            b[o++] = a[j++];
          } else {
            b[o++] = a[i++];
          }
        }
        while (i < mid) b[o++] = a[i++];
        while (j < hi) b[o++] = a[j++];
      }
      int64_t* t = a;
      a = b;
      b = t;
    }
    for (int64_t j = 0; j < take; ++j) {
      values[off[1] + j * s.step[1]] = x[a[j] * s.step[0]];
      indices[off[2] + j * s.step[2]] = a[j];
    }
  }
}

refkStatus run_sort(const char* op, const refkContext* ctx, const refkTensor& values, const refkTensor& indices,
                    const refkTensor& in, int64_t take, bool descending) {
  const Slices s = slices_of(in, values, indices);
  if (s.count == 0 || s.K == 0 || take == 0) return refkSuccess;
  const cudaStream_t st = stream_of(ctx);
  int64_t* scratch = nullptr;
  const size_t bytes = static_cast<size_t>(s.count) * static_cast<size_t>(2 * s.K) * sizeof(int64_t);
  const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, st);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string(op) + ": " + cudaGetErrorString(e));
  const refkStatus status = dispatch(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_kernel<T><<<blocks_for(s.count, 128), 128, 0, st>>>(s, static_cast<const T*>(in.data),
                                                             static_cast<T*>(values.data),
                                                             static_cast<int64_t*>(indices.data), take, descending,
                                                             scratch);
    return launched(op);
  });
  cudaFreeAsync(scratch, st);
  return status;
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkSort(const refkContext* ctx, const refkTensor* values, const refkTensor* indices, const refkTensor* in,
                    int32_t descending, int32_t stable) {
  (void)stable;  // the merge sort is stable either way
  if (auto s = check_shapes("sort", {values, indices, in})) return s;
  if (in->ndim < 1 || values->dtype != in->dtype || indices->dtype != refkInt64) {
    return fail(refkErrorInvalidValue, "sort: bad operands");
  }
  if (numel(*in) == 0) return refkSuccess;
  return run_sort("sort", ctx, *values, *indices, *in, in->sizes[in->ndim - 1], descending != 0);
}

refkStatus refkTopk(const refkContext* ctx, const refkTensor* values, const refkTensor* indices, const refkTensor* in,
                    int64_t k, int32_t largest, int32_t sorted) {
  (void)sorted;  // the k elements come out sorted either way
  if (auto s = check_shapes("topk", {values, indices})) return s;
  const int last = in->ndim - 1;
  if (in->ndim < 1 || values->ndim != in->ndim || values->dtype != in->dtype || indices->dtype != refkInt64 || k < 0 ||
      k > in->sizes[last] || values->sizes[last] != k) {
    return fail(refkErrorInvalidValue, "topk: bad operands");
  }
  for (int d = 0; d < last; ++d) {
    if (values->sizes[d] != in->sizes[d]) return fail(refkErrorInvalidValue, "topk: bad operands");
  }
  if (numel(*values) == 0) return refkSuccess;
  return run_sort("topk", ctx, *values, *indices, *in, k, largest != 0);
}

}  // extern "C"
