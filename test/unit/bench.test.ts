/**
 * `opgen-backend bench`'s arithmetic and views (src/conformance/bench-report.ts,
 * bench.ts): the statistics, fast_p, the noise threshold of `report diff` and
 * the reports, on hand-made rows. Timings themselves come from the benchmark,
 * never from here.
 */
import { describe, expect, it } from "vitest";
import { benchDtypes, parseRepeatOp, repeatText } from "../../src/conformance/bench.js";
import {
  type BenchMeta,
  type BenchRawRow,
  benchDiffToMarkdown,
  benchDiffToTerminal,
  benchToHtml,
  benchToMarkdown,
  conformantOps,
  diffBench,
  fastP,
  geomean,
  isBenchReport,
  makeBenchReport,
  noiseThreshold,
  quantile,
  relativeSpread,
  rowOf,
} from "../../src/conformance/bench-report.js";
import type { Report } from "../../src/conformance/types.js";

const META: BenchMeta = {
  device: "refdev",
  device_label: "device refdev (refdev:0)",
  reference: "eager CPU (AVX2)",
  threads: 1,
  workers: 1,
  runs: 15,
  clock: "wall",
  repeat_op: "1",
  torch_version: "2.13.0",
  conformance: null,
};

function side(median: number, spread = 0.05) {
  return {
    median_s: median,
    q1_s: median * (1 - spread / 2),
    q3_s: median * (1 + spread / 2),
    spread,
    runs: 15,
    reps: 1,
  };
}

function row(op: string, size: string, dev: number, eager: number, extra: Partial<BenchRawRow> = {}): BenchRawRow {
  return {
    op,
    kind: "functional",
    family: "x",
    dtype: "float32",
    size,
    source: "schema",
    device: side(dev, extra.device?.spread),
    eager: side(eager),
    ...extra,
  };
}

describe("statistics", () => {
  it.each([
    ["geomean of 1/2 and 2 is 1", [0.5, 2], 1],
    ["geomean of 2, 8", [2, 8], 4],
    ["non-positive and non-finite values are ignored", [4, 0, Number.NaN, Number.POSITIVE_INFINITY], 4],
  ] as const)("%s", (_n, xs, want) => {
    expect(geomean(xs)).toBeCloseTo(want, 12);
  });

  it("geomean of nothing is null", () => {
    expect(geomean([])).toBeNull();
  });

  it("quantiles interpolate linearly (Python's statistics.quantiles method='inclusive')", () => {
    const s = [1, 2, 3, 4, 5];
    expect(quantile(s, 0.25)).toBe(2);
    expect(quantile(s, 0.5)).toBe(3);
    expect(quantile([1, 2, 3, 4], 0.25)).toBeCloseTo(1.75, 12);
  });

  it("relative spread is IQR over median", () => {
    expect(relativeSpread([10, 10, 10, 10])).toBe(0);
    expect(relativeSpread([8, 9, 10, 11, 12])).toBeCloseTo((11 - 9) / 10, 12);
  });

  it("a row's ratio is device median over eager median; its spread adds both in quadrature", () => {
    const r = rowOf(row("mm", "64x64", 3e-5, 1e-5, { device: side(3e-5, 0.3) }));
    expect(r.ratio).toBeCloseTo(3, 12);
    expect(r.ratio_spread).toBeCloseTo(Math.hypot(0.3, 0.05), 12);
  });

  it("an error row has no ratio", () => {
    const r = rowOf({ op: "mm", kind: "functional", family: "linalg", dtype: "float32", size: "", error: "boom" });
    expect(r.ratio).toBeUndefined();
  });
});

