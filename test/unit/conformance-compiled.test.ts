/**
 * `test --compile` (Note [Compiled mode] in python/opgen_conformance/compiled.py):
 * the run config's key, the compile-failed status through aggregation and
 * every report, results marked compiled, and Note [Expectation modes].
 */
import { describe, expect, it } from "vitest";
import { aggregate, failed, makeReport, mergeReports } from "../../src/conformance/aggregate.js";
import { applyExpectations, modeApplies, parseExpectations } from "../../src/conformance/expectations.js";
import { toHtml, toJunit, toMarkdown, toTerminal } from "../../src/conformance/formats.js";
import { RUN_CONFIG_DEFAULTS, runConfig } from "../../src/conformance/runconfig.js";
import type { OpUnderTest, RawRecord, Report, Result } from "../../src/conformance/types.js";
import { UserError } from "../../src/util/errors.js";

const plain = {
  red: (s: string) => s,
  green: (s: string) => s,
  yellow: (s: string) => s,
  dim: (s: string) => s,
  bold: (s: string) => s,
};

const ops: OpUnderTest[] = [
  { op: "add.Tensor", kind: "functional", core: true, view: false, dtypes: ["float16"] },
  { op: "relu", kind: "functional", core: true, view: false, dtypes: ["float32"] },
];

function sample(op: string, dtype: string, k: number, checks: Record<string, [string, string]>): RawRecord {
  return { kind: "sample", op, dtype, sample: k, seed: 0, source: "s", desc: `(in${k})`, checks } as RawRecord;
}

const records: RawRecord[] = [
  { kind: "header", seed: 0, max_samples: 6, device: "refdev" },
  sample("add.Tensor", "float16", 0, { values: ["pass", ""], compile: ["pass", ""] }),
  sample("add.Tensor", "float16", 1, {
    compile: ["compile-failed", "AssertionError at torch/_inductor/codegen/cpp.py:3372 in broadcast"],
  }),
  sample("add.Tensor", "float16", 2, { values: ["fail", "off"], compile: ["pass", ""] }),
  { kind: "task", op: "add.Tensor", dtype: "float16", samples: 3 },
  sample("relu", "float32", 0, {
    values: ["pass", ""],
    compile: ["warn", "1 graph break(s), the op ran eagerly there: Dynamic shape operator"],
  }),
  { kind: "task", op: "relu", dtype: "float32", samples: 1 },
];

function compiledReport(results?: readonly Result[]): Report {
  const rs = results ?? aggregate(records, ops).map((r) => ({ ...r, compiled: true as const }));
  return makeReport(
    { device: "refdev", seed: 0, max_samples: 6, torch_version: "2.13.0", shards: [], compiled: true },
    ops,
    rs,
    193,
  );
}

describe("the run config", () => {
  it("has a compile key, off by default", () => {
    expect(RUN_CONFIG_DEFAULTS.compile).toBe(false);
    const c = runConfig({ device: "refdev", results: "/r.jsonl", cache_dir: "/c", ops: [], compile: true });
    expect(c.compile).toBe(true);
  });
});

describe("compile-failed, a status of its own", () => {
  it("is worse than fail in a result (its sample is named) and counted apart", () => {
    const rep = compiledReport();
    const compile = rep.results.find((r) => r.op === "add.Tensor" && r.check === "compile");
    expect(compile).toMatchObject({ status: "compile-failed", sample: 1, compiled: true });
    expect(compile?.message).toMatch(/^AssertionError at torch\/_inductor/);
    expect(rep.summary.compile_failed).toBe(1);
    expect(rep.summary.failed).toBe(1);
    expect(rep.results.find((r) => r.op === "relu" && r.check === "compile")?.status).toBe("warn");
    expect(failed(rep.summary)).toBe(true);
  });

  it("alone fails the run (CI gates on it)", () => {
    const only = aggregate(
      [sample("relu", "float32", 0, { values: ["pass", ""], compile: ["compile-failed", "CppCompileError: x"] })],
      ops,
    );
    const rep = compiledReport(only.map((r) => ({ ...r, compiled: true as const })));
    expect(rep.summary).toMatchObject({ failed: 0, compile_failed: 1 });
    expect(failed(rep.summary)).toBe(true);
  });

  it("every report shows it, and marks the results compiled", () => {
    const rep = compiledReport();
    const junit = toJunit(rep);
    expect(junit).toContain('name="opgen-backend conformance (refdev, compiled)"');
    expect(junit).toMatch(
      /<testcase classname="add\.Tensor" name="float16\.compile \[compiled\]"><failure type="COMPILE-FAILED" message="AssertionError at/,
    );
    expect(junit).toContain('name="float16.values [compiled]"');
    const term = toTerminal(rep, plain);
    expect(term).toContain("COMPILE-FAILED add.Tensor float16 compile [compiled]: AssertionError at");
    expect(term).toContain("conformance (compiled, Inductor): ");
    expect(term).toContain("1 compile-failed");
    const md = toMarkdown(rep);
    expect(md).toContain("`refdev` (compiled, Inductor): ❌ 2 problems");
    expect(md).toContain("1 failed, 1 compile-failed, ");
    const page = toHtml(rep);
    expect(page).toContain('<h1 data-compiled="true">');
    expect(page).toContain('<td data-key="compile_failed">1</td>');
    expect(JSON.parse(JSON.stringify(rep)).meta.compiled).toBe(true);
  });

  it("an eager report shows none of it", () => {
    const eager = makeReport(
      { device: "refdev", seed: 0, max_samples: 6, torch_version: "2.13.0", shards: [] },
      ops,
      aggregate(records.slice(0, 1), ops),
      193,
    );
    expect(toJunit(eager)).not.toContain("compiled");
    expect(toHtml(eager)).not.toContain("compile_failed");
    expect(toMarkdown(eager)).not.toContain("compile-failed");
  });

  it("shards of a compiled and an eager run do not merge", () => {
    const c = compiledReport();
    const e = { ...c, meta: { ...c.meta, compiled: undefined } };
    expect(() =>
      mergeReports([
        { file: "a.json", report: c },
        { file: "b.json", report: e as Report },
      ]),
    ).toThrow(UserError);
  });
});

