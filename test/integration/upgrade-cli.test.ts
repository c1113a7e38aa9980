/**
 * `opgen-backend upgrade` as a user runs it, on a small generated project
 * (init + gen, no build) against the installed torch: nothing to do, exit 0;
 * bad input, exit 2 with one line and nothing written.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverTorch } from "../../src/torch/discover.js";
import { type FakePypi, fakePypi, torchWheel } from "../helpers/pypi.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, "bin/opgen-backend.js"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The CLI without blocking this process (a fake PyPI in it answers the CLI's requests). */
function cliAsync(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, "bin/opgen-backend.js"), ...args], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b) => {
      stdout += b;
    });
    child.stderr.on("data", (b) => {
      stderr += b;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** native_functions.yaml with the entry that starts with `head` (up to its blank line) replaced by `entry`. */
function replaceEntry(text: string, head: string, entry: (old: string) => string): string {
  const i = text.indexOf(`\n${head}`);
  expect(i, head).toBeGreaterThan(0);
  const j = text.indexOf("\n\n", i + 1);
  return text.slice(0, i + 1) + entry(text.slice(i + 1, j)) + text.slice(j);
}

let tmp: string;
let project: string;

beforeAll(() => {
  const b = spawnSync("npm", ["run", "--silent", "build"], { cwd: ROOT, encoding: "utf8" });
  expect(b.status, b.stderr).toBe(0);
  tmp = mkdtempSync(path.join(tmpdir(), "opgen-upgrade-cli-"));
  project = path.join(tmp, "p");
  const init = cli(["init", project, "--name", "upgchip"]);
  expect(init.code, init.stderr).toBe(0);
  const gen = cli(["gen", path.join(project, "backend.yaml")]);
  expect(gen.code, gen.stderr).toBe(0);
}, 120_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("upgrade", () => {
  it("reports nothing to do on the torch the project was generated with, exit 0", () => {
    const md = path.join(tmp, "upgrade.md");
    const r = cli(["upgrade", project, "--markdown", md]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ 0 signature changed, 0 schema changed, 0 removed, 0 dispatch changed, 0 tags changed/);
    expect(r.stdout).toMatch(/nothing to do\n$/);
    expect(readFileSync(md, "utf8")).toContain("Nothing to do.");
    const j = cli(["upgrade", project, "--json"]);
    expect(j.code).toBe(0);
    const report = JSON.parse(j.stdout);
    expect(report.actionNeeded).toBe(false);
    expect(report.overloads.length).toBeGreaterThan(0);
    expect(report.overloads.every((o: { changes: unknown[] }) => o.changes.length === 0)).toBe(true);
  });

  it("refuses a project without a manifest: one line, exit 2, nothing written", () => {
    const bare = path.join(tmp, "bare");
    const init = cli(["init", bare, "--name", "barechip"]);
    expect(init.code, init.stderr).toBe(0);
    const md = path.join(tmp, "bare.md");
    const r = cli(["upgrade", bare, "--markdown", md]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/no op manifest; run `opgen-backend gen`/);
    expect(existsSync(md)).toBe(false);
  }, 60_000);

  it("refuses a manifest older than backend.yaml: exit 2", () => {
    const yaml = path.join(project, "backend.yaml");
    const text = readFileSync(yaml, "utf8");
    try {
      writeFileSync(yaml, `${text}# edited\n`);
      const r = cli(["upgrade", project]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/backend\.yaml changed since op_manifest\.json was generated; run `opgen-backend gen`/);
    } finally {
      writeFileSync(yaml, text);
    }
  });

  it("refuses a torch older than the project's pin: exit 2", () => {
    const py = path.join(project, "pyproject.toml");
    const text = readFileSync(py, "utf8");
    try {
      writeFileSync(py, text.replace(/"torch==[^"]+"/g, '"torch==99.0.0"'));
      const r = cli(["upgrade", project]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^opgen-backend: upgrade: torch \S+ is older than the project's pin 99\.0\.0;/);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    } finally {
      writeFileSync(py, text);
    }
  });
});

describe("upgrade --torch-version (a fake PyPI on 127.0.0.1)", () => {
  let pypi: FakePypi;
  let cache: string;
  beforeAll(async () => {
    const install = await discoverTorch();
    const nf = readFileSync(install.nativeFunctionsYaml, "utf8");
    const tags = readFileSync(install.tagsYaml, "utf8");
    const der = readFileSync(install.derivativesYaml, "utf8");
    let next = replaceEntry(nf, "- func: add.Tensor(", (e) =>
      e.replace("tags: [core, pointwise]", "tags: [pointwise]"),
    );
    // relu loses its dispatch table: CompositeImplicitAutograd, the backend's kernel is bypassed.
    next = replaceEntry(next, "- func: relu(Tensor self)", () =>
      ["- func: relu(Tensor self) -> Tensor", "  variants: function, method", "  tags: [core, pointwise]"].join("\n"),
    );
    next = next.replace(
      "- func: sum.dim_IntList(Tensor self, int[1]? dim,",
      "- func: sum.dim_IntList(Tensor self, SymInt[1]? dim,",
    );
    pypi = await fakePypi(
      new Map([
        [install.version.replace(/\+.*$/, ""), torchWheel(nf, tags, der)],
        ["2.99.0", torchWheel(next, tags, der)],
      ]),
    );
    cache = path.join(tmp, "cache");
  });
  afterAll(() => pypi.close());

  it("reports dispatch, tag and schema changes of a release it never installs, the baseline from PyPI too", async () => {
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache, OPGEN_PYTHON: path.join(tmp, "no-python") };
    const r = await cliAsync(["upgrade", project, "--torch-version", "2.99.0", "--json"], env);
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.toTorch).toBe("2.99.0");
    expect(report.baseline).toBe(report.fromTorch);
    const changes = (op: string) =>
      report.overloads.find((o: { op: string }) => o.op === op).changes.map((c: { kind: string }) => c.kind);
    expect(changes("relu")).toEqual(["dispatch"]);
    expect(changes("add.Tensor")).toEqual(["tags"]);
    expect(changes("sum.dim_IntList")).toEqual(["schema"]);
    expect(report.core.before - report.core.after).toBe(1);
    const t = await cliAsync(["upgrade", project, "--torch-version", "2.99.0", "--offline"], env);
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(/^relu +dispatch changed +\S+backend\.yaml:\d+:\d+$/m);
    expect(t.stdout).toContain("backend kernels -> CompositeImplicitAutograd");
  });

  it("refuses a version PyPI does not have, a nightly and an older torch: one line, exit 2", async () => {
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    for (const [v, want] of [
      ["2.98.0", /is not a release on http:\/\/127\.0\.0\.1:\d+\/pypi \(the latest is 2\.99\.0\)/],
      ["2.99.0.dev20261201", /nightly or pre-release/],
      ["2.12.1", /older than the project's pin/],
    ] as const) {
      const r = await cliAsync(["upgrade", project, "--torch-version", v], env);
      expect(r.code, v).toBe(2);
      expect(r.stderr.trim().split("\n"), v).toHaveLength(1);
      expect(r.stderr).toMatch(want);
    }
  });
});
