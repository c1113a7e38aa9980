// Matrix multiply of the CPU reference library: C = beta*C + alpha*A@B,
// batched over a leading dim, any strides, every dtype but bool.
//
// Note [Blocked GEMM]: the GotoBLAS/BLIS structure, in portable C++.
// - C is cut into column blocks of NC and runs of row blocks of MC (per
//   batch entry); threads take these tasks, and a task packs each block of
//   B once for all its rows.
// - A task walks K in blocks of KC. Each block packs its A rows into panels
//   of MR rows ([k][MR], zero-padded) and its B columns into panels of NR
//   columns ([k][NR], zero-padded), converting to the compute type (float
//   for float16/bfloat16, as ATen's opmath) on the way, so transposes and
//   any strides cost only the packing.
// - The micro-kernel keeps an MR x NR tile of C in registers: per k, NR/W
//   vector loads of B, MR broadcasts of A, MR*NR/W multiply-adds. It is
//   written with GCC/Clang vector types (no intrinsics), and compiled once per
//   x86 vector width (AVX-512, AVX2+FMA, baseline) with the tile that fits
//   that width's registers; the widest the host supports is picked at run
//   time, so the build needs no -march flag.
// - Tiles accumulate into a task-local buffer in the compute type over all
//   of K, then C = beta*C + alpha*acc rounds once into C's dtype. When C has
//   fewer tiles than threads, K is split as well and the slices' sums are
//   added in slice order. beta == 0 never reads C (NaN in C does not
//   propagate, as BLAS); alpha == 0 never reads A or B either (the CPU
//   library's choice, as MKL's: the product is then exactly zero).
// Integers compute in the unsigned type of their width, so sums wrap as
// ATen's integer mm does, without signed-overflow UB.
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

template <class T, bool = is_integral_v<T>>
struct GemmType {
  using type = opmath_t<T>;
};
template <class T>
struct GemmType<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using gemm_t = typename GemmType<T>::type;

// One micro-kernel: ct[i][j] (+)= sum_k ap[k][i] * bp[k][j] over an MR x NR
// tile, NR = NV vectors of W lanes; ct rows are ldc apart.
template <class V, int MR, int NV, int W>
inline __attribute__((always_inline)) void micro_tile(int64_t kc, const V* __restrict ap, const V* __restrict bp,
                                                      V* __restrict ct, int64_t ldc, bool accumulate) {
  typedef V vec __attribute__((vector_size(sizeof(V) * W)));
  constexpr int NR = NV * W;
  vec acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 32
    for (int v = 0; v < NV; ++v) acc[i][v] = vec{};
  }
  for (int64_t k = 0; k < kc; ++k) {
    vec b[NV];
#pragma GCC unroll 32
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], bp + k * NR + v * W, sizeof(vec));
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const vec a = ap[k * MR + i] - vec{};  // one broadcast: x - 0 is x exactly
#pragma GCC unroll 32
      for (int v = 0; v < NV; ++v) acc[i][v] += a * b[v];
    }
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 32
    for (int v = 0; v < NV; ++v) {
      vec c = acc[i][v];
      if (accumulate) {
        vec prior;
        std::memcpy(&prior, ct + i * ldc + v * W, sizeof(vec));
        c += prior;
      }
      std::memcpy(ct + i * ldc + v * W, &c, sizeof(vec));
    }
  }
}

template <class V>
using MicroFn = void (*)(int64_t kc, const V* ap, const V* bp, V* ct, int64_t ldc, bool accumulate);

// A micro-kernel and the blocking that suits it.
template <class V>
struct Kernel {
  MicroFn<V> fn;
  int mr, nr;
  int64_t mc, nc, kc;
};

#define REFK_MICRO(NAME, ATTR, V, MR, NV, W) \
  ATTR void NAME(int64_t kc, const V* ap, const V* bp, V* ct, int64_t ldc, bool accumulate) { \
    micro_tile<V, MR, NV, W>(kc, ap, bp, ct, ldc, accumulate);                               \
  }

#define REFK_BASE
REFK_MICRO(micro_f32, REFK_BASE, float, 6, 2, 4)
REFK_MICRO(micro_f64, REFK_BASE, double, 6, 2, 2)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REFK_HAVE_X86_WIDE 1
#define REFK_AVX2 __attribute__((target("avx2,fma")))
#define REFK_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
REFK_MICRO(micro_f32_avx2, REFK_AVX2, float, 6, 2, 8)
REFK_MICRO(micro_f64_avx2, REFK_AVX2, double, 6, 2, 4)
REFK_MICRO(micro_f32_avx512, REFK_AVX512, float, 12, 2, 16)
REFK_MICRO(micro_f64_avx512, REFK_AVX512, double, 12, 2, 8)
#endif

