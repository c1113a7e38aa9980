/**
 * The CUDA reference backend without a GPU and without compiling: what
 * `init --device cuda` renders, that every kernel library entry point has a
 * CUDA definition (Note [Every entry point has a CUDA definition] in
 * kernels/cuda/NotImplemented.cu), and that cuda-ops.txt is what
 * scripts/cuda-ops.mjs computes: the operators whose ATen glue reaches
 * implemented entry points only. The build,
 * the import on a GPU-less machine and the skipped conformance run are in
 * test/e2e/cuda.test.ts.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { kernelSetOps, renderScaffold, scaffoldVars } from "../../src/scaffold/init.js";

const ROOT = path.resolve(__dirname, "..", "..");
const REF = path.join(ROOT, "backends", "ref");
const CSRC = path.join(REF, "csrc");

const read = (...p: string[]) => readFileSync(path.join(...p), "utf8");
const files = (dir: string, ext: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f));

function entryPoints(text: string): string[] {
  return [...text.matchAll(/^(?:extern\s+"C"\s+)?refkStatus\s+(refk\w+)\s*\(/gm)].map((m) => m[1]!);
}

const declared = entryPoints(read(CSRC, "kernels", "RefKernels.h"));
const cudaDefined = files(path.join(CSRC, "kernels", "cuda"), ".cu").flatMap((f) => entryPoints(read(f)));

function listed(file: string): string[] {
  return read(REF, file)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith("#"));
}

describe("the CUDA kernel library", () => {
  it("defines every entry point RefKernels.h declares, once (a kernel or a NotImplemented stub)", () => {
    expect(declared.length).toBeGreaterThan(20);
    const missing = declared.filter((n) => !cudaDefined.includes(n));
    expect(missing, "add them to backends/ref/csrc/kernels/cuda/NotImplemented.cu").toEqual([]);
    const twice = cudaDefined.filter((n, i) => cudaDefined.indexOf(n) !== i);
    expect(twice).toEqual([]);
    expect(cudaDefined.filter((n) => !declared.includes(n))).toEqual([]);
  });

  it("keeps torch out of nvcc's way: no .cu or .cuh file includes a torch, ATen or c10 header", () => {
    const dir = path.join(CSRC, "kernels", "cuda");
    for (const f of [...files(dir, ".cu"), ...files(dir, ".cuh")]) {
      expect(read(f), f).not.toMatch(/#include\s*[<"](torch|ATen|c10|pybind11)\//);
    }
  });
});

const refYaml = YAML.parse(read(REF, "backend.yaml")) as { supported: string[]; autograd?: { op: string }[] };
// A CUDA project lists the aten operators of `autograd:` as supported (src/scaffold/init.ts kernelSetOps).
const listedOps = [...refYaml.supported, ...(refYaml.autograd ?? []).map((e) => e.op)];

describe("cuda-ops.txt", () => {
  const ops = listed("cuda-ops.txt");

  it("lists only backend.yaml operators, each once", () => {
    expect(ops.length).toBeGreaterThan(100);
    expect(ops.filter((op) => !listedOps.includes(op))).toEqual([]);
    expect(ops.filter((op, i) => ops.indexOf(op) !== i)).toEqual([]);
  });

  it("is what scripts/cuda-ops.mjs writes from the sources (Note [Glue walk] there)", () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, "scripts", "cuda-ops.mjs"), "--check"], {
      encoding: "utf8",
    });
    expect(r.stderr, "run node scripts/cuda-ops.mjs").toBe("");
    expect(r.status, "run node scripts/cuda-ops.mjs").toBe(0);
  });
});

describe("init --device cuda", () => {
  const TORCH = "2.13.0";
  const files = renderScaffold("cuda", scaffoldVars("mygpu", "cuda", TORCH, kernelSetOps("all", "cuda")));
  const names = [...files.keys()];

  it("copies the shared glue and runtime with the CUDA driver and kernels, not the CPU ones", () => {
    expect(names).toContain("csrc/driver/cuda/Driver.cpp");
    expect(names).toContain("csrc/kernels/cuda/Unary.cu");
    expect(names).toContain("csrc/aten/Glue.cpp");
    expect(names).toContain("csrc/runtime/Allocator.cpp");
    expect(names.filter((n) => /^csrc\/(driver|kernels)\/cpu\//.test(n))).toEqual([]);
    const cpu = [...renderScaffold("cpu", scaffoldVars("mychip", "cpu", TORCH)).keys()];
    expect(cpu.filter((n) => /^csrc\/(driver|kernels)\/cuda\//.test(n))).toEqual([]);
    expect(cpu).toContain("csrc/kernels/cpu/Unary.cpp");
    // Note [One definition per semantics]: both kinds get kernels/common/.
    const common = (ns: string[]) => ns.filter((n) => n.startsWith("csrc/kernels/common/")).sort();
    expect(common(names)).toContain("csrc/kernels/common/Dtypes.h");
    expect(common(cpu)).toEqual(common(names));
  });

  it("registers what the CUDA library covers: --kernels all is cuda-ops.txt, starter its share of it", () => {
    expect(kernelSetOps("all", "cuda")).toEqual(listedOps.filter((op) => listed("cuda-ops.txt").includes(op)));
    // gelu, an autograd: entry of the reference (whose sections a CUDA project does not copy), stays supported.
    expect(kernelSetOps("all", "cuda")).toContain("gelu");
    expect(kernelSetOps("all", "cuda")).not.toContain("_embedding_bag");
    expect(kernelSetOps("starter", "cuda")).toEqual(
      listed("starter-ops.txt").filter((op) => listed("cuda-ops.txt").includes(op)),
    );
    const yaml = String(files.get("backend.yaml"));
    expect(yaml).toMatch(/^ {2}- mm$/m);
    expect(yaml).not.toMatch(/^ {2}- _embedding_bag$/m);
  });

  it("names the missing GPU in the package's import warning", () => {
    const init = String(files.get("torch_mygpu/__init__.py"));
    expect(init).toMatch(/def unavailable_reason/);
    expect(init).toMatch(/no NVIDIA GPU is visible to the CUDA runtime/);
  });
});
