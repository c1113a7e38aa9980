/**
 * backends/ref's lower layers are torch-free (Note [Descriptor conventions],
 * RefKernels.h; RefDriver.h): the kernel library and the driver compile with
 * g++ alone, warning-free, with no torch or Python include path, as a
 * vendor's SDK would. The ATen glue and the runtime are compiled (with torch)
 * and judged by the e2e tier (test/e2e/reference.test.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const CSRC = path.resolve(__dirname, "..", "..", "backends", "ref", "csrc");

function sources(dir: string): string[] {
  return readdirSync(path.join(CSRC, dir))
    .filter((f) => f.endsWith(".cpp"))
    .map((f) => path.join(dir, f));
}

describe("backends/ref torch-free layers", () => {
  it.each([
    ["kernels/cpu"],
    ["driver/cpu"],
  ])("%s compiles without torch headers, -Wall -Wextra -Werror", async (dir) => {
    for (const file of sources(dir)) {
      const r = await execa(
        "g++",
        ["-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", CSRC, path.join(CSRC, file)],
        { reject: false, all: true },
      );
      expect(r.exitCode, `${file}:\n${r.all}`).toBe(0);
    }
  }, 300_000);

  it("the ATen glue uses nothing of at::native or at::cpu (Note [What the glue decides])", () => {
    // ATen's kernels and their internal helpers live there; the glue writes
    // its checks, promotion and resizing itself.
    const used: string[] = [];
    for (const file of sources("aten")) {
      const text = readFileSync(path.join(CSRC, file), "utf8").replace(/\/\/.*$/gm, "");
      expect(text, file).not.toMatch(/\bat::cpu::/);
      for (const m of text.matchAll(/\bat::native::(\w+)/g)) used.push(`${file}: ${m[1]}`);
      for (const m of text.matchAll(/#include\s*<ATen\/native\/([\w/.]+)>/g))
        used.push(`${file}: <ATen/native/${m[1]}>`);
    }
    expect(used).toEqual([]);
  });
});
