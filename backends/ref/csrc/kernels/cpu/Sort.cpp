// Sorting kernels of the CPU reference library: sort and topk along the
// last dim. Both run the std algorithms ATen's CPU kernels run, on (key,
// position) pairs with ATen's comparators, so equal elements come out in
// eager's order. One slice walker serves both: it threads over the slices,
// loads each into a buffer of pairs, lets the kernel order it, and writes
// the first `k` pairs out as values and indices.
#include "kernels/cpu/Common.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace refk {
namespace {

template <class K>
using Pair = std::pair<K, int64_t>;

// ATen's comparators (KeyValueCompAsc/Desc, topk's lambdas): NaN largest.
template <class K>
bool nan(K x) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(x);
  } else {
    return false;
  }
}
template <class K>
struct Less {
  bool operator()(const Pair<K>& a, const Pair<K>& b) const {
    return (!nan(a.first) && nan(b.first)) || a.first < b.first;
  }
};
template <class K>
struct Greater {
  bool operator()(const Pair<K>& a, const Pair<K>& b) const {
    return (nan(a.first) && !nan(b.first)) || a.first > b.first;
  }
};

// Calls order(pairs) for every slice of `in` along its last dim, then writes
// the first values->sizes[last] pairs into values and indices. Slices are
// spread over the threads; each thread reuses one buffer.
template <class T, class Order>
void for_each_slice(int threads, const refkTensor& values, const refkTensor& indices, const refkTensor& in,
                    Order&& order) {
  const int last = in.ndim - 1;
  const int64_t n = in.sizes[last], k = values.sizes[last];
  const int64_t si = in.strides[last], sv = values.strides[last], sx = indices.strides[last];
  int64_t slices = 1;
  for (int d = 0; d < last; ++d) slices *= in.sizes[d];
  const T* ibase = static_cast<const T*>(in.data);
  T* vbase = static_cast<T*>(values.data);
  int64_t* xbase = static_cast<int64_t*>(indices.data);
  parallel_for(slices, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), threads, [&](int64_t m0, int64_t m1) {
    std::vector<Pair<opmath_t<T>>> buf(static_cast<size_t>(n));
    for (int64_t m = m0; m < m1; ++m) {
      int64_t oi = 0, ov = 0, ox = 0;
      for (int64_t d = last - 1, r = m; d >= 0; --d) {
        const int64_t i = r % in.sizes[d];
        r /= in.sizes[d];
        oi += i * in.strides[d];
        ov += i * values.strides[d];
        ox += i * indices.strides[d];
      }
      const T* src = ibase + oi;
      for (int64_t j = 0; j < n; ++j) buf[static_cast<size_t>(j)] = {load(src[j * si]), j};
      order(buf, si == 0);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = buf[static_cast<size_t>(j)].second;
        vbase[ov + j * sv] = src[at * si];
        xbase[ox + j * sx] = at;
      }
    }
  });
}

template <class T>
void sort_typed(int threads, const refkTensor& values, const refkTensor& indices, const refkTensor& in,
                bool descending, bool stable) {
  using K = opmath_t<T>;
  for_each_slice<T>(threads, values, indices, in, [&](std::vector<Pair<K>>& buf, bool all_equal) {
    if (all_equal) return;  // a broadcast slice: ATen leaves it in place (pytorch#91420)
    if (descending) {
      if (stable) std::stable_sort(buf.begin(), buf.end(), Greater<K>());
      else std::sort(buf.begin(), buf.end(), Greater<K>());
    } else {
      if (stable) std::stable_sort(buf.begin(), buf.end(), Less<K>());
      else std::sort(buf.begin(), buf.end(), Less<K>());
    }
  });
}

// ATen's topk_impl_loop, step for step: partial_sort when k is small
// against the slice, else nth_element (and a sort of the first k - 1).
template <class T>
void topk_typed(int threads, const refkTensor& values, const refkTensor& indices, const refkTensor& in, int64_t k,
                bool largest, bool sorted) {
  using K = opmath_t<T>;
  const int64_t n = in.sizes[in.ndim - 1];
  for_each_slice<T>(threads, values, indices, in, [&](std::vector<Pair<K>>& buf, bool) {
    const auto select = [&](auto comp) {
      if (k * 64 <= n) {
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), comp);
      } else {
        std::nth_element(buf.begin(), buf.begin() + k - 1, buf.end(), comp);
        if (sorted) std::sort(buf.begin(), buf.begin() + k - 1, comp);
      }
    };
    if (largest) select(Greater<K>());
    else select(Less<K>());
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkSort(const refkContext* ctx, const refkTensor* values, const refkTensor* indices,
                    const refkTensor* in, int32_t descending, int32_t stable) {
  return guarded("sort", [&] {
    if (auto s = check_shapes("sort", {values, indices, in})) return s;
    if (in->ndim < 1 || values->dtype != in->dtype || indices->dtype != refkInt64) {
      return fail(refkErrorInvalidValue, "sort: bad operands");
    }
    if (numel(*in) == 0) return refkSuccess;
    const Access access({values, indices, in});
    // ATen's CPU sort hands 1-d integer tensors of 32768 elements or more
    // (its GRAIN_SIZE), ascending, to fbgemm's radix sort: stable.
    const bool integral = in->dtype != refkBool && in->dtype != refkFloat16 && in->dtype != refkBFloat16 &&
                          in->dtype != refkFloat32 && in->dtype != refkFloat64;
    const bool radix = in->ndim == 1 && !descending && integral && in->sizes[0] >= 32768;
    return dispatch(in->dtype, [&](auto tag) {
      sort_typed<typename decltype(tag)::type>(ctx->num_threads, *values, *indices, *in, descending != 0,
                                               stable != 0 || radix);
      return refkSuccess;
    });
  });
}

refkStatus refkTopk(const refkContext* ctx, const refkTensor* values, const refkTensor* indices,
                    const refkTensor* in, int64_t k, int32_t largest, int32_t sorted) {
  return guarded("topk", [&] {
    if (auto s = check_shapes("topk", {values, indices})) return s;
    const int last = in->ndim - 1;
    if (in->ndim < 1 || values->ndim != in->ndim || values->dtype != in->dtype || indices->dtype != refkInt64 ||
        k < 0 || k > in->sizes[last] || values->sizes[last] != k) {
      return fail(refkErrorInvalidValue, "topk: bad operands");
    }
    for (int d = 0; d < last; ++d) {
      if (values->sizes[d] != in->sizes[d]) return fail(refkErrorInvalidValue, "topk: bad operands");
    }
    if (k == 0 || numel(*in) == 0) return refkSuccess;
    const Access access({values, indices, in});
    return dispatch(in->dtype, [&](auto tag) {
      topk_typed<typename decltype(tag)::type>(ctx->num_threads, *values, *indices, *in, k, largest != 0,
                                               sorted != 0);
      return refkSuccess;
    });
  });
}

}  // extern "C"