enum class Isa { base, avx2, avx512 };

Isa host_isa() {
#ifdef REFK_HAVE_X86_WIDE
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
      return Isa::avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::base;
  }();
  return isa;
#else
  return Isa::base;
#endif
}

// Blocking: an A block (mc x kc) stays in L2, a B panel (kc x nr) in L1
// while the ir loop sweeps A's panels over it.
template <class V>
Kernel<V> kernel_for() {
  if constexpr (std::is_same_v<V, float>) {
#ifdef REFK_HAVE_X86_WIDE
    if (host_isa() == Isa::avx512) return {micro_f32_avx512, 12, 32, 240, 512, 256};
    if (host_isa() == Isa::avx2) return {micro_f32_avx2, 6, 16, 240, 512, 256};
#endif
    return {micro_f32, 6, 8, 240, 512, 256};
  } else if constexpr (std::is_same_v<V, double>) {
#ifdef REFK_HAVE_X86_WIDE
    if (host_isa() == Isa::avx512) return {micro_f64_avx512, 12, 16, 240, 256, 192};
    if (host_isa() == Isa::avx2) return {micro_f64_avx2, 6, 8, 240, 256, 192};
#endif
    return {micro_f64, 6, 4, 240, 256, 192};
  } else {
    // Integers (unsigned compute types): one 16-byte vector per row.
    constexpr int W = static_cast<int>(16 / sizeof(V));
    return {[](int64_t kc, const V* ap, const V* bp, V* ct, int64_t ldc, bool accumulate) {
              micro_tile<V, 4, 1, W>(kc, ap, bp, ct, ldc, accumulate);
            },
            4, W, 64, 256, 256};
  }
}

// rows x cols of a strided matrix (element (r, c) at p[r*rs + c*cs]) into
// panels of P rows: out[panel][c][r % P], zero rows past `rows`. The loop
// order follows the source's contiguous direction, so the source is read in
// long runs.
template <class V, class T>
void pack(V* out, const T* p, int64_t rs, int64_t cs, int64_t rows, int64_t cols, int P) {
  const int64_t panels = (rows + P - 1) / P;
  const int64_t tail = rows - (panels - 1) * P;  // rows in the last panel
  if (std::abs(rs) < std::abs(cs) || rows == 1) {
    // Contiguous along rows (row-major B): each source line fills every panel.
    for (int64_t c = 0; c < cols; ++c) {
      const T* src = p + c * cs;
      for (int64_t q = 0; q < panels; ++q) {
        V* dst = out + (q * cols + c) * P;
        const T* s = src + q * P * rs;
        const int64_t rn = q + 1 < panels ? P : tail;
        if (rs == 1) {
          for (int64_t r = 0; r < rn; ++r) dst[r] = static_cast<V>(load(s[r]));
        } else {
          for (int64_t r = 0; r < rn; ++r) dst[r] = static_cast<V>(load(s[r * rs]));
        }
        for (int64_t r = rn; r < P; ++r) dst[r] = V(0);
      }
    }
    return;
  }
  // Contiguous along cols (row-major A): one source row at a time.
  for (int64_t q = 0; q < panels; ++q) {
    V* o = out + q * cols * P;
    const int64_t rn = q + 1 < panels ? P : tail;
    for (int64_t r = 0; r < rn; ++r) {
      const T* src = p + (q * P + r) * rs;
      if (cs == 1) {
        for (int64_t c = 0; c < cols; ++c) o[c * P + r] = static_cast<V>(load(src[c]));
      } else {
        for (int64_t c = 0; c < cols; ++c) o[c * P + r] = static_cast<V>(load(src[c * cs]));
      }
    }
    for (int64_t r = rn; r < P; ++r) {
      for (int64_t c = 0; c < cols; ++c) o[c * P + r] = V(0);
    }
  }
}

// Per-thread scratch, kept between calls.
template <class V>
struct Scratch {
  std::vector<V> a, b, c;
};
template <class V>
Scratch<V>& scratch() {
  thread_local Scratch<V> s;
  return s;
}

