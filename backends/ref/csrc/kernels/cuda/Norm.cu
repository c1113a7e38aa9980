// Softmax and the norms of the CUDA reference library: a block per row
// (Note [Row kernels] in cpu/Common.h: a softmax row, a layer-norm row, a
// group, a batch-norm channel), its threads striding over the row's
// elements and combining their partial sums in double across the block;
// every element's arithmetic is common/Norm.h's, shared with the CPU
// library (the same exponential, statistics and gradient formulas in the
// same compute type: double for the norms, Note [Norm precision]). Weight and bias gradients sum each column over the
// rows (samples) in order, a thread per column.
#include "kernels/common/Norm.h"
#include "kernels/common/Reduce.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace norm = refk::norm;

// The rows of N operands of one shape along `dim` (element strides): the
// other dims enumerate rows (size-1 dims dropped), every operand keeps its
// own strides.
template <int N>
struct Rows {
  int kept = 0;
  int64_t count = 1, len = 1;
  int64_t step[N] = {};
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t strides[N][REFK_MAX_DIMS] = {};

  __device__ int64_t offset(int64_t r, int k) const {
    int64_t off = 0;
    for (int d = kept - 1; d >= 0; --d) {
      off += (r % sizes[d]) * strides[k][d];
      r /= sizes[d];
    }
    return off;
  }
};

template <int N>
Rows<N> rows_of(const refkTensor* const (&ops)[N], int dim) {
  Rows<N> R;
  const refkTensor& t = *ops[0];
  R.len = t.ndim == 0 ? 1 : t.sizes[dim];
  for (int d = 0; d < t.ndim; ++d) {
    if (d == dim) {
      for (int k = 0; k < N; ++k) R.step[k] = ops[k]->strides[d];
      continue;
    }
    R.count *= t.sizes[d];
    if (t.sizes[d] == 1) continue;
    R.sizes[R.kept] = t.sizes[d];
    for (int k = 0; k < N; ++k) R.strides[k][R.kept] = ops[k]->strides[d];
    ++R.kept;
  }
  return R;
}

struct Max {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return b > a ? b : a;
  }
};

template <class T, class O>
__global__ void softmax_kernel(Rows<2> R, O* out, const T* in, bool log, bool round_sum) {
  using C = opmath_t<T>;
  const int64_t n = R.len, so = R.step[0], si = R.step[1];
  for (int64_t r = blockIdx.x; r < R.count; r += gridDim.x) {
    const T* x = in + R.offset(r, 1);
    O* y = out + R.offset(r, 0);
    C mx = C(load(x[0]));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = Max{}(mx, C(load(x[i * si])));
    mx = block_combine(mx, Max{});
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      sum += static_cast<double>(norm::exp_shifted(C(load(x[i * si])), mx));
    }
    sum = block_combine(sum, Sum{});
    if (log) {
      const C lse = C(std::log(norm::log_softmax_sum<T>(sum, round_sum)));
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        y[i * so] = store<O>(norm::log_softmax_value(C(load(x[i * si])), mx, lse));
      }
    } else {
      const C inv = norm::softmax_inverse<C>(sum);
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        y[i * so] = store<O>(norm::exp_shifted(C(load(x[i * si])), mx) * inv);
      }
    }
  }
}

// T: grad's and out's dtype, O: grad_in's.
template <class T, class O>
__global__ void softmax_backward_kernel(Rows<3> R, O* grad_in, const T* grad, const T* out, bool log) {
  using C = opmath_t<T>;
  const int64_t n = R.len, s0 = R.step[0], s1 = R.step[1], s2 = R.step[2];
  for (int64_t r = blockIdx.x; r < R.count; r += gridDim.x) {
    O* gi = grad_in + R.offset(r, 0);
    const T* g = grad + R.offset(r, 1);
    const T* y = out + R.offset(r, 2);
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const C gv = C(load(g[i * s1]));
      s += static_cast<double>(log ? gv : gv * C(load(y[i * s2])));
    }
    const C sc = C(block_combine(s, Sum{}));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const C gv = C(load(g[i * s1])), yv = C(load(y[i * s2]));
      gi[i * s0] = store<O>(log ? norm::log_softmax_grad(gv, norm::exp_shifted(yv, C(0)), sc)
                                : norm::softmax_grad(gv, yv, sc));
    }
  }
}

// ---- layer norm --------------------------------------------------------------

