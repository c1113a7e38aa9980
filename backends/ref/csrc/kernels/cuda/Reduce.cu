// Reductions of the CUDA reference library: refkReduce (one block per
// output element, threads striding over the reduced elements, a shared
// memory tree to combine), refkArgReduce (the same, carrying positions) and
// refkCumsum (a thread per row). The plan and each op's accumulation are
// common/Reduce.h's, shared with the CPU library: floating inputs
// accumulate in double and integers in int64; half types load through
// float. The output dtype is picked at run time, so kernels are
// instantiated per input dtype and op only.
#include "kernels/common/Reduce.h"
#include "kernels/cuda/Common.cuh"

#include <cfloat>
#include <climits>

namespace refkc {
namespace {

constexpr int kThreads = kBlockThreads;

using refk::mean_value;
using refk::offset_of;
using refk::Reducer;
using refk::var_value;
using refk::write_value;

// The shared plan (common/Reduce.h) and the output dtype, passed to kernels
// by value.
struct Plan : refk::ReduceShape {
  refkDtype out_dtype = refkFloat32;
};

Plan plan_reduce(const refkTensor& out, const refkTensor& in, int nreduce) {
  Plan s;
  static_cast<refk::ReduceShape&>(s) = refk::plan_reduce(out, in, nreduce);
  s.out_dtype = out.dtype;
  return s;
}

template <class T, refkReduceOp OP>
__global__ void reduce_kernel(Plan s, const char* in, char* out, double correction) {
  using R = Reducer<T, OP>;
  using A = typename R::A;
  for (int64_t m = blockIdx.x; m < s.M; m += gridDim.x) {
    const char* row = in + offset_of(m, s.kept, s.kept_sizes, s.kept_in);
    A acc = R::init();
    for (int64_t k = threadIdx.x; k < s.K; k += blockDim.x) {
      acc = R::step(acc, load(*reinterpret_cast<const T*>(row + offset_of(k, s.red, s.red_sizes, s.red_in))));
    }
    acc = block_combine(acc, [](A a, A b) { return R::combine(a, b); });
    char* dst = out + offset_of(m, s.kept, s.kept_sizes, s.kept_out);
    if constexpr (OP == refkMean) {
      if (threadIdx.x == 0) write_value(s.out_dtype, dst, mean_value(acc, s.K));
    } else if constexpr (OP == refkVar) {
      const double mean = mean_value(acc, s.K);
      double m2 = 0;
      for (int64_t k = threadIdx.x; k < s.K; k += blockDim.x) {
        const double x = static_cast<double>(
            load(*reinterpret_cast<const T*>(row + offset_of(k, s.red, s.red_sizes, s.red_in))));
        m2 += (x - mean) * (x - mean);
      }
      m2 = block_combine(m2, [](double a, double b) { return a + b; });
      if (threadIdx.x == 0) write_value(s.out_dtype, dst, var_value(m2, s.K, correction));
    } else {
      if (threadIdx.x == 0) write_value(s.out_dtype, dst, acc);
    }
  }
}

// A thread per output element, reducing sequentially: for short reductions
// (a block per output would leave most threads idle) and for reductions
// across an outer dim whose kept inner dim is dense (neighbouring threads
// then read neighbouring elements: coalesced, where a block per output
// would stride through memory).
template <class T, refkReduceOp OP>
__global__ void reduce_per_thread_kernel(Plan s, const char* in, char* out, double correction) {
  using R = Reducer<T, OP>;
  using A = typename R::A;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; m < s.M; m += stride) {
    const char* row = in + offset_of(m, s.kept, s.kept_sizes, s.kept_in);
    A acc = R::init();
    for (int64_t k = 0; k < s.K; ++k) {
      acc = R::step(acc, load(*reinterpret_cast<const T*>(row + offset_of(k, s.red, s.red_sizes, s.red_in))));
    }
    char* dst = out + offset_of(m, s.kept, s.kept_sizes, s.kept_out);
    if constexpr (OP == refkMean) {
      write_value(s.out_dtype, dst, mean_value(acc, s.K));
    } else if constexpr (OP == refkVar) {
      const double mean = mean_value(acc, s.K);
      double m2 = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        const double x = static_cast<double>(
            load(*reinterpret_cast<const T*>(row + offset_of(k, s.red, s.red_sizes, s.red_in))));
        m2 += (x - mean) * (x - mean);
      }
      write_value(s.out_dtype, dst, var_value(m2, s.K, correction));
    } else {
      write_value(s.out_dtype, dst, acc);
    }
  }
}

