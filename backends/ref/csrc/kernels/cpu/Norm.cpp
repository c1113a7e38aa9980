// Softmax and the norms of the CPU reference library (Note [Row kernels] in
// Common.h): each kernel names its rows as RowShapes, loads a row into
// scratch in the compute type C, runs its passes there and stores the
// result; every element's arithmetic is common/Norm.h's (shared with the
// CUDA library). The passes are shared:
// - moments:  mean and variance (two passes);
// - normalize_backward: the gradient through (x - mean) * rstd, the same
//   formula for all three norms, once the row's weights are folded into it.
// Rows run on threads in parallel; a row never splits, so results do not
// depend on the thread count. The norms compute in double (Note [Norm
// precision] in common/Norm.h), softmax in C.
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

template <class T>
using C_t = opmath_t<T>;  // float for float, float16, bfloat16; double for double

// Element offset of row `r` in a row-major space of the given sizes/strides.
inline int64_t row_offset(int64_t r, int n, const int64_t* sizes, const int64_t* strides) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (r % sizes[d]) * strides[d];
    r /= sizes[d];
  }
  return off;
}

// The rows of operands of one shape along `dim`: the other dims enumerate
// rows (size-1 dims dropped), and every operand keeps its own strides.
// Note [Row blocks]: when the rows are strided (dim is not the innermost)
// but neighbouring rows lie next to each other (the innermost other dim has
// stride 1 everywhere), rows go in blocks of adjacent ones, loaded into
// scratch transposed (load_rows): every cache line then serves a whole block
// instead of one element, as ATen's vectorized inner-dim softmax.
template <int N>
struct DimRows {
  int64_t count = 1;
  RowShape shape[N];
  int kept = 0;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t strides[N][REFK_MAX_DIMS] = {};

  DimRows(const refkTensor* const (&ops)[N], int dim) {
    const refkTensor& t = *ops[0];
    for (int k = 0; k < N; ++k) shape[k].len = t.ndim == 0 ? 1 : t.sizes[dim];
    for (int d = 0; d < t.ndim; ++d) {
      if (d == dim) {
        for (int k = 0; k < N; ++k) shape[k].stride = ops[k]->strides[d];
        continue;
      }
      count *= t.sizes[d];
      if (t.sizes[d] == 1) continue;
      sizes[kept] = t.sizes[d];
      for (int k = 0; k < N; ++k) strides[k][kept] = ops[k]->strides[d];
      ++kept;
    }
  }

  // f(offsets of a block's first row in every operand, rows in the block),
  // blocks split over threads; rows of a block are 1 element apart.
  template <class F>
  void run(int threads, F&& f) const {
    const int64_t len = shape[0].len;
    bool blocks = kept > 0;
    for (int k = 0; k < N; ++k) blocks = blocks && strides[k][kept - 1] == 1 && shape[k].stride != 1;
    const int64_t inner = blocks ? sizes[kept - 1] : 1;
    const int64_t B = blocks ? std::clamp<int64_t>(16384 / std::max<int64_t>(len, 1), 1, 64) : 1;
    const int64_t per_run = (inner + B - 1) / B;
    parallel_for((count / inner) * per_run, std::max<int64_t>(1, kGrain / std::max<int64_t>(len * B, 1)), threads,
                 [&](int64_t t0, int64_t t1) {
                   int64_t off[N];
                   for (int64_t t = t0; t < t1; ++t) {
                     const int64_t j0 = (t % per_run) * B, r = (t / per_run) * inner + j0;
                     for (int k = 0; k < N; ++k) off[k] = row_offset(r, kept, sizes, strides[k]);
                     f(off, std::min(B, inner - j0));
                   }
                 });
  }
};

// nb adjacent rows of n elements `step` apart into dst, row after row.
template <class T, class C>
void load_rows(C* dst, const T* src, int64_t n, int64_t step, int64_t nb) {
  if (nb == 1) return load_row(dst, src, RowShape{1, n, 0, step});
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t b = 0; b < nb; ++b) dst[b * n + k] = C(load(src[k * step + b]));
  }
}

