/**
 * The driver end to end without a device: CPU plays the device with faults
 * injected (python/tests/fixtures/faults.py), so selection, the Python runner,
 * expectations and every report are exercised on any machine.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseReport } from "../../src/conformance/aggregate.js";
import { checkOutcome, runTest } from "../../src/conformance/driver.js";
import { toHtml, toJunit, toMarkdown } from "../../src/conformance/formats.js";
import { UserError } from "../../src/util/errors.js";

const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");
const fixtures = path.resolve("python/tests/fixtures");

describe("opgen-backend test --faults (CPU as the device)", () => {
  it("runs, applies expectations and writes agreeing reports", async () => {
    const work = mkdtempSync(path.join(tmpdir(), "opgen-conformance-driver-"));
    const exp = path.join(work, "exp.yaml");
    writeFileSync(
      exp,
      [
        "expectations:",
        "  - op: abs",
        "    check: dtype",
        "    reason: promotes to double",
        "    issue: https://example.com/7",
        "  - op: relu",
        "    check: values",
        "    reason: was broken once",
        "",
      ].join("\n"),
    );
    const out = (f: string) => path.join(work, f);
    const { report } = await runTest({
      projectDir: work,
      python,
      manifest: path.join(fixtures, "manifest.json"),
      faults: path.join(fixtures, "faults.py"),
      expectations: exp,
      selection: { globs: ["abs", "add.Tensor", "relu", "t"], dtypes: ["float32", "int64"] },
      workers: 2,
      timeoutS: 30,
      seed: 0,
      maxSamples: 2,
      resume: false,
      cacheDir: path.join(tmpdir(), "opgen-conformance-e2e-cache"),
      json: out("r.json"),
      junit: out("r.xml"),
      html: out("r.html"),
      markdown: out("r.md"),
      quiet: true,
    });
    const get = (op: string, dtype: string, check: string) =>
      report.results.find((r) => r.op === op && r.dtype === dtype && r.check === check)?.status;
    expect(get("abs", "float32", "dtype")).toBe("xfail");
    expect(get("relu", "float32", "values")).toBe("xpass");
    expect(get("add.Tensor", "int64", "values")).toBe("fail");
    expect(get("t", "float32", "view")).toBe("fail");
    expect(report.ops.map((o) => o.op)).toEqual(["abs", "add.Tensor", "relu", "t"]);
    const json = parseReport(readFileSync(out("r.json"), "utf8"), "r.json");
    expect(json).toEqual(JSON.parse(JSON.stringify(report)));
    expect(readFileSync(out("r.xml"), "utf8")).toBe(toJunit(report));
    expect(readFileSync(out("r.html"), "utf8")).toBe(toHtml(report));
    expect(readFileSync(out("r.md"), "utf8")).toBe(toMarkdown(report));
    expect(() => checkOutcome(report)).toThrow(UserError);
  }, 600_000);

  it("refuses a manifest from before the manifest recorded kinds and the core total, saying how to refresh it", async () => {
    const work = mkdtempSync(path.join(tmpdir(), "opgen-conformance-stale-"));
    const old = path.join(work, "op_manifest.json");
    const m = JSON.parse(readFileSync(path.join(fixtures, "manifest.json"), "utf8"));
    for (const drop of ["core_total", "kind"] as const) {
      const stale =
        drop === "core_total"
          ? { ...m, core_total: undefined }
          : { ...m, operators: m.operators.map((o: object) => ({ ...o, kind: undefined })) };
      writeFileSync(old, JSON.stringify(stale));
      const run = runTest({
        projectDir: work,
        python,
        manifest: old,
        selection: { globs: ["abs"] },
        workers: 1,
        timeoutS: 30,
        seed: 0,
        maxSamples: 1,
        resume: false,
        quiet: true,
      });
      await expect(run).rejects.toThrow(UserError);
      await expect(run).rejects.toThrow(
        drop === "core_total"
          ? /op_manifest\.json: no core_total; a manifest written by an older opgen-backend lacks it: rerun `opgen-backend gen`/
          : /op_manifest\.json: operator abs has no kind; .*rerun `opgen-backend gen`/,
      );
    }
  });
});
