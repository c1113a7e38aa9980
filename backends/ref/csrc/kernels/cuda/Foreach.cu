// The optimizers' foreach kernels of the CUDA reference library (Note
// [Foreach calls] in RefKernels.h): every tensor of the list runs on the
// shared elementwise launcher (Common.cuh) with the op's functor,
// common/Pointwise.h's foreach::Fn, the one the CPU library runs. One
// launch per tensor, all on the call's stream.
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

template <class F>
struct One {
  F f;
  template <class V>
  __device__ V operator()(V v) const {
    return f(v, V(0), V(0));
  }
};
template <class F>
struct Two {
  F f;
  template <class V>
  __device__ V operator()(V v, V p) const {
    return f(v, p, V(0));
  }
};

template <class T>
refkStatus run_one(const refkContext* ctx, refkForeachOp op, const refkTensor& out, const refkTensor& x,
                   const refkTensor* a, const refkTensor* b, double s) {
  refkStatus status = refkSuccess;
  const int nin = refk::foreach::operands(op);
  refk::foreach::with_fn<T>(op, s, [&](auto f) {
    using F = decltype(f);
    if (nin == 1) {
      const refkTensor* ops[2] = {&out, &x};
      status = typed<T, T, 1>("foreach", ctx, ops, One<F>{f});
    } else if (nin == 2) {
      const refkTensor* ops[3] = {&out, &x, a};
      status = typed<T, T, 2>("foreach", ctx, ops, Two<F>{f});
    } else {
      const refkTensor* ops[4] = {&out, &x, a, b};
      status = typed<T, T, 3>("foreach", ctx, ops, f);
    }
  });
  return status;
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkForeach(const refkContext* ctx, refkForeachOp op, int32_t n, const refkTensor* out,
                                  const refkTensor* self, const refkTensor* a, const refkTensor* b,
                                  const refkScalar* scalars, int32_t nscalars) {
  const int nin = refk::foreach::operands(op);
  if (auto s = checked(refk::check::foreach(nin, n, out, self, a, b, nscalars))) return s;
  for (int32_t k = 0; k < n; ++k) {
    const refkTensor* ta = nin >= 2 ? &a[k] : nullptr;
    const refkTensor* tb = nin >= 3 ? &b[k] : nullptr;
    const double s = scalars[nscalars == 1 ? 0 : k].f;
    const refkStatus status = dispatch_floating("foreach", out[k].dtype, [&](auto tag) {
      return run_one<typename decltype(tag)::type>(ctx, op, out[k], self[k], ta, tb, s);
    });
    if (status != refkSuccess) return status;
  }
  return refkSuccess;
}
