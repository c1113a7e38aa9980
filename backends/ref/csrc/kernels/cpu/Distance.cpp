// p-norm distances between rows of the CPU reference library (cdist, pdist).
// One output element is one row pair; threads take ranges of outputs, and
// each sum runs in double along the rows, so float32 results are the
// correctly rounded distance of its inputs' values up to the final pow.
#include "kernels/cpu/Common.h"

#include <limits>

namespace refk {
namespace {

// The p-norm of a - b over m elements (strides as, bs).
template <class T>
double distance(const T* a, int64_t as, const T* b, int64_t bs, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t k = 0; k < m; ++k) acc += a[k * as] != b[k * bs] ? 1.0 : 0.0;
    return acc;
  }
  if (p == 1) {
    for (int64_t k = 0; k < m; ++k) acc += std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]));
    return acc;
  }
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]);
      acc += d * d;
    }
    return std::sqrt(acc);
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs]));
      acc = std::isnan(d) || d > acc ? d : acc;
      if (std::isnan(acc)) break;
    }
    return acc;
  }
  for (int64_t k = 0; k < m; ++k) {
    acc += std::pow(std::fabs(static_cast<double>(a[k * as]) - static_cast<double>(b[k * bs])), p);
  }
  return std::pow(acc, 1.0 / p);
}

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
                 // The pair of e0: row i owns N - 1 - i pairs, in order.
                 int64_t i = 0, first = 0;
                 while (first + (N - 1 - i) <= e0) first += N - 1 - i++;
                 int64_t j = i + 1 + (e0 - first);
                 for (int64_t e = e0; e < e1; ++e) {
                   const double d = M == 0 ? 0.0
                                           : distance(X + i * x.strides[0], x.strides[1], X + j * x.strides[0],
                                                      x.strides[1], M, p);
                   O[e * out.strides[0]] = static_cast<T>(d);
                   if (++j == N) j = ++i + 1;
                 }
               });
}

template <class F>
refkStatus floating(const char* op, refkDtype d, F&& f) {
  if (d == refkFloat32) return f(Tag<float>{});
  if (d == refkFloat64) return f(Tag<double>{});
  return unsupported(op, d);
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkCdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x1,
                                const refkTensor* x2, double p) {
  return guarded("cdist", [&] {
    const bool ok = out->ndim == 3 && x1->ndim == 3 && x2->ndim == 3 && x1->dtype == out->dtype &&
                    x2->dtype == out->dtype && x1->sizes[0] == out->sizes[0] && x2->sizes[0] == out->sizes[0] &&
                    x1->sizes[1] == out->sizes[1] && x2->sizes[1] == out->sizes[2] && x1->sizes[2] == x2->sizes[2];
    if (!ok) return fail(refkErrorInvalidValue, "cdist: inconsistent operands");
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, x1, x2});
    return floating("cdist", out->dtype, [&](auto tag) {
      cdist_typed<typename decltype(tag)::type>(ctx->num_threads, *out, *x1, *x2, p);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkPdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x, double p) {
  return guarded("pdist", [&] {
    const bool ok = out->ndim == 1 && x->ndim == 2 && x->dtype == out->dtype &&
                    out->sizes[0] == x->sizes[0] * (x->sizes[0] - 1) / 2;
    if (!ok) return fail(refkErrorInvalidValue, "pdist: inconsistent operands");
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, x});
    return floating("pdist", out->dtype, [&](auto tag) {
      pdist_typed<typename decltype(tag)::type>(ctx->num_threads, *out, *x, p);
      return refkSuccess;
    });
  });
}
