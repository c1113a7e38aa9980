// Fused kernels of the CPU reference library behind backend.yaml's custom
// operators: gelu(x + bias) and its gradient in one pass (the autograd: gelu
// entry and fused_bias_gelu), and RMS norm in one pass over each row
// (fused_rms_norm, Note [Row kernels] in Common.h). What a GELU element
// computes is common/Pointwise.h's fused::bias_gelu and
// fused::bias_gelu_backward, shared with the CUDA library (cuda/Fused.cu).
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

template <class T>
refkStatus forward_typed(int threads, const refkTensor& out, const refkTensor& in, const refkTensor* bias, bool tanh) {
  if (bias == nullptr) {
    const refkTensor* ops[2] = {&out, &in};
    const Loop<2> loop(ops);
    loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<T*>(p[0] + i * s[0]) = fused::bias_gelu<T>(p[1] + i * s[1], nullptr, tanh);
      }
    });
    return refkSuccess;
  }
  const refkTensor* ops[3] = {&out, &in, bias};
  const Loop<3> loop(ops);
  loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<T*>(p[0] + i * s[0]) = fused::bias_gelu<T>(p[1] + i * s[1], p[2] + i * s[2], tanh);
    }
  });
  return refkSuccess;
}

template <class T>
refkStatus backward_typed(int threads, const refkTensor& grad_in, const refkTensor& grad, const refkTensor& in,
                          const refkTensor* bias, bool tanh) {
  if (bias == nullptr) {
    const refkTensor* ops[3] = {&grad_in, &grad, &in};
    const Loop<3> loop(ops);
    loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            fused::bias_gelu_backward<T>(p[1] + i * s[1], p[2] + i * s[2], nullptr, tanh);
      }
    });
    return refkSuccess;
  }
  const refkTensor* ops[4] = {&grad_in, &grad, &in, bias};
  const Loop<4> loop(ops);
  loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<T*>(p[0] + i * s[0]) =
          fused::bias_gelu_backward<T>(p[1] + i * s[1], p[2] + i * s[2], p[3] + i * s[3], tanh);
    }
  });
  return refkSuccess;
}

refkStatus check_dtypes(const char* op, std::initializer_list<const refkTensor*> ts) {
  const refkDtype d = (*ts.begin())->dtype;
  for (const refkTensor* t : ts) {
    if (t != nullptr && t->dtype != d) {
      return fail(refkErrorInvalidValue, std::string(op) + ": operands must share one dtype");
    }
  }
  if (d != refkFloat32 && d != refkFloat64 && d != refkFloat16 && d != refkBFloat16) return unsupported(op, d);
  return refkSuccess;
}


// One row per thread at a time: mean of squares (Note [Two-level sums]),
// then x * rstd rounded to T, times the weight.
template <class T>
void rms_norm_typed(int threads, const refkTensor& out, const refkTensor& in, const refkTensor* weight, double eps) {
  const int64_t M = in.sizes[0], N = in.sizes[1];
  const std::vector<C<T>> w = load_vector<C<T>>(weight, N, C<T>(1));
  const RowShape src{1, N, 0, in.strides[1]}, dst{1, N, 0, out.strides[1]};
  parallel_for(M, std::max<int64_t>(1, kGrain / std::max<int64_t>(N, 1)), threads, [&](int64_t m0, int64_t m1) {
    C<T>* x = scratch<C<T>>(0, N);
    for (int64_t m = m0; m < m1; ++m) {
      load_row(x, data_at<T>(in, m * in.strides[0]), src);
      const double ms = lane_sum<C<T>>(N, [&](int64_t i) { return x[i] * x[i]; }) / static_cast<double>(N);
      const C<T> r = C<T>(1.0 / std::sqrt(ms + eps));
      for (int64_t i = 0; i < N; ++i) x[i] = load(store<T>(x[i] * r)) * w[static_cast<size_t>(i)];
      store_row(data_at_mut<T>(out, m * out.strides[0]), dst, x);
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkRmsNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                  const refkTensor* weight, double eps) {
  return guarded("rms_norm", [&] {
    const refkTensor* w = weight != nullptr && weight->data != nullptr ? weight : nullptr;
    if (in->ndim != 2) return fail(refkErrorInvalidValue, "rms_norm: expected a 2-d operand");
    if (auto s = check_shapes("rms_norm", {out, in})) return s;
    if (auto s = check_dtypes("rms_norm", {out, in, w})) return s;
    if (in->sizes[0] == 0 || in->sizes[1] == 0) return refkSuccess;
    const Access access({out, in, w});
    return dispatch(in->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        rms_norm_typed<T>(ctx->num_threads, *out, *in, w, eps);
        return refkSuccess;
      }
      return unsupported("rms_norm", in->dtype);
    });
  });
}

extern "C" refkStatus refkBiasGelu(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                   const refkTensor* bias, int32_t tanh) {
  return guarded("bias_gelu", [&] {
    const refkTensor* b = bias != nullptr && bias->data != nullptr ? bias : nullptr;
    if (auto s = checked(check::bias_gelu(false, {out, in, b}))) return s;
    const Access access({out, in, b});
    return dispatch(in->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) return forward_typed<T>(ctx->num_threads, *out, *in, b, tanh != 0);
      return unsupported("bias_gelu", in->dtype);
    });
  });
}

extern "C" refkStatus refkBiasGeluBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                           const refkTensor* in, const refkTensor* bias, int32_t tanh) {
  return guarded("bias_gelu_backward", [&] {
    const refkTensor* b = bias != nullptr && bias->data != nullptr ? bias : nullptr;
    if (auto s = checked(check::bias_gelu(true, {grad_in, grad, in, b}))) return s;
    const Access access({grad_in, grad, in, b});
    return dispatch(in->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) return backward_typed<T>(ctx->num_threads, *grad_in, *grad, *in, b, tanh != 0);
      return unsupported("bias_gelu_backward", in->dtype);
    });
  });
}
