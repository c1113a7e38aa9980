/**
 * The CUDA reference backend without a GPU and without compiling: what
 * `init --device cuda` renders, that every kernel library entry point has a
 * CUDA definition (Note [Every entry point has a CUDA definition] in
 * kernels/cuda/NotImplemented.cu), and that cuda-ops.txt lists only
 * operators whose ATen glue reaches implemented entry points. The build,
 * the import on a GPU-less machine and the skipped conformance run are in
 * test/e2e/cuda.test.ts.
 */
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
const notImplemented = entryPoints(read(CSRC, "kernels", "cuda", "NotImplemented.cu"));

function listed(file: string): string[] {
  return read(REF, file)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith("#"));
}

/**
 * Top-level C++ functions of a source file (comments and strings removed):
 * name -> the identifiers its body calls. Overloads share a name; namespace
 * braces are transparent.
 */
function callsOf(src: string, into: Map<string, Set<string>>): void {
  const code = src
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "")
    .replace(/"(?:\\.|[^"\\\n])*"/g, '""')
    .replace(/'(?:\\.|[^'\\\n])'/g, "''");
  const stack: { kind: "ns" | "fn" | "other"; name?: string }[] = [];
  let headerStart = 0;
  let fn: { name: string; start: number } | null = null;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === "{") {
      if (!fn) {
        const header = code.slice(headerStart, i);
        const m = /([A-Za-z_]\w*)\s*\(/.exec(header);
        if (/\bnamespace\b[^;]*$/.test(header) || /extern\s+""\s*$/.test(header)) stack.push({ kind: "ns" });
        else if (m && /\)\s*(const)?\s*(noexcept)?\s*(->[^{;]*)?$/.test(header)) {
          stack.push({ kind: "fn", name: m[1]! });
          fn = { name: m[1]!, start: i };
        } else stack.push({ kind: "other" });
      } else stack.push({ kind: "other" });
      headerStart = i + 1;
    } else if (c === "}") {
      const top = stack.pop();
      if (top?.kind === "fn" && fn) {
        const body = code.slice(fn.start, i);
        const calls = into.get(fn.name) ?? new Set<string>();
        // Free calls only: not members (x.f(), p->f()) and not other namespaces' (at::f()).
        for (const m of body.matchAll(/(?<![\w.>:])(?:(?:opgen_ref|runtime)::)?([A-Za-z_]\w*)\s*\(/g)) calls.add(m[1]!);
        into.set(fn.name, calls);
        fn = null;
      }
      headerStart = i + 1;
    } else if (c === ";" && !fn) {
      headerStart = i + 1;
    }
  }
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

  it("lists no operator whose glue reaches an entry point the CUDA library does not implement", () => {
    const calls = new Map<string, Set<string>>();
    for (const dir of ["aten", "runtime"]) {
      for (const f of files(path.join(CSRC, dir), ".cpp")) callsOf(read(f), calls);
    }
    const stubs = new Set(notImplemented);
    const reaches = (name: string): string[] => {
      const seen = new Set<string>([name]);
      const todo = [name];
      const hit = new Set<string>();
      while (todo.length > 0) {
        for (const callee of calls.get(todo.pop()!) ?? []) {
          if (stubs.has(callee)) hit.add(callee);
          if (!seen.has(callee) && calls.has(callee)) {
            seen.add(callee);
            todo.push(callee);
          }
        }
      }
      return [...hit];
    };
    const bad = ops
      .map((op) => [op, reaches(op.split(".")[0]!)] as const)
      .filter(([, hit]) => hit.length > 0)
      .map(([op, hit]) => `${op} -> ${hit.join(", ")}`);
    expect(bad).toEqual([]);
    // The check can see: _embedding_bag's glue reaches the refkEmbeddingBag stub.
    expect(reaches("_embedding_bag")).toEqual(["refkEmbeddingBag"]);
    expect(reaches("max_pool2d_with_indices")).toContain("refkPool");
    expect(reaches("histc")).toEqual(["refkHistc"]);
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
