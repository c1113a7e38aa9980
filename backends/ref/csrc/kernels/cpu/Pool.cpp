// Pooling of the CPU reference library: max, average and adaptive average
// pooling over 1 to 3 spatial dims, and their gradients, as one kernel over
// the index space of Spatial.h (1-d and 2-d are 3-d with leading size-1
// dims). The windows, divisors and accumulate rules are common/Pool.h's,
// shared with the CUDA library; this file keeps the CPU's loops.
//
// Forward threads over (plane, output position) items; each item loops over
// its window, and over the lane (C of a channels-last tensor) innermost.
// The average gradients are gathers (every input element sums the windows
// that contain it, in output order), so they thread like the forward pass
// and stay deterministic; the max gradient scatters along each plane's
// indices in output order, threaded over planes.
#include "kernels/cpu/Common.h"
#include "kernels/common/Pool.h"
#include "kernels/cpu/Spatial.h"

#include <vector>

namespace refk {
namespace {

using pool::Geometry;
using pool::sum_t;
using pool::Window;

template <class T>
void pool_forward(int threads, const Geometry& g, const Spatial& s, T* out, int64_t* ind, const T* in) {
  using M = opmath_t<T>;
  using S = sum_t<T>;
  std::vector<Window> wins[3];
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < s.b[d]; ++o) wins[d].push_back(g.window(d, o, s.a[d], s.b[d]));
  }
  int64_t work = s.lanes * s.b[2];
  for (int d = 0; d < 3; ++d) work *= std::max<int64_t>(1, g.mode == refkPoolAdaptiveAvg ? s.a[d] / s.b[d] : g.kernel[d]);
  const bool is_max = g.mode == refkPoolMax;
  const M init = pool::lowest<M>();
  const int64_t ls = s.lane_st[0];
  const bool in_storage = g.sums_in_storage();  // Note [Adaptive 3-d averages of half types]
  // Threads take rows of outputs (a plane, o0, o1); a row walks o2.
  const int64_t rows = s.planes * s.b[0] * s.b[1];
  parallel_for(rows, std::max<int64_t>(1, kGrain / work), threads, [&](int64_t begin, int64_t end) {
    std::vector<M> best(is_max ? s.lanes : 0);
    std::vector<int64_t> where(is_max ? s.lanes : 0);
    std::vector<S> sum(is_max ? 0 : s.lanes);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o0 = row / s.b[1] % s.b[0], o1 = row % s.b[1];
      int64_t off[3];
      s.plane_offsets(row / (s.b[0] * s.b[1]), off);
      const T* ip = in + off[0];
      T* orow = out + off[1] + o0 * s.st[1][0] + o1 * s.st[1][1];
      int64_t* irow = is_max ? ind + off[2] + o0 * s.st[2][0] + o1 * s.st[2][1] : nullptr;
      const Window w0 = wins[0][o0], w1 = wins[1][o1];
      for (int64_t o2 = 0; o2 < s.b[2]; ++o2) {
        const Window w2 = wins[2][o2];
        T* op = orow + o2 * s.st[1][2];
        if (is_max) {
          const int64_t first = (w0.begin * s.a[1] + w1.begin) * s.a[2] + w2.begin;
          int64_t* xp = irow + o2 * s.st[2][2];
          if (s.lanes == 1) {
            M b = init;
            int64_t at = first;
            for (int64_t i0 = w0.begin; i0 < w0.end; i0 += w0.step) {
              for (int64_t i1 = w1.begin; i1 < w1.end; i1 += w1.step) {
                const T* q = ip + i0 * s.st[0][0] + i1 * s.st[0][1];
                const int64_t flat = (i0 * s.a[1] + i1) * s.a[2];
                for (int64_t i2 = w2.begin; i2 < w2.end; i2 += w2.step) {
                  const M v = load(q[i2 * s.st[0][2]]);
                  if (pool::takes(v, b)) {
                    b = v;
                    at = flat + i2;
                  }
                }
              }
            }
            *op = store<T>(b);
            *xp = at;
            continue;
          }
          std::fill(best.begin(), best.end(), init);
          std::fill(where.begin(), where.end(), first);
          for (int64_t i0 = w0.begin; i0 < w0.end; i0 += w0.step) {
            for (int64_t i1 = w1.begin; i1 < w1.end; i1 += w1.step) {
              for (int64_t i2 = w2.begin; i2 < w2.end; i2 += w2.step) {
                const T* q = ip + i0 * s.st[0][0] + i1 * s.st[0][1] + i2 * s.st[0][2];
                const int64_t flat = (i0 * s.a[1] + i1) * s.a[2] + i2;
                for (int64_t c = 0; c < s.lanes; ++c) {
                  const M v = load(q[c * ls]);
                  const bool take = pool::takes(v, best[c]);
                  best[c] = take ? v : best[c];
                  where[c] = take ? flat : where[c];
                }
              }
            }
          }
          for (int64_t c = 0; c < s.lanes; ++c) {
            op[c * s.lane_st[1]] = store<T>(best[c]);
            xp[c * s.lane_st[2]] = where[c];
          }
          continue;
        }
        // averages
        std::fill(sum.begin(), sum.end(), S(0));
        const Window w[3] = {w0, w1, w2};
        if (in_storage) {  // Note [Adaptive 3-d averages of half types]: no empty windows, c outermost
          for (int64_t c = 0; c < s.lanes; ++c) {
            for (int64_t i0 = w0.begin; i0 < w0.end; ++i0) {
              for (int64_t i1 = w1.begin; i1 < w1.end; ++i1) {
                for (int64_t i2 = w2.begin; i2 < w2.end; ++i2) {
                  sum[c] = pool::add<T>(sum[c], load(ip[i0 * s.st[0][0] + i1 * s.st[0][1] + i2 * s.st[0][2] + c * ls]),
                                        true);
                }
              }
            }
          }
        } else {
          for (int64_t i0 = w0.begin; i0 < w0.end; ++i0) {
            for (int64_t i1 = w1.begin; i1 < w1.end; ++i1) {
              for (int64_t i2 = w2.begin; i2 < w2.end; ++i2) {
                const T* q = ip + i0 * s.st[0][0] + i1 * s.st[0][1] + i2 * s.st[0][2];
                for (int64_t c = 0; c < s.lanes; ++c) sum[c] = pool::add<T>(sum[c], load(q[c * ls]), false);
              }
            }
          }
        }
        for (int64_t c = 0; c < s.lanes; ++c) sum[c] = pool::average<T>(sum[c], g, w, in_storage);
        for (int64_t c = 0; c < s.lanes; ++c) op[c * s.lane_st[1]] = store<T>(sum[c]);
      }
    }
  });
}