template <class T, class C>
void store_rows(T* dst, int64_t n, int64_t step, int64_t nb, const C* src) {
  if (nb == 1) return store_row(dst, RowShape{1, n, 0, step}, src);
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t b = 0; b < nb; ++b) dst[k * step + b] = store<T>(src[b * n + k]);
  }
}


// ---- softmax ---------------------------------------------------------------

// nb rows of n elements in block, softmax'd in place; e: n elements of
// scratch for log_softmax's exponentials. One clone per vector width (Note
// [Vector width]): the passes over a row are what a small softmax costs.
template <class T, class C>
REFK_WIDE void softmax_block(C* block, C* e, int64_t n, int64_t nb, bool log, bool round_sum) {
  for (int64_t r = 0; r < nb; ++r) {
    C* x = block + r * n;
    const C mx = lane_max(x, n);
    if (log) {
      exp_row(e, x, n, mx);
      const double sum = norm::log_softmax_sum<T>(lane_sum<C>(n, [&](int64_t i) { return e[i]; }), round_sum);
      const C lse = C(std::log(sum));
      for (int64_t i = 0; i < n; ++i) x[i] = norm::log_softmax_value(x[i], mx, lse);
    } else {
      exp_row(x, x, n, mx);
      const C inv = norm::softmax_inverse<C>(lane_sum<C>(n, [&](int64_t i) { return x[i]; }));
      for (int64_t i = 0; i < n; ++i) x[i] *= inv;
    }
  }
}

template <class T, class O>
void softmax(int threads, const refkTensor& out, const refkTensor& in, int dim, bool log) {
  using C = C_t<T>;
  const refkTensor* ops[2] = {&out, &in};
  const DimRows<2> rows(ops, dim);
  const int64_t n = rows.shape[0].len;
  const bool round_sum = norm::log_softmax_rounds_sum<T>(in.ndim, dim);
  rows.run(threads, [&](const int64_t* off, int64_t nb) {
    C* block = scratch<C>(0, n * nb);
    C* e = log ? scratch<C>(1, n) : nullptr;
    load_rows(block, data_at<T>(in, off[1]), n, rows.shape[1].stride, nb);
    softmax_block<T>(block, e, n, nb, log, round_sum);
    store_rows(data_at_mut<O>(out, off[0]), n, rows.shape[0].stride, nb, block);
  });
}

// nb rows of gradients gs (and outputs ys, both n elements a row) into the
// input gradients, in place in gs (Note [Vector width]).
template <class C>
REFK_WIDE void softmax_backward_block(C* gs, C* ys, int64_t n, int64_t nb, bool log) {
  for (int64_t r = 0; r < nb; ++r) {
    C* g = gs + r * n;
    C* y = ys + r * n;
    if (log) {
      const C s = C(lane_sum<C>(n, [&](int64_t i) { return g[i]; }));
      exp_row(y, y, n, C(0));
      for (int64_t i = 0; i < n; ++i) g[i] = norm::log_softmax_grad(g[i], y[i], s);
    } else {
      const C s = C(lane_sum<C>(n, [&](int64_t i) { return g[i] * y[i]; }));
      for (int64_t i = 0; i < n; ++i) g[i] = norm::softmax_grad(g[i], y[i], s);
    }
  }
}

template <class T, class O>
void softmax_backward(int threads, const refkTensor& grad_in, const refkTensor& grad, const refkTensor& out, int dim,
                      bool log) {
  using C = C_t<T>;
  const refkTensor* ops[3] = {&grad_in, &grad, &out};
  const DimRows<3> rows(ops, dim);
  const int64_t n = rows.shape[0].len;
  rows.run(threads, [&](const int64_t* off, int64_t nb) {
    C* gs = scratch<C>(0, n * nb);
    C* ys = scratch<C>(1, n * nb);
    load_rows(gs, data_at<T>(grad, off[1]), n, rows.shape[1].stride, nb);
    load_rows(ys, data_at<T>(out, off[2]), n, rows.shape[2].stride, nb);
    softmax_backward_block(gs, ys, n, nb, log);
    store_rows(data_at_mut<O>(grad_in, off[0]), n, rows.shape[0].stride, nb, gs);
  });
}

