import { describe, expect, it } from "vitest";
import {
  aggregate,
  failed,
  makeReport,
  mergeReports,
  missingShards,
  parseJsonl,
  passingOps,
} from "../../src/conformance/aggregate.js";
import { conformantOps } from "../../src/conformance/bench-report.js";
import { diffReports } from "../../src/conformance/diff.js";
import { applyExpectations, globMatch, parseExpectations } from "../../src/conformance/expectations.js";
import { problems, toHtml, toJunit, toMarkdown, toTerminal } from "../../src/conformance/formats.js";
import { type OpUnderTest, type RawRecord, type Report, type Result, STATUSES } from "../../src/conformance/types.js";
import { UserError } from "../../src/util/errors.js";
import { isProblem, PROBLEM_STATUSES } from "../../src/vocab.js";

const plain = {
  red: (s: string) => s,
  green: (s: string) => s,
  yellow: (s: string) => s,
  dim: (s: string) => s,
  bold: (s: string) => s,
};

const header: RawRecord = { kind: "header", seed: 3, max_samples: 4, device: "fake" };

function sample(op: string, dtype: string, k: number, checks: Record<string, [string, string]>): RawRecord {
  return { kind: "sample", op, dtype, sample: k, seed: 3, source: "s", desc: `(in${k})`, checks } as RawRecord;
}

function task(op: string, dtype: string, samples: number): RawRecord {
  return { kind: "task", op, dtype, samples };
}

const ops: OpUnderTest[] = [
  { op: "add.Tensor", kind: "functional", core: true, view: false, dtypes: ["float32", "int64"] },
  { op: "neg", kind: "functional", core: true, view: false, dtypes: ["float32"] },
  { op: "relu", kind: "functional", core: false, view: false, dtypes: ["float32"] },
];

const records: RawRecord[] = [
  header,
  sample("add.Tensor", "float32", 0, { values: ["pass", ""], dtype: ["pass", ""] }),
  sample("add.Tensor", "float32", 2, { values: ["fail", "off by one"], dtype: ["pass", ""] }),
  sample("add.Tensor", "float32", 1, { values: ["fail", "first"], dtype: ["warn", "w"] }),
  task("add.Tensor", "float32", 3),
  sample("add.Tensor", "int64", 0, { values: ["pass", ""] }),
  task("add.Tensor", "int64", 1),
  sample("neg", "float32", 0, { values: ["crash", "SIGSEGV"] }),
  sample("neg", "float32", 1, { values: ["timeout", "hang"] }),
  task("neg", "float32", 2),
  task("relu", "float32", 0),
];

function report(rs: readonly RawRecord[] = records, shards: string[] = []): Report {
  return makeReport(
    { device: "fake", seed: 3, max_samples: 4, torch_version: "2.13.0", shards },
    ops,
    aggregate(rs, ops),
    193,
  );
}

describe("aggregate", () => {
  it("keeps the worst sample per op x dtype x check, earliest on ties", () => {
    const rs = aggregate(records, ops);
    const get = (op: string, dtype: string, check: string) =>
      rs.find((r) => r.op === op && r.dtype === dtype && r.check === check);
    expect(get("add.Tensor", "float32", "values")).toMatchObject({
      status: "fail",
      message: "first",
      sample: 1,
      seed: 3,
      samples: 3,
      input: "(in1)",
    });
    expect(get("add.Tensor", "float32", "dtype")).toMatchObject({ status: "warn", sample: 1 });
    expect(get("neg", "float32", "values")).toMatchObject({ status: "crash", sample: 0 });
    expect(get("relu", "float32", "values")).toMatchObject({ status: "skip", samples: 0 });
  });

  it("sorts by op, dtype order, check order", () => {
    const rs = aggregate(records, ops);
    expect(rs.map((r) => `${r.op}/${r.dtype}/${r.check}`)).toEqual([
      "add.Tensor/float32/values",
      "add.Tensor/float32/dtype",
      "add.Tensor/int64/values",
      "neg/float32/values",
      "relu/float32/values",
    ]);
  });

  it("is independent of record order (resume / parallel workers)", () => {
    const shuffled = [records[0]!, ...records.slice(1).reverse()];
    expect(report(shuffled)).toEqual(report());
  });

  it("ignores a torn last line", () => {
    const text = `${records.map((r) => JSON.stringify(r)).join("\n")}\n{"kind": "sam`;
    expect(parseJsonl(text)).toHaveLength(records.length);
  });

  it("summarizes with core conformance", () => {
    const s = report().summary;
    expect(s).toMatchObject({
      total: 5,
      passed: 1,
      warned: 1,
      failed: 1,
      crashed: 1,
      timed_out: 0,
      skipped: 1,
      core_total: 193,
      core_passed: 0,
    });
    expect(failed(s)).toBe(true);
  });

  it("counts an op as passing only if it has a pass and nothing worse", () => {
    const rs: Result[] = aggregate(
      [
        header,
        sample("relu", "float32", 0, { values: ["pass", ""], strides: ["warn", "x"] }),
        task("relu", "float32", 1),
      ],
      ops,
    );
    expect([...passingOps(rs)]).toEqual(["relu"]);
  });
});