template <class T, refkReduceOp OP>
refkStatus launch_reduce(const refkContext* ctx, const Plan& s, const refkTensor& out, const refkTensor& in,
                         double correction) {
  const bool dense_kept = s.kept >= 1 && s.kept_in[s.kept - 1] == static_cast<int64_t>(sizeof(T));
  const bool dense_reduced = s.red >= 1 && s.red_in[s.red - 1] == static_cast<int64_t>(sizeof(T));
  if (s.K <= 32 || (dense_kept && !dense_reduced && s.M >= 1024)) {
    reduce_per_thread_kernel<T, OP><<<blocks_for(s.M, kThreads), kThreads, 0, stream_of(ctx)>>>(
        s, static_cast<const char*>(in.data), static_cast<char*>(out.data), correction);
    return launched("reduce");
  }
  const unsigned blocks = static_cast<unsigned>(s.M < 65535 * 16 ? s.M : 65535 * 16);
  reduce_kernel<T, OP><<<blocks, kThreads, 0, stream_of(ctx)>>>(s, static_cast<const char*>(in.data),
                                                                 static_cast<char*>(out.data), correction);
  return launched("reduce");
}

template <class T>
refkStatus reduce_dispatch(const refkContext* ctx, refkReduceOp op, const Plan& s, const refkTensor& out,
                           const refkTensor& in, double correction) {
  switch (op) {
    case refkSum: return launch_reduce<T, refkSum>(ctx, s, out, in, correction);
    case refkNansum: return launch_reduce<T, refkNansum>(ctx, s, out, in, correction);
    case refkProd: return launch_reduce<T, refkProd>(ctx, s, out, in, correction);
    case refkAny: return launch_reduce<T, refkAny>(ctx, s, out, in, correction);
    case refkAll: return launch_reduce<T, refkAll>(ctx, s, out, in, correction);
    case refkAmax: return launch_reduce<T, refkAmax>(ctx, s, out, in, correction);
    case refkAmin: return launch_reduce<T, refkAmin>(ctx, s, out, in, correction);
    case refkMean:
    case refkVar:
      if constexpr (!is_floating_v<T>) {
        return unsupported(op == refkMean ? "mean" : "var", in.dtype);
      } else {
        if (op == refkMean) return launch_reduce<T, refkMean>(ctx, s, out, in, correction);
        return launch_reduce<T, refkVar>(ctx, s, out, in, correction);
      }
  }
  return fail(refkErrorInvalidValue, "reduce: unknown op");
}

// ---- arg reductions ---------------------------------------------------------

struct RowPlan {
  int ndim;  // dims of the rows' index space (in.ndim - 1)
  int64_t sizes[REFK_MAX_DIMS], in_strides[REFK_MAX_DIMS], a_strides[REFK_MAX_DIMS], b_strides[REFK_MAX_DIMS];
  int64_t rows, K, ks, ks_out;
};

template <class V>
struct Best {
  V v;
  int64_t i;
};

template <class T>
__global__ void argreduce_kernel(RowPlan p, int is_max, const T* in, T* values, int64_t* indices) {
  using V = opmath_t<T>;
  for (int64_t m = blockIdx.x; m < p.rows; m += gridDim.x) {
    int64_t in_off = 0, idx_off = 0, val_off = 0, rem = m;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const int64_t i = rem % p.sizes[d];
      rem /= p.sizes[d];
      in_off += i * p.in_strides[d];
      idx_off += i * p.a_strides[d];
      val_off += i * p.b_strides[d];
    }
    Best<V> best{load(in[in_off]), 0};
    bool have = false;
    for (int64_t k = threadIdx.x; k < p.K; k += blockDim.x) {
      const Best<V> c{load(in[in_off + k * p.ks]), k};
      if (!have) {
        best = c;
        have = true;
        continue;
      }
      if constexpr (is_floating_v<T>) {
        if (best.v != best.v) continue;
        if (c.v != c.v) {
          best = c;
          continue;
        }
      }
      if (is_max ? c.v > best.v : c.v < best.v) best = c;
    }
    if (!have) best.i = INT64_MAX;  // a thread with no element loses every comparison
    const int ismax = is_max;
    best = block_combine(best, [ismax](Best<V> a, Best<V> b) {
      if (a.i == INT64_MAX) return b;
      if (b.i == INT64_MAX) return a;
      if constexpr (is_floating_v<T>) {
        const bool na = a.v != a.v, nb = b.v != b.v;
        if (na || nb) {
          if (na && nb) return a.i < b.i ? a : b;
          return na ? a : b;
        }
      }
      if (a.v == b.v) return a.i < b.i ? a : b;
      return (ismax ? a.v > b.v : a.v < b.v) ? a : b;
    });
    if (threadIdx.x == 0) {
      indices[idx_off] = best.i;
      if (values != nullptr) values[val_off] = store<T>(best.v);
    }
  }
}

