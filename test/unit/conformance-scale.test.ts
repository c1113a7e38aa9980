/**
 * Reports at 200+ operators (issue 9 item 4): operator families, the grouped
 * HTML, the short Markdown, the uncovered core overloads in the report data,
 * and `report diff`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { makeReport, mergeReports } from "../../src/conformance/aggregate.js";
import {
  DiffInputError,
  diffReports,
  diffToJson,
  diffToMarkdown,
  diffToTerminal,
  readReportForDiff,
} from "../../src/conformance/diff.js";
import { FAMILIES, familyOf } from "../../src/conformance/families.js";
import { toHtml, toMarkdown } from "../../src/conformance/formats.js";
import type { OpUnderTest, Report, ReportCoverage, Result, Status } from "../../src/conformance/types.js";

const plain = {
  red: (s: string) => s,
  green: (s: string) => s,
  yellow: (s: string) => s,
  dim: (s: string) => s,
  bold: (s: string) => s,
};

describe("operator families (Note [Operator families])", () => {
  it.each<[string, string]>([
    ["abs", "pointwise-unary"],
    ["abs_", "pointwise-unary"],
    ["abs.out", "pointwise-unary"],
    ["clamp", "pointwise-unary"],
    ["clamp.Tensor", "pointwise-binary"],
    ["add.Tensor", "pointwise-binary"],
    ["add_.Scalar", "pointwise-binary"],
    ["where.self", "pointwise-binary"],
    ["gelu_backward", "pointwise-binary"],
    ["_foreach_add_.List", "pointwise-binary"],
    ["_foreach_sqrt", "pointwise-unary"],
    ["max.other", "pointwise-binary"],
    ["max.dim", "reduction"],
    ["max", "reduction"],
    ["sum.dim_IntList", "reduction"],
    ["cumsum_", "reduction"],
    ["var.correction", "reduction"],
    ["index.Tensor", "indexing"],
    ["scatter_reduce.two", "indexing"],
    ["sort.stable", "indexing"],
    ["_embedding_bag", "indexing"],
    ["_softmax", "normalization"],
    ["_log_softmax_backward_data", "normalization"],
    ["_native_batch_norm_legit.no_stats", "normalization"],
    ["native_layer_norm_backward", "normalization"],
    ["nll_loss_forward", "loss"],
    ["mse_loss_backward", "loss"],
    ["convolution_backward", "convolution"],
    ["max_pool2d_with_indices", "convolution"],
    ["_adaptive_avg_pool2d_backward", "convolution"],
    ["upsample_bilinear2d.vec", "convolution"],
    ["reflection_pad2d", "convolution"],
    ["constant_pad_nd", "convolution"],
    ["addmm", "linalg"],
    ["_cdist_forward", "linalg"],
    ["linalg_solve", "linalg"],
    ["empty.memory_format", "factory"],
    ["fill_.Scalar", "factory"],
    ["native_dropout", "factory"],
    ["normal_", "factory"],
    ["randperm", "factory"],
    ["view", "view"],
    ["_to_copy", "view"],
    ["_copy_from_and_resize", "view"],
    ["set_.source_Storage", "view"],
    ["cat.out", "view"],
    ["sym_size.int", "view"],
    ["_cufft_get_plan_cache_size", "other"],
    ["no_such_op_at_all", "other"],
  ])("%s is %s", (op, family) => {
    expect(familyOf(op)).toBe(family);
  });

  it("puts every operator of the reference backend somewhere other than 'other'", () => {
    const yaml = parse(readFileSync(path.resolve("backends/ref/backend.yaml"), "utf8")) as {
      supported: (string | Record<string, unknown>)[];
      runtime?: (string | Record<string, unknown>)[];
    };
    const names = [...yaml.supported, ...(yaml.runtime ?? [])].map((e) =>
      typeof e === "string" ? e : Object.keys(e)[0]!,
    );
    expect(names.length).toBeGreaterThan(150);
    expect(names.filter((n) => familyOf(n) === "other")).toEqual([]);
  });
});

const DTYPES = ["float32", "float16", "int64"];
const CHECKS = ["values", "dtype", "extremes"];

/** A run over `ops` where `bad` maps "op/dtype/check" to a status. */
function fakeReport(opsList: readonly string[], bad: Record<string, Status> = {}, coverage?: ReportCoverage): Report {
  const ops: OpUnderTest[] = opsList.map((op) => ({
    op,
    kind: "functional",
    core: !op.startsWith("x_"),
    view: false,
    dtypes: DTYPES,
  }));
  const results: Result[] = [];
  for (const op of opsList) {
    for (const dtype of DTYPES) {
      for (const check of CHECKS) {
        const status = bad[`${op}/${dtype}/${check}`] ?? "pass";
        results.push({
          op,
          dtype,
          check,
          status,
          message: status === "pass" ? "" : `${op} ${dtype} ${check} is ${status}`,
          seed: 0,
          sample: 1,
          samples: 4,
          input: "(t)",
        });
      }
    }
  }
  return makeReport(
    { device: "fake", seed: 0, max_samples: 6, torch_version: "2.13.0", shards: [] },
    ops,
    results,
    193,
    coverage,
  );
}

