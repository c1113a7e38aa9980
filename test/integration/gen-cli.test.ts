/**
 * `opgen-backend gen` and `coverage` as a user runs them: a real CLI process
 * on the built dist/ (vitest's globalSetup compiles it), against the installed torch.
 */
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliSync } from "../helpers/cli.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FIX = path.join(ROOT, "test/fixtures");

const cli = cliSync;

const fresh = () => mkdtempSync(path.join(tmpdir(), "opgen-gencli-"));

describe("gen on bad input", () => {
  const cases: [string, string, RegExp[]][] = [
    [
      "every problem at once",
      "backend/invalid_everything.yaml",
      [/invalid_everything\.yaml:2:\d+: /, /:8:1: .*suported/, /:14:5: .*number 7/],
    ],
    ["empty file", "", [/empty\.yaml:1:1: /]],
    ["top level is a list", "- add.Tensor\n", [/:1:1: .*mapping/]],
    ["YAML syntax error", "backend: PrivateUse1\ncpp_namespace: [oops\n", [/:\d+:\d+: /]],
    [
      "C++ injection in class_name",
      "backend: PrivateUse1\ncpp_namespace: at::x\nclass_name: 'X {}; int y'\nsupported: [add.Tensor]\n",
      [/:3:\d+: .*class_name/],
    ],
    [
      "alias bomb",
      "backend: PrivateUse1\ncpp_namespace: at::x\na: &a [x, x]\nb: &b [*a, *a]\nsupported: *b\n",
      [/:\d+:\d+: .*alias/i],
    ],
    [
      "unknown op with suggestion",
      "backend: PrivateUse1\ncpp_namespace: at::x\nsupported:\n  - ad.Tensor\n",
      [/:4:5: .*ad\.Tensor.*did you mean.*add\.Tensor/],
    ],
    [
      "backward formulas that reach outside the expression (Note [Backward formulas])",
      'backend: PrivateUse1\ncpp_namespace: at::x\ndevice: x\nautograd:\n  - op: gelu\n    backward: {self: "grad; system(cmd)"}\n' +
        "custom:\n  - func: fused(Tensor self, int k) -> Tensor\n    kernel: fused\n    backward: {k: grad, self: ctx}\n    reference: self\n",
      [
        /:6:27: autograd entry gelu: the backward formula for self has a ';'/,
        /:10:16: custom operator fused: backward formula for k, which is int and has no gradient/,
        /:10:31: custom operator fused: the backward formula for self uses "ctx"/,
      ],
    ],
  ];
  it.each(cases)("%s: exit 1, file:line:col, no stack, nothing written", (_name, given, want) => {
    const dir = fresh();
    const yamlPath = given.endsWith(".yaml") ? path.join(FIX, given) : path.join(dir, "empty.yaml");
    if (!given.endsWith(".yaml")) writeFileSync(yamlPath, given);
    const out = path.join(dir, "out");
    const r = cli(["gen", yamlPath, "-o", out]);
    expect(r.code).toBe(1);
    for (const w of want) expect(r.stderr).toMatch(w);
    expect(r.stderr).toMatch(/^opgen-backend: /m);
    expect(r.stderr).not.toMatch(/\n\s+at .*\.(js|ts):\d+/);
    expect(existsSync(out)).toBe(false);
  });

  it("a bad YAML leaves existing outputs untouched", () => {
    const dir = fresh();
    const good = path.join(dir, "b.yaml");
    cpSync(path.join(FIX, "backend/mychip.yaml"), good);
    const out = path.join(dir, "gen");
    expect(cli(["gen", good, "-o", out]).code).toBe(0);
    const before = Object.fromEntries(readdirSync(out).map((f) => [f, readFileSync(path.join(out, f), "utf8")]));
    writeFileSync(good, `${readFileSync(good, "utf8")}\n  - not_an_op.Tensor\n`);
    const r = cli(["gen", good, "-o", out]);
    expect(r.code).toBe(1);
    const after = Object.fromEntries(readdirSync(out).map((f) => [f, readFileSync(path.join(out, f), "utf8")]));
    expect(after).toEqual(before);
  });
});