// A 2-d (M x N) operand: element (m, j) at m * s0 + j * s1.
struct Mat {
  int64_t s0, s1;
};
inline Mat mat_of(const refkTensor& t) { return Mat{t.strides[0], t.strides[1]}; }

template <class T>
__global__ void layer_norm_kernel(int64_t M, int64_t N, T* out, Mat mo, const T* in, Mat mi, char* mean, int64_t ms,
                                  refkDtype mean_dtype, char* rstd, int64_t rs, refkDtype rstd_dtype, Vec w, Vec b,
                                  double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const T* x = in + m * mi.s0;
    double s = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) s += static_cast<double>(C(load(x[j * mi.s1])));
    const double mu = norm::mean_of(block_combine(s, Sum{}), N);
    const C mc = C(mu);
    double m2 = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const C d = C(load(x[j * mi.s1])) - mc;
      m2 += static_cast<double>(d * d);
    }
    const double r = norm::rstd_of(norm::var_of(block_combine(m2, Sum{}), N), eps);
    const C rc = C(r);
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const C xhat = norm::normalized(C(load(x[j * mi.s1])), mc, rc);
      out[m * mo.s0 + j * mo.s1] = store<T>(norm::affine(xhat, C(w.at(j, 1.0)), C(b.at(j, 0.0))));
    }
    if (threadIdx.x == 0) {
      refk::write_value(mean_dtype, mean + m * ms, mu);
      refk::write_value(rstd_dtype, rstd + m * rs, r);
    }
  }
}

template <class T>
__global__ void layer_norm_grad_in_kernel(int64_t M, int64_t N, T* grad_in, Mat mgi, const T* grad, Mat mg,
                                          const T* in, Mat mi, Vec mean, Vec rstd, Vec w) {
  using C = norm::stat_t;  // Note [Norm precision]
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    const C mu = C(mean.at(m, 0.0)), rs = C(rstd.at(m, 1.0));
    double sa = 0, sb = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const C gw = C(load(grad[m * mg.s0 + j * mg.s1])) * C(w.at(j, 1.0));
      const C xhat = norm::normalized(C(load(in[m * mi.s0 + j * mi.s1])), mu, rs);
      sa += static_cast<double>(gw);
      sb += static_cast<double>(gw * xhat);
    }
    const C a = norm::row_mean<C>(block_combine(sa, Sum{}), N);
    const C b = norm::row_mean<C>(block_combine(sb, Sum{}), N);
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const C gw = C(load(grad[m * mg.s0 + j * mg.s1])) * C(w.at(j, 1.0));
      const C xhat = norm::normalized(C(load(in[m * mi.s0 + j * mi.s1])), mu, rs);
      grad_in[m * mgi.s0 + j * mgi.s1] = store<T>(norm::normalize_grad(gw, xhat, a, b, rs));
    }
  }
}

// A thread per column, summing over the rows in order.
template <class T>
__global__ void layer_norm_grad_wb_kernel(int64_t M, int64_t N, char* gw, int64_t gws, refkDtype gw_dtype, char* gb,
                                          int64_t gbs, refkDtype gb_dtype, const T* grad, Mat mg, const T* in, Mat mi,
                                          Vec mean, Vec rstd) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < N; j += stride) {
    double dw = 0, db = 0;
    for (int64_t m = 0; m < M; ++m) {
      const C gv = C(load(grad[m * mg.s0 + j * mg.s1]));
      const C xhat = norm::normalized(C(load(in[m * mi.s0 + j * mi.s1])), C(mean.at(m, 0.0)), C(rstd.at(m, 1.0)));
      dw += static_cast<double>(gv * xhat);
      db += static_cast<double>(gv);
    }
    if (gw != nullptr) refk::write_value(gw_dtype, gw + j * gws, dw);
    if (gb != nullptr) refk::write_value(gb_dtype, gb + j * gbs, db);
  }
}

// ---- batch norm and group norm ------------------------------------------------

// A 3-d (N x C x L) operand: element (n, c, l) at n * s0 + c * s1 + l * s2.
struct Cube {
  int64_t s0, s1, s2;
};
inline Cube cube_of(const refkTensor& t) { return Cube{t.strides[0], t.strides[1], t.strides[2]}; }

