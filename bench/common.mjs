/**
 * Shared by bench/gen.mjs and bench/compile.mjs: the repo root, the Python to
 * use, the two YAMLs the benchmarks run (core ATen from the catalog's `core`
 * tag; every operator in the catalog), and small statistics helpers.
 * Needs `npm run build` (imports dist/).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
export const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
export const python = opt("--python", process.env.OPGEN_PYTHON ?? path.join(repo, ".venv/bin/python"));
process.env.OPGEN_PYTHON = python;

/** Writes core.yaml and all.yaml into `dir`; returns their paths. */
export async function writeYamls(dir) {
  const { discoverTorch } = await import(path.join(repo, "dist/torch/discover.js"));
  const { loadCatalog } = await import(path.join(repo, "dist/model/catalog.js"));
  const catalog = await loadCatalog(await discoverTorch(python));
  const yaml = (names) =>
    `backend: PrivateUse1\ncpp_namespace: at::benchchip\nsupported:\n${names.map((n) => `- ${n}\n`).join("")}`;
  const core = catalog.functions.filter((f) => f.tags.includes("core")).map((f) => f.name).sort();
  const all = catalog.functions.map((f) => f.name).sort();
  mkdirSync(dir, { recursive: true });
  const out = { core: path.join(dir, "core.yaml"), all: path.join(dir, "all.yaml") };
  writeFileSync(out.core, yaml(core));
  writeFileSync(out.all, yaml(all));
  return { paths: out, counts: { core: core.length, all: all.length } };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export const fmt = (x) => x.toFixed(2).padStart(7);
