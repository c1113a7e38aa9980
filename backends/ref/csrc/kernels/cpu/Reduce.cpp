// Reductions of the CPU reference library: sum, mean, prod, amax/amin,
// any/all, var, nansum over trailing dims; arg-max/min over the last dim;
// cumsum. A reduction is an output index space (the kept dims) times a
// reduced space; three loop shapes cover the cases that matter:
// - inner:    the reduced elements are one contiguous run (sum over the last
//             dim): eight independent accumulators per output, which the
//             compiler vectorizes without reassociating anything;
// - vertical: the reduced dim is outer and the kept dim contiguous (sum over
//             dim 0): a row of accumulators advanced one input row at a time;
// - strided:  anything else, one output at a time.
// Floating inputs accumulate in double, integers in int64 (acc_t); the plan
// and each op's accumulation are common/Reduce.h's, shared with the CUDA
// library.
#include "kernels/common/Pointwise.h"
#include "kernels/common/Reduce.h"
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

// Note [Two-level sums]: float sums run in float lanes over chunks of a
// few thousand elements (four floats per SIMD op instead of two doubles),
// and the chunk totals accumulate in double: as accurate as ATen's cascade
// sum at its speed. lane_t is the type a reduction's lanes step in.
template <class T, refkReduceOp OP>
using lane_t = std::conditional_t<(OP == refkSum || OP == refkMean || OP == refkNansum) && is_floating_v<T> &&
                                      !std::is_same_v<T, double>,
                                  float, typename Reducer<T, OP>::A>;

template <class T, refkReduceOp OP>
void reduce_typed(int threads, const refkTensor& out, const refkTensor& in, int nreduce, double correction) {
  using R = Reducer<T, OP>;
  using A = typename R::A;
  const ReduceShape s = plan_reduce(out, in, nreduce);
  const char* base = static_cast<const char*>(in.data);
  char* obase = static_cast<char*>(out.data);
  const int64_t K = s.K;
  auto finish = [&](A acc, char* dst, int64_t m_in) {
    if constexpr (OP == refkMean) {
      write_value(out.dtype, dst, mean_value(acc, K));
    } else if constexpr (OP == refkVar) {
      // Second pass: the sum of squared deviations from the mean.
      const double mean = mean_value(acc, K);
      double m2 = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double x = static_cast<double>(load(*reinterpret_cast<const T*>(base + m_in + offset_of(k, s.red, s.red_sizes, s.red_in))));
        m2 += (x - mean) * (x - mean);
      }
      write_value(out.dtype, dst, var_value(m2, K, correction));
    } else {
      write_value(out.dtype, dst, acc);
    }
  };
  using Step = Reducer<T, OP == refkVar ? refkSum : OP>;
  const bool inner = s.red == 1 && s.red_in[0] == static_cast<int64_t>(sizeof(T));
  const bool vertical = !inner && s.red == 1 && s.kept >= 1 && s.kept_in[s.kept - 1] == static_cast<int64_t>(sizeof(T));
  if (vertical && OP != refkVar) {
    // Rows of the innermost kept dim; each task owns a block of one row.
    const int64_t n = s.kept_sizes[s.kept - 1];
    const int64_t rows = s.M / n;
    constexpr int64_t kBlock = 512;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    parallel_for(rows * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(K * kBlock, 1)), threads,
                 [&](int64_t b0, int64_t b1) {
                   using L = lane_t<T, OP>;
                   constexpr int64_t kRowChunk = 256;
                   A acc[kBlock];
                   L part[kBlock];
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t row = b / blocks, j0 = (b % blocks) * kBlock, len = std::min(kBlock, n - j0);
                     const int64_t in_row = offset_of(row, s.kept - 1, s.kept_sizes, s.kept_in);
                     const int64_t out_row = offset_of(row, s.kept - 1, s.kept_sizes, s.kept_out);
                     for (int64_t j = 0; j < len; ++j) acc[j] = R::init();
                     for (int64_t k0 = 0; k0 < K; k0 += kRowChunk) {
                       for (int64_t j = 0; j < len; ++j) part[j] = L(R::init());
                       for (int64_t k = k0; k < std::min(K, k0 + kRowChunk); ++k) {
                         const T* p = reinterpret_cast<const T*>(base + in_row + k * s.red_in[0]) + j0;
                         for (int64_t j = 0; j < len; ++j) part[j] = R::step(part[j], load(p[j]));
                       }
                       for (int64_t j = 0; j < len; ++j) acc[j] = R::combine(acc[j], A(part[j]));
                     }
                     for (int64_t j = 0; j < len; ++j) {
                       finish(acc[j], obase + out_row + (j0 + j) * s.kept_out[s.kept - 1], 0);
                     }
                   }
                 });
    return;
  }
  parallel_for(s.M, std::max<int64_t>(1, kGrain / std::max<int64_t>(K, 1)), threads, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t m_in = offset_of(m, s.kept, s.kept_sizes, s.kept_in);
      A acc = Step::init();
      if (inner) {
        const T* p = reinterpret_cast<const T*>(base + m_in);
        // Note [Two-level sums]; for the other reductions L is A.
        using L = lane_t<T, OP == refkVar ? refkSum : OP>;
        constexpr int kLanes = 16;
        constexpr int64_t kChunk = 4096;
        for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
          const int64_t k1 = std::min(K, k0 + kChunk);
          L lanes[kLanes];
          for (auto& l : lanes) l = L(Step::init());
          int64_t k = k0;
          for (; k + kLanes <= k1; k += kLanes) {
            for (int l = 0; l < kLanes; ++l) lanes[l] = Step::step(lanes[l], load(p[k + l]));
          }
          for (; k < k1; ++k) lanes[0] = Step::step(lanes[0], load(p[k]));
          for (int w = kLanes / 2; w > 0; w /= 2) {
            for (int l = 0; l < w; ++l) lanes[l] = Step::combine(lanes[l], lanes[l + w]);
          }
          acc = Step::combine(acc, A(lanes[0]));
        }
      } else {
        for (int64_t k = 0; k < K; ++k) {
          acc = Step::step(acc, load(*reinterpret_cast<const T*>(base + m_in + offset_of(k, s.red, s.red_sizes, s.red_in))));
        }
      }
      finish(acc, obase + offset_of(m, s.kept, s.kept_sizes, s.kept_out), m_in);
    }
  });
}

