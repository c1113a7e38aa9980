// Embedding kernels of the CPU reference library: the dense gradient of an
// embedding lookup (the lookup itself is refkIndexSelect). Threads own
// disjoint ranges of weight rows and each walks all indices in order, so
// every row sums its contributions in ascending index order whatever the
// thread count (ATen's CPU kernel splits the same way).
#include "kernels/common/Loss.h"
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

template <class T>
const T& at_t(const refkTensor& t, int64_t i) {
  return *(static_cast<const T*>(t.data) + i * t.strides[0]);
}

template <class I>
int64_t index_at(const refkTensor& t, int64_t i) {
  return static_cast<int64_t>(*(static_cast<const I*>(t.data) + i * t.strides[0]));
}

template <class T, class I>
refkStatus embedding_backward(int threads, const refkTensor& gw, const refkTensor& grad, const refkTensor& indices,
                              int64_t padding_idx, bool scale_by_freq) {
  using V = opmath_t<T>;
  const int64_t rows = gw.sizes[0], dim = gw.sizes[1], n = indices.sizes[0];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = index_at<I>(indices, i);
    if (k < 0 || k >= rows) {
      return fail(refkErrorIndexOutOfBounds, "index " + std::to_string(k) + " is out of bounds for dimension 0 with size " +
                                                 std::to_string(rows));
    }
  }
  std::vector<int64_t> counts;
  if (scale_by_freq) {
    counts.assign(static_cast<size_t>(rows), 0);
    for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(index_at<I>(indices, i))];
  }
  T* w = static_cast<T*>(gw.data);
  const T* g = static_cast<const T*>(grad.data);
  const int64_t gws0 = gw.strides[0], gws1 = gw.strides[1], gs0 = grad.strides[0], gs1 = grad.strides[1];
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(dim, 1)), threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      for (int64_t j = 0; j < dim; ++j) w[k * gws0 + j * gws1] = store<T>(V(0));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = index_at<I>(indices, i);
      if (k < begin || k >= end || k == padding_idx) continue;
      // ATen's grad_weight[k].add_(grad[i], 1.0 / count): loss::embedding_add.
      const V scale = static_cast<V>(
          loss::embedding_scale(scale_by_freq, scale_by_freq ? counts[static_cast<size_t>(k)] : 1));
      T* row = w + k * gws0;
      const T* src = g + i * gs0;
      if (gws1 == 1 && gs1 == 1) {
        for (int64_t j = 0; j < dim; ++j) row[j] = loss::embedding_add<T>(row[j], src[j], scale);
      } else {
        for (int64_t j = 0; j < dim; ++j) row[j * gws1] = loss::embedding_add<T>(row[j * gws1], src[j * gs1], scale);
      }
    }
  });
  return refkSuccess;
}

template <class I>
I& index_ref(const refkTensor& t, int64_t i, int64_t j = 0) {
  return *(static_cast<I*>(t.data) + i * t.strides[0] + (t.ndim > 1 ? j * t.strides[1] : 0));
}

