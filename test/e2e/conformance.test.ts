/**
 * End to end: `opgen-backend test` against real PrivateUse1 backends built
 * from the scaffold.
 *
 * 1. the reference CPU backend (init + build): a full run completes and its
 *    JSON, JUnit and HTML agree; the HTML renders in headless Chromium;
 * 2. a test backend with deliberately broken kernels (wrong value, wrong
 *    dtype, segfault, hang, in-place returning a new tensor, out= ignoring
 *    out, in-place and out= returning a copy (inference mode shows it), a
 *    view that copies, a silent CPU fallback, a wrong gradient): each
 *    is classified under the right check and the healthy ops still pass;
 * 3. killing the runner mid-run and `--resume` == an uninterrupted run;
 * 4. two shards merged == one unsharded run;
 * 5. both backends installed in one interpreter: the second refuses to load.
 *
 * Backends are installed with `build --target` into a directory of their own
 * (never into the shared interpreter: an installed backend is autoloaded by
 * every `import torch`), which the runner gets on PYTHONPATH.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { mergeReports, parseReport } from "../../src/conformance/aggregate.js";
import { runTest, type TestOptions } from "../../src/conformance/driver.js";
import { toHtml, toJunit } from "../../src/conformance/formats.js";
import type { Report } from "../../src/conformance/types.js";
import { chromiumFlags, dumpDom, findChromium } from "../helpers/chromium.js";
import { cliIn, PYTHON } from "../helpers/cli.js";

const python = PYTHON;
const work = mkdtempSync(path.join(tmpdir(), "opgen-conformance-e2e-"));
// The OpInfo index takes ~30 s to build; every run here shares one.
const cacheDir = path.join(tmpdir(), "opgen-conformance-e2e-cache");

const cli = cliIn(work);

interface Built {
  readonly dir: string;
  readonly site: string;
}

async function initAndBuild(name: string, edit?: (dir: string) => void): Promise<Built> {
  const dir = path.join(work, name);
  const site = path.join(work, `${name}-site`);
  let r = await cli(["init", dir, "--name", name]);
  if (r.exitCode !== 0) throw new Error(`init failed:\n${r.all}`);
  edit?.(dir);
  r = await cli(["build", dir, "--python", python, "--target", site], { MAX_JOBS: "2" });
  if (r.exitCode !== 0) throw new Error(`build failed:\n${String(r.all).slice(-4000)}`);
  return { dir, site };
}

function withPythonPath<T>(site: string, f: () => Promise<T>): Promise<T> {
  const prev = process.env.PYTHONPATH;
  process.env.PYTHONPATH = prev ? `${site}${path.delimiter}${prev}` : site;
  return f().finally(() => {
    if (prev === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = prev;
  });
}

function opts(b: Built, extra: Partial<TestOptions>): TestOptions {
  return {
    projectDir: b.dir,
    python,
    selection: {},
    workers: 2,
    timeoutS: 20,
    seed: 0,
    maxSamples: 3,
    resume: false,
    cacheDir,
    quiet: true,
    ...extra,
  };
}

/**
 * Broken kernels, each a different fault; CPU compute copied back to the
 * device. They live in their own namespace (the project's backend.yaml is
 * switched to `cpp_namespace: opgen_broken`), and the project's healthy
 * starter operators forward to the reference kernels in opgen_ref.
 */
