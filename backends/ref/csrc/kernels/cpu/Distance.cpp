// p-norm distances between rows of the CPU reference library (cdist, pdist).
// One output element is one row pair; threads take ranges of outputs, and
// each sum runs in double along the rows, so float32 results are the
// correctly rounded distance of its inputs' values up to the final pow. The
// distance and the checks are common/Distance.h's (shared with the CUDA
// library).
#include "kernels/common/Distance.h"
#include "kernels/cpu/Common.h"

#include <limits>

namespace refk {
namespace {

using dist::distance;

template <class T>
void cdist_typed(int threads, const refkTensor& out, const refkTensor& x1, const refkTensor& x2, double p) {
  const int64_t B = out.sizes[0], P = out.sizes[1], R = out.sizes[2], M = x1.sizes[2];
  const T* A = static_cast<const T*>(x1.data);
  const T* Bp = static_cast<const T*>(x2.data);
  T* O = static_cast<T*>(out.data);
  parallel_for(B * P * R, std::max<int64_t>(1, kGrain / std::max<int64_t>(M, 1)), threads, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t j = e % R, i = (e / R) % P, b = e / (R * P);
      const double d = M == 0 ? 0.0
                              : distance(A + b * x1.strides[0] + i * x1.strides[1], x1.strides[2],
                                         Bp + b * x2.strides[0] + j * x2.strides[1], x2.strides[2], M, p);
      O[b * out.strides[0] + i * out.strides[1] + j * out.strides[2]] = static_cast<T>(d);
    }
  });
}

template <class T>
void pdist_typed(int threads, const refkTensor& out, const refkTensor& x, double p) {
  const int64_t N = x.sizes[0], M = x.sizes[1];
  const T* X = static_cast<const T*>(x.data);
  T* O = static_cast<T*>(out.data);
  parallel_for(out.sizes[0], std::max<int64_t>(1, kGrain / std::max<int64_t>(M, 1)), threads,
               [&](int64_t e0, int64_t e1) {
                 int64_t i, j;
                 dist::pdist_pair(e0, N, i, j);
                 for (int64_t e = e0; e < e1; ++e) {
                   const double d = M == 0 ? 0.0
                                           : distance(X + i * x.strides[0], x.strides[1], X + j * x.strides[0],
                                                      x.strides[1], M, p);
                   O[e * out.strides[0]] = static_cast<T>(d);
                   if (++j == N) j = ++i + 1;
                 }
               });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkCdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x1,
                                const refkTensor* x2, double p) {
  return guarded("cdist", [&] {
    if (const char* e = check::cdist(*out, *x1, *x2)) return fail(refkErrorInvalidValue, e);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, x1, x2});
    return dispatch_floating<Floating::no_half>("cdist", out->dtype, [&](auto tag) {
      cdist_typed<typename decltype(tag)::type>(ctx->num_threads, *out, *x1, *x2, p);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkPdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x, double p) {
  return guarded("pdist", [&] {
    if (const char* e = check::pdist(*out, *x)) return fail(refkErrorInvalidValue, e);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, x});
    return dispatch_floating<Floating::no_half>("pdist", out->dtype, [&](auto tag) {
      pdist_typed<typename decltype(tag)::type>(ctx->num_threads, *out, *x, p);
      return refkSuccess;
    });
  });
}