template <class T>
void gemm_typed(int threads, const refkTensor& c, const refkTensor& a, const refkTensor& b, refkScalar alpha_s,
                refkScalar beta_s) {
  using V = gemm_t<T>;
  const bool batched = c.ndim == 3;
  const int off = batched ? 1 : 0;
  const int64_t batch = batched ? c.sizes[0] : 1;
  const int64_t M = c.sizes[off], N = c.sizes[off + 1], K = a.sizes[off + 1];
  const V alpha = is_floating_v<T> ? static_cast<V>(alpha_s.f) : static_cast<V>(alpha_s.i);
  const V beta = is_floating_v<T> ? static_cast<V>(beta_s.f) : static_cast<V>(beta_s.i);
  const T* A = static_cast<const T*>(a.data);
  const T* B = static_cast<const T*>(b.data);
  T* C = static_cast<T*>(c.data);
  const int64_t as0 = a.strides[off], as1 = a.strides[off + 1];
  const int64_t bs0 = b.strides[off], bs1 = b.strides[off + 1];
  const int64_t cs0 = c.strides[off], cs1 = c.strides[off + 1];
  const int64_t ab = batched ? a.strides[0] : 0, bb = batched ? b.strides[0] : 0, cb = batched ? c.strides[0] : 0;

  const Kernel<V> kr = kernel_for<V>();
  const int64_t mc = std::min<int64_t>(kr.mc, (M + kr.mr - 1) / kr.mr * kr.mr);
  const int64_t nc = std::min<int64_t>(kr.nc, (N + kr.nr - 1) / kr.nr * kr.nr);
  const int64_t mt = (M + mc - 1) / mc, nt = (N + nc - 1) / nc;
  // A task is one column block of C and a run of `gm` row blocks: it packs
  // each B block once for all of them. Runs are as long as keeping every
  // thread busy (a few tasks each) allows.
  const int64_t want = 3 * int64_t{std::max(threads, 1)};
  const int64_t groups = std::min<int64_t>(mt, std::max<int64_t>(1, (want + batch * nt - 1) / (batch * nt)));
  const int64_t gm = (mt + groups - 1) / groups;
  const int64_t gt = (mt + gm - 1) / gm;
  const bool compute = alpha != V(0) && K > 0;
  const int64_t tiles = batch * gt * nt;
  // Too few tiles for the threads (a long K, as a convolution's weight
  // gradient): K is split too, each slice sums into its own buffer, and the
  // slices are added in order, so the result does not depend on timing.
  int64_t slice = std::max<int64_t>(K, 1);
  if (compute && tiles < threads && K > 2 * kr.kc) {
    const int64_t want_slices = std::min<int64_t>((threads + tiles - 1) / tiles, (K + kr.kc - 1) / kr.kc);
    slice = ((K + want_slices - 1) / want_slices + kr.kc - 1) / kr.kc * kr.kc;
  }
  const int64_t slices = compute ? (K + slice - 1) / slice : 1;
  const int64_t tile_elems = gm * mc * nc;
  std::vector<V> partial(slices > 1 ? static_cast<size_t>(slices * tiles * tile_elems) : 0);

  // Sums A @ B over K in [kb, ke) for one tile into ct (rows x nc, row-major).
  const auto compute_tile = [&](Scratch<V>& s, int64_t t, int64_t kb, int64_t ke, V* ct) {
    const int64_t g = t % gt, jt = (t / gt) % nt, z = t / (gt * nt);
    const int64_t i0 = g * gm * mc, j0 = jt * nc;
    const int64_t rows = std::min(gm * mc, M - i0), n = std::min(nc, N - j0);
    const int64_t np = (n + kr.nr - 1) / kr.nr * kr.nr;
    if (!compute || kb >= ke) {
      std::fill(ct, ct + rows * nc, V(0));
      return;
    }
    for (int64_t k0 = kb; k0 < ke; k0 += kr.kc) {
      const int64_t kc = std::min(kr.kc, ke - k0);
      pack(s.b.data(), B + z * bb + j0 * bs1 + k0 * bs0, bs1, bs0, n, kc, kr.nr);
      for (int64_t ib = 0; ib < rows; ib += mc) {
        const int64_t m = std::min(mc, rows - ib);
        const int64_t mp = (m + kr.mr - 1) / kr.mr * kr.mr;
        pack(s.a.data(), A + z * ab + (i0 + ib) * as0 + k0 * as1, as0, as1, m, kc, kr.mr);
        for (int64_t jr = 0; jr < np; jr += kr.nr) {
          for (int64_t ir = 0; ir < mp; ir += kr.mr) {
            kr.fn(kc, s.a.data() + ir * kc, s.b.data() + jr * kc, ct + (ib + ir) * nc + jr, nc, k0 > kb);
          }
        }
      }
    }
  };
  // C = beta * C + alpha * (sum of the `count` buffers at ct, tile_elems apart) for one tile.
  const auto write_tile = [&](int64_t t, const V* ct, int64_t count) {
    const int64_t g = t % gt, jt = (t / gt) % nt, z = t / (gt * nt);
    const int64_t i0 = g * gm * mc, j0 = jt * nc;
    const int64_t rows = std::min(gm * mc, M - i0), n = std::min(nc, N - j0);
    T* Cz = C + z * cb + i0 * cs0 + j0 * cs1;
    // Copies in locals: C's stores cannot alias them, so the loops below keep
    // them in registers and the common case (one buffer, beta == 0, unit
    // column stride) vectorizes. The arithmetic is the same on every path.
    const V al = alpha, be = beta;
    const int64_t s1 = cs1, ld = nc, te = tile_elems;
    for (int64_t i = 0; i < rows; ++i) {
      T* __restrict Ci = Cz + i * cs0;
      const V* __restrict src = ct + i * ld;
      if (count == 1 && be == V(0)) {
        if (s1 == 1) {
          for (int64_t j = 0; j < n; ++j) Ci[j] = store<T>(static_cast<V>(al * src[j]));
        } else {
          for (int64_t j = 0; j < n; ++j) Ci[j * s1] = store<T>(static_cast<V>(al * src[j]));
        }
        continue;
      }
      for (int64_t j = 0; j < n; ++j) {
        V acc = src[j];
        for (int64_t q = 1; q < count; ++q) acc += src[q * te + j];
        Ci[j * s1] = be == V(0) ? store<T>(static_cast<V>(al * acc))
                                : store<T>(static_cast<V>(be * static_cast<V>(load(Ci[j * s1])) + al * acc));
      }
    }
  };
  const auto prepare = [&](Scratch<V>& s) {
    s.a.resize(static_cast<size_t>(mc * kr.kc));
    s.b.resize(static_cast<size_t>(nc * kr.kc));
    s.c.resize(static_cast<size_t>(tile_elems));
  };

  if (slices == 1) {
    const int64_t task_work = tile_elems * std::max<int64_t>(K, 1);
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / task_work);
    parallel_for(tiles, grain, threads, [&](int64_t t0, int64_t t1) {
      Scratch<V>& s = scratch<V>();
      prepare(s);
      for (int64_t t = t0; t < t1; ++t) {
        compute_tile(s, t, 0, K, s.c.data());
        write_tile(t, s.c.data(), 1);
      }
    });
    return;
  }
  // Slice-major buffers: tile t's slices lie tile_elems * tiles apart.
  parallel_for(slices * tiles, 1, threads, [&](int64_t u0, int64_t u1) {
    Scratch<V>& s = scratch<V>();
    prepare(s);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t t = u % tiles, q = u / tiles;
      compute_tile(s, t, q * slice, std::min(K, (q + 1) * slice), partial.data() + (q * tiles + t) * tile_elems);
    }
  });
  parallel_for(tiles, 1, threads, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      // write_tile steps tile_elems between slices: gather this tile's slices first.
      std::vector<V> sum(static_cast<size_t>(slices * tile_elems));
      for (int64_t q = 0; q < slices; ++q) {
        std::copy_n(partial.data() + (q * tiles + t) * tile_elems, tile_elems, sum.data() + q * tile_elems);
      }
      write_tile(t, sum.data(), slices);
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkGemm(const refkContext* ctx, const refkTensor* c, const refkTensor* a, const refkTensor* b,
                               refkScalar alpha, refkScalar beta) {
  return guarded("gemm", [&] {
    const bool ok = (c->ndim == 2 || c->ndim == 3) && a->ndim == c->ndim && b->ndim == c->ndim &&
                    a->dtype == c->dtype && b->dtype == c->dtype;
    if (!ok) return fail(refkErrorInvalidValue, "gemm: 2-d or 3-d operands of one dtype expected");
    if (numel(*c) == 0) return refkSuccess;
    const Access access({c, a, b});
    return dispatch(c->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("gemm", c->dtype);
      } else {
        gemm_typed<T>(ctx->num_threads, *c, *a, *b, alpha, beta);
        return refkSuccess;
      }
    });
  });
}