const BROKEN_KERNELS = `// Deliberately broken kernels for the conformance runner's e2e test.
#include "generated/PrivateUse1NativeFunctions.h"
#include <ATen/ATen.h>
#include <csignal>
#include <chrono>
#include <thread>

namespace opgen_ref {
at::Tensor add(const at::Tensor&, const at::Tensor&, const at::Scalar&);
at::Tensor mul(const at::Tensor&, const at::Tensor&);
at::Tensor mm(const at::Tensor&, const at::Tensor&);
at::Tensor relu(const at::Tensor&);
at::Tensor sum(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>);
at::Tensor& normal_(at::Tensor&, double, double, std::optional<at::Generator>);
at::Tensor& uniform_(at::Tensor&, double, double, std::optional<at::Generator>);
} // namespace opgen_ref

namespace opgen_broken {
namespace {
at::Tensor back(const at::Tensor& cpu, const at::Tensor& like) { return cpu.to(like.device()); }
}

// healthy: the reference kernels
at::Tensor add(const at::Tensor& a, const at::Tensor& b, const at::Scalar& alpha) { return opgen_ref::add(a, b, alpha); }
at::Tensor mul(const at::Tensor& a, const at::Tensor& b) { return opgen_ref::mul(a, b); }
at::Tensor mm(const at::Tensor& a, const at::Tensor& b) { return opgen_ref::mm(a, b); }
at::Tensor relu(const at::Tensor& a) { return opgen_ref::relu(a); }
at::Tensor sum(const at::Tensor& a, at::OptionalIntArrayRef d, bool k, std::optional<at::ScalarType> t) {
  return opgen_ref::sum(a, d, k, t);
}
at::Tensor& normal_(at::Tensor& a, double m, double s, std::optional<at::Generator> g) { return opgen_ref::normal_(a, m, s, g); }
at::Tensor& uniform_(at::Tensor& a, double f, double t, std::optional<at::Generator> g) { return opgen_ref::uniform_(a, f, t, g); }

// wrong value
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return back(at::sub(self.cpu(), other.cpu(), alpha) + 1, self);
}
// wrong dtype
at::Tensor abs(const at::Tensor& self) {
  return back(at::abs(self.cpu()).to(at::kDouble), self);
}
// segfault (floor: no other op's backward uses it, so only floor crashes)
at::Tensor floor(const at::Tensor& self) {
  std::raise(SIGSEGV);
  return self;
}
// hang
at::Tensor exp(const at::Tensor& self) {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  return self;
}
// in-place that returns a new tensor and leaves self alone
at::Tensor& mul_(at::Tensor& self, const at::Tensor& other) {
  static thread_local at::Tensor keep;
  keep = back(at::mul(self.cpu(), other.cpu()), self);
  return keep;
}
// Note [Identity under inference mode]: in-place and out= that write the right
// values but return a copy. Autograd's kernel returns self/out whatever the
// backend's returned, so only inference mode, where autograd steps aside,
// shows it (to the runner, and to users' code there).
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static thread_local at::Tensor keep;
  at::Tensor c = self.cpu();
  c.add_(other.cpu(), alpha);  // eager's checks and errors
  self.copy_(c);
  keep = back(c, self);
  return keep;
}
at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  static thread_local at::Tensor keep;
  at::Tensor c = out.cpu();
  at::mul_out(c, self.cpu(), other.cpu());  // eager's checks, errors and resize
  out.resize_(c.sizes());
  out.copy_(c);
  keep = back(c, out);
  return keep;
}
// out= that ignores out
at::Tensor& div_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  static thread_local at::Tensor keep;
  keep = back(at::div(self.cpu(), other.cpu()), self);
  return keep;
}
// a view that copies
at::Tensor t(const at::Tensor& self) {
  return back(self.cpu().t().contiguous(), self);
}
// correct forward, wrong backward
at::Tensor tanh(const at::Tensor& self) {
  return back(at::tanh(self.cpu()), self);
}
at::Tensor tanh_backward(const at::Tensor& grad_output, const at::Tensor& output) {
  return back(at::tanh_backward(grad_output.cpu(), output.cpu()) * 2, grad_output);
}
} // namespace opgen_broken
`;

const BROKEN_OPS = [
  "abs",
  "add_.Tensor",
  "div.out",
  "exp",
  "floor",
  "mul.out",
  "mul_.Tensor",
  "sub.Tensor",
  "t",
  "tanh",
  "tanh_backward",
];

let ref: Built | undefined;
let broken: Built | undefined;
let setupError: Error | undefined;

