/**
 * Slow tier: the generated C++ compiles against the installed torch with
 * `g++ -std=c++20 -O2 -Wall -Wextra -Werror` (torch headers as system
 * includes), and the registrations work at run time.
 *
 * - core ATen: Register<Backend>.cpp + header for the 193 core overloads
 * - the derived overloads' helpers, templates/cpp/*.cpp, on their own
 * - the fixtures torchgen crashes on, a device-guard + autograd fixture, a
 *   kernel stub (stubs must compile as written), and (syntax only, -Werror)
 *   every functional overload with all its siblings derived
 * - runtime: test/fixtures/gen/runtime{,_out,_free} are built into shared
 *   libraries with CPU kernels and loaded into torch; check.py calls the
 *   registered overloads unboxed and boxed under the PrivateUse1 key.
 *   runtime_free's kernels are free functions (free_functions: true) in a
 *   translation unit compiled where no generated header exists.
 *
 * Objects are cached by the hash of (compiler, flags, torch version, sources)
 * under node_modules/.cache/opgen-compile, so reruns take seconds. Compiles
 * run one at a time at lower priority (shared machines).
 */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { buildPlan, generate } from "../../src/dest/index.js";
import { derivedDecls } from "../../src/dest/register.js";
import { cppSource } from "../../src/dest/sources.js";
import { kernelStubs, missingKernels } from "../../src/impl/kernels.js";
import { isGroup, loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";
import { formatDiagnostic } from "../../src/util/errors.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FIXTURES = path.join(ROOT, "test/fixtures/gen");
const CACHE = path.join(ROOT, "node_modules/.cache/opgen-compile");
const CXX = process.env.CXX ?? "g++";
const FLAGS = ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC"];
const SLOW = 900_000;

let install: TorchInstall;
let catalog: OperatorCatalog;
let work: string;
let cxxVersion: string;

beforeAll(async () => {
  install = await discoverTorch();
  catalog = await loadCatalog(install);
  work = mkdtempSync(path.join(tmpdir(), "opgen-compile-"));
  cxxVersion = (await execa(CXX, ["--version"])).stdout.split("\n")[0] ?? "";
  mkdirSync(CACHE, { recursive: true });
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function includeFlags(): string[] {
  return install.includeDirs.flatMap((d) => ["-isystem", d]);
}

/** Generates `yaml` into a fresh directory; returns it. */
function gen(name: string, yamlText: string): string {
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  const config = parseBackendYaml(yamlText, "backend.yaml", catalog);
  for (const f of generate(config, catalog)) writeFileSync(path.join(dir, f.path), f.content);
  return dir;
}

/**
 * Compiles `src` (with the other files of its directory as possible
 * includes) to an object, or takes it from the cache. Returns the object path.
 */
async function compile(src: string, syntaxOnly = false): Promise<string> {
  const dir = path.dirname(src);
  const h = createHash("sha256");
  h.update([CXX, cxxVersion, install.version, ...FLAGS, ...includeFlags(), String(syntaxOnly)].join("\0"));
  for (const f of [src, ...headersIn(dir)]) h.update(`\0${path.basename(f)}\0`).update(readFileSync(f));
  const obj = path.join(CACHE, `${h.digest("hex").slice(0, 24)}.o`);
  if (existsSync(obj)) return obj;
  const tmp = `${obj}.${process.pid}.tmp`;
  const mode = syntaxOnly ? ["-fsyntax-only"] : ["-c", "-o", tmp];
  const r = await execa("nice", ["-n", "5", CXX, ...FLAGS, ...includeFlags(), "-I", dir, src, ...mode], {
    reject: false,
    all: true,
  });
  expect(r.exitCode, `${path.basename(src)} failed to compile:\n${r.all}`).toBe(0);
  if (syntaxOnly) writeFileSync(tmp, "syntax ok\n");
  copyFileSync(tmp, obj);
  rmSync(tmp, { force: true });
  return obj;
}

function headersIn(dir: string): string[] {
  return ["PrivateUse1NativeFunctions.h"].map((h) => path.join(dir, h)).filter(existsSync);
}

function yamlFor(names: readonly string[]): string {
  return `backend: PrivateUse1\ncpp_namespace: at::mychip\nsupported:\n${names.map((n) => `- ${n}\n`).join("")}`;
}

describe("generated C++ compiles with -Wall -Wextra -Werror", () => {
  it(
    "core ATen Register<Backend>.cpp",
    async () => {
      const core = catalog.functions
        .filter((f) => f.tags.includes("core"))
        .map((f) => f.name)
        .sort();
      const dir = gen("core", yamlFor(core));
      await compile(path.join(dir, "RegisterPrivateUse1.cpp"));
    },
    SLOW,
  );

  it(
    "every functional overload listed, every out=/inplace/mutable sibling derived, device guards on (syntax only)",
    async () => {
      const functionals = catalog.groups
        .filter(isGroup)
        .map((g) => g.functional.name)
        .sort();
      const dir = gen("allfunc", yamlFor(functionals).replace("supported:", "device_guard: true\nsupported:"));
      await compile(path.join(dir, "RegisterPrivateUse1.cpp"), true);
    },
    SLOW,
  );

  it(
    "the listings torchgen crashes on",
    async () => {
      const dir = gen("crashes", readFileSync(path.join(FIXTURES, "torchgen_crashes.yaml"), "utf8"));
      await compile(path.join(dir, "RegisterPrivateUse1.cpp"));
    },
    SLOW,
  );

  it(
    "device guards, SymInt kernels, autograd registrations, and a kernel stub",
    async () => {
      const text = readFileSync(path.join(FIXTURES, "snapshot/backend.yaml"), "utf8");
      const dir = gen("snapshot", text);
      await compile(path.join(dir, "RegisterPrivateUse1.cpp"));
      await compile(path.join(dir, "RegisterAutogradPrivateUse1.cpp"));
      const config = parseBackendYaml(text, "backend.yaml", catalog);
      const stub = kernelStubs(buildPlan(config, catalog)).find((s) => s.path === "_foreach_add_List.cpp")!;
      writeFileSync(path.join(dir, stub.path), stub.content);
      await compile(path.join(dir, stub.path));
    },
    SLOW,
  );

  it(
    "the derived overloads' helpers, templates/cpp/*.cpp, as one translation unit of their own",
    async () => {
      // Note [C++ helper sources]: gen copies these into Register<Key>.cpp's
      // helper namespace after DerivedDecls; here they are compiled the same
      // way, with #line so that a diagnostic names the helper's own file:line.
      const dir = path.join(work, "helpers");
      mkdirSync(dir, { recursive: true });
      const includes = [
        "<ATen/Tensor.h>",
        "<torch/library.h>",
        "<ATen/ops/_copy_from.h>",
        "<ATen/ops/_copy_from_and_resize.h>",
        "<ATen/core/dispatch/Dispatcher.h>",
        "<ATen/core/stack.h>",
        "<ATen/EmptyTensor.h>",
        "<ATen/ops/empty_strided.h>",
        "<memory>",
        "<mutex>",
        "<optional>",
        "<vector>",
      ];
      const helpers = readdirSync(path.join(ROOT, "templates/cpp"))
        .filter((f) => f.endsWith(".cpp"))
        .sort();
      expect(helpers).toEqual([
        "CopyInto.cpp",
        "DerivedFunctionalKernel.cpp",
        "DerivedOutKernel.cpp",
        "MetaCopies.cpp",
      ]);
      // The declarations as gen prints them: a note, then DerivedDecls.h.
      const decls = derivedDecls("PrivateUse1");
      const declsSource = cppSource("DerivedDecls.h");
      expect(decls.endsWith(declsSource)).toBe(true);
      const tu = [
        ...includes.map((h) => `#include ${h}`),
        "namespace at::mychip::opgen_derived {",
        decls.slice(0, -declsSource.length),
        '#line 1 "templates/cpp/DerivedDecls.h"',
        declsSource,
        ...helpers.flatMap((h) => [`#line 1 "templates/cpp/${h}"`, cppSource(h)]),
        "} // namespace at::mychip::opgen_derived",
        "",
      ].join("\n");
      writeFileSync(path.join(dir, "helpers.cpp"), tu);
      await compile(path.join(dir, "helpers.cpp"));
    },
    SLOW,
  );
});

describe("registrations work at run time", () => {
  it.each([
    ["runtime", "kernels, derived out=/inplace overloads (also from the autograd file), SymInt and int64_t kernels"],
    ["runtime_out", "use_out_as_primary: functional and inplace overloads derived from out= kernels"],
  ])(
    "%s: unboxed and boxed calls reach %s",
    async (fixture) => {
      const fx = path.join(FIXTURES, fixture);
      const dir = gen(fixture, readFileSync(path.join(fx, "backend.yaml"), "utf8"));
      copyFileSync(path.join(fx, "kernels.cpp"), path.join(dir, "kernels.cpp"));
      await linkAndCheck(dir, await compile(path.join(dir, "kernels.cpp")), path.join(fx, "check.py"));
    },
    SLOW,
  );

  it(
    "runtime_free: free-function kernels compiled without the generated header link, register and run; a stub compiles",
    async () => {
      const fx = path.join(FIXTURES, "runtime_free");
      const text = readFileSync(path.join(fx, "backend.yaml"), "utf8");
      const dir = gen("runtime_free", text);
      // Compiled from the fixture's directory (-I there), where no generated header exists.
      const kernels = path.join(fx, "kernels.cpp");
      expect(existsSync(path.join(fx, "PrivateUse1NativeFunctions.h"))).toBe(false);
      expect(readFileSync(kernels, "utf8")).not.toMatch(/#include\s*["<][^">]*NativeFunctions\.h/);
      // gen --impl-path finds every kernel, in each form the file defines them.
      const config = parseBackendYaml(text, "backend.yaml", catalog);
      expect(missingKernels(buildPlan(config, catalog), kernels).map(formatDiagnostic)).toEqual([]);
      // The same operators and checks as the runtime fixture.
      await linkAndCheck(dir, await compile(kernels), path.join(FIXTURES, "runtime/check.py"));
      // A free-function stub compiles as written, also where no generated header exists.
      const stubs = path.join(work, "runtime_free_stubs");
      mkdirSync(stubs, { recursive: true });
      const stub = kernelStubs(buildPlan(config, catalog)).find((s) => s.path === "max_dim.cpp")!;
      writeFileSync(path.join(stubs, stub.path), stub.content);
      await compile(path.join(stubs, stub.path));
    },
    SLOW,
  );
});

/**
 * Compiles the registration files generated into `dir`, links them with the
 * kernels object into a shared library, and runs `checkPy` on it.
 */
async function linkAndCheck(dir: string, kernelsObj: string, checkPy: string): Promise<void> {
  const objs = [await compile(path.join(dir, "RegisterPrivateUse1.cpp")), kernelsObj];
  // Its derived overloads use helpers defined once, in RegisterPrivateUse1.cpp
  // (Note [Derived helpers defined once]): loading the library resolves them.
  const autograd = path.join(dir, "RegisterAutogradPrivateUse1.cpp");
  if (existsSync(autograd)) objs.push(await compile(autograd));
  const so = path.join(dir, `lib${path.basename(dir)}.so`);
  const link = await execa(
    CXX,
    [
      "-shared",
      "-o",
      so,
      ...objs,
      `-L${install.libDir}`,
      "-ltorch",
      "-ltorch_cpu",
      "-lc10",
      `-Wl,-rpath,${install.libDir}`,
    ],
    { reject: false, all: true },
  );
  expect(link.exitCode, link.all).toBe(0);
  const r = await execa(install.python, [checkPy, so], { reject: false, all: true });
  expect(r.all).toContain("ok");
  expect(r.exitCode, r.all).toBe(0);
}
