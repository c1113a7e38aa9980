/**
 * `opgen-backend init`: bad input is rejected with the reason and changes
 * nothing; good input renders every scaffold file with its placeholders
 * filled. (Building the result is the e2e test's job.)
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { importCheck } from "../../src/scaffold/build.js";
import {
  init,
  initNameProblem,
  referenceOps,
  renderScaffold,
  scaffoldVars,
  torchVersionProblem,
} from "../../src/scaffold/init.js";
import { UserError } from "../../src/util/errors.js";
import { VERSION } from "../../src/version.js";

const TORCH = "2.13.0";
const tmp = mkdtempSync(path.join(tmpdir(), "opgen-scaffold-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const fresh = () => path.join(tmp, `p${n++}`);

function initError(dir: string, opts: Parameters<typeof init>[1]): string {
  try {
    init(dir, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    const e = err as UserError;
    return [e.message, ...e.diagnostics.map((d) => d.message)].join("\n");
  }
  throw new Error("init did not fail");
}

describe("init: device names", () => {
  const bad: [string, { given: string; want: RegExp }][] = [
    ["not an identifier (dash)", { given: "my-chip", want: /not a Python identifier/ }],
    ["not an identifier (digit first)", { given: "1chip", want: /not a Python identifier/ }],
    ["not an identifier (space)", { given: "my chip", want: /not a Python identifier/ }],
    ["empty", { given: "", want: /not a Python identifier/ }],
    ["upper case", { given: "MyChip", want: /lower-case/ }],
    ["digits (torch's parser rejects them)", { given: "chip2", want: /lower-case/ }],
    ["python keyword", { given: "class", want: /keyword/ }],
    ...[
      "cpu",
      "cuda",
      "meta",
      "xla",
      "mps",
      "hpu",
      "xpu",
      "mtia",
      "ipu",
      "lazy",
      "vulkan",
      "opengl",
      "opencl",
      "ideep",
      "mkldnn",
      "fpga",
      "maia",
      "ve",
      "ort",
      "hip",
      "privateuseone",
    ].map((d): [string, { given: string; want: RegExp }] => [
      `torch device ${d}`,
      { given: d, want: /torch already has|collides/ },
    ]),
  ];
  it.each(bad)("%s", (_label, { given, want }) => {
    expect(initNameProblem(given)).toMatch(want);
    const dir = fresh();
    expect(initError(dir, { name: given, torchVersion: TORCH })).toMatch(want);
    expect(existsSync(dir)).toBe(false);
  });

  it.each([["mychip"], ["my_chip"], ["npu_x"]])("accepts %s", (name) => {
    expect(initNameProblem(name)).toBeNull();
  });
});

describe("init: target directory and device kind", () => {
  it("refuses a non-empty directory and leaves it unchanged", () => {
    const dir = fresh();
    mkdirSync(dir);
    writeFileSync(path.join(dir, "keep.txt"), "mine");
    expect(initError(dir, { name: "mychip", torchVersion: TORCH })).toMatch(/not empty; nothing was changed.*--force/);
    expect(readdirSync(dir)).toEqual(["keep.txt"]);
    expect(readFileSync(path.join(dir, "keep.txt"), "utf8")).toBe("mine");
  });

  it("writes into a non-empty directory with force, keeping unrelated files", () => {
    const dir = fresh();
    mkdirSync(dir);
    writeFileSync(path.join(dir, "keep.txt"), "mine");
    init(dir, { name: "mychip", force: true, torchVersion: TORCH });
    expect(readFileSync(path.join(dir, "keep.txt"), "utf8")).toBe("mine");
    expect(existsSync(path.join(dir, "backend.yaml"))).toBe(true);
  });

  it("refuses a path that is a file", () => {
    const file = fresh();
    writeFileSync(file, "x");
    expect(initError(file, { name: "mychip", torchVersion: TORCH })).toMatch(/not a directory/);
    expect(readFileSync(file, "utf8")).toBe("x");
  });

  it("accepts an existing empty directory", () => {
    const dir = fresh();
    mkdirSync(dir);
    init(dir, { name: "mychip", torchVersion: TORCH });
    expect(existsSync(path.join(dir, "setup.py"))).toBe(true);
  });

  it.each([["tpu", /not a device kind/]])("--device %s is rejected", (device, want) => {
    const dir = fresh();
    expect(initError(dir, { name: "mychip", device, torchVersion: TORCH })).toMatch(want);
    expect(existsSync(dir)).toBe(false);
  });

  it("reports every problem at once", () => {
    const dir = fresh();
    mkdirSync(dir);
    writeFileSync(path.join(dir, "x"), "");
    const msg = initError(dir, { name: "cpu", device: "tpu", torchVersion: TORCH });
    expect(msg).toMatch(/3 problems/);
    expect(msg).toMatch(/--name/);
    expect(msg).toMatch(/--device/);
    expect(msg).toMatch(/not empty/);
  });
});

describe("init: rendered project", () => {
  const dir = fresh();
  const r = init(dir, { name: "my_chip", torchVersion: TORCH });

  it("has the documented layout", () => {
    for (const f of [
      "backend.yaml",
      "pyproject.toml",
      "setup.py",
      "README.md",
      ".gitignore",
      ".github/workflows/ci.yml",
      "torch_my_chip/__init__.py",
      "torch_my_chip/device.py",
      "tests/test_my_chip.py",
      "csrc/runtime/Allocator.cpp",
      "csrc/runtime/Guard.cpp",
      "csrc/runtime/Hooks.cpp",
      "csrc/runtime/Generator.cpp",
      "csrc/runtime/Fallback.cpp",
      "csrc/runtime/Minimal.cpp",
      "csrc/runtime/Serialization.cpp",
      "csrc/runtime/Module.cpp",
      "csrc/driver/RefDriver.h",
      "csrc/driver/cpu/Driver.cpp",
      "csrc/kernels/RefKernels.h",
      "csrc/kernels/cpu/Binary.cpp",
      "csrc/aten/Glue.h",
      "csrc/aten/Binary.cpp",
      "conformance-expectations.yaml",
    ]) {
      expect(r.files, f).toContain(f);
      expect(existsSync(path.join(dir, f)), f).toBe(true);
    }
    expect(r.files.some((f) => f.endsWith(".hbs") || f.includes("{{"))).toBe(false);
  });

  it("fills every placeholder", () => {
    // csrc/ is backends/ref's, copied byte for byte (C++ may well hold `{{`).
    for (const f of r.files.filter((f) => !f.startsWith("csrc/"))) {
      const text = readFileSync(path.join(dir, f), "utf8");
      // GitHub expressions ${{ ... }} are the only braces allowed to survive.
      expect(text.replace(/\$\{\{[^}]*\}\}/g, ""), f).not.toMatch(/\{\{|\}\}/);
    }
  });

  it("names the device consistently", () => {
    const yaml = YAML.parse(readFileSync(path.join(dir, "backend.yaml"), "utf8"));
    expect(yaml).toMatchObject({
      backend: "PrivateUse1",
      device: "my_chip",
      cpp_namespace: "opgen_ref",
      free_functions: true,
    });
    expect(yaml.class_name).toBeUndefined();
    expect(yaml.supported).toEqual(
      expect.arrayContaining(["add.Tensor", "mul.Tensor", "mm", "sum.dim_IntList", "relu"]),
    );
    const pyproject = readFileSync(path.join(dir, "pyproject.toml"), "utf8");
    expect(pyproject).toContain('[project.entry-points."torch.backends"]');
    expect(pyproject).toContain('torch_my_chip = "_torch_my_chip_autoload:_autoload"');
    expect(pyproject).toContain('py-modules = ["_torch_my_chip_autoload"]');
    const init = readFileSync(path.join(dir, "torch_my_chip/__init__.py"), "utf8");
    expect(init).toContain("TORCH_MY_CHIP_STRICT_FALLBACK");
    // The C++ is backends/ref's, byte for byte: Note [Projects copy the reference backend].
    const ref = path.resolve(__dirname, "..", "..", "backends", "ref");
    for (const f of r.files.filter((x) => x.startsWith("csrc/"))) {
      expect(readFileSync(path.join(dir, f), "utf8"), f).toBe(readFileSync(path.join(ref, f), "utf8"));
    }
  });

  it("registers the starter set by default and the whole reference set with kernels: all", () => {
    const starter = YAML.parse(readFileSync(path.join(dir, "backend.yaml"), "utf8")).supported;
    expect(starter).toEqual(referenceOps("starter"));
    const allDir = mkdtempSync(path.join(tmpdir(), "opgen-init-all-"));
    try {
      init(path.join(allDir, "p"), { name: "allchip", torchVersion: TORCH, kernels: "all" });
      const all = YAML.parse(readFileSync(path.join(allDir, "p", "backend.yaml"), "utf8")).supported;
      expect(all).toEqual(referenceOps("all"));
      expect(all.length).toBeGreaterThan(100);
      for (const op of starter) expect(all).toContain(op);
    } finally {
      rmSync(allDir, { recursive: true, force: true });
    }
    expect(() => init(path.join(allDir, "q"), { name: "q", torchVersion: TORCH, kernels: "some" })).toThrow(
      /--kernels: "some" is not a kernel set; use one of starter, all/,
    );
  });

  it("is deterministic", () => {
    const a = renderScaffold("cpu", scaffoldVars("mychip", "cpu", TORCH));
    const b = renderScaffold("cpu", scaffoldVars("mychip", "cpu", TORCH));
    expect([...a.keys()]).toEqual([...b.keys()]);
    for (const [k, v] of a) expect(String(b.get(k)), k).toBe(String(v));
  });
});

describe("init: Note [Pinned torch]", () => {
  it.each([
    ["2.13.0", null],
    ["2.14.1", null],
    ["3.0.0", null],
    ["2.12.1", /older than 2\.13/],
    ["1.13.0", /older than 2\.13/],
    ["2.13", /not a torch release like 2\.13\.0/],
    ["2.13.0+cpu", /not a torch release/],
    ["latest", /not a torch release/],
  ] as const)("%s", (given, want) => {
    const p = torchVersionProblem(given);
    if (want === null) expect(p).toBeNull();
    else expect(p).toMatch(want);
  });

  it("refuses an unsupported --torch-version and writes nothing", () => {
    const dir = fresh();
    expect(initError(dir, { name: "mychip", torchVersion: "2.12.0" })).toMatch(
      /--torch-version: torch 2\.12\.0 is older/,
    );
    expect(existsSync(dir)).toBe(false);
  });

  it("pins the torch release in the wheel and in CI, and CI installs this opgen-backend", () => {
    const files = renderScaffold("cpu", scaffoldVars("mychip", "cpu", "2.14.1"));
    const pyproject = String(files.get("pyproject.toml"));
    expect(pyproject).toContain('dependencies = ["torch==2.14.1"]');
    expect(pyproject).toContain('"torch==2.14.1"]\nbuild-backend');
    const ci = String(files.get(".github/workflows/ci.yml"));
    expect(ci).toContain("pip install torch==2.14.1 ");
    expect(ci).toContain(`npm install -g opgen-backend@${VERSION}`);
    expect(String(files.get("setup.py"))).toContain("was generated for torch");
  });
});

describe("VERSION", () => {
  it("is package.json's version", () => {
    const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8")) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });
});

describe("build's post-install import check", () => {
  it("does not autoload other installed backends (issue: 'multiple backend fallbacks for PrivateUse1')", async () => {
    const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");
    const site = mkdtempSync(path.join(tmpdir(), "opgen-import-check-"));
    try {
      // Another backend whose autoload aborts, as a second PrivateUse1 backend does.
      mkdirSync(path.join(site, "otherdev"));
      mkdirSync(path.join(site, "otherdev-1.0.dist-info"));
      writeFileSync(
        path.join(site, "otherdev", "__init__.py"),
        "def _autoload():\n    raise RuntimeError('multiple backend fallbacks for PrivateUse1')\n",
      );
      writeFileSync(
        path.join(site, "otherdev-1.0.dist-info", "METADATA"),
        "Metadata-Version: 2.1\nName: otherdev\nVersion: 1.0\n",
      );
      writeFileSync(
        path.join(site, "otherdev-1.0.dist-info", "entry_points.txt"),
        "[torch.backends]\notherdev = otherdev:_autoload\n",
      );
      // The package just built: importable, with its extension module.
      mkdirSync(path.join(site, "torch_mine"));
      writeFileSync(path.join(site, "torch_mine", "__init__.py"), "import torch\n");
      writeFileSync(path.join(site, "torch_mine", "_C.py"), "");
      await expect(importCheck("torch_mine", python, {}, site)).resolves.toBeUndefined();
    } finally {
      rmSync(site, { recursive: true, force: true });
    }
  }, 120_000);
});

/**
 * Note [One PrivateUse1 backend]: two opgen-made packages in one site. The
 * scaffold's Python files are the real ones; each package's `_C` is a stand-in
 * that registers a fallback on AutocastPrivateUse1 as the real extension's
 * static initializers do (a second registration raises here, where the real
 * one ends the process), and records that it loaded. The e2e test
 * (conformance.test.ts) does the same with two built backends.
 */