beforeAll(async () => {
  try {
    ref = await initAndBuild("refdev");
    broken = await initAndBuild("broken", (dir) => {
      const yamlFile = path.join(dir, "backend.yaml");
      const y = readFileSync(yamlFile, "utf8").replace(/supported:\n(?:\s+- .*\n)+/, (block) => {
        const have = block.split("\n").filter((l) => l.trim().startsWith("- "));
        const all = [...new Set([...have.map((l) => l.trim().slice(2)), ...BROKEN_OPS])].sort();
        return `supported:\n${all.map((o) => `  - ${o}`).join("\n")}\n`;
      });
      // The starter's vendor autograd and custom operators (the sections from
      // `autograd:` to the end) have their kernels in opgen_ref; this project
      // is about the broken ones.
      const starterOnly = y.replace(/^autograd:[\s\S]*$/m, "");
      writeFileSync(yamlFile, starterOnly.replace(/^cpp_namespace: .*$/m, "cpp_namespace: opgen_broken"));
      writeFileSync(path.join(dir, "csrc", "aten", "Broken.cpp"), BROKEN_KERNELS);
    });
    // A silent fallback: listed in the manifest, but no kernel registered.
    const mf = path.join(broken.dir, "csrc", "generated", "op_manifest.json");
    const m = JSON.parse(readFileSync(mf, "utf8"));
    m.operators.push({ name: "cos", kind: "functional", core: true, view: false, served_by: "kernel" });
    m.operators.sort((a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : 1));
    writeFileSync(path.join(work, "broken-manifest.json"), JSON.stringify(m, null, 2));
  } catch (e) {
    setupError = e as Error;
  }
}, 1_800_000);

function need(b: Built | undefined): Built {
  if (setupError) throw setupError;
  if (!b) throw new Error("backend was not built");
  return b;
}

function find(rep: Report, op: string, dtype: string, check: string) {
  return rep.results.find((r) => r.op === op && r.dtype === dtype && r.check === check);
}

describe("reference CPU backend", () => {
  it("a full run completes and JSON, JUnit, HTML and Markdown agree", async () => {
    const b = need(ref);
    const out = (f: string) => path.join(work, f);
    const r = await cli(
      [
        "test",
        b.dir,
        "--python",
        python,
        "--workers",
        "2",
        "--max-samples",
        "3",
        "--cache-dir",
        cacheDir,
        "--json",
        out("ref.json"),
        "--junit",
        out("ref.xml"),
        "--html",
        out("ref.html"),
        "--markdown",
        out("ref.md"),
        "--no-fail-on-problems",
      ],
      { PYTHONPATH: b.site },
    );
    expect(r.exitCode, String(r.all)).toBe(0);
    expect(String(r.all)).toMatch(/core ATen conformance \d+\/193/);
    const rep = parseReport(readFileSync(out("ref.json"), "utf8"), "ref.json");
    const s = rep.summary;
    expect(s.total).toBe(rep.results.length);
    expect(s.total).toBeGreaterThan(0);
    expect(s.passed + s.warned + s.failed + s.crashed + s.timed_out + s.skipped + s.xfail + s.xpass).toBe(s.total);
    expect(s.core_total).toBe(193);
    // every manifest op x claimed dtype has results
    for (const o of rep.ops)
      for (const d of o.dtypes) expect(rep.results.some((x) => x.op === o.op && x.dtype === d)).toBe(true);
    // the reference kernels are correct: relu passes values on float32 with its own kernel
    expect(find(rep, "relu", "float32", "values")?.status).toBe("pass");
    expect(find(rep, "relu", "float32", "fallback")?.status).toBe("pass");
    const xml = readFileSync(out("ref.xml"), "utf8");
    expect(xml.match(/<testcase /g)?.length).toBe(s.total);
    expect(xml).toContain(`tests="${s.total}" failures="${s.failed + s.xpass}" errors="${s.crashed + s.timed_out}"`);
    expect(xml).toBe(toJunit(rep));
    const html = readFileSync(out("ref.html"), "utf8");
    expect(html).toBe(toHtml(rep));
    expect(html).toContain(`<td data-key="total">${s.total}</td>`);
    expect(readFileSync(out("ref.md"), "utf8")).toContain(`${s.core_passed}/193`);
  }, 900_000);

  it("the HTML report renders in headless Chromium", async () => {
    const chromium = findChromium();
    const html = path.join(work, "ref.html");
    expect(existsSync(html)).toBe(true);
    const flags = chromiumFlags();
    const dom = await dumpDom(`file://${html}`);
    const rep = parseReport(readFileSync(path.join(work, "ref.json"), "utf8"), "ref.json");
    expect(dom).toContain("Core ATen conformance");
    expect(dom).toContain('id="heatmap"');
    expect(dom.match(/<td class="c" data-op=/g)?.length).toBe(
      new Set(rep.results.map((r) => `${r.op}/${r.dtype}`)).size,
    );
    const png = path.join(work, "ref.png");
    const shot = await execa(chromium, [...flags, `--screenshot=${png}`, "--window-size=1280,2000", `file://${html}`], {
      reject: false,
      timeout: 120_000,
    });
    expect(shot.exitCode, String(shot.stderr)).toBe(0);
    expect(readFileSync(png).subarray(1, 4).toString()).toBe("PNG");
  }, 300_000);
});

