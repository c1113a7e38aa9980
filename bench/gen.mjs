#!/usr/bin/env node
/**
 * Benchmark: `opgen-backend gen` vs `python -m torchgen.gen_backend_stubs`,
 * wall time of cold processes on the same YAML, side by side in one run
 * (runs alternate, so machine load hits both alike). YAMLs: the 193 core-ATen
 * overloads and every operator in the catalog. Target: ours <= 1/5.
 *
 *   npm run build && node bench/gen.mjs [--runs 7] [--python PATH] [--baseline DIR]
 *
 * --baseline DIR: also time DIR/bin/opgen-backend.js (another checkout with
 * its dist/ built, e.g. `git worktree add DIR HEAD~1`) in the same rotation,
 * for before/after numbers taken under the same load.
 *
 * Prints a table and one JSON line. Not a test: nothing is asserted.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fmt, median, opt, python, repo, writeYamls } from "./common.mjs";

const runs = Number(opt("--runs", "7"));
const baseline = opt("--baseline");
const work = mkdtempSync(path.join(tmpdir(), "opgen-bench-gen-"));
const { paths, counts } = await writeYamls(work);

function timed(cmd, argv) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { cwd: work, encoding: "utf8" });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(" ")} failed:\n${r.stderr}`);
  return s;
}

const results = {};
for (const [name, yaml] of Object.entries(paths)) {
  const ours = [];
  const theirs = [];
  const before = [];
  for (let i = 0; i < runs; i++) {
    if (baseline) {
      before.push(
        timed(process.execPath, [path.join(path.resolve(baseline), "bin/opgen-backend.js"), "gen", yaml, "-o", `base-${name}-${i}`]),
      );
    }
    // fresh output directories: both write every file
    ours.push(timed(process.execPath, [path.join(repo, "bin/opgen-backend.js"), "gen", yaml, "-o", `ours-${name}-${i}`]));
    theirs.push(timed(python, ["-m", "torchgen.gen_backend_stubs", "-s", yaml, "-o", `tg-${name}-${i}`]));
  }
  results[name] = { ops: counts[name], ours: median(ours), torchgen: median(theirs), oursAll: ours, torchgenAll: theirs };
  if (baseline) results[name].baseline = median(before);
}
rmSync(work, { recursive: true, force: true });

console.log(`gen wall time, median of ${runs} cold runs (seconds)`);
console.log("yaml      ops   opgen-backend  torchgen   ratio");
for (const [name, r] of Object.entries(results)) {
  console.log(`${name.padEnd(6)} ${String(r.ops).padStart(6)}   ${fmt(r.ours)}      ${fmt(r.torchgen)}   ${(r.ours / r.torchgen).toFixed(3)}`);
  if (r.baseline !== undefined) {
    console.log(`  baseline ${fmt(r.baseline)} s, ratio ${(r.baseline / r.torchgen).toFixed(3)} (${path.resolve(baseline)})`);
  }
}
console.log(
  JSON.stringify({
    bench: "gen",
    runs,
    results: Object.fromEntries(
      Object.entries(results).map(([k, r]) => [
        k,
        {
          ours_s: r.ours,
          torchgen_s: r.torchgen,
          ratio: r.ours / r.torchgen,
          ...(r.baseline !== undefined ? { baseline_s: r.baseline, baseline_ratio: r.baseline / r.torchgen } : {}),
        },
      ]),
    ),
  }),
);