// A 1-d statistic or parameter that may be written: element i at data + i * stride (bytes).
struct Stat {
  char* data;
  refkDtype dtype;
  int64_t stride;
  __device__ double get(int64_t i) const { return read_value(dtype, data + i * stride); }
  __device__ void set(int64_t i, double v) const { refk::write_value(dtype, data + i * stride, v); }
};
inline Stat stat_of(const refkTensor* t) {
  if (t == nullptr || t->data == nullptr) return Stat{nullptr, refkFloat32, 0};
  return Stat{static_cast<char*>(t->data), t->dtype, (t->ndim > 0 ? t->strides[0] : 0) * itemsize(t->dtype)};
}

// Channel c of a batch norm: count = N * L elements, element i at (i / L, c, i % L).
__device__ inline int64_t channel_at(const Cube& k, int64_t c, int64_t i, int64_t L) {
  return (i / L) * k.s0 + c * k.s1 + (i % L) * k.s2;
}

template <class T>
__global__ void batch_norm_kernel(int64_t N, int64_t Ch, int64_t L, T* out, Cube ko, const T* in, Cube ki,
                                  Stat save_mean, Stat save_invstd, Vec w, Vec b, Stat running_mean,
                                  Stat running_var, bool training, double momentum, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t count = N * L;
  for (int64_t c = blockIdx.x; c < Ch; c += gridDim.x) {
    double mu, invstd;
    if (training) {
      double s = 0;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += static_cast<double>(C(load(in[channel_at(ki, c, i, L)])));
      const double mean = norm::mean_of(block_combine(s, Sum{}), count);
      const C mc = C(mean);
      double m2 = 0;
      for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        const C d = C(load(in[channel_at(ki, c, i, L)])) - mc;
        m2 += static_cast<double>(d * d);
      }
      const double var = norm::var_of(block_combine(m2, Sum{}), count);
      if (threadIdx.x == 0) {
        save_mean.set(c, mean);
        save_invstd.set(c, norm::rstd_of(var, eps));
        if (running_mean.data) running_mean.set(c, norm::running_update(running_mean.get(c), mean, momentum));
        if (running_var.data) {
          running_var.set(c, norm::running_update(running_var.get(c), norm::unbiased_var(var, count), momentum));
        }
      }
      // Normalized with the statistics in double (Note [Norm precision]).
      mu = mean;
      invstd = norm::rstd_of(var, eps);
    } else {
      mu = running_mean.get(c);
      invstd = norm::rstd_of(running_var.get(c), eps);
    }
    const C scale = norm::affine_scale(C(invstd), C(w.at(c, 1.0)));
    const C shift = norm::affine_shift(C(mu), scale, C(b.at(c, 0.0)));
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      out[channel_at(ko, c, i, L)] = store<T>(C(load(in[channel_at(ki, c, i, L)])) * scale + shift);
    }
  }
}

template <class T>
__global__ void batch_norm_backward_kernel(int64_t N, int64_t Ch, int64_t L, T* grad_in, Cube kgi, Stat grad_weight,
                                           Stat grad_bias, const T* grad, Cube kg, const T* in, Cube ki, Vec w,
                                           Vec running_mean, Vec running_var, Vec save_mean, Vec save_invstd,
                                           bool training, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t count = N * L;
  for (int64_t c = blockIdx.x; c < Ch; c += gridDim.x) {
    C mu = C(0), invstd = C(1);
    if (training) {
      mu = C(save_mean.at(c, 0.0));
      invstd = C(save_invstd.at(c, 1.0));
    } else if (running_mean.data != nullptr) {
      mu = C(running_mean.at(c, 0.0));
      invstd = C(norm::rstd_of(running_var.at(c, 1.0), eps));
    }
    const C wc = C(w.at(c, 1.0));
    double sgx = 0, sg = 0, sa = 0, sb = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const C gv = C(load(grad[channel_at(kg, c, i, L)]));
      const C xhat = norm::normalized(C(load(in[channel_at(ki, c, i, L)])), mu, invstd);
      sgx += static_cast<double>(gv * xhat);
      sg += static_cast<double>(gv);
      const C gw = gv * wc;
      sa += static_cast<double>(gw);
      sb += static_cast<double>(gw * xhat);
    }
    sgx = block_combine(sgx, Sum{});
    sg = block_combine(sg, Sum{});
    sa = block_combine(sa, Sum{});
    sb = block_combine(sb, Sum{});
    if (threadIdx.x == 0) {
      if (grad_weight.data) grad_weight.set(c, sgx);
      if (grad_bias.data) grad_bias.set(c, sg);
    }
    if (grad_in == nullptr) continue;
    const C a = norm::row_mean<C>(sa, count), bm = norm::row_mean<C>(sb, count);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const C gw = C(load(grad[channel_at(kg, c, i, L)])) * wc;
      const C xhat = norm::normalized(C(load(in[channel_at(ki, c, i, L)])), mu, invstd);
      grad_in[channel_at(kgi, c, i, L)] = store<T>(training ? norm::normalize_grad(gw, xhat, a, bm, invstd) : gw * invstd);
    }
  }
}