describe("gen on good input", () => {
  it("writes the four outputs; a no-op re-run rewrites zero files; --check and --dry-run", () => {
    const dir = fresh();
    const y = path.join(dir, "backend.yaml");
    cpSync(path.join(FIX, "backend/npu_autograd.yaml"), y);
    const out = path.join(dir, "csrc/generated");
    const r1 = cli(["gen", y, "--json"]);
    expect(r1.code, r1.stderr).toBe(0);
    const j = JSON.parse(r1.stdout) as { files: { path: string; status: string }[] };
    expect(j.files.map((f) => f.path).sort()).toEqual(
      [
        "PrivateUse1NativeFunctions.h",
        "RegisterAutogradPrivateUse1.cpp",
        "RegisterPrivateUse1.cpp",
        "op_manifest.json",
      ].sort(),
    );
    const old = new Date(2001, 1, 1);
    for (const f of readdirSync(out)) utimesSync(path.join(out, f), old, old);
    const r2 = cli(["gen", y, "-o", out, "--json"]);
    expect(r2.code).toBe(0);
    expect((JSON.parse(r2.stdout) as typeof j).files.every((f) => f.status === "unchanged")).toBe(true);
    for (const f of readdirSync(out)) expect(statSync(path.join(out, f)).mtime.getTime()).toBe(old.getTime());
    expect(cli(["gen", y, "-o", out, "--check"]).code).toBe(0);

    // The YAML changes: --check fails and writes nothing; --dry-run lists the change.
    writeFileSync(y, readFileSync(y, "utf8").replace("supported:", "supported:\n  - atan2"));
    const check = cli(["gen", y, "-o", out, "--check"]);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/stale/);
    const dry = cli(["gen", y, "-o", out, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/would update .*PrivateUse1NativeFunctions\.h/);
    for (const f of readdirSync(out)) expect(statSync(path.join(out, f)).mtime.getTime()).toBe(old.getTime());
    const manifest = JSON.parse(readFileSync(path.join(out, "op_manifest.json"), "utf8")) as {
      operators: { name: string }[];
    };
    expect(manifest.operators.some((o) => o.name === "atan2")).toBe(false);
  });

  it("--stubs writes a skeleton per undefined kernel and never overwrites; --impl-path finds missing kernels", () => {
    const dir = fresh();
    const y = path.join(dir, "backend.yaml");
    writeFileSync(y, "backend: PrivateUse1\ncpp_namespace: at::v\ndevice: vchip\nsupported:\n  - relu\n  - mm\n");
    const kdir = path.join(dir, "kernels");
    const r = cli(["gen", y, "-o", path.join(dir, "gen"), "--stubs", kdir]);
    expect(r.code, r.stderr).toBe(0);
    const stubs = readdirSync(kdir).sort();
    expect(stubs.length).toBe(2);
    const relu = stubs.find((s) => s.startsWith("relu"))!;
    expect(readFileSync(path.join(kdir, relu), "utf8")).toMatch(/not implemented for vchip/);
    writeFileSync(path.join(kdir, relu), "// mine\n");
    expect(cli(["gen", y, "-o", path.join(dir, "gen"), "--stubs", kdir]).code).toBe(0);
    expect(readFileSync(path.join(kdir, relu), "utf8")).toBe("// mine\n");

    // A definition with the wrong signature is reported, by file:line:col.
    const impl = path.join(dir, "impl");
    cpSync(kdir, impl, { recursive: true });
    writeFileSync(
      path.join(impl, relu),
      '#include "PrivateUse1NativeFunctions.h"\nnamespace at::v {\nat::Tensor PrivateUse1NativeFunctions::relu(const at::Tensor & self, int64_t x) { return self; }\n}\n',
    );
    const chk = cli(["gen", y, "-o", path.join(dir, "gen"), "--impl-path", impl]);
    expect(chk.code).toBe(1);
    expect(chk.stderr).toMatch(new RegExp(`${relu.replace(".", "\\.")}:3:\\d+: .*relu`));
  });
});

describe("coverage", () => {
  it("counts core-ATen overloads and lists fallbacks, as a table and as JSON", () => {
    const y = path.join(FIX, "backend/mychip.yaml");
    const j = cli(["coverage", y, "--json"]);
    expect(j.code, j.stderr).toBe(0);
    const cov = JSON.parse(j.stdout) as {
      core: {
        total: number;
        covered: number;
        coveredOps: { name: string }[];
        missing: { name: string; fate: string }[];
      };
      cpuFallback: string[];
    };
    expect(cov.core.total).toBe(193);
    expect(cov.core.covered + cov.core.missing.length).toBe(193);
    expect(cov.core.coveredOps.map((o) => o.name)).toContain("add.Tensor");
    expect(cov.core.missing.find((m) => m.name === "_softmax")?.fate).toBe("cpu-fallback");
    expect(cov.cpuFallback).toContain("_softmax");
    const t = cli(["coverage", y]);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(new RegExp(`core ATen: ${cov.core.covered}/193 overloads registered`));
  });
});

describe("the reference backend's own sources", () => {
  // A vendor starts from backends/ref: its kernels must be what the kernel
  // check reads (no definition hidden in a macro or behind an alias it cannot
  // see through), or `gen --stubs` would write stubs for kernels that exist.
  const ref = path.join(ROOT, "backends/ref");
  it("gen --impl-path finds every kernel, and gen --stubs writes none", () => {
    const out = fresh();
    const check = cli([
      "gen",
      path.join(ref, "backend.yaml"),
      "-o",
      out,
      "--dry-run",
      "--impl-path",
      path.join(ref, "csrc"),
    ]);
    expect(check.stderr).not.toMatch(/no definition|does not match/);
    expect(check.code, check.stderr).toBe(0);
    const stubs = cli([
      "gen",
      path.join(ref, "backend.yaml"),
      "-o",
      out,
      "--dry-run",
      "--stubs",
      path.join(ref, "csrc/aten"),
    ]);
    expect(stubs.code, stubs.stderr).toBe(0);
    expect(`${stubs.stdout}${stubs.stderr}`).toMatch(/stubs: 0 file\(s\)/);
  });
});
