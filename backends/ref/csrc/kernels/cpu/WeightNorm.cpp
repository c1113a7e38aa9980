// Weight normalization of the CPU reference library (refkWeightNorm and
// its gradient): threads split the slices (one index j along `dim` each),
// every slice is summed in double in one pass and then written in another;
// the per-slice arithmetic is common/WeightNorm.h's, shared with the CUDA
// library.
#include "kernels/common/WeightNorm.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

// The slice j of t along dim: dim kept with size 1 (the loop planner drops it).
refkTensor slice_of(const refkTensor& t, int32_t dim, int64_t j) {
  refkTensor s = t;
  s.data = static_cast<char*>(t.data) + j * t.strides[dim] * itemsize(t.dtype);
  s.sizes[dim] = 1;
  return s;
}

// Sum of f(a[i], b[i]) over the elements of two operands of one shape, on this thread.
template <class T, class F>
double slice_sum(const refkTensor& a, const refkTensor& b, F f) {
  const refkTensor* ops[2] = {&a, &b};
  const Loop<2> loop(ops);
  double sum = 0;
  loop.run(1, [&](char* const* p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      sum += f(static_cast<double>(load(*reinterpret_cast<const T*>(p[0] + i * s[0]))),
               static_cast<double>(load(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
    }
  });
  return sum;
}

template <class T>
void weight_norm_typed(int threads, const refkTensor& w, const refkTensor& norm, const refkTensor& v,
                       const refkTensor& g, int32_t dim) {
  parallel_for(v.sizes[dim], 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const refkTensor vj = slice_of(v, dim, j), wj = slice_of(w, dim, j);
      const double n = weight_norm::norm_of(slice_sum<T>(vj, vj, [](double x, double) { return x * x; }));
      store_any(norm, j * norm.strides[0], n);
      const double a = weight_norm::scale(load_any(g, j * g.strides[0]), n);
      const refkTensor* ops[2] = {&wj, &vj};
      Loop<2>(ops).run(1, [&](char* const* p, const int64_t* s, int64_t cnt) {
        for (int64_t i = 0; i < cnt; ++i) {
          *reinterpret_cast<T*>(p[0] + i * s[0]) =
              weight_norm::weighted(*reinterpret_cast<const T*>(p[1] + i * s[1]), a);
        }
      });
    }
  });
}

template <class T>
void weight_norm_backward_typed(int threads, const refkTensor& grad_v, const refkTensor& grad_g,
                                const refkTensor& grad_w, const refkTensor& v, const refkTensor& g,
                                const refkTensor& norm, int32_t dim) {
  parallel_for(v.sizes[dim], 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const refkTensor gvj = slice_of(grad_v, dim, j), gwj = slice_of(grad_w, dim, j), vj = slice_of(v, dim, j);
      const double s = slice_sum<T>(gwj, vj, [](double x, double y) { return x * y; });
      const weight_norm::Gradient c =
          weight_norm::gradient(load_any(g, j * g.strides[0]), load_any(norm, j * norm.strides[0]), s);
      store_any(grad_g, j * grad_g.strides[0], c.grad_g);
      const refkTensor* ops[3] = {&gvj, &gwj, &vj};
      Loop<3>(ops).run(1, [&](char* const* p, const int64_t* st, int64_t cnt) {
        for (int64_t i = 0; i < cnt; ++i) {
          *reinterpret_cast<T*>(p[0] + i * st[0]) = weight_norm::grad_v(
              *reinterpret_cast<const T*>(p[1] + i * st[1]), *reinterpret_cast<const T*>(p[2] + i * st[2]), c);
        }
      });
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkWeightNorm(const refkContext* ctx, const refkTensor* w, const refkTensor* norm, const refkTensor* v,
                          const refkTensor* g, int32_t dim) {
  return guarded("weight_norm", [&] {
    if (auto s = checked(check::weight_norm("weight_norm", {w}, *v, {g}, *norm, dim))) return s;
    const Access access({w, norm, v, g});
    return dispatch(v->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        weight_norm_typed<T>(ctx->num_threads, *w, *norm, *v, *g, dim);
        return refkSuccess;
      } else {
        return unsupported("weight_norm", v->dtype);
      }
    });
  });
}

refkStatus refkWeightNormBackward(const refkContext* ctx, const refkTensor* grad_v, const refkTensor* grad_g,
                                  const refkTensor* grad_w, const refkTensor* v, const refkTensor* g,
                                  const refkTensor* norm, int32_t dim) {
  return guarded("weight_norm_backward", [&] {
    if (auto s = checked(check::weight_norm("weight_norm_backward", {grad_v, grad_w}, *v, {g, grad_g}, *norm, dim))) {
      return s;
    }
    const Access access({grad_v, grad_g, grad_w, v, g, norm});
    return dispatch(v->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        weight_norm_backward_typed<T>(ctx->num_threads, *grad_v, *grad_g, *grad_w, *v, *g, *norm, dim);
        return refkSuccess;
      } else {
        return unsupported("weight_norm_backward", v->dtype);
      }
    });
  });
}

}  // extern "C"
