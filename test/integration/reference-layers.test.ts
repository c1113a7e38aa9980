/**
 * backends/ref's lower layers are torch-free (Note [Descriptor conventions],
 * RefKernels.h; RefDriver.h): the kernel library and the driver compile with
 * g++ alone, warning-free, with no torch or Python include path, as a
 * vendor's SDK would; linked with nothing else, a C++ program that calls only
 * their C ABIs (test/fixtures/c/ref_layers.cpp) runs them: device memory,
 * kernels on it, zero-size operands, error statuses and their text, and
 * protected memory touched outside and inside an access window, under both
 * protection mechanisms. The ATen glue and the runtime are compiled (with
 * torch) and judged by the e2e tier (test/e2e/reference.test.ts).
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";

const CSRC = path.resolve(__dirname, "..", "..", "backends", "ref", "csrc");
const PROGRAM = path.resolve(__dirname, "..", "fixtures", "c", "ref_layers.cpp");
const FLAGS = ["-std=c++20", "-O0", "-Wall", "-Wextra", "-Werror", "-I", CSRC];

function sources(dir: string): string[] {
  return readdirSync(path.join(CSRC, dir))
    .filter((f) => f.endsWith(".cpp"))
    .map((f) => path.join(dir, f));
}

const work = mkdtempSync(path.join(tmpdir(), "opgen-ref-layers-"));
const compiled: { file: string; code: number | undefined; all: string }[] = [];

describe("backends/ref torch-free layers", () => {
  beforeAll(async () => {
    // Two at a time (the machine's cores); ccache where there is one.
    const cc = (await execa("ccache", ["--version"], { reject: false })).exitCode === 0 ? ["ccache", "g++"] : ["g++"];
    const queue = [...sources("kernels/cpu"), ...sources("driver/cpu")];
    const worker = async () => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        const obj = path.join(work, `${file.replace(/[/.]/g, "_")}.o`);
        const r = await execa(cc[0]!, [...cc.slice(1), ...FLAGS, "-fPIC", "-c", path.join(CSRC, file), "-o", obj], {
          reject: false,
          all: true,
        });
        compiled.push({ file, code: r.exitCode, all: String(r.all) });
      }
    };
    await Promise.all([worker(), worker()]);
  }, 600_000);

  it.each([["kernels/cpu"], ["driver/cpu"]])("%s compiles without torch headers, -Wall -Wextra -Werror", (dir) => {
    const mine = compiled.filter((c) => c.file.startsWith(`${dir}/`));
    expect(mine.length).toBe(sources(dir).length);
    for (const c of mine) expect(c.code, `${c.file}:\n${c.all}`).toBe(0);
  });

  it.each([
    ["the default mechanism (protection keys, or pages on a CPU without them)", {}],
    ["page protection", { REF_DRIVER_PROTECTION: "pages" }],
  ])(
    "the C ABIs called directly, linked with nothing else: %s",
    async (_name, env: Record<string, string>) => {
      expect(compiled.every((c) => c.code === 0)).toBe(true);
      const exe = path.join(work, "ref_layers");
      const objects = readdirSync(work)
        .filter((f) => f.endsWith(".o"))
        .map((f) => path.join(work, f));
      const link = await execa("g++", [...FLAGS, PROGRAM, ...objects, "-o", exe, "-pthread"], {
        reject: false,
        all: true,
      });
      expect(link.exitCode, String(link.all)).toBe(0);
      const r = await execa(exe, [], { reject: false, all: true, env });
      const lines = String(r.all)
        .split("\n")
        .filter((l) => l.length > 0);
      expect(
        lines.filter((l) => !l.startsWith("ok ")),
        String(r.all),
      ).toEqual([]);
      expect(lines.length).toBe(13);
      expect(r.exitCode).toBe(0);
    },
    120_000,
  );

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
