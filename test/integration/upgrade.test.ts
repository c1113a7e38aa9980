/**
 * `opgen-backend upgrade` without a second torch (issue 15): the installed
 * torch's catalog, edited in memory into a "next release" (a SymInt change, a
 * rename, a removed overload, changed tags, an op turned composite, a new
 * inplace sibling, a new core overload), fed through compareUpgrade, the same
 * path a real second torch takes in the CLI.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { buildPlan, generate } from "../../src/dest/index.js";
import type { Manifest } from "../../src/dest/manifest.js";
import { kernelStubs } from "../../src/impl/kernels.js";
import { assembleCatalog, isGroup, loadCatalog, operatorNameString, parseSchema } from "../../src/model/catalog.js";
import type { NativeFunction, NativeFunctionsGroup, OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch } from "../../src/torch/discover.js";
import { checkTargetVersion, compareUpgrade, dropEntry, type UpgradeReport } from "../../src/upgrade/compare.js";
import { upgradeToMarkdown, upgradeToTerminal } from "../../src/upgrade/format.js";
import { type PythonApiReport, pythonApiUnavailable } from "../../src/upgrade/python-api.js";

const YAML = `backend: PrivateUse1
cpp_namespace: upg
free_functions: true
device: upg
supported:
  - add.Tensor
  - abs
  - narrow_copy
  - sum.dim_IntList
  - unfold
  - transpose.int
  - mm
  - clamp
symint:
  - narrow_copy
`;

let installed: OperatorCatalog;
let manifest: Manifest;
let srcDir: string;
let sources: string[];

function withSchema(f: NativeFunction, text: string): NativeFunction {
  const func = parseSchema(text);
  return { ...f, func, funcText: text, name: operatorNameString(func.name) };
}

/**
 * The installed catalog with some overloads replaced (null: removed) and some
 * added; groups are rebuilt over the replacements, `inplace` adds an inplace
 * member to the group of the named functional.
 */
function editCatalog(
  base: OperatorCatalog,
  version: string,
  replace: ReadonlyMap<string, NativeFunction | null>,
  inplace: ReadonlyMap<string, NativeFunction> = new Map(),
): OperatorCatalog {
  const map = (f: NativeFunction) => (replace.has(f.name) ? replace.get(f.name)! : f);
  const functions = [...base.functions.map(map).filter((f): f is NativeFunction => f !== null), ...inplace.values()];
  const groups = base.groups.map((g) => {
    if (!isGroup(g)) return map(g) ?? g;
    // Without its out= overload a group is no group: its functional stands alone.
    if (map(g.out) === null) return map(g.functional)!;
    const add = inplace.get(g.functional.name);
    const ng: NativeFunctionsGroup = {
      ...g,
      functional: map(g.functional)!,
      out: map(g.out)!,
      inplace: add ?? (g.inplace ? map(g.inplace) : null),
      mutable: g.mutable ? map(g.mutable) : null,
    };
    return ng;
  });
  return assembleCatalog({
    torchVersion: version,
    functions,
    groups,
    tags: base.tags,
    derivatives: () => base.derivatives,
  });
}

