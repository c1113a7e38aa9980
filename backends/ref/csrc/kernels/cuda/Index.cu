// Reads by index of the CUDA reference library: index_select and gather, a
// thread per output element on the shared elementwise launcher
// (Common.cuh), as the CPU library describes them: the input with stride 0
// along `dim` and the index as an operand of the output's shape, so one
// functor moves an element's bytes from input + index * stride. Indices out
// of range raise the flag of Note [Index errors on the device]; the host
// then names the first offending one in row-major order.
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

// Calls f(Tag<E>{}) with an unsigned type of the dtype's size: moving
// elements by index needs only their bytes.
template <class F>
decltype(auto) dispatch_bytes(refkDtype d, F&& f) {
  switch (itemsize(d)) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: return f(Tag<uint64_t>{});
  }
}

// out = in[index * step] (operands: out, in with stride 0 along dim, index).
template <class E, class I>
struct Take {
  int64_t bound, step;  // step in bytes
  int* bad;
  __device__ void operator()(char* const (&p)[3]) const {
    const int64_t v = static_cast<int64_t>(*reinterpret_cast<const I*>(p[2]));
    if (v < 0 || v >= bound) {
      *bad = 1;
      return;
    }
    *reinterpret_cast<E*>(p[0]) = *reinterpret_cast<const E*>(p[1] + v * step);
  }
};

template <class I>
__global__ void check_kernel(int64_t n, const I* index, int64_t step, int64_t bound, int* bad) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const int64_t v = static_cast<int64_t>(index[j * step]);
    if (v < 0 || v >= bound) *bad = 1;
  }
}

// `t` with dim d's stride set to 0, described with `shape`'s sizes.
refkTensor along(const refkTensor& t, int d, const refkTensor& shape) {
  refkTensor r = t;
  r.strides[d] = 0;
  for (int k = 0; k < t.ndim; ++k) r.sizes[k] = shape.sizes[k];
  return r;
}

refkStatus take(const char* op, const refkContext* ctx, const refkTensor& out, const refkTensor& in_r,
                const refkTensor& idx, int64_t bound, int64_t step, int* bad) {
  const refkTensor* ops[3] = {&out, &in_r, &idx};
  return dispatch_bytes(out.dtype, [&](auto etag) {
    using E = typename decltype(etag)::type;
    return dispatch_index(idx.dtype, [&](auto itag) {
      using I = typename decltype(itag)::type;
      return for_each<3>(op, ctx, ops, Take<E, I>{bound, step, bad});
    });
  });
}

// The first index outside [0, bound) in row-major order, as Note [Index
// errors] words it; success when there is none.
refkStatus first_bad(const char* op, const refkTensor& index, int64_t bound, int64_t dim) {
  std::vector<int64_t> v;
  if (auto s = index_values(op, index, v)) return s;
  for (const int64_t x : v) {
    if (x < 0 || x >= bound) return index_error(x, dim, bound);
  }
  return refkSuccess;
}

refkStatus finish(const char* op, ErrorFlag& bad, const refkTensor& index, int64_t bound, int64_t dim) {
  bool raised = false;
  if (auto s = bad.read(op, raised)) return s;
  if (!raised) return refkSuccess;
  if (auto s = first_bad(op, index, bound, dim)) return s;
  return fail(refkErrorIndexOutOfBounds, std::string(op) + ": an index is out of bounds");
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkIndexSelect(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                           const refkTensor* index) {
  if (auto s = checked(refk::check::index_select(*out, *in, dim, *index))) return s;
  const int64_t n = numel(*index), bound = in->sizes[dim];
  if (n == 0) return refkSuccess;
  const int64_t step = index->ndim == 1 ? index->strides[0] : 0;
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("index_select")) return s;
  // Every index, also when out is empty.
  const refkStatus checked_all = dispatch_index(index->dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    check_kernel<I><<<blocks_for(n), kBlockThreads, 0, stream_of(ctx)>>>(n, static_cast<const I*>(index->data), step,
                                                                         bound, bad.get());
    return launched("index_select");
  });
  if (checked_all != refkSuccess) return checked_all;
  if (numel(*out) > 0) {
    const refkTensor in_r = along(*in, dim, *out);
    refkTensor idx = *out;
    idx.data = index->data;
    idx.dtype = index->dtype;
    for (int d = 0; d < out->ndim; ++d) idx.strides[d] = d == dim ? step : 0;
    if (auto s = take("index_select", ctx, *out, in_r, idx, bound, in->strides[dim] * itemsize(in->dtype), bad.get())) {
      return s;
    }
  }
  return finish("index_select", bad, *index, bound, dim);
}

refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index) {
  if (auto s = checked(refk::check::gather(*out, *in, dim, *index))) return s;
  if (numel(*out) == 0) return refkSuccess;
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("gather")) return s;
  const refkTensor in_r = along(*in, dim, *out);
  const int64_t bound = in->sizes[dim];
  if (auto s = take("gather", ctx, *out, in_r, *index, bound, in->strides[dim] * itemsize(in->dtype), bad.get())) {
    return s;
  }
  return finish("gather", bad, *index, bound, dim);
}

}  // extern "C"