/** 240 overload names across the families. */
function manyOps(): string[] {
  const bases = [
    "abs", "neg", "exp", "add.Tensor", "mul.Tensor", "where.self", "sum.dim_IntList", "amax", "cumsum", "gather",
    "index_select", "sort", "_softmax", "native_layer_norm", "mse_loss", "convolution", "max_pool2d_with_indices",
    "mm", "addmm", "full", "rand", "view", "cat", "_cufft_get_plan_cache_size",
  ]; // biome-ignore format: a table
  const out: string[] = [];
  for (let i = 0; i < 10; i++) for (const b of bases) out.push(i === 0 ? b : `${b}${b.includes(".") ? "_" : "."}v${i}`);
  return out;
}

const coverage: ReportCoverage = {
  core_total: 193,
  core_covered: 189,
  missing: [
    { name: "avg_pool2d", fate: "cpu-fallback" },
    { name: "_cufft_clear_plan_cache", fate: "cpu-fallback" },
    { name: "embedding", fate: "composite-kernel" },
    { name: "var.dim", fate: "decomposes" },
  ],
};

describe("grouped HTML report", () => {
  const bad: Record<string, Status> = {
    "abs/float16/values": "fail",
    "gather/int64/dtype": "crash",
    "mm/float32/values": "timeout",
  };
  const rep = fakeReport(
    ["abs", "neg", "add.Tensor", "gather", "mm", "view", "_softmax", "_cufft_get_plan_cache_size"],
    bad,
    coverage,
  );
  const html = toHtml(rep);

  it("groups operators by family, opens the families with problems, collapses all-pass rows", () => {
    const families = [...html.matchAll(/<details class="family" id="family-([a-z-]+)"[^>]*?( open)?>/g)];
    expect(families.map((m) => m[1])).toEqual([
      "pointwise-unary",
      "pointwise-binary",
      "indexing",
      "normalization",
      "linalg",
      "view",
      "other",
    ]);
    expect(families.filter((m) => m[2]).map((m) => m[1])).toEqual(["pointwise-unary", "indexing", "linalg"]);
    // abs has a problem: shown; neg passes: inside the collapsed all-pass group of its family
    const unary = html.slice(html.indexOf('id="family-pointwise-unary"'), html.indexOf('id="family-pointwise-binary"'));
    const allpass = unary.indexOf('<details class="allpass">');
    expect(allpass).toBeGreaterThan(0);
    expect(unary.indexOf('data-op="abs" data-worst="fail"')).toBeLessThan(allpass);
    expect(unary.indexOf('data-op="neg" data-worst="pass"')).toBeGreaterThan(allpass);
    expect(unary).toContain("1 operator passes every check on every dtype");
    // every op x dtype cell once
    expect(html.match(/<td class="c" data-op=/g)).toHaveLength(8 * DTYPES.length);
    expect(html).toContain('data-op="gather" data-worst="crash" data-statuses="crash pass"');
  });

  it("has a status filter over every status", () => {
    expect(html).toContain('<div id="heatmap">');
    expect(html).toContain('<select id="status-filter"><option value="all">any</option>');
    for (const st of ["problems", "fail", "crash", "timeout", "xpass", "xfail", "warn", "skip", "pass"]) {
      expect(html).toContain(`<option value="${st}">`);
    }
  });

  it("lists the uncovered core overloads by fate, from the report's coverage data", () => {
    expect(html).toContain('<h2 id="uncovered">Core ATen overloads the backend does not cover (4 of 193)</h2>');
    expect(html).toContain('<h3 data-fate="cpu-fallback">2 overloads fall back to CPU</h3>');
    expect(html).toContain('<li class="uncovered-op" data-fate="cpu-fallback" data-family="convolution">avg_pool2d');
    expect(html).toContain('<li class="uncovered-op" data-fate="decomposes" data-family="reduction">var.dim');
    expect(html).toContain("189/193 core overloads registered; 4 not covered (2 fall back to CPU");
    const without = toHtml(fakeReport(["abs"]));
    expect(without).toContain("Not known: this report was made without the project's backend.yaml");
  });

  it("scales: 240 operators in 11 families, one row each", () => {
    const ops = manyOps();
    expect(new Set(ops).size).toBe(240);
    const big = toHtml(fakeReport(ops, { "abs.v3/float32/values": "fail" }, coverage));
    expect(big.match(/<tr class="op-row"/g)).toHaveLength(240);
    expect(big.match(/<details class="family"/g)).toHaveLength(11);
    expect(big.match(/<details class="family"[^>]* open>/g)).toHaveLength(1);
  });
});

