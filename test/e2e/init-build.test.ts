/**
 * init -> build -> use, end to end: a scaffolded backend builds into a wheel
 * and its device works in a new Python process that only imports torch
 * (the package is autoloaded through the torch.backends entry point).
 *
 * The wheel is installed with `--target` into a private directory put on
 * PYTHONPATH, not into the shared interpreter: an installed backend is loaded
 * by every `import torch` of that interpreter.
 *
 * Compiling is slow, so the project is built once (beforeAll) and every check
 * reads the JSON report of one Python run. The last block grows that same
 * project with `coverage --model --add` and `gen --stubs` and rebuilds it
 * incrementally, rather than building a second project.
 */
import {
  appendFileSync,
  chmodSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadBackendYaml } from "../../src/backend/load.js";
import { addMissing, runModelCoverage } from "../../src/conformance/modelcoverage.js";
import { computeModelCoverage } from "../../src/dest/coverage.js";
import { runGen } from "../../src/pipeline/gen.js";
import { type BuildResult, build } from "../../src/scaffold/build.js";
import { init } from "../../src/scaffold/init.js";
import { discoverTorch } from "../../src/torch/discover.js";

const DEV = "testchip";
const CLI = path.resolve(import.meta.dirname, "..", "..", "bin", "opgen-backend.js");
const PKG = `torch_${DEV}`;
const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");
const work = mkdtempSync(path.join(tmpdir(), "opgen-e2e-"));
const project = path.join(work, "proj");
const site = path.join(work, "site");
const logs: string[] = [];
let first: BuildResult;

