// Indexing of the CUDA reference library. index_select and gather: a
// thread per output element on the shared elementwise launcher
// (Common.cuh), as the CPU library describes them: the input with stride 0
// along `dim` and the index as an operand of the output's shape, so one
// functor moves an element's bytes from input + index * stride. index and
// index_put (advanced indexing): a thread per position, index_put's
// accumulation in row-major order per element of self. nonzero and
// masked_scatter: a count, then one block scanning chunk counts and writing
// in row-major order. Indices out of
// range raise the flag of Note [Index errors on the device]; the host then
// names the first offending one in row-major order.
#include "kernels/common/Scatter.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

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

// ---- advanced indexing ----------------------------------------------------------

// index and index_put over the lead operand's shape (out, or the values
// written): the lead's, the indexed tensor's and every index's element
// strides per dim, and where each index value steps in the indexed tensor
// (Note [Descriptor conventions]; RefKernels.h's refkIndex). Passed by value
// (kernel parameters of up to 32 KB: CUDA 12.1 and later, sm_70 and later).
struct Adv {
  int ndim = 0, n = 0;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t lead[REFK_MAX_DIMS] = {}, base[REFK_MAX_DIMS] = {};
  int64_t idx[REFK_MAX_DIMS][REFK_MAX_DIMS] = {};
  int64_t isize[REFK_MAX_DIMS] = {}, istride[REFK_MAX_DIMS] = {};
  const void* idata[REFK_MAX_DIMS] = {};

  // The offsets of row-major position p in the lead and the indexed
  // tensor (index values added); false when an index is out of range.
  template <class I>
  __device__ bool at(int64_t p, int64_t& lo, int64_t& bo) const {
    int64_t io[REFK_MAX_DIMS];
    lo = bo = 0;
    for (int k = 0; k < n; ++k) io[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t c = p % sizes[d];
      p /= sizes[d];
      lo += c * lead[d];
      bo += c * base[d];
      for (int k = 0; k < n; ++k) io[k] += c * idx[k][d];
    }
    for (int k = 0; k < n; ++k) {
      int64_t v = static_cast<int64_t>(static_cast<const I*>(idata[k])[io[k]]);
      if (v < 0) v += isize[k];
      if (v < 0 || v >= isize[k]) return false;
      bo += v * istride[k];
    }
    return true;
  }
};

Adv adv_of(const refkTensor& lead, const refkTensor& base, int32_t n, const refkTensor* indices, const int64_t* sizes,
           const int64_t* strides) {
  Adv a;
  a.ndim = lead.ndim;
  a.n = n;
  for (int d = 0; d < lead.ndim; ++d) {
    a.sizes[d] = lead.sizes[d];
    a.lead[d] = lead.strides[d];
    a.base[d] = base.strides[d];
    for (int k = 0; k < n; ++k) a.idx[k][d] = indices[k].strides[d];
  }
  for (int k = 0; k < n; ++k) {
    a.isize[k] = sizes[k];
    a.istride[k] = strides[k];
    a.idata[k] = indices[k].data;
  }
  return a;
}

// index (kPut false): lead[p] = base[indexed p]; index_put without
// accumulation (kPut true): base[indexed p] = lead[p], where indices repeat
// any write may win (as ATen's).
template <class E, class I, bool kPut>
__global__ void move_kernel(Adv a, int64_t total, E* lead, E* base, int* bad) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += stride) {
    int64_t lo, bo;
    if (!a.at<I>(p, lo, bo)) {
      *bad = 1;
      continue;
    }
    if constexpr (kPut) {
      base[bo] = lead[lo];
    } else {
      lead[lo] = base[bo];
    }
  }
}