function nextRelease(): OperatorCatalog {
  const f = (n: string) => installed.byName.get(n)!;
  const replace = new Map<string, NativeFunction | null>([
    // SymInt change on a symint: entry: the _symint kernel's dim becomes c10::SymInt.
    [
      "narrow_copy",
      withSchema(f("narrow_copy"), "narrow_copy(Tensor self, SymInt dim, SymInt start, SymInt length) -> Tensor"),
    ],
    // int[] -> SymInt[] outside symint:: the schema changes, the declaration does not.
    [
      "sum.dim_IntList",
      withSchema(
        f("sum.dim_IntList"),
        "sum.dim_IntList(Tensor self, SymInt[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      ),
    ],
    // A renamed argument: the schema changes, what a definition must match does not.
    ["clamp", withSchema(f("clamp"), f("clamp").funcText.replace("Scalar? min=None", "Scalar? lo=None"))],
    ["unfold", null],
    [
      "transpose.int",
      withSchema(f("transpose.int"), f("transpose.int").funcText.replace("transpose.int(", "transpose.integer(")),
    ],
    ["add.Tensor", { ...f("add.Tensor"), tags: ["pointwise"] }],
    ["lerp.Scalar", { ...f("lerp.Scalar"), tags: ["core", "pointwise"] }],
    [
      "abs",
      {
        ...f("abs"),
        dispatch: { CompositeImplicitAutograd: "abs" },
        hasCompositeImplicitAutogradKernel: true,
        hasCompositeExplicitAutogradKernel: false,
        isAbstract: false,
      },
    ],
  ]);
  const mm_ = withSchema(f("mm"), "mm_(Tensor(a!) self, Tensor mat2) -> Tensor(a!)");
  return editCatalog(installed, "2.14.0+cpu", replace, new Map([["mm", mm_]]));
}

beforeAll(async () => {
  installed = await loadCatalog(await discoverTorch());
  const config = parseBackendYaml(YAML, "backend.yaml", installed);
  const m = generate(config, installed).find((x) => x.path === "op_manifest.json")!;
  manifest = JSON.parse(m.content as string) as Manifest;
  srcDir = mkdtempSync(path.join(tmpdir(), "opgen-upgrade-"));
  sources = [];
  for (const s of kernelStubs(buildPlan(config, installed))) {
    const file = path.join(srcDir, s.path);
    writeFileSync(file, s.content);
    sources.push(file);
  }
});

afterAll(() => rmSync(srcDir, { recursive: true, force: true }));

const byOp = (r: UpgradeReport, op: string) => r.overloads.find((o) => o.op === op)!;

describe("compareUpgrade on an unchanged torch", () => {
  it("reports nothing to do", () => {
    const r = compareUpgrade({
      manifest,
      yamlText: YAML,
      yamlFile: "backend.yaml",
      target: installed,
      baseline: installed,
      kernelSources: sources,
    });
    expect(r.overloads.map((o) => o.changes)).toEqual(r.overloads.map(() => []));
    expect(r.yamlErrors).toEqual([]);
    expect(r.derived).toEqual({ added: [], removed: [] });
    expect(r.core.addedUncovered).toEqual([]);
    expect(r.actionNeeded).toBe(false);
    expect(upgradeToTerminal(r)).toMatch(/nothing to do\n$/);
  });

  it("asks for action when a private Python API the package uses breaks or is gone, not when it grew compatibly", () => {
    const entry = {
      file: "torch/_inductor/codegen/wrapper.py",
      name: "PythonWrapperCodegen.make_allocation",
      kind: "def" as const,
      usedBy: "torch_<name>/_inductor.py",
      old: "(self, name)",
      new: "(self, name, *, pinned=False)",
      where: "torch/_inductor/codegen/wrapper.py:1",
      inheritedFrom: null,
    };
    const drift = (status: "compatible" | "break" | "missing"): PythonApiReport => ({
      ...pythonApiUnavailable("2.13.0", "2.99.0", ""),
      unavailable: null,
      entries: [{ ...entry, status, reasons: [] }],
      summary: { unchanged: 0, compatible: 0, break: 0, missing: 0, [status]: 1 },
    });
    const run = (pythonApi: PythonApiReport) =>
      compareUpgrade({
        manifest,
        yamlText: YAML,
        yamlFile: "backend.yaml",
        target: installed,
        baseline: installed,
        pythonApi,
      });
    expect(run(drift("compatible")).actionNeeded).toBe(false);
    expect(run(drift("break")).actionNeeded).toBe(true);
    expect(run(drift("missing")).actionNeeded).toBe(true);
    expect(run(drift("break")).pythonApi?.entries[0]?.status).toBe("break");
  });
});

describe("compareUpgrade on an edited catalog", () => {
  let r: UpgradeReport;
  beforeAll(() => {
    r = compareUpgrade({
      manifest,
      yamlText: YAML,
      yamlFile: "backend.yaml",
      target: nextRelease(),
      baseline: installed,
      kernelSources: sources,
    });
  });

  it("names the kernel definition a SymInt change breaks, with file:line", () => {
    const [c] = byOp(r, "narrow_copy").changes;
    expect(c?.kind).toBe("signature");
    if (c?.kind !== "signature") return;
    expect(c.oldDeclaration).toContain("int64_t dim");
    expect(c.newDeclaration).toContain("c10::SymInt dim");
    expect(c.breaks).toHaveLength(1);
    expect(path.basename(c.breaks[0]!.loc.file)).toBe("narrow_copy.cpp");
    expect(c.breaks[0]!.loc.line).toBeGreaterThan(0);
    expect(c.breaks[0]!.definition).toContain("narrow_copy_symint");
    expect(byOp(r, "narrow_copy").loc?.line).toBe(8);
  });

  it("tells a schema change that keeps the C++ declaration from a break", () => {
    expect(byOp(r, "sum.dim_IntList").changes.map((c) => c.kind)).toEqual(["schema"]);
    expect(byOp(r, "clamp").changes.map((c) => c.kind)).toEqual(["schema"]);
  });

  it("reports a removed overload with its backend.yaml line, and a rename", () => {
    const removed = byOp(r, "unfold");
    expect(removed.changes[0]).toMatchObject({ kind: "removed", renamedTo: null });
    expect(removed.loc?.line).toBe(10);
    expect(byOp(r, "transpose.int").changes[0]).toMatchObject({ kind: "removed", renamedTo: "transpose.integer" });
    // backend.yaml's errors for them are these reports, not repeated.
    expect(r.yamlErrors).toEqual([]);
  });

  it("reports an op turned CompositeImplicitAutograd", () => {
    expect(byOp(r, "abs").changes).toEqual([
      expect.objectContaining({ kind: "dispatch", was: "CompositeExplicitAutograd", now: "CompositeImplicitAutograd" }),
    ]);
  });

  it("reports changed tags, core-ATen counts and new core overloads not served", () => {
    expect(byOp(r, "add.Tensor").changes).toEqual([{ kind: "tags", added: [], removed: ["core"] }]);
    expect(r.core.before).toBe(manifest.core_total);
    // add.Tensor left core; lerp.Scalar and mm_ (core like mm) joined, but mm_ is served (derived).
    expect(r.core.after).toBe(manifest.core_total + 1);
    expect(r.core.addedUncovered).toEqual(["lerp.Scalar"]);
    expect(r.core.removedUncovered).toEqual([]);
  });

  it("reports a sibling that will now be derived", () => {
    expect(r.derived.added).toEqual(["mm_"]);
    expect(r.derived.removed).toEqual([]);
  });

  it("leaves untouched overloads unchanged and asks for action", () => {
    expect(byOp(r, "mm").changes).toEqual([]);
    expect(r.summary).toMatchObject({ unchanged: 1, signature: 1, schema: 2, removed: 2, dispatch: 1, tags: 1 });
    expect(r.actionNeeded).toBe(true);
    const md = upgradeToMarkdown(r);
    expect(md).toContain("narrow_copy.cpp:");
    expect(md).toContain("renamed to transpose.integer");
  });

  it("without a baseline, notes composite overloads instead of judging them", () => {
    const nb = compareUpgrade({ manifest, yamlText: YAML, yamlFile: "backend.yaml", target: nextRelease() });
    expect(nb.compositeInTarget).toEqual(["abs"]);
    expect(byOp(nb, "abs").changes).toEqual([]);
    expect(nb.core.addedUncovered).toBeNull();
  });
});

describe("a symint: entry whose overload loses its SymInt", () => {
  it("reports the symint: line, and the _symint definition that no longer matches", () => {
    const nc = installed.byName.get("narrow_copy")!;
    const target = editCatalog(
      installed,
      "2.14.0",
      new Map([["narrow_copy", withSchema(nc, "narrow_copy(Tensor self, int dim, int start, int length) -> Tensor")]]),
    );
    const r = compareUpgrade({ manifest, yamlText: YAML, yamlFile: "backend.yaml", target, kernelSources: sources });
    expect(r.yamlErrors.map((d) => [d.loc?.line, d.message])).toEqual([
      [15, expect.stringMatching(/^symint entry narrow_copy has no SymInt argument/)],
    ]);
    const [c] = byOp(r, "narrow_copy").changes;
    expect(c).toMatchObject({ kind: "signature" });
    if (c?.kind !== "signature") return;
    expect(c.oldDeclaration).toMatch(/ narrow_copy_symint\(/);
    expect(c.newDeclaration).toMatch(
      / narrow_copy\(const at::Tensor & self, int64_t dim, int64_t start, int64_t length\)/,
    );
    expect(c.breaks.map((b) => path.basename(b.loc.file))).toEqual(["narrow_copy.cpp"]);
    expect(r.actionNeeded).toBe(true);
  });
});

describe("kernels as class members (class_name)", () => {
  it("names the member definition a SymInt change breaks", () => {
    const yaml =
      "backend: PrivateUse1\ncpp_namespace: at::upg\nclass_name: UpgNativeFunctions\nsupported:\n  - narrow_copy\nsymint:\n  - narrow_copy\n";
    const config = parseBackendYaml(yaml, "backend.yaml", installed);
    const m = generate(config, installed).find((x) => x.path === "op_manifest.json")!;
    const dir = mkdtempSync(path.join(tmpdir(), "opgen-upgrade-class-"));
    try {
      const files = kernelStubs(buildPlan(config, installed)).map((st) => {
        writeFileSync(path.join(dir, st.path), st.content);
        return path.join(dir, st.path);
      });
      const r = compareUpgrade({
        manifest: JSON.parse(m.content as string) as Manifest,
        yamlText: yaml,
        yamlFile: "backend.yaml",
        target: nextRelease(),
        kernelSources: files,
      });
      const [c] = byOp(r, "narrow_copy").changes;
      expect(c?.kind).toBe("signature");
      if (c?.kind !== "signature") return;
      expect(c.oldDeclaration).toMatch(/^static /);
      expect(c.breaks.map((b) => [path.basename(b.loc.file), b.definition.split("(")[0]])).toEqual([
        ["narrow_copy.cpp", "UpgNativeFunctions::narrow_copy_symint"],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("dropEntry", () => {
  it.each([
    ["  - unfold", 5, ""],
    ["  - unfold  # a view", 5, ""],
    ["supported: [abs, unfold, mm]", 18, "supported: [abs,         mm]"],
    ["supported: [abs, unfold]", 18, "supported: [abs        ]"],
    ["supported: [unfold]", 13, "supported: [      ]"],
    ["  unfold, mm]", 3, "          mm]"],
  ])("%j at column %i", (line, col, want) => {
    expect(dropEntry(line, col)).toBe(want);
  });
  it("refuses what is not a list entry", () => {
    expect(dropEntry("backend: Foo", 10)).toBeNull();
  });
});

describe("a flow-style op list", () => {
  it("drops a removed overload from it and plans the rest", () => {
    const flow = YAML.replace(
      /supported:\n( {2}- .*\n)+/,
      (m) =>
        `supported: [${m
          .split("\n")
          .slice(1, -1)
          .map((l) => l.slice(4))
          .join(", ")}]\n`,
    );
    expect(flow).toContain("supported: [add.Tensor, abs, narrow_copy, sum.dim_IntList, unfold,");
    const r = compareUpgrade({ manifest, yamlText: flow, yamlFile: "backend.yaml", target: nextRelease() });
    expect(byOp(r, "unfold").changes[0]).toMatchObject({ kind: "removed" });
    expect(byOp(r, "unfold").loc?.line).toBe(5);
    expect(byOp(r, "narrow_copy").changes[0]).toMatchObject({ kind: "signature" });
  });
});

describe("checkTargetVersion", () => {
  it.each([
    ["2.13.0", "2.14.0+cpu", null],
    ["2.13.0", "2.13.0", null],
    ["2.13.0", "2.12.1", /older than the project's pin 2\.13\.0/],
    ["2.13.0", "2.14.0.dev20261201+cpu", /nightly/],
    ["2.13.0", "2.14.0a0+git1234", /nightly/],
  ])("pin %s, target %s", (pin, target, want) => {
    if (want === null) expect(() => checkTargetVersion(pin, target)).not.toThrow();
    else expect(() => checkTargetVersion(pin, target)).toThrow(want);
  });
});

describe("core overloads leaving, and siblings no longer derived", () => {
  it("names a core overload the target drops that the backend does not serve, and a lost sibling", () => {
    const f = (n: string) => installed.byName.get(n)!;
    expect(f("acos").tags).toContain("core");
    // mm.out gone: mm's out= sibling is no longer derived.
    const target = editCatalog(
      installed,
      "2.14.0",
      new Map<string, NativeFunction | null>([
        ["acos", { ...f("acos"), tags: ["pointwise"] }],
        ["mm.out", null],
      ]),
    );
    const r = compareUpgrade({ manifest, yamlText: YAML, yamlFile: "backend.yaml", target, baseline: installed });
    expect(r.core.removedUncovered).toEqual(["acos"]);
    expect(r.core.after).toBe(manifest.core_total - 1);
    expect(r.derived.removed).toEqual(["mm.out"]);
    expect(r.actionNeeded).toBe(true);
  });
});

describe("the terminal table", () => {
  const on = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`;
  const colour = { red: on(31, 39), green: on(32, 39), yellow: on(33, 39), dim: on(2, 22), bold: on(1, 22) };

  it("is one row per changed overload, breaks in red and dispatch changes in yellow, only when asked", () => {
    const r = compareUpgrade({
      manifest,
      yamlText: YAML,
      yamlFile: "backend.yaml",
      target: nextRelease(),
      baseline: installed,
      kernelSources: sources,
    });
    const plain = upgradeToTerminal(r);
    expect(plain).not.toContain("\u001b[");
    expect(plain).toMatch(/^OVERLOAD +CHANGE +LISTED AT$/m);
    expect(plain).toMatch(/^narrow_copy +signature changed +backend\.yaml:8:5$/m);
    expect(plain).toMatch(/^abs +dispatch changed +backend\.yaml:\d+:\d+$/m);
    expect(plain).toMatch(/^ {4}\s*breaks: \S+narrow_copy\.cpp:\d+:\d+: /m);
    const tty = upgradeToTerminal(r, colour);
    const row = (op: string) => tty.split("\n").find((l) => l.startsWith(`${op} `)) ?? "";
    expect(row("narrow_copy")).toContain("\u001b[31msignature changed\u001b[39m");
    expect(row("abs")).toContain("\u001b[33mdispatch changed");
    expect(row("clamp")).not.toContain("\u001b[");
    expect(tty).toContain("\u001b[1m\u001b[31maction needed");
  });
});
