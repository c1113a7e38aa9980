#!/usr/bin/env node
/**
 * Benchmark: what `gen`'s cold start pays for each piece it avoids or defers
 * (Note [Cold start] in src/cli/main.ts): importing the `yaml` package,
 * Handlebars (its compiler, and its single-file runtime: gen loads neither,
 * Note [C++ printer]), commander, the torch probe
 * (a Python process that does not import torch) vs `import torch`, and
 * reading native_functions.yaml with the `yaml` package vs src/yaml's reader.
 * Each figure is the median wall time of fresh Node processes.
 *
 *   npm run build && node bench/cold-load.mjs [--runs 5] [--python PATH]
 *
 * Prints a table and one JSON line. Not a test: nothing is asserted.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { median, opt, python, repo } from "./common.mjs";

const runs = Number(opt("--runs", "5"));
const { discoverTorch } = await import(path.join(repo, "dist/torch/discover.js"));
const install = await discoverTorch(python);
const nf = JSON.stringify(install.nativeFunctionsYaml);
const dist = (p) => JSON.stringify(path.join(repo, "dist", p));

/** Node code run in a fresh process; it prints the milliseconds its timed part took. */
const cases = {
  "import yaml": `const t=performance.now(); require("yaml"); console.log(performance.now()-t)`,
  "import handlebars (compiler + runtime)": `const t=performance.now(); require("handlebars"); console.log(performance.now()-t)`,
  "import handlebars runtime (one file)": `const t=performance.now(); require("handlebars/dist/handlebars.runtime.min.js"); console.log(performance.now()-t)`,
  "import commander": `const t=performance.now(); require("commander"); console.log(performance.now()-t)`,
  "torch probe (discoverTorch)": `import(${dist("torch/discover.js")}).then(async (m) => { const t=performance.now(); await m.discoverTorch(${JSON.stringify(python)}); console.log(performance.now()-t) })`,
  "python -c 'import torch'": `const {spawnSync}=require("node:child_process"); const t=performance.now(); spawnSync(${JSON.stringify(python)}, ["-c", "import torch"]); console.log(performance.now()-t)`,
  "native_functions.yaml: yaml package (import + parse)": `const fs=require("node:fs"); const s=fs.readFileSync(${nf},"utf8"); const t=performance.now(); require("yaml").parse(s, {version: "1.1"}); console.log(performance.now()-t)`,
  "native_functions.yaml: src/yaml reader (import + read)": `const fs=require("node:fs"); const s=fs.readFileSync(${nf},"utf8"); const t=performance.now(); import(${dist("yaml/operators.js")}).then((m) => { m.readYamlList(s, "nf.yaml"); console.log(performance.now()-t) })`,
};

const results = {};
for (const [name, code] of Object.entries(cases)) {
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ["-e", code], { cwd: repo, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${name} failed:\n${r.stderr}`);
    ms.push(Number(r.stdout.trim()));
  }
  results[name] = median(ms);
}

console.log(`cold cost, median of ${runs} fresh processes (ms)`);
for (const [name, ms] of Object.entries(results)) console.log(`${ms.toFixed(1).padStart(9)}  ${name}`);
console.log(JSON.stringify({ bench: "cold-load", runs, results_ms: results }));