// Accumulation, deterministic: the dims where the indexed tensor has a
// stride (its own dims outside the indices) are split over threads; each
// thread adds over the remaining dims in row-major order, so every element
// of self receives its values in row-major order of the positions, one
// addition after the other in self's precision, as the CPU library does.
// (Two positions that differ in a split dim write different elements of a
// self without internal overlap, which index_put_ requires.)
template <class T, class I>
__global__ void index_put_accumulate_kernel(Adv a, int64_t outer, int64_t inner, T* self, const T* values, int* bad) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < outer; q += stride) {
    for (int64_t r = 0; r < inner; ++r) {
      // Position p from (q over the split dims, r over the others), row-major.
      int64_t p = 0, qq = q, rr = r, mult = 1;
      for (int d = a.ndim - 1; d >= 0; --d) {
        int64_t c;
        if (a.base[d] != 0) {
          c = qq % a.sizes[d];
          qq /= a.sizes[d];
        } else {
          c = rr % a.sizes[d];
          rr /= a.sizes[d];
        }
        p += c * mult;
        mult *= a.sizes[d];
      }
      int64_t lo, bo;
      if (!a.at<I>(p, lo, bo)) {
        *bad = 1;
        continue;
      }
      self[bo] = refk::scatter::accumulate(self[bo], values[lo]);
    }
  }
}

// The first position whose index is out of range, in row-major order, as
// Note [Index errors] words it (<d> is k); success when there is none.
refkStatus first_bad_advanced(const char* op, int32_t n, const refkTensor* indices, const int64_t* sizes) {
  std::vector<std::vector<int64_t>> v(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    if (auto s = index_values(op, indices[k], v[static_cast<size_t>(k)])) return s;
  }
  const size_t total = n > 0 ? v[0].size() : 0;
  for (size_t p = 0; p < total; ++p) {
    for (int k = 0; k < n; ++k) {
      const int64_t x = v[static_cast<size_t>(k)][p];
      if (x < -sizes[k] || x >= sizes[k]) return index_error(x, k, sizes[k]);
    }
  }
  return refkSuccess;
}

refkStatus advanced_operands(const char* op, const refkTensor* lead, const refkTensor* data, int32_t n,
                             const refkTensor* indices) {
  if (n < 1 || n > REFK_MAX_DIMS || lead->dtype != data->dtype) {
    return fail(refkErrorInvalidValue, std::string(op) + ": bad operands");
  }
  for (int k = 0; k < n; ++k) {
    if (!is_index_dtype(indices[k].dtype) || indices[k].dtype != indices[0].dtype) {
      return fail(refkErrorInvalidValue, std::string(op) + ": index tensors must all be int32 or all int64");
    }
    if (!same_shape(indices[k], *lead)) return fail(refkErrorInvalidValue, std::string(op) + ": operands must have one shape");
  }
  if (!same_shape(*data, *lead)) return fail(refkErrorInvalidValue, std::string(op) + ": operands must have one shape");
  return refkSuccess;
}

// ---- nonzero ---------------------------------------------------------------------

// Element offsets of row-major positions of a descriptor, by value.
struct Walk {
  int ndim;
  int64_t sizes[REFK_MAX_DIMS], strides[REFK_MAX_DIMS];
  __device__ int64_t at(int64_t i) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return off;
  }
};
Walk walk_of(const refkTensor& t) {
  Walk w{};
  w.ndim = t.ndim;
  for (int d = 0; d < t.ndim; ++d) w.sizes[d] = t.sizes[d], w.strides[d] = t.strides[d];
  return w;
}

// Whether the element at row-major position i of a descriptor is nonzero
// (for a bool mask: true).
template <class T>
struct Nonzero {
  Walk w;
  const T* data;
  __device__ bool operator()(int64_t i) const { return load(data[w.at(i)]) != opmath_t<T>(0); }
};

// Counts the positions of [0, total) that hit, over a grid.
template <class Hit>
__global__ void count_kernel(int64_t total, Hit hit, unsigned long long* count) {
  unsigned long long c = 0;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    c += hit(i) ? 1 : 0;
  }
  if (c != 0) atomicAdd(count, c);
}

// One block over [0, total): each thread takes a contiguous chunk [b, e),
// counts its hits, and after an exclusive scan over the block learns how
// many positions before b hit, so the block handles every hit in row-major
// order (nonzero's rows, masked_scatter's source elements).
template <class Hit>
__device__ int64_t hits_before(int64_t total, const Hit& hit, int64_t& b, int64_t& e) {
  __shared__ int64_t first[kBlockThreads + 1];
  const int64_t chunk = (total + kBlockThreads - 1) / kBlockThreads;
  b = threadIdx.x * chunk;
  e = b + chunk < total ? b + chunk : total;
  int64_t c = 0;
  for (int64_t i = b; i < e; ++i) c += hit(i) ? 1 : 0;
  first[threadIdx.x + 1] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    first[0] = 0;
    for (int t = 1; t <= kBlockThreads; ++t) first[t] += first[t - 1];
  }
  __syncthreads();
  return first[threadIdx.x];
}

