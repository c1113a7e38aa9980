// Indexing and sorting kernels of the CPU reference library: gather,
// index_select and advanced indexing (reads by index), scatter and index_put
// (writes by index), sort, topk, nonzero and masked_scatter.
//
// Reads by index share one engine: out[p] = in[p + sum_k v_k(p) * stride_k]
// over coalesced, threaded rows (the loop planner of Common.h with a runtime
// operand count), where a row whose indices do not move, as index_select's
// along an outer dim, is one contiguous copy. Writes by index keep a fixed
// order per destination element, so duplicates combine the same way every
// run: scatter threads over the columns of index (its dims other than
// `dim`), never along `dim`, and accumulating index_put runs in order. Sort
// and topk run the std algorithms ATen's CPU kernels run on (key, position)
// pairs with ATen's comparators, so equal elements come out as eager's.
#include "kernels/cpu/Common.h"

#include <atomic>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace refk {
namespace {

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

bool is_index_dtype(refkDtype d) { return d == refkInt32 || d == refkInt64; }

template <class F>
decltype(auto) dispatch_index(refkDtype d, F&& f) {
  if (d == refkInt32) return f(Tag<int32_t>{});
  return f(Tag<int64_t>{});
}

// Calls f(Tag<E>{}) with an unsigned type of the dtype's size: moving
// elements by index needs only their bytes.
template <class F>
decltype(auto) dispatch_bytes(refkDtype d, F&& f) {
  switch (itemsize(d)) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: return f(Tag<uint64_t>{});
  }
}

// ---- the planner, with a runtime operand count -------------------------------

constexpr int kMaxOps = REFK_MAX_DIMS + 2;

// Loop<N> of Common.h for operands whose number is known only at run time
// (advanced indexing has one per index tensor): operands of one shape,
// operand 0 leading, as byte strides over coalesced dims, innermost last.
struct Plan {
  int nops = 0;
  int ndim = 0;
  int64_t numel = 1;
  int64_t sizes[REFK_MAX_DIMS] = {};
  int64_t strides[kMaxOps][REFK_MAX_DIMS] = {};
  char* data[kMaxOps] = {};

