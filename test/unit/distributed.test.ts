/**
 * `test --distributed N` (src/conformance/distributed.ts): the runner's rows
 * become one result per collective × dtype × check, the first failing
 * sample shown, and the report counts them as the operator checks are.
 */
import { describe, expect, it } from "vitest";
import { failed, makeReport } from "../../src/conformance/aggregate.js";
import { diffReports, diffToTerminal } from "../../src/conformance/diff.js";
import { distributedReport, distributedResults } from "../../src/conformance/distributed.js";
import { toHtml, toMarkdown, toTerminal } from "../../src/conformance/formats.js";
import type { Style } from "../../src/util/term.js";

const id = (s: string) => s;
const plain: Style = { red: id, green: id, yellow: id, dim: id, bold: id };

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

  it("its reports' headlines name the backend and world size and count collectives, with no core-ATen level", () => {
    const rep = distributedReport(
      [
        row("c10d::broadcast", "float32", 0, "pass"),
        row("c10d::all_reduce", "float32", 0, "pass"),
        row("c10d::all_reduce", "int32", 0, "fail", "differs"),
      ],
      { device: "mychip", torch_version: "2.13.0" },
      2,
    );
    expect(rep.meta.distributed).toEqual({ backend: "mychipccl", world: 2 });
    const title = "distributed tier (c10d backend mychipccl, world size 2)";
    const counted = "1/2 collectives pass every check, against Gloo on CPU tensors";
    const term = toTerminal(rep, plain);
    expect(term).toContain(`${title}: 3 results: 2 passed, 1 failed`);
    expect(term).toContain(counted);
    const md = toMarkdown(rep);
    expect(md).toMatch(
      new RegExp(`^### opgen-backend ${title.replace(/[()]/g, "\\$&")}: \`mychip\`: ❌ 1 problem`, "m"),
    );
    expect(md).toContain(`**${counted}**`);
    const page = toHtml(rep);
    expect(page).toContain(`<h1 data-distributed="2">The ${title} of <code>mychip</code></h1>`);
    expect(page).toContain(counted);
    // report diff of two runs of the tier: no core-ATen level either
    const d = diffReports({ file: "old.json", report: rep }, { file: "new.json", report: rep });
    const diffText = diffToTerminal(d, plain);
    expect(diffText).toContain("operators passing 1/2 -> 1/2; problems 1 -> 1");
    for (const text of [term, md, page, diffText]) {
      expect(text).not.toMatch(/core ATen/i);
      expect(text).not.toContain("0/0");
    }
  });
});