describe("expectations", () => {
  const file = `expectations:
  - op: "add.*"
    dtype: float32
    check: values
    reason: rounding
    issue: https://example.com/1
  - op: "add.Tensor"
    dtype: int64
    reason: known
tolerances:
  - op: "sum*"
    dtype: bfloat16
    rtol: 1e-2
`;

  it("parses entries and tolerances", () => {
    const e = parseExpectations(file, "exp.yaml");
    expect(e.expectations).toHaveLength(2);
    expect(e.expectations[0]).toMatchObject({
      op: "add.*",
      dtype: "float32",
      check: "values",
      issue: "https://example.com/1",
    });
    expect(e.expectations[1]).toMatchObject({ check: "*", dtype: "int64" });
    expect(e.tolerances).toEqual([{ op: "sum*", dtype: "bfloat16", rtol: 0.01 }]);
  });

  it("turns failures into XFAIL and passing known failures into XPASS", () => {
    const e = parseExpectations(file, "exp.yaml");
    const rs = applyExpectations(aggregate(records, ops), e.expectations);
    const v = rs.find((r) => r.op === "add.Tensor" && r.dtype === "float32" && r.check === "values")!;
    expect(v.status).toBe("xfail");
    expect(v.expected?.issue).toBe("https://example.com/1");
    const i = rs.find((r) => r.op === "add.Tensor" && r.dtype === "int64")!;
    expect(i.status).toBe("xpass");
  });

  it.each<[string, { given: string; want: RegExp }]>([
    ["not a mapping", { given: "- a\n", want: /1:1: the expectations file must be a mapping/ }],
    ["unknown key", { given: "expectation: []\n", want: /1:1: unknown key 'expectation'/ }],
    ["missing reason", { given: "expectations:\n  - op: add\n", want: /2:5: expectations entry needs 'reason'/ }],
    [
      "bad check",
      { given: "expectations:\n  - op: a\n    check: valus\n    reason: r\n", want: /3:12: unknown check 'valus'/ },
    ],
    [
      "bad tolerance",
      { given: "tolerances:\n  - op: a\n    rtol: -1\n", want: /3:11: 'rtol' must be a non-negative number/ },
    ],
  ])("reports %s with file:line:col", (_name, { given, want }) => {
    try {
      parseExpectations(given, "exp.yaml");
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(UserError);
      const text = (e as UserError).diagnostics
        .map((d) => `${d.loc?.file}:${d.loc?.line}:${d.loc?.col}: ${d.message}`)
        .join("\n");
      expect(text).toMatch(want);
      expect(text).toMatch(/^exp\.yaml:/);
    }
  });

  it("reports every problem at once", () => {
    try {
      parseExpectations("expectations:\n  - op: a\n  - reason: r\nfoo: 1\n", "e.yaml");
      expect.unreachable();
    } catch (e) {
      expect((e as UserError).diagnostics).toHaveLength(3);
    }
  });

  it.each<[string, string, boolean]>([
    ["add.*", "add.Tensor", true],
    ["add.*", "addmm", false],
    ["*_", "add_", true],
    ["a?d", "add", true],
    ["[ab]dd", "bdd", true],
    ["max.dim", "max.dim_max", false],
  ])("glob %s ~ %s", (g, s, want) => {
    expect(globMatch(g, s)).toBe(want);
  });
});

