/**
 * Note [Loop plans] (backends/ref/csrc/kernels/common/Loop.h): the CPU
 * library's Loop (cpu/Common.h), its indexing Plan (cpu/Indexing.h) and the
 * CUDA library's offset calculator (cuda/Common.cuh plan()) plan the same
 * operands the same way. They were three copies, and disagreed on a single
 * element (a 0-d operand, or only size-1 dims): the CPU ones gave it stride 0,
 * the CUDA one its item size. Now all wrap one planner, and a single element
 * is a dense run of one. A program prints each planner's dims and byte
 * strides for a few layouts: compiled by g++ for the CPU planners, and by
 * nvcc (its host pass runs the same text the launches use) with the CUDA one
 * too, where nvcc is present. No GPU is needed.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const CSRC = path.resolve(__dirname, "..", "..", "backends", "ref", "csrc");
const nvcc = path.join(process.env.CUDA_HOME ?? "/usr/local/cuda", "bin", "nvcc");

const PROGRAM = String.raw`
#include "kernels/cpu/Common.h"
#include "kernels/cpu/Indexing.h"
#if defined(__CUDACC__)
#include "kernels/cuda/Common.cuh"
#endif
#include <cstdio>
#include <initializer_list>

static refkTensor desc(refkDtype dt, std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides) {
  refkTensor t{};
  t.dtype = dt;
  t.ndim = static_cast<int32_t>(sizes.size());
  int d = 0;
  for (int64_t s : sizes) t.sizes[d++] = s;
  d = 0;
  for (int64_t s : strides) t.strides[d++] = s;
  return t;
}

// One line: the planner's dims, then each operand's byte strides.
template <class P>
static void show(const char* label, const char* who, const P& p, int nops) {
  std::printf("%s %s: numel %lld sizes", label, who, static_cast<long long>(p.numel));
  for (int d = 0; d < p.ndim; ++d) std::printf(" %lld", static_cast<long long>(p.sizes[d]));
  for (int k = 0; k < nops; ++k) {
    std::printf(" |");
    for (int d = 0; d < p.ndim; ++d) std::printf(" %lld", static_cast<long long>(p.strides[k][d]));
  }
  std::printf("\n");
}

static void plan_all(const char* label, const refkTensor& out, const refkTensor& in) {
  const refkTensor* ops[2] = {&out, &in};
  show(label, "cpu-loop", refk::Loop<2>(ops), 2);
  show(label, "cpu-index", refk::Plan(ops, 2), 2);
#if defined(__CUDACC__)
  show(label, "cuda", refkc::plan(ops), 2);
#endif
}

int main() {
  plan_all("zero-dim", desc(refkFloat32, {}, {}), desc(refkFloat64, {}, {}));
  plan_all("ones", desc(refkFloat32, {1, 1}, {1, 1}), desc(refkInt16, {1, 1}, {5, 7}));
  plan_all("dense", desc(refkFloat32, {2, 3}, {3, 1}), desc(refkFloat64, {2, 3}, {3, 1}));
  plan_all("broadcast", desc(refkFloat32, {2, 3}, {3, 1}), desc(refkFloat64, {2, 3}, {0, 1}));
  plan_all("transposed", desc(refkFloat32, {3, 2}, {1, 3}), desc(refkFloat32, {3, 2}, {2, 1}));
  plan_all("empty", desc(refkFloat32, {0, 4}, {4, 1}), desc(refkFloat32, {0, 4}, {4, 1}));
  return 0;
}
`;

/** label -> planner -> its line's plan. */
function plans(out: string): Map<string, Map<string, string>> {
  const m = new Map<string, Map<string, string>>();
  for (const line of out.trim().split("\n")) {
    const hit = /^(\S+) (\S+): (.*)$/.exec(line);
    if (!hit) continue;
    const [, label, who, plan] = hit as unknown as [string, string, string, string];
    if (!m.has(label)) m.set(label, new Map());
    m.get(label)!.set(who, plan);
  }
  return m;
}

// What every planner must give (float32 = 4 bytes, float64 = 8, int16 = 2).
const WANT: Record<string, string> = {
  "zero-dim": "numel 1 sizes 1 | 4 | 8",
  ones: "numel 1 sizes 1 | 4 | 2",
  dense: "numel 6 sizes 6 | 4 | 8",
  broadcast: "numel 6 sizes 2 3 | 12 4 | 0 8",
  transposed: "numel 6 sizes 2 3 | 12 4 | 4 8",
  empty: "numel 0 sizes 0 | 4 | 4",
};

async function run(compiler: string, file: string, args: string[]): Promise<Map<string, Map<string, string>>> {
  const dir = mkdtempSync(path.join(tmpdir(), "opgen-loop-plan-"));
  writeFileSync(path.join(dir, file), PROGRAM);
  const exe = path.join(dir, "plans");
  const build = await execa(compiler, [...args, "-I", CSRC, path.join(dir, file), "-o", exe], {
    reject: false,
    all: true,
  });
  expect(build.exitCode, build.all).toBe(0);
  const r = await execa(exe, [], { reject: false, all: true });
  expect(r.exitCode, r.all).toBe(0);
  return plans(r.stdout);
}

describe("the loop planner (Note [Loop plans])", () => {
  it("plans alike in the CPU library's Loop and indexing Plan, a single element as a dense run", async () => {
    const got = await run("g++", "plans.cpp", ["-std=c++20", "-O1", "-Wall", "-Wextra", "-Werror"]);
    for (const [label, want] of Object.entries(WANT)) {
      expect(got.get(label)?.get("cpu-loop"), label).toBe(want);
      expect(got.get(label)?.get("cpu-index"), label).toBe(want);
    }
  }, 300_000);

  it.skipIf(!existsSync(nvcc))(
    "plans alike in the CUDA library's launches (nvcc's host pass)",
    async () => {
      const got = await run(nvcc, "plans.cu", ["-std=c++20", "-O1", "--expt-relaxed-constexpr"]);
      for (const [label, want] of Object.entries(WANT)) {
        expect(got.get(label)?.get("cuda"), label).toBe(want);
        expect(got.get(label)?.get("cpu-loop"), label).toBe(want);
      }
    },
    600_000,
  );
});