// ---- shared norm passes ----------------------------------------------------

// x <- (x - mean) * rstd over a row.
template <class C>
REFK_WIDE void normalize(C* x, int64_t n, C mean, C rstd) {
  for (int64_t i = 0; i < n; ++i) x[i] = norm::normalized(x[i], mean, rstd);
}

// The gradient through xhat = (x - mean) * rstd of a row whose weighted
// incoming gradient is gw (= grad * weight): gw <- rstd * (gw - mean(gw) -
// xhat * mean(gw * xhat)).
template <class C>
REFK_WIDE void normalize_backward(C* gw, const C* xhat, int64_t n, C rstd) {
  const C a = norm::row_mean<C>(lane_sum<C>(n, [&](int64_t i) { return gw[i]; }), n);
  const C b = norm::row_mean<C>(lane_sum<C>(n, [&](int64_t i) { return gw[i] * xhat[i]; }), n);
  for (int64_t i = 0; i < n; ++i) gw[i] = norm::normalize_grad(gw[i], xhat[i], a, b, rstd);
}

using norm::rstd_of;

// ---- layer norm ------------------------------------------------------------

// Rows of a 2-d (M x N) operand.
inline RowShape row_of(const refkTensor& t) { return RowShape{1, t.sizes[1], 0, t.strides[1]}; }

template <class T>
void layer_norm(int threads, const refkTensor& out, const refkTensor& mean, const refkTensor& rstd,
                const refkTensor& in, const refkTensor* weight, const refkTensor* bias, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t M = in.sizes[0], N = in.sizes[1];
  const std::vector<C> w = load_vector<C>(weight, N, C(1)), b = load_vector<C>(bias, N, C(0));
  parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)), threads, [&](int64_t m0, int64_t m1) {
    C* x = scratch<C>(0, N);
    for (int64_t m = m0; m < m1; ++m) {
      load_row(x, data_at<T>(in, m * in.strides[0]), row_of(in));
      double mu, var;
      moments(x, N, mu, var);
      const double r = rstd_of(var, eps);
      normalize(x, N, C(mu), C(r));
      for (int64_t i = 0; i < N; ++i) x[i] = norm::affine(x[i], w[i], b[i]);
      store_row(data_at_mut<T>(out, m * out.strides[0]), row_of(out), x);
      store_any(mean, m * mean.strides[0], mu);
      store_any(rstd, m * rstd.strides[0], r);
    }
  });
}

// RMS norm (fused_rms_norm): x * rstd(mean of squares), rounded to T, times
// the weight; one row per thread at a time (Note [Two-level sums]).
template <class T>
void rms_norm(int threads, const refkTensor& out, const refkTensor& in, const refkTensor* weight, double eps) {
  using C = C_t<T>;
  const int64_t M = in.sizes[0], N = in.sizes[1];
  const std::vector<C> w = load_vector<C>(weight, N, C(1));
  parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)), threads, [&](int64_t m0, int64_t m1) {
    C* x = scratch<C>(0, N);
    for (int64_t m = m0; m < m1; ++m) {
      load_row(x, data_at<T>(in, m * in.strides[0]), row_of(in));
      const double ms = lane_sum<C>(N, [&](int64_t i) { return x[i] * x[i]; }) / static_cast<double>(N);
      const C r = C(rstd_of(ms, eps));
      for (int64_t i = 0; i < N; ++i) x[i] = load(store<T>(x[i] * r)) * w[static_cast<size_t>(i)];
      store_row(data_at_mut<T>(out, m * out.strides[0]), row_of(out), x);
    }
  });
}

