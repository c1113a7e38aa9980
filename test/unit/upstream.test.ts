/**
 * `test --upstream`'s pure parts: the file specs, the expectations file's
 * `test:` entries, how a record becomes a result (Note [Passed on CPU]), the
 * entries --update-expectations adds, and the section in every report. The
 * run itself (fetch, cache, device, crash isolation) is the reference e2e's
 * (test/e2e/reference.test.ts) and python/tests/test_upstream.py's.
 */
import { describe, expect, it } from "vitest";
import { makeReport, mergeReports } from "../../src/conformance/aggregate.js";
import { applyExpectations, parseExpectations } from "../../src/conformance/expectations.js";
import { toHtml, toJunit, toMarkdown, toTerminal } from "../../src/conformance/formats.js";
import { DEFAULT_UPSTREAM_FILES, newExpectations, parseUpstreamSpecs } from "../../src/conformance/upstream.js";
import {
  testDtype,
  type UpstreamRecord,
  upstreamResults,
  upstreamSection,
} from "../../src/conformance/upstream-report.js";
import { UserError } from "../../src/util/errors.js";
import { style } from "../../src/util/term.js";
import { appendToTopLevelList } from "../../src/yaml/edit.js";

const F = "test_x.py";
const C = `${F}::TestXPRIVATEUSE1`;
const test = (
  id: string,
  status: "pass" | "fail" | "skip" | "crash" | "timeout",
  fallback: Record<string, number> = {},
  under_test: string[] = [],
  message = "",
): UpstreamRecord => ({ kind: "upstream_test", file: F, id: `${C}::${id}`, status, message, fallback, under_test });
const RECORDS: UpstreamRecord[] = [
  { kind: "upstream_header", device: "refdev" },
  test("test_add_refdev_float32", "pass"),
  test("test_unfold_view_refdev", "pass", { "aten::unfold": 2 }, ["aten::unfold"]),
  test("test_sum_refdev", "pass", { "aten::roll": 1 }),
  test("test_bad_refdev", "fail", {}, [], "AssertionError: Tensor-likes are not close!"),
  test("test_boom_refdev", "crash", {}, [], "the test process died (SIGSEGV) during this test"),
  test("test_skip_refdev", "skip", {}, [], "Only runs on cuda"),
  {
    kind: "upstream_file",
    file: F,
    collected: 6,
    errors: [],
    not_run: [],
    processes: 2,
    crashes: 1,
    timeouts: 0,
  },
  {
    kind: "upstream_file",
    file: "test_gone.py",
    collected: 0,
    errors: ["test_gone.py: ModuleNotFoundError: No module named 'common_gone'"],
    not_run: [],
    processes: 1,
    crashes: 0,
    timeouts: 0,
  },
];

function report(strict: boolean, exp = "") {
  const results = applyExpectations(upstreamResults(RECORDS, strict), parseExpectations(exp, "e.yaml").expectations);
  const section = upstreamSection(
    RECORDS,
    results,
    { commit: "cf30153c4c131c8164ee7798e5022d810682e2cb", source: "http://mirror", strict, classes: {} },
    { "test_gone.py": ["common_gone"] },
  );
  const meta = { device: "refdev", seed: 0, max_samples: 0, torch_version: "2.13.0", shards: [] };
  return makeReport(meta, [], results, 0, undefined, undefined, section);
}

const status = (rep: ReturnType<typeof report>, id: string) =>
  rep.results.find((r) => r.op === `upstream:${C}::${id}`)?.status;