  Plan(const refkTensor* const* ops, int n) : nops(n) {
    const refkTensor& lead = *ops[0];
    for (int k = 0; k < n; ++k) data[k] = static_cast<char*>(ops[k]->data);
    int order[REFK_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < lead.ndim; ++d) {
      numel *= lead.sizes[d];
      if (lead.sizes[d] != 1) order[m++] = d;
    }
    std::stable_sort(order, order + m, [&](int x, int y) {
      for (int k = 0; k < n; ++k) {
        const int64_t sx = std::abs(ops[k]->strides[x]), sy = std::abs(ops[k]->strides[y]);
        if (sx != sy) return sx > sy;
      }
      return false;
    });
    for (int i = 0; i < m; ++i) {
      const int d = order[i];
      const int64_t size = lead.sizes[d];
      bool merge = ndim > 0;
      for (int k = 0; k < n && merge; ++k) {
        merge = strides[k][ndim - 1] == ops[k]->strides[d] * itemsize(ops[k]->dtype) * size;
      }
      const int at = merge ? ndim - 1 : ndim;
      if (merge) {
        sizes[at] *= size;
      } else {
        sizes[at] = size;
        ++ndim;
      }
      for (int k = 0; k < n; ++k) strides[k][at] = ops[k]->strides[d] * itemsize(ops[k]->dtype);
    }
    if (ndim == 0) {
      sizes[0] = 1;
      for (int k = 0; k < n; ++k) strides[k][0] = 0;
      ndim = 1;
    }
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

// ---- reads by index -----------------------------------------------------------

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

// Operands: out, in (out's shape, stride 0 over the indexed dims), then
// the index operands; out[p] = in[p + offsets].
template <class E, class I, bool CHECK>
void read_by_index(const Plan& plan, const Indexing& ix, int threads, IndexError& err) {
  const int n = ix.n;
  plan.run(threads, kGrain, [&](char* const* p, const int64_t* s, int64_t count, int64_t pos) {
    if (CHECK && err.found()) return;
    bool fixed = true;
    for (int k = 0; k < n; ++k) fixed = fixed && s[2 + k] == 0;
    char* o = p[0];
    const char* in = p[1];
    if (fixed) {
      // The indices do not move along the row: one offset, one strided copy.
      int64_t off = 0;
      for (int k = 0; k < n; ++k) {
        const int64_t v = *reinterpret_cast<const I*>(p[2 + k]);
        int64_t step = 0;
        if (!ix.offset(k, v, step)) {
          err.report(pos, v, ix.label[k], ix.size[k]);
          return;
        }
        off += step;
      }
      in += off;
      if (s[0] == static_cast<int64_t>(sizeof(E)) && s[1] == static_cast<int64_t>(sizeof(E))) {
        std::memcpy(o, in, static_cast<size_t>(count) * sizeof(E));
      } else {
        for (int64_t i = 0; i < count; ++i) {
          *reinterpret_cast<E*>(o + i * s[0]) = *reinterpret_cast<const E*>(in + i * s[1]);
        }
      }
      return;
    }
    if (n == 1) {
      const char* ip = p[2];
      const int64_t is = s[2];
      if (s[0] == static_cast<int64_t>(sizeof(E)) && is == static_cast<int64_t>(sizeof(I)) && s[1] == 0 && !ix.wrap) {
        // index_select along the inner dim, gather along the last: a plain
        // gather loop over contiguous indices.
        E* oe = reinterpret_cast<E*>(o);
        const I* ie = reinterpret_cast<const I*>(ip);
        const int64_t st = ix.stride[0], bound = ix.size[0];
        for (int64_t i = 0; i < count; ++i) {
          const int64_t v = ie[i];
          if (CHECK && static_cast<uint64_t>(v) >= static_cast<uint64_t>(bound)) {
            err.report(pos + i, v, ix.label[0], bound);
            return;
          }
          oe[i] = *reinterpret_cast<const E*>(in + v * st);
        }
        return;
      }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t v = *reinterpret_cast<const I*>(ip + i * is);
        int64_t off;
        if (!ix.offset(0, v, off)) {
          err.report(pos + i, v, ix.label[0], ix.size[0]);
          return;
        }
        *reinterpret_cast<E*>(o + i * s[0]) = *reinterpret_cast<const E*>(in + i * s[1] + off);
      }
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      int64_t off = 0;
      for (int k = 0; k < n; ++k) {
        const int64_t v = *reinterpret_cast<const I*>(p[2 + k] + i * s[2 + k]);
        int64_t step;
        if (!ix.offset(k, v, step)) {
          err.report(pos + i, v, ix.label[k], ix.size[k]);
          return;
        }
        off += step;
      }
      *reinterpret_cast<E*>(o + i * s[0]) = *reinterpret_cast<const E*>(in + i * s[1] + off);
    }
  });
}

refkStatus read_by_index(int threads, const std::vector<const refkTensor*>& ops, const Indexing& ix, bool check) {
  const Plan plan(ops.data(), static_cast<int>(ops.size()));
  IndexError err;
  const refkDtype idt = ix.n > 0 ? ops[2]->dtype : refkInt64;
  dispatch_bytes(ops[0]->dtype, [&](auto e) {
    using E = typename decltype(e)::type;
    dispatch_index(idt, [&](auto i) {
      using I = typename decltype(i)::type;
      if (check) {
        read_by_index<E, I, true>(plan, ix, threads, err);
      } else {
        read_by_index<E, I, false>(plan, ix, threads, err);
      }
      return 0;
    });
    return 0;
  });
  return err.status();
}

// `t` with dim d's stride set to 0 (an operand that does not move along d).
refkTensor without_dim(const refkTensor& t, int d) {
  refkTensor r = t;
  r.strides[d] = 0;
  return r;
}

// `t` described with `shape`'s sizes (its own strides).
refkTensor with_sizes(const refkTensor& t, const refkTensor& shape) {
  refkTensor r = t;
  for (int d = 0; d < t.ndim; ++d) r.sizes[d] = shape.sizes[d];
  return r;
}

// A contiguous stand-in of t's shape without data: leading a Plan, it
// makes the iteration row-major whatever the other operands' strides.
refkTensor row_major(const refkTensor& t) {
  refkTensor r = t;
  r.data = nullptr;
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    r.strides[d] = stride;
    stride *= t.sizes[d];
  }
  return r;
}

refkStatus check_indices(const char* op, int n, const refkTensor* indices) {
  for (int k = 0; k < n; ++k) {
    if (!is_index_dtype(indices[k].dtype) || indices[k].dtype != indices[0].dtype) {
      return fail(refkErrorInvalidValue, std::string(op) + ": index tensors must all be int32 or all int64");
    }
  }
  return refkSuccess;
}

// ---- writes by index ------------------------------------------------------------

