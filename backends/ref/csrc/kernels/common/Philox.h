// Philox-4x32-10 and the random fills' per-element rules, written once for
// every device (Note [One definition per semantics] in Dtypes.h). Philox is
// a counter-based generator: element i's numbers depend only on (seed,
// offset, i), so host threads or GPU threads fill any range in any order
// and get the same tensor (Note [Philox offsets] in runtime/Generator.h).
//
// The counter layout: element i (row-major) of a uniform or Bernoulli fill
// and of a dropout mask reads word i % 4 of counter offset + i / 4; of a
// normal fill (Box-Muller) words 2 * (i % 2) and 2 * (i % 2) + 1 of counter
// offset + i / 2. Uniform and Bernoulli fills and dropout masks therefore
// agree between devices bit for bit; normal fills go through log/cos/sqrt in
// double, whose last bits may differ between libms before rounding to the
// output dtype.
#pragma once

#include "kernels/common/Dtypes.h"

namespace refk {

struct Philox {
  uint32_t w[4];
  REFK_HOST_DEVICE Philox(uint64_t seed, uint64_t counter) {
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

// [0, 1) from 32 random bits.
REFK_HOST_DEVICE inline double unit(uint32_t x) { return static_cast<double>(x) * 0x1.0p-32; }

// Element i of a refkRandom fill of storage type T, before the store:
// normal(mean a, std b), Bernoulli(p = a) or uniform [a, b).
template <class T>
REFK_HOST_DEVICE inline double random_value(refkDistribution dist, uint64_t seed, uint64_t offset, int64_t i,
                                            double a, double b) {
  if (dist == refkNormal) {
    const Philox r(seed, offset + static_cast<uint64_t>(i / 2));
    const int j = static_cast<int>(i % 2) * 2;
    const double u1 = (static_cast<double>(r.w[j]) + 1.0) * 0x1.0p-32;  // (0, 1]
    const double u2 = unit(r.w[j + 1]);
    return a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  const Philox r(seed, offset + static_cast<uint64_t>(i / 4));
  const double u = unit(r.w[i % 4]);
  if (dist == refkBernoulli) return u < a ? 1.0 : 0.0;
  double v = a + (b - a) * u;
  // Rounding to T may land on b; the interval is half-open.
  if constexpr (is_floating_v<T>) {
    if (static_cast<double>(load(store<T>(v))) >= b && b > a) v = a;
  }
  return v;
}

// Whether dropout keeps element i, from word i % 4 of Philox block `r`
// (the one of counter offset + i / 4).
REFK_HOST_DEVICE inline bool dropout_kept(const Philox& r, int64_t i, double keep) { return unit(r.w[i % 4]) < keep; }

// The 64-bit sort key of randperm's element i (Note [Random permutations by
// sorting keys] in kernels/cpu/Random.cpp), from Philox block `r` of counter
// offset + i / 2.
REFK_HOST_DEVICE inline uint64_t randperm_key(const Philox& r, int64_t i) {
  const int j = static_cast<int>(i % 2);
  return (uint64_t{r.w[2 * j]} << 32) | r.w[2 * j + 1];
}

}  // namespace refk
