import { describe, expect, it } from "vitest";
import { aggregate, makeReport, mergeReports } from "../../src/conformance/aggregate.js";
import { applyExpectations, parseExpectations } from "../../src/conformance/expectations.js";
import { toHtml, toMarkdown, toTerminal } from "../../src/conformance/formats.js";
import { modelCases, modelName, modelReplayLines, modelsLine } from "../../src/conformance/models.js";
import type { RunConfigModel } from "../../src/conformance/runconfig.js";
import type { RawRecord } from "../../src/conformance/types.js";
import { formatDiagnostic, type UserError } from "../../src/util/errors.js";

const plain = {
  red: (s: string) => s,
  green: (s: string) => s,
  yellow: (s: string) => s,
  dim: (s: string) => s,
  bold: (s: string) => s,
};

const models: RunConfigModel[] = [
  { name: "model:zoo:gpt2", file: "/z/zoo.py", case: "gpt2" },
  { name: "model:zoo:resnet", file: "/z/zoo.py", case: "resnet" },
];

function caseRecord(op: string, checks: Record<string, [string, string]>, model: unknown): RawRecord {
  return {
    kind: "sample",
    op,
    dtype: "float32",
    sample: 0,
    seed: 0,
    source: "model",
    desc: op,
    checks,
    model,
  } as RawRecord;
}

const records: RawRecord[] = [
  { kind: "header", seed: 0, max_samples: 6, device: "refdev" },
  caseRecord(
    "model:zoo:gpt2",
    {
      errors: ["pass", ""],
      values: ["pass", "ok"],
      gradients: ["pass", "ok"],
      step: ["skip", "no optimizer"],
      fallback: ["pass", ""],
    },
    {
      ops: {
        addmm: { served: "kernel", forward: 4, backward: 0, step: 0 },
        "gelu.out": { served: "kernel", forward: 2, backward: 0, step: 0 },
        "add.Tensor": { served: "kernel", forward: 9, backward: 3, step: 0 },
        new_empty: { served: "composite", forward: 1, backward: 0, step: 0 },
      },
      fallback: {},
    },
  ),
  { kind: "task", op: "model:zoo:gpt2", dtype: "float32", samples: 1 },
  caseRecord(
    "model:zoo:resnet",
    {
      errors: ["pass", ""],
      values: ["pass", "ok"],
      gradients: ["fail", "first divergent op: native_batch_norm (forward, call 3): error 1e-3; 3/9 tensors off"],
      step: ["skip", ""],
      fallback: ["fail", "1 operators ran on the CPU fallback: histc (1)"],
    },
    {
      ops: { histc: { served: "fallback", forward: 1, backward: 0, step: 0 } },
      fallback: { histc: 1 },
      divergence: {
        op: "native_batch_norm",
        phase: "forward",
        index: 3,
        eager_index: null,
        calls: 40,
        inputs: "float32[2, 8, 1, 1]",
        message: "error 1e-3 vs eager float32's 1e-7",
        replay: "/r/res.jsonl.divergence/resnet.native_batch_norm.pt",
      },
    },
  ),
  { kind: "task", op: "model:zoo:resnet", dtype: "float32", samples: 1 },
];

const manifestOps = [
  { name: "addmm", served_by: "kernel" },
  { name: "gelu.out", served_by: "derived_out" },
  { name: "add.Tensor", served_by: "runtime" },
];

const times = {
  "model:zoo:gpt2": { device: 0.02, eager: 0.04, ratio: 0.5 },
  "model:zoo:resnet": { device: 0.3, eager: 0.15, ratio: 2 },
};

function report() {
  const wanted = models.map((m) => ({ op: m.name, dtypes: ["float32"] }));
  const results = aggregate(records, wanted);
  return makeReport(
    { device: "refdev", seed: 0, max_samples: 6, torch_version: "2.13.0", shards: [] },
    [],
    results,
    193,
    undefined,
    modelCases(models, records, results, manifestOps, times),
  );
}

describe("model cases", () => {
  it("names a case after its file's stem", () => {
    expect(modelName("/a/b/my_models.py", "bert")).toBe("model:my_models:bert");
  });

  it("marks each overload from the manifest: kernel, derived, runtime, composite, fallback", () => {
    const [gpt2, resnet] = report().models ?? [];
    expect(gpt2?.status).toBe("pass");
    expect(Object.fromEntries((gpt2?.ops ?? []).map((o) => [o.name, o.served]))).toEqual({
      "add.Tensor": "runtime",
      addmm: "kernel",
      "gelu.out": "derived",
      new_empty: "composite",
    });
    expect(resnet?.status).toBe("fail");
    expect(resnet?.fallback).toEqual({ histc: 1 });
    expect(resnet?.time_s?.ratio).toBe(2);
  });

  it("counts cases apart from operators, and sums up speed as a geomean", () => {
    const r = report();
    expect(r.summary.ops).toBe(0);
    expect(r.summary.failed).toBe(2);
    expect(modelsLine(r.models ?? [])).toBe(
      "1/2 model cases match eager CPU, 1 use the CPU fallback; step time device/eager CPU geomean 1.00×, worst 2.00×",
    );
  });

  it("shows a models section in every report", () => {
    const r = report();
    const html = toHtml(r);
    expect(html).toContain('<h2 id="models">Models (2)</h2>');
    expect(html).toContain('data-case="model:zoo:resnet" data-status="fail"');
    expect(html).toContain('<tr class="model-op" data-served="fallback"><td><code>histc</code></td>');
    expect(html).toContain("not on eager&#39;s path".replace("&#39;", "'"));
    // model results stay out of the operator heatmap
    expect(html).not.toContain('class="op-row" data-op="model:');
    const md = toMarkdown(r);
    expect(md).toContain("| fail | `model:zoo:resnet` | 1 fallback | histc | 2.00× | `native_batch_norm` (forward)");
    const term = toTerminal(r, plain);
    expect(term).toContain(
      "model:zoo:resnet: first divergent op native_batch_norm (forward, call 3, inputs float32[2, 8, 1, 1])",
    );
    expect(modelReplayLines(r.models ?? [], "python -m opgen_conformance", "/r/c.json")).toEqual([
      "rerun model:zoo:resnet's native_batch_norm alone: python -m opgen_conformance replay --config /r/c.json --file /r/res.jsonl.divergence/resnet.native_batch_norm.pt",
    ]);
  });

  it("merges shards' models sections", () => {
    const r = report();
    const m = mergeReports([
      { file: "a.json", report: r },
      { file: "b.json", report: r },
    ]);
    expect(m.models?.map((c) => c.name)).toEqual(["model:zoo:gpt2", "model:zoo:resnet"]);
  });

  it("takes expectations on a case's own checks", () => {
    const exp = parseExpectations(
      'expectations:\n  - op: "model:zoo:resnet"\n    check: step\n    reason: no optimizer\n  - op: "model:zoo:resnet"\n    check: fallback\n    reason: histc on int\n',
      "e.yaml",
    );
    const results = applyExpectations(report().results, exp.expectations);
    expect(results.find((x) => x.op === "model:zoo:resnet" && x.check === "fallback")?.status).toBe("xfail");
    let text = "";
    try {
      parseExpectations('expectations:\n  - op: "m"\n    check: stepp\n    reason: r\n', "e.yaml");
    } catch (e) {
      text = (e as UserError).diagnostics.map(formatDiagnostic).join("\n");
    }
    expect(text).toMatch(/e\.yaml:3:\d+: .*unknown check 'stepp'; allowed: .*fallback, compile, step/);
  });
});