describe("fast_p", () => {
  const ops = [
    { ratio: 0.4, conformant: true }, // 2.5x as fast
    { ratio: 0.9, conformant: true }, // 1.1x
    { ratio: 1.5, conformant: true }, // slower
    { ratio: 0.3, conformant: false }, // fast but wrong
    { ratio: undefined, conformant: true }, // not timed
  ];
  it.each([
    [0.5, 3 / 5],
    [1, 2 / 5],
    [2, 1 / 5],
  ])("fast_%s counts only conformant ops at least p× as fast, over all ops", (p, want) => {
    expect(fastP(ops, p)).toBeCloseTo(want, 12);
  });
  it("speed alone counts the wrong one too", () => {
    expect(fastP(ops, 2, true)).toBeCloseTo(2 / 5, 12);
  });

  it("a conformance report makes ops with a failing result non-conformant; absent ops are not conformant", () => {
    const rep = {
      results: [
        { op: "mm", status: "pass" },
        { op: "mm", status: "warn" },
        { op: "add.Tensor", status: "pass" },
        { op: "add.Tensor", status: "fail" },
      ],
    } as unknown as Report;
    const m = conformantOps(rep);
    const b = makeBenchReport(
      META,
      [row("mm", "64", 1e-5, 2e-5), row("add.Tensor", "64", 1e-5, 2e-5), row("mul.Tensor", "64", 1e-5, 2e-5)],
      m,
    );
    expect(b.ops.map((o) => [o.op, o.conformant])).toEqual([
      ["add.Tensor", false],
      ["mm", true],
      ["mul.Tensor", false],
    ]);
    expect(b.summary.fast_p?.["1"]).toBeCloseTo(1 / 3, 12);
    expect(b.summary.fast_p_speed_only["1"]).toBe(1);
  });
});