template <class T>
void layer_norm_backward(int threads, const refkTensor& grad_in, const refkTensor& grad_weight,
                         const refkTensor& grad_bias, const refkTensor& grad, const refkTensor& in,
                         const refkTensor& mean, const refkTensor& rstd, const refkTensor* weight) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t M = in.sizes[0], N = in.sizes[1];
  const std::vector<C> w = load_vector<C>(weight, N, C(1));
  std::vector<C> mu(static_cast<size_t>(M)), rs(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    mu[m] = C(load_any(mean, m * mean.strides[0]));
    rs[m] = C(load_any(rstd, m * rstd.strides[0]));
  }
  if (grad_in.data != nullptr) {
    parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)), threads, [&](int64_t m0, int64_t m1) {
      C* g = scratch<C>(0, N);
      C* x = scratch<C>(1, N);
      for (int64_t m = m0; m < m1; ++m) {
        load_row(g, data_at<T>(grad, m * grad.strides[0]), row_of(grad));
        load_row(x, data_at<T>(in, m * in.strides[0]), row_of(in));
        normalize(x, N, mu[m], rs[m]);
        for (int64_t i = 0; i < N; ++i) g[i] *= w[i];
        normalize_backward(g, x, N, rs[m]);
        store_row(data_at_mut<T>(grad_in, m * grad_in.strides[0]), row_of(grad_in), g);
      }
    });
  }
  if (grad_weight.data == nullptr && grad_bias.data == nullptr) return;
  // Column sums over the rows, a block of columns per task.
  constexpr int64_t kBlock = 256;
  parallel_for((N + kBlock - 1) / kBlock, std::max<int64_t>(1, kGrain / std::max<int64_t>(M * kBlock, 1)), threads,
               [&](int64_t b0, int64_t b1) {
                 double dw[kBlock], db[kBlock];
                 for (int64_t blk = b0; blk < b1; ++blk) {
                   const int64_t j0 = blk * kBlock, len = std::min(kBlock, N - j0);
                   for (int64_t j = 0; j < len; ++j) dw[j] = db[j] = 0;
                   for (int64_t m = 0; m < M; ++m) {
                     const T* g = data_at<T>(grad, m * grad.strides[0] + j0 * grad.strides[1]);
                     const T* x = data_at<T>(in, m * in.strides[0] + j0 * in.strides[1]);
                     for (int64_t j = 0; j < len; ++j) {
                       const C gv = load(g[j * grad.strides[1]]);
                       dw[j] += static_cast<double>(gv * norm::normalized(C(load(x[j * in.strides[1]])), mu[m], rs[m]));
                       db[j] += static_cast<double>(gv);
                     }
                   }
                   for (int64_t j = 0; j < len; ++j) {
                     if (grad_weight.data) store_any(grad_weight, (j0 + j) * grad_weight.strides[0], dw[j]);
                     if (grad_bias.data) store_any(grad_bias, (j0 + j) * grad_bias.strides[0], db[j]);
                   }
                 }
               });
}

// ---- group norm ------------------------------------------------------------

// Group g of sample n: its D channels, one run each.
inline RowShape group_of(const refkTensor& t, int64_t D) { return RowShape{D, t.sizes[2], t.strides[1], t.strides[2]}; }
inline int64_t group_offset(const refkTensor& t, int64_t n, int64_t c0) { return n * t.strides[0] + c0 * t.strides[1]; }

