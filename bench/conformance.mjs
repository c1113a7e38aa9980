#!/usr/bin/env node
/**
 * Conformance runner benchmark. Reports ratios and rates, never asserts.
 *
 *   node bench/conformance.mjs [--project DIR --site DIR] [--workers N] [--skip-core]
 *
 * 1. overhead: a fixed op set (float32) through the full runner with one
 *    worker, versus the same samples (the run's sample cache) executed on CPU
 *    and on the device in one process with no checks (python -m
 *    opgen_conformance.baseline). Reported: samples/s and runner/baseline,
 *    both over the steady state (sample execution only) and over wall time
 *    (including the worker's torch import and sample generation).
 * 2. core: the whole core-ATen set (193 overloads x default dtypes) with
 *    --workers N (default 2). Without --project the "device" is CPU itself
 *    (a backend that implements every core op); with --project the built
 *    backend's manifest restricted to --core.
 *
 * Needs `npm run build` (imports dist/) and OPGEN_PYTHON (else .venv/bin/python).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeYamls } from "./common.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { runTest, PYTHON_DIR } = await import(path.join(ROOT, "dist", "conformance", "driver.js"));

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const python = process.env.OPGEN_PYTHON ?? path.join(ROOT, ".venv", "bin", "python");
const project = flag("--project");
const site = flag("--site");
const workers = Number(flag("--workers", "2"));
const cacheDir = path.join(tmpdir(), "opgen-conformance-e2e-cache");
const work = mkdtempSync(path.join(tmpdir(), "opgen-conformance-bench-"));
if (site) process.env.PYTHONPATH = process.env.PYTHONPATH ? `${site}${path.delimiter}${process.env.PYTHONPATH}` : site;
const env = { ...process.env, PYTHONPATH: [PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };

/** The manifest `gen` writes for the core-ATen overloads, with CPU playing the device. */
async function coreManifest() {
  const { paths } = await writeYamls(work);
  const out = path.join(work, "core-gen");
  execFileSync(process.execPath, [path.join(ROOT, "bin", "opgen-backend.js"), "gen", paths.core, "-o", out], {
    env,
    stdio: "ignore",
  });
  const m = JSON.parse(readFileSync(path.join(out, "op_manifest.json"), "utf8"));
  const file = path.join(work, "core-manifest.json");
  writeFileSync(file, JSON.stringify({ ...m, device: "cpu", python_package: "none" }));
  return file;
}

const noFaults = path.join(work, "nofaults.py");
writeFileSync(noFaults, "FAULTS = {}\n");

async function deviceOpts() {
  if (project) return { projectDir: project };
  return { projectDir: work, manifest: await coreManifest(), faults: noFaults };
}

const OVERHEAD_OPS = [
  "abs",
  "add.Tensor",
  "mul.Tensor",
  "sub.Tensor",
  "div.Tensor",
  "relu",
  "exp",
  "sum.dim_IntList",
  "mm",
  "where.self",
  "clone",
  "cat",
  "permute",
  "neg",
  "maximum",
];

async function overhead() {
  const results = path.join(work, "overhead.jsonl");
  const o = await deviceOpts();
  const t0 = Date.now();
  const { report, configFile } = await runTest({
    ...o,
    python,
    selection: { globs: project ? ["*"] : OVERHEAD_OPS, dtypes: ["float32"] },
    workers: 1,
    timeoutS: 60,
    seed: 0,
    maxSamples: 6,
    resume: false,
    results,
    cacheDir,
    quiet: true,
  });
  const wall = (Date.now() - t0) / 1000;
  const recs = readFileSync(results, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const samples = recs.filter((r) => r.kind === "sample").length;
  const base = JSON.parse(
    execFileSync(python, ["-m", "opgen_conformance.baseline", configFile], { env, encoding: "utf8" }),
  );
  const stats = JSON.parse(readFileSync(`${results}.stats.json`, "utf8"));
  const importS = Number(
    execFileSync(python, ["-c", "import time; t=time.time(); import torch; print(time.time()-t)"], { env, encoding: "utf8" }),
  );
  return {
    ops: report.ops.length,
    samples,
    runner_wall_s: wall,
    runner_samples_per_s: samples / wall,
    // baseline: forward on CPU and device; with_grad adds the backward the
    // runner's gradient check executes (same samples, same rule)
    baseline_s: base.elapsed_s,
    baseline_with_grad_s: base.elapsed_with_grad_s,
    baseline_samples_per_s: base.samples / base.elapsed_with_grad_s,
    ratio_wall: wall / base.elapsed_with_grad_s,
    // the worker's sample loop alone (checks included; no import, no generation)
    runner_sample_loop_s: stats.run_s,
    ratio_sample_loop: stats.run_s / base.elapsed_with_grad_s,
    sample_generation_s: stats.gen_s,
    worker_starts: stats.worker_starts,
    torch_import_s: importS,
  };
}

async function core() {
  const o = await deviceOpts();
  const t0 = Date.now();
  const { report } = await runTest({
    ...o,
    python,
    selection: { core: true },
    workers,
    timeoutS: 60,
    seed: 0,
    maxSamples: 6,
    resume: false,
    results: path.join(work, "core.jsonl"),
    json: path.join(work, "core.json"),
    html: path.join(work, "core.html"),
    cacheDir,
    quiet: true,
  });
  const s = (Date.now() - t0) / 1000;
  const samples = readFileSync(path.join(work, "core.jsonl"), "utf8").split("\n").filter((l) => l.includes('"kind": "sample"')).length;
  return {
    ops: report.ops.length,
    tasks: report.ops.reduce((n, op) => n + op.dtypes.length, 0),
    samples,
    seconds: s,
    samples_per_s: samples / s,
    workers,
    core_level: `${report.summary.core_passed}/${report.summary.core_total}`,
    target_s: 300,
  };
}

if (!existsSync(python)) throw new Error(`no Python at ${python}; set OPGEN_PYTHON`);
const out = { device: project ? `project ${project}` : "cpu (every core op implemented)", work };
out.overhead = await overhead();
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
if (!args.includes("--skip-core")) {
  out.core = await core();
  process.stdout.write(`${JSON.stringify(out.core, null, 2)}\n`);
}