// Wrapping integer arithmetic (signed overflow is undefined in C++).
template <class A>
A add(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <class A>
A mul(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <class A>
bool is_nan(A x) {
  if constexpr (std::is_floating_point_v<A>) {
    return x != x;
  } else {
    return false;
  }
}

// One step of a scatter reduction on accumulator type A (ATen's functors:
// amax/amin take a NaN source, and std::max/min keep a NaN accumulator).
template <refkScatterReduce R, class A>
A reduce_step(A acc, A x) {
  if constexpr (R == refkScatterAssign) {
    return x;
  } else if constexpr (R == refkScatterAdd || R == refkScatterMean) {
    return add(acc, x);
  } else if constexpr (R == refkScatterMultiply) {
    return mul(acc, x);
  } else if constexpr (R == refkScatterAmax) {
    return is_nan(x) ? x : std::max(acc, x);
  } else {
    return is_nan(x) ? x : std::min(acc, x);
  }
}

template <class A>
A identity(refkScatterReduce r) {
  switch (r) {
    case refkScatterMultiply: return A(1);
    case refkScatterAmax:
      if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::lowest();
    case refkScatterAmin:
      if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::max();
    default: return A(0);
  }
}

// Python's floor division for integers (ATen's div_floor), true division otherwise.
template <class A>
A divide(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    if (b == A(-1)) return static_cast<A>(static_cast<uint64_t>(0) - static_cast<uint64_t>(a));
    const A q = static_cast<A>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<A>(q - 1) : q;
  } else {
    return a / b;
  }
}

struct Scatter {
  int32_t dim;
  refkScatterReduce reduce;
  bool include_self;
  refkScalar value;
};

// Converts a source element to the accumulator type (float for the half
// types' reductions, else the element type itself).
template <class A, class S>
A widen(S s) {
  if constexpr (std::is_same_v<A, S>) {
    return s;
  } else {
    return static_cast<A>(load(s));
  }
}

// `target` (self, or a float copy of it) combines src's elements of type S
// (or sc.value) along `dim` over index's columns, threads over the columns;
// `counts` (mean) counts what each target element receives, laid out as
// counts_desc (self's shape).
template <class S, class A, class I, refkScatterReduce R>
void scatter_pass(int threads, const refkTensor& target, const refkTensor& index, const refkTensor* src,
                  const Scatter& sc, int64_t* counts, const refkTensor* counts_desc, IndexError& err) {
  const int dim = sc.dim;
  const int64_t D = index.sizes[dim];
  const int64_t bound = target.sizes[dim];
  // Columns: index's shape with `dim` dropped (size 1).
  refkTensor cols_index = index, cols_target = with_sizes(target, index), cols_src{}, cols_counts{};
  cols_index.sizes[dim] = cols_target.sizes[dim] = 1;
  std::vector<const refkTensor*> ops = {&cols_index, &cols_target};
  if (src != nullptr) {
    cols_src = with_sizes(*src, index);
    cols_src.sizes[dim] = 1;
    ops.push_back(&cols_src);
  }
  if (counts != nullptr) {
    cols_counts = with_sizes(*counts_desc, index);
    cols_counts.sizes[dim] = 1;
    ops.push_back(&cols_counts);
  }
  const Plan plan(ops.data(), static_cast<int>(ops.size()));
  const int64_t is = index.strides[dim] * static_cast<int64_t>(sizeof(I));
  const int64_t ts = target.strides[dim] * static_cast<int64_t>(sizeof(A));
  const int64_t ss = src != nullptr ? src->strides[dim] * static_cast<int64_t>(sizeof(S)) : 0;
  const int64_t cs = counts != nullptr ? counts_desc->strides[dim] * static_cast<int64_t>(sizeof(int64_t)) : 0;
  const int cslot = src != nullptr ? 3 : 2;
  A fixed{};
  if constexpr (is_floating_v<A>) {
    fixed = store<A>(sc.value.f);
  } else {
    fixed = store<A>(sc.value.i);
  }
  // The i-th element along `dim` of one column.
  auto one = [&](char* const* p, int64_t i, int64_t pos) {
    const int64_t v = *reinterpret_cast<const I*>(p[0] + i * is);
    if (v < 0 || v >= bound) {
      err.report(pos, v, dim, bound);
      return false;
    }
    A& t = *reinterpret_cast<A*>(p[1] + v * ts);
    const A x = src != nullptr ? widen<A>(*reinterpret_cast<const S*>(p[2] + i * ss)) : fixed;
    t = reduce_step<R>(t, x);
    if (counts != nullptr) ++*reinterpret_cast<int64_t*>(p[cslot] + v * cs);
    return true;
  };
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(D, 1));
  const bool long_rows = plan.sizes[plan.ndim - 1] >= 16;
  parallel_for(plan.numel, grain, threads, [&](int64_t b, int64_t e) {
    char* q[kMaxOps];
    if (long_rows) {
      // `dim` outermost: every step walks runs of adjacent columns.
      for (int64_t i = 0; i < D && !err.found(); ++i) {
        plan.rows(b, e, [&](char* const* p, const int64_t* s, int64_t n, int64_t pos) {
          for (int64_t j = 0; j < n; ++j) {
            for (int k = 0; k < plan.nops; ++k) q[k] = p[k] + j * s[k];
            if (!one(q, i, pos + j)) return;
          }
        });
      }
    } else {
      plan.rows(b, e, [&](char* const* p, const int64_t* s, int64_t n, int64_t pos) {
        for (int64_t j = 0; j < n; ++j) {
          for (int k = 0; k < plan.nops; ++k) q[k] = p[k] + j * s[k];
          for (int64_t i = 0; i < D; ++i) {
            if (!one(q, i, pos + j)) return;
          }
        }
      });
    }
  });
}

// A contiguous descriptor of host scratch memory with `like`'s shape.
refkTensor scratch(void* data, refkDtype dtype, const refkTensor& like) {
  refkTensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = like.ndim;
  int64_t stride = 1;
  for (int d = like.ndim - 1; d >= 0; --d) {
    t.sizes[d] = like.sizes[d];
    t.strides[d] = stride;
    stride *= like.sizes[d];
  }
  return t;
}

