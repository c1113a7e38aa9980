// Weight normalization of the CUDA reference library (refkWeightNorm and
// its gradient): a block per slice (one index j along `dim`), its threads
// striding over the slice's elements through the offset calculator of the
// slice's descriptors and combining their sums in double across the block;
// the per-slice arithmetic is common/WeightNorm.h's, shared with the CPU
// library.
#include "kernels/common/WeightNorm.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace wn = refk::weight_norm;

// Slice 0 of each operand along dim (dim kept with size 1, so the planner
// drops it), and the byte step from one slice to the next.
template <int N>
struct Slices {
  Offsets<N> o;
  Ptrs<N> base;
  int64_t step[N];
};

template <int N>
Slices<N> slices_of(const refkTensor* const (&ops)[N], int32_t dim) {
  refkTensor s[N];
  const refkTensor* sp[N];
  Slices<N> r;
  for (int k = 0; k < N; ++k) {
    s[k] = *ops[k];
    s[k].sizes[dim] = 1;
    sp[k] = &s[k];
    r.base.p[k] = static_cast<char*>(ops[k]->data);
    r.step[k] = ops[k]->strides[dim] * itemsize(ops[k]->dtype);
  }
  r.o = plan(sp);
  return r;
}

// N: the norm's storage type (float for the half types).
template <class T, class N>
__global__ void weight_norm_kernel(Slices<2> S, int64_t slices, N* norm, int64_t norm_stride, const T* g,
                                   int64_t g_stride) {
  for (int64_t j = blockIdx.x; j < slices; j += gridDim.x) {
    char* w = S.base.p[0] + j * S.step[0];
    const char* v = S.base.p[1] + j * S.step[1];
    double sum = 0;
    for (int64_t i = threadIdx.x; i < S.o.numel; i += blockDim.x) {
      int64_t off[2];
      S.o.at(i, off);
      const double x = static_cast<double>(load(*reinterpret_cast<const T*>(v + off[1])));
      sum += x * x;
    }
    const double n = wn::norm_of(block_combine(sum, Sum{}));
    if (threadIdx.x == 0) norm[j * norm_stride] = static_cast<N>(n);
    const double a = wn::scale(static_cast<double>(load(g[j * g_stride])), n);
    for (int64_t i = threadIdx.x; i < S.o.numel; i += blockDim.x) {
      int64_t off[2];
      S.o.at(i, off);
      *reinterpret_cast<T*>(w + off[0]) = wn::weighted(*reinterpret_cast<const T*>(v + off[1]), a);
    }
  }
}

template <class T, class N>
__global__ void weight_norm_backward_kernel(Slices<3> S, int64_t slices, T* grad_g, int64_t grad_g_stride,
                                            const T* g, int64_t g_stride, const N* norm, int64_t norm_stride) {
  for (int64_t j = blockIdx.x; j < slices; j += gridDim.x) {
    char* gv = S.base.p[0] + j * S.step[0];
    const char* gw = S.base.p[1] + j * S.step[1];
    const char* v = S.base.p[2] + j * S.step[2];
    double s = 0;
    for (int64_t i = threadIdx.x; i < S.o.numel; i += blockDim.x) {
      int64_t off[3];
      S.o.at(i, off);
      s += static_cast<double>(load(*reinterpret_cast<const T*>(gw + off[1]))) *
           static_cast<double>(load(*reinterpret_cast<const T*>(v + off[2])));
    }
    const wn::Gradient c = wn::gradient(static_cast<double>(load(g[j * g_stride])),
                                        static_cast<double>(norm[j * norm_stride]), block_combine(s, Sum{}));
    if (threadIdx.x == 0) grad_g[j * grad_g_stride] = store<T>(static_cast<opmath_t<T>>(c.grad_g));
    for (int64_t i = threadIdx.x; i < S.o.numel; i += blockDim.x) {
      int64_t off[3];
      S.o.at(i, off);
      *reinterpret_cast<T*>(gv + off[0]) =
          wn::grad_v(*reinterpret_cast<const T*>(gw + off[1]), *reinterpret_cast<const T*>(v + off[2]), c);
    }
  }
}

template <class T>
using NormOf = std::conditional_t<is_half_v<T>, float, T>;

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkWeightNorm(const refkContext* ctx, const refkTensor* w, const refkTensor* norm, const refkTensor* v,
                          const refkTensor* g, int32_t dim) {
  if (auto s = checked(refk::check::weight_norm("weight_norm", {w}, *v, {g}, *norm, dim))) return s;
  const int64_t slices = v->sizes[dim];
  if (slices == 0) return refkSuccess;
  const refkTensor* ops[2] = {w, v};
  const Slices<2> S = slices_of(ops, dim);
  return dispatch_floating("weight_norm", v->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using N = NormOf<T>;
    weight_norm_kernel<T, N><<<blocks_per_row(slices), kBlockThreads, 0, stream_of(ctx)>>>(
        S, slices, static_cast<N*>(norm->data), norm->strides[0], static_cast<const T*>(g->data), g->strides[0]);
    return launched("weight_norm");
  });
}

refkStatus refkWeightNormBackward(const refkContext* ctx, const refkTensor* grad_v, const refkTensor* grad_g,
                                  const refkTensor* grad_w, const refkTensor* v, const refkTensor* g,
                                  const refkTensor* norm, int32_t dim) {
  if (auto s = checked(refk::check::weight_norm("weight_norm_backward", {grad_v, grad_w}, *v, {g, grad_g}, *norm,
                                                dim))) {
    return s;
  }
  const int64_t slices = v->sizes[dim];
  if (slices == 0) return refkSuccess;
  const refkTensor* ops[3] = {grad_v, grad_w, v};
  const Slices<3> S = slices_of(ops, dim);
  return dispatch_floating("weight_norm_backward", v->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using N = NormOf<T>;
    weight_norm_backward_kernel<T, N><<<blocks_per_row(slices), kBlockThreads, 0, stream_of(ctx)>>>(
        S, slices, static_cast<T*>(grad_g->data), grad_g->strides[0], static_cast<const T*>(g->data), g->strides[0],
        static_cast<const N*>(norm->data), norm->strides[0]);
    return launched("weight_norm_backward");
  });
}

}  // extern "C"