describe("backend with broken kernels", () => {
  let rep: Report;

  beforeAll(async () => {
    const b = need(broken);
    const r = await withPythonPath(b.site, () =>
      runTest(
        opts(b, {
          manifest: path.join(work, "broken-manifest.json"),
          selection: { dtypes: ["float32"] },
          timeoutS: 10,
          results: path.join(work, "broken.jsonl"),
          json: path.join(work, "broken.json"),
        }),
      ),
    );
    rep = r.report;
  }, 900_000);

  it.each<[string, string, string]>([
    ["wrong value", "sub.Tensor", "values"],
    ["wrong dtype", "abs", "dtype"],
    ["segfault", "floor", "values"],
    ["hang", "exp", "values"],
    ["in-place returning a new tensor", "mul_.Tensor", "inplace"],
    ["out= ignoring out", "div.out", "out"],
    ["in-place returning a copy (only inference mode shows it)", "add_.Tensor", "inplace"],
    ["out= returning a copy (only inference mode shows it)", "mul.out", "out"],
    ["view that copies", "t", "view"],
    ["silent CPU fallback", "cos", "fallback"],
    ["wrong gradient", "tanh", "gradients"],
  ])("%s: %s fails %s", (_what, op, check) => {
    const want = op === "floor" ? "crash" : op === "exp" ? "timeout" : "fail";
    const r = find(rep, op, "float32", check);
    expect(r, `${op} ${check}: ${JSON.stringify(rep.results.filter((x) => x.op === op))}`).toBeDefined();
    expect(r!.status).toBe(want);
    expect(typeof r!.seed).toBe("number");
    expect(typeof r!.sample).toBe("number");
  });

  it("classifies each fault under its own check only", () => {
    const bad = (op: string) =>
      rep.results
        .filter((r) => r.op === op && r.dtype === "float32" && !["pass", "skip", "warn"].includes(r.status))
        .map((r) => r.check);
    expect(bad("abs")).toEqual(["dtype"]);
    // self is left alone (inplace); the runner sees the kernel's own result
    // (inference tensors under inference mode), whose values may pass
    expect(bad("mul_.Tensor")).toContain("inplace");
    expect(bad("mul_.Tensor").filter((c) => c !== "inplace" && c !== "values")).toEqual([]);
    expect(bad("t")).toEqual(["view"]);
    // right values, wrong tensor returned: the identity check alone fails
    expect(bad("add_.Tensor")).toEqual(["inplace"]);
    expect(bad("mul.out")).toEqual(["out"]);
    const msgs = (op: string, check: string) =>
      rep.results.filter((r) => r.op === op && r.check === check && r.status === "fail").map((r) => r.message);
    expect(msgs("add_.Tensor", "inplace").join("\n")).toContain("returned a new tensor instead of self");
    expect(msgs("mul.out", "out").join("\n")).toContain("returned a new tensor instead of 'out'");
    expect(bad("cos")).toEqual(["fallback"]);
    expect(bad("tanh")).toEqual(["gradients"]);
  });

  it("the copy-returning plants' ops pass on the reference backend (its derived add_ and mul.out return self/out)", async () => {
    const b = need(ref);
    const healthy = (
      await withPythonPath(b.site, () =>
        runTest(opts(b, { selection: { globs: ["add_.Tensor", "mul.out"] }, json: path.join(work, "identity.json") })),
      )
    ).report;
    for (const [op, check] of [
      ["add_.Tensor", "inplace"],
      ["mul.out", "out"],
    ]) {
      const rs = healthy.results.filter((x) => x.op === op && x.check === check);
      expect(rs.length, op).toBeGreaterThan(3);
      expect(rs.filter((x) => x.status !== "pass")).toEqual([]);
    }
  }, 900_000);

  it("keeps every other op's results", () => {
    for (const op of ["add.Tensor", "mul.Tensor", "relu"]) {
      const rs = rep.results.filter((r) => r.op === op && r.dtype === "float32");
      expect(rs.length, op).toBeGreaterThan(3);
      expect(
        rs.filter((r) => !["pass", "skip", "warn"].includes(r.status)),
        op,
      ).toEqual([]);
    }
    for (const o of rep.ops)
      expect(
        rep.results.some((r) => r.op === o.op),
        o.op,
      ).toBe(true);
  });
});