template <class T, class I>
refkStatus scatter_typed(const refkContext* ctx, const refkTensor& self, const refkTensor& index,
                         const refkTensor* src, const Scatter& sc) {
  const int threads = ctx->num_threads;
  IndexError err;
  if (sc.reduce == refkScatterAssign) {
    scatter_pass<T, T, I, refkScatterAssign>(threads, self, index, src, sc, nullptr, nullptr, err);
    return err.status();
  }
  // Note [Scatter accumulation]: as ATen's CPU scatter, float16/bfloat16
  // reductions run in a float copy of self and round once at the end.
  constexpr bool kWide = is_half_v<T>;
  using A = opmath_t<T>;
  std::vector<float> wide;
  refkTensor target = self;
  if constexpr (kWide) {
    wide.resize(static_cast<size_t>(numel(self)));
    target = scratch(wide.data(), refkFloat32, self);
    if (auto s = refkCopy(ctx, &target, &self)) return s;
  }
  if (!sc.include_self) {
    // Elements that receive values start from the reduction's identity.
    Scatter init = sc;
    const A id = identity<A>(sc.reduce);
    init.value = refkScalar{static_cast<double>(id), 0};
    if constexpr (is_integral_v<A> || std::is_same_v<A, bool>) init.value.i = static_cast<int64_t>(id);
    scatter_pass<A, A, I, refkScatterAssign>(threads, target, index, nullptr, init, nullptr, nullptr, err);
    if (err.found()) return err.status();
  }
  std::vector<int64_t> counts;
  refkTensor counts_desc{};
  if (sc.reduce == refkScatterMean) {
    counts.assign(static_cast<size_t>(numel(self)), 0);
    counts_desc = scratch(counts.data(), refkInt64, self);
  }
  int64_t* cp = counts.empty() ? nullptr : counts.data();
  switch (sc.reduce) {
    case refkScatterAssign: break;
    case refkScatterAdd: scatter_pass<T, A, I, refkScatterAdd>(threads, target, index, src, sc, cp, &counts_desc, err); break;
    case refkScatterMean: scatter_pass<T, A, I, refkScatterMean>(threads, target, index, src, sc, cp, &counts_desc, err); break;
    case refkScatterMultiply: scatter_pass<T, A, I, refkScatterMultiply>(threads, target, index, src, sc, cp, &counts_desc, err); break;
    case refkScatterAmax: scatter_pass<T, A, I, refkScatterAmax>(threads, target, index, src, sc, cp, &counts_desc, err); break;
    case refkScatterAmin: scatter_pass<T, A, I, refkScatterAmin>(threads, target, index, src, sc, cp, &counts_desc, err); break;
  }
  if (err.found()) return err.status();
  if constexpr (kWide) {
    if (auto s = refkCopy(ctx, &self, &target)) return s;
  }
  if constexpr (!std::is_same_v<T, bool>) {
    if (sc.reduce == refkScatterMean) {
      // ATen: count = values received (+1 with include_self) in self's
      // dtype, 0 made 1; self /= count, floor division for integers.
      parallel_for(numel(self), kGrain, threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t received = counts[static_cast<size_t>(i)];
          if (received == 0) continue;
          const int64_t c = received + (sc.include_self ? 1 : 0);
          A count;
          if constexpr (std::is_integral_v<A>) {
            count = static_cast<A>(static_cast<uint64_t>(c));
          } else {
            count = load(store<T>(static_cast<A>(c)));
          }
          if (count == A(0)) count = A(1);
          T& t = static_cast<T*>(self.data)[offset_in(self, i)];
          t = store<T>(divide(load(t), count));
        }
      });
    }
  }
  return refkSuccess;
}

// ---- sorting ----------------------------------------------------------------------

// ATen's comparators (KeyValueCompAsc/Desc, topk's lambdas): NaN largest.
template <class K>
struct Less {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (!is_nan(a.first) && is_nan(b.first)) || a.first < b.first;
  }
};
template <class K>
struct Greater {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (is_nan(a.first) && !is_nan(b.first)) || a.first > b.first;
  }
};

// Slices along the trailing dim: calls f(m, in_offset, out_offsets...) for
// slices [m0, m1) (offsets in elements).
struct Slices {
  int lead = 0;  // leading dims
  const refkTensor* ts[3];
  int64_t count = 1;

  Slices(const refkTensor& a, const refkTensor& b, const refkTensor& c) : lead(a.ndim - 1), ts{&a, &b, &c} {
    for (int d = 0; d < lead; ++d) count *= a.sizes[d];
  }
  void offsets(int64_t m, int64_t* off) const {
    off[0] = off[1] = off[2] = 0;
    for (int d = lead - 1; d >= 0; --d) {
      const int64_t i = m % ts[0]->sizes[d];
      m /= ts[0]->sizes[d];
      for (int k = 0; k < 3; ++k) off[k] += i * ts[k]->strides[d];
    }
  }
};

