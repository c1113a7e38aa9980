#!/usr/bin/env node
/**
 * Benchmark: compile time of our Register<Backend>.cpp vs torchgen's for the
 * core-ATen YAML, same compiler, same flags
 * (`g++ -std=c++20 -O2 -Wall -Wextra -Werror -fPIC`, torch headers via
 * -isystem), same run, alternating. Reports wall and CPU (user+sys) seconds;
 * CPU time is the fairer number on a shared machine. Target: ours <= 1/2.
 *
 *   npm run build && node bench/compile.mjs [--runs 1] [--python PATH] [--cxx g++]
 *
 * One compile at a time at nice 5. Prints a table and one JSON line.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fmt, median, opt, python, repo, writeYamls } from "./common.mjs";

const runs = Number(opt("--runs", "1"));
const cxx = opt("--cxx", process.env.CXX ?? "g++");
const FLAGS = ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC"];
const work = mkdtempSync(path.join(tmpdir(), "opgen-bench-compile-"));
const { paths } = await writeYamls(work);

const includes = JSON.parse(
  execFileSync(python, ["-c", "import json, torch.utils.cpp_extension as c; print(json.dumps(c.include_paths()))"], {
    encoding: "utf8",
  }),
).flatMap((d) => ["-isystem", d]);

execFileSync(process.execPath, [path.join(repo, "bin/opgen-backend.js"), "gen", paths.core, "-o", "ours"], {
  cwd: work,
  stdio: "ignore",
});
// torchgen includes its header as "<-o>/PrivateUse1NativeFunctions.h": compile from `work` with -I.
execFileSync(python, ["-m", "torchgen.gen_backend_stubs", "-s", paths.core, "-o", "tg"], { cwd: work });

function compile(src) {
  const r = spawnSync(
    "/usr/bin/time",
    ["-f", "%e %U %S", "nice", "-n", "5", cxx, ...FLAGS, ...includes, "-I.", "-c", src, "-o", `${src}.o`],
    { cwd: work, encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`compiling ${src} failed:\n${r.stderr}`);
  const [wall, user, sys] = r.stderr.trim().split("\n").pop().split(" ").map(Number);
  return { wall, cpu: user + sys };
}

const ours = [];
const theirs = [];
for (let i = 0; i < runs; i++) {
  ours.push(compile("ours/RegisterPrivateUse1.cpp"));
  theirs.push(compile("tg/RegisterPrivateUse1.cpp"));
}
rmSync(work, { recursive: true, force: true });

const m = (xs, k) => median(xs.map((x) => x[k]));
const r = {
  ours_wall_s: m(ours, "wall"),
  torchgen_wall_s: m(theirs, "wall"),
  ours_cpu_s: m(ours, "cpu"),
  torchgen_cpu_s: m(theirs, "cpu"),
};
console.log(`Register<Backend>.cpp for core ATen, ${cxx} ${FLAGS.join(" ")}, median of ${runs}`);
console.log("            opgen-backend  torchgen   ratio");
console.log(`wall (s)      ${fmt(r.ours_wall_s)}      ${fmt(r.torchgen_wall_s)}   ${(r.ours_wall_s / r.torchgen_wall_s).toFixed(3)}`);
console.log(`cpu  (s)      ${fmt(r.ours_cpu_s)}      ${fmt(r.torchgen_cpu_s)}   ${(r.ours_cpu_s / r.torchgen_cpu_s).toFixed(3)}`);
console.log(JSON.stringify({ bench: "compile", runs, ...r, ratio_cpu: r.ours_cpu_s / r.torchgen_cpu_s, ratio_wall: r.ours_wall_s / r.torchgen_wall_s }));