// One block: the coordinates of the nonzeros, in row-major order.
template <class T>
__global__ void nonzero_kernel(Nonzero<T> hit, int64_t total, int64_t* out, int64_t os0, int64_t os1, int64_t rows) {
  int64_t b, e;
  int64_t row = hits_before(total, hit, b, e);
  for (int64_t i = b; i < e && row < rows; ++i) {
    if (!hit(i)) continue;
    int64_t rem = i;
    for (int d = hit.w.ndim - 1; d >= 0; --d) {
      out[row * os0 + d * os1] = rem % hit.w.sizes[d];
      rem /= hit.w.sizes[d];
    }
    ++row;
  }
}

// ---- masked_scatter ----------------------------------------------------------------

// One block: the k-th true position (row-major) of mask takes source's k-th
// element (row-major).
template <class E>
__global__ void masked_scatter_kernel(Walk wo, Nonzero<bool> mask, Walk ws, int64_t total, E* out, const E* source) {
  int64_t b, e;
  int64_t k = hits_before(total, mask, b, e);
  for (int64_t i = b; i < e; ++i) {
    if (mask(i)) out[wo.at(i)] = source[ws.at(k++)];
  }
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
  refkStatus launch = checked_all;
  if (launch == refkSuccess && numel(*out) > 0) {
    const refkTensor in_r = along(*in, dim, *out);
    refkTensor idx = *out;
    idx.data = index->data;
    idx.dtype = index->dtype;
    for (int d = 0; d < out->ndim; ++d) idx.strides[d] = d == dim ? step : 0;
    launch = take("index_select", ctx, *out, in_r, idx, bound, in->strides[dim] * itemsize(in->dtype), bad.get());
  }
  return bad.finish("index_select", launch, "an index", [&] { return first_bad("index_select", *index, bound, dim); });
}

refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index) {
  if (auto s = checked(refk::check::gather(*out, *in, dim, *index))) return s;
  if (numel(*out) == 0) return refkSuccess;
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("gather")) return s;
  const refkTensor in_r = along(*in, dim, *out);
  const int64_t bound = in->sizes[dim];
  const refkStatus launch =
      take("gather", ctx, *out, in_r, *index, bound, in->strides[dim] * itemsize(in->dtype), bad.get());
  return bad.finish("gather", launch, "an index", [&] { return first_bad("gather", *index, bound, dim); });
}

refkStatus refkIndex(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t nindices,
                     const refkTensor* indices, const int64_t* sizes, const int64_t* strides) {
  if (auto s = advanced_operands("index", out, in, nindices, indices)) return s;
  const int64_t total = numel(*out);
  if (total == 0) return refkSuccess;
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("index")) return s;
  const Adv a = adv_of(*out, *in, nindices, indices, sizes, strides);
  const refkStatus launch = dispatch_bytes(out->dtype, [&](auto etag) {
    using E = typename decltype(etag)::type;
    return dispatch_index(indices[0].dtype, [&](auto itag) {
      using I = typename decltype(itag)::type;
      move_kernel<E, I, false><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
          a, total, static_cast<E*>(out->data), static_cast<E*>(in->data), bad.get());
      return launched("index");
    });
  });
  return bad.finish("index", launch, "an index", [&] { return first_bad_advanced("index", nindices, indices, sizes); });
}