template <class T>
void sort_typed(int threads, const refkTensor& values, const refkTensor& indices, const refkTensor& in,
                bool descending, bool stable) {
  using K = opmath_t<T>;
  using P = std::pair<K, int64_t>;
  const int last = in.ndim - 1;
  const int64_t n = in.sizes[last];
  const Slices sl(in, values, indices);
  const int64_t si = in.strides[last], sv = values.strides[last], sx = indices.strides[last];
  const T* ibase = static_cast<const T*>(in.data);
  T* vbase = static_cast<T*>(values.data);
  int64_t* xbase = static_cast<int64_t*>(indices.data);
  parallel_for(sl.count, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), threads, [&](int64_t m0, int64_t m1) {
    std::vector<P> buf(static_cast<size_t>(n));
    for (int64_t m = m0; m < m1; ++m) {
      int64_t off[3];
      sl.offsets(m, off);
      const T* src = ibase + off[0];
      T* v = vbase + off[1];
      int64_t* x = xbase + off[2];
      if (si == 0) {
        // All elements equal: ATen leaves them in place (pytorch#91420).
        for (int64_t j = 0; j < n; ++j) {
          v[j * sv] = src[0];
          x[j * sx] = j;
        }
        continue;
      }
      for (int64_t j = 0; j < n; ++j) buf[static_cast<size_t>(j)] = P(load(src[j * si]), j);
      if (descending) {
        if (stable) std::stable_sort(buf.begin(), buf.end(), Greater<K>());
        else std::sort(buf.begin(), buf.end(), Greater<K>());
      } else {
        if (stable) std::stable_sort(buf.begin(), buf.end(), Less<K>());
        else std::sort(buf.begin(), buf.end(), Less<K>());
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = buf[static_cast<size_t>(j)].second;
        v[j * sv] = src[at * si];
        x[j * sx] = at;
      }
    }
  });
}

// ATen's topk_impl_loop, step for step: partial_sort when k is small
// against the slice, else nth_element (and a sort of the first k - 1).
template <class T>
void topk_typed(int threads, const refkTensor& values, const refkTensor& indices, const refkTensor& in, int64_t k,
                bool largest, bool sorted) {
  using K = opmath_t<T>;
  using P = std::pair<K, int64_t>;
  const int last = in.ndim - 1;
  const int64_t n = in.sizes[last];
  const Slices sl(in, values, indices);
  const int64_t si = in.strides[last], sv = values.strides[last], sx = indices.strides[last];
  const T* ibase = static_cast<const T*>(in.data);
  T* vbase = static_cast<T*>(values.data);
  int64_t* xbase = static_cast<int64_t*>(indices.data);
  parallel_for(sl.count, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), threads, [&](int64_t m0, int64_t m1) {
    std::vector<P> queue(static_cast<size_t>(n));
    for (int64_t m = m0; m < m1; ++m) {
      int64_t off[3];
      sl.offsets(m, off);
      const T* src = ibase + off[0];
      for (int64_t j = 0; j < n; ++j) queue[static_cast<size_t>(j)] = P(load(src[j * si]), j);
      const auto first = queue.begin();
      auto select = [&](auto comp) {
        if (k * 64 <= n) {
          std::partial_sort(first, first + k, queue.end(), comp);
        } else {
          std::nth_element(first, first + k - 1, queue.end(), comp);
          if (sorted) std::sort(first, first + k - 1, comp);
        }
      };
      if (largest) {
        select(Greater<K>());
      } else {
        select(Less<K>());
      }
      T* v = vbase + off[1];
      int64_t* x = xbase + off[2];
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = queue[static_cast<size_t>(j)].second;
        v[j * sv] = src[at * si];
        x[j * sx] = at;
      }
    }
  });
}

// ---- nonzero, masked_scatter ------------------------------------------------------

template <class T>
bool nonzero_at(const char* p) {
  return load(*reinterpret_cast<const T*>(p)) != opmath_t<T>(0);
}

// Row-major chunks of a shape for order-preserving two-pass kernels: pass 1
// counts per chunk, an exclusive scan gives each chunk its first output.
struct Chunks {
  int64_t n, size, count;
  Chunks(int64_t numel, int threads) : n(numel) {
    const int64_t want = std::max<int64_t>(1, std::min<int64_t>(int64_t{threads} * 4, numel / kGrain));
    size = std::max<int64_t>(1, (numel + want - 1) / want);
    count = numel == 0 ? 0 : (numel + size - 1) / size;
  }
};