// Threads own bags; each bag walks its indices in order.
template <class T, class I>
refkStatus embedding_bag(int threads, const refkTensor& out, const refkTensor* offset2bag, const refkTensor& bag_size,
                         const refkTensor& max_indices, const refkTensor& weight, const refkTensor& indices,
                         const refkTensor& offsets, const refkTensor* psw, int32_t mode, int64_t padding_idx) {
  using V = opmath_t<T>;
  const int64_t bags = out.sizes[0], dim = out.sizes[1], n = indices.sizes[0], rows = weight.sizes[0];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = index_at<I>(indices, i);
    if (k < 0 || k >= rows) {
      return fail(refkErrorIndexOutOfBounds, "index " + std::to_string(k) + " is out of bounds for dimension 0 with size " +
                                                 std::to_string(rows));
    }
  }
  // Bag b spans [begin(b), begin(b + 1)), the last one up to n.
  auto begin = [&](int64_t b) {
    return b >= bags ? n : std::min<int64_t>(n, std::max<int64_t>(0, index_at<I>(offsets, b)));
  };
  if (offset2bag != nullptr && offset2bag->data != nullptr) {
    for (int64_t b = 0; b < bags; ++b) {
      for (int64_t i = begin(b); i < begin(b + 1); ++i) index_ref<I>(*offset2bag, i) = static_cast<I>(b);
    }
  }
  const T* w = static_cast<const T*>(weight.data);
  const int64_t ws0 = weight.strides[0], ws1 = weight.strides[1];
  parallel_for(bags, 1, threads, [&](int64_t b0, int64_t b1) {
    std::vector<double> acc(static_cast<size_t>(dim));
    std::vector<V> best(static_cast<size_t>(dim));
    std::vector<int64_t> arg(static_cast<size_t>(dim));
    for (int64_t b = b0; b < b1; ++b) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(arg.begin(), arg.end(), 0);
      int64_t count = 0;
      for (int64_t i = begin(b); i < begin(b + 1); ++i) {
        const int64_t k = index_at<I>(indices, i);
        if (k == padding_idx) continue;
        const T* row = w + k * ws0;
        if (mode == 2) {
          for (int64_t j = 0; j < dim; ++j) {
            const V v = load(row[j * ws1]);
            if (count == 0 || v > best[j]) best[j] = v, arg[j] = k;
          }
        } else {
          const double scale = psw ? static_cast<double>(load(at_t<T>(*psw, i))) : 1.0;
          for (int64_t j = 0; j < dim; ++j) acc[j] += static_cast<double>(load(row[j * ws1])) * scale;
        }
        ++count;
      }
      for (int64_t j = 0; j < dim; ++j) {
        T& o = *(static_cast<T*>(out.data) + b * out.strides[0] + j * out.strides[1]);
        if (mode == 2) {
          o = count == 0 ? store<T>(V(0)) : store<T>(best[j]);
          index_ref<I>(max_indices, b, j) = static_cast<I>(arg[j]);
        } else {
          const T sum = store<T>(acc[j]);
          o = mode == 1 ? store<T>(load(sum) / V(std::max<int64_t>(count, 1))) : sum;
        }
      }
      index_ref<I>(bag_size, b) = static_cast<I>(mode == 0 ? 0 : count);
      if (mode != 2) index_ref<I>(max_indices, b) = index_ref<I>(bag_size, b);
    }
  });
  return refkSuccess;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkEmbeddingBackward(const refkContext* ctx, const refkTensor* grad_weight,
                                            const refkTensor* grad, const refkTensor* indices, int64_t padding_idx,
                                            int32_t scale_grad_by_freq) {
  return guarded("embedding_backward", [&] {
    if (const char* e = check::embedding_backward(*grad_weight, *grad, *indices)) {
      return fail(refkErrorInvalidValue, e);
    }
    const Access access({grad_weight, grad, indices});
    return dispatch(grad->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (indices->dtype == refkInt64) {
        return embedding_backward<T, int64_t>(ctx->num_threads, *grad_weight, *grad, *indices, padding_idx,
                                              scale_grad_by_freq != 0);
      } else {
        return embedding_backward<T, int32_t>(ctx->num_threads, *grad_weight, *grad, *indices, padding_idx,
                                              scale_grad_by_freq != 0);
      }
    });
  });
}

extern "C" refkStatus refkEmbeddingBag(const refkContext* ctx, const refkTensor* out, const refkTensor* offset2bag,
                                       const refkTensor* bag_size, const refkTensor* max_indices,
                                       const refkTensor* weight, const refkTensor* indices, const refkTensor* offsets,
                                       const refkTensor* per_sample_weights, int32_t mode, int64_t padding_idx) {
  return guarded("embedding_bag", [&] {
    if (out->ndim != 2 || weight->ndim != 2 || indices->ndim != 1 || offsets->ndim != 1 ||
        out->sizes[1] != weight->sizes[1] || bag_size->ndim != 1 || bag_size->sizes[0] != out->sizes[0]) {
      return fail(refkErrorInvalidValue, "embedding_bag: expected out (bags x dim), weight (rows x dim), 1-d indices, "
                                         "offsets and bag_size");
    }
    if ((indices->dtype != refkInt64 && indices->dtype != refkInt32) || offsets->dtype != indices->dtype ||
        bag_size->dtype != indices->dtype || max_indices->dtype != indices->dtype) {
      return fail(refkErrorInvalidValue, "embedding_bag: indices, offsets, bag_size and max_indices share int32 or int64");
    }
    if (mode < 0 || mode > 2 || out->dtype != weight->dtype) {
      return fail(refkErrorInvalidValue, "embedding_bag: mode is 0, 1 or 2 and out has weight's dtype");
    }
    const refkTensor* psw = per_sample_weights && per_sample_weights->data ? per_sample_weights : nullptr;
    const Access access({out, offset2bag, bag_size, max_indices, weight, indices, offsets, psw});
    return dispatch(weight->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        return unsupported("embedding_bag", weight->dtype);
      } else if (indices->dtype == refkInt64) {
        return embedding_bag<T, int64_t>(ctx->num_threads, *out, offset2bag, *bag_size, *max_indices, *weight,
                                         *indices, *offsets, psw, mode, padding_idx);
      } else {
        return embedding_bag<T, int32_t>(ctx->num_threads, *out, offset2bag, *bag_size, *max_indices, *weight,
                                         *indices, *offsets, psw, mode, padding_idx);
      }
    });
  });
}
