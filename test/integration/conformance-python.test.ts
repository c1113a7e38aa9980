/**
 * Runs the Python runner's own tests (python/tests: unittest classes and
 * pytest functions, all collected by pytest) so that `npm test` covers the
 * checks (the fault matrix among them), sample generation, the worker pool's
 * crash/hang isolation and resume on CPU with injected faults; and holds the
 * runner's check names to the reports'.
 *
 * Note [One vitest case per Python test]: the suite runs once, in beforeAll,
 * writing JUnit XML; the tests are listed at collection (`pytest
 * --collect-only`) and each becomes its own case that reads its own result,
 * so a report names the Python test that failed, with its message, instead of
 * one case for the whole suite.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { CHECKS } from "../../src/conformance/types.js";

const python = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");
const cwd = path.resolve("python");
const env = { ...process.env, PYTHONPATH: cwd, OMP_NUM_THREADS: "1" };
const PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "tests"];

/** What a failed collection printed; the collection case reports it. */
let collectError = "";

/** pytest's node ids ("tests/test_x.py::Class::test_y"), as collected; none
 * when collection fails (an import error in a test file), which the first
 * case then reports with pytest's output instead of the whole file erroring
 * at vitest's collection. */
function collect(): string[] {
  try {
    const out = execFileSync(python, [...PYTEST, "--collect-only", "-q"], { cwd, env, encoding: "utf8" });
    return out.split("\n").filter((l) => l.includes("::"));
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message?: string };
    collectError = [err.message, err.stdout, err.stderr].filter(Boolean).join("\n").slice(-4000);
    return [];
  }
}

interface Outcome {
  status: "passed" | "failed" | "skipped";
  message: string;
}

const unxml = (s: string): string =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#10;/g, "\n")
    .replace(/&amp;/g, "&");

const attrOf = (attrs: string, k: string): string => unxml(new RegExp(`\\b${k}="([^"]*)"`).exec(attrs)?.[1] ?? "");

/** JUnit XML's testcases by pytest node id (classname "tests.test_x[.Class]" + name). */
function outcomes(xml: string): Map<string, Outcome> {
  const found = new Map<string, Outcome>();
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const parts = attrOf(m[1]!, "classname").split(".");
    const id = [`${parts.slice(0, 2).join("/")}.py`, ...parts.slice(2), attrOf(m[1]!, "name")].join("::");
    const body = m[2] ?? "";
    const failed = /<(?:failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/(?:failure|error)>)/.exec(body);
    const skipped = /<skipped\b([^>]*?)(?:\/>|>)/.exec(body);
    if (failed)
      found.set(id, { status: "failed", message: unxml(failed[2] ?? attrOf(failed[1]!, "message")).slice(-4000) });
    else if (skipped) found.set(id, { status: "skipped", message: attrOf(skipped[1]!, "message") });
    else found.set(id, { status: "passed", message: "" });
  }
  return found;
}

const ids = collect();
let results: Map<string, Outcome> = new Map();
let runLog = "";

describe("python/opgen_conformance", () => {
  beforeAll(async () => {
    if (collectError) return; // the collection case reports it
    const xml = path.join(mkdtempSync(path.join(tmpdir(), "opgen-pytests-")), "results.xml");
    const r = await execa(python, [...PYTEST, "-q", `--junitxml=${xml}`], { cwd, env, reject: false, all: true });
    runLog = String(r.all);
    results = outcomes(readFileSync(xml, "utf8"));
  }, 900_000);

  it("collects its tests, unittest classes and pytest functions alike", () => {
    expect(collectError, "pytest --collect-only failed").toBe("");
    expect(ids.length).toBeGreaterThan(100);
    expect(ids.some((id) => id.split("::").length === 3)).toBe(true); // Class::test
    expect(ids.some((id) => id.split("::").length === 2)).toBe(true); // a pytest function
  });

  it.for(ids)("%s", (id, ctx) => {
    const o = results.get(id);
    if (o === undefined) throw new Error(`pytest reported no result for ${id}:\n${runLog.slice(-3000)}`);
    if (o.status === "skipped") ctx.skip(o.message);
    expect(o.status, o.message).toBe("passed");
  });

  it("names the same checks as the reports, in the same order", async () => {
    const r = await execa(
      python,
      ["-c", "import json; from opgen_conformance.checks import CHECKS; print(json.dumps(CHECKS))"],
      { cwd, env },
    );
    expect(JSON.parse(r.stdout)).toEqual([...CHECKS]);
  }, 120_000);
});