template <class T>
refkStatus reduce_dispatch(int threads, refkReduceOp op, const refkTensor& out, const refkTensor& in, int nreduce,
                           double correction) {
  switch (op) {
    case refkSum: reduce_typed<T, refkSum>(threads, out, in, nreduce, correction); break;
    case refkNansum: reduce_typed<T, refkNansum>(threads, out, in, nreduce, correction); break;
    case refkProd: reduce_typed<T, refkProd>(threads, out, in, nreduce, correction); break;
    case refkAny: reduce_typed<T, refkAny>(threads, out, in, nreduce, correction); break;
    case refkAll: reduce_typed<T, refkAll>(threads, out, in, nreduce, correction); break;
    case refkAmax: reduce_typed<T, refkAmax>(threads, out, in, nreduce, correction); break;
    case refkAmin: reduce_typed<T, refkAmin>(threads, out, in, nreduce, correction); break;
    case refkMean:
    case refkVar:
      if constexpr (!is_floating_v<T>) return unsupported(op == refkMean ? "mean" : "var", in.dtype);
      else if (op == refkMean) reduce_typed<T, refkMean>(threads, out, in, nreduce, correction);
      else reduce_typed<T, refkVar>(threads, out, in, nreduce, correction);
      break;
  }
  return refkSuccess;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkReduce(const refkContext* ctx, refkReduceOp op, const refkTensor* out, const refkTensor* in,
                      int32_t nreduce, refkScalar param) {
  return guarded("reduce", [&] {
    if (const char* e = check::reduce(*out, *in, nreduce)) return fail(refkErrorInvalidValue, e);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    return dispatch(in->dtype, [&](auto tag) {
      return reduce_dispatch<typename decltype(tag)::type>(ctx->num_threads, op, *out, *in, nreduce, param.f);
    });
  });
}

refkStatus refkArgReduce(const refkContext* ctx, int32_t is_max, const refkTensor* values, const refkTensor* indices,
                         const refkTensor* in) {
  return guarded("argreduce", [&] {
    if (const char* e = check::argreduce(*indices, *in)) return fail(refkErrorInvalidValue, e);
    const int64_t K = in->sizes[in->ndim - 1];
    const Access access({values, indices, in});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      using V = opmath_t<T>;
      const refkTensor& idx = *indices;
      const int64_t M = numel(idx);
      const int64_t ks = in->strides[in->ndim - 1];
      parallel_for(M, std::max<int64_t>(1, kGrain / K), ctx->num_threads, [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          int64_t in_off = 0, idx_off = 0, val_off = 0, rem = m;
          for (int d = idx.ndim - 1; d >= 0; --d) {
            const int64_t i = rem % idx.sizes[d];
            rem /= idx.sizes[d];
            in_off += i * in->strides[d];
            idx_off += i * idx.strides[d];
            if (values->data) val_off += i * values->strides[d];
          }
          const T* p = static_cast<const T*>(in->data) + in_off;
          V best = load(p[0]);
          int64_t at = 0;
          for (int64_t k = 1; k < K; ++k) {
            const V x = load(p[k * ks]);
            if constexpr (is_floating_v<T>) {
              if (best != best) break;  // NaN wins, first one
              if (x != x) {
                best = x;
                at = k;
                break;
              }
            }
            if (is_max ? x > best : x < best) {
              best = x;
              at = k;
            }
          }
          static_cast<int64_t*>(idx.data)[idx_off] = at;
          if (values->data) static_cast<T*>(values->data)[val_off] = store<T>(best);
        }
      });
      return refkSuccess;
    });
  });
}

