/**
 * The kernel library's float8 conversions (common/Dtypes.h, Note [Float8
 * formats]) give c10's bits: a program built against the installed torch's
 * header-only c10::Float8_* types compares every one of the 256 values of
 * each format converted to float, and a spread of float bit patterns (every
 * 251st, NaN, infinities, subnormals and each rounding boundary among them)
 * converted to each format, with refk's. The library itself includes no
 * torch header; only this test program does. Run by hand with step 1 (all
 * 2^32 floats) when the conversions change: 0 differ.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";

const CSRC = path.resolve(__dirname, "..", "..", "backends", "ref", "csrc");

const PROGRAM = String.raw`
#include "kernels/common/Dtypes.h"
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e4m3fnuz.h>
#include <c10/util/Float8_e5m2.h>
#include <c10/util/Float8_e5m2fnuz.h>
#include <c10/util/Float8_e8m0fnu.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
template <class R, class C> long check(const char* name, uint64_t step) {
  long bad = 0;
  for (uint32_t v = 0; v < 256; ++v) {
    const float a = R::to_float(static_cast<uint8_t>(v));
    const float b = static_cast<float>(C(static_cast<uint8_t>(v), C::from_bits()));
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    if (x != y && bad++ < 5) std::printf("%s to_float %02x: %08x, want %08x\n", name, v, x, y);
  }
  for (uint64_t w = 0; w < (1ull << 32); w += step) {
    const uint32_t w32 = static_cast<uint32_t>(w);
    float f;
    std::memcpy(&f, &w32, 4);
    const uint8_t got = R::from_float(f), want = C(f).x;
    if (got != want && bad++ < 10) std::printf("%s from_float %08x (%g): %02x, want %02x\n", name, w32, f, got, want);
  }
  return bad;
}
int main(int argc, char** argv) {
  const uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const long bad = check<refk::Float8E4M3FN, c10::Float8_e4m3fn>("e4m3fn", step) +
                   check<refk::Float8E5M2, c10::Float8_e5m2>("e5m2", step) +
                   check<refk::Float8E4M3FNUZ, c10::Float8_e4m3fnuz>("e4m3fnuz", step) +
                   check<refk::Float8E5M2FNUZ, c10::Float8_e5m2fnuz>("e5m2fnuz", step) +
                   check<refk::Float8E8M0FNU, c10::Float8_e8m0fnu>("e8m0fnu", step);
  std::printf("%ld differ\n", bad);
  return bad != 0;
}
`;

let torch: TorchInstall;
beforeAll(async () => {
  torch = await discoverTorch(process.env.OPGEN_PYTHON);
}, 120_000);

describe("the kernel library's float8 conversions", () => {
  it("give c10's bits for every format, both ways", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "opgen-float8-"));
    writeFileSync(path.join(dir, "float8.cpp"), PROGRAM);
    const exe = path.join(dir, "float8");
    const includes = [CSRC, ...torch.includeDirs].flatMap((d) => ["-I", d]);
    const build = await execa(
      "g++",
      ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror", ...includes, path.join(dir, "float8.cpp"), "-o", exe],
      { reject: false, all: true },
    );
    expect(build.exitCode, build.all).toBe(0);
    const r = await execa(exe, ["251"], { reject: false, all: true });
    expect(r.all).toContain("0 differ");
    expect(r.exitCode, r.all).toBe(0);
  }, 300_000);
});