template <class T>
void group_norm(int threads, const refkTensor& out, const refkTensor& mean, const refkTensor& rstd,
                const refkTensor& in, const refkTensor* weight, const refkTensor* bias, int64_t G, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t N = in.sizes[0], Ch = in.sizes[1], HW = in.sizes[2], D = Ch / G;
  const std::vector<C> w = load_vector<C>(weight, Ch, C(1)), b = load_vector<C>(bias, Ch, C(0));
  parallel_for(N * G, std::max<int64_t>(1, kGrain / std::max<int64_t>(D * HW, 1)), threads,
               [&](int64_t r0, int64_t r1) {
                 C* x = scratch<C>(0, D * HW);
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t n = r / G, g = r % G, c0 = g * D;
                   load_row(x, data_at<T>(in, group_offset(in, n, c0)), group_of(in, D));
                   double mu, var;
                   moments(x, D * HW, mu, var);
                   const double rs = rstd_of(var, eps);
                   for (int64_t c = 0; c < D; ++c) {
                     // ATen's form: x * scale + shift per channel.
                     const C scale = norm::affine_scale(C(rs), w[c0 + c]);
                     const C shift = norm::affine_shift(C(mu), scale, b[c0 + c]);
                     for (int64_t i = c * HW; i < (c + 1) * HW; ++i) x[i] = x[i] * scale + shift;
                   }
                   store_row(data_at_mut<T>(out, group_offset(out, n, c0)), group_of(out, D), x);
                   store_any(mean, n * mean.strides[0] + g * mean.strides[1], mu);
                   store_any(rstd, n * rstd.strides[0] + g * rstd.strides[1], rs);
                 }
               });
}

template <class T>
void group_norm_backward(int threads, const refkTensor& grad_in, const refkTensor& grad_weight,
                         const refkTensor& grad_bias, const refkTensor& grad, const refkTensor& in,
                         const refkTensor& mean, const refkTensor& rstd, const refkTensor* weight, int64_t G) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t N = in.sizes[0], Ch = in.sizes[1], HW = in.sizes[2], D = Ch / G;
  const std::vector<C> w = load_vector<C>(weight, Ch, C(1));
  // Per (sample, channel) sums of grad * xhat and grad, reduced over samples after.
  std::vector<double> dw(static_cast<size_t>(N * Ch)), db(static_cast<size_t>(N * Ch));
  parallel_for(N * G, std::max<int64_t>(1, kGrain / std::max<int64_t>(D * HW, 1)), threads,
               [&](int64_t r0, int64_t r1) {
                 C* g = scratch<C>(0, D * HW);
                 C* x = scratch<C>(1, D * HW);
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t n = r / G, gi = r % G, c0 = gi * D;
                   const C mu = C(load_any(mean, n * mean.strides[0] + gi * mean.strides[1]));
                   const C rs = C(load_any(rstd, n * rstd.strides[0] + gi * rstd.strides[1]));
                   load_row(g, data_at<T>(grad, group_offset(grad, n, c0)), group_of(grad, D));
                   load_row(x, data_at<T>(in, group_offset(in, n, c0)), group_of(in, D));
                   normalize(x, D * HW, mu, rs);
                   for (int64_t c = 0; c < D; ++c) {
                     const C* gc = g + c * HW;
                     const C* xc = x + c * HW;
                     dw[n * Ch + c0 + c] = lane_sum<C>(HW, [&](int64_t i) { return gc[i] * xc[i]; });
                     db[n * Ch + c0 + c] = lane_sum<C>(HW, [&](int64_t i) { return gc[i]; });
                   }
                   if (grad_in.data == nullptr) continue;
                   for (int64_t c = 0; c < D; ++c) {
                     for (int64_t i = c * HW; i < (c + 1) * HW; ++i) g[i] *= w[c0 + c];
                   }
                   normalize_backward(g, x, D * HW, rs);
                   store_row(data_at_mut<T>(grad_in, group_offset(grad_in, n, c0)), group_of(grad_in, D), g);
                 }
               });
  for (int64_t c = 0; c < Ch; ++c) {
    double sw = 0, sb = 0;
    for (int64_t n = 0; n < N; ++n) sw += dw[n * Ch + c], sb += db[n * Ch + c];
    if (grad_weight.data) store_any(grad_weight, c * grad_weight.strides[0], sw);
    if (grad_bias.data) store_any(grad_bias, c * grad_bias.strides[0], sb);
  }
}