// Group (n, g) of a group norm: D channels from c0, element i at (n, c0 + i / HW, i % HW).
__device__ inline int64_t group_at(const Cube& k, int64_t n, int64_t c0, int64_t i, int64_t HW) {
  return n * k.s0 + (c0 + i / HW) * k.s1 + (i % HW) * k.s2;
}

template <class T>
__global__ void group_norm_kernel(int64_t N, int64_t Ch, int64_t HW, int64_t G, T* out, Cube ko, const T* in,
                                  Cube ki, char* mean, Mat mm, refkDtype mean_dtype, char* rstd, Mat mr,
                                  refkDtype rstd_dtype, Vec w, Vec b, double eps) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t D = Ch / G, count = D * HW;
  for (int64_t r = blockIdx.x; r < N * G; r += gridDim.x) {
    const int64_t n = r / G, g = r % G, c0 = g * D;
    double s = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += static_cast<double>(C(load(in[group_at(ki, n, c0, i, HW)])));
    const double mu = norm::mean_of(block_combine(s, Sum{}), count);
    const C mc = C(mu);
    double m2 = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const C d = C(load(in[group_at(ki, n, c0, i, HW)])) - mc;
      m2 += static_cast<double>(d * d);
    }
    const double rs = norm::rstd_of(norm::var_of(block_combine(m2, Sum{}), count), eps);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const int64_t c = c0 + i / HW;
      const C scale = norm::affine_scale(C(rs), C(w.at(c, 1.0)));
      const C shift = norm::affine_shift(mc, scale, C(b.at(c, 0.0)));
      out[group_at(ko, n, c0, i, HW)] = store<T>(C(load(in[group_at(ki, n, c0, i, HW)])) * scale + shift);
    }
    if (threadIdx.x == 0) {
      refk::write_value(mean_dtype, mean + n * mm.s0 + g * mm.s1, mu);
      refk::write_value(rstd_dtype, rstd + n * mr.s0 + g * mr.s1, rs);
    }
  }
}

// Per group: the per-channel sums of grad * xhat and grad into dwb (2 x N x
// Ch doubles), and grad_in.
template <class T>
__global__ void group_norm_backward_kernel(int64_t N, int64_t Ch, int64_t HW, int64_t G, T* grad_in, Cube kgi,
                                           const T* grad, Cube kg, const T* in, Cube ki, const char* mean, Mat mm,
                                           refkDtype mean_dtype, const char* rstd, Mat mr, refkDtype rstd_dtype,
                                           Vec w, double* dwb) {
  using C = norm::stat_t;  // Note [Norm precision]
  const int64_t D = Ch / G, count = D * HW;
  for (int64_t r = blockIdx.x; r < N * G; r += gridDim.x) {
    const int64_t n = r / G, g = r % G, c0 = g * D;
    const C mu = C(read_value(mean_dtype, mean + n * mm.s0 + g * mm.s1));
    const C rs = C(read_value(rstd_dtype, rstd + n * mr.s0 + g * mr.s1));
    for (int64_t c = 0; c < D; ++c) {
      double sw = 0, sb = 0;
      for (int64_t i = threadIdx.x; i < HW; i += blockDim.x) {
        const int64_t e = c * HW + i;
        const C gv = C(load(grad[group_at(kg, n, c0, e, HW)]));
        sw += static_cast<double>(gv * norm::normalized(C(load(in[group_at(ki, n, c0, e, HW)])), mu, rs));
        sb += static_cast<double>(gv);
      }
      sw = block_combine(sw, Sum{});
      sb = block_combine(sb, Sum{});
      if (threadIdx.x == 0) {
        dwb[n * Ch + c0 + c] = sw;
        dwb[N * Ch + n * Ch + c0 + c] = sb;
      }
    }
    if (grad_in == nullptr) continue;
    double sa = 0, sb = 0;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const C gw = C(load(grad[group_at(kg, n, c0, i, HW)])) * C(w.at(c0 + i / HW, 1.0));
      sa += static_cast<double>(gw);
      sb += static_cast<double>(gw * norm::normalized(C(load(in[group_at(ki, n, c0, i, HW)])), mu, rs));
    }
    const C a = norm::row_mean<C>(block_combine(sa, Sum{}), count);
    const C bm = norm::row_mean<C>(block_combine(sb, Sum{}), count);
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const C gw = C(load(grad[group_at(kg, n, c0, i, HW)])) * C(w.at(c0 + i / HW, 1.0));
      const C xhat = norm::normalized(C(load(in[group_at(ki, n, c0, i, HW)])), mu, rs);
      grad_in[group_at(kgi, n, c0, i, HW)] = store<T>(norm::normalize_grad(gw, xhat, a, bm, rs));
    }
  }
}

