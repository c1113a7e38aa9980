#!/usr/bin/env node
/**
 * Benchmark: the CPU time (user + system, of the node process itself) of cold
 * `opgen-backend gen` runs of several built checkouts, interleaved, on the
 * same YAML (core: the 193 core-ATen overloads; all: every operator). CPU
 * time moves less with the machine's load than wall time, so small
 * differences between builds (a micro-optimization with and without) show.
 * The torch probe (a Python child) is not counted: it is the same for all.
 *
 *   node bench/gen-cpu.mjs [--runs 15] [--yaml core|all] DIR [DIR ...]
 *
 * Each DIR is a checkout with its dist/ built. Prints the median, min and
 * mean per DIR. Not a test: nothing is asserted.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { median, opt, writeYamls } from "./common.mjs";

const runs = Number(opt("--runs", "15"));
const which = opt("--yaml", "all");
const dirs = process.argv.slice(2).filter((a, i, all) => !a.startsWith("--") && !all[i - 1]?.startsWith("--"));
const work = mkdtempSync(path.join(tmpdir(), "opgen-bench-cpu-"));
const { paths } = await writeYamls(work);
const hook = path.join(work, "cpu.cjs");
writeFileSync(hook, 'process.on("exit", () => { const u = process.cpuUsage(); process.stderr.write(`\\nCPUUS ${u.user + u.system}\\n`); });\n');

const ms = Object.fromEntries(dirs.map((d) => [d, []]));
for (let i = 0; i < runs; i++) {
  for (const d of dirs) {
    const out = path.join(work, `out-${i}`);
    const r = spawnSync(process.execPath, ["--require", hook, path.join(path.resolve(d), "bin/opgen-backend.js"), "gen", paths[which], "-o", out], { encoding: "utf8" });
    const m = /CPUUS (\d+)/.exec(r.stderr);
    if (r.status !== 0 || !m) throw new Error(`${d} failed:\n${r.stderr}`);
    ms[d].push(Number(m[1]) / 1000);
    rmSync(out, { recursive: true, force: true });
  }
}
rmSync(work, { recursive: true, force: true });
console.log(`gen (${which}) node CPU time, ${runs} cold runs each (ms)`);
for (const d of dirs) {
  const xs = ms[d];
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`${d}: median ${median(xs).toFixed(0)}  min ${Math.min(...xs).toFixed(0)}  mean ${mean.toFixed(0)}`);
}