refkStatus refkIndexPut(const refkContext* ctx, const refkTensor* self, const refkTensor* values, int32_t nindices,
                        const refkTensor* indices, const int64_t* sizes, const int64_t* strides, int32_t accumulate) {
  if (auto s = advanced_operands("index_put", values, self, nindices, indices)) return s;
  const int64_t total = numel(*values);
  if (total == 0) return refkSuccess;
  ErrorFlag bad(stream_of(ctx));
  if (auto s = bad.init("index_put")) return s;
  const Adv a = adv_of(*values, *self, nindices, indices, sizes, strides);
  refkStatus launch;
  if (accumulate == 0) {
    launch = dispatch_bytes(self->dtype, [&](auto etag) {
      using E = typename decltype(etag)::type;
      return dispatch_index(indices[0].dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        move_kernel<E, I, true><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
            a, total, static_cast<E*>(values->data), static_cast<E*>(self->data), bad.get());
        return launched("index_put");
      });
    });
  } else {
    // Split dims: where self (the indexed tensor) has a stride.
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a.ndim; ++d) (a.base[d] != 0 ? outer : inner) *= a.sizes[d];
    launch = dispatch(self->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_index(indices[0].dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        index_put_accumulate_kernel<T, I><<<blocks_for(outer), kBlockThreads, 0, stream_of(ctx)>>>(
            a, outer, inner, static_cast<T*>(self->data), static_cast<const T*>(values->data), bad.get());
        return launched("index_put");
      });
    });
  }
  return bad.finish("index_put", launch, "an index",
                    [&] { return first_bad_advanced("index_put", nindices, indices, sizes); });
}

refkStatus refkCountNonzero(const refkContext* ctx, const refkTensor* count, const refkTensor* in) {
  if (count->dtype != refkInt64 || numel(*count) != 1) {
    return fail(refkErrorInvalidValue, "nonzero: count must be a 1-element int64 tensor");
  }
  const cudaError_t e = cudaMemsetAsync(count->data, 0, sizeof(int64_t), stream_of(ctx));
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("nonzero: ") + cudaGetErrorString(e));
  const int64_t total = numel(*in);
  if (total == 0) return refkSuccess;
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    count_kernel<<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
        total, Nonzero<T>{walk_of(*in), static_cast<const T*>(in->data)},
        static_cast<unsigned long long*>(count->data));
    return launched("nonzero");
  });
}

refkStatus refkNonzero(const refkContext* ctx, const refkTensor* out, const refkTensor* in) {
  if (out->dtype != refkInt64 || out->ndim != 2 || out->sizes[1] != in->ndim) {
    return fail(refkErrorInvalidValue, "nonzero: out must be int64 of shape (n, in.ndim)");
  }
  const int64_t total = numel(*in);
  if (total == 0) return out->sizes[0] == 0 ? refkSuccess : fail(refkErrorInvalidValue, "nonzero: bad count");
  if (numel(*out) == 0) return refkSuccess;
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    nonzero_kernel<T><<<1, kBlockThreads, 0, stream_of(ctx)>>>(
        Nonzero<T>{walk_of(*in), static_cast<const T*>(in->data)}, total, static_cast<int64_t*>(out->data),
        out->strides[0], out->strides[1], out->sizes[0]);
    return launched("nonzero");
  });
}

refkStatus refkMaskedScatter(const refkContext* ctx, const refkTensor* out, const refkTensor* mask,
                             const refkTensor* source) {
  if (auto s = check_shapes("masked_scatter", {out, mask})) return s;
  if (mask->dtype != refkBool || source->dtype != out->dtype) {
    return fail(refkErrorInvalidValue, "masked_scatter: bad operands");
  }
  const int64_t total = numel(*out);
  if (total == 0) return refkSuccess;
  const cudaStream_t st = stream_of(ctx);
  unsigned long long* count = nullptr;
  unsigned long long host = 0;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&count), sizeof(*count), st);
  if (e == cudaSuccess) e = cudaMemsetAsync(count, 0, sizeof(*count), st);
  const Nonzero<bool> hit{walk_of(*mask), static_cast<const bool*>(mask->data)};
  if (e == cudaSuccess) {
    count_kernel<<<blocks_for(total), kBlockThreads, 0, st>>>(total, hit, count);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(&host, count, sizeof(host), cudaMemcpyDeviceToHost, st);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st);
  if (count != nullptr) cudaFreeAsync(count, st);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("masked_scatter: ") + cudaGetErrorString(e));
  if (static_cast<int64_t>(host) > numel(*source)) {
    return fail(refkErrorInvalidValue, "Number of elements of source < number of ones in mask");
  }
  if (host == 0) return refkSuccess;
  return dispatch_bytes(out->dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    masked_scatter_kernel<E><<<1, kBlockThreads, 0, st>>>(walk_of(*out), hit, walk_of(*source), total,
                                                          static_cast<E*>(out->data),
                                                          static_cast<const E*>(source->data));
    return launched("masked_scatter");
  });
}

}  // extern "C"