/**
 * Note [One PrivateUse1 backend] (the scaffold's _torch_<device>_autoload.py):
 * both backends built here installed in one interpreter. Before, a plain
 * `import torch` ended in std::terminate ("Tried to register multiple backend
 * fallbacks for the same dispatch key AutocastPrivateUse1").
 */
describe("two backends in one interpreter", () => {
  async function py(code: string, autoload: boolean) {
    const a = need(ref);
    const b = need(broken);
    const prelude = [
      "import json, sys, warnings",
      "warnings.simplefilter('always')",
      "W = warnings.catch_warnings(record=True).__enter__()",
      "def refused(pkg):",
      "    try:",
      "        __import__(pkg)",
      "    except ImportError as e:",
      "        return [type(e).__name__, str(e)]",
      "    return None",
      "",
    ].join("\n");
    const r = await execa(python, ["-c", prelude + code], {
      cwd: work,
      env: {
        PYTHONPATH: [a.site, b.site].join(path.delimiter),
        TORCH_DEVICE_BACKEND_AUTOLOAD: autoload ? "1" : "0",
      },
      reject: false,
      all: true,
    });
    expect(r.exitCode, String(r.all)).toBe(0);
    return JSON.parse(String(r.stdout).trim().split("\n").at(-1)!);
  }

  it("import torch loads the first, warns about the second, and importing the second then refuses", async () => {
    const got = await py(
      [
        "import torch",
        "x = torch.arange(4.0, device='refdev') * 2",
        "print(json.dumps({'name': torch._C._get_privateuse1_backend_name(), 'x': x.cpu().tolist(), 'dev': str(x.device),",
        "  'warned': [str(w.message) for w in W if issubclass(w.category, RuntimeWarning) and 'was not loaded' in str(w.message)],",
        "  'refused': refused('torch_broken'), 'broken_C': 'torch_broken._C' in sys.modules}))",
      ].join("\n"),
      true,
    );
    expect(got.name).toBe("refdev");
    expect(got.x).toEqual([0, 2, 4, 6]);
    expect(got.dev).toBe("refdev:0");
    expect(got.warned).toEqual([expect.stringContaining("torch_broken was not loaded by torch's backend autoload")]);
    expect(got.warned[0]).toContain("'refdev' (torch_refdev) holds it already");
    expect(got.refused[0]).toBe("PrivateUse1InUse");
    expect(got.refused[1]).toContain("torch_broken cannot load: PyTorch allows one PrivateUse1 backend per process");
    expect(got.broken_C).toBe(false);
  }, 300_000);

  it("without autoload, importing the second raises an ImportError naming the first before its extension loads", async () => {
    const got = await py(
      [
        "import torch_broken, torch",
        "y = torch.ones(3, device='broken') + 1",
        "print(json.dumps({'refused': refused('torch_refdev'), 'refdev_C': 'torch_refdev._C' in sys.modules,",
        "  'y': y.cpu().tolist()}))",
      ].join("\n"),
      false,
    );
    expect(got.refused[0]).toBe("PrivateUse1InUse");
    expect(got.refused[1]).toContain("torch_refdev cannot load");
    expect(got.refused[1]).toContain("'broken' (torch_broken) holds it already");
    expect(got.refdev_C).toBe(false);
    expect(got.y).toEqual([2, 2, 2]);
  }, 300_000);
});

