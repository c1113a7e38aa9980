// What every CPU kernel of the reference library shares beyond
// common/Dtypes.h (dtypes, conversions, dispatch) and common/Errors.h: the
// host thread pool, device-memory access windows, and the row loop over
// common/Loop.h's plan of N strided operands.
//
// Torch-free by design (Note [Descriptor conventions] in RefKernels.h).
#pragma once

#include "kernels/RefKernels.h"
#include "kernels/common/Checks.h"
#include "kernels/common/Descriptors.h"
#include "kernels/common/Errors.h"
#include "kernels/common/Loop.h"
#include "kernels/common/Norm.h"
#include "kernels/common/Dtypes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace refk {

// Storage types, conversions, cast rules, itemsize and dispatch: common/Dtypes.h;
// dtype names and the shared operand checks: common/Checks.h.

// ---- vector width ----------------------------------------------------------
//
// Note [Vector width]: the library builds for baseline x86-64 (SSE2: four
// floats a vector) and needs no -march flag, while eager CPU dispatches its
// kernels to AVX2 or AVX-512 at run time (ATen's CPU_CAPABILITY). The hot
// loops (elementwise rows, the row kernels' passes) are marked REFK_WIDE:
// GCC compiles each for AVX-512, AVX2 and the baseline (target_clones) and
// picks the widest the host has when the library loads. Contraction of a*b+c
// into a fused multiply-add is off in them, and no pass reassociates (the
// lane sums fix their order in the source), so every clone computes the
// same bits as the baseline: results do not depend on the machine. The
// GEMM's micro-kernels are the exception, by design (Note [Blocked GEMM]),
// as MKL's are. Other compilers and targets get the baseline loop.
// The helpers a REFK_WIDE loop calls are REFK_INLINE: GCC does not inline
// them into a clone on its own (its options differ), and a call would run
// the baseline loop. The clones cost compile time (half as much again for
// the elementwise files): -DREFK_BASELINE_ONLY builds the baseline loop
// alone, same results, for builds that are compiled more than run (the
// opgen-backend test suite's throwaway projects).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(REFK_BASELINE_ONLY)
#define REFK_WIDE __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#define REFK_INLINE inline __attribute__((always_inline))
#else
#define REFK_WIDE
#define REFK_INLINE inline
#endif

// ---- errors ----------------------------------------------------------------

// fail, unsupported, checked, check_shapes, check_rank, dispatch_floating:
// common/Errors.h.

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
  static constexpr int kMax = 12;
  const void* ptrs_[kMax] = {};
  int n_ = 0;
};