describe("two backends in one interpreter", () => {
  const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");
  const site = mkdtempSync(path.join(tmpdir(), "opgen-two-backends-"));
  afterAll(() => rmSync(site, { recursive: true, force: true }));
  const FAKE_C = [
    "import sys, torch",
    "_LIB = torch.library.Library('_', 'IMPL')",
    "_LIB.fallback(torch.library.fallthrough_kernel, dispatch_key='AutocastPrivateUse1')",
    "sys.modules.setdefault('loaded_extensions', type(sys)('loaded_extensions')).__dict__.setdefault('names', []).append(__name__)",
    "def _device_count(): return 1",
    "def _set_strict_fallback(on): pass",
    "",
  ].join("\n");
  for (const name of ["aaa", "bbb"]) {
    const files = renderScaffold("cpu", scaffoldVars(name, "cpu", TORCH));
    for (const rel of [
      `_torch_${name}_autoload.py`,
      `torch_${name}/__init__.py`,
      `torch_${name}/device.py`,
      `torch_${name}/_compile.py`,
      `torch_${name}/_distributed.py`,
      `torch_${name}/_inductor.py`,
    ]) {
      mkdirSync(path.dirname(path.join(site, rel)), { recursive: true });
      writeFileSync(path.join(site, rel), String(files.get(rel)));
    }
    writeFileSync(path.join(site, `torch_${name}`, "_C.py"), FAKE_C);
    // The entry point as pyproject.toml declares it (what pip writes to entry_points.txt).
    const entry = /\[project\.entry-points\."torch\.backends"\]\n(\S+) = "([^"]+)"/.exec(
      String(files.get("pyproject.toml")),
    );
    expect(entry).not.toBeNull();
    const dist = path.join(site, `torch_${name}-0.1.0.dist-info`);
    mkdirSync(dist);
    writeFileSync(path.join(dist, "METADATA"), `Metadata-Version: 2.1\nName: torch_${name}\nVersion: 0.1.0\n`);
    writeFileSync(path.join(dist, "entry_points.txt"), `[torch.backends]\n${entry![1]} = ${entry![2]}\n`);
  }

  /** Runs `code` with the site on PYTHONPATH; it prints one JSON line. */
  async function run(code: string, autoload: boolean) {
    const prelude = [
      "import json, sys, warnings",
      "warnings.simplefilter('always')",
      "caught = warnings.catch_warnings(record=True)",
      "W = caught.__enter__()",
      "def loaded(): return list(getattr(sys.modules.get('loaded_extensions'), 'names', []))",
      "def warned(): return [str(w.message) for w in W if issubclass(w.category, RuntimeWarning)]",
      "def refused(pkg):",
      "    try:",
      "        __import__(pkg)",
      "    except ImportError as e:",
      "        return [type(e).__name__, str(e)]",
      "    return None",
      "",
    ].join("\n");
    const r = await execa(python, ["-c", prelude + code], {
      cwd: tmpdir(),
      env: { PYTHONPATH: site, TORCH_DEVICE_BACKEND_AUTOLOAD: autoload ? "1" : "0" },
      reject: false,
      all: true,
    });
    expect(r.exitCode, String(r.all)).toBe(0);
    return JSON.parse(String(r.stdout).trim().split("\n").at(-1)!);
  }

  it("under autoload the second is a warning and `import torch` works with the first; importing it then refuses", async () => {
    const got = await run(
      [
        "import torch",
        "first = torch._C._get_privateuse1_backend_name()",
        "second = {'aaa': 'bbb', 'bbb': 'aaa'}[first]",
        "x = torch.ones(2) + 1",
        "print(json.dumps({'first': first, 'second': second, 'loaded': loaded(), 'warned': warned(),",
        "  'module': hasattr(torch, first), 'other_module': hasattr(torch, second), 'cpu': x.tolist(),",
        "  'refused': refused('torch_' + second), 'loaded_after': loaded()}))",
      ].join("\n"),
      true,
    );
    const { first, second } = got;
    expect(got.loaded).toEqual([`torch_${first}._C`]);
    expect(got.module).toBe(true);
    expect(got.other_module).toBe(false);
    expect(got.cpu).toEqual([2, 2]);
    expect(got.warned).toHaveLength(1);
    expect(got.warned[0]).toContain(`torch_${second} was not loaded by torch's backend autoload`);
    expect(got.warned[0]).toContain(`'${first}' (torch_${first}) holds it already`);
    expect(got.refused[0]).toBe("PrivateUse1InUse");
    expect(got.refused[1]).toMatch(
      new RegExp(
        `^torch_${second} cannot load: PyTorch allows one PrivateUse1 backend per process, and '${first}' \\(torch_${first}\\) holds it already`,
      ),
    );
    expect(got.loaded_after).toEqual([`torch_${first}._C`]);
  }, 120_000);

  it.each([
    ["aaa"],
    ["bbb"],
  ])("an explicit import of torch_%s before torch wins over the autoloaded other", async (mine) => {
    const other = mine === "aaa" ? "bbb" : "aaa";
    const got = await run(
      `import torch_${mine}\nimport torch\nprint(json.dumps({'name': torch._C._get_privateuse1_backend_name(), 'loaded': loaded(), 'warned': warned()}))`,
      true,
    );
    expect(got.name).toBe(mine);
    expect(got.loaded).toEqual([`torch_${mine}._C`]);
    expect(got.warned).toHaveLength(1);
    expect(got.warned[0]).toContain(`torch_${other} was not loaded`);
    expect(got.warned[0]).toContain(`'${mine}' (torch_${mine}) holds it already`);
  }, 120_000);

  it("without autoload the second explicit import raises an ImportError naming the first, before its extension loads", async () => {
    const got = await run(
      "import torch, torch_aaa\nprint(json.dumps({'refused': refused('torch_bbb'), 'loaded': loaded(), 'again': refused('torch_bbb')}))",
      false,
    );
    expect(got.refused[0]).toBe("PrivateUse1InUse");
    expect(got.refused[1]).toContain("torch_bbb cannot load");
    expect(got.refused[1]).toContain("'aaa' (torch_aaa) holds it already");
    expect(got.refused[1]).toContain("TORCH_DEVICE_BACKEND_AUTOLOAD=0");
    expect(got.again).toEqual(got.refused);
    expect(got.loaded).toEqual(["torch_aaa._C"]);
  }, 120_000);

  it("a backend made otherwise holding PrivateUse1 (renamed, or only its kernels registered) is refused too", async () => {
    const got = await run(
      [
        "import torch",
        "lib = torch.library.Library('_', 'IMPL')",
        "lib.fallback(torch.library.fallthrough_kernel, dispatch_key='PrivateUse1')",
        "unnamed = refused('torch_aaa')",
        "torch.utils.rename_privateuse1_backend('foreign')",
        "print(json.dumps({'unnamed': unnamed, 'named': refused('torch_aaa'), 'loaded': loaded(),",
        "  'claim': sys.modules['_opgen_privateuse1'].holder}))",
      ].join("\n"),
      false,
    );
    expect(got.unnamed[0]).toBe("PrivateUse1InUse");
    expect(got.unnamed[1]).toContain(
      "a backend not named yet (PrivateUse1 is still 'privateuseone', but PrivateUse1 has a fallback kernel) holds it already",
    );
    expect(got.named[1]).toContain("and 'foreign' holds it already");
    expect(got.loaded).toEqual([]);
    // A refused package gives its claim back.
    expect(got.claim).toBeNull();
  }, 120_000);
});
