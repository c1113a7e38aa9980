// Copies, casts, fills, where and clamp of the CPU reference library: the
// kernels that move or select values rather than compute new ones. Copies
// and fills take every dtype, the storage dtypes too (Note [Storage dtypes]).
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

template <class T>
using C = opmath_t<T>;

template <class T>
refkStatus copy_from(int threads, const refkTensor& dst, const refkTensor& src) {
  const refkTensor* ops[2] = {&dst, &src};
  const Loop<2> loop(ops);
  return dispatch_storage(dst.dtype, [&](auto tag) -> refkStatus {
    using D = typename decltype(tag)::type;
    if constexpr (std::is_same_v<D, T>) {
      loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
        if (s[0] == static_cast<int64_t>(sizeof(T)) && s[1] == static_cast<int64_t>(sizeof(T))) {
          std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(T));
          return;
        }
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], sizeof(T));
      });
    } else {
      typed_rows<D, T, 1>(loop, threads, [](C<T> v) { return v; });
    }
    return refkSuccess;
  });
}

// dst[i] = f(src[i]) element by element over a planned loop.
template <class D, class S, class F>
void map_elements(const Loop<2>& loop, int threads, F f) {
  loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
    if (s[0] == static_cast<int64_t>(sizeof(D)) && s[1] == static_cast<int64_t>(sizeof(S))) {
      D* o = reinterpret_cast<D*>(p[0]);
      const S* a = reinterpret_cast<const S*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<D*>(p[0] + i * s[0]) = f(*reinterpret_cast<const S*>(p[1] + i * s[1]));
  });
}

