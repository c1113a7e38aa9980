// The optimizers' foreach kernels of the CPU reference library (Note
// [Foreach calls] in RefKernels.h): one call per list, each tensor run by the
// loop planner (Common.h) as an elementwise op with the contiguous fast path,
// each element common/Pointwise.h's foreach::Fn (shared with the CUDA library).
// A parameter group is many small tensors, so the list is split over threads
// by tensor when it is long, and each tensor over threads when it is large.
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

using foreach::operands;

// One tensor of the list. The op is a runtime value but fixed per tensor:
// each case instantiates its own row loop, so the inner loop has no branch.
template <class T, class Op>
void run_one(int threads, const refkTensor& out, const refkTensor& x, const refkTensor* a, const refkTensor* b,
             Op f, int nin) {
  using V = opmath_t<T>;
  if (nin == 1) {
    const refkTensor* ops[2] = {&out, &x};
    typed_rows<T, T, 1>(Loop<2>(ops), threads, [f](V v) { return f(v, V(0), V(0)); });
  } else if (nin == 2) {
    const refkTensor* ops[3] = {&out, &x, a};
    typed_rows<T, T, 2>(Loop<3>(ops), threads, [f](V v, V p) { return f(v, p, V(0)); });
  } else {
    const refkTensor* ops[4] = {&out, &x, a, b};
    typed_rows<T, T, 3>(Loop<4>(ops), threads, f);
  }
}

template <class T>
void run_op(int threads, refkForeachOp op, const refkTensor& out, const refkTensor& x, const refkTensor* a,
            const refkTensor* b, double s) {
  // A functor type per op (common/Pointwise.h), so each inner loop is
  // specialized and vectorizes.
  foreach::with_fn<T>(op, s, [&](auto f) { run_one<T>(threads, out, x, a, b, f, operands(op)); });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkForeach(const refkContext* ctx, refkForeachOp op, int32_t n, const refkTensor* out,
                                  const refkTensor* self, const refkTensor* a, const refkTensor* b,
                                  const refkScalar* scalars, int32_t nscalars) {
  return guarded("foreach", [&] {
    const int nin = operands(op);
    if (auto s = checked(check::foreach(nin, n, out, self, a, b, nscalars))) return s;
    // Small tensors: one thread per tensor, in tensor order. Large ones:
    // every thread on each tensor in turn.
    auto one = [&](int64_t k, int threads) {
      const refkTensor* ta = nin >= 2 ? &a[k] : nullptr;
      const refkTensor* tb = nin >= 3 ? &b[k] : nullptr;
      const Access access({&out[k], &self[k], ta, tb});
      const double s = scalars[nscalars == 1 ? 0 : k].f;
      dispatch(out[k].dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (is_floating_v<T>) run_op<T>(threads, op, out[k], self[k], ta, tb, s);
      });
    };
    int64_t total = 0;
    for (int32_t k = 0; k < n; ++k) total += numel(out[k]);
    if (n > 1 && total / n < kGrain) {
      parallel_for(n, 1, ctx->num_threads, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) one(k, 1);
      });
    } else {
      for (int32_t k = 0; k < n; ++k) one(k, ctx->num_threads);
    }
    return refkSuccess;
  });
}
