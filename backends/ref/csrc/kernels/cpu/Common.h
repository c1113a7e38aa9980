// What every CPU kernel of the reference library shares: storage types for
// the half-precision dtypes, dtype dispatch, the per-thread error text, the
// host thread pool, device-memory access windows, and the loop planner that
// turns N strided operands into coalesced rows (TensorIterator's job in
// ATen, reduced to what a kernel library needs).
//
// Torch-free by design (Note [Descriptor conventions] in RefKernels.h).
#pragma once

#include "kernels/RefKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

namespace refk {

// ---- half-precision storage types ----------------------------------------

inline float bits_to_float(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

// IEEE binary16. Conversions are exact (to float) and round to nearest even
// (from float), in branch-light integer/float arithmetic the compiler can
// vectorize.
struct Half {
  uint16_t x;
  static float to_float(uint16_t h) {
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const float normalized = bits_to_float((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const float denormalized = bits_to_float((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t magnitude = two_w < (1u << 27) ? float_to_bits(denormalized) : float_to_bits(normalized);
    return bits_to_float(sign | magnitude);
  }
  static uint16_t from_float(float f) {
    float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = float_to_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = bits_to_float((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = float_to_bits(base);
    const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
    return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
  }
};

// bfloat16: the top half of a float, rounded to nearest even; NaN stays NaN.
struct BFloat16 {
  uint16_t x;
  static float to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }
  static uint16_t from_float(float f) {
    if (std::isnan(f)) return 0x7FC0;
    const uint32_t w = float_to_bits(f);
    return static_cast<uint16_t>((w + 0x7FFFu + ((w >> 16) & 1u)) >> 16);
  }
};

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;
template <class T>
constexpr bool is_integral_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The type arithmetic happens in: float for the half types (as ATen's opmath).
template <class T>
using opmath_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
inline opmath_t<T> load(T v) {
  if constexpr (is_half_v<T>) {
    return T::to_float(v.x);
  } else {
    return v;
  }
}

template <class T, class C>
inline T store(C v) {
  if constexpr (is_half_v<T>) {
    return T{T::from_float(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != C(0);
  } else {
    return static_cast<T>(v);
  }
}

// Accumulation type of reductions: double for floating types, int64 for
// integral ones (ATen accumulates float in float; double only makes our
// results closer to the exact value).
template <class T>
using acc_t = std::conditional_t<is_floating_v<T>, double, int64_t>;

// ---- dtype dispatch --------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

inline int64_t itemsize(refkDtype d) {
  switch (d) {
    case refkBool:
    case refkUInt8:
    case refkInt8: return 1;
    case refkInt16:
    case refkFloat16:
    case refkBFloat16: return 2;
    case refkInt32:
    case refkFloat32: return 4;
    case refkInt64:
    case refkFloat64: return 8;
  }
  return 0;
}

const char* dtype_name(refkDtype d);

// Calls f(Tag<T>{}) with the storage type of `d`.
template <class F>
decltype(auto) dispatch(refkDtype d, F&& f) {
  switch (d) {
    case refkBool: return f(Tag<bool>{});
    case refkUInt8: return f(Tag<uint8_t>{});
    case refkInt8: return f(Tag<int8_t>{});
    case refkInt16: return f(Tag<int16_t>{});
    case refkInt32: return f(Tag<int32_t>{});
    case refkInt64: return f(Tag<int64_t>{});
    case refkFloat16: return f(Tag<Half>{});
    case refkBFloat16: return f(Tag<BFloat16>{});
    case refkFloat32: return f(Tag<float>{});
    case refkFloat64: return f(Tag<double>{});
  }
  return f(Tag<bool>{});
}

// ---- errors ----------------------------------------------------------------

// Records the message refkLastError() returns on this thread; returns `s`.
refkStatus fail(refkStatus s, const std::string& message);
refkStatus unsupported(const char* op, refkDtype d);

// Runs body, turning an escaped C++ exception into an error status: nothing
// throws across the C ABI.
refkStatus guarded(const char* op, const std::function<refkStatus()>& body);

// ---- threads ---------------------------------------------------------------

// Runs f(begin, end) over [0, n) in chunks of at least `grain` on up to
// `threads` host threads (the caller is one of them) and returns when all
// are done.
void parallel_for(int64_t n, int64_t grain, int threads, const std::function<void(int64_t, int64_t)>& f);

constexpr int64_t kGrain = 32768;

// ---- device-memory access --------------------------------------------------

// Note [Protected device memory] (RefDriver.h): the library opens access to
// its operands' allocations for the duration of a call.
class Access {
 public:
  explicit Access(std::initializer_list<const refkTensor*> ts) {
    for (const refkTensor* t : ts) {
      if (t != nullptr && t->data != nullptr && n_ < kMax) refAccessBegin(ptrs_[n_++] = t->data);
    }
  }
  ~Access() {
    for (int i = n_ - 1; i >= 0; --i) refAccessEnd(ptrs_[i]);
  }
  Access(const Access&) = delete;
  Access& operator=(const Access&) = delete;

 private:
  static constexpr int kMax = 8;
  const void* ptrs_[kMax] = {};
  int n_ = 0;
};

inline int64_t numel(const refkTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.sizes[i];
  return n;
}

// Element offset (in elements) of the i-th element in row-major order.
inline int64_t offset_in(const refkTensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

// ---- the loop planner ------------------------------------------------------

// N operands of one shape (operand 0 is the output), as byte strides over
// coalesced dims, innermost last.
template <int N>
struct Loop {
  int ndim = 0;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t strides[N][REFK_MAX_DIMS] = {};
  char* data[N] = {};
  int64_t numel = 1;

  explicit Loop(const refkTensor* const (&ops)[N]) {
    const refkTensor& out = *ops[0];
    for (int k = 0; k < N; ++k) data[k] = static_cast<char*>(ops[k]->data);
    // Dims by the output's stride, largest first, so the output's fastest
    // dim is innermost; size-1 dims dropped.
    int order[REFK_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < out.ndim; ++d) {
      numel *= out.sizes[d];
      if (out.sizes[d] != 1) order[n++] = d;
    }
    std::stable_sort(order, order + n, [&](int x, int y) {
      for (int k = 0; k < N; ++k) {
        const int64_t sx = std::abs(ops[k]->strides[x]), sy = std::abs(ops[k]->strides[y]);
        if (sx != sy) return sx > sy;
      }
      return false;
    });
    for (int i = 0; i < n; ++i) {
      const int d = order[i];
      const int64_t size = out.sizes[d];
      // Merge into the previous (outer) dim when it steps exactly over this one.
      bool merge = ndim > 0;
      for (int k = 0; k < N && merge; ++k) {
        merge = strides[k][ndim - 1] == ops[k]->strides[d] * itemsize(ops[k]->dtype) * size;
      }
      if (merge) {
        sizes[ndim - 1] *= size;
        for (int k = 0; k < N; ++k) strides[k][ndim - 1] = ops[k]->strides[d] * itemsize(ops[k]->dtype);
      } else {
        sizes[ndim] = size;
        for (int k = 0; k < N; ++k) strides[k][ndim] = ops[k]->strides[d] * itemsize(ops[k]->dtype);
        ++ndim;
      }
    }
    if (ndim == 0) {  // a single element
      sizes[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      ndim = 1;
    }
  }

  // Calls row(ptrs, inner_strides, count) for every run of the innermost
  // dim, split over threads.
  template <class Row>
  void run(int threads, Row&& row) const {
    if (numel == 0) return;
    const int last = ndim - 1;
    parallel_for(numel, kGrain, threads, [&](int64_t begin, int64_t end) {
      int64_t idx[REFK_MAX_DIMS];
      int64_t rem = begin;
      for (int d = last; d >= 0; --d) {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
      }
      int64_t pos = begin;
      while (pos < end) {
        char* ptrs[N];
        for (int k = 0; k < N; ++k) {
          ptrs[k] = data[k];
          for (int d = 0; d <= last; ++d) ptrs[k] += idx[d] * strides[k][d];
        }
        const int64_t count = std::min(sizes[last] - idx[last], end - pos);
        int64_t inner[N];
        for (int k = 0; k < N; ++k) inner[k] = strides[k][last];
        row(ptrs, inner, count);
        pos += count;
        idx[last] += count;
        for (int d = last; d > 0 && idx[d] == sizes[d]; --d) {
          idx[d] = 0;
          ++idx[d - 1];
        }
      }
    });
  }
};

// A typed elementwise row: out = f(in...) where all inputs share the storage
// type In. Contiguous rows take a plain indexed loop the compiler
// vectorizes; broadcast (stride 0) inputs are loaded once.
template <class Out, class In, int NIN, class F>
void typed_rows(const Loop<NIN + 1>& loop, int threads, F f) {
  loop.run(threads, [&](char* const* p, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    bool contiguous = s[0] == static_cast<int64_t>(sizeof(Out));
    for (int k = 1; k <= NIN; ++k) contiguous = contiguous && s[k] == static_cast<int64_t>(sizeof(In));
    if constexpr (NIN == 1) {
      const In* a = reinterpret_cast<const In*>(p[1]);
      if (contiguous) {
        for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i])));
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = store<Out>(f(load(*reinterpret_cast<const In*>(p[1] + i * s[1]))));
      }
    } else if constexpr (NIN == 2) {
      const In* a = reinterpret_cast<const In*>(p[1]);
      const In* b = reinterpret_cast<const In*>(p[2]);
      if (contiguous) {
        for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i]), load(b[i])));
        return;
      }
      if (s[0] == static_cast<int64_t>(sizeof(Out)) && s[1] == static_cast<int64_t>(sizeof(In)) && s[2] == 0) {
        const auto bv = load(*b);
        for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i]), bv));
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            store<Out>(f(load(*reinterpret_cast<const In*>(p[1] + i * s[1])),
                         load(*reinterpret_cast<const In*>(p[2] + i * s[2]))));
      }
    } else {
      static_assert(NIN == 3);
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = store<Out>(f(load(*reinterpret_cast<const In*>(p[1] + i * s[1])),
                                                                load(*reinterpret_cast<const In*>(p[2] + i * s[2])),
                                                                load(*reinterpret_cast<const In*>(p[3] + i * s[3]))));
      }
    }
  });
}

inline bool same_shape(const refkTensor& a, const refkTensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

// Checks that operands match the output's shape; an error status otherwise.
refkStatus check_shapes(const char* op, std::initializer_list<const refkTensor*> ts);

}  // namespace refk
