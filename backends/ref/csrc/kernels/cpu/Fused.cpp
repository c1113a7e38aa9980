// Fused kernels of the CPU reference library behind backend.yaml's custom
// operators: gelu(x + bias) and its gradient in one pass (the autograd: gelu
// entry and fused_bias_gelu); fused_rms_norm's kernel is with the other
// norms (Norm.cpp). What a GELU element
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

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkBiasGelu(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                   const refkTensor* bias, int32_t tanh) {
  return guarded("bias_gelu", [&] {
    const refkTensor* b = or_null(bias);
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
    const refkTensor* b = or_null(bias);
    if (auto s = checked(check::bias_gelu(true, {grad_in, grad, in, b}))) return s;
    const Access access({grad_in, grad, in, b});
    return dispatch(in->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) return backward_typed<T>(ctx->num_threads, *grad_in, *grad, *in, b, tanh != 0);
      return unsupported("bias_gelu_backward", in->dtype);
    });
  });
}