describe("the report", () => {
  const raw: BenchRawRow[] = [
    row("mm", "64x64", 2e-5, 1e-5),
    row("mm", "256x256", 8e-4, 1e-3),
    row("add.Tensor", "64x64", 4e-5, 1e-5, { accuracy: { device_err: 8e-7, eager_err: 1e-7, ratio: 8 } }),
    row("_softmax", "64x64", 1e-5, 1e-5, { accuracy: { device_err: 1e-7, eager_err: 1e-7, ratio: 1 } }),
    {
      op: "nonzero",
      kind: "functional",
      family: "indexing",
      dtype: "float32",
      size: "",
      error: "no input eager CPU runs",
    },
  ];
  const rep = makeBenchReport(META, raw, null);

  it("op ratios are geomeans of their rows; families and overall count each op once", () => {
    const mm = rep.ops.find((o) => o.op === "mm")!;
    expect(mm.ratio).toBeCloseTo(Math.sqrt(2 * 0.8), 12);
    const lin = rep.summary.families.find((f) => f.family === "linalg")!;
    expect(lin.geomean).toBeCloseTo(mm.ratio!, 12);
    expect(rep.summary.geomean).toBeCloseTo((Math.sqrt(1.6) * 4 * 1) ** (1 / 3), 12);
    expect(rep.summary.ops).toBe(4);
    expect(rep.summary.ops_timed).toBe(3);
    expect(rep.summary.errors).toBe(1);
  });

  it("an op over 4× eager's error against float64 is flagged", () => {
    expect(rep.summary.accuracy_flagged).toEqual(["add.Tensor"]);
  });

  it("without a conformance report fast_p is not given, and the Markdown says so", () => {
    expect(rep.summary.fast_p).toBeNull();
    const md = benchToMarkdown(rep);
    expect(md).toContain("fast_p: not given");
    expect(md).toContain("against eager CPU (AVX2)");
    expect(md).toContain("| Linear algebra | 1/1 |");
    expect(md).toContain("`add.Tensor`");
    expect(md).toMatch(/Less accurate than eager.*add\.Tensor/);
  });

  it("the HTML is self-contained, says what it compared, and plots one dot per timed op", () => {
    const html = benchToHtml(rep);
    expect(html).toContain("<svg");
    // nothing loaded from elsewhere (the SVG namespace URI is a name, not a load)
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|(src|href)=["']?https?:|@import|url\(/);
    expect(html).toContain("against eager CPU (AVX2)");
    expect((html.match(/class="op-dot"/g) ?? []).length).toBe(3);
    expect(html).toContain('data-op="add.Tensor"');
    expect(isBenchReport(JSON.parse(JSON.stringify(rep)))).toBe(true);
  });
});

describe("report diff of bench reports", () => {
  const base = makeBenchReport(META, [row("mm", "64", 2e-5, 1e-5), row("add.Tensor", "64", 1e-5, 1e-5)], null);
  const old = { file: "old.json", report: base };

  it("the threshold grows with the measured spread of both runs", () => {
    expect(noiseThreshold(0, 0)).toBe(1);
    expect(noiseThreshold(0.05, 0.05)).toBeCloseTo(Math.exp(3 * Math.hypot(0.05, 0.05)), 12);
    expect(noiseThreshold(0.3, 0.3)).toBeGreaterThan(noiseThreshold(0.05, 0.05));
  });

  it("a rerun within its noise stays quiet", () => {
    const rerun = makeBenchReport(META, [row("mm", "64", 2.1e-5, 1e-5), row("add.Tensor", "64", 0.95e-5, 1e-5)], null);
    const d = diffBench(old, { file: "new.json", report: rerun });
    expect(d.gate).toBe(0);
    expect(d.regressed).toEqual([]);
    expect(d.steady).toBe(2);
    expect(benchDiffToTerminal(d)).toContain("nothing slowed down beyond its noise");
  });

  it("a 3× slowdown of one kernel is a regression, listed with its threshold", () => {
    const slow = makeBenchReport(META, [row("mm", "64", 6e-5, 1e-5), row("add.Tensor", "64", 1e-5, 1e-5)], null);
    const d = diffBench(old, { file: "new.json", report: slow });
    expect(d.gate).toBe(1);
    expect(d.regressed.map((e) => e.op)).toEqual(["mm"]);
    expect(d.regressed[0]!.change).toBeCloseTo(3, 12);
    expect(benchDiffToMarkdown(d)).toContain("| `mm` | float32 | 64 | 2.00× -> 6.00× | 3.00× |");
  });

  it("the same slowdown on a row whose runs are that noisy is not", () => {
    const noisy = (dev: number) =>
      makeBenchReport(META, [row("mm", "64", dev, 1e-5, { device: side(dev, 0.5) })], null);
    const d = diffBench({ file: "a", report: noisy(2e-5) }, { file: "b", report: noisy(4e-5) });
    expect(noiseThreshold(Math.hypot(0.5, 0.05), Math.hypot(0.5, 0.05))).toBeGreaterThan(2);
    expect(d.gate).toBe(0);
  });

  it("a row timed before and failing now regresses", () => {
    const broken = makeBenchReport(
      META,
      [
        { op: "mm", kind: "functional", family: "linalg", dtype: "float32", size: "64", error: "RuntimeError: x" },
        row("add.Tensor", "64", 1e-5, 1e-5),
      ],
      null,
    );
    const d = diffBench(old, { file: "new.json", report: broken });
    expect(d.gate).toBe(1);
    expect(d.regressed[0]!.error).toBe("RuntimeError: x");
  });
});

describe("options", () => {
  it.each([
    ["3", { n: 3 }],
    ["mm=3", { glob: "mm", n: 3 }],
    ["add*=2", { glob: "add*", n: 2 }],
  ] as const)("--repeat-op %s", (v, want) => {
    expect(parseRepeatOp(v)).toEqual(want);
    expect(repeatText(parseRepeatOp(v))).toBe(v);
  });
  it.each(["0", "x", "mm=", "mm=1.5"])("--repeat-op %s is refused", (v) => {
    expect(() => parseRepeatOp(v)).toThrow(/expected N or GLOB=N/);
  });
  it("dtypes: the asked ones claimed; by default float32, else the op's first of a preferred few", () => {
    expect(benchDtypes(["float32", "float64"], undefined)).toEqual(["float32"]);
    expect(benchDtypes(["int64", "bool"], undefined)).toEqual(["int64"]);
    expect(benchDtypes(["float32", "float16"], ["float16", "bfloat16"])).toEqual(["float16"]);
    expect(benchDtypes(["int64"], ["float16"])).toEqual([]);
  });
});