// Element offset (in elements) of the i-th element in row-major order.
inline int64_t offset_in(const refkTensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

// Typed pointer to the element `off` elements into a tensor's data.
template <class T>
const T* data_at(const refkTensor& t, int64_t off) {
  return static_cast<const T*>(t.data) + off;
}
template <class T>
T* data_at_mut(const refkTensor& t, int64_t off) {
  return static_cast<T*>(t.data) + off;
}

// ---- the loop planner ------------------------------------------------------

// N operands of one shape (operand 0 is the output) planned as Note [Loop
// plans] (common/Loop.h): byte strides over coalesced dims, innermost last.
template <int N>
struct Loop : LoopPlan<N> {
  char* data[N] = {};

  explicit Loop(const refkTensor* const (&ops)[N]) : LoopPlan<N>(ops, N) {
    for (int k = 0; k < N; ++k) data[k] = static_cast<char*>(ops[k]->data);
  }

  // Calls row(ptrs, inner_strides, count) for every run of the innermost
  // dim, split over threads.
  template <class Row>
  void run(int threads, Row&& row) const {
    if (this->numel == 0) return;
    const int last = this->ndim - 1;
    const auto& sizes = this->sizes;
    const auto& strides = this->strides;
    parallel_for(this->numel, kGrain, threads, [&](int64_t begin, int64_t end) {
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

// The contiguous rows of typed_rows, one loop each the compiler vectorizes
// (Note [Vector width]). o may be a or b (in-place ops).
template <class Out, class In, class F>
REFK_WIDE void map_row(Out* o, const In* a, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i])));
}
template <class Out, class In, class F>
REFK_WIDE void map_row(Out* o, const In* a, const In* b, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i]), load(b[i])));
}
template <class Out, class In, class V, class F>
REFK_WIDE void map_row_broadcast(Out* o, const In* a, V b, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(a[i]), b));
}

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
        map_row(o, a, n, f);
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = store<Out>(f(load(*reinterpret_cast<const In*>(p[1] + i * s[1]))));
      }
    } else if constexpr (NIN == 2) {
      const In* a = reinterpret_cast<const In*>(p[1]);
      const In* b = reinterpret_cast<const In*>(p[2]);
      if (contiguous) {
        map_row(o, a, b, n, f);
        return;
      }
      if (s[0] == static_cast<int64_t>(sizeof(Out)) && s[1] == static_cast<int64_t>(sizeof(In)) && s[2] == 0) {
        map_row_broadcast(o, a, load(*b), n, f);
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


// ---- rows: softmax and normalization ---------------------------------------
//
// Note [Row kernels]: softmax and the norms work on rows: the elements one
// result is normalized over (a softmax dim, a layer-norm row, a group, a
// batch-norm channel). A row is read once into a per-thread scratch buffer of
// the compute type (float for float, float16 and bfloat16; double for
// float64), every pass over it then runs on contiguous memory the compiler
// vectorizes, and the result is written back once. Rows are independent, so
// threads split rows; a GPU runs a block per row.

// A row as `runs` runs of `len` elements: element (r, i) lies at
// r * run_stride + i * stride (elements) from the row's first one. A softmax
// or layer-norm row is one run; a group is its channels; a batch-norm channel
// is one run per sample.
struct RowShape {
  int64_t runs = 1, len = 1, run_stride = 0, stride = 1;
  int64_t size() const { return runs * len; }
};

template <class T, class C>
void load_row(C* dst, const T* src, const RowShape& w) {
  for (int64_t r = 0; r < w.runs; ++r, dst += w.len) {
    const T* p = src + r * w.run_stride;
    if (w.stride == 1) {
      for (int64_t i = 0; i < w.len; ++i) dst[i] = C(load(p[i]));
    } else {
      for (int64_t i = 0; i < w.len; ++i) dst[i] = C(load(p[i * w.stride]));
    }
  }
}

template <class T, class C>
void store_row(T* dst, const RowShape& w, const C* src) {
  for (int64_t r = 0; r < w.runs; ++r, src += w.len) {
    T* p = dst + r * w.run_stride;
    if (w.stride == 1) {
      for (int64_t i = 0; i < w.len; ++i) p[i] = store<T>(src[i]);
    } else {
      for (int64_t i = 0; i < w.len; ++i) p[i * w.stride] = store<T>(src[i]);
    }
  }
}

// Per-thread scratch of n elements; slots let one kernel hold several rows.
template <class C>
C* scratch(int slot, int64_t n) {
  thread_local std::vector<C> bufs[3];
  std::vector<C>& b = bufs[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}

// The sum of f(i) over [0, n) as Note [Two-level sums]: 16 lanes of C over
// chunks of 4096, chunk totals in double.
template <class C, class F>
REFK_INLINE double lane_sum(int64_t n, F&& f) {
  constexpr int kLanes = 16;
  constexpr int64_t kChunk = 4096;
  double total = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
    const int64_t k1 = std::min(n, k0 + kChunk);
    C lanes[kLanes] = {};
    int64_t k = k0;
    for (; k + kLanes <= k1; k += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += f(k + l);
    }
    for (; k < k1; ++k) lanes[0] += f(k);
    for (int w = kLanes / 2; w > 0; w /= 2) {
      for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
    }
    total += static_cast<double>(lanes[0]);
  }
  return total;
}

// The largest element of p[0, n) (n > 0); a NaN may or may not win, which
// row kernels need not care about: a NaN element makes its row NaN anyway.
template <class C>
REFK_INLINE C lane_max(const C* p, int64_t n) {
  constexpr int kLanes = 16;
  C lanes[kLanes];
  for (auto& l : lanes) l = p[0];
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = p[k + l] > lanes[l] ? p[k + l] : lanes[l];
  }
  for (; k < n; ++k) lanes[0] = p[k] > lanes[0] ? p[k] : lanes[0];
  // Halving, as lane_sum's: a chain of 15 dependent maxima costs more than
  // the whole row when the row is short.
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] = lanes[l + w] > lanes[l] ? lanes[l + w] : lanes[l];
  }
  return lanes[0];
}

// Mean and biased variance of a row in two passes (the second over
// deviations from the mean, as accurate as Welford and vectorizable); an
// empty row has mean 0 and variance NaN, as ATen's.
template <class C>
REFK_WIDE void moments(const C* x, int64_t n, double& mean, double& var) {
  mean = norm::mean_of(lane_sum<C>(n, [&](int64_t i) { return x[i]; }), n);
  const C m = C(mean);
  var = norm::var_of(lane_sum<C>(n, [&](int64_t i) { return (x[i] - m) * (x[i] - m); }), n);
}

// dst[i] = exp(src[i] - shift) over a row (dst may be src): norm::exp_shifted
// (common/Norm.h) in two loops. For float the clamp runs as a loop of its own: gcc vectorizes a select only where no
// arithmetic that could trap depends on it in the same loop.
template <class C>
REFK_INLINE void exp_row(C* dst, const C* src, int64_t n, C shift) {
  if constexpr (std::is_same_v<C, float>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = norm::exp_clamp(src[i] - shift);
    for (int64_t i = 0; i < n; ++i) dst[i] = norm::exp_clamped(dst[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = std::exp(src[i] - shift);
  }
}

// A floating operand's element `i` (offset in elements) as double, and a
// double stored into one: for per-row statistics and parameters, whose
// dtype may differ from the row's (float32 weights of a bfloat16 input).
double load_any(const refkTensor& t, int64_t i);
void store_any(const refkTensor& t, int64_t i, double v);

// A 1-d floating operand (weight, bias, running stats) as `n` values of C;
// `fill` for each when its data is NULL (an absent weight is all ones).
template <class C>
std::vector<C> load_vector(const refkTensor* t, int64_t n, C fill) {
  std::vector<C> v(static_cast<size_t>(n), fill);
  if (t != nullptr && t->data != nullptr) {
    const int64_t s = t->ndim > 0 ? t->strides[0] : 0;
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = C(load_any(*t, i * s));
  }
  return v;
}

}  // namespace refk