// Row-major runs of a shape (ts[0]'s), innermost dim last: calls
// f(off, idx, len, inner) for every run of the innermost dim within
// elements [b, e), with the operands' element offsets and the coordinates
// at the run's start and the operands' innermost strides.
template <int N, class F>
void for_runs(const refkTensor* const (&ts)[N], int64_t b, int64_t e, F&& f) {
  const int nd = ts[0]->ndim;
  const int64_t* sizes = ts[0]->sizes;
  int64_t idx[REFK_MAX_DIMS] = {};
  int64_t off[N] = {};
  int64_t inner[N] = {};
  if (nd == 0) {
    if (b < e) f(static_cast<const int64_t*>(off), static_cast<const int64_t*>(idx), int64_t{1}, static_cast<const int64_t*>(inner));
    return;
  }
  const int last = nd - 1;
  int64_t rem = b;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % sizes[d];
    rem /= sizes[d];
    for (int k = 0; k < N; ++k) off[k] += idx[d] * ts[k]->strides[d];
  }
  for (int k = 0; k < N; ++k) inner[k] = ts[k]->strides[last];
  for (int64_t pos = b; pos < e;) {
    const int64_t len = std::min(sizes[last] - idx[last], e - pos);
    f(static_cast<const int64_t*>(off), static_cast<const int64_t*>(idx), len, static_cast<const int64_t*>(inner));
    pos += len;
    idx[last] += len;
    for (int k = 0; k < N; ++k) off[k] += len * inner[k];
    for (int d = last; d > 0 && idx[d] == sizes[d]; --d) {
      for (int k = 0; k < N; ++k) off[k] += ts[k]->strides[d - 1] - idx[d] * ts[k]->strides[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index) {
  return guarded("gather", [&] {
    if (auto s = check_shapes("gather", {out, index})) return s;
    if (in->ndim != index->ndim || dim < 0 || dim >= in->ndim || out->dtype != in->dtype ||
        !is_index_dtype(index->dtype)) {
      return fail(refkErrorInvalidValue, "gather: bad operands");
    }
    for (int d = 0; d < in->ndim; ++d) {
      if (d != dim && index->sizes[d] > in->sizes[d]) {
        return fail(refkErrorInvalidValue, "gather: index is larger than the input outside dim");
      }
    }
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in, index});
    const refkTensor in_r = with_sizes(without_dim(*in, dim), *out);
    Indexing ix;
    ix.n = 1;
    ix.size[0] = in->sizes[dim];
    ix.stride[0] = in->strides[dim] * itemsize(in->dtype);
    ix.label[0] = dim;
    return read_by_index(ctx->num_threads, {out, &in_r, index}, ix, true);
  });
}

refkStatus refkIndexSelect(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                           const refkTensor* index) {
  return guarded("index_select", [&] {
    if (in->ndim != out->ndim || dim < 0 || dim >= in->ndim || index->ndim > 1 || out->dtype != in->dtype ||
        !is_index_dtype(index->dtype)) {
      return fail(refkErrorInvalidValue, "index_select: bad operands");
    }
    const int64_t n = numel(*index);
    for (int d = 0; d < in->ndim; ++d) {
      if (out->sizes[d] != (d == dim ? n : in->sizes[d])) {
        return fail(refkErrorInvalidValue, "index_select: out has the wrong shape");
      }
    }
    const Access access({out, in, index});
    // Every index first, in order, so the error does not depend on out.
    const int64_t step = index->ndim == 1 ? index->strides[0] : 0;
    const int64_t bound = in->sizes[dim];
    IndexError err;
    dispatch_index(index->dtype, [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I* p = static_cast<const I*>(index->data);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t v = p[j * step];
        if (v < 0 || v >= bound) {
          err.report(j, v, dim, bound);
          break;
        }
      }
      return 0;
    });
    if (err.found()) return err.status();
    if (numel(*out) == 0) return refkSuccess;
    const refkTensor in_r = with_sizes(without_dim(*in, dim), *out);
    refkTensor idx = *out;
    idx.data = index->data;
    idx.dtype = index->dtype;
    for (int d = 0; d < out->ndim; ++d) idx.strides[d] = d == dim ? step : 0;
    Indexing ix;
    ix.n = 1;
    ix.size[0] = bound;
    ix.stride[0] = in->strides[dim] * itemsize(in->dtype);
    ix.label[0] = dim;
    return read_by_index(ctx->num_threads, {out, &in_r, &idx}, ix, false);
  });
}

refkStatus refkIndex(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t nindices,
                     const refkTensor* indices, const int64_t* sizes, const int64_t* strides) {
  return guarded("index", [&] {
    if (nindices < 1 || nindices > REFK_MAX_DIMS || out->dtype != in->dtype) {
      return fail(refkErrorInvalidValue, "index: bad operands");
    }
    if (auto s = check_indices("index", nindices, indices)) return s;
    std::vector<const refkTensor*> ops = {out, in};
    for (int k = 0; k < nindices; ++k) ops.push_back(&indices[k]);
    for (const refkTensor* t : ops) {
      if (!same_shape(*t, *out)) return fail(refkErrorInvalidValue, "index: operands must have out's shape");
    }
    if (numel(*out) == 0) return refkSuccess;
    const AccessAll access(ops);
    Indexing ix;
    ix.n = nindices;
    ix.wrap = true;
    for (int k = 0; k < nindices; ++k) {
      ix.size[k] = sizes[k];
      ix.stride[k] = strides[k] * itemsize(in->dtype);
      ix.label[k] = k;
    }
    return read_by_index(ctx->num_threads, ops, ix, true);
  });
}

