// Indexing kernels of the CPU reference library: gather, index_select and
// advanced indexing (reads by index), index_put, nonzero and masked_scatter.
// Scatter is in Scatter.cpp, sort and topk in Sort.cpp.
//
// Reads by index share one engine: out[p] = in[p + sum_k v_k(p) * stride_k]
// over coalesced, threaded rows (Indexing.h's planner), where a row whose
// indices do not move, as index_select's along an outer dim, is one
// contiguous copy. Accumulating index_put runs in order on one thread, so
// duplicates add up the same way every run.
#include "kernels/common/Scatter.h"
#include "kernels/cpu/Indexing.h"

#include <atomic>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace refk {
namespace {

// ---- reads by index -----------------------------------------------------------

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

// index and index_put's operands: `lead` (out, or the values written), the
// tensor indexed, then the index tensors, all of lead's shape (the glue
// restrides them so) and the two data operands of one dtype.
refkStatus index_operands(const char* op, const refkTensor* lead, const refkTensor* data, int32_t nindices,
                          const refkTensor* indices, std::vector<const refkTensor*>& ops) {
  if (nindices < 1 || nindices > REFK_MAX_DIMS || lead->dtype != data->dtype) {
    return fail(refkErrorInvalidValue, std::string(op) + ": bad operands");
  }
  if (auto s = check_indices(op, nindices, indices)) return s;
  ops = {lead, data};
  for (int k = 0; k < nindices; ++k) ops.push_back(&indices[k]);
  for (const refkTensor* t : ops) {
    if (!same_shape(*t, *lead)) return fail(refkErrorInvalidValue, std::string(op) + ": operands must have one shape");
  }
  return refkSuccess;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index) {
  return guarded("gather", [&] {
    if (const char* e = check::gather(*out, *in, dim, *index)) return fail(refkErrorInvalidValue, e);
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
    if (const char* e = check::index_select(*out, *in, dim, *index)) return fail(refkErrorInvalidValue, e);
    const int64_t n = numel(*index);
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
    std::vector<const refkTensor*> ops;
    if (auto s = index_operands("index", out, in, nindices, indices, ops)) return s;
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
    std::vector<const refkTensor*> ops;
    if (auto s = index_operands("index_put", values, self, nindices, indices, ops)) return s;
    if (numel(*values) == 0) return refkSuccess;
    const AccessAll access(ops);
    // Row-major order over values' shape (a contiguous phantom operand
    // leads the planner): where indices repeat, the last one wins, as in
    // ATen's loop.
    const refkTensor order = contiguous_like(nullptr, values->dtype, *values);
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
              t = scatter::accumulate(t, x);
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