describe("Note [Expectation modes]", () => {
  const file = parseExpectations(
    [
      "expectations:",
      "  - op: _softmax",
      "    dtype: int*",
      "    check: errors",
      "    mode: compiled",
      "    reason: Inductor's softmax decomposition computes integer input eager CPU refuses",
      "  - op: relu",
      "    mode: eager",
      "    reason: an eager kernel bug",
      "  - op: 'add*'",
      "    check: compile",
      "    reason: eager CPU's own, so both",
      "tolerances:",
      "  - op: sum*",
      "    mode: compiled",
      "    rtol: 1e-3",
      "",
    ].join("\n"),
    "e.yaml",
  );
  const r = (op: string, dtype: string, check: string, status: Result["status"]): Result => ({
    op,
    dtype,
    check,
    status,
    message: "m",
    seed: 0,
    sample: 0,
    samples: 1,
    input: "",
  });

  it("reads mode (any is the default and is not written)", () => {
    expect(file.expectations.map((e) => e.mode)).toEqual(["compiled", "eager", undefined]);
    expect(file.tolerances[0]?.mode).toBe("compiled");
  });

  it.each([
    ["a compiled entry applies to a compiled run", "_softmax", "int64", "errors", "fail", true, "xfail"],
    ["a compiled entry is ignored by an eager run", "_softmax", "int64", "errors", "fail", false, "fail"],
    ["an eager entry applies to an eager run", "relu", "float32", "values", "fail", false, "xfail"],
    ["an eager entry is ignored by a compiled run", "relu", "float32", "values", "fail", true, "fail"],
    ["nor does it turn a compiled pass into XPASS", "relu", "float32", "values", "pass", true, "pass"],
    [
      "compile-failed is a failure an entry expects",
      "add.Tensor",
      "float16",
      "compile",
      "compile-failed",
      true,
      "xfail",
    ],
    ["an entry without mode applies to an eager run too", "add.Tensor", "float16", "compile", "fail", false, "xfail"],
    ["a compiled entry whose results pass is XPASS", "_softmax", "int8", "errors", "pass", true, "xpass"],
  ] as const)("%s", (_name, op, dtype, check, given, compiled, want) => {
    const out = applyExpectations([r(op, dtype, check, given)], file.expectations, undefined, compiled);
    expect(out[0]?.status).toBe(want);
  });

  it("modeApplies", () => {
    expect([modeApplies(undefined, false), modeApplies(undefined, true)]).toEqual([true, true]);
    expect([modeApplies("eager", false), modeApplies("eager", true)]).toEqual([true, false]);
    expect([modeApplies("compiled", true), modeApplies("compiled", false)]).toEqual([true, false]);
    expect([modeApplies("any", true), modeApplies("any", false)]).toEqual([true, true]);
  });

  it("refuses an unknown mode with its place", () => {
    try {
      parseExpectations("expectations:\n  - op: relu\n    mode: jit\n    reason: r\n", "e.yaml");
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(UserError);
      const text = (e as UserError).diagnostics
        .map((d) => `${d.loc?.file}:${d.loc?.line}:${d.loc?.col}: ${d.message}`)
        .join("\n");
      expect(text).toMatch(/^e\.yaml:3:11: unknown mode 'jit'; allowed: eager, compiled, any$/);
    }
  });
});