const env = () => ({
  ...process.env,
  PYTHONPATH: [site, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  PATH: `${path.dirname(python)}${path.delimiter}${process.env.PATH}`,
});

async function runPy(code: string, extraEnv: Record<string, string> = {}, cwd = work) {
  const script = path.join(work, `check-${Math.random().toString(36).slice(2)}.py`);
  writeFileSync(script, code);
  // By default cwd is not the project, so the installed package is the one that loads.
  return execa(python, [script], { cwd, env: { ...env(), ...extraEnv }, reject: false, all: true });
}

const CHECKS = `
import io, json, sys, warnings
import torch

DEV = "${DEV}"
pkg = sys.modules.get("${PKG}")  # autoloaded by import torch, never imported here
R = {}

def check(name):
    def wrap(fn):
        try:
            R[name] = {"ok": True, "value": fn()}
        except Exception as e:
            R[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    return wrap

R["autoloaded"] = {"ok": True, "value": pkg is not None and torch._C._get_privateuse1_backend_name() == DEV}
warnings.simplefilter("ignore")

@check("randn")
def _():
    x = torch.randn(4, 4, device=DEV)
    return [str(x.device), list(x.shape), str(x.dtype)]

@check("print")
def _():
    return repr(torch.arange(6, dtype=torch.float32, device=DEV).view(2, 3))

@check("cpu_to_method")
def _():
    x = torch.randn(4, 4, device=DEV)
    c = x.cpu()
    y = x.to(DEV + ":1")
    z = c.${DEV}()
    w = c.${DEV}(1)
    return {
        "cpu": str(c.device), "to1": str(y.device), "to1_equal": torch.equal(y.cpu(), c),
        "back_to0": torch.equal(y.to(DEV + ":0").cpu(), c),
        "method": str(z.device), "method1": str(w.device), "method_equal": torch.equal(z.cpu(), c),
        "is_dev": x.is_${DEV}, "cpu_is_dev": c.is_${DEV},
    }

@check("device_module")
def _():
    m = torch.${DEV}
    out = {"count": m.device_count(), "available": m.is_available(), "current": m.current_device()}
    with m.device(1):
        out["inside"] = m.current_device()
        out["empty_inside"] = str(torch.empty(2, device=DEV).device)
    out["after"] = m.current_device()
    return out

@check("cross_device_error")
def _():
    a = torch.ones(2, device=DEV + ":0")
    b = torch.ones(2, device=DEV + ":1")
    try:
        a + b
    except RuntimeError as e:
        return "raised: " + str(e).splitlines()[0]
    return "no error"

@check("item")
def _():
    return [torch.tensor(2.5, device=DEV).item(), torch.tensor(7, device=DEV).item(), torch.tensor(True, device=DEV).item()]

@check("save_load")
def _():
    x = torch.randn(3, 5, device=DEV + ":1")
    buf = io.BytesIO()
    torch.save({"x": x, "v": x[1:]}, buf)
    def load(**kw):
        buf.seek(0)
        return torch.load(buf, **kw)
    d, c, same = load(map_location=DEV), load(map_location="cpu"), load()
    return {
        "dev": str(d["x"].device), "dev_equal": torch.equal(d["x"].cpu(), x.cpu()),
        "view_equal": torch.equal(d["v"].cpu(), x[1:].cpu()),
        "cpu": str(c["x"].device), "cpu_equal": torch.equal(c["x"], x.cpu()),
        "default": str(same["x"].device),
    }

@check("views")
def _():
    x = torch.arange(12.0, device=DEV).view(3, 4) if False else torch.arange(12.0).view(3, 4).to(DEV)
    base = x.untyped_storage().data_ptr()
    views = {"t": x.t(), "slice": x[1:], "flat": x.view(-1)}
    shared = {k: v.untyped_storage().data_ptr() == base for k, v in views.items()}
    views["flat"][5] = 100.0
    shared["write_through"] = x[1, 1].item() == 100.0
    shared["t_value"] = views["t"][1, 1].item() == 100.0
    shared["slice_offset"] = views["slice"].storage_offset()
    return shared

@check("manual_seed")
def _():
    torch.manual_seed(1234)
    a = torch.randn(16, device=DEV).cpu()
    torch.manual_seed(1234)
    b = torch.randn(16, device=DEV).cpu()
    torch.manual_seed(4321)
    c = torch.randn(16, device=DEV).cpu()
    st = torch.${DEV}.get_rng_state()
    d = torch.rand(4, device=DEV).cpu()
    torch.${DEV}.set_rng_state(st)
    e = torch.rand(4, device=DEV).cpu()
    return {"same": torch.equal(a, b), "different": not torch.equal(a, c), "state": torch.equal(d, e),
            "std_ok": 0.3 < float(a.std()) < 2.0}

@check("own_kernels")
def _():
    pkg.reset_fallback_counts()
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    m = torch.randn(5, 3)
    da, db, dm = a.to(DEV), b.to(DEV), m.to(DEV)
    res = {
        "add": torch.allclose(torch.add(da, db, alpha=2).cpu(), torch.add(a, b, alpha=2)),
        "add_broadcast": torch.allclose((da + db[0]).cpu(), a + b[0]),
        "add_scalar": torch.allclose((da + 1.5).cpu(), a + 1.5),
        "mul": torch.allclose((da * db).cpu(), a * b),
        "mul_int_float": torch.equal((torch.arange(4).to(DEV) * 2.5).cpu(), torch.arange(4) * 2.5),
        "mm": torch.allclose((da @ dm).cpu(), a @ m, atol=1e-5),
        "sum": torch.allclose(da.sum(dim=1, keepdim=True).cpu(), a.sum(dim=1, keepdim=True), atol=1e-5),
        "sum_all": torch.allclose(da.sum(dim=[]).cpu(), a.sum(dim=[]), atol=1e-5),
        "relu": torch.equal(torch.relu(da).cpu(), torch.relu(a)),
        "add_inplace": torch.allclose(da.clone().add_(db).cpu(), a + b),
    }
    res["fallbacks"] = pkg.fallback_counts()
    return res

@check("linear")
def _():
    torch.manual_seed(0)
    ref = torch.nn.Linear(8, 4)
    dev = torch.nn.Linear(8, 4).to(DEV)
    dev.load_state_dict(ref.state_dict())
    x = torch.randn(16, 8)
    pkg.reset_fallback_counts()
    out = dev(x.to(DEV))
    out.relu().sum().backward()
    ref_out = ref(x)
    ref_out.relu().sum().backward()
    return {
        "forward": torch.allclose(out.detach().cpu(), ref_out.detach(), atol=1e-5),
        "weight_grad": torch.allclose(dev.weight.grad.cpu(), ref.weight.grad, atol=1e-5),
        "bias_grad": torch.allclose(dev.bias.grad.cpu(), ref.bias.grad, atol=1e-5),
        "grad_device": str(dev.weight.grad.device),
        "fallbacks": pkg.fallback_counts(),
    }

@check("strict_call")
def _():
    x = torch.ones(3, device=DEV)
    pkg.reset_fallback_counts()
    pkg.set_strict_fallback(True)
    try:
        torch.sin(x)
        return "no error"
    except RuntimeError as e:
        return {"error": str(e).splitlines()[0], "strict": pkg.strict_fallback(), "counted": pkg.fallback_counts()}
    finally:
        pkg.set_strict_fallback(False)

print("@@RESULT@@" + json.dumps(R))
`;

beforeAll(async () => {
  init(project, { name: DEV, torchVersion: (await discoverTorch(python)).versionTuple.join(".") });
  first = await build(project, { python, jobs: 2, werror: true, target: site, log: (s) => logs.push(s) });
}, 1_800_000); // a full build while another file builds on the same two cores

afterAll(() => {
  if (!process.env.OPGEN_KEEP_E2E) rmSync(work, { recursive: true, force: true });
});

describe("init -> build -> a device that works", () => {
  let R: Record<string, { ok: boolean; value?: unknown; error?: string }>;
  // biome-ignore lint/suspicious/noExplicitAny: JSON from Python
  const v = (k: string): any => {
    expect(R[k], k).toBeDefined();
    expect(R[k]!.error, k).toBeUndefined();
    return R[k]!.value;
  };

  beforeAll(async () => {
    const r = await runPy(CHECKS);
    const line = String(r.all)
      .split("\n")
      .find((l) => l.startsWith("@@RESULT@@"));
    if (!line) throw new Error(`checks did not run:\n${r.all}`);
    R = JSON.parse(line.slice("@@RESULT@@".length));
  }, 300_000);

  it("built with progress lines, warning-free (-Werror)", () => {
    expect(first.compiled.length).toBeGreaterThan(5);
    expect(logs.some((l) => /\[\d+\/\d+\] compile csrc\/kernels\//.test(l))).toBe(true);
  });

  it("is autoloaded by import torch", () => expect(v("autoloaded")).toBe(true));

  it("creates and prints tensors on the device", () => {
    expect(v("randn")).toEqual([`${DEV}:0`, [4, 4], "torch.float32"]);
    expect(v("print")).toContain(`device='${DEV}:0'`);
    expect(v("print")).toContain("[3., 4., 5.]");
  });

  it("moves tensors: .cpu(), .to(dev:1), .<dev>(), .is_<dev>", () => {
    expect(v("cpu_to_method")).toEqual({
      cpu: "cpu",
      to1: `${DEV}:1`,
      to1_equal: true,
      back_to0: true,
      method: `${DEV}:0`,
      method1: `${DEV}:1`,
      method_equal: true,
      is_dev: true,
      cpu_is_dev: false,
    });
  });

  it("has a device module with >= 2 devices and a device context manager", () => {
    const m = v("device_module");
    expect(m.count).toBeGreaterThanOrEqual(2);
    expect(m).toMatchObject({ available: true, current: 0, inside: 1, empty_inside: `${DEV}:1`, after: 0 });
    expect(v("cross_device_error")).toMatch(/^raised: .*same device/);
  });

  it(".item() reads scalars", () => expect(v("item")).toEqual([2.5, 7, true]));

  it("torch.save / torch.load round-trip (map_location device and cpu)", () => {
    expect(v("save_load")).toEqual({
      dev: `${DEV}:0`,
      dev_equal: true,
      view_equal: true,
      cpu: "cpu",
      cpu_equal: true,
      default: `${DEV}:1`,
    });
  });

  it("views share storage", () => {
    expect(v("views")).toEqual({
      t: true,
      slice: true,
      flat: true,
      write_through: true,
      t_value: true,
      slice_offset: 4,
    });
  });

  it("torch.manual_seed makes device RNG reproducible; RNG state round-trips", () => {
    expect(v("manual_seed")).toEqual({ same: true, different: true, state: true, std_ok: true });
  });

  it("runs add/mul/mm/sum/relu on our kernels, matching CPU, without fallback", () => {
    const k = v("own_kernels");
    for (const [name, ok] of Object.entries(k)) if (name !== "fallbacks") expect(ok, name).toBe(true);
    expect(k.fallbacks).toEqual({});
  });

  it("nn.Linear forward + backward matches CPU, through the fallback where kernels are missing", () => {
    const l = v("linear");
    expect(l).toMatchObject({ forward: true, weight_grad: true, bias_grad: true, grad_device: `${DEV}:0` });
    // addmm is structured: its functional form reaches the fallback as addmm.out.
    expect(
      Object.keys(l.fallbacks).some((k) => /^aten::addmm(\.out)?$/.test(k)),
      JSON.stringify(l.fallbacks),
    ).toBe(true);
    for (const ours of ["aten::mm", "aten::sum.dim_IntList", "aten::relu"])
      expect(l.fallbacks).not.toHaveProperty(ours);
  });

  it("strict mode turns a fallback into an error (Python call)", () => {
    const s = v("strict_call");
    expect(s.error).toMatch(/aten::sin.*strict/);
    expect(s.strict).toBe(true);
    expect(s.counted).toEqual({});
  });

  it("strict mode turns a fallback into an error (environment variable)", async () => {
    const r = await runPy(`import torch\nx = torch.ones(3, device="${DEV}")\nprint(torch.sin(x))\n`, {
      [`TORCH_${DEV.toUpperCase()}_STRICT_FALLBACK`]: "1",
    });
    expect(r.exitCode).not.toBe(0);
    expect(String(r.all)).toMatch(/RuntimeError: .*aten::sin.*strict/);
  });

  it("can also be imported explicitly, before torch", async () => {
    const r = await runPy(
      `import ${PKG}\nimport torch\nprint("OK", (torch.ones(2, device="${DEV}") * 3).sum(dim=0).item())\n`,
    );
    expect(String(r.all)).toContain("OK 6.0");
  });

  it("the scaffolded project's own test suite passes (pytest, from the project root)", async () => {
    const r = await execa(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
      cwd: project,
      env: env(),
      reject: false,
      all: true,
    });
    expect(r.exitCode, String(r.all)).toBe(0);
    expect(String(r.all)).toMatch(/\d+ passed/);
  }, 900_000); // tests/test_inductor.py compiles C++ kernels, test_distributed.py spawns ranks

  it("the CI workflow's Distributed tier step runs for real: test --distributed 2 passes and is reported", async () => {
    const wf = parse(readFileSync(path.join(project, ".github", "workflows", "ci.yml"), "utf8")) as {
      jobs: Record<string, { steps: { name?: string; run?: string }[] }>;
    };
    const steps = wf.jobs["build-test"]!.steps;
    const i = steps.findIndex((x) => x.name === "Distributed tier");
    expect(i).toBeGreaterThan(steps.findIndex((x) => x.name === "Build"));
    // As Actions runs it: bash -e in the checkout, the built package in .site, opgen-backend on PATH.
    const bin = mkdtempSync(path.join(work, "bin-"));
    writeFileSync(path.join(bin, "opgen-backend"), `#!/bin/sh\nexec node ${CLI} "$@"\n`);
    chmodSync(path.join(bin, "opgen-backend"), 0o755);
    symlinkSync(site, path.join(project, ".site"));
    const summary = path.join(work, "distributed-summary.md");
    try {
      const r = await execa("bash", ["-e", "-c", steps[i]!.run!], {
        cwd: project,
        reject: false,
        all: true,
        env: { ...process.env, OPGEN_PYTHON: python, GITHUB_STEP_SUMMARY: summary, PATH: `${bin}:${process.env.PATH}` },
      });
      expect(r.exitCode, String(r.all).slice(-4000)).toBe(0);
      const rep = JSON.parse(readFileSync(path.join(project, "reports", "distributed.json"), "utf8"));
      expect(rep.meta.distributed).toEqual({ backend: `${DEV}ccl`, world: 2 });
      expect(rep.summary).toMatchObject({ failed: 0, crashed: 0, timed_out: 0 });
      expect(rep.summary.passed).toBeGreaterThan(20);
      expect(rep.results.map((x: { op: string }) => x.op)).toContain("c10d::all_reduce");
      expect(readFileSync(path.join(project, "reports", "distributed.xml"), "utf8")).toContain("c10d::broadcast");
      expect(readFileSync(summary, "utf8")).toContain(`distributed tier (c10d backend ${DEV}ccl, world size 2)`);
      expect(String(r.all)).not.toMatch(/core ATen/i);
    } finally {
      rmSync(path.join(project, ".site"));
      rmSync(path.join(project, "reports"), { recursive: true, force: true });
    }
  }, 600_000);

  it("works when Python starts in the project directory (its source package shadows the installed one)", async () => {
    const r = await execa(
      python,
      ["-c", `import torch, ${PKG}\nprint("OK", ${PKG}.__file__, torch.ones(2, device="${DEV}:1").device)`],
      { cwd: project, env: env(), reject: false, all: true },
    );
    expect(String(r.all)).toContain(`OK ${path.join(project, PKG, "__init__.py")} ${DEV}:1`);
  });

  it("warns once per operator that falls back", async () => {
    const r = await runPy(
      `import torch, warnings\nwarnings.simplefilter("always")\nx = torch.ones(3, device="${DEV}")\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter("always")\n    for _ in range(3): torch.sin(x)\nprint("N", sum("aten::sin" in str(m.message) for m in w))\n`,
    );
    expect(String(r.all)).toContain("N 1");
  });
});

describe("build: generated code and incremental rebuilds", () => {
  it("setup.py refuses stale generated files", async () => {
    const yaml = path.join(project, "backend.yaml");
    const before = readFileSync(yaml);
    appendFileSync(yaml, "# edited\n");
    try {
      const r = await execa(
        python,
        ["-m", "pip", "install", "--no-build-isolation", "--no-deps", "--target", site, "--upgrade", "."],
        {
          cwd: project,
          env: env(),
          reject: false,
          all: true,
        },
      );
      expect(r.exitCode).not.toBe(0);
      expect(String(r.all)).toMatch(/csrc\/generated\/ is stale.*opgen-backend gen/);
    } finally {
      writeFileSync(yaml, before);
    }
  }, 120_000);

  it("setup.py refuses a torch other than the pinned one, and code generated for another (Note [Pinned torch])", async () => {
    const have = (await discoverTorch(python)).versionTuple.join(".");
    const pip = () =>
      execa(python, ["-m", "pip", "install", "--no-build-isolation", "--no-deps", "--target", site, "--upgrade", "."], {
        cwd: project,
        env: env(),
        reject: false,
        all: true,
      });
    const pyproject = path.join(project, "pyproject.toml");
    const manifest = path.join(project, "csrc", "generated", "op_manifest.json");
    const [p0, m0] = [readFileSync(pyproject, "utf8"), readFileSync(manifest, "utf8")];
    try {
      expect(p0).toContain(`dependencies = ["torch==${have}"]`);
      writeFileSync(pyproject, p0.replace(`dependencies = ["torch==${have}"]`, 'dependencies = ["torch==2.99.0"]'));
      let r = await pip();
      expect(r.exitCode).not.toBe(0);
      expect(String(r.all)).toContain(`pinned to torch 2.99.0 (pyproject.toml), but this build uses torch ${have}`);
      writeFileSync(pyproject, p0);
      writeFileSync(manifest, m0.replace(/"torch_version": "[^"]*"/, '"torch_version": "2.99.0"'));
      r = await pip();
      expect(r.exitCode).not.toBe(0);
      expect(String(r.all)).toContain(`generated for torch 2.99.0, but this build uses torch ${have}`);
    } finally {
      writeFileSync(pyproject, p0);
      writeFileSync(manifest, m0);
    }
  }, 240_000);

  it("a rebuild after touching one kernel recompiles only that file", async () => {
    const kernel = path.join(project, "csrc", "aten", "Unary.cpp");
    const now = new Date();
    utimesSync(kernel, now, now);
    const again = await build(project, { python, jobs: 2, werror: true, target: site, log: () => {} });
    expect(again.compiled).toEqual(["csrc/aten/Unary.cpp"]);
    const r = await runPy(
      `import torch\nprint(torch.relu(torch.tensor([-1.0, 2.0], device="${DEV}")).cpu().tolist())\n`,
    );
    expect(String(r.all)).toContain("[0.0, 2.0]");
  }, 600_000);

  it("names a kernel that is declared but never defined", async () => {
    // What happens when backend.yaml lists an operator nobody implemented: the
    // extension links (shared libraries may have undefined symbols) and fails
    // to load. A small file recreates that without recompiling the registrations.
    const extra = path.join(project, "csrc", "kernels", "zz_missing.cpp");
    writeFileSync(
      extra,
      `#include "generated/PrivateUse1NativeFunctions.h"\nnamespace opgen_ref {\nat::Tensor never_defined(const at::Tensor& self);\nat::Tensor (*volatile keep)(const at::Tensor&) = &never_defined;\n}\n`,
    );
    try {
      await expect(build(project, { python, jobs: 2, werror: true, target: site, log: () => {} })).rejects.toThrow(
        /opgen_ref::never_defined\(at::Tensor const&\) is declared .* but not defined/,
      );
    } finally {
      rmSync(extra);
    }
  }, 600_000);
});

// Last, as it changes the project: what `coverage --model`, `--add` and
// `gen --stubs` do to a starter, through the functions those commands call.
describe("coverage --model -> --add -> gen --stubs -> build (issue 23)", () => {
  const model = path.resolve(import.meta.dirname, "../fixtures/models/coverage.py");

  it("lists the model's overloads the starter lacks; after --add and gen --stubs the project builds and registers them", async () => {
    const yamlPath = path.join(project, "backend.yaml");
    const before = readFileSync(yamlPath, "utf8");
    const { config, catalog, models, report } = await runModelCoverage({ yamlPath, models: [model], python });
    // The starter lists add, mm, mul, sum, relu and its runtime; the model needs more.
    const starter = new Set(config.supported.map((e) => e.name));
    expect(report.missing).toEqual(expect.arrayContaining(["addmm", "logit", "logit_backward", "silu", "tril"]));
    for (const n of report.missing) expect(starter.has(n), n).toBe(false);
    expect(report.ops.find((o) => o.name === "mm")).toMatchObject({ fate: "listed" });

    const added = addMissing(config, catalog, report, "--model coverage.py");
    expect(added.names).toEqual(report.missing);
    const after = readFileSync(yamlPath, "utf8").split("\n");
    // Only lines were inserted: the comment and one `  - name` per overload.
    const inserted = after.slice(added.line - 2, added.line - 1 + added.names.length);
    expect(inserted).toEqual([
      expect.stringMatching(/^ {2}# \d+ overloads added by/),
      ...added.names.map((n) => `  - ${n}`),
    ]);
    expect([...after.slice(0, added.line - 2), ...after.slice(added.line - 1 + added.names.length)].join("\n")).toBe(
      before,
    );
    const reloaded = loadBackendYaml(yamlPath, catalog);
    expect(
      computeModelCoverage(
        reloaded,
        catalog,
        models.flatMap((m) => m.cases),
      ).missing,
    ).toEqual([]);

    // The reference glue init copied defines all but logit's kernels.
    const g = await runGen({
      yamlPath,
      outDir: path.join(project, "csrc", "generated"),
      python,
      stubsDir: path.join(project, "csrc", "aten"),
    });
    const stubs = (g.stubs?.files ?? []).filter((f) => f.status === "created").map((f) => f.path);
    expect(stubs).toEqual(["logit.cpp", "logit_backward.cpp"]);

    const rebuilt = await build(project, { python, jobs: 2, werror: true, target: site, log: () => {} });
    expect(rebuilt.compiled).toEqual(expect.arrayContaining(["csrc/aten/logit.cpp", "csrc/aten/logit_backward.cpp"]));
    const r = await runPy(`
import json, torch, warnings
import ${PKG} as pkg
warnings.simplefilter("ignore")
R = {"registered": {n: torch._C._dispatch_has_kernel_for_dispatch_key("aten::" + n, "PrivateUse1") for n in ${JSON.stringify(added.names)}}}
x = torch.rand(3, 5) * 0.8 + 0.1
d = x.to("${DEV}")
pkg.reset_fallback_counts()
R["native"] = {
    "silu": torch.allclose(torch.nn.functional.silu(d).cpu(), torch.nn.functional.silu(x)),
    "tril": torch.equal(torch.tril(d).cpu(), torch.tril(x)),
    "softplus": torch.allclose(torch.nn.functional.softplus(d).cpu(), torch.nn.functional.softplus(x)),
}
R["fallbacks"] = pkg.fallback_counts()
try:
    torch.logit(d)
    R["stub"] = "no error"
except NotImplementedError as e:
    R["stub"] = str(e).splitlines()[0]
print("@@RESULT@@" + json.dumps(R))
`);
    const line = String(r.all)
      .split("\n")
      .find((l) => l.startsWith("@@RESULT@@"));
    expect(line, String(r.all)).toBeDefined();
    const R = JSON.parse(line!.slice("@@RESULT@@".length));
    expect(R.registered).toEqual(Object.fromEntries(added.names.map((n) => [n, true])));
    expect(R.native).toEqual({ silu: true, tril: true, softplus: true });
    expect(R.fallbacks).toEqual({});
    expect(R.stub).toBe(`logit is not implemented for ${DEV} yet (kernel stub written by opgen-backend)`);
  }, 900_000);
});