// grad_in (side A) from grad_out (side B) for the averages: a gather.
template <class T>
void avg_backward(int threads, const Geometry& g, const Spatial& s, T* gin, const T* gout) {
  using S = sum_t<T>;
  const int64_t npos = s.a_numel();
  const int64_t items = s.planes * npos;
  std::vector<Window> wins[3];
  std::vector<pool::Cover> covers[3];
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < s.b[d]; ++o) wins[d].push_back(g.window(d, o, s.a[d], s.b[d]));
    for (int64_t i = 0; i < s.a[d]; ++i) covers[d].push_back(g.covering(d, i, s.a[d], s.b[d]));
  }
  parallel_for(items, std::max<int64_t>(1, kGrain / (8 * s.lanes)), threads, [&](int64_t begin, int64_t end) {
    std::vector<S> acc(s.lanes);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t p = item / npos, r = item % npos;
      const int64_t i[3] = {r / (s.a[1] * s.a[2]), r / s.a[2] % s.a[1], r % s.a[2]};
      int64_t off[3];
      s.plane_offsets(p, off);
      std::fill(acc.begin(), acc.end(), S(0));
      const auto c0 = covers[0][i[0]], c1 = covers[1][i[1]], c2 = covers[2][i[2]];
      for (int64_t o0 = c0.lo; o0 < c0.hi; ++o0) {
        for (int64_t o1 = c1.lo; o1 < c1.hi; ++o1) {
          for (int64_t o2 = c2.lo; o2 < c2.hi; ++o2) {
            const Window w[3] = {wins[0][o0], wins[1][o1], wins[2][o2]};
            const T* q = gout + off[1] + o0 * s.st[1][0] + o1 * s.st[1][1] + o2 * s.st[1][2];
            for (int64_t c = 0; c < s.lanes; ++c) acc[c] = pool::add_gradient<T>(acc[c], load(q[c * s.lane_st[1]]), g, w);
          }
        }
      }
      T* q = gin + off[0] + i[0] * s.st[0][0] + i[1] * s.st[0][1] + i[2] * s.st[0][2];
      for (int64_t c = 0; c < s.lanes; ++c) q[c * s.lane_st[0]] = store<T>(acc[c]);
    }
  });
}