// grad_weight[c], grad_bias[c]: the per-sample sums over the samples in order.
__global__ void group_norm_wb_kernel(int64_t N, int64_t Ch, const double* dwb, Stat grad_weight, Stat grad_bias) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < Ch; c += stride) {
    double sw = 0, sb = 0;
    for (int64_t n = 0; n < N; ++n) sw += dwb[n * Ch + c], sb += dwb[N * Ch + n * Ch + c];
    if (grad_weight.data) grad_weight.set(c, sw);
    if (grad_bias.data) grad_bias.set(c, sb);
  }
}

char* bytes_of(const refkTensor* t) { return static_cast<char*>(t->data); }
int64_t stride0_bytes(const refkTensor* t) { return (t->ndim > 0 ? t->strides[0] : 0) * itemsize(t->dtype); }

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkSoftmax(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                       int32_t log) {
  if (auto s = check_shapes("softmax", {out, in})) return s;
  if (numel(*out) == 0) return refkSuccess;
  const refkTensor* ops[2] = {out, in};
  const Rows<2> R = rows_of(ops, dim);
  const unsigned blocks = blocks_per_row(R.count);
  if (in->dtype == refkFloat16 && out->dtype == refkFloat32) {
    softmax_kernel<Half, float><<<blocks, kBlockThreads, 0, stream_of(ctx)>>>(
        R, static_cast<float*>(out->data), static_cast<const Half*>(in->data), log != 0,
        norm::log_softmax_rounds_sum<Half>(in->ndim, dim));
    return launched("softmax");
  }
  if (in->dtype != out->dtype) return fail(refkErrorInvalidValue, "softmax: out must have in's dtype");
  return dispatch_floating("softmax", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_kernel<T, T><<<blocks, kBlockThreads, 0, stream_of(ctx)>>>(
        R, static_cast<T*>(out->data), static_cast<const T*>(in->data), log != 0,
        norm::log_softmax_rounds_sum<T>(in->ndim, dim));
    return launched("softmax");
  });
}

refkStatus refkSoftmaxBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                               const refkTensor* out, int32_t dim, int32_t log) {
  if (auto s = check_shapes("softmax_backward", {grad_in, grad, out})) return s;
  if (numel(*grad_in) == 0) return refkSuccess;
  if (grad->dtype != out->dtype) return fail(refkErrorInvalidValue, "softmax_backward: grad and out dtypes differ");
  const refkTensor* ops[3] = {grad_in, grad, out};
  const Rows<3> R = rows_of(ops, dim);
  const unsigned blocks = blocks_per_row(R.count);
  if (grad->dtype == refkFloat32 && grad_in->dtype == refkFloat16) {
    softmax_backward_kernel<float, Half><<<blocks, kBlockThreads, 0, stream_of(ctx)>>>(
        R, static_cast<Half*>(grad_in->data), static_cast<const float*>(grad->data),
        static_cast<const float*>(out->data), log != 0);
    return launched("softmax_backward");
  }
  if (grad_in->dtype != grad->dtype) return fail(refkErrorInvalidValue, "softmax_backward: bad grad_in dtype");
  return dispatch_floating("softmax_backward", grad->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_kernel<T, T><<<blocks, kBlockThreads, 0, stream_of(ctx)>>>(
        R, static_cast<T*>(grad_in->data), static_cast<const T*>(grad->data), static_cast<const T*>(out->data),
        log != 0);
    return launched("softmax_backward");
  });
}

