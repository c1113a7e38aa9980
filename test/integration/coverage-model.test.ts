/**
 * `opgen-backend coverage --model` as a user runs it: a real CLI process on
 * the built dist/ (compiled once by vitest's globalSetup), the conformance runner tracing
 * test/fixtures/models/coverage.py on eager CPU, a backend YAML a person wrote
 * (comments, a flow list). The listing, --json, --add twice, and bad input.
 * Each run imports torch in the runner, so the runs are few and shared.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const MODEL = path.join(ROOT, "test/fixtures/models/coverage.py");
const SMALL = path.join(ROOT, "python/tests/fixtures/models/small.py");
const work = mkdtempSync(path.join(tmpdir(), "opgen-covmodel-"));

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, "bin/opgen-backend.js"), ...args], {
    cwd: work,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const YAML_TEXT = `# my chip: what it runs natively
backend: PrivateUse1
cpp_namespace: at::covdev
device: covdev
runtime: [view, empty.memory_format, _copy_from]
supported:
  - add.Tensor   # the first kernel we wrote
  - mm
  - mul.Tensor
  - sum.dim_IntList

# gradients we compute ourselves
autograd: []
`;

/** What --add inserts after `- sum.dim_IntList` for this model (sorted: the report's order). */
const MISSING = [
  "addmm",
  "div.Tensor",
  "logit",
  "logit_backward",
  "sigmoid",
  "sigmoid_backward",
  "silu",
  "softplus",
  "softplus_backward",
  "tril",
];

interface Json {
  fallback: string;
  cases: string[];
  counts: Record<string, number>;
  ops: {
    name: string;
    fate: string;
    detail: string;
    forward: number;
    backward: number;
    step: number;
    cases: string[];
  }[];
  missing: string[];
  models: string[];
  added?: string[];
}

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("coverage --model", () => {
  const yaml = path.join(work, "backend.yaml");

  it("lists every overload the cases reach with its fate, counts and cases (--json)", () => {
    writeFileSync(yaml, YAML_TEXT);
    const r = cli(["coverage", yaml, "--model", MODEL, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    // Progress on stderr while the runner traces; stdout is the JSON alone.
    expect(r.stderr).toMatch(/tracing .*coverage\.py on eager CPU/);
    expect(r.stderr).toMatch(/traced 2 cases in \d+\.\d s/);
    const j = JSON.parse(r.stdout) as Json;
    expect(j.cases).toEqual(["coverage:gate", "coverage:masked"]);
    expect(j.models).toEqual([path.relative(work, MODEL)]);
    expect(j.fallback).toBe("cpu");
    expect(j.added).toBeUndefined();
    const op = (name: string) => j.ops.find((o) => o.name === name);
    expect(op("mm")).toMatchObject({
      fate: "listed",
      detail: "supported",
      cases: ["coverage:gate", "coverage:masked"],
    });
    expect(op("view")).toMatchObject({ fate: "listed", detail: "runtime" });
    expect(op("add_.Tensor")).toMatchObject({ fate: "derived", detail: "from add.Tensor", forward: 0, step: 4 });
    expect(op("addmm")).toMatchObject({
      fate: "fallback",
      detail: "as addmm.out",
      forward: 2,
      cases: ["coverage:gate"],
    });
    expect(op("logit")).toMatchObject({ fate: "fallback", forward: 1, backward: 0 });
    expect(op("logit_backward")).toMatchObject({ fate: "fallback", forward: 0, backward: 1 });
    expect(op("tril")).toMatchObject({ fate: "fallback", cases: ["coverage:masked"] });
    expect(op("detach")?.fate).toBe("composite");
    expect(j.missing).toEqual(MISSING);
    expect(j.counts.fallback).toBe(MISSING.length);
    expect(readFileSync(yaml, "utf8")).toBe(YAML_TEXT);
  });

  it("--add lists the missing ones under supported:, keeping the rest byte for byte; the listing comes with it", () => {
    writeFileSync(yaml, YAML_TEXT);
    const r = cli(["coverage", yaml, "--model", `${MODEL}:gate,mask*`, "--add"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\nfalls back to CPU: 10\n/);
    expect(r.stdout).toMatch(/\n {2}logit +1 +0 +0 {2}gate\n/);
    expect(r.stdout).toMatch(/\n {2}tril \(as tril\.out\) +1 +1 +0 {2}masked\n/);
    expect(r.stdout).toContain(`added 10 overloads under supported: (${yaml}:12): ${MISSING.join(", ")}`);
    expect(r.stdout).toContain(`opgen-backend gen ${yaml} --stubs ${path.join(work, "csrc", "aten")}`);
    const inserted =
      "  # 10 overloads added by `opgen-backend coverage --add` for --model coverage.py:gate,mask*\n" +
      MISSING.map((n) => `  - ${n}\n`).join("");
    expect(readFileSync(yaml, "utf8")).toBe(
      YAML_TEXT.replace("  - sum.dim_IntList\n", `  - sum.dim_IntList\n${inserted}`),
    );
    // gen takes what was added.
    const g = cli(["gen", yaml, "-o", path.join(work, "gen"), "--dry-run"]);
    expect(g.code, g.stderr).toBe(0);

    const again = cli(["coverage", yaml, "--model", MODEL, "--add", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    const j = JSON.parse(again.stdout) as Json;
    expect(j.added).toEqual([]);
    expect(j.missing).toEqual([]);
    expect(j.ops.find((o) => o.name === "logit")).toMatchObject({ fate: "listed", detail: "supported" });
    expect(readFileSync(yaml, "utf8")).toBe(
      YAML_TEXT.replace("  - sum.dim_IntList\n", `  - sum.dim_IntList\n${inserted}`),
    );
  }, 120_000);

  const bad: [string, { args: (yaml: string) => string[]; yaml?: string; want: RegExp }][] = [
    [
      "a model file that does not exist",
      {
        args: (y) => ["coverage", y, "--model", path.join(work, "nope.py"), "--add"],
        want: /nope\.py: no such model file/,
      },
    ],
    [
      "a case name that matches nothing",
      {
        args: (y) => ["coverage", y, "--model", `${MODEL}:gat`, "--add"],
        want: /coverage\.py: no case matches gat; its cases are gate, masked/,
      },
    ],
    [
      "a case whose builder returns what the format does not allow",
      {
        args: (y) => ["coverage", y, "--model", `${SMALL}:broken`, "--add"],
        want: /case broken: unknown key\(s\) input; allowed: module, inputs/,
      },
    ],
    [
      "--add without --model",
      { args: (y) => ["coverage", y, "--add"], want: /--add needs --model FILE\[:NAME,\.\.\.\]/ },
    ],
    [
      "a backend YAML with a mistake",
      {
        args: (y) => ["coverage", y, "--model", MODEL, "--add"],
        yaml: YAML_TEXT.replace("  - mm\n", "  - mmm\n"),
        want: /backend\.yaml:8:5: .*mmm/,
      },
    ],
  ];
  it.each(bad)("%s: exit 1, one message, no stack, the YAML untouched", (_name, { args, yaml: text, want }) => {
    const y = path.join(mkdtempSync(path.join(work, "bad-")), "backend.yaml");
    writeFileSync(y, text ?? YAML_TEXT);
    const r = cli(args(y));
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(want);
    expect(r.stderr).toMatch(/^opgen-backend: /m);
    expect(r.stderr).not.toMatch(/\n\s+at .*\.js:\d+/);
    expect(r.stdout).toBe("");
    expect(readFileSync(y, "utf8")).toBe(text ?? YAML_TEXT);
  });
});