describe("upstream file specs", () => {
  it.each<[string, { given: string[]; want: { file: string; classes: string[] }[] }]>([
    ["one file", { given: ["test_view_ops.py"], want: [{ file: "test_view_ops.py", classes: [] }] }],
    [
      "classes, comma-separated and repeated",
      {
        given: ["test_ops.py::TestCommon,test_nn.py", "test_ops.py::TestMathBits+TestCommon"],
        want: [
          { file: "test_ops.py", classes: ["TestCommon", "TestMathBits"] },
          { file: "test_nn.py", classes: [] },
        ],
      },
    ],
    [
      "a whole file wins over its classes",
      { given: ["test_ops.py::TestCommon,test_ops.py"], want: [{ file: "test_ops.py", classes: [] }] },
    ],
    ["a file under a folder", { given: ["nn/test_pooling.py"], want: [{ file: "nn/test_pooling.py", classes: [] }] }],
  ])("%s", (_n, { given, want }) => {
    expect(parseUpstreamSpecs(given)).toEqual(want);
  });

  it("defaults to the issue's set", () => {
    const d = parseUpstreamSpecs([]);
    expect(d.map((s) => s.file)).toHaveLength(DEFAULT_UPSTREAM_FILES.length);
    expect(d).toContainEqual({ file: "test_ops.py", classes: ["TestCommon"] });
    expect(d).toContainEqual({ file: "test_nn.py", classes: ["TestNNDeviceType"] });
  });

  it.each([
    "../etc/passwd.py",
    "/abs/test_x.py",
    "test_x.txt",
    "test_x.py::Bad-Class",
    "a::b::c.py",
  ])("refuses %s, saying what is allowed", (bad) => {
    expect(() => parseUpstreamSpecs([bad])).toThrow(/not a test file; allowed: a path under PyTorch's test\//);
  });
});

describe("expectations: test entries", () => {
  it("an entry's test: glob matches upstream test ids, with its reason", () => {
    const e = parseExpectations(
      `expectations:\n  - test: "${F}::*::test_bad_*"\n    reason: "unsupported: complex"\n`,
      "e.yaml",
    );
    expect(e.expectations[0]).toMatchObject({ op: `upstream:${F}::*::test_bad_*`, dtype: "*", check: "*" });
    const rep = report(false, `expectations:\n  - test: "${F}::*::test_bad_*"\n    reason: "unsupported: complex"\n`);
    expect(status(rep, "test_bad_refdev")).toBe("xfail");
  });

  it.each<[string, { given: string; want: RegExp }]>([
    [
      "both op and test",
      {
        given: "expectations:\n  - op: add\n    test: a\n    reason: r\n",
        want: /2:9: an entry names an op or a test/,
      },
    ],
    [
      "dtype on a test entry",
      {
        given: "expectations:\n  - test: a\n    dtype: float32\n    reason: r\n",
        want: /3:12: 'dtype' applies to op entries/,
      },
    ],
    ["neither op nor test", { given: "expectations:\n  - reason: r\n", want: /2:5: .*needs 'op' .* or 'test'/ }],
    [
      "an empty test",
      { given: 'expectations:\n  - test: ""\n    reason: r\n', want: /2:11: 'test' must be a non-empty/ },
    ],
  ])("reports %s with file:line:col", (_n, { given, want }) => {
    try {
      parseExpectations(given, "e.yaml");
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(UserError);
      const text = (e as UserError).diagnostics.map((d) => `${d.loc?.line}:${d.loc?.col}: ${d.message}`).join("\n");
      expect(text).toMatch(want);
    }
  });
});

describe("upstream results", () => {
  it("a pass whose op under test fell back is 'passed on CPU'; another op's fallback leaves it a pass", () => {
    const rep = report(false);
    expect(status(rep, "test_add_refdev_float32")).toBe("pass");
    expect(status(rep, "test_unfold_view_refdev")).toBe("warn");
    expect(rep.results.find((r) => r.op.endsWith("test_unfold_view_refdev"))?.message).toBe(
      "passed on CPU: the op under test ran through the CPU fallback: aten::unfold (2)",
    );
    expect(status(rep, "test_sum_refdev")).toBe("pass");
    expect(status(rep, "test_boom_refdev")).toBe("crash");
    const f = rep.upstream?.files.find((x) => x.file === F);
    expect(f?.counts).toEqual({
      tests: 6,
      passed: 2,
      passed_on_cpu: 1,
      failed: 1,
      crashed: 1,
      timed_out: 0,
      skipped: 1,
      xfail: 0,
      xpass: 0,
      used_fallback: 2,
    });
    // a file that did not collect is a failure, with what it lacks
    const gone = rep.results.find((r) => r.op === "upstream:test_gone.py");
    expect(gone?.status).toBe("fail");
    expect(rep.upstream?.files.find((x) => x.file === "test_gone.py")?.errors[0]).toBe(
      "imports common_gone: not installed here, and no test/ file provides it",
    );
    // tests are not operators
    expect(rep.summary.ops).toBe(0);
  });

  it("--strict fails every test that ran anything on CPU", () => {
    const rep = report(true);
    expect(status(rep, "test_unfold_view_refdev")).toBe("fail");
    expect(status(rep, "test_sum_refdev")).toBe("fail");
    expect(rep.results.find((r) => r.op.endsWith("test_sum_refdev"))?.message).toBe(
      "ran on the CPU fallback (--strict): aten::roll (1)",
    );
    expect(status(rep, "test_add_refdev_float32")).toBe("pass");
  });

  it.each([
    ["test_add_refdev_float32", "float32"],
    ["test_cat_refdev_uint16", "uint16"],
    ["test_to_refdev_float8_e4m3fn", "float8_e4m3fn"],
    ["test_view_refdev", "-"],
  ])("%s has dtype %s", (id, want) => {
    expect(testDtype(`${C}::${id}`)).toBe(want);
  });
});

describe("--update-expectations", () => {
  it("adds one entry per failing test not yet expected, with its first error line, after what is there", () => {
    const mine = '# mine\nexpectations:\n  - test: "*::test_boom_*"\n    reason: "eager-cpu: crashes there too"\n';
    const before = report(false, mine).results;
    const lines = newExpectations(before);
    expect(lines).toEqual([
      `{test: "test_gone.py", reason: "fail: cannot collect: test_gone.py: ModuleNotFoundError: No module named 'common_gone'"}`,
      `{test: "${C}::test_bad_refdev", reason: "fail: AssertionError: Tensor-likes are not close!"}`,
    ]);
    const edited = appendToTopLevelList(mine, "expectations", lines, "added").text;
    expect(edited.startsWith(mine)).toBe(true);
    const after = report(false, edited);
    expect(after.results.filter((r) => ["fail", "crash", "timeout"].includes(r.status))).toEqual([]);
    expect(newExpectations(after.results)).toEqual([]);
  });
});

describe("upstream section in the reports", () => {
  it("renders in Markdown, HTML, terminal and JUnit, and survives report merge", () => {
    const rep = report(false);
    const md = toMarkdown(rep);
    expect(md).toContain("**Upstream tests:** PyTorch's tests at cf30153c4c13 (http://mirror): 7 tests: 2 passed");
    expect(md).toContain("| `test_x.py` | 6 | 2 | 1 | 1 | 1 | 0 | 1 | 0 | 0 | — |");
    const html = toHtml(rep);
    expect(html).toContain('<h2 id="upstream">Upstream tests (2 files)</h2>');
    expect(html).toMatch(
      /<tr class="upstream-test" data-status="warn" data-test="[^"]+test_unfold_view_refdev"><td[^>]*>passed on CPU/,
    );
    expect(html).not.toContain('data-op="upstream:'); // not in the operator heatmap
    const term = toTerminal(rep, style({ isTTY: false } as NodeJS.WriteStream));
    expect(term).toContain(
      "  test_x.py: 6 tests: 2 passed, 1 passed on CPU, 1 failed, 1 crashed, 1 skipped; 2 ran some operator on CPU",
    );
    expect(term).not.toContain("operators pass everything");
    expect(toJunit(rep)).toContain(`<testcase classname="upstream:${C}::test_bad_refdev" name="-.test"><failure`);
    const merged = mergeReports([
      { file: "a.json", report: rep },
      { file: "b.json", report: { ...rep, results: [], upstream: rep.upstream } },
    ]);
    expect(merged.upstream?.files.find((f) => f.file === F)?.counts.passed).toBe(4);
  });
});