describe("short Markdown summary", () => {
  it("is a few lines of totals and at most 20 problem rows, then how many more", () => {
    const ops = manyOps();
    const bad: Record<string, Status> = {};
    for (const op of ops.slice(0, 35)) {
      bad[`${op}/float16/values`] = "fail";
      bad[`${op}/int64/dtype`] = "fail";
    }
    const md = toMarkdown(fakeReport(ops, bad, coverage));
    const lines = md.trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(32);
    expect(lines.filter((l) => l.startsWith("| ❌"))).toHaveLength(20);
    expect(md).toContain("15 more operators with problems (30 results) in the full report.");
    expect(md).toContain("❌ 70 problems in 35 operators");
    expect(md).toContain("| float16 int64 | values dtype |");
    expect(md).toContain("189/193 core overloads registered; 4 not covered");
  });

  it("says so when there are no problems", () => {
    const md = toMarkdown(fakeReport(["abs", "neg"]));
    expect(md).toContain("✅ no problems");
    expect(md).not.toContain("| op |");
  });
});

describe("coverage in the report data", () => {
  it("is in the JSON and survives report merge", () => {
    const a = fakeReport(["abs"], {}, coverage);
    const b = fakeReport(["neg"], {}, coverage);
    const shard = (r: Report, s: string) => ({ ...r, meta: { ...r.meta, shards: [s] } });
    const m = mergeReports([
      { file: "a.json", report: shard(a, "1/2") },
      { file: "b.json", report: shard(b, "2/2") },
    ]);
    expect(m.coverage).toEqual(coverage);
    expect(JSON.parse(JSON.stringify(a)).coverage.missing).toHaveLength(4);
    expect("coverage" in fakeReport(["abs"])).toBe(false);
  });
});