// Copies with a complex side (Note [Complex dtypes] in RefKernels.h): real
// values become (v, 0), complex ones cast to a real dtype keep their real
// part, complex to complex converts both parts.
refkStatus copy_complex(int threads, const refkTensor& dst, const refkTensor& src) {
  const refkTensor* ops[2] = {&dst, &src};
  const Loop<2> loop(ops);
  if (!is_complex(src.dtype)) {
    return dispatch_complex(dst.dtype, [&](auto d_tag) {
      using D = typename decltype(d_tag)::type;
      using R = decltype(D{}.re);
      return dispatch_storage(src.dtype, [&](auto s_tag) -> refkStatus {
        using S = typename decltype(s_tag)::type;
        map_elements<D, S>(loop, threads, [](S v) { return D{static_cast<R>(load(v)), R(0)}; });
        return refkSuccess;
      });
    });
  }
  return dispatch_complex(src.dtype, [&](auto s_tag) {
    using S = typename decltype(s_tag)::type;
    if (!is_complex(dst.dtype)) {
      return dispatch_storage(dst.dtype, [&](auto d_tag) -> refkStatus {
        using D = typename decltype(d_tag)::type;
        map_elements<D, S>(loop, threads, [](S v) { return store<D>(v.re); });
        return refkSuccess;
      });
    }
    return dispatch_complex(dst.dtype, [&](auto d_tag) -> refkStatus {
      using D = typename decltype(d_tag)::type;
      using R = decltype(D{}.re);
      map_elements<D, S>(loop, threads, [](S v) { return D{static_cast<R>(v.re), static_cast<R>(v.im)}; });
      return refkSuccess;
    });
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkCopy(const refkContext* ctx, const refkTensor* dst, const refkTensor* src) {
  return guarded("copy", [&] {
    if (auto s = check_shapes("copy", {dst, src})) return s;
    const Access access({dst, src});
    if (is_complex(dst->dtype) || is_complex(src->dtype)) return copy_complex(ctx->num_threads, *dst, *src);
    return dispatch_storage(src->dtype,
                            [&](auto tag) { return copy_from<typename decltype(tag)::type>(ctx->num_threads, *dst, *src); });
  });
}

refkStatus refkFill(const refkContext* ctx, const refkTensor* dst, refkScalar value) {
  return guarded("fill", [&] {
    const Access access({dst});
    const refkTensor* ops[1] = {dst};
    const Loop<1> loop(ops);
    const auto fill_with = [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      T v;
      if constexpr (is_complex_v<T>) {
        v = T{static_cast<decltype(v.re)>(value.f), 0};
      } else {
        v = from_scalar<T>(value);
      }
      loop.run(ctx->num_threads, [&](char* const* p, const int64_t* s, int64_t n) {
        if (s[0] == static_cast<int64_t>(sizeof(T))) {
          T* o = reinterpret_cast<T*>(p[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = v;
          return;
        }
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
      });
      return refkSuccess;
    };
    return is_complex(dst->dtype) ? dispatch_complex(dst->dtype, fill_with) : dispatch_storage(dst->dtype, fill_with);
  });
}

refkStatus refkWhere(const refkContext* ctx, const refkTensor* out, const refkTensor* cond, const refkTensor* a,
                     const refkTensor* b) {
  return guarded("where", [&] {
    if (auto s = check_shapes("where", {out, cond, a, b})) return s;
    if (const char* e = check::where(*out, *cond, *a, *b)) return fail(refkErrorInvalidValue, e);
    const Access access({out, cond, a, b});
    const refkTensor* ops[4] = {out, cond, a, b};
    const Loop<4> loop(ops);
    // A selection moves elements as they are: by their bytes, so complex too.
    return dispatch_bytes(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      loop.run(ctx->num_threads, [&](char* const* p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
          *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * s[c ? 2 : 3]);
        }
      });
      return refkSuccess;
    });
  });
}

// Rows of the trailing dim, each element either copied or zeroed as bytes:
// the same for every dtype (all-zero bytes are 0, 0.0 and false alike).
refkStatus refkTriangle(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int64_t diagonal,
                        int32_t upper) {
  return guarded("triangle", [&] {
    if (auto s = check_shapes("triangle", {out, in})) return s;
    if (out->ndim < 2) return fail(refkErrorInvalidValue, "triangle: operands need at least 2 dims");
    if (out->dtype != in->dtype) return fail(refkErrorInvalidValue, "triangle: out and in must share one dtype");
    const Access access({out, in});
    const int nd = out->ndim;
    const int64_t R = out->sizes[nd - 2], Cn = out->sizes[nd - 1];
    int64_t rows = R;
    for (int d = 0; d < nd - 2; ++d) rows *= out->sizes[d];
    if (rows == 0 || Cn == 0) return refkSuccess;
    const int64_t item = itemsize(out->dtype);
    // The leading dims and the row dim as one descriptor per operand.
    refkTensor ro = *out, ri = *in;
    ro.ndim = ri.ndim = nd - 1;
    const int64_t grain = std::max<int64_t>(1, kGrain / Cn);
    parallel_for(rows, grain, ctx->num_threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % R;
        char* po = static_cast<char*>(out->data) + offset_in(ro, r) * item;
        const char* pi = static_cast<const char*>(in->data) + offset_in(ri, r) * item;
        const int64_t so = out->strides[nd - 1] * item, si = in->strides[nd - 1] * item;
        for (int64_t j = 0; j < Cn; ++j) {
          if (triangle_keeps(i, j, diagonal, upper != 0)) {
            if (po + j * so != pi + j * si) std::memcpy(po + j * so, pi + j * si, static_cast<size_t>(item));
          } else {
            std::memset(po + j * so, 0, static_cast<size_t>(item));
          }
        }
      }
    });
    return refkSuccess;
  });
}

refkStatus refkClamp(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* lo,
                     const refkTensor* hi) {
  return guarded("clamp", [&] {
    const bool has_lo = lo->data != nullptr, has_hi = hi->data != nullptr;
    const check::ClampOperands bounds = check::clamp_operands(*in, *lo, *hi);
    if (auto s = checked(check::clamp(*out, *in, bounds))) return s;
    const refkTensor* l = bounds.lo;
    const refkTensor* h = bounds.hi;
    const Access access({out, in, l, h});
    const refkTensor* ops[4] = {out, in, l, h};
    const Loop<4> loop(ops);
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      typed_rows<T, T, 3>(loop, ctx->num_threads, [has_lo, has_hi](C<T> x, C<T> a, C<T> b) {
        return scalar::clamp(x, a, b, has_lo, has_hi);
      });
      return refkSuccess;
    });
  });
}

}  // extern "C"
