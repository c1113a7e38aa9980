#!/usr/bin/env node
/**
 * The vendor's daily loop, timed as a user meets it (issue 9, "fast retest").
 * Reports times, never asserts.
 *
 *   node bench/retest.mjs --project DIR --site DIR [--op add.Tensor]
 *                         [--kernel csrc/aten/Binary.cpp] [--runs 3] [--baseline CHECKOUT]
 *
 * DIR is a built project (`opgen-backend init` + `build --target SITE`).
 * 1. retest: `opgen-backend test DIR --ops OP`, from the command's start to
 *    its first sample result in the results file, and to its exit: once cold
 *    (no sample cache: Note [Sample cache]) and --runs times warm (median).
 * 2. loop: touch KERNEL → `opgen-backend build DIR` → `test --ops OP`, the
 *    whole edit-and-retest cycle (median of --runs).
 * With --baseline CHECKOUT, step 1 also runs CHECKOUT's bin/opgen-backend.js
 * (another checkout of this repo, built) on the same project, and prints
 * the ratio: the before/after of a change to the runner.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, utimesSync } from "node:fs";
import path from "node:path";
import { median, opt, repo } from "./common.mjs";

const project = opt("--project");
const site = opt("--site");
if (!project || !site) {
  console.error("usage: node bench/retest.mjs --project DIR --site DIR [--op OP] [--kernel FILE] [--runs N]");
  process.exit(2);
}
const op = opt("--op", "add.Tensor");
const kernel = path.resolve(project, opt("--kernel", "csrc/aten/Binary.cpp"));
const runs = Number(opt("--runs", "3"));
const baseline = opt("--baseline");
const env = { ...process.env, PYTHONPATH: site, NO_COLOR: "1" };
const results = path.join(project, ".opgen", "conformance", "retest-bench.jsonl");

/** Runs the CLI; resolves {first, total} seconds (first: first sample line in `watch`). */
function timed(cli, argv, watch) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = null;
    const poll = setInterval(() => {
      if (first !== null || !watch || !existsSync(watch)) return;
      if (readFileSync(watch, "utf8").includes('"kind": "sample"')) first = (performance.now() - t0) / 1000;
    }, 10);
    const p = spawn(process.execPath, [cli, ...argv], { env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (d) => {
      err += d;
    });
    p.on("exit", (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`${argv.join(" ")} exited ${code}:\n${err.slice(-2000)}`));
      else resolve({ first, total: (performance.now() - t0) / 1000 });
    });
  });
}

const test = (cli) => {
  rmSync(results, { force: true });
  return timed(cli, ["test", project, "--ops", op, "--results", results, "-j", "2"], results);
};
const cacheDir = path.join(project, ".opgen", "cache");
const clearSamples = () => {
  if (!existsSync(cacheDir)) return;
  for (const d of readdirSync(cacheDir)) if (d.startsWith("samples-")) rmSync(path.join(cacheDir, d), { recursive: true });
};

async function retest(label, cli) {
  clearSamples();
  const cold = await test(cli);
  const warm = [];
  for (let i = 0; i < runs; i++) warm.push(await test(cli));
  const row = {
    cold_first_s: cold.first,
    cold_total_s: cold.total,
    warm_first_s: median(warm.map((w) => w.first)),
    warm_total_s: median(warm.map((w) => w.total)),
  };
  console.log(`${label}: ${op}: ${Object.entries(row).map(([k, v]) => `${k} ${v?.toFixed(2)}`).join(", ")}`);
  return row;
}

const ours = await retest("this checkout", path.join(repo, "bin", "opgen-backend.js"));
if (baseline) {
  const theirs = await retest("baseline", path.join(path.resolve(baseline), "bin", "opgen-backend.js"));
  const r = (k) => (theirs[k] / ours[k]).toFixed(2);
  console.log(`speed-up (baseline / this): first sample warm ${r("warm_first_s")}x, whole op warm ${r("warm_total_s")}x`);
}

const loops = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const now = new Date();
  utimesSync(kernel, now, now);
  await timed(path.join(repo, "bin", "opgen-backend.js"), ["build", project, "--target", site, "-j", "2"], null);
  const built = (performance.now() - t0) / 1000;
  await test(path.join(repo, "bin", "opgen-backend.js"));
  loops.push({ built, total: (performance.now() - t0) / 1000 });
}
console.log(
  `loop: touch ${path.relative(project, kernel)} -> build -> test --ops ${op}: ` +
    `build ${median(loops.map((l) => l.built)).toFixed(1)} s, whole loop ${median(loops.map((l) => l.total)).toFixed(1)} s (median of ${runs})`,
);