refkStatus refkIndexPut(const refkContext* ctx, const refkTensor* self, const refkTensor* values, int32_t nindices,
                        const refkTensor* indices, const int64_t* sizes, const int64_t* strides, int32_t accumulate) {
  return guarded("index_put", [&] {
    if (nindices < 1 || nindices > REFK_MAX_DIMS || self->dtype != values->dtype) {
      return fail(refkErrorInvalidValue, "index_put: bad operands");
    }
    if (auto s = check_indices("index_put", nindices, indices)) return s;
    std::vector<const refkTensor*> ops = {values, self};
    for (int k = 0; k < nindices; ++k) ops.push_back(&indices[k]);
    for (const refkTensor* t : ops) {
      if (!same_shape(*t, *values)) return fail(refkErrorInvalidValue, "index_put: operands must have one shape");
    }
    if (numel(*values) == 0) return refkSuccess;
    const AccessAll access(ops);
    // Row-major order over values' shape (a contiguous phantom operand
    // leads the planner): where indices repeat, the last one wins, as in
    // ATen's loop.
    const refkTensor order = row_major(*values);
    ops.insert(ops.begin(), &order);
    Indexing ix;
    ix.n = nindices;
    ix.wrap = true;
    for (int k = 0; k < nindices; ++k) {
      ix.size[k] = sizes[k];
      ix.stride[k] = strides[k] * itemsize(self->dtype);
      ix.label[k] = k;
    }
    const Plan plan(ops.data(), static_cast<int>(ops.size()));
    IndexError err;
    const int n = nindices;
    // Accumulation runs in order on one thread (ATen's is serial too), so
    // duplicates add up the same way every time.
    const int threads = accumulate ? 1 : ctx->num_threads;
    dispatch(self->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      dispatch_index(indices[0].dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        plan.run(threads, kGrain, [&](char* const* p, const int64_t* s, int64_t count, int64_t pos) {
          if (err.found()) return;
          for (int64_t i = 0; i < count; ++i) {
            int64_t off = 0;
            for (int k = 0; k < n; ++k) {
              const int64_t v = *reinterpret_cast<const I*>(p[3 + k] + i * s[3 + k]);
              int64_t step;
              if (!ix.offset(k, v, step)) {
                err.report(pos + i, v, ix.label[k], ix.size[k]);
                return;
              }
              off += step;
            }
            const T x = *reinterpret_cast<const T*>(p[1] + i * s[1]);
            T& t = *reinterpret_cast<T*>(p[2] + i * s[2] + off);
            if (accumulate) {
              t = store<T>(add(load(t), load(x)));
            } else {
              t = x;
            }
          }
        });
        return 0;
      });
      return 0;
    });
    return err.status();
  });
}

refkStatus refkScatter(const refkContext* ctx, const refkTensor* self, int32_t dim, const refkTensor* index,
                       const refkTensor* src, refkScalar value, refkScatterReduce reduce, int32_t include_self) {
  return guarded("scatter", [&] {
    const bool has_src = src != nullptr && src->data != nullptr;
    if (self->ndim != index->ndim || dim < 0 || dim >= self->ndim || !is_index_dtype(index->dtype) ||
        (has_src && (src->ndim != index->ndim || src->dtype != self->dtype))) {
      return fail(refkErrorInvalidValue, "scatter: bad operands");
    }
    for (int d = 0; d < index->ndim; ++d) {
      if ((d != dim && index->sizes[d] > self->sizes[d]) || (has_src && index->sizes[d] > src->sizes[d])) {
        return fail(refkErrorInvalidValue, "scatter: index is larger than self or src");
      }
    }
    if (numel(*index) == 0) return refkSuccess;
    if (reduce == refkScatterMean && self->dtype == refkBool) return unsupported("scatter mean", self->dtype);
    const Access access({self, index, has_src ? src : nullptr});
    const Scatter sc{dim, reduce, include_self != 0, value};
    return dispatch(self->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_index(index->dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        return scatter_typed<T, I>(ctx, *self, *index, has_src ? src : nullptr, sc);
      });
    });
  });
}

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

refkStatus refkCountNonzero(const refkContext* ctx, const refkTensor* count, const refkTensor* in) {
  return guarded("nonzero", [&] {
    if (count->dtype != refkInt64 || numel(*count) != 1) {
      return fail(refkErrorInvalidValue, "nonzero: count must be a 1-element int64 tensor");
    }
    const Access access({count, in});
    std::atomic<int64_t> total{0};
    if (numel(*in) > 0) {
      const refkTensor* ops[1] = {in};
      const Loop<1> loop(ops);
      dispatch(in->dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        loop.run(ctx->num_threads, [&](char* const* p, const int64_t* s, int64_t n) {
          int64_t c = 0;
          if (s[0] == static_cast<int64_t>(sizeof(T))) {
            const T* a = reinterpret_cast<const T*>(p[0]);
            for (int64_t i = 0; i < n; ++i) c += load(a[i]) != opmath_t<T>(0);
          } else {
            for (int64_t i = 0; i < n; ++i) c += nonzero_at<T>(p[0] + i * s[0]);
          }
          total.fetch_add(c, std::memory_order_relaxed);
        });
        return 0;
      });
    }
    *static_cast<int64_t*>(count->data) = total.load();
    return refkSuccess;
  });
}

