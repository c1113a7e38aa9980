/**
 * Note [Run config contract]: the config src/conformance/runconfig.ts writes
 * is exactly what python/opgen_conformance/config.py reads; the runner refuses
 * a missing or unknown key and another version.
 */
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { RUN_CONFIG_DEFAULTS, RUN_CONFIG_VERSION, runConfig } from "../../src/conformance/runconfig.js";
import { DTYPES } from "../../src/vocab.js";

const python = process.env.OPGEN_PYTHON ?? "python3";
const PYDIR = path.resolve("python");

/** Runs RunConfig.from_dict on `config` in Python: its fields, or the error it raised. */
async function readInPython(config: unknown): Promise<{ fields?: string[]; error?: string; version?: number }> {
  const script = [
    "import dataclasses, json, sys",
    "from opgen_conformance import PROTOCOL_VERSION",
    "from opgen_conformance.config import ConfigError, RunConfig",
    "try:",
    "    c = RunConfig.from_dict(json.loads(sys.stdin.read()), 'cfg.json')",
    "    print(json.dumps({'fields': [f.name for f in dataclasses.fields(c)], 'version': PROTOCOL_VERSION}))",
    "except ConfigError as e:",
    "    print(json.dumps({'error': str(e)}))",
  ].join("\n");
  const r = await execa(python, ["-c", script], {
    cwd: PYDIR,
    env: { PYTHONPATH: PYDIR },
    input: JSON.stringify(config),
  });
  return JSON.parse(r.stdout);
}

const full = runConfig({
  device: "mychip",
  results: "/tmp/r.jsonl",
  cache_dir: "/tmp/cache",
  ops: [{ name: "add.Tensor", kind: "functional", view: false, core: true, decomposed: false, dtypes: ["float32"] }],
});

describe("the run config contract", () => {
  it("TS writes every field Python reads, at the version Python reads", async () => {
    const r = await readInPython(full);
    expect(r.error).toBeUndefined();
    expect(Object.keys(full).sort()).toEqual([...(r.fields ?? [])].sort());
    expect(r.version).toBe(RUN_CONFIG_VERSION);
    expect(full.grad_samples).toBe(RUN_CONFIG_DEFAULTS.grad_samples);
  }, 60_000);

  const refused: [string, { given: unknown; want: RegExp }][] = [
    [
      "a missing key",
      { given: { ...full, grad_samples: undefined }, want: /cfg\.json: missing key\(s\) grad_samples/ },
    ],
    ["an unknown key", { given: { ...full, threads: 4 }, want: /cfg\.json: unknown key\(s\) threads; the keys are / }],
    ["another version", { given: { ...full, version: 99 }, want: /version 99, this runner reads version 4/ }],
    [
      "an op with a missing key",
      { given: { ...full, ops: [{ name: "add.Tensor", kind: "functional" }] }, want: /ops\[0\] has keys/ },
    ],
  ];
  it.each(refused)(
    "Python refuses %s",
    async (_name, { given, want }) => {
      const r = await readInPython(JSON.parse(JSON.stringify(given)));
      expect(r.error).toMatch(want);
    },
    60_000,
  );
});

describe("one vocabulary", () => {
  it("the runner knows exactly the dtypes a backend can claim", async () => {
    const r = await execa(
      python,
      ["-c", "import json; from opgen_conformance import KNOWN_DTYPES; print(json.dumps(KNOWN_DTYPES))"],
      { cwd: PYDIR, env: { PYTHONPATH: PYDIR } },
    );
    expect([...(JSON.parse(r.stdout) as string[])].sort()).toEqual([...DTYPES].sort());
  }, 60_000);
});