describe("report diff (Note [Report diff])", () => {
  const old = fakeReport(["abs", "neg", "add.Tensor", "gone_op"], {
    "neg/float32/values": "fail",
    "add.Tensor/int64/dtype": "fail",
    "abs/float16/extremes": "warn",
  });
  const now = fakeReport(["abs", "neg", "add.Tensor", "new_op"], {
    "abs/float32/values": "fail", // pass -> fail
    "add.Tensor/int64/dtype": "crash", // fail -> crash: worse
    "abs/float16/extremes": "pass", // warn -> pass: changed
    "new_op/float16/values": "timeout", // new problem
  });
  const d = diffReports({ file: "old.json", report: old }, { file: "new.json", report: now });

  it("classifies every changed result", () => {
    const keys = (es: readonly { op: string; dtype: string; check: string }[]) =>
      es.map((e) => `${e.op}/${e.dtype}/${e.check}`);
    expect(keys(d.regressed)).toEqual(["abs/float32/values", "add.Tensor/int64/dtype"]);
    expect(d.regressed[0]).toMatchObject({ old: "pass", new: "fail", message: "abs float32 values is fail" });
    expect(keys(d.fixed)).toEqual(["neg/float32/values"]);
    expect(keys(d.changed)).toEqual(["abs/float16/extremes"]);
    expect(d.added).toHaveLength(9);
    expect(d.added.every((e) => e.op === "new_op" && e.old === undefined)).toBe(true);
    expect(d.gone).toHaveLength(9);
    expect(d.gate).toBe(1);
    expect(d.notes).toEqual([]);
  });

  it("gates on a new problem alone, and not on fixes, gone or other changes", () => {
    const base = fakeReport(["abs", "neg"], { "neg/float32/values": "fail" });
    const fixedOnly = fakeReport(["abs"], {});
    expect(diffReports({ file: "a", report: base }, { file: "b", report: fixedOnly }).gate).toBe(0);
    const newBad = fakeReport(["abs", "neg", "x_new"], { "neg/float32/values": "fail", "x_new/int64/values": "fail" });
    const nd = diffReports({ file: "a", report: base }, { file: "b", report: newBad });
    expect(nd.regressed).toEqual([]);
    expect(nd.gate).toBe(1);
    expect(diffReports({ file: "a", report: base }, { file: "b", report: base }).gate).toBe(0);
  });

  it("notes different run settings", () => {
    const other = { ...now, meta: { ...now.meta, seed: 7 } };
    expect(diffReports({ file: "a", report: old }, { file: "b", report: other }).notes).toEqual([
      "seed differs: 0 in old, 7 in new",
    ]);
  });

  it("renders a terminal table, JSON and a short Markdown", () => {
    const t = diffToTerminal(d, plain);
    expect(t).toContain("regressed (2)");
    expect(t).toMatch(/abs\s+float32\s+values\s+pass -> fail\s+abs float32 values is fail/);
    expect(t).toContain("fixed (1)");
    expect(t).toContain("new problems (1)");
    expect(t).toContain("new results (9): new_op (9)");
    expect(t).toContain("gone results (9): gone_op (9)");
    expect(t).toContain("2 regressed, 1 new problem: exit 1");
    const j = JSON.parse(diffToJson(d));
    expect(j.regressed).toHaveLength(2);
    expect(j.gate).toBe(1);
    const md = diffToMarkdown(d);
    expect(md).toContain("❌ 2 regressed, 1 new problems, 1 fixed");
    expect(md).toContain("| ❌ regressed | `abs` | float32 | values | pass -> fail |");
    expect(md).toContain("| ✅ fixed | `neg` | float32 | values | fail -> pass |");
  });

  it("refuses bad input with the file and what is wrong", () => {
    const check = (file: string, re: RegExp) => {
      let err: unknown;
      try {
        readReportForDiff(file);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DiffInputError);
      // main exits with it (Note [Exit codes]): 2, since 1 means "regressed"
      expect((err as DiffInputError).exitCode).toBe(2);
      expect((err as Error).message).toMatch(re);
      expect((err as Error).message).not.toContain("\n");
    };
    check("/nonexistent/old.json", /^report diff: \/nonexistent\/old\.json: cannot read it \(ENOENT\)$/);
    check(path.resolve("package.json"), /package\.json: not a conformance report \(no meta\)/);
    check(path.resolve("README.md"), /README\.md: not JSON/);
  });
});

describe("FAMILIES", () => {
  it("ends with 'other'", () => {
    expect(FAMILIES.at(-1)).toBe("other");
  });
});