// ---- batch norm ------------------------------------------------------------

// Channel c: one run per sample.
inline RowShape channel_of(const refkTensor& t) { return RowShape{t.sizes[0], t.sizes[2], t.strides[0], t.strides[2]}; }

template <class T>
void batch_norm(int threads, const refkTensor& out, const refkTensor& save_mean, const refkTensor& save_invstd,
                const refkTensor& in, const refkTensor* weight, const refkTensor* bias, const refkTensor& running_mean,
                const refkTensor& running_var, bool training, double momentum, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t Ch = in.sizes[1], count = in.sizes[0] * in.sizes[2];
  const std::vector<C> w = load_vector<C>(weight, Ch, C(1)), b = load_vector<C>(bias, Ch, C(0));
  parallel_for(Ch, std::max<int64_t>(1, kGrain / std::max<int64_t>(count, 1)), threads, [&](int64_t c0, int64_t c1) {
    C* x = scratch<C>(0, count);
    for (int64_t c = c0; c < c1; ++c) {
      load_row(x, data_at<T>(in, c * in.strides[1]), channel_of(in));
      double mu, invstd;
      if (training) {
        double var;
        moments(x, count, mu, var);
        invstd = rstd_of(var, eps);
        store_any(save_mean, c * save_mean.strides[0], mu);
        store_any(save_invstd, c * save_invstd.strides[0], invstd);
        if (running_mean.data) {
          const int64_t i = c * running_mean.strides[0];
          store_any(running_mean, i, norm::running_update(load_any(running_mean, i), mu, momentum));
        }
        if (running_var.data) {
          const int64_t i = c * running_var.strides[0];
          const double unbiased = norm::unbiased_var(var, count);
          store_any(running_var, i, norm::running_update(load_any(running_var, i), unbiased, momentum));
        }
        // Normalized with the statistics in double (Note [Norm precision]).
      } else {
        mu = load_any(running_mean, c * running_mean.strides[0]);
        invstd = rstd_of(load_any(running_var, c * running_var.strides[0]), eps);
      }
      // ATen's form: x * scale + shift.
      const C scale = norm::affine_scale(C(invstd), w[c]), shift = norm::affine_shift(C(mu), scale, b[c]);
      for (int64_t i = 0; i < count; ++i) x[i] = x[i] * scale + shift;
      store_row(data_at_mut<T>(out, c * out.strides[1]), channel_of(out), x);
    }
  });
}

