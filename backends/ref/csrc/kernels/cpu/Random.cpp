// Random fills of the CPU reference library: threads over element ranges;
// the generator (Philox-4x32-10), its counter layout and each element's
// value are common/Philox.h's, shared with the CUDA library.
//
// Note [Random permutations by sorting keys]: randperm must come out the same
// on any device from (seed, offset) alone, so it cannot be a sequential
// Fisher-Yates over a host generator. Element i gets a 64-bit key from
// Philox (two words, counter offset + i / 2), and the permutation is the
// indices in the order of (key, i): a sort a GPU does as well (a radix sort
// of key/index pairs, as CUDA's own randperm does for large n), and ties --
// two equal 64-bit keys, about n^2 / 2^65 likely -- are broken by index, so
// the result is still a function of (seed, offset, n). Every permutation is
// equally likely up to those ties.
#include "kernels/common/Philox.h"
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

template <class T>
void fill_random(int threads, refkDistribution dist, const refkTensor& out, uint64_t seed, uint64_t offset, double a,
                 double b) {
  const int64_t n = numel(out);
  char* base = static_cast<char*>(out.data);
  parallel_for(n, kGrain, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const double v = random_value<T>(dist, seed, offset, i, a, b);
      const int64_t off = offset_in(out, i);
      *reinterpret_cast<T*>(base + off * static_cast<int64_t>(sizeof(T))) = store<T>(v);
    }
  });
}

// Calls f(i, offsets) for the row-major elements [begin, end) of N tensors of
// one shape, where offsets[k] is element i's offset (in elements) in tensor
// k: one division per dim per chunk, then increments.
template <int N, class F>
void walk(const refkTensor* const (&ts)[N], int64_t begin, int64_t end, F&& f) {
  const refkTensor& shape = *ts[0];
  const int nd = shape.ndim;
  int64_t idx[REFK_MAX_DIMS];
  int64_t off[N] = {};
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape.sizes[d];
    rem /= shape.sizes[d];
    for (int k = 0; k < N; ++k) off[k] += idx[d] * ts[k]->strides[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(i, off);
    for (int d = nd - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) off[k] += ts[k]->strides[d];
      if (++idx[d] < shape.sizes[d]) break;
      for (int k = 0; k < N; ++k) off[k] -= ts[k]->strides[d] * shape.sizes[d];
      idx[d] = 0;
    }
  }
}

template <class T>
void dropout_typed(int threads, const refkTensor& out, const refkTensor& mask, const refkTensor& in, double keep,
                   double scale, uint64_t seed, uint64_t offset) {
  using V = opmath_t<T>;
  const V s = static_cast<V>(scale);
  T* o = static_cast<T*>(out.data);
  bool* m = static_cast<bool*>(mask.data);
  const T* x = static_cast<const T*>(in.data);
  const refkTensor* ts[3] = {&out, &mask, &in};
  parallel_for(numel(out), kGrain, threads, [&](int64_t i0, int64_t i1) {
    uint64_t counter = ~uint64_t{0};
    Philox r(seed, offset);
    walk<3>(ts, i0, i1, [&](int64_t i, const int64_t* off) {
      const uint64_t c = offset + static_cast<uint64_t>(i / 4);
      if (c != counter) r = Philox(seed, counter = c);
      const bool kept = dropout_kept(r, i, keep);
      m[off[1]] = kept;
      o[off[0]] = store<T>(load(x[off[2]]) * V(kept) * s);
    });
  });
}

template <class T>
void randperm_typed(int threads, const refkTensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.sizes[0];
  struct Keyed {
    uint64_t key;
    int64_t index;
  };
  std::vector<Keyed> keyed(static_cast<size_t>(n));
  parallel_for((n + 1) / 2, kGrain, threads, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const Philox r(seed, offset + static_cast<uint64_t>(c));
      for (int64_t j = 0; j < 2 && 2 * c + j < n; ++j) {
        keyed[static_cast<size_t>(2 * c + j)] = {randperm_key(r, 2 * c + j), 2 * c + j};
      }
    }
  });
  std::sort(keyed.begin(), keyed.end(),
            [](const Keyed& a, const Keyed& b) { return a.key != b.key ? a.key < b.key : a.index < b.index; });
  T* o = static_cast<T*>(out.data);
  const int64_t stride = out.strides[0];
  parallel_for(n, kGrain, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) o[i * stride] = store<T>(keyed[static_cast<size_t>(i)].index);
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkRandom(const refkContext* ctx, refkDistribution dist, const refkTensor* out, uint64_t seed,
                                 uint64_t offset, double a, double b) {
  return guarded("random", [&] {
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out});
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        if (dist != refkBernoulli) return unsupported("random", out->dtype);
      }
      fill_random<T>(ctx->num_threads, dist, *out, seed, offset, a, b);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkRandperm(const refkContext* ctx, const refkTensor* out, uint64_t seed, uint64_t offset) {
  return guarded("randperm", [&] {
    if (out->ndim != 1) return fail(refkErrorInvalidValue, "randperm: out must be 1-d");
    if (out->sizes[0] == 0) return refkSuccess;
    const Access access({out});
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("randperm", out->dtype);
      } else {
        randperm_typed<T>(ctx->num_threads, *out, seed, offset);
        return refkSuccess;
      }
    });
  });
}

extern "C" refkStatus refkDropout(const refkContext* ctx, const refkTensor* out, const refkTensor* mask,
                                  const refkTensor* in, double keep, double scale, uint64_t seed, uint64_t offset) {
  return guarded("dropout", [&] {
    if (auto s = check_shapes("dropout", {out, mask, in})) return s;
    if (const char* e = check::dropout(*out, *mask, *in)) return fail(refkErrorInvalidValue, e);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, mask, in});
    return dispatch(out->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        return unsupported("dropout", out->dtype);
      } else {
        dropout_typed<T>(ctx->num_threads, *out, *mask, *in, keep, scale, seed, offset);
        return refkSuccess;
      }
    });
  });
}
