// scatter (src, value, add, reduce.two) of the CPU reference library.
// Writes by index keep a fixed order per destination element, so duplicates
// combine the same way every run: scatter threads over the columns of index
// (its dims other than `dim`), never along `dim`. How values combine is
// common/Scatter.h's (shared with the CUDA library).
#include "kernels/common/Complex.h"
#include "kernels/common/Scatter.h"
#include "kernels/cpu/Indexing.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace refk {
namespace {

using scatter::identity;

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
  const A fixed = scatter::value_of<A>(sc.value);
  // The i-th element along `dim` of one column.
  auto one = [&](char* const* p, int64_t i, int64_t pos) {
    const int64_t v = *reinterpret_cast<const I*>(p[0] + i * is);
    if (v < 0 || v >= bound) {
      err.report(pos, v, dim, bound);
      return false;
    }
    A& t = *reinterpret_cast<A*>(p[1] + v * ts);
    const A x = src != nullptr ? widen<A>(*reinterpret_cast<const S*>(p[2] + i * ss)) : fixed;
    t = scatter::step<R>(t, x);
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
    target = contiguous_like(wide.data(), refkFloat32, self);
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
    counts_desc = contiguous_like(counts.data(), refkInt64, self);
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
          T& t = static_cast<T*>(self.data)[offset_in(self, i)];
          t = scatter::mean_of<T, A>(t, received, sc.include_self);
        }
      });
    }
  }
  return refkSuccess;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkScatter(const refkContext* ctx, const refkTensor* self, int32_t dim, const refkTensor* index,
                       const refkTensor* src, refkScalar value, refkScatterReduce reduce, int32_t include_self) {
  return guarded("scatter", [&] {
    const bool has_src = src != nullptr && src->data != nullptr;
    if (const char* e = check::scatter(*self, dim, *index, has_src ? src : nullptr)) {
      return fail(refkErrorInvalidValue, e);
    }
    if (numel(*index) == 0) return refkSuccess;
    if (reduce == refkScatterMean && self->dtype == refkBool) return unsupported("scatter mean", self->dtype);
    const Access access({self, index, has_src ? src : nullptr});
    const Scatter sc{dim, reduce, include_self != 0, value};
    if (is_complex(self->dtype)) {
      // Note [Complex dtypes]: assignment (a real value as (value, 0)) and
      // scatter_add; the other reductions order or multiply, refused.
      if (reduce != refkScatterAssign && !(reduce == refkScatterAdd && include_self != 0)) {
        return unsupported("scatter", self->dtype);
      }
      return dispatch_complex(self->dtype, [&](auto tag) {
        using Z = typename decltype(tag)::type;
        return dispatch_index(index->dtype, [&](auto itag) {
          using I = typename decltype(itag)::type;
          IndexError err;
          const refkTensor* s = has_src ? src : nullptr;
          if (reduce == refkScatterAssign) {
            scatter_pass<Z, Z, I, refkScatterAssign>(ctx->num_threads, *self, *index, s, sc, nullptr, nullptr, err);
          } else {
            scatter_pass<Z, Z, I, refkScatterAdd>(ctx->num_threads, *self, *index, s, sc, nullptr, nullptr, err);
          }
          return err.status();
        });
      });
    }
    return dispatch(self->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_index(index->dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        return scatter_typed<T, I>(ctx, *self, *index, has_src ? src : nullptr, sc);
      });
    });
  });
}

}  // extern "C"
