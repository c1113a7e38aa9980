// Unary elementwise kernels of the CPU reference library: math, rounding,
// predicates and activations. Which ops exist and what an element computes
// is common/UnaryOps.h's table, shared with the CUDA library (Note
// [Pointwise op tables]); here each op becomes a row loop over the loop
// planner's coalesced, threaded rows, with a contiguous fast path the
// compiler vectorizes.
#include "kernels/common/UnaryOps.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

// One row loop per op of the table (common/UnaryOps.h).
template <class T>
void unary_typed(int threads, refkUnaryOp op, const refkTensor& out, const refkTensor& in,
                 const refkUnaryParams& p) {
  const refkTensor* ops[2] = {&out, &in};
  const Loop<2> loop(ops);
  unary::with_fn<T>(op, p, [&](auto fn) {
    if constexpr (decltype(fn)::predicate) {
      typed_rows<bool, T, 1>(loop, threads, fn);
    } else {
      typed_rows<T, T, 1>(loop, threads, fn);
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
                     const refkUnaryParams* params) {
  return guarded("unary", [&] {
    if (auto s = check_shapes("unary", {out, in})) return s;
    if (auto s = checked(check::unary(op, *out, *in))) return s;
    const Access access({out, in});
    const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
    return dispatch(in->dtype, [&](auto tag) {
      unary_typed<typename decltype(tag)::type>(ctx->num_threads, op, *out, *in, p);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkUnaryBackward(const refkContext* ctx, refkUnaryOp op, const refkTensor* grad_in,
                                        const refkTensor* grad, const refkTensor* x, const refkUnaryParams* params) {
  return guarded("unary backward", [&] {
    if (auto s = check_shapes("unary backward", {grad_in, grad, x})) return s;
    if (auto s = checked(check::unary_backward(*grad_in, *grad, *x))) return s;
    const Access access({grad_in, grad, x});
    const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
    return dispatch(x->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        if (!unary::has_backward(op)) return fail(refkErrorNotImplemented, "unary backward: no gradient of this op");
        const refkTensor* ops[3] = {grad_in, grad, x};
        const Loop<3> loop(ops);
        unary::backward_with_fn<T>(op, p, [&](auto fn) { typed_rows<T, T, 2>(loop, ctx->num_threads, fn); });
        return refkSuccess;
      } else {
        return unsupported("unary backward", x->dtype);
      }
    });
  });
}