describe("reports agree", () => {
  const rep = report();

  it("JUnit has one testcase per result with matching counts", () => {
    const xml = toJunit(rep);
    expect(xml.match(/<testcase /g)).toHaveLength(rep.summary.total);
    expect(xml).toMatch(/<testsuites [^>]*tests="5" failures="1" errors="1" skipped="1"/);
    expect(xml).toContain('classname="add.Tensor" name="float32.values"><failure type="FAIL" message="first"');
    expect(xml).toContain('<error type="CRASH" message="SIGSEGV"');
  });

  it("HTML is self-contained and carries the same numbers", () => {
    const html = toHtml(rep);
    // one inline script (the status filter), nothing fetched
    expect(html).not.toMatch(/<link|src=|https?:\/\/|@import|url\(/);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain("<script>(function(){");
    expect(html).toContain('data-core-passed="0" data-core-total="193"');
    expect(html).toContain('<td data-key="total">5</td>');
    expect(html).toContain('<td data-key="failed">1</td>');
    expect(html.match(/<tr class="failure"/g)).toHaveLength(2);
    expect(html).toContain('data-op="neg" data-dtype="float32" data-status="crash"');
  });

  it("escapes what it prints", () => {
    const evil = report([
      header,
      sample("add.Tensor", "float32", 0, { values: ["fail", '<b>&"x"</b>'] }),
      task("add.Tensor", "float32", 1),
    ]);
    expect(toHtml(evil)).toContain("&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;");
    expect(toJunit(evil)).toContain('message="&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;"');
  });

  it("Markdown and terminal summaries", () => {
    const md = toMarkdown(rep);
    expect(md).toContain("**Core ATen conformance: 0/193 (0.0%)**");
    expect(md).toContain(
      "5 results: 1 passed, 1 warned, 1 failed, 1 crashed, 0 timed out, 1 skipped, 0 xfail, 0 xpass",
    );
    expect(md).toContain(
      "| ❌ fail | `add.Tensor` | float32 | values | float32 values: first | `--seed 3 --sample 1` |",
    );
    expect(md).toContain("| 💥 crash | `neg` | float32 | values | float32 values: SIGSEGV |");
    const t = toTerminal(rep, plain);
    expect(t).toContain("CRASH neg float32 values: SIGSEGV (seed 3 sample 0)");
    expect(t).toContain("core ATen conformance 0/193 (0.0%)");
  });

  it("is deterministic", () => {
    expect(toHtml(report())).toBe(toHtml(report()));
    expect(toJunit(report())).toBe(toJunit(report()));
  });
});

describe("core overloads through their decomposition (Note in coverage.ts)", () => {
  const dops: OpUnderTest[] = [
    { op: "neg", kind: "functional", core: true, view: false, dtypes: ["float32"] },
    { op: "var.dim", kind: "functional", core: true, view: false, dtypes: ["float32"], decomposed: true },
    { op: "avg_pool1d", kind: "functional", core: true, view: false, dtypes: ["float32"], decomposed: true },
  ];
  const recs = (poolStatus: string): RawRecord[] => [
    header,
    sample("neg", "float32", 0, { values: ["pass", ""] }),
    task("neg", "float32", 1),
    sample("var.dim", "float32", 0, { values: ["pass", ""], fallback: ["pass", ""] }),
    task("var.dim", "float32", 1),
    sample("avg_pool1d", "float32", 0, {
      values: ["pass", ""],
      fallback: [poolStatus, "aten::x ran on the CPU fallback"],
    }),
    task("avg_pool1d", "float32", 1),
  ];
  const rep = (poolStatus: string) =>
    makeReport(
      { device: "fake", seed: 3, max_samples: 4, torch_version: "2.13.0", shards: [] },
      dops,
      aggregate(recs(poolStatus), dops),
      193,
    );

  it("count towards core ATen conformance, and the headline says what served them", () => {
    const r = rep("pass");
    expect(r.summary).toMatchObject({ core_passed: 3, core_decomposed: 2 });
    expect(toTerminal(r, plain)).toContain(
      "core ATen conformance 3/193 (1.6%): 1 kernel, 2 through their decomposition",
    );
    expect(toMarkdown(r)).toContain("**Core ATen conformance: 3/193 (1.6%): 1 kernel, 2 through their decomposition**");
  });

  it("one that decomposes into the fallback (the runner warns) is left out of core ATen and counted apart", () => {
    const r = rep("warn");
    expect(r.summary).toMatchObject({ core_passed: 2, core_decomposed: 1, core_decomposed_fallback: 1 });
    expect(failed(r.summary)).toBe(false);
    expect(toTerminal(r, plain)).toContain(
      "core ATen conformance 2/193 (1.0%): 1 kernel, 1 through their decomposition; 1 decomposes into the CPU fallback",
    );
  });
});

describe("what a problem is, one rule (vocab.ts PROBLEM_STATUSES)", () => {
  // A report whose only result has the given status: every consumer must agree with isProblem.
  const one = (status: Result["status"]): Report => {
    const base = report([header, sample("relu", "float32", 0, { values: ["pass", ""] }), task("relu", "float32", 1)]);
    const r = { ...base.results.find((x) => x.op === "relu")!, status, message: status };
    return { ...base, results: [r], summary: { ...base.summary } };
  };

  it("is exactly the statuses at least as bad as xpass, least severe first", () => {
    expect(PROBLEM_STATUSES).toEqual(["xpass", "fail", "compile-failed", "timeout", "crash"]);
  });

  it.each(
    STATUSES,
  )("%s: exit code, terminal, JUnit, HTML filter, report diff and bench's conformant ops agree", (st) => {
    const rep = one(st);
    const withCounts = makeReport(rep.meta, ops, rep.results, 193);
    expect(failed(withCounts.summary)).toBe(isProblem(st));
    expect(problems(rep).length === 1).toBe(isProblem(st));
    expect(/<(failure|error) /.test(toJunit(withCounts))).toBe(isProblem(st));
    expect(toHtml(rep)).toContain(`/ (${PROBLEM_STATUSES.join("|")}) /`);
    expect(conformantOps(rep).get("relu")).toBe(!isProblem(st));
    const pass = one("pass");
    expect(
      diffReports({ file: "old.json", report: pass }, { file: "new.json", report: rep }).regressed.length === 1,
    ).toBe(isProblem(st));
  });
});

describe("report merge", () => {
  const part = (names: string[]) =>
    records.filter((r) => r.kind === "header" || names.includes((r as { op: string }).op));

  it("two shards merged equal the unsharded report", () => {
    const a = makeReport(
      { device: "fake", seed: 3, max_samples: 4, torch_version: "2.13.0", shards: ["1/2"] },
      ops.filter((o) => o.op !== "neg"),
      aggregate(part(["add.Tensor", "relu"]), ops),
      193,
    );
    const b = makeReport(
      { device: "fake", seed: 3, max_samples: 4, torch_version: "2.13.0", shards: ["2/2"] },
      ops.filter((o) => o.op === "neg"),
      aggregate(part(["neg"]), ops),
      193,
    );
    const m = mergeReports([
      { file: "a.json", report: a },
      { file: "b.json", report: b },
    ]);
    const whole = report();
    expect(m.results).toEqual(whole.results);
    expect(m.summary).toEqual(whole.summary);
    expect(m.ops).toEqual(whole.ops);
    expect(m.meta.shards).toEqual(["1/2", "2/2"]);
    expect(toJunit(m)).toBe(toJunit(whole));
  });

  it("names the shards a merge lacks", () => {
    expect(missingShards(["1/3", "3/3"])).toEqual(["2/3"]);
    expect(missingShards(["1/2", "2/2"])).toEqual([]);
    expect(missingShards([])).toEqual([]);
  });

  it("refuses reports of different runs", () => {
    const a = report();
    const b = { ...a, meta: { ...a.meta, seed: 9 } };
    expect(() =>
      mergeReports([
        { file: "a.json", report: a },
        { file: "b.json", report: b },
      ]),
    ).toThrow(UserError);
  });
});