// grad_in (side A) from grad_out and indices (side B) for max: a scatter per plane.
template <class T>
void max_backward(int threads, const Spatial& s, T* gin, const T* gout, const int64_t* ind) {
  const int64_t planes = s.planes * s.lanes;
  const int64_t na = s.a_numel(), nb = s.b_numel();
  parallel_for(planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, na + nb)), threads,
               [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      int64_t off[3];
      s.plane_offsets(pl / s.lanes, off);
      const int64_t c = pl % s.lanes;
      T* gi = gin + off[0] + c * s.lane_st[0];
      const T* go = gout + off[1] + c * s.lane_st[1];
      const int64_t* ix = ind + off[2] + c * s.lane_st[2];
      for (int64_t r = 0; r < na; ++r) {
        gi[r / (s.a[1] * s.a[2]) * s.st[0][0] + r / s.a[2] % s.a[1] * s.st[0][1] + r % s.a[2] * s.st[0][2]] = T{};
      }
      for (int64_t r = 0; r < nb; ++r) {
        const int64_t o0 = r / (s.b[1] * s.b[2]), o1 = r / s.b[2] % s.b[1], o2 = r % s.b[2];
        const int64_t at = ix[o0 * s.st[2][0] + o1 * s.st[2][1] + o2 * s.st[2][2]];
        if (at < 0 || at >= na) continue;
        T& dst = gi[at / (s.a[1] * s.a[2]) * s.st[0][0] + at / s.a[2] % s.a[1] * s.st[0][1] + at % s.a[2] * s.st[0][2]];
        dst = store<T>(load(dst) + load(go[o0 * s.st[1][0] + o1 * s.st[1][1] + o2 * s.st[1][2]]));
      }
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkPool(const refkContext* ctx, refkPoolMode mode, const refkTensor* out,
                               const refkTensor* indices, const refkTensor* in, const refkPoolParams* params) {
  return guarded("refkPool", [&]() -> refkStatus {
    if (const refkStatus st = checked(check::pool(mode, *out, indices, *in, *params))) return st;
    const bool is_max = mode == refkPoolMax;
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, indices, in});
    const Geometry g(mode, *params);
    const Spatial s = make_spatial(params->nspatial, *in, *out, is_max ? indices : nullptr, true);
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("refkPool", in->dtype);
      } else {
        pool_forward<T>(ctx->num_threads, g, s, static_cast<T*>(out->data),
                        is_max ? static_cast<int64_t*>(indices->data) : nullptr, static_cast<const T*>(in->data));
        return refkSuccess;
      }
    });
  });
}

extern "C" refkStatus refkPoolBackward(const refkContext* ctx, refkPoolMode mode, const refkTensor* grad_in,
                                       const refkTensor* grad_out, const refkTensor* indices,
                                       const refkPoolParams* params) {
  return guarded("refkPoolBackward", [&]() -> refkStatus {
    if (const refkStatus st = checked(check::pool_backward(mode, *grad_in, *grad_out, indices, *params))) return st;
    const bool is_max = mode == refkPoolMax;
    if (numel(*grad_in) == 0) return refkSuccess;
    if (numel(*grad_out) == 0) return refkFill(ctx, grad_in, refkScalar{0, 0});
    const Access access({grad_in, grad_out, indices});
    const Geometry g(mode, *params);
    // The gather reads grad_out most; the scatter has no lane.
    const Spatial s = make_spatial(params->nspatial, *grad_in, *grad_out, is_max ? indices : nullptr, !is_max, 1);
    return dispatch(grad_in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("refkPoolBackward", grad_in->dtype);
      } else {
        T* gin = static_cast<T*>(grad_in->data);
        if (is_max) {
          max_backward<T>(ctx->num_threads, s, gin, static_cast<const T*>(grad_out->data),
                          static_cast<const int64_t*>(indices->data));
        } else {
          avg_backward<T>(ctx->num_threads, g, s, gin, static_cast<const T*>(grad_out->data));
        }
        return refkSuccess;
      }
    });
  });
}
