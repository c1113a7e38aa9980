/**
 * The reference backend (backends/ref) judged by our own runner, built the
 * way a vendor builds it: `init --kernels all` -> `build --werror` ->
 * `opgen-backend test`. Required green: every registered overload passes on
 * every claimed dtype, except what conformance-expectations.yaml lists with a
 * reason (its target is empty). Also: the CPU driver's protected device
 * memory makes host code that reads a device pointer fault.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseReport } from "../../src/conformance/aggregate.js";
import type { BenchDiff, BenchReport } from "../../src/conformance/bench-report.js";
import type { Report } from "../../src/conformance/types.js";
import { isProblem } from "../../src/vocab.js";
import { dumpDom } from "../helpers/chromium.js";
import { cliIn, PYTHON, ROOT } from "../helpers/cli.js";

const python = PYTHON;
const work = mkdtempSync(path.join(tmpdir(), "opgen-reference-e2e-"));
const project = path.join(work, "refdev");
const site = path.join(work, "site");
const cacheDir = path.join(tmpdir(), "opgen-conformance-e2e-cache");

const cli = cliIn(work);

async function py(code: string, env: Record<string, string> = {}) {
  return execa(python, ["-c", code], { cwd: work, reject: false, all: true, env: { PYTHONPATH: site, ...env } });
}

beforeAll(async () => {
  let r = await cli(["init", project, "--name", "refdev", "--kernels", "all"]);
  if (r.exitCode !== 0) throw new Error(`init failed:\n${r.all}`);
  r = await cli(["build", project, "--python", python, "--target", site, "--werror"], {
    MAX_JOBS: "2",
    // The shipped kernel library, vector-width clones included (vitest.config.ts).
    OPGEN_CXXFLAGS: process.env.OPGEN_SHIPPED_CXXFLAGS ?? "",
  });
  if (r.exitCode !== 0) throw new Error(`build failed:\n${String(r.all).slice(-6000)}`);
}, 1_800_000);

describe("backends/ref, all kernels", () => {
  it("passes conformance on every registered overload and claimed dtype", async () => {
    const json = path.join(work, "ref.json");
    const r = await cli(
      ["test", project, "--python", python, "--workers", "2", "--cache-dir", cacheDir, "--json", json],
      { PYTHONPATH: site },
    );
    const rep = parseReport(readFileSync(json, "utf8"), "ref.json");
    const bad = rep.results
      .filter((x) => isProblem(x.status))
      .map((x) => `${x.op} ${x.dtype} ${x.check}: ${x.status} ${x.message ?? ""}`.slice(0, 300));
    expect(bad, String(r.all).slice(-3000)).toEqual([]);
    expect(r.exitCode).toBe(0);
    // Core ATen as users meet it (Note [Core overloads through their decomposition]): the 10
    // CompositeImplicitAutograd core overloads ran through their decompositions, none on the fallback.
    // (a core op with an XFAIL result, e.g. gelu's AVX512 extremes, does not count as passing)
    expect(rep.summary).toMatchObject({ core_total: 193, core_decomposed: 10, core_decomposed_fallback: 0 });
    expect(String(r.all)).toMatch(
      /core ATen conformance \d+\/193 \([\d.]+%\): \d+ kernels, 10 through their decomposition/,
    );
    const registered = rep.ops.map((o) => o.op);
    // Every aten overload backend.yaml lists (supported, runtime, and the op: of autograd: mappings).
    const listed = readFileSync(path.join(ROOT, "backends", "ref", "backend.yaml"), "utf8")
      .split("\n")
      .map((l) => /^ {2}- (?:op: )?([\w.]+)$/.exec(l)?.[1])
      .filter((op): op is string => op !== undefined);
    expect(listed).toContain("gelu");
    // The custom operators were checked against their references, gradients included.
    expect(String(r.all)).toMatch(/^custom pass +refdev::fused_bias_gelu float64/m);
    // fused_rms_norm's gradients come from backend.yaml's formulas (Note [Backward formulas]).
    expect(String(r.all)).toMatch(/^custom pass +refdev::fused_rms_norm float64/m);
    expect(String(r.all)).not.toMatch(/^custom (?:fail|skip)/m);
    for (const op of listed) expect(registered, op).toContain(op);
    // Every op ran on its own kernel on at least one dtype: its values matched
    // eager's, or, where values are never compared (random ops, and the
    // runtime's empty/resize_/set_), it passed the fallback check when it has
    // one (it did not run on CPU) and the device check otherwise.
    const passed = (op: string, check: string) =>
      rep.results.some((x) => x.op === op && x.status === "pass" && x.check === check);
    const uncompared = (op: string) =>
      rep.results.some((x) => x.op === op && x.check === "values" && /^nondeterministic/.test(x.message ?? ""));
    const hasFallbackCheck = (op: string) => rep.results.some((x) => x.op === op && x.check === "fallback");
    // The runner cannot make a Storage or a Stream argument; set_.source_Tensor
    // runs the same runtime kernel (Minimal.cpp's set_storage_offset), the
    // project's test_set_from_storage_matches_cpu calls both with storages,
    // and test_device_module_streams_and_properties calls record_stream.
    const unsampled = new Set(["set_.source_Storage", "set_.source_Storage_storage_offset", "record_stream"]);
    // An uncompared op ran on its kernel when its outputs' dtype or shape passed.
    const ran = (op: string) => passed(op, "device") || passed(op, "dtype") || passed(op, "shape");
    for (const op of listed.filter((o) => !unsampled.has(o))) {
      const ok = !uncompared(op) ? passed(op, "values") : hasFallbackCheck(op) ? passed(op, "fallback") : ran(op);
      expect(ok, op).toBe(true);
    }
  }, 1_800_000);

  it("test --compile runs the samples through torch.compile with Inductor, a compile failure its own status", async () => {
    // Note [Compiled mode] (python/opgen_conformance/compiled.py). With no expectations,
    // so that Inductor's own refusal shows as it is: torch 2.13's Inductor has no C++
    // type for float8_e8m0fnu, so the runner's fill_ of such a tensor cannot compile
    // (eager CPU fills it); the project's file lists it as a compiled-mode expectation.
    const none = path.join(work, "no-expectations.yaml");
    writeFileSync(none, "expectations: []\n");
    const out = (f: string) => path.join(work, f);
    const r = await cli(
      [
        "test",
        project,
        "--python",
        python,
        "--compile",
        "--ops",
        "add.Tensor,fill_.Scalar",
        "--dtypes",
        "float32",
        "--max-samples",
        "2",
        "--workers",
        "2",
        "--cache-dir",
        cacheDir,
        "--expectations",
        none,
        "--results",
        out("compiled.jsonl"),
        "--json",
        out("compiled.json"),
        "--junit",
        out("compiled.xml"),
      ],
      { PYTHONPATH: site },
    );
    expect(r.exitCode, String(r.all).slice(-3000)).toBe(1);
    const rep = parseReport(readFileSync(out("compiled.json"), "utf8"), "compiled.json");
    expect(rep.meta.compiled).toBe(true);
    expect(rep.results.every((x) => x.compiled === true)).toBe(true);
    const find = (op: string, check: string) => rep.results.find((x) => x.op === op && x.check === check);
    // real compiled results: Inductor's kernels on the device, as eager CPU
    for (const check of ["compile", "errors", "values", "dtype", "shape", "device", "gradients"]) {
      expect(find("add.Tensor", check)?.status, check).toBe("pass");
    }
    expect(find("fill_.Scalar", "inplace")?.status).toBe("pass");
    const failedCompile = find("fill_.Scalar", "compile");
    expect(failedCompile?.status).toBe("compile-failed");
    expect(failedCompile?.message).toBe("KeyError: torch.float8_e8m0fnu");
    expect(failedCompile?.input).toMatch(/float8_e8m0fnu/);
    expect(rep.summary.compile_failed).toBe(1);
    expect(rep.summary.failed).toBe(0);
    expect(String(r.all)).toMatch(/^COMPILE-FAILED fill_\.Scalar float32 compile \[compiled\]: KeyError/m);
    expect(String(r.all)).toMatch(/opgen-backend: conformance: 1 failed to compile$/m);
    expect(readFileSync(out("compiled.xml"), "utf8")).toMatch(
      /name="float32\.compile \[compiled\]"><failure type="COMPILE-FAILED" message="KeyError: torch\.float8_e8m0fnu"/,
    );
  }, 300_000);

  it("random ops are reproducible under torch.manual_seed, fresh on each call, and well formed", async () => {
    // The runner compares no values of nondeterministic ops; these are their checks.
    const r = await py(
      [
        "import torch",
        "D = 'refdev'",
        "def draw():",
        "    return (torch.rand(64, device=D).cpu(), torch.randn(64, device=D).cpu(),",
        "            torch.randperm(100, device=D).cpu(), torch.native_dropout(torch.ones(256, device=D), 0.25, True))",
        "torch.manual_seed(3); a = draw(); b = draw(); torch.manual_seed(3); c = draw()",
        "for x, y, z in zip(a[:3], b[:3], c[:3]):",
        "    assert torch.equal(x, z) and not torch.equal(x, y)",
        "out, mask = (t.cpu() for t in c[3])",
        "assert torch.equal(mask, a[3][1].cpu()) and mask.dtype == torch.bool and 0 < mask.sum() < 256",
        "assert torch.equal(out, mask.float().mul_(1 / 0.75))",
        "assert sorted(c[2].tolist()) == list(range(100))",
        "u = torch.rand(100000, device=D).cpu()",
        "assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01",
        "print('ok')",
      ].join("\n"),
    );
    expect(r.all).toContain("ok");
    expect(r.exitCode).toBe(0);
  }, 120_000);

  it("the project's own test suite passes with every reference kernel registered", async () => {
    const r = await execa(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
      cwd: project,
      reject: false,
      all: true,
      env: { PYTHONPATH: site },
    });
    expect(r.exitCode, String(r.all).slice(-4000)).toBe(0);
    expect(String(r.all)).toMatch(/\d+ passed/);
  }, 900_000); // tests/test_inductor.py compiles C++ kernels, test_distributed.py spawns ranks

  it("pooling's bad and edge-case calls raise eager CPU's class and text, or match its results (269 cases)", async () => {
    const script = path.join(ROOT, "test", "fixtures", "reference", "pooling_errors.py");
    const r = await execa(python, [script, "refdev"], {
      cwd: work,
      reject: false,
      all: true,
      env: { PYTHONPATH: site },
    });
    expect(r.exitCode, String(r.all).slice(-4000)).toBe(0);
    const m = /^(\d+)\/(\d+) same/m.exec(String(r.all));
    expect(m?.[1]).toBe(m?.[2]);
    expect(Number(m?.[2])).toBeGreaterThanOrEqual(269);
  }, 300_000);

  it("host code that reads device memory faults (protected device memory)", async () => {
    const read = await py(
      "import ctypes, torch\nx = torch.ones(4, device='refdev')\nprint(x.cpu().tolist(), flush=True)\n" +
        "print(ctypes.c_float.from_address(x.data_ptr()).value)\n",
    );
    expect(read.all).toContain("[1.0, 1.0, 1.0, 1.0]");
    expect(read.signal ?? "").toBe("SIGSEGV");
  }, 120_000);

  it("the read faults under page protection too, and from another host thread (Note [Protection keys])", async () => {
    const pages = await py(
      "import ctypes, torch\nx = torch.ones(4, device='refdev')\nprint(x.cpu().tolist(), flush=True)\n" +
        "print(ctypes.c_float.from_address(x.data_ptr()).value)\n",
      { REF_DRIVER_PROTECTION: "pages" },
    );
    expect(pages.all).toContain("[1.0, 1.0, 1.0, 1.0]");
    expect(pages.signal ?? "").toBe("SIGSEGV");
    // Key windows are per thread: a thread that opens none faults while the
    // main thread computes.
    const other = await py(
      [
        "import ctypes, threading, torch",
        "x = torch.ones(4, device='refdev')",
        "def read(): print(ctypes.c_float.from_address(x.data_ptr()).value, flush=True)",
        "t = threading.Thread(target=read); print('start', flush=True); t.start(); t.join()",
      ].join("\n"),
    );
    expect(other.all).toContain("start");
    expect(other.signal ?? "").toBe("SIGSEGV");
  }, 120_000);

  it("a kernel split over the library's worker threads reaches its operands from each of them", async () => {
    // 2^21 elements on 2 threads: parallel_for hands chunks to a worker, which
    // takes the caller's access (refAccessThreadBegin) or faults.
    const r = await py(
      [
        "import torch",
        "torch.set_num_threads(2)",
        "a = torch.arange(1 << 21, dtype=torch.float32)",
        "d = torch.ones(1 << 21, device='refdev') + a.to('refdev')",
        "assert torch.equal(d.cpu(), a + 1)",
        "print('ok')",
      ].join("\n"),
    );
    expect(r.all).toContain("ok");
    expect(r.exitCode).toBe(0);
  }, 120_000);

  it("the same read works when protection is switched off (the fault is the guard's, not a bad pointer)", async () => {
    const read = await execa(
      python,
      [
        "-c",
        "import ctypes, torch\nx = torch.ones(4, device='refdev')\nprint(ctypes.c_float.from_address(x.data_ptr()).value)\n",
      ],
      { cwd: work, reject: false, all: true, env: { PYTHONPATH: site, REF_DRIVER_UNPROTECTED: "1" } },
    );
    expect(read.exitCode, read.all).toBe(0);
    expect(read.stdout.trim()).toBe("1.0");
  }, 120_000);
});

describe("backends/ref, real models (issue 23)", () => {
  it("runs the whole transformers zoo natively: no fallback, every case matching by the precision rule", async () => {
    const json = path.join(work, "zoo.json");
    const html = path.join(work, "zoo.html");
    const r = await cli(
      [
        "test",
        project,
        "--python",
        python,
        "--model",
        "zoo",
        "--workers",
        "2",
        "--results",
        path.join(work, "zoo.jsonl"),
        "--json",
        json,
        "--html",
        html,
      ],
      { PYTHONPATH: site },
    );
    const rep = parseReport(readFileSync(json, "utf8"), "zoo.json");
    const models = rep.models ?? [];
    expect(models.length).toBeGreaterThanOrEqual(20);
    // An XFAIL only where backends/ref's expectations file names the case (each with its reason).
    const listed = readFileSync(path.join(ROOT, "backends", "ref", "conformance-expectations.yaml"), "utf8");
    const xfailed = new Set(
      rep.results.filter((x) => x.status === "xfail" && listed.includes(`op: "${x.op}"`)).map((x) => x.op),
    );
    const bad = rep.results
      .filter((x) => !["pass", "skip"].includes(x.status) && !xfailed.has(x.op))
      .map((x) => `${x.op} ${x.check}: ${x.status} ${x.message}`.slice(0, 400));
    expect(bad, String(r.all).slice(-3000)).toEqual([]);
    expect(r.exitCode).toBe(0);
    for (const m of models) {
      expect(m.fallback, m.name).toEqual({});
      expect(
        m.ops.filter((o) => o.served === "fallback").map((o) => o.name),
        m.name,
      ).toEqual([]);
      // forward and backward both ran on the device, on its own kernels
      expect(
        m.ops.some((o) => o.served === "kernel" && o.backward > 0),
        m.name,
      ).toBe(true);
      expect(m.time_s?.device ?? 0, m.name).toBeGreaterThan(0);
    }
    // The models section, as a person sees it in a browser.
    const dom = await dumpDom(`file://${html}`);
    expect(dom).toContain(`<h2 id="models">Models (${models.length})</h2>`);
    expect([...dom.matchAll(/<tr class="model-row" data-case="model:zoo:[\w]+" data-status="pass">/g)]).toHaveLength(
      models.length,
    );
    expect(dom).toMatch(/<p id="models-line">\d+\/\d+ model cases match eager CPU, 0 use the CPU fallback; step time/);
  }, 1_200_000);

  it("names a kernel planted wrong for one shape (softmax over 17): the first divergent op, and a replay that reproduces it", async () => {
    const planted = path.join(ROOT, "test", "fixtures", "models", "planted_softmax.py");
    const json = path.join(work, "planted.json");
    const r = await cli(
      [
        "test",
        project,
        "--python",
        python,
        "--model",
        planted,
        "--results",
        path.join(work, "planted.jsonl"),
        "--json",
        json,
      ],
      { PYTHONPATH: site },
    );
    expect(r.exitCode, String(r.all).slice(-3000)).toBe(1);
    const rep = parseReport(readFileSync(json, "utf8"), "planted.json");
    const [c] = rep.models ?? [];
    expect(c?.status).toBe("fail");
    expect(c?.divergence?.op).toBe("_softmax");
    expect(c?.divergence?.phase).toBe("forward");
    expect(c?.divergence?.inputs).toBe("float32[2, 17, 17]");
    const failing = rep.results.find((x) => x.op === "model:planted_softmax:attention_17" && x.status === "fail");
    expect(failing?.message).toMatch(/^first divergent op: _softmax \(forward/);
    // the printed one-line rerun reproduces it alone, on the device
    const line = /^rerun model:planted_softmax:attention_17's _softmax alone: (.*)$/m.exec(String(r.all))?.[1];
    expect(line, String(r.all).slice(-2000)).toBeDefined();
    const replay = await execa("bash", ["-c", String(line)], { cwd: work, reject: false, all: true });
    expect(replay.exitCode, replay.all).toBe(1);
    expect(replay.stdout).toMatch(/^fail: less accurate than eager CPU/);
  }, 600_000);
});

describe("backends/ref, PyTorch's own tests (test --upstream, issue 24)", () => {
  // The fixture files (test/fixtures/upstream/test/, in upstream's style) from a
  // local server standing in for raw.githubusercontent.com: nothing is fetched
  // from outside. The server counts what it is asked for.
  const fixtures = path.join(ROOT, "test", "fixtures", "upstream");
  const asked: string[] = [];
  let server: Server;
  let base = "";
  const upstreamCache = path.join(work, "upstream-cache");
  const upstream = (args: string[], env: Record<string, string> = {}) =>
    cli(["test", project, "--python", python, "--cache-dir", cacheDir, "--upstream", ...args], {
      PYTHONPATH: site,
      OPGEN_UPSTREAM_URL: base,
      OPGEN_CACHE_DIR: upstreamCache,
      ...env,
    });
  const byTest = (rep: Report) =>
    Object.fromEntries(
      rep.results
        .filter((x) => x.op.startsWith("upstream:"))
        .map((x) => [x.op.slice("upstream:".length).replace(/^.*::/, ""), x]),
    );

  beforeAll(async () => {
    server = createServer((req, res) => {
      // /<commit>/test/<file>
      const m = /^\/([0-9a-f]{40})\/(test\/[\w./-]+)$/.exec(req.url ?? "");
      asked.push(req.url ?? "");
      const file = m ? path.join(fixtures, m[2]!) : "";
      if (!m || !existsSync(file)) {
        res.writeHead(404).end("not found");
        return;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end(readFileSync(file));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("fetches the files and their sibling imports, runs them on the device, isolates a crash and a hang, and reports each file", async () => {
    const out = {
      json: path.join(work, "up.json"),
      junit: path.join(work, "up.xml"),
      html: path.join(work, "up.html"),
      markdown: path.join(work, "up.md"),
    };
    const r = await upstream(
      [
        "test_fixture_basic.py,test_fixture_ops.py::TestFixtureOps,test_fixture_missing.py",
        "--timeout",
        "20",
        "--results",
        path.join(work, "up.jsonl"),
        ...Object.entries(out).flatMap(([k, v]) => [`--${k}`, v]),
      ],
      { FIXTURE_HANG: "1" },
    );
    const all = String(r.all);
    expect(r.exitCode, all.slice(-3000)).toBe(1);
    // fetched at torch's own commit, with the sibling helper; the missing one asked for and said
    const commit = (await py("import torch; print(torch.version.git_version)")).stdout.trim();
    expect(asked.sort()).toEqual(
      [
        "fixture_absent.py",
        "fixture_common.py",
        "test_fixture_basic.py",
        "test_fixture_missing.py",
        "test_fixture_ops.py",
      ].map((f) => `/${commit}/test/${f}`),
    );
    expect(existsSync(path.join(upstreamCache, "upstream", String(commit), "test", "fixture_common.py"))).toBe(true);
    const rep = parseReport(readFileSync(out.json, "utf8"), "up.json");
    const t = byTest(rep);
    // device selection through torch's switch: only the PrivateUse1 classes, named for the device
    const ids = rep.results.filter((x) => x.op.includes("::")).map((x) => x.op);
    expect(ids.length).toBeGreaterThanOrEqual(14);
    for (const id of ids) expect(id).toMatch(/::Test\w+PRIVATEUSE1::test_\w+_refdev(_float32|_int64)?$/);
    expect(ids.some((id) => id.includes("TestFixtureOther"))).toBe(false); // ::TestFixtureOps only
    expect(t.test_add_refdev_float32?.status).toBe("pass");
    expect(t.test_add_refdev_int64?.status).toBe("pass");
    expect(t.test_transpose_is_view_refdev?.status).toBe("pass");
    // @onlyNativeDeviceTypes runs: the device package is imported before
    // torch.testing._internal, whose NATIVE_DEVICES names the PrivateUse1 backend
    expect(t.test_native_only_refdev?.status).toBe("pass");
    expect(t.test_cpu_only_refdev?.status).toBe("skip");
    expect(t.test_wrong_on_purpose_refdev?.status).toBe("fail");
    expect(t.test_wrong_on_purpose_refdev?.message).toMatch(/^AssertionError: Scalars are not/);
    // the crash is the test's, and the rest of the file ran after it
    expect(t.test_crashes_the_process_refdev?.status).toBe("crash");
    expect(t.test_crashes_the_process_refdev?.message).toMatch(
      /died \(SIGSEGV\).*Fatal Python error: Segmentation fault/,
    );
    expect(t.test_zz_after_the_crash_refdev?.status).toBe("pass");
    expect(t.test_hangs_refdev?.status).toBe("timeout");
    // fallback accounting: the op under test on CPU is no pass; another op on CPU is recorded
    expect(t.test_special_airy_ai_refdev?.status).toBe("warn");
    expect(t.test_special_airy_ai_refdev?.message).toMatch(/^passed on CPU: .*aten::special_airy_ai\.out \(1\)$/);
    expect(t.test_sum_after_airy_refdev?.status).toBe("pass");
    expect(t.test_compare_cpu_abs_refdev_float32?.status).toBe("pass");
    expect(t.test_compare_cpu_neg_refdev_float32?.status).toBe("pass");
    expect(t.test_compare_cpu_special_airy_ai_refdev_float32?.status).toBe("warn");
    const files = Object.fromEntries((rep.upstream?.files ?? []).map((f) => [f.file, f]));
    const basic = files["test_fixture_basic.py"]!;
    expect(basic.counts).toMatchObject({
      passed: 6,
      passed_on_cpu: 1,
      failed: 1,
      crashed: 1,
      timed_out: 1,
      skipped: 1,
    });
    expect(basic.counts.used_fallback).toBe(2);
    expect(basic.processes).toBe(3); // the first run, after the crash, after the hang
    expect(basic.fallback.find((f) => f.id.endsWith("test_sum_after_airy_refdev"))?.under_test).toEqual([]);
    expect(files["test_fixture_ops.py"]?.classes).toEqual(["TestFixtureOps"]);
    expect(files["test_fixture_missing.py"]?.errors.join("\n")).toMatch(/imports fixture_absent: not installed here/);
    expect(t["test_fixture_missing.py"]?.status).toBe("fail");
    expect(t["test_fixture_missing.py"]?.message).toMatch(/cannot collect: .*No module named 'fixture_absent'/);
    // every report has it
    expect(readFileSync(out.markdown, "utf8")).toMatch(
      /\*\*Upstream tests:\*\* PyTorch's tests at [0-9a-f]{12} \(http/,
    );
    expect(readFileSync(out.markdown, "utf8")).toContain("| `test_fixture_ops.py::TestFixtureOps` | 3 | 2 | 1 |");
    const junit = readFileSync(out.junit, "utf8");
    expect(junit).toMatch(
      /<testcase classname="upstream:test_fixture_basic.py::TestFixtureBasicPRIVATEUSE1::test_crashes_the_process_refdev" name="-.test"><error type="CRASH"/,
    );
    const dom = await dumpDom(`file://${out.html}`);
    expect(dom).toContain('<h2 id="upstream">Upstream tests (3 files)</h2>');
    expect(dom).toMatch(
      /<tr class="upstream-test" data-status="warn" data-test="test_fixture_basic.py::TestFixtureBasicPRIVATEUSE1::test_special_airy_ai_refdev"><td[^>]*>passed on CPU<\/td>/,
    );
    // progress on stderr, without colour here
    expect(all).toContain("upstream: [1/3] test_fixture_basic.py:");
    expect(all).toMatch(/^CRASH test_fixture_basic.py::\S+test_crashes_the_process_refdev: /m);
    expect(all).not.toContain("\u001b[");
  }, 900_000);

  it("a second run fetches nothing; --update-expectations adds what fails, keeps what a person wrote, and the run goes green", async () => {
    const n = asked.length;
    const exp = path.join(work, "up-expectations.yaml");
    const mine =
      '# written by a person\nexpectations:\n  - test: "*::test_wrong_on_purpose_*"\n    reason: "eager-cpu: the fixture asserts a wrong sum"\n';
    writeFileSync(exp, mine);
    const args = ["test_fixture_basic.py,test_fixture_missing.py", "--timeout", "20", "--expectations", exp];
    const json = path.join(work, "up2.json");
    const r = await upstream(
      [...args, "--update-expectations", "--json", json, "--results", path.join(work, "up2.jsonl")],
      {
        FIXTURE_HANG: "1",
      },
    );
    expect(r.exitCode, String(r.all).slice(-3000)).toBe(0);
    expect(asked.length).toBe(n); // all from the cache, the absent helper too
    expect(String(r.all)).toContain("files from the cache");
    const text = readFileSync(exp, "utf8");
    expect(text.startsWith(mine)).toBe(true);
    const added = text.slice(mine.length);
    expect(added).toMatch(
      /test: "test_fixture_basic.py::TestFixtureBasicPRIVATEUSE1::test_crashes_the_process_refdev", reason: "crash: the test process died \(SIGSEGV\)/,
    );
    expect(added).toMatch(/test_hangs_refdev", reason: "timeout: ran over 20 s/);
    expect(added).toMatch(/test: "test_fixture_missing.py", reason: "fail: cannot collect: /);
    expect(added).not.toContain("test_wrong_on_purpose");
    const rep = parseReport(readFileSync(json, "utf8"), "up2.json");
    const t = byTest(rep);
    expect(t.test_wrong_on_purpose_refdev?.status).toBe("xfail");
    expect(t.test_crashes_the_process_refdev?.status).toBe("xfail");
    // nothing new to add the next time
    const again = await upstream([...args, "--update-expectations", "--results", path.join(work, "up3.jsonl")], {
      FIXTURE_HANG: "1",
    });
    expect(again.exitCode, String(again.all).slice(-2000)).toBe(0);
    expect(readFileSync(exp, "utf8")).toBe(text);
  }, 900_000);

  it("--strict fails any test that ran on the CPU fallback; --shard splits a file's tests", async () => {
    const json = path.join(work, "strict.json");
    const r = await upstream([
      "test_fixture_basic.py",
      "--strict",
      "--json",
      json,
      "--results",
      path.join(work, "s.jsonl"),
    ]);
    expect(r.exitCode).toBe(1);
    const t = byTest(parseReport(readFileSync(json, "utf8"), "strict.json"));
    expect(t.test_sum_after_airy_refdev?.status).toBe("fail");
    expect(t.test_sum_after_airy_refdev?.message).toMatch(
      /^ran on the CPU fallback \(--strict\): aten::special_airy_ai/,
    );
    expect(t.test_special_airy_ai_refdev?.status).toBe("fail");
    expect(t.test_hangs_refdev?.status).toBe("pass"); // FIXTURE_HANG unset
    const shard = async (i: number) => {
      const j = path.join(work, `shard${i}.json`);
      await upstream([
        "test_fixture_ops.py",
        "--shard",
        `${i}/2`,
        "--json",
        j,
        "--results",
        path.join(work, `sh${i}.jsonl`),
      ]);
      return parseReport(readFileSync(j, "utf8"), j)
        .results.filter((x) => x.op.includes("::"))
        .map((x) => x.op);
    };
    const [a, b] = [await shard(1), await shard(2)];
    expect(a.filter((x) => b.includes(x))).toEqual([]);
    expect([...a, ...b].sort()).toHaveLength(4); // 3 OpInfo tests + TestFixtureOther's one
  }, 900_000);
});

describe("backends/ref, no view op through the CPU fallback (issue 24 item 2)", () => {
  // Note [No views through the fallback] (csrc/runtime/Fallback.cpp): the
  // fallback returns copies, so it refuses view ops, and every view op is
  // the device's own; the runner's view check proves aliasing by a write
  // through the result. The planted kernel: the runtime's unfold made to
  // return a copy (one source file recompiled, installed beside `site`).
  const viewOps = "unfold,transpose.int,t,squeeze,unbind.int,split.Tensor,diagonal,slice.Tensor,expand";
  const run = async (name: string, ops: string, sitePath: string) => {
    const json = path.join(work, `views-${name}.json`);
    const r = await cli(
      ["test", project, "--python", python, "--cache-dir", cacheDir, "--ops", ops, "--dtypes", "float32,int64"].concat([
        "--max-samples",
        "6",
        "-j",
        "2",
        "--json",
        json,
        "-q",
      ]),
      { PYTHONPATH: sitePath },
    );
    if (!existsSync(json)) throw new Error(String(r.all).slice(-4000));
    return { r, rep: parseReport(readFileSync(json, "utf8"), json) };
  };

  it("every view op runs on the device's own kernel and writes through to its base", async () => {
    const { r, rep } = await run("native", viewOps, site);
    const bad = rep.results.filter((x) => isProblem(x.status));
    expect(bad.map((x) => `${x.op} ${x.dtype} ${x.check}: ${x.message}`)).toEqual([]);
    expect(r.exitCode, String(r.all).slice(-3000)).toBe(0);
    for (const op of viewOps.split(",")) {
      expect(
        rep.results.some((x) => x.op === op && x.check === "view" && x.status === "pass"),
        op,
      ).toBe(true);
      expect(
        rep.results.some((x) => x.op === op && x.check === "fallback" && x.status === "pass"),
        op,
      ).toBe(true);
    }
    // unfold's windows overlap the base, and writes through them reach it.
    const w = await py(
      [
        "import torch",
        "x = torch.zeros(6, device='refdev')",
        "w = x.unfold(0, 3, 2)",
        "assert w.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()",
        "w[1, 0] = 7",
        "assert x.cpu().tolist() == [0, 0, 7, 0, 0, 0], x.cpu().tolist()",
        "print('ok')",
      ].join("\n"),
    );
    expect(w.all).toContain("ok");
  }, 600_000);

  it("the fallback refuses an operator whose schema returns a view, naming it; other operators still fall back", async () => {
    const r = await py(
      [
        "import torch, torch_refdev",
        "lib = torch.library.Library('hviews', 'DEF')",
        "lib.define('as_view(Tensor(a) x) -> Tensor(a)')",
        "lib.define('as_copy(Tensor x) -> Tensor')",
        "lib.impl('as_view', lambda x: x.view(-1), 'CPU')",
        "lib.impl('as_copy', lambda x: x.clone(), 'CPU')",
        "x = torch.ones(2, 2, device='refdev')",
        "torch_refdev.reset_fallback_counts()",
        "try:",
        "    torch.ops.hviews.as_view(x)",
        "except RuntimeError as e:",
        "    print('refused:', str(e).splitlines()[0])",
        "else:",
        "    print('not refused')",
        "y = torch.ops.hviews.as_copy(x)",
        "print('copy on', y.device, torch_refdev.fallback_counts())",
      ].join("\n"),
    );
    const out = String(r.all);
    expect(out).toMatch(
      /^refused: refdev: operator 'hviews::as_view' is a view op \(hviews::as_view\(Tensor\(a\) x\) -> Tensor\(a\)\) with no refdev kernel, and the CPU fallback cannot serve it: it would return a copy, so writes through the result would not reach its input\. A view op must be native on the device/m,
    );
    expect(out).toContain("copy on refdev:0 {'hviews::as_copy': 1, 'hviews::as_view': 1}");
  }, 120_000);

  it("a planted unfold that returns a copy fails the runner's view check; the native one passes", async () => {
    const minimal = path.join(project, "csrc", "runtime", "Minimal.cpp");
    const source = readFileSync(minimal, "utf8");
    const line = "  return alias(self, sizes, strides, self.storage_offset());\n}\n\nconst at::Tensor& resize_(";
    expect(source).toContain(line);
    const plantedSite = path.join(work, "views-planted-site");
    try {
      writeFileSync(minimal, source.replace(line, line.replace(");\n}", ").clone();  // planted\n}")));
      const b = await cli(["build", project, "--python", python, "--target", plantedSite, "--werror"], {
        MAX_JOBS: "2",
      });
      expect(b.exitCode, String(b.all).slice(-4000)).toBe(0);
    } finally {
      writeFileSync(minimal, source);
    }
    const planted = await run("planted", "unfold", plantedSite);
    expect(planted.r.exitCode).toBe(1);
    const views = planted.rep.results.filter((x) => x.op === "unfold" && x.check === "view");
    expect(views.length).toBeGreaterThan(0);
    expect(
      views.every((x) => x.status === "fail" && /^output 0 is a copy, not a view of its input/.test(x.message ?? "")),
    ).toBe(true);
    // The values are right: only the view check sees it.
    expect(planted.rep.results.some((x) => x.op === "unfold" && x.check === "values" && x.status === "fail")).toBe(
      false,
    );
    const native = await run("unplanted", "unfold", site);
    expect(native.r.exitCode, String(native.r.all).slice(-3000)).toBe(0);
    expect(
      native.rep.results.filter((x) => x.op === "unfold" && x.check === "view").every((x) => x.status === "pass"),
    ).toBe(true);
  }, 1_200_000);
});

describe("backends/ref, per-operator speed (bench, issue 28)", () => {
  // Timings are what bench reports, never asserted here: only that every
  // report is written, says what it compared, and that report diff tells a
  // real 3x slowdown of one kernel (--repeat-op mm=3: each timed device call
  // runs mm three times) from a rerun with no change.
  const bench = async (name: string, ops: string, extra: string[] = []) => {
    const json = path.join(work, `bench-${name}.json`);
    const r = await cli(
      [
        "bench",
        project,
        "--python",
        python,
        "--ops",
        ops,
        "--cache-dir",
        cacheDir,
        "--results",
        path.join(work, `bench-${name}.jsonl`),
        "--json",
        json,
        ...extra,
      ],
      { PYTHONPATH: site },
    );
    expect(r.exitCode, String(r.all).slice(-3000)).toBe(0);
    return { r, json, rep: JSON.parse(readFileSync(json, "utf8")) as BenchReport };
  };

  it("bench --ops 'add*,mm,*softmax*,*conv*' writes the JSON, Markdown and HTML reports", async () => {
    const md = path.join(work, "bench.md");
    const html = path.join(work, "bench.html");
    const conformance = path.join(work, "ref.json");
    const { r, rep } = await bench("ops", "add*,mm,*softmax*,*conv*", [
      "--runs",
      "9",
      "--budget",
      "0.3",
      "--markdown",
      md,
      "--html",
      html,
      ...(existsSync(conformance) ? ["--conformance", conformance] : []),
    ]);
    expect(rep.kind).toBe("bench");
    expect(rep.meta.reference).toMatch(/^eager (CPU|CUDA)/);
    const timed = new Set(rep.rows.filter((x) => x.ratio !== undefined).map((x) => x.op));
    for (const op of [
      "add.Tensor",
      "add.out",
      "add_.Tensor",
      "mm",
      "_softmax",
      "convolution",
      "convolution_backward",
    ]) {
      expect(timed, op).toContain(op);
    }
    // sizes of the family table: three for mm, and an accuracy column for float32
    expect(rep.rows.filter((x) => x.op === "mm").map((x) => x.size)).toEqual(["64x64", "256x256", "512x512"]);
    expect(rep.rows.filter((x) => x.op === "mm").every((x) => x.accuracy !== undefined)).toBe(true);
    expect(rep.summary.geomean).toBeGreaterThan(0);
    if (existsSync(conformance)) expect(rep.summary.fast_p).not.toBeNull();
    expect(String(r.all)).toMatch(/^bench: device refdev .* against eager CPU/m);
    const text = readFileSync(md, "utf8");
    expect(text).toContain("### Operator benchmark: `refdev`");
    expect(text).toContain("| Linear algebra |");
    // the page as a browser shows it: the plot has a dot per timed operator and a geomean per family
    const dom = await dumpDom(`file://${html}`);
    expect((dom.match(/<circle class="op-dot"/g) ?? []).length).toBe(rep.summary.ops_timed);
    expect((dom.match(/class="family-geomean"/g) ?? []).length).toBe(
      rep.summary.families.filter((f) => f.timed > 0).length,
    );
    expect(dom).toContain('data-op="mm"');
  }, 600_000);

  it("report diff flags a planted 3x slowdown of mm; a report against itself is quiet", async () => {
    const ops = "mm,add.Tensor,_softmax";
    // The worker thread's CPU time: the other test file's compile on this
    // 2-core machine moves wall times between runs by more than their spread.
    // Two real runs are not compared for quiet: that is a timing assertion
    // (two fresh-clone CI runs saw a row move beyond its spread between
    // identical runs: mm 512x512 3.5x on wall time, add.Tensor 1.23x on CPU
    // time); the diff's noise rule has unit tests (test/unit/bench.test.ts).
    const fast = ["--runs", "9", "--budget", "0.3", "--no-accuracy", "--clock", "cpu"];
    const a = await bench("a", ops, fast);
    const slow = await bench("slow", ops, [...fast, "--repeat-op", "mm=3"]);
    expect(slow.rep.meta.repeat_op).toBe("mm=3");
    const quiet = await cli(["report", "diff", a.json, a.json, "--json"]);
    expect(quiet.exitCode, String(quiet.all)).toBe(0);
    expect((JSON.parse(String(quiet.stdout)) as BenchDiff).regressed).toEqual([]);
    const flagged = await cli(["report", "diff", a.json, slow.json, "--json"]);
    expect(flagged.exitCode, String(flagged.all)).toBe(1);
    const d = JSON.parse(String(flagged.stdout)) as BenchDiff;
    expect(d.regressed.map((e) => e.op)).toContain("mm");
    expect(String(flagged.stderr)).toMatch(/bench row\(s\) slower beyond their noise/);
  }, 600_000);
});
