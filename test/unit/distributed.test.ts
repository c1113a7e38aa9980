/**
 * `test --distributed N` (src/conformance/distributed.ts): the runner's rows
 * become one result per collective × dtype × check, the first failing
 * sample shown, and the report counts them as the operator checks are.
 */
import { describe, expect, it } from "vitest";
import { failed, makeReport } from "../../src/conformance/aggregate.js";
import { distributedResults } from "../../src/conformance/distributed.js";

const row = (op: string, dtype: string, sample: number, status: "pass" | "fail", message = "") => ({
  op,
  dtype,
  check: "values",
  sample,
  input: `world 2, case ${sample}`,
  status,
  message,
});

describe("distributed results", () => {
  it.each([
    [
      "all samples pass: one passing result counting them",
      { given: [row("c10d::all_reduce", "float32", 0, "pass"), row("c10d::all_reduce", "float32", 1, "pass")] },
      { want: [{ op: "c10d::all_reduce", status: "pass", samples: 2, sample: 0, message: "" }] },
    ],
    [
      "a failing sample is the one shown",
      {
        given: [
          row("c10d::all_reduce", "int32", 0, "pass"),
          row("c10d::all_reduce", "int32", 1, "fail", "result 0 differs from Gloo's on CPU"),
        ],
      },
      {
        want: [
          {
            op: "c10d::all_reduce",
            status: "fail",
            samples: 2,
            sample: 1,
            message: "result 0 differs from Gloo's on CPU",
          },
        ],
      },
    ],
  ])("%s", (_name, { given }, { want }) => {
    const got = distributedResults(given).map(({ op, status, samples, sample, message }) => ({
      op,
      status,
      samples,
      sample,
      message,
    }));
    expect(got).toEqual(want);
  });

  it("a report of them fails CI when one fails, and counts each dtype", () => {
    const results = distributedResults([
      row("c10d::broadcast", "float32", 0, "pass"),
      row("c10d::broadcast", "float16", 0, "fail", "differs"),
    ]);
    const ops = [
      { op: "c10d::broadcast", kind: "mutable" as const, core: false, view: false, dtypes: ["float16", "float32"] },
    ];
    const meta = { device: "mychip", seed: 0, max_samples: 1, torch_version: "2.13.0", shards: [] };
    const report = makeReport(meta, ops, results, 0);
    expect(report.summary).toMatchObject({ total: 2, passed: 1, failed: 1, ops: 1, ops_passed: 0 });
    expect(failed(report.summary)).toBe(true);
  });
});