refkStatus refkLayerNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, double eps) {
  if (auto s = check_rank("layer_norm", *in, 2)) return s;
  if (auto s = check_shapes("layer_norm", {out, in})) return s;
  const int64_t M = in->sizes[0], N = in->sizes[1];
  if (M == 0) return refkSuccess;
  if (!is_floating_dtype(mean->dtype) || !is_floating_dtype(rstd->dtype)) {
    return fail(refkErrorInvalidValue, "layer_norm: mean and rstd must be floating");
  }
  return dispatch_floating("layer_norm", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_kernel<T><<<blocks_per_row(M), kBlockThreads, 0, stream_of(ctx)>>>(
        M, N, static_cast<T*>(out->data), mat_of(*out), static_cast<const T*>(in->data), mat_of(*in), bytes_of(mean),
        stride0_bytes(mean), mean->dtype, bytes_of(rstd), stride0_bytes(rstd), rstd->dtype, vec_of(weight),
        vec_of(bias), eps);
    return launched("layer_norm");
  });
}

refkStatus refkLayerNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight) {
  if (auto s = check_rank("layer_norm_backward", *in, 2)) return s;
  if (auto s = check_shapes("layer_norm_backward", {grad, in})) return s;
  const int64_t M = in->sizes[0], N = in->sizes[1];
  return dispatch_floating("layer_norm_backward", in->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    const T* g = static_cast<const T*>(grad->data);
    const T* x = static_cast<const T*>(in->data);
    if (grad_in->data != nullptr && M > 0) {
      layer_norm_grad_in_kernel<T><<<blocks_per_row(M), kBlockThreads, 0, stream_of(ctx)>>>(
          M, N, static_cast<T*>(grad_in->data), mat_of(*grad_in), g, mat_of(*grad), x, mat_of(*in), vec_of(mean),
          vec_of(rstd), vec_of(weight));
      if (auto s = launched("layer_norm_backward")) return s;
    }
    const bool want_w = grad_weight->data != nullptr, want_b = grad_bias->data != nullptr;
    if ((!want_w && !want_b) || N == 0) return refkSuccess;
    layer_norm_grad_wb_kernel<T><<<blocks_for(N), kBlockThreads, 0, stream_of(ctx)>>>(
        M, N, want_w ? bytes_of(grad_weight) : nullptr, want_w ? stride0_bytes(grad_weight) : 0,
        want_w ? grad_weight->dtype : refkFloat32, want_b ? bytes_of(grad_bias) : nullptr,
        want_b ? stride0_bytes(grad_bias) : 0, want_b ? grad_bias->dtype : refkFloat32, g, mat_of(*grad), x,
        mat_of(*in), vec_of(mean), vec_of(rstd));
    return launched("layer_norm_backward");
  });
}

refkStatus refkBatchNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* save_mean,
                         const refkTensor* save_invstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, const refkTensor* running_mean, const refkTensor* running_var,
                         int32_t training, double momentum, double eps) {
  if (auto s = check_rank("batch_norm", *in, 3)) return s;
  if (auto s = check_shapes("batch_norm", {out, in})) return s;
  if (!training && (running_mean->data == nullptr || running_var->data == nullptr)) {
    return fail(refkErrorInvalidValue, "batch_norm: evaluation needs running stats");
  }
  if (numel(*in) == 0) return refkSuccess;
  const int64_t N = in->sizes[0], Ch = in->sizes[1], L = in->sizes[2];
  return dispatch_floating("batch_norm", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    batch_norm_kernel<T><<<blocks_per_row(Ch), kBlockThreads, 0, stream_of(ctx)>>>(
        N, Ch, L, static_cast<T*>(out->data), cube_of(*out), static_cast<const T*>(in->data), cube_of(*in),
        stat_of(save_mean), stat_of(save_invstd), vec_of(weight), vec_of(bias), stat_of(running_mean),
        stat_of(running_var), training != 0, momentum, eps);
    return launched("batch_norm");
  });
}

