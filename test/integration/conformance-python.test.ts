/**
 * Runs the Python runner's own unit tests (python/tests, stdlib unittest) so
 * that `npm test` covers the checks (the fault matrix among them), sample
 * generation, the worker pool's crash/hang isolation and resume on CPU with
 * injected faults; and holds the runner's check names to the reports'.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { CHECKS } from "../../src/conformance/types.js";

const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");

describe("python/opgen_conformance", () => {
  it("passes its unittest suite", async () => {
    const r = await execa(python, ["-m", "unittest", "discover", "-s", "tests", "-t", "."], {
      cwd: path.resolve("python"),
      reject: false,
      all: true,
      env: { PYTHONPATH: path.resolve("python"), OMP_NUM_THREADS: "1" },
    });
    if (r.exitCode !== 0) console.error(String(r.all).slice(-6000));
    expect(r.exitCode).toBe(0);
    expect(String(r.all)).toMatch(/\nOK/);
  }, 600_000);

  // The files written as pytest functions, which unittest's discovery does
  // not collect (every test file is one or the other).
  it("passes its pytest files", async () => {
    const dir = path.resolve("python", "tests");
    const files = readdirSync(dir)
      .filter((f) => /^test_.*\.py$/.test(f))
      .filter((f) => !/^class \w+\(unittest\.TestCase\)/m.test(readFileSync(path.join(dir, f), "utf8")))
      .sort();
    expect(files.length).toBeGreaterThan(0);
    const r = await execa(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", ...files.map((f) => `tests/${f}`)], {
      cwd: path.resolve("python"),
      reject: false,
      all: true,
      env: { PYTHONPATH: path.resolve("python"), OMP_NUM_THREADS: "1" },
    });
    if (r.exitCode !== 0) console.error(String(r.all).slice(-6000));
    expect(r.exitCode).toBe(0);
    expect(String(r.all)).toMatch(/\d+ passed/);
  }, 600_000);

  it("names the same checks as the reports, in the same order", async () => {
    const r = await execa(
      python,
      ["-c", "import json; from opgen_conformance.checks import CHECKS; print(json.dumps(CHECKS))"],
      {
        cwd: path.resolve("python"),
        env: { PYTHONPATH: path.resolve("python") },
      },
    );
    expect(JSON.parse(r.stdout)).toEqual([...CHECKS]);
  }, 120_000);
});