refkStatus refkNonzero(const refkContext* ctx, const refkTensor* out, const refkTensor* in) {
  return guarded("nonzero", [&] {
    if (out->dtype != refkInt64 || out->ndim != 2 || out->sizes[1] != in->ndim) {
      return fail(refkErrorInvalidValue, "nonzero: out must be int64 of shape (n, in.ndim)");
    }
    const int64_t total = numel(*in);
    const Chunks ch(total, ctx->num_threads);
    if (ch.count == 0) return out->sizes[0] == 0 ? refkSuccess : fail(refkErrorInvalidValue, "nonzero: bad count");
    const Access access({out, in});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      using V = opmath_t<T>;
      const T* base = static_cast<const T*>(in->data);
      const refkTensor* ts[1] = {in};
      std::vector<int64_t> first(static_cast<size_t>(ch.count) + 1, 0);
      parallel_for(ch.count, 1, ctx->num_threads, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          int64_t found = 0;
          for_runs(ts, c * ch.size, std::min(total, (c + 1) * ch.size),
                   [&](const int64_t* off, const int64_t*, int64_t len, const int64_t* inner) {
                     const T* p = base + off[0];
                     if (inner[0] == 1) {
                       for (int64_t j = 0; j < len; ++j) found += load(p[j]) != V(0);
                     } else {
                       for (int64_t j = 0; j < len; ++j) found += load(p[j * inner[0]]) != V(0);
                     }
                   });
          first[static_cast<size_t>(c) + 1] = found;
        }
      });
      std::partial_sum(first.begin(), first.end(), first.begin());
      if (first.back() != out->sizes[0]) {
        return fail(refkErrorInvalidValue, "nonzero: out has " + std::to_string(out->sizes[0]) + " rows for " +
                                               std::to_string(first.back()) + " nonzero elements");
      }
      int64_t* o = static_cast<int64_t*>(out->data);
      const int64_t rs = out->strides[0], cs = out->strides[1];
      const int last = in->ndim - 1;
      parallel_for(ch.count, 1, ctx->num_threads, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          int64_t row = first[static_cast<size_t>(c)];
          for_runs(ts, c * ch.size, std::min(total, (c + 1) * ch.size),
                   [&](const int64_t* off, const int64_t* idx, int64_t len, const int64_t* inner) {
                     const T* p = base + off[0];
                     for (int64_t j = 0; j < len; ++j) {
                       if (!(load(p[j * inner[0]]) != V(0))) continue;
                       int64_t* r = o + row * rs;
                       for (int d = 0; d < last; ++d) r[d * cs] = idx[d];
                       if (last >= 0) r[last * cs] = idx[last] + j;
                       ++row;
                     }
                   });
        }
      });
      return refkSuccess;
    });
  });
}

refkStatus refkMaskedScatter(const refkContext* ctx, const refkTensor* out, const refkTensor* mask,
                             const refkTensor* source) {
  return guarded("masked_scatter", [&] {
    if (auto s = check_shapes("masked_scatter", {out, mask})) return s;
    if (mask->dtype != refkBool || source->dtype != out->dtype) {
      return fail(refkErrorInvalidValue, "masked_scatter: bad operands");
    }
    const int64_t total = numel(*out);
    const Chunks ch(total, ctx->num_threads);
    if (ch.count == 0) return refkSuccess;
    const Access access({out, mask, source});
    const refkTensor* ts[2] = {out, mask};
    const bool* m = static_cast<const bool*>(mask->data);
    std::vector<int64_t> first(static_cast<size_t>(ch.count) + 1, 0);
    parallel_for(ch.count, 1, ctx->num_threads, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t found = 0;
        for_runs(ts, c * ch.size, std::min(total, (c + 1) * ch.size),
                 [&](const int64_t* off, const int64_t*, int64_t len, const int64_t* inner) {
                   const bool* p = m + off[1];
                   if (inner[1] == 0) {
                     found += p[0] ? len : 0;
                   } else {
                     for (int64_t j = 0; j < len; ++j) found += p[j * inner[1]];
                   }
                 });
        first[static_cast<size_t>(c) + 1] = found;
      }
    });
    std::partial_sum(first.begin(), first.end(), first.begin());
    if (first.back() > numel(*source)) {
      return fail(refkErrorInvalidValue, "Number of elements of source < number of ones in mask");
    }
    const bool source_contiguous = [&] {
      int64_t expect = 1;
      for (int d = source->ndim - 1; d >= 0; --d) {
        if (source->sizes[d] != 1 && source->strides[d] != expect) return false;
        expect *= source->sizes[d];
      }
      return true;
    }();
    return dispatch_bytes(out->dtype, [&](auto tag) {
      using E = typename decltype(tag)::type;
      E* o = static_cast<E*>(out->data);
      const E* src = static_cast<const E*>(source->data);
      parallel_for(ch.count, 1, ctx->num_threads, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          int64_t k = first[static_cast<size_t>(c)];
          for_runs(ts, c * ch.size, std::min(total, (c + 1) * ch.size),
                   [&](const int64_t* off, const int64_t*, int64_t len, const int64_t* inner) {
                     E* q = o + off[0];
                     const bool* p = m + off[1];
                     for (int64_t j = 0; j < len; ++j) {
                       if (!p[j * inner[1]]) continue;
                       q[j * inner[0]] = src[source_contiguous ? k : offset_in(*source, k)];
                       ++k;
                     }
                   });
        }
      });
      return refkSuccess;
    });
  });
}

}  // extern "C"
