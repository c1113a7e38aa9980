/**
 * Conformance at scale (issue 9 items 4 and 5), end to end without a device:
 *
 * 1. the CI workflow `init` writes parses, and the commands its conformance
 *    shard, merge, base-report, diff and gate steps run are the real CLI's:
 *    the step scripts themselves run here (bash, `opgen-backend` on PATH),
 *    on a tiny run where CPU plays the device with planted faults;
 * 2. `report diff` through the CLI: exit 0, 1 and 2;
 * 3. the grouped HTML report of 240 operators renders in headless Chromium
 *    and its status filter works.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { makeReport, parseReport } from "../../src/conformance/aggregate.js";
import { type BenchRawRow, makeBenchReport } from "../../src/conformance/bench-report.js";
import { toHtml } from "../../src/conformance/formats.js";
import type { OpUnderTest, Report, Result } from "../../src/conformance/types.js";
import { renderScaffold, scaffoldVars } from "../../src/scaffold/init.js";
import { isProblem } from "../../src/vocab.js";
import { chromiumFlags, dumpDom, findChromium } from "../helpers/chromium.js";

const ROOT = path.resolve(__dirname, "..", "..");
const CLI = path.join(ROOT, "bin", "opgen-backend.js");
const FIXTURES = path.join(ROOT, "python", "tests", "fixtures");
const python = process.env.OPGEN_PYTHON ?? path.join(ROOT, ".venv", "bin", "python");

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  needs?: string | string[];
  if?: string;
  outputs?: Record<string, string>;
  strategy?: { matrix: Record<string, unknown> };
  steps: Step[];
}
interface Workflow {
  env: Record<string, string>;
  jobs: Record<string, Job>;
}

const work = mkdtempSync(path.join(tmpdir(), "opgen-reports-ci-"));
const ci = String(renderScaffold("cpu", scaffoldVars("mychip", "cpu", "2.13.0")).get(".github/workflows/ci.yml"));
const wf = parse(ci) as Workflow;

function step(job: string, name: string): Step {
  const s = wf.jobs[job]?.steps.find((x) => x.name === name);
  if (!s?.run) throw new Error(`no step '${name}' with a run script in job ${job}`);
  return s;
}

/** `opgen-backend` (this checkout's CLI) and a `gh` that `ghScript` plays, first on PATH. */
function shims(ghScript: string): string {
  const bin = mkdtempSync(path.join(work, "bin-"));
  writeFileSync(path.join(bin, "opgen-backend"), `#!/bin/sh\nexec node ${CLI} "$@"\n`);
  writeFileSync(path.join(bin, "gh"), `#!/bin/sh\n${ghScript}\n`);
  chmodSync(path.join(bin, "opgen-backend"), 0o755);
  chmodSync(path.join(bin, "gh"), 0o755);
  return bin;
}

