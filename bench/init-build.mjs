#!/usr/bin/env node
/**
 * Benchmark: `opgen-backend init` -> importable wheel (clean build), and the
 * incremental rebuild after editing one kernel file.
 *
 *   npm run build && node bench/init-build.mjs [--jobs 2] [--python PATH] [--keep]
 *
 * Targets (2-core machine): clean <= 180 s, incremental <= 30 s. ccache is
 * disabled (CCACHE_DISABLE=1) so "clean" means every object is compiled; the
 * wheel is installed with --target into a temporary directory so the shared
 * interpreter is left alone. Prints a table and one JSON line.
 */
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const python = opt("--python", process.env.OPGEN_PYTHON ?? path.join(repo, ".venv/bin/python"));
const jobs = opt("--jobs", "2");
const keep = args.includes("--keep");
const DEV = "benchchip";

const work = mkdtempSync(path.join(tmpdir(), "opgen-bench-"));
const project = path.join(work, "proj");
const site = path.join(work, "site");
const env = {
  ...process.env,
  CCACHE_DISABLE: "1",
  PYTHONPATH: site,
  PATH: `${path.dirname(python)}${path.delimiter}${process.env.PATH}`,
};
const cli = (...a) => execa(process.execPath, [path.join(repo, "bin/opgen-backend.js"), ...a], { env, all: true });

async function timed(label, fn) {
  const t0 = performance.now();
  const r = await fn();
  const s = (performance.now() - t0) / 1000;
  process.stderr.write(`${label}: ${s.toFixed(1)} s\n`);
  return [s, r];
}

const importCheck = () =>
  execa(python, ["-c", `import torch; x = torch.ones(2, device="${DEV}"); assert (x + x).sum().item() == 4`], {
    cwd: work,
    env,
  });

try {
  const [clean] = await timed("init -> importable (clean)", async () => {
    await cli("init", project, "--name", DEV);
    await cli("build", project, "--python", python, "--jobs", jobs, "--target", site);
    await importCheck();
  });
  const kernel = path.join(project, "csrc/kernels/unary.cpp");
  appendFileSync(kernel, "\n// touched by bench/init-build.mjs\n");
  const [incremental, out] = await timed("edit one kernel -> importable", async () => {
    const r = await cli("build", project, "--python", python, "--jobs", jobs, "--target", site);
    await importCheck();
    return r;
  });
  const recompiled = String(out.all)
    .split("\n")
    .filter((l) => / compile /.test(l))
    .map((l) => l.replace(/.* compile /, ""));
  const rows = [
    ["clean: init -> importable wheel", clean, 180],
    ["incremental: one kernel edited", incremental, 30],
  ];
  console.log("| measurement | seconds | target | ratio to target |");
  console.log("|---|---|---|---|");
  for (const [name, s, target] of rows) console.log(`| ${name} | ${s.toFixed(1)} | ${target} | ${(s / target).toFixed(2)} |`);
  console.log(`recompiled on the incremental build: ${recompiled.join(", ") || "(none)"}`);
  console.log(JSON.stringify({ clean_s: clean, incremental_s: incremental, recompiled, jobs: Number(jobs) }));
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`kept ${work}\n`);
}
