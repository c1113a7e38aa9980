// What the indexing kernels of the CPU reference library share (Index.cpp:
// reads by index, index_put, nonzero, masked_scatter; Scatter.cpp: scatter
// and its reductions): access windows over a runtime number of operands, the
// first out-of-range index of Note [Index errors], and the row loop for a
// runtime operand count.
#pragma once

#include "kernels/cpu/Common.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace refk {

// ---- access, errors ----------------------------------------------------------

// Note [Protected device memory] for a runtime number of operands (Access
// in Common.h holds a fixed few).
class AccessAll {
 public:
  explicit AccessAll(const std::vector<const refkTensor*>& ts) {
    for (const refkTensor* t : ts) {
      if (t != nullptr && t->data != nullptr) {
        refAccessBegin(t->data);
        ptrs_.push_back(t->data);
      }
    }
  }
  ~AccessAll() {
    for (auto it = ptrs_.rbegin(); it != ptrs_.rend(); ++it) refAccessEnd(*it);
  }
  AccessAll(const AccessAll&) = delete;
  AccessAll& operator=(const AccessAll&) = delete;

 private:
  std::vector<const void*> ptrs_;
};

// The offending index of Note [Index errors]: threads report what they
// find and the lowest position wins, so the message does not depend on
// thread timing.
class IndexError {
 public:
  void report(int64_t pos, int64_t value, int64_t dim, int64_t size) {
    std::lock_guard<std::mutex> g(mu_);
    if (pos < pos_) {
      pos_ = pos;
      value_ = value;
      dim_ = dim;
      size_ = size;
    }
    found_.store(true, std::memory_order_relaxed);
  }
  bool found() const { return found_.load(std::memory_order_relaxed); }
  refkStatus status() const {
    if (!found()) return refkSuccess;
    return fail(refkErrorIndexOutOfBounds, "index " + std::to_string(value_) + " is out of bounds for dimension " +
                                               std::to_string(dim_) + " with size " + std::to_string(size_));
  }

 private:
  std::mutex mu_;
  std::atomic<bool> found_{false};
  int64_t pos_ = std::numeric_limits<int64_t>::max();
  int64_t value_ = 0, dim_ = 0, size_ = 0;
};

// ---- the row loop, with a runtime operand count ------------------------------

inline constexpr int kMaxOps = REFK_MAX_DIMS + 2;

// Loop<N> of Common.h for operands whose number is known only at run time
// (advanced indexing has one per index tensor): operands of one shape,
// operand 0 leading, planned as Note [Loop plans] (common/Loop.h).
struct Plan : LoopPlan<kMaxOps> {
  char* data[kMaxOps] = {};

  Plan(const refkTensor* const* ops, int n) : LoopPlan<kMaxOps>(ops, n) {
    for (int k = 0; k < n; ++k) data[k] = static_cast<char*>(ops[k]->data);
  }

  // row(ptrs, inner_strides, count, pos) for every run of the innermost dim
  // within elements [begin, end) (pos: the run's first element).
  template <class Row>
  void rows(int64_t begin, int64_t end, Row&& row) const {
    const int last = ndim - 1;
    int64_t idx[REFK_MAX_DIMS];
    int64_t rem = begin;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % sizes[d];
      rem /= sizes[d];
    }
    int64_t inner[kMaxOps];
    for (int k = 0; k < nops; ++k) inner[k] = strides[k][last];
    char* ptrs[kMaxOps];
    for (int64_t pos = begin; pos < end;) {
      for (int k = 0; k < nops; ++k) {
        ptrs[k] = data[k];
        for (int d = 0; d <= last; ++d) ptrs[k] += idx[d] * strides[k][d];
      }
      const int64_t count = std::min(sizes[last] - idx[last], end - pos);
      row(static_cast<char* const*>(ptrs), static_cast<const int64_t*>(inner), count, pos);
      pos += count;
      idx[last] += count;
      for (int d = last; d > 0 && idx[d] == sizes[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  }

  template <class Row>
  void run(int threads, int64_t grain, Row&& row) const {
    if (numel == 0) return;
    parallel_for(numel, grain, threads, [&](int64_t b, int64_t e) { rows(b, e, row); });
  }
};

// How the index operands of a read or write by index are read: operand k's
// values lie in [0, size[k]) (or [-size[k], size[k]) with `wrap`, negative
// ones counting from the end) and step `stride[k]` bytes; errors name
// dimension label[k].
struct Indexing {
  int n = 0;
  bool wrap = false;
  int64_t size[REFK_MAX_DIMS] = {};
  int64_t stride[REFK_MAX_DIMS] = {};
  int64_t label[REFK_MAX_DIMS] = {};

  // The byte offset of index value v of operand k; false when out of range.
  bool offset(int k, int64_t v, int64_t& off) const {
    if (wrap && v < 0) v += size[k];
    if (v < 0 || v >= size[k]) return false;
    off = v * stride[k];
    return true;
  }
};

// `t` with dim d's stride set to 0 (an operand that does not move along d).
inline refkTensor without_dim(const refkTensor& t, int d) {
  refkTensor r = t;
  r.strides[d] = 0;
  return r;
}

// `t` described with `shape`'s sizes (its own strides).
inline refkTensor with_sizes(const refkTensor& t, const refkTensor& shape) {
  refkTensor r = t;
  for (int d = 0; d < t.ndim; ++d) r.sizes[d] = shape.sizes[d];
  return r;
}

inline refkStatus check_indices(const char* op, int n, const refkTensor* indices) {
  for (int k = 0; k < n; ++k) {
    if (!is_index_dtype(indices[k].dtype) || indices[k].dtype != indices[0].dtype) {
      return fail(refkErrorInvalidValue, std::string(op) + ": index tensors must all be int32 or all int64");
    }
  }
  return refkSuccess;
}
}  // namespace refk
