// Unary elementwise kernels of the CUDA reference library. One kernel per
// dtype (and per predicate/same-dtype form) with the op chosen by the
// table's switch on a kernel argument (Note [Pointwise op tables] in
// common/UnaryOps.h): the branch is uniform across a launch, and the
// library compiles in seconds instead of once per (op, dtype). Which ops
// exist and each element's numerics are the table's, shared with the CPU
// library.
#include "kernels/common/UnaryOps.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

// One op of the table (common/UnaryOps.h), chosen per element by the
// table's switch; PREDICATE: the kernel's form (bool out or the input's dtype).
template <class T, bool PREDICATE>
struct Unary {
  refkUnaryOp op;
  refkUnaryParams p;
  __device__ std::conditional_t<PREDICATE, bool, opmath_t<T>> operator()(opmath_t<T> x) const {
    std::conditional_t<PREDICATE, bool, opmath_t<T>> r{};
    refk::unary::with_fn<T>(op, p, [&](auto fn) {
      if constexpr (decltype(fn)::predicate == PREDICATE) r = fn(x);
    });
    return r;
  }
};

template <class T>
struct Backward {
  refkUnaryOp op;
  refkUnaryParams p;
  __device__ opmath_t<T> operator()(opmath_t<T> g, opmath_t<T> x) const {
    opmath_t<T> r{};
    refk::unary::backward_with_fn<T>(op, p, [&](auto fn) { r = fn(g, x); });
    return r;
  }
};

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
                                const refkUnaryParams* params) {
  if (auto s = check_shapes("unary", {out, in})) return s;
  if (auto s = checked(refk::check::unary(op, *out, *in))) return s;
  const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
  const refkTensor* ops[2] = {out, in};
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (refk::unary::is_predicate(op)) return typed<bool, T, 1>("unary", ctx, ops, Unary<T, true>{op, p});
    return typed<T, T, 1>("unary", ctx, ops, Unary<T, false>{op, p});
  });
}

extern "C" refkStatus refkUnaryBackward(const refkContext* ctx, refkUnaryOp op, const refkTensor* grad_in,
                                        const refkTensor* grad, const refkTensor* x, const refkUnaryParams* params) {
  if (auto s = check_shapes("unary backward", {grad_in, grad, x})) return s;
  if (auto s = checked(refk::check::unary_backward(*grad_in, *grad, *x))) return s;
  const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
  const refkTensor* ops[3] = {grad_in, grad, x};
  return dispatch(x->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_v<T>) {
      if (!refk::unary::has_backward(op)) return fail(refkErrorNotImplemented, "unary backward: no gradient of this op");
      return typed<T, T, 2>("unary backward", ctx, ops, Backward<T>{op, p});
    } else {
      return unsupported("unary backward", x->dtype);
    }
  });
}