template <class T>
void batch_norm_backward(int threads, const refkTensor& grad_in, const refkTensor& grad_weight,
                         const refkTensor& grad_bias, const refkTensor& grad, const refkTensor& in,
                         const refkTensor* weight, const refkTensor& running_mean, const refkTensor& running_var,
                         const refkTensor& save_mean, const refkTensor& save_invstd, bool training, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t Ch = in.sizes[1], count = in.sizes[0] * in.sizes[2];
  const std::vector<C> w = load_vector<C>(weight, Ch, C(1));
  parallel_for(Ch, std::max<int64_t>(1, kGrain / std::max<int64_t>(count, 1)), threads, [&](int64_t c0, int64_t c1) {
    C* g = scratch<C>(0, count);
    C* x = scratch<C>(1, count);
    for (int64_t c = c0; c < c1; ++c) {
      C mu = 0, invstd = 1;
      if (training) {
        mu = C(load_any(save_mean, c * save_mean.strides[0]));
        invstd = C(load_any(save_invstd, c * save_invstd.strides[0]));
      } else if (running_mean.data != nullptr) {
        mu = C(load_any(running_mean, c * running_mean.strides[0]));
        invstd = C(rstd_of(load_any(running_var, c * running_var.strides[0]), eps));
      }
      load_row(g, data_at<T>(grad, c * grad.strides[1]), channel_of(grad));
      load_row(x, data_at<T>(in, c * in.strides[1]), channel_of(in));
      normalize(x, count, mu, invstd);
      if (grad_weight.data) {
        store_any(grad_weight, c * grad_weight.strides[0], lane_sum<C>(count, [&](int64_t i) { return g[i] * x[i]; }));
      }
      if (grad_bias.data) store_any(grad_bias, c * grad_bias.strides[0], lane_sum<C>(count, [&](int64_t i) { return g[i]; }));
      if (grad_in.data == nullptr) continue;
      for (int64_t i = 0; i < count; ++i) g[i] *= w[c];
      if (training) {
        normalize_backward(g, x, count, invstd);
      } else {
        for (int64_t i = 0; i < count; ++i) g[i] *= invstd;
      }
      store_row(data_at_mut<T>(grad_in, c * grad_in.strides[1]), channel_of(grad_in), g);
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkSoftmax(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                       int32_t log) {
  return guarded("softmax", [&] {
    if (auto s = check_shapes("softmax", {out, in})) return s;
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    if (in->dtype == refkFloat16 && out->dtype == refkFloat32) {
      softmax<Half, float>(ctx->num_threads, *out, *in, dim, log != 0);
      return refkSuccess;
    }
    if (in->dtype != out->dtype) return fail(refkErrorInvalidValue, "softmax: out must have in's dtype");
    return dispatch_floating("softmax", in->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      softmax<T, T>(ctx->num_threads, *out, *in, dim, log != 0);
    });
  });
}

refkStatus refkSoftmaxBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                               const refkTensor* out, int32_t dim, int32_t log) {
  return guarded("softmax_backward", [&] {
    if (auto s = check_shapes("softmax_backward", {grad_in, grad, out})) return s;
    if (numel(*grad_in) == 0) return refkSuccess;
    if (grad->dtype != out->dtype) return fail(refkErrorInvalidValue, "softmax_backward: grad and out dtypes differ");
    const Access access({grad_in, grad, out});
    if (grad->dtype == refkFloat32 && grad_in->dtype == refkFloat16) {
      softmax_backward<float, Half>(ctx->num_threads, *grad_in, *grad, *out, dim, log != 0);
      return refkSuccess;
    }
    if (grad_in->dtype != grad->dtype) return fail(refkErrorInvalidValue, "softmax_backward: bad grad_in dtype");
    return dispatch_floating("softmax_backward", grad->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      softmax_backward<T, T>(ctx->num_threads, *grad_in, *grad, *out, dim, log != 0);
    });
  });
}

refkStatus refkLayerNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, double eps) {
  return guarded("layer_norm", [&] {
    if (auto s = check_rank("layer_norm", *in, 2)) return s;
    if (auto s = check_shapes("layer_norm", {out, in})) return s;
    if (in->sizes[0] == 0) return refkSuccess;
    const Access access({out, mean, rstd, in, weight, bias});
    return dispatch_floating("layer_norm", in->dtype, [&](auto tag) {
      layer_norm<typename decltype(tag)::type>(ctx->num_threads, *out, *mean, *rstd, *in, weight, bias, eps);
    });
  });
}

refkStatus refkRmsNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* weight,
                       double eps) {
  return guarded("rms_norm", [&] {
    const refkTensor* w = or_null(weight);
    if (auto s = check_rank("rms_norm", *in, 2)) return s;
    if (auto s = check_shapes("rms_norm", {out, in})) return s;
    if (out->dtype != in->dtype || (w != nullptr && w->dtype != in->dtype)) {
      return fail(refkErrorInvalidValue, "rms_norm: operands must share one dtype");
    }
    return dispatch_floating("rms_norm", in->dtype, [&](auto tag) {
      if (in->sizes[0] == 0 || in->sizes[1] == 0) return;
      const Access access({out, in, w});
      rms_norm<typename decltype(tag)::type>(ctx->num_threads, *out, *in, w, eps);
    });
  });
}

