/**
 * `opgen-backend upgrade` as a user runs it, on a small generated project
 * (init + gen, no build) against the installed torch: nothing to do, exit 0;
 * bad input, exit 2 with one line and nothing written.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverTorch } from "../../src/torch/discover.js";
import { PYTHON_API_FILES, WATCHED } from "../../src/upgrade/python-api.js";
import { cliSync } from "../helpers/cli.js";
import { type FakePypi, fakePypi, torchWheel } from "../helpers/pypi.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

const cli = cliSync;

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
    // The package's private torch Python APIs: the installed torch's own files on both sides.
    const n = WATCHED.length;
    expect(r.stdout).toMatch(
      new RegExp(
        `^private torch Python APIs (\\S+) -> \\1: ${n} watched, ${n} unchanged, 0 compatible, 0 break, 0 missing \\(the same files\\)$`,
        "m",
      ),
    );
    expect(readFileSync(md, "utf8")).toContain("Nothing to do.");
    expect(readFileSync(md, "utf8")).toContain("## Private torch Python APIs");
    const j = cli(["upgrade", project, "--json"]);
    expect(j.code).toBe(0);
    const report = JSON.parse(j.stdout);
    expect(report.actionNeeded).toBe(false);
    expect(report.pythonApi.summary).toEqual({ unchanged: n, compatible: 0, break: 0, missing: 0 });
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
    // 2.97.0 drops mm (listed by the starter backend.yaml); 2.98.0 changes nothing for the backend.
    const noMm = replaceEntry(nf, "- func: mm(Tensor self, Tensor mat2) -> Tensor", () => "# mm was here");
    // The wheels carry the installed torch's Python files; 2.99.0's kernel-call helper grows a keyword.
    const python = Object.fromEntries(
      PYTHON_API_FILES.map((f) => [f, readFileSync(path.join(install.torchDir, "..", f), "utf8")]),
    );
    const wrapper = "torch/_inductor/codegen/wrapper.py";
    const at = python[wrapper]!.indexOf("    def _generate_kernel_call_helper(");
    const kw = python[wrapper]!.indexOf("        current_stream_idx=None,\n", at);
    expect(at > 0 && kw > at).toBe(true);
    const grown = {
      ...python,
      [wrapper]: `${python[wrapper]!.slice(0, kw)}        launcher=None,\n${python[wrapper]!.slice(kw)}`,
    };
    // 2.98.5's make_allocation loses `stride`: the package's Wrapper override no longer fits.
    const alloc = python[wrapper]!.indexOf("    def make_allocation(");
    const stride = python[wrapper]!.indexOf("shape, stride, ", alloc);
    expect(alloc > 0 && stride > alloc).toBe(true);
    const broken = {
      ...python,
      [wrapper]: `${python[wrapper]!.slice(0, stride)}shape, ${python[wrapper]!.slice(stride + "shape, stride, ".length)}`,
    };
    pypi = await fakePypi(
      new Map([
        [install.version.replace(/\+.*$/, ""), torchWheel(nf, tags, der, { python })],
        ["2.97.0", torchWheel(noMm, tags, der, { python })],
        ["2.98.0", torchWheel(nf, tags, der, { python })],
        ["2.98.5", torchWheel(nf, tags, der, { python: broken })],
        ["2.99.0", torchWheel(next, tags, der, { python: grown })],
      ]),
    );
    cache = path.join(tmp, "cache");
  });
  afterAll(() => pypi.close());

  /** A fresh project (init + gen) to apply upgrades to, and a snapshot of its files. */
  function freshProject(name: string): string {
    const dir = path.join(tmp, name);
    expect(cli(["init", dir, "--name", name]).code).toBe(0);
    expect(cli(["gen", path.join(dir, "backend.yaml")]).code).toBe(0);
    return dir;
  }
  const snapshot = (dir: string) =>
    Object.fromEntries(
      [
        "pyproject.toml",
        "README.md",
        ".github/workflows/ci.yml",
        "setup.py",
        "backend.yaml",
        "csrc/generated/op_manifest.json",
      ].map((f) => [f, readFileSync(path.join(dir, f), "utf8")]),
    );

  it("--apply moves the pins init wrote, regenerates, and leaves a file a person changed alone", async () => {
    const dir = freshProject("applychip");
    const pin = /"torch==([^"]+)"/.exec(readFileSync(path.join(dir, "pyproject.toml"), "utf8"))![1]!;
    // A person's line in the README: it is theirs now.
    writeFileSync(path.join(dir, "README.md"), `${readFileSync(path.join(dir, "README.md"), "utf8")}\nOur notes.\n`);
    const before = snapshot(dir);
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    const r = await cliAsync(["upgrade", dir, "--torch-version", "2.98.0", "--apply"], env);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const after = snapshot(dir);
    expect(after["pyproject.toml"]).toBe(before["pyproject.toml"]!.replaceAll(`torch==${pin}`, "torch==2.98.0"));
    expect(after[".github/workflows/ci.yml"]).toBe(
      before[".github/workflows/ci.yml"]!.replaceAll(`torch==${pin}`, "torch==2.98.0"),
    );
    expect(after["pyproject.toml"]).not.toBe(before["pyproject.toml"]);
    expect(JSON.parse(after["csrc/generated/op_manifest.json"]!).torch_version).toBe("2.98.0");
    // Never touched: the person's README, setup.py (it reads pyproject's pin), backend.yaml.
    for (const f of ["README.md", "setup.py", "backend.yaml"]) expect(after[f], f).toBe(before[f]);
    expect(r.stdout).toMatch(/moved the torch pin +pyproject\.toml/);
    expect(r.stdout).toMatch(
      /README\.md changed since init: move its torch pin to 2\.98\.0 yourself \(\S+README\.md:5(, \S+README\.md:\d+)*\)/,
    );
    // Applied again: nothing left to move, the person's file still reported.
    const again = await cliAsync(["upgrade", dir, "--torch-version", "2.98.0", "--apply", "--json"], env);
    const j = JSON.parse(again.stdout);
    expect(j.applied.pins.moved).toEqual([]);
    expect(j.applied.generated.files.every((f: { status: string }) => f.status === "unchanged")).toBe(true);
    // On to 2.99.0 (baseline 2.98.0 from the fake PyPI too): relu's kernel is bypassed now, a person's call.
    const next = await cliAsync(["upgrade", dir, "--torch-version", "2.99.0", "--apply", "--json"], env);
    expect(next.code).toBe(1);
    const n = JSON.parse(next.stdout);
    expect(n.baseline).toBe("2.98.0");
    expect(n.applied.pins.moved.sort()).toEqual([".github/workflows/ci.yml", "pyproject.toml"]);
    expect(n.applied.left, JSON.stringify(n.applied.left)).toEqual([
      expect.stringMatching(/^README\.md changed since init/),
      expect.stringMatching(/^relu \(\S+backend\.yaml:\d+:\d+\): the overload now decomposes above the backend/),
    ]);
  }, 120_000);

  it("--apply writes nothing while backend.yaml lists an overload the target removed", async () => {
    const dir = freshProject("refusechip");
    const before = snapshot(dir);
    const r = await cliAsync(["upgrade", dir, "--torch-version", "2.97.0", "--apply"], {
      OPGEN_PYPI_URL: pypi.index,
      OPGEN_CACHE_DIR: cache,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /cannot apply: backend\.yaml does not load against torch 2\.97\.0 \(mm \(\S+backend\.yaml:\d+:\d+\)\); edit backend\.yaml first/,
    );
    expect(snapshot(dir)).toEqual(before);
  }, 120_000);

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
    // Both sides' Python files from the fake PyPI's wheels: the grown keyword is compatible.
    expect(report.pythonApi).toMatchObject({
      from: report.fromTorch,
      to: "2.99.0",
      sameFiles: false,
      unavailable: null,
    });
    expect(report.pythonApi.summary).toEqual({ unchanged: WATCHED.length - 1, compatible: 1, break: 0, missing: 0 });
    const t = await cliAsync(["upgrade", project, "--torch-version", "2.99.0", "--offline"], env);
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(
      /^ {2}PythonWrapperCodegen\._generate_kernel_call_helper +compatible +torch_upgchip\/_inductor\.py +torch\/_inductor\/codegen\/wrapper\.py:\d+$/m,
    );
    expect(t.stdout).toMatch(/^ {6}keyword-only parameter added: launcher=None$/m);
    expect(t.stdout).toMatch(/^relu +dispatch changed +\S+backend\.yaml:\d+:\d+$/m);
    expect(t.stdout).toContain("backend kernels -> CompositeImplicitAutograd");
  });

  it("a private Python API that breaks asks for action, and --apply leaves it for a person", async () => {
    const dir = freshProject("pyapichip");
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    const r = await cliAsync(["upgrade", dir, "--torch-version", "2.98.5", "--json"], env);
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.overloads.every((o: { changes: unknown[] }) => o.changes.length === 0)).toBe(true);
    expect(report.pythonApi.summary).toEqual({ unchanged: WATCHED.length - 1, compatible: 0, break: 1, missing: 0 });
    const a = await cliAsync(["upgrade", dir, "--torch-version", "2.98.5", "--apply", "--json"], env);
    expect(a.code).toBe(1);
    expect(JSON.parse(a.stdout).applied.left).toEqual([
      expect.stringMatching(
        /^torch_pyapichip\/_inductor\.py: torch's PythonWrapperCodegen\.make_allocation \(torch\/_inductor\/codegen\/wrapper\.py:\d+\) breaks: positional parameter removed: stride$/,
      ),
    ]);
  }, 120_000);

  it("--torch-version of the pinned release: its wheel's Python files on both sides, all unchanged", async () => {
    const pinned = (await discoverTorch()).version.replace(/\+.*$/, "");
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    const r = await cliAsync(["upgrade", project, "--torch-version", pinned], env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const n = WATCHED.length;
    expect(r.stdout).toContain(
      `private torch Python APIs ${pinned} -> ${pinned}: ${n} watched, ${n} unchanged, 0 compatible, 0 break, 0 missing (the same files)\n`,
    );
    expect(existsSync(path.join(cache, "torch-schemas", pinned, "python", PYTHON_API_FILES[0]!))).toBe(true);
  });

  it("--offline with a cache an older opgen-backend wrote: the operators compared, the Python APIs not (and why)", async () => {
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    expect((await cliAsync(["upgrade", project, "--torch-version", "2.98.0"], env)).code).toBe(0);
    const old = path.join(tmp, "old-cache");
    cpSync(path.join(cache, "torch-schemas/2.98.0"), path.join(old, "torch-schemas/2.98.0"), { recursive: true });
    rmSync(path.join(old, "torch-schemas/2.98.0/python"), { recursive: true });
    writeFileSync(path.join(old, "torch-schemas/2.98.0/wheel.json"), JSON.stringify({ version: "2.98.0", wheel: "w" }));
    const r = await cliAsync(["upgrade", project, "--torch-version", "2.98.0", "--offline"], { OPGEN_CACHE_DIR: old });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "private torch Python APIs: not compared (torch 2.98.0's Python files are not in the cache, which an older opgen-backend wrote; run once without --offline)\n",
    );
  });

  it("refuses a version PyPI does not have, a nightly and an older torch: one line, exit 2", async () => {
    const env = { OPGEN_PYPI_URL: pypi.index, OPGEN_CACHE_DIR: cache };
    for (const [v, want] of [
      ["2.96.0", /is not a release on http:\/\/127\.0\.0\.1:\d+\/pypi \(the latest is 2\.99\.0\)/],
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