// ---- cumsum -------------------------------------------------------------------

template <class T, class A>
__global__ void cumsum_kernel(RowPlan p, const T* in, char* out, refkDtype out_dtype, int64_t out_isz) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; m < p.rows; m += stride) {
    int64_t ioff = 0, ooff = 0, rem = m;
    for (int d = p.ndim - 1; d >= 0; --d) {
      const int64_t i = rem % p.sizes[d];
      rem /= p.sizes[d];
      ioff += i * p.in_strides[d];
      ooff += i * p.a_strides[d];
    }
    A acc = 0;
    for (int64_t k = 0; k < p.K; ++k) {
      acc += static_cast<A>(load(in[ioff + k * p.ks]));
      write_value(out_dtype, out + (ooff + k * p.ks_out) * out_isz, acc);
    }
  }
}

RowPlan plan_rows(const refkTensor& in, const refkTensor* a, const refkTensor* b) {
  RowPlan p{};
  const int last = in.ndim - 1;
  p.ndim = last < 0 ? 0 : last;
  p.rows = 1;
  for (int d = 0; d < p.ndim; ++d) {
    p.sizes[d] = in.sizes[d];
    p.in_strides[d] = in.strides[d];
    p.a_strides[d] = a != nullptr && a->data != nullptr ? a->strides[d] : 0;
    p.b_strides[d] = b != nullptr && b->data != nullptr ? b->strides[d] : 0;
    p.rows *= in.sizes[d];
  }
  p.K = last < 0 ? 1 : in.sizes[last];
  p.ks = last < 0 ? 0 : in.strides[last];
  p.ks_out = last < 0 || a == nullptr ? 0 : a->strides[last < a->ndim ? last : 0];
  return p;
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkReduce(const refkContext* ctx, refkReduceOp op, const refkTensor* out, const refkTensor* in,
                      int32_t nreduce, refkScalar param) {
  if (auto s = checked(refk::check::reduce(*out, *in, nreduce))) return s;
  if (numel(*out) == 0) return refkSuccess;
  const Plan s = plan_reduce(*out, *in, nreduce);
  return dispatch(in->dtype, [&](auto tag) {
    return reduce_dispatch<typename decltype(tag)::type>(ctx, op, s, *out, *in, param.f);
  });
}

refkStatus refkArgReduce(const refkContext* ctx, int32_t is_max, const refkTensor* values, const refkTensor* indices,
                         const refkTensor* in) {
  if (auto s = checked(refk::check::argreduce(*indices, *in))) return s;
  const RowPlan p = plan_rows(*in, indices, values);
  if (p.rows == 0) return refkSuccess;
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned blocks = static_cast<unsigned>(p.rows < 65535 * 16 ? p.rows : 65535 * 16);
    argreduce_kernel<T><<<blocks, kThreads, 0, stream_of(ctx)>>>(p, is_max, static_cast<const T*>(in->data),
                                                                 static_cast<T*>(values->data),
                                                                 static_cast<int64_t*>(indices->data));
    return launched("argreduce");
  });
}

refkStatus refkCumsum(const refkContext* ctx, const refkTensor* out, const refkTensor* in) {
  if (auto s = check_shapes("cumsum", {out, in})) return s;
  if (numel(*out) == 0) return refkSuccess;
  RowPlan p = plan_rows(*in, out, nullptr);
  if (in->ndim == 0) p.ks_out = 0;
  const bool floating = out->dtype == refkFloat16 || out->dtype == refkBFloat16 || out->dtype == refkFloat32 ||
                        out->dtype == refkFloat64;
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(in->data);
    char* dst = static_cast<char*>(out->data);
    if (floating) {
      cumsum_kernel<T, double><<<blocks_for(p.rows), kThreads, 0, stream_of(ctx)>>>(p, src, dst, out->dtype,
                                                                                     itemsize(out->dtype));
    } else {
      cumsum_kernel<T, int64_t><<<blocks_for(p.rows), kThreads, 0, stream_of(ctx)>>>(p, src, dst, out->dtype,
                                                                                      itemsize(out->dtype));
    }
    return launched("cumsum");
  });
}

}  // extern "C"
