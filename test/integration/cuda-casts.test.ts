/**
 * Floating-to-integer casts of the CUDA kernel library agree with the CPU
 * library's (common/Dtypes.h's float_to_integral): code nvcc compiles spells
 * out x86's conversion (NaN and values outside int32's range become
 * INT32_MIN, narrower types keep its low bits; int64 through INT64_MIN,
 * uint32 its low bits, uint64 x86-64's unsigned conversion),
 * where the CPU library's static_cast is that conversion. Without a GPU the
 * device pass cannot run, but nvcc's host pass compiles the same
 * __host__ __device__ text: a program built by nvcc compares refk::store
 * with the host compiler's own static_cast over a spread of bit patterns
 * (NaN, infinities, out-of-range and in-range values). Skipped where nvcc
 * is missing.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const CSRC = path.resolve(__dirname, "..", "..", "backends", "ref", "csrc");
const nvcc = path.join(process.env.CUDA_HOME ?? "/usr/local/cuda", "bin", "nvcc");

const PROGRAM = String.raw`
#include "kernels/common/Dtypes.h"
#include <cstdio>
#include <cstring>
// The host compiler's conversion, kept out of constant folding.
template <class T, class C> __attribute__((noinline)) T host_cast(C v) { return static_cast<T>(v); }
template <class T, class C> int run(const char* name) {
  int bad = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 65521) {
    C v;
    if constexpr (sizeof(C) == 4) { const uint32_t w = static_cast<uint32_t>(b); std::memcpy(&v, &w, 4); }
    else { const uint64_t w = (b << 32) | (b * 2654435761u); std::memcpy(&v, &w, 8); }
    const T got = refk::store<T>(v), want = host_cast<T>(v);
    if (got != want && bad++ < 3) std::printf("%s %g: %lld, want %lld\n", name, static_cast<double>(v),
                                              static_cast<long long>(got), static_cast<long long>(want));
  }
  return bad;
}
int main() {
  const int bad = run<int32_t, float>("float->int32") + run<int16_t, float>("float->int16") +
                  run<int8_t, float>("float->int8") + run<uint8_t, float>("float->uint8") +
                  run<int64_t, float>("float->int64") + run<int32_t, double>("double->int32") +
                  run<int16_t, double>("double->int16") + run<int64_t, double>("double->int64") +
                  run<uint16_t, float>("float->uint16") + run<uint32_t, float>("float->uint32") +
                  run<uint64_t, float>("float->uint64") + run<uint32_t, double>("double->uint32") +
                  run<uint64_t, double>("double->uint64");
  std::printf("%d differ\n", bad);
  return bad != 0;
}
`;

describe.skipIf(!existsSync(nvcc))("the CUDA library's float-to-integer casts", () => {
  it("agree with the CPU library's (x86's truncating conversion), compiled by nvcc", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "opgen-cuda-casts-"));
    writeFileSync(path.join(dir, "casts.cu"), PROGRAM);
    const exe = path.join(dir, "casts");
    const build = await execa(
      nvcc,
      ["-std=c++20", "-O2", "--expt-relaxed-constexpr", "-I", CSRC, path.join(dir, "casts.cu"), "-o", exe],
      { reject: false, all: true },
    );
    expect(build.exitCode, build.all).toBe(0);
    const r = await execa(exe, [], { reject: false, all: true });
    expect(r.all).toContain("0 differ");
    expect(r.exitCode, r.all).toBe(0);
  }, 300_000);
});