refkStatus refkLayerNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight) {
  return guarded("layer_norm_backward", [&] {
    if (auto s = check_rank("layer_norm_backward", *in, 2)) return s;
    if (auto s = check_shapes("layer_norm_backward", {grad, in})) return s;
    const Access access({grad_in, grad_weight, grad_bias, grad, in, mean, rstd, weight});
    return dispatch_floating("layer_norm_backward", in->dtype, [&](auto tag) {
      layer_norm_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_in, *grad_weight, *grad_bias, *grad,
                                                        *in, *mean, *rstd, weight);
    });
  });
}

refkStatus refkGroupNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, int64_t groups, double eps) {
  return guarded("group_norm", [&] {
    if (auto s = check_rank("group_norm", *in, 3)) return s;
    if (auto s = check_shapes("group_norm", {out, in})) return s;
    if (groups <= 0 || in->sizes[1] % groups != 0) return fail(refkErrorInvalidValue, "group_norm: bad groups");
    if (in->sizes[0] == 0) return refkSuccess;
    const Access access({out, mean, rstd, in, weight, bias});
    return dispatch_floating("group_norm", in->dtype, [&](auto tag) {
      group_norm<typename decltype(tag)::type>(ctx->num_threads, *out, *mean, *rstd, *in, weight, bias, groups, eps);
    });
  });
}

refkStatus refkGroupNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight,
                                 int64_t groups) {
  return guarded("group_norm_backward", [&] {
    if (auto s = check_rank("group_norm_backward", *in, 3)) return s;
    if (auto s = check_shapes("group_norm_backward", {grad, in})) return s;
    if (groups <= 0 || in->sizes[1] % groups != 0) return fail(refkErrorInvalidValue, "group_norm: bad groups");
    const Access access({grad_in, grad_weight, grad_bias, grad, in, mean, rstd, weight});
    return dispatch_floating("group_norm_backward", in->dtype, [&](auto tag) {
      group_norm_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_in, *grad_weight, *grad_bias, *grad,
                                                        *in, *mean, *rstd, weight, groups);
    });
  });
}

refkStatus refkBatchNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* save_mean,
                         const refkTensor* save_invstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, const refkTensor* running_mean, const refkTensor* running_var,
                         int32_t training, double momentum, double eps) {
  return guarded("batch_norm", [&] {
    if (auto s = check_rank("batch_norm", *in, 3)) return s;
    if (auto s = check_shapes("batch_norm", {out, in})) return s;
    if (!training && (running_mean->data == nullptr || running_var->data == nullptr)) {
      return fail(refkErrorInvalidValue, "batch_norm: evaluation needs running stats");
    }
    if (numel(*in) == 0) return refkSuccess;
    const Access access({out, save_mean, save_invstd, in, weight, bias, running_mean, running_var});
    return dispatch_floating("batch_norm", in->dtype, [&](auto tag) {
      batch_norm<typename decltype(tag)::type>(ctx->num_threads, *out, *save_mean, *save_invstd, *in, weight, bias,
                                               *running_mean, *running_var, training != 0, momentum, eps);
    });
  });
}

refkStatus refkBatchNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* weight, const refkTensor* running_mean,
                                 const refkTensor* running_var, const refkTensor* save_mean,
                                 const refkTensor* save_invstd, int32_t training, double eps) {
  return guarded("batch_norm_backward", [&] {
    if (auto s = check_rank("batch_norm_backward", *in, 3)) return s;
    if (auto s = check_shapes("batch_norm_backward", {grad, in})) return s;
    const Access access({grad_in, grad_weight, grad_bias, grad, in, weight, running_mean, running_var, save_mean,
                         save_invstd});
    return dispatch_floating("batch_norm_backward", in->dtype, [&](auto tag) {
      batch_norm_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_in, *grad_weight, *grad_bias, *grad,
                                                        *in, weight, *running_mean, *running_var, *save_mean,
                                                        *save_invstd, training != 0, eps);
    });
  });
}

}  // extern "C"