describe("resume and shards", () => {
  const sel = { dtypes: ["float32", "int64"] };
  let whole: Report;

  beforeAll(async () => {
    const b = need(ref);
    whole = (
      await withPythonPath(b.site, () => runTest(opts(b, { selection: sel, results: path.join(work, "whole.jsonl") })))
    ).report;
  }, 900_000);

  it("killing the runner mid-run and --resume equals an uninterrupted run", async () => {
    const b = need(ref);
    const results = path.join(work, "killed.jsonl");
    const run = withPythonPath(b.site, () => runTest(opts(b, { selection: sel, results, workers: 1 })));
    // wait for some results, then SIGKILL the runner (its workers die with it: PR_SET_PDEATHSIG)
    const t0 = Date.now();
    let killed = false;
    while (Date.now() - t0 < 600_000) {
      await new Promise((r) => setTimeout(r, 200));
      const lines = existsSync(results) ? readFileSync(results, "utf8").split("\n").length : 0;
      if (lines > 6) {
        const pid = runnerPid(`${results}.config.json`);
        if (pid) {
          process.kill(pid, "SIGKILL");
          killed = true;
          break;
        }
      }
    }
    expect(killed).toBe(true);
    await expect(run).rejects.toThrow(/conformance runner failed/);
    const partial = readFileSync(results, "utf8").split("\n").length;
    const resumed = (await withPythonPath(b.site, () => runTest(opts(b, { selection: sel, results, resume: true }))))
      .report;
    expect(readFileSync(results, "utf8").split("\n").length).toBeGreaterThan(partial);
    expect(resumed.results).toEqual(whole.results);
    expect(resumed.summary).toEqual(whole.summary);
  }, 900_000);

  it("two shards merged equal one unsharded run", async () => {
    const b = need(ref);
    const shard = async (i: number) =>
      (
        await withPythonPath(b.site, () =>
          runTest(
            opts(b, {
              selection: { ...sel, shard: { index: i, count: 2 } },
              workers: 1,
              json: path.join(work, `shard${i}.json`),
            }),
          ),
        )
      ).report;
    const s1 = await shard(1);
    const s2 = await shard(2);
    expect(s1.ops.length + s2.ops.length).toBe(whole.ops.length);
    // through the CLI, as a CI job would
    const r = await cli([
      "report",
      "merge",
      path.join(work, "shard1.json"),
      path.join(work, "shard2.json"),
      "--json",
      path.join(work, "merged.json"),
      "--no-fail-on-problems",
    ]);
    expect(r.exitCode, String(r.all)).toBe(0);
    const merged = parseReport(readFileSync(path.join(work, "merged.json"), "utf8"), "merged.json");
    expect(merged.results).toEqual(whole.results);
    expect(merged.summary).toEqual(whole.summary);
    expect(
      mergeReports([
        { file: "1", report: s1 },
        { file: "2", report: s2 },
      ]).results,
    ).toEqual(whole.results);
  }, 900_000);
});

/** The runner process started for this config (matched by its unique config path). */
function runnerPid(configFile: string): number | undefined {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (cmd.includes("run") && cmd.includes(configFile) && cmd.includes("opgen_conformance")) return Number(d);
    } catch {
      // gone
    }
  }
  return undefined;
}
