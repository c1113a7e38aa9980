// Fused GELU kernels of the CUDA reference library: gelu(x + bias) and its
// gradient in one pass, a thread per element on the shared elementwise
// launcher (Common.cuh). What an element computes is common/Pointwise.h's
// fused::bias_gelu and fused::bias_gelu_backward, the CPU library's
// (cpu/Fused.cpp); operand checks are common/Checks.h's check::bias_gelu.
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace fused = refk::fused;

// Operands: out, in[, bias].
template <class T, int N>
struct BiasGelu {
  bool tanh;
  __device__ void operator()(char* const (&p)[N]) const {
    if constexpr (N == 3) {
      *reinterpret_cast<T*>(p[0]) = fused::bias_gelu<T>(p[1], p[2], tanh);
    } else {
      *reinterpret_cast<T*>(p[0]) = fused::bias_gelu<T>(p[1], nullptr, tanh);
    }
  }
};

// Operands: grad_in, grad, in[, bias].
template <class T, int N>
struct BiasGeluBackward {
  bool tanh;
  __device__ void operator()(char* const (&p)[N]) const {
    if constexpr (N == 4) {
      *reinterpret_cast<T*>(p[0]) = fused::bias_gelu_backward<T>(p[1], p[2], p[3], tanh);
    } else {
      *reinterpret_cast<T*>(p[0]) = fused::bias_gelu_backward<T>(p[1], p[2], nullptr, tanh);
    }
  }
};


}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkBiasGelu(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                   const refkTensor* bias, int32_t tanh) {
  const refkTensor* b = or_null(bias);
  if (auto s = checked(refk::check::bias_gelu(false, {out, in, b}))) return s;
  return dispatch_floating("bias_gelu", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (b == nullptr) {
      const refkTensor* ops[2] = {out, in};
      return for_each<2>("bias_gelu", ctx, ops, BiasGelu<T, 2>{tanh != 0});
    }
    const refkTensor* ops[3] = {out, in, b};
    return for_each<3>("bias_gelu", ctx, ops, BiasGelu<T, 3>{tanh != 0});
  });
}

extern "C" refkStatus refkBiasGeluBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                           const refkTensor* in, const refkTensor* bias, int32_t tanh) {
  const refkTensor* b = or_null(bias);
  if (auto s = checked(refk::check::bias_gelu(true, {grad_in, grad, in, b}))) return s;
  return dispatch_floating("bias_gelu_backward", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (b == nullptr) {
      const refkTensor* ops[3] = {grad_in, grad, in};
      return for_each<3>("bias_gelu_backward", ctx, ops, BiasGeluBackward<T, 3>{tanh != 0});
    }
    const refkTensor* ops[4] = {grad_in, grad, in, b};
    return for_each<4>("bias_gelu_backward", ctx, ops, BiasGeluBackward<T, 4>{tanh != 0});
  });
}
