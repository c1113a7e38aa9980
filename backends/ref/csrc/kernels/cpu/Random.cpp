// Random fills of the CPU reference library from Philox-4x32-10, a
// counter-based generator: element i's numbers depend only on (seed,
// offset, i), so threads here, or GPU threads, fill any range in any order
// and get the same tensor (Note [Philox offsets] in runtime/Generator.h).
// Uniform elements use one 32-bit word each (four per counter); normal
// elements use two (Box-Muller), so they take two counters per four elements.
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

struct Philox {
  uint32_t w[4];
  Philox(uint64_t seed, uint64_t counter) {
    uint32_t c[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0};
    uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
      const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0];
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1];
      c[0] = n0;
      c[1] = static_cast<uint32_t>(p1);
      c[2] = n2;
      c[3] = static_cast<uint32_t>(p0);
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; ++i) w[i] = c[i];
  }
};

// [0, 1) from 32 random bits, with 24 (float) or 32 bits of resolution.
inline double unit(uint32_t x) { return static_cast<double>(x) * 0x1.0p-32; }

template <class T>
void fill_random(int threads, refkDistribution dist, const refkTensor& out, uint64_t seed, uint64_t offset, double a,
                 double b) {
  const int64_t n = numel(out);
  char* base = static_cast<char*>(out.data);
  parallel_for(n, kGrain, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      double v;
      if (dist == refkNormal) {
        const Philox r(seed, offset + static_cast<uint64_t>(i / 2));
        const int j = static_cast<int>(i % 2) * 2;
        const double u1 = (static_cast<double>(r.w[j]) + 1.0) * 0x1.0p-32;  // (0, 1]
        const double u2 = unit(r.w[j + 1]);
        v = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      } else {
        const Philox r(seed, offset + static_cast<uint64_t>(i / 4));
        const double u = unit(r.w[i % 4]);
        if (dist == refkBernoulli) {
          v = u < a ? 1.0 : 0.0;
        } else {
          v = a + (b - a) * u;
          // Rounding to T may land on b; the interval is half-open.
          if constexpr (is_floating_v<T>) {
            if (static_cast<double>(load(store<T>(v))) >= b && b > a) v = a;
          }
        }
      }
      const int64_t off = offset_in(out, i);
      *reinterpret_cast<T*>(base + off * static_cast<int64_t>(sizeof(T))) = store<T>(v);
    }
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