/** Runs a step's script as Actions would (bash -e), in `cwd`, with GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files. */
async function runStep(s: Step, cwd: string, env: Record<string, string>, gh = "exit 0") {
  const out = path.join(cwd, `.gh-output-${Math.random().toString(36).slice(2)}`);
  const summary = path.join(cwd, ".gh-summary");
  writeFileSync(out, "");
  const stepEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.env ?? {})) if (!/\$\{\{/.test(v)) stepEnv[k] = v;
  const r = await execa("bash", ["-e", "-c", s.run!], {
    cwd,
    reject: false,
    env: {
      ...wf.env,
      ...stepEnv,
      OPGEN_PYTHON: python,
      GITHUB_OUTPUT: out,
      GITHUB_STEP_SUMMARY: summary,
      GITHUB_REPOSITORY: "vendor/mychip",
      GITHUB_RUN_ID: "999",
      ...env,
      PATH: `${shims(gh)}:${process.env.PATH}`,
    },
  });
  const outputs = Object.fromEntries(
    readFileSync(out, "utf8")
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
  return { code: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr), outputs };
}

describe("the CI workflow init writes", () => {
  it("parses, and its jobs are wired as shards + merge", () => {
    expect(Object.keys(wf.jobs)).toEqual(["plan", "build-test", "conformance", "report", "bench", "sanitizers"]);
    expect(wf.jobs.sanitizers!.if).toBe("github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'");
    expect(wf.env.CONFORMANCE_SHARDS).toBe("4");
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
    expect(wf.jobs.conformance!.strategy!.matrix.shard).toBe("${{ fromJSON(needs.plan.outputs.shards) }}");
    expect(wf.jobs.conformance!.needs).toEqual(["plan", "build-test"]);
    expect(wf.jobs.report!.needs).toEqual(["plan", "conformance"]);
    expect(wf.jobs.report!.if).toBe(
      "always() && (needs.conformance.result == 'success' || needs.conformance.result == 'failure')",
    );
    const uploads = wf.jobs.report!.steps.filter((s) => s.uses?.startsWith("actions/upload-artifact"));
    expect(uploads.map((s) => s.with?.name)).toEqual(["conformance-reports"]);
    // the shard count is written in one place: nothing else names a number of shards
    expect(ci.match(/CONFORMANCE_SHARDS/g)!.length).toBeGreaterThanOrEqual(2);
    expect(ci).not.toMatch(/--shard [0-9]/);
    // the distributed tier (issue 26) runs in the build job, its reports uploaded with the device tests'
    // test/e2e/init-build.test.ts runs the step for real on a built starter
    const bt = wf.jobs["build-test"]!.steps.map((s) => s.name);
    expect(bt.indexOf("Distributed tier")).toBe(bt.indexOf("Device tests") + 1);
    expect(step("build-test", "Distributed tier").run).toMatch(
      /PYTHONPATH=\.site opgen-backend test \. --distributed 2 \\\n\s+--json reports\/distributed\.json --junit reports\/distributed\.xml --markdown reports\/distributed\.md/,
    );
    expect(wf.jobs["build-test"]!.steps.find((s) => s.name === "Upload device test report")?.with?.path).toBe(
      "reports/",
    );
  });

  it("benches nightly after the report job, and gates on a diff against main's last bench report", async () => {
    const job = wf.jobs.bench!;
    expect(job.needs).toEqual(["build-test", "report"]);
    expect(job.if).toMatch(/needs\.build-test\.result == 'success' && \(github\.event_name == 'schedule'/);
    expect(step("bench", "Bench").run).toMatch(/opgen-backend bench \. \$conf --json reports\/bench\.json/);
    const uploads = job.steps.filter((x) => x.uses?.startsWith("actions/upload-artifact"));
    expect(uploads.map((x) => x.with?.name)).toEqual(["bench-reports"]);
    // the base step finds main's bench artifact as the report job finds its conformance one
    const dir = mkdtempSync(path.join(work, "bench-"));
    const side = (m: number, spread = 0.05) => ({ median_s: m, q1_s: m, q3_s: m, spread, runs: 15, reps: 1 });
    const rows = (mm: number): BenchRawRow[] => [
      {
        op: "mm",
        kind: "functional",
        family: "linalg",
        dtype: "float32",
        size: "64x64",
        device: side(mm),
        eager: side(1e-5),
      },
      {
        op: "add.Tensor",
        kind: "functional",
        family: "x",
        dtype: "float32",
        size: "64x64",
        device: side(1e-5),
        eager: side(1e-5),
      },
    ];
    const meta = {
      device: "mychip",
      device_label: "device mychip",
      reference: "eager CPU (AVX2)",
      threads: 1,
      workers: 1,
      runs: 15,
      clock: "wall",
      repeat_op: "1",
      torch_version: "2.13.0",
      conformance: null,
    };
    mkdirSync(path.join(dir, "reports"));
    writeFileSync(path.join(dir, "main-bench.json"), JSON.stringify(makeBenchReport(meta, rows(2e-5), null)));
    const gh = [
      'if [ "$1 $2" = "run list" ]; then printf "999\\n8\\n"; exit 0; fi',
      'if [ "$1 $2 $3" = "run download 8" ]; then mkdir -p base && cp main-bench.json base/bench.json; exit 0; fi',
      "exit 1",
    ].join("\n");
    const base = await runStep(step("bench", "Main branch's last bench report"), dir, {}, gh);
    expect(base.code, base.stderr).toBe(0);
    expect(base.outputs.found).toBe("true");
    const diff = step("bench", "Diff against main");
    writeFileSync(path.join(dir, "reports", "bench.json"), JSON.stringify(makeBenchReport(meta, rows(2.1e-5), null)));
    const same = await runStep(diff, dir, {});
    expect(same.code, same.stderr).toBe(0);
    expect(readFileSync(path.join(dir, ".gh-summary"), "utf8")).toContain("✅ nothing slowed down");
    writeFileSync(path.join(dir, "reports", "bench.json"), JSON.stringify(makeBenchReport(meta, rows(6e-5), null)));
    const slower = await runStep(diff, dir, {});
    expect(slower.code).toBe(1);
    expect(readFileSync(path.join(dir, "reports", "bench-diff.md"), "utf8")).toContain("| `mm` | float32 | 64x64 |");
  });

  it("plans as many shards as CONFORMANCE_SHARDS says", async () => {
    const dir = mkdtempSync(path.join(work, "plan-"));
    const r = await runStep(step("plan", "Shards"), dir, { CONFORMANCE_SHARDS: "3" });
    expect(r.code, r.stderr).toBe(0);
    expect(r.outputs).toEqual({ count: "3", shards: "[1,2,3]" });
    expect(JSON.parse(r.outputs.shards!)).toEqual([1, 2, 3]);
  });

  describe("shard, merge, base report, diff and gate steps, run for real", () => {
    const project = path.join(work, "project");
    const shardRuns: Awaited<ReturnType<typeof runStep>>[] = [];

    beforeAll(async () => {
      mkdirSync(path.join(project, "csrc", "generated"), { recursive: true });
      copyFileSync(path.join(FIXTURES, "manifest.json"), path.join(project, "csrc", "generated", "op_manifest.json"));
      // CPU plays the device with the runner's planted faults; a tiny selection.
      const flags = [
        "--faults",
        path.join(FIXTURES, "faults.py"),
        "--ops",
        "abs,add.Tensor,neg,relu",
        "--dtypes",
        "float32",
        "--max-samples",
        "2",
        "-j",
        "1",
        "--cache-dir",
        path.join(tmpdir(), "opgen-conformance-e2e-cache"),
      ].join(" ");
      for (const shard of ["1", "2"]) {
        shardRuns.push(
          await runStep(step("conformance", "Conformance shard"), project, {
            SHARD: shard,
            SHARDS: "2",
            CONFORMANCE_FLAGS: flags,
          }),
        );
      }
      // download-artifact with merge-multiple: every shard's files in shards/
      mkdirSync(path.join(project, "shards"));
      for (const f of readdirSync(path.join(project, "reports"))) {
        copyFileSync(path.join(project, "reports", f), path.join(project, "shards", f));
      }
    }, 600_000);

    it("each shard runs its half and does not fail on problems", () => {
      for (const r of shardRuns) expect(r.code, r.stderr).toBe(0);
      const a = parseReport(readFileSync(path.join(project, "shards", "shard-1.json"), "utf8"), "1");
      const b = parseReport(readFileSync(path.join(project, "shards", "shard-2.json"), "utf8"), "2");
      expect(a.meta.shards).toEqual(["1/2"]);
      expect(b.meta.shards).toEqual(["2/2"]);
      expect([...a.ops, ...b.ops].map((o) => o.op).sort()).toEqual(["abs", "add.Tensor", "neg", "relu"]);
      expect(existsSync(path.join(project, "shards", "shard-1.xml"))).toBe(true);
    });

    it("the merge step writes every report and the short summary to the job summary", async () => {
      const r = await runStep(step("report", "Merge shard reports"), project, {});
      expect(r.code, r.stderr).toBe(0);
      const merged = parseReport(readFileSync(path.join(project, "reports", "conformance.json"), "utf8"), "m");
      expect(merged.meta.shards).toEqual(["1/2", "2/2"]);
      expect(merged.ops).toHaveLength(4);
      for (const f of ["conformance.xml", "conformance.html", "conformance.md"]) {
        expect(existsSync(path.join(project, "reports", f)), f).toBe(true);
      }
      const summary = readFileSync(path.join(project, ".gh-summary"), "utf8");
      expect(summary).toContain("### opgen-backend conformance: `cpu`");
      expect(summary.trimEnd().split("\n").length).toBeLessThan(35);
    });

    it("the base-report step skips cleanly when main has no report, and finds one when it has", async () => {
      const none = await runStep(step("report", "Main branch's last report"), project, {}, "exit 0");
      expect(none.code, none.stderr).toBe(0);
      expect(none.stdout).toContain("skipping the diff");
      expect(none.outputs.found).toBeUndefined();
      // run 999 is this run and skipped; run 7 lacks the artifact; run 5 has it
      const gh = [
        'if [ "$1 $2" = "run list" ]; then printf "999\\n7\\n5\\n"; exit 0; fi',
        'if [ "$1 $2 $3" = "run download 5" ]; then mkdir -p base && cp reports/conformance.json base/; exit 0; fi',
        "exit 1",
      ].join("\n");
      const found = await runStep(step("report", "Main branch's last report"), project, {}, gh);
      expect(found.code, found.stderr).toBe(0);
      expect(found.outputs.found).toBe("true");
      expect(found.stdout).toContain("run 5 on main");
    });

    it("the diff step records exit 0, 1 and fails the step on 2", async () => {
      const now = JSON.parse(readFileSync(path.join(project, "reports", "conformance.json"), "utf8")) as Report;
      const s = step("report", "Diff against main");
      mkdirSync(path.join(project, "base"), { recursive: true });
      const base = path.join(project, "base", "conformance.json");

      writeFileSync(base, JSON.stringify(now));
      const same = await runStep(s, project, {});
      expect(same.code, same.stderr).toBe(0);
      expect(same.outputs.code).toBe("0");
      expect(readFileSync(path.join(project, ".gh-summary"), "utf8")).toContain("✅ nothing regressed");

      // main had none of today's problems: each is a regression
      const clean = {
        ...now,
        results: now.results.map((r) => (isProblem(r.status) ? { ...r, status: "pass", message: "" } : r)),
      };
      expect(clean.results.some((r, i) => r.status !== now.results[i]!.status)).toBe(true);
      writeFileSync(base, JSON.stringify(clean));
      const worse = await runStep(s, project, {});
      expect(worse.code, worse.stderr).toBe(0);
      expect(worse.outputs.code).toBe("1");
      expect(readFileSync(path.join(project, "reports", "diff.md"), "utf8")).toContain("| ❌ regressed |");

      writeFileSync(base, "{ not json");
      const bad = await runStep(s, project, {});
      expect(bad.outputs.code).toBe("2");
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/^opgen-backend: report diff: base\/conformance\.json: not JSON/m);
    });

    it("the gate fails on a missing shard, a regression, or problems in the merged report", async () => {
      const s = step("report", "Gate");
      const shardFailed = await runStep(s, project, { SHARDS_RESULT: "failure", DIFF_CODE: "" });
      expect(shardFailed.code).toBe(1);
      expect(shardFailed.stdout).toContain("a conformance shard did not finish: failure");
      const regressed = await runStep(s, project, { SHARDS_RESULT: "success", DIFF_CODE: "1" });
      expect(regressed.code).toBe(1);
      expect(regressed.stdout).toContain("conformance regressed against main");
      // the planted faults are problems of the merged report
      const summaryBefore = readFileSync(path.join(project, ".gh-summary"), "utf8");
      const problems = await runStep(s, project, { SHARDS_RESULT: "success", DIFF_CODE: "" });
      expect(problems.code).toBe(1);
      expect(problems.stderr).toMatch(/opgen-backend: conformance: \d+ failed/);
      expect(readFileSync(path.join(project, ".gh-summary"), "utf8")).toBe(summaryBefore);
    });
  });
});

function fakeResult(op: string, dtype: string, check: string, status: Result["status"]): Result {
  return {
    op,
    dtype,
    check,
    status,
    message: status === "pass" ? "" : `${status}!`,
    seed: 0,
    sample: 0,
    samples: 2,
    input: "",
  };
}

function fakeReport(ops: readonly string[], bad: ReadonlySet<string>): Report {
  const list: OpUnderTest[] = ops.map((op) => ({
    op,
    kind: "functional",
    core: true,
    view: false,
    dtypes: ["float32", "int64"],
  }));
  const results = ops.flatMap((op) =>
    ["float32", "int64"].flatMap((d) =>
      ["values", "dtype"].map((c) => fakeResult(op, d, c, bad.has(`${op}/${d}/${c}`) ? "fail" : "pass")),
    ),
  );
  return makeReport(
    { device: "fake", seed: 0, max_samples: 2, torch_version: "2.13.0", shards: [] },
    list,
    results,
    193,
    {
      core_total: 193,
      core_covered: 190,
      missing: [
        { name: "avg_pool2d", fate: "cpu-fallback" },
        { name: "grid_sampler_2d", fate: "cpu-fallback" },
        { name: "var.dim", fate: "decomposes" },
      ],
    },
  );
}

describe("report diff through the CLI", () => {
  const dir = mkdtempSync(path.join(work, "diff-"));
  const old = path.join(dir, "old.json");
  const now = path.join(dir, "new.json");
  writeFileSync(old, JSON.stringify(fakeReport(["abs", "neg", "mm"], new Set(["neg/int64/values"]))));
  const cli = (...args: string[]) => execa("node", [CLI, "report", "diff", ...args], { reject: false, cwd: dir });

  it("exits 0 when nothing regressed (a fix, a removed op)", async () => {
    writeFileSync(now, JSON.stringify(fakeReport(["abs", "neg"], new Set())));
    const r = await cli(old, now, "--markdown", path.join(dir, "d.md"));
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(r.stdout).toContain("fixed (1)");
    expect(r.stdout).toContain("gone results (4): mm (4)");
    expect(readFileSync(path.join(dir, "d.md"), "utf8")).toContain("✅ nothing regressed, 1 fixed");
  });

  it("exits 1 when something regressed, with --json on stdout", async () => {
    writeFileSync(
      now,
      JSON.stringify(fakeReport(["abs", "neg", "mm"], new Set(["abs/float32/dtype", "neg/int64/values"]))),
    );
    const r = await cli(old, now, "--json");
    expect(r.exitCode).toBe(1);
    const j = JSON.parse(String(r.stdout)) as { regressed: { op: string; old: string; new: string }[]; gate: number };
    expect(j.regressed).toEqual([
      expect.objectContaining({ op: "abs", dtype: "float32", check: "dtype", old: "pass", new: "fail" }),
    ]);
    expect(j.gate).toBe(1);
    expect(r.stderr).toBe("opgen-backend: report diff: 1 regressed, 0 new problems");
  });

  it("exits 2 on bad input with one line naming the file", async () => {
    const missing = await cli(old, path.join(dir, "nope.json"));
    expect(missing.exitCode).toBe(2);
    expect(String(missing.stderr).trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toContain(`report diff: ${path.join(dir, "nope.json")}: cannot read it (ENOENT)`);
    writeFileSync(path.join(dir, "x.json"), JSON.stringify({ meta: {}, summary: {}, results: [{ op: "a" }] }));
    const wrong = await cli(path.join(dir, "x.json"), now);
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain("x.json: not a conformance report (results[0] lacks op, dtype or check)");
  });

  it("documents its exit codes in --help", async () => {
    const r = await cli("--help");
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("1  something regressed, or a new result is a problem");
    expect(r.stdout).toContain("2  bad input");
  });
});

describe("the grouped HTML report in headless Chromium", () => {
  it("renders 240 operators by family, filters by status, lists the uncovered core overloads", async () => {
    const chromium = findChromium();
    const bases = [
      "abs",
      "add.Tensor",
      "sum.dim_IntList",
      "gather",
      "_softmax",
      "mse_loss",
      "convolution",
      "mm",
      "full",
      "view",
      "_cufft_get_plan_cache_size",
      "neg",
    ];
    const ops: string[] = [];
    // variants as overloads of the same operator, so each stays in its family
    for (let i = 0; i < 20; i++)
      for (const b of bases) ops.push(i === 0 ? b : `${b}${b.includes(".") ? "_" : "."}v${i}`);
    const bad = new Set(["abs.v3/float32/values", "mm/int64/dtype", "gather.v7/float32/values"]);
    const file = path.join(work, "big.html");
    writeFileSync(file, toHtml(fakeReport(ops, bad)));
    const flags = chromiumFlags();

    const rows = (dom: string) => [...dom.matchAll(/<tr class="op-row" data-op="([^"]+)"[^>]*?( hidden(?:="")?)?>/g)];

    const all = await dumpDom(`file://${file}`);
    expect(all).toContain('<body data-filter="all">');
    expect(rows(all)).toHaveLength(240);
    expect(rows(all).filter((m) => m[2])).toHaveLength(0);
    expect(all.match(/<details class="family"[^>]*>/g)).toHaveLength(11);
    expect(all.match(/<details class="family"[^>]* open="?"?>/g)?.length ?? 0).toBe(3);
    expect(all).toContain("avg_pool2d");

    // the filter, as a link would set it: only the three failing operators show
    const failing = await dumpDom(`file://${file}#status=fail`);
    expect(failing).toContain('<body data-filter="fail">');
    expect(
      rows(failing)
        .filter((m) => !m[2])
        .map((m) => m[1])
        .sort(),
    ).toEqual(["abs.v3", "gather.v7", "mm"]);
    expect(failing).toContain('<span id="filter-count">3 operators shown</span>');
    // families without a failing operator are hidden
    expect(failing.match(/<details class="family"[^>]*hidden/g)).toHaveLength(8);

    const png = path.join(work, "big.png");
    const shot = await execa(chromium, [...flags, `--screenshot=${png}`, "--window-size=1280,2000", `file://${file}`], {
      reject: false,
      timeout: 120_000,
    });
    expect(shot.exitCode, String(shot.stderr)).toBe(0);
    expect(readFileSync(png).subarray(1, 4).toString()).toBe("PNG");
  }, 300_000);
});