refkStatus refkCumsum(const refkContext* ctx, const refkTensor* out, const refkTensor* in) {
  return guarded("cumsum", [&] {
    if (auto s = check_shapes("cumsum", {out, in})) return s;
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    return dispatch(in->dtype, [&](auto in_tag) {
      using T = typename decltype(in_tag)::type;
      return dispatch(out->dtype, [&](auto out_tag) -> refkStatus {
        using O = typename decltype(out_tag)::type;
        using A = std::conditional_t<is_floating_v<O>, double, int64_t>;
        const int last = in->ndim - 1;
        const int64_t K = last < 0 ? 1 : in->sizes[last];
        const int64_t si = last < 0 ? 0 : in->strides[last], so = last < 0 ? 0 : out->strides[last];
        const int64_t M = numel(*in) / std::max<int64_t>(K, 1);
        parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(K, 1)), ctx->num_threads,
                     [&](int64_t m0, int64_t m1) {
                       for (int64_t m = m0; m < m1; ++m) {
                         int64_t ioff = 0, ooff = 0, rem = m;
                         for (int d = last - 1; d >= 0; --d) {
                           const int64_t i = rem % in->sizes[d];
                           rem /= in->sizes[d];
                           ioff += i * in->strides[d];
                           ooff += i * out->strides[d];
                         }
                         const T* p = static_cast<const T*>(in->data) + ioff;
                         O* o = static_cast<O*>(out->data) + ooff;
                         A acc = 0;
                         for (int64_t k = 0; k < K; ++k) {
                           acc += static_cast<A>(load(p[k * si]));
                           o[k * so] = store<O>(acc);
                         }
                       }
                     });
        return refkSuccess;
      });
    });
  });
}

}  // extern "C"

// Note [Histogram semantics] (RefKernels.h): one pass in element order with
// int64 counts, stored once in out's dtype.
extern "C" refkStatus refkHistc(const refkContext* ctx, const refkTensor* out, const refkTensor* in, refkScalar lo,
                                refkScalar hi) {
  (void)ctx;
  return guarded("histc", [&] {
    if (out->ndim != 1 || out->sizes[0] < 1) return fail(refkErrorInvalidValue, "histc: out must be 1-d with bins");
    if (out->dtype != in->dtype) return fail(refkErrorInvalidValue, "histc: out must have the input's dtype");
    const Access access({out, in});
    const int64_t bins = out->sizes[0];
    int64_t n = 1;
    for (int d = 0; d < in->ndim; ++d) n *= in->sizes[d];
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("histc", in->dtype);
      } else {
        std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
        [[maybe_unused]] const T tlo = store<T>(lo.f), thi = store<T>(hi.f);
        for (int64_t k = 0; k < n; ++k) {
          const T x = *data_at<T>(*in, offset_in(*in, k));
          int64_t b;
          if constexpr (is_floating_v<T>) {
            b = histc::floating_bin(x, tlo, thi, bins);
          } else {
            b = histc::integer_bin(static_cast<int64_t>(x), lo.i, hi.i, bins);
          }
          if (b < 0) continue;
          ++counts[static_cast<size_t>(b < bins ? b : bins - 1)];
        }
        for (int64_t b = 0; b < bins; ++b) {
          *data_at_mut<T>(*out, b * out->strides[0]) = store<T>(counts[static_cast<size_t>(b)]);
        }
        return refkSuccess;
      }
    });
  });
}