refkStatus refkBatchNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* weight, const refkTensor* running_mean,
                                 const refkTensor* running_var, const refkTensor* save_mean,
                                 const refkTensor* save_invstd, int32_t training, double eps) {
  if (auto s = check_rank("batch_norm_backward", *in, 3)) return s;
  if (auto s = check_shapes("batch_norm_backward", {grad, in})) return s;
  const int64_t N = in->sizes[0], Ch = in->sizes[1], L = in->sizes[2];
  if (Ch == 0) return refkSuccess;
  return dispatch_floating("batch_norm_backward", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* gi = grad_in->data != nullptr && N * L > 0 ? static_cast<T*>(grad_in->data) : nullptr;
    batch_norm_backward_kernel<T><<<blocks_per_row(Ch), kBlockThreads, 0, stream_of(ctx)>>>(
        N, Ch, L, gi, gi != nullptr ? cube_of(*grad_in) : Cube{0, 0, 0}, stat_of(grad_weight), stat_of(grad_bias),
        static_cast<const T*>(grad->data), cube_of(*grad), static_cast<const T*>(in->data), cube_of(*in),
        vec_of(weight), vec_of(running_mean), vec_of(running_var), vec_of(save_mean), vec_of(save_invstd),
        training != 0, eps);
    return launched("batch_norm_backward");
  });
}

refkStatus refkGroupNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, int64_t groups, double eps) {
  if (auto s = check_rank("group_norm", *in, 3)) return s;
  if (auto s = check_shapes("group_norm", {out, in})) return s;
  if (groups <= 0 || in->sizes[1] % groups != 0) return fail(refkErrorInvalidValue, "group_norm: bad groups");
  if (in->sizes[0] == 0) return refkSuccess;
  const int64_t N = in->sizes[0], Ch = in->sizes[1], HW = in->sizes[2];
  return dispatch_floating("group_norm", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    group_norm_kernel<T><<<blocks_per_row(N * groups), kBlockThreads, 0, stream_of(ctx)>>>(
        N, Ch, HW, groups, static_cast<T*>(out->data), cube_of(*out), static_cast<const T*>(in->data), cube_of(*in),
        bytes_of(mean), Mat{mean->strides[0] * itemsize(mean->dtype), mean->strides[1] * itemsize(mean->dtype)},
        mean->dtype, bytes_of(rstd),
        Mat{rstd->strides[0] * itemsize(rstd->dtype), rstd->strides[1] * itemsize(rstd->dtype)}, rstd->dtype,
        vec_of(weight), vec_of(bias), eps);
    return launched("group_norm");
  });
}

refkStatus refkGroupNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight,
                                 int64_t groups) {
  if (auto s = check_rank("group_norm_backward", *in, 3)) return s;
  if (auto s = check_shapes("group_norm_backward", {grad, in})) return s;
  if (groups <= 0 || in->sizes[1] % groups != 0) return fail(refkErrorInvalidValue, "group_norm: bad groups");
  const int64_t N = in->sizes[0], Ch = in->sizes[1], HW = in->sizes[2];
  if (Ch == 0) return refkSuccess;
  const cudaStream_t stream = stream_of(ctx);
  double* dwb = nullptr;
  const size_t bytes = static_cast<size_t>(2 * (N > 0 ? N : 1) * Ch) * sizeof(double);
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&dwb), bytes, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(dwb, 0, bytes, stream);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string("group_norm_backward: ") + cudaGetErrorString(e));
  const refkStatus status = dispatch_floating("group_norm_backward", in->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if (N > 0) {
      T* gi = grad_in->data != nullptr ? static_cast<T*>(grad_in->data) : nullptr;
      group_norm_backward_kernel<T><<<blocks_per_row(N * groups), kBlockThreads, 0, stream>>>(
          N, Ch, HW, groups, gi, gi != nullptr ? cube_of(*grad_in) : Cube{0, 0, 0}, static_cast<const T*>(grad->data),
          cube_of(*grad), static_cast<const T*>(in->data), cube_of(*in), bytes_of(mean),
          Mat{mean->strides[0] * itemsize(mean->dtype), mean->strides[1] * itemsize(mean->dtype)}, mean->dtype,
          bytes_of(rstd), Mat{rstd->strides[0] * itemsize(rstd->dtype), rstd->strides[1] * itemsize(rstd->dtype)},
          rstd->dtype, vec_of(weight), dwb);
      if (auto s = launched("group_norm_backward")) return s;
    }
    if (grad_weight->data == nullptr && grad_bias->data == nullptr) return refkSuccess;
    group_norm_wb_kernel<<<blocks_for(Ch), kBlockThreads, 0, stream>>>(N, Ch, dwb, stat_of(grad_weight),
                                                                        stat_of(grad_bias));
    return launched("group_norm_backward");
  });
  cudaFreeAsync(dwb, stream);
  return status;
}

}  // extern "C"
