/**
 * `upgrade`'s private Python API drift (Note [Python API drift]): the
 * scanner on the installed torch's own source text, on copies of it edited
 * into a "next release" (a keyword added, a positional removed, a method
 * deleted, a decorator dropped, a file gone), and the report's rendering.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverTorch } from "../../src/torch/discover.js";
import type { UpgradeReport } from "../../src/upgrade/compare.js";
import { upgradeToJson, upgradeToMarkdown, upgradeToTerminal } from "../../src/upgrade/format.js";
import {
  compareFound,
  comparePythonApi,
  findDefinition,
  maskPython,
  PYTHON_API_FILES,
  type PythonApiReport,
  type PythonSources,
  parsePython,
  printParams,
  pythonApiUnavailable,
  WATCHED,
} from "../../src/upgrade/python-api.js";

let installed: PythonSources;
let python: string;
let tmp: string;
const read = (file: string) => readFileSync(path.join(installed.root, file), "utf8");

/** A copy of the installed torch's watched files under a new root, with `edits` (file -> text => text; null: deleted). */
function release(name: string, edits: Record<string, ((t: string) => string) | null>): PythonSources {
  const root = path.join(tmp, name);
  for (const f of PYTHON_API_FILES) {
    const edit = edits[f];
    if (edit === null) continue;
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    if (edit) writeFileSync(path.join(root, f), edit(read(f)));
    else copyFileSync(path.join(installed.root, f), path.join(root, f));
  }
  return { version: "2.99.0", root };
}

/** `text` with `from` replaced by `to` once, after the first `after` (which must be there, as must `from`). */
function edit(text: string, after: string, from: string, to: string): string {
  const i = text.indexOf(after);
  expect(i, after).toBeGreaterThanOrEqual(0);
  const j = text.indexOf(from, i);
  expect(j, from).toBeGreaterThanOrEqual(0);
  return text.slice(0, j) + to + text.slice(j + from.length);
}

beforeAll(async () => {
  const t = await discoverTorch();
  python = t.python;
  installed = { version: t.version.replace(/\+.*$/, ""), root: path.dirname(t.torchDir) };
  tmp = mkdtempSync(path.join(tmpdir(), "opgen-pyapi-"));
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the scanner on the installed torch", () => {
  it("finds every watched definition", () => {
    const missing = WATCHED.filter((d) => findDefinition(read(d.file), d.name, d.kind) === null);
    expect(missing).toEqual([]);
  });

  it("reads parameter lists as Python has them", () => {
    const common = read("torch/_inductor/codegen/common.py");
    const reg = findDefinition(common, "register_backend_for_device", "def")!;
    expect(reg.params.map((p) => p.name)).toEqual([
      "device",
      "device_scheduling",
      "device_wrapper_codegen",
      "device_cpp_wrapper_codegen",
      "device_fx_wrapper_codegen",
      "device_custom_pass",
      "device_custom_config",
    ]);
    expect(reg.params.find((p) => p.name === "device_custom_pass")).toMatchObject({
      kind: "positional",
      annotation: "CustomGraphModulePass | None",
      default: "None",
    });
    const wrapper = read("torch/_inductor/codegen/wrapper.py");
    const helper = findDefinition(wrapper, "PythonWrapperCodegen._generate_kernel_call_helper", "def")!;
    expect(helper.params.slice(0, 5).map((p) => [p.name, p.kind])).toEqual([
      ["self", "positional"],
      ["kernel_name", "positional"],
      ["call_args", "positional"],
      ["device", "keyword-only"],
      ["triton", "keyword-only"],
    ]);
    expect(printParams(helper)).toMatch(/^\(self, kernel_name: str, call_args, \*, device=None, triton=True, /);
    expect(printParams(findDefinition(wrapper, "PythonWrapperCodegen.create", "def")!)).toMatch(
      /^@staticmethod \(is_subgraph: bool, subgraph_name: str \| None, /,
    );
    // The same method name in another class of the file is not this one.
    const sub = findDefinition(wrapper, "SubgraphPythonWrapperCodegen.__init__", "def")!;
    expect(sub.params.map((p) => p.name)).toEqual(["self", "subgraph_name", "parent_wrapper", "partition_signatures"]);
    const c10d = findDefinition(read("torch/distributed/distributed_c10d.py"), "Backend.register_backend", "def")!;
    expect(c10d.decorators).toEqual(["classmethod"]);
    const worker = findDefinition(
      read("torch/_dynamo/device_interface.py"),
      "DeviceInterface.Worker.set_device",
      "def",
    );
    expect(worker && printParams(worker)).toBe("@staticmethod (device: int)");
  });

  it("reads every function and method of the watched files as Python's own parser does", () => {
    // Python's ast as the oracle: each def directly in a module or class body (the last one, not
    // @overload stubs), its parameters' names, kinds and whether they have a default.
    const script = `
import ast, json, sys
out = {}
def walk(f, body, prefix):
    for n in body:
        if isinstance(n, ast.ClassDef):
            walk(f, n.body, prefix + n.name + ".")
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(getattr(d, "id", getattr(d, "attr", None)) == "overload" for d in n.decorator_list):
                continue
            a = n.args
            pos = a.posonlyargs + a.args
            ps = [[p.arg, "positional-only" if i < len(a.posonlyargs) else "positional", i >= len(pos) - len(a.defaults)] for i, p in enumerate(pos)]
            if a.vararg: ps.append([a.vararg.arg, "var-positional", False])
            ps += [[p.arg, "keyword-only", d is not None] for p, d in zip(a.kwonlyargs, a.kw_defaults)]
            if a.kwarg: ps.append([a.kwarg.arg, "var-keyword", False])
            out[f + " " + prefix + n.name] = ps
for f in sys.argv[2:]:
    walk(f, ast.parse(open(sys.argv[1] + "/" + f).read()).body, "")
print(json.dumps(out))
`;
    const r = spawnSync(python, ["-c", script, installed.root, ...PYTHON_API_FILES], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const want = JSON.parse(r.stdout) as Record<string, [string, string, boolean][]>;
    expect(Object.keys(want).length).toBeGreaterThan(1000);
    const sources = new Map(PYTHON_API_FILES.map((f) => [f, parsePython(read(f))]));
    const differ: string[] = [];
    for (const [key, params] of Object.entries(want)) {
      const [file, name] = key.split(" ") as [string, string];
      const f = findDefinition(sources.get(file)!, name, "def");
      const got = f?.params.map((p) => [p.name, p.kind, p.default !== null]);
      if (JSON.stringify(got) !== JSON.stringify(params)) differ.push(`${key}: ${JSON.stringify(got)}`);
    }
    expect(differ).toEqual([]);
  });

  it("follows a method into a base the file defines, and never into a docstring", () => {
    const text = read("torch/_inductor/custom_graph_pass.py");
    expect(findDefinition(text, "CustomGraphModulePass.uuid", "def")?.inheritedFrom).toBe("CustomPassBase");
    expect(findDefinition(text, "CustomGraphModulePass.__call__", "def")?.inheritedFrom).toBeNull();
    // CustomPassBase's docstring shows `class MyCustomGraphPass(CustomGraphPass):` as an example.
    expect(text).toContain("class MyCustomGraphPass");
    expect(findDefinition(text, "MyCustomGraphPass", "class")).toBeNull();
  });

  it("blanks strings and comments, keeping offsets", () => {
    const src = 'def f(a="(", b=1):  # ) not code\n    s = """\nclass X:\n"""\n';
    const { masked, clean } = maskPython(src);
    expect(masked.length).toBe(src.length);
    expect(masked).not.toContain("class X");
    expect(clean).toContain('a="("');
    expect(clean).not.toContain("not code");
    expect(printParams(findDefinition(src, "f", "def")!)).toBe('(a="(", b=1)');
    expect(findDefinition(src, "X", "class")).toBeNull();
  });
});

/** The names a class in a scaffold file defines at its body's level (methods, assignments, nested classes). */
function scaffoldMembers(text: string, cls: string): string[] {
  const lines = text.split("\n");
  const k = lines.findIndex((l) => new RegExp(`^\\s*class ${cls}\\b`).test(l));
  expect(k, cls).toBeGreaterThanOrEqual(0);
  const indent = lines[k]!.length - lines[k]!.trimStart().length;
  const out: string[] = [];
  for (const l of lines.slice(k + 1)) {
    if (l.trim() === "") continue;
    const i = l.length - l.trimStart().length;
    if (i <= indent) break;
    const m = i === indent + 4 ? /^(?:def (\w+)\(|class (\w+)\b|(\w+) = )/.exec(l.trimStart()) : null;
    if (m) out.push((m[1] ?? m[2] ?? m[3])!);
  }
  return out;
}

describe("the watched table follows the scaffold", () => {
  const scaffold = (f: string) =>
    readFileSync(path.join(import.meta.dirname, "../../scaffolds/common/torch_{{name}}", f), "utf8");
  it.each([
    ["_inductor.py.hbs", "Calls", "PythonWrapperCodegen"],
    ["_inductor.py.hbs", "Wrapper", "PythonWrapperCodegen"],
    ["_inductor.py.hbs", "OpOverrides", "DeviceOpOverrides"],
    ["_inductor.py.hbs", "DevicePass", "CustomGraphModulePass"],
    ["_inductor.py.hbs", "Refusing", "CppScheduling"],
    ["_compile.py.hbs", "Interface", "DeviceInterface"],
    ["_compile.py.hbs", "Worker", "DeviceInterface.Worker"],
  ])("every member %s's %s overrides is watched as %s's", (file, cls, base) => {
    const members = scaffoldMembers(scaffold(file), cls);
    expect(members.length).toBeGreaterThan(0);
    const names = new Set(WATCHED.map((d) => d.name));
    expect(members.filter((m) => !names.has(`${base}.${m}`))).toEqual([]);
  });

  it("every registration call and base class the scaffold names is watched", () => {
    const used = `${scaffold("_inductor.py.hbs")}\n${scaffold("_compile.py.hbs")}\n${scaffold("_distributed.py.hbs")}`;
    for (const d of WATCHED) expect(used, d.name).toContain(d.name.split(".").at(-1)!);
    for (const [call, name] of [
      ["common.register_backend_for_device(", "register_backend_for_device"],
      ["common.register_device_op_overrides(", "register_device_op_overrides"],
      ["module.register_interface_for_device(", "register_interface_for_device"],
      ["c10d.Backend.register_backend(", "Backend.register_backend"],
      ["c10d.Backend._plugins", "Backend._plugins"],
    ]) {
      expect(used).toContain(call);
      expect(WATCHED.map((d) => d.name)).toContain(name);
    }
  });
});

describe("signature drift", () => {
  const sig = (params: string, deco = "") => findDefinition(`${deco}def f(${params}):\n    pass\n`, "f", "def")!;
  it.each([
    [
      "unchanged, whitespace and comments aside",
      "a, b: Optional[ int ]=None",
      "a,\n  b: Optional[int] = None,  # why\n",
      "unchanged",
      [],
    ],
    [
      "a keyword-only argument with a default",
      "a, *, k=1",
      "a, *, k=1, new=None",
      "compatible",
      ["keyword-only parameter added: new=None"],
    ],
    [
      "a keyword-only argument without one",
      "a, *, k=1",
      "a, *, k=1, new",
      "break",
      ["keyword-only parameter added without a default: new"],
    ],
    [
      "a positional argument removed",
      "self, a, b, c=None",
      "self, a, c=None",
      "break",
      ["positional parameter removed: b"],
    ],
    ["a positional argument added", "self, a", "self, a, b=None", "break", ["positional parameter added: b"]],
    ["reordered", "a, b", "b, a", "break", ["positional parameters reordered: b, a"]],
    ["a default lost", "a, b=1", "a, b", "break", ["b lost its default (1)"]],
    [
      "made keyword-only",
      "a, b=1",
      "a, *, b=1",
      "break",
      ["positional parameter removed: b", "b: positional -> keyword-only"],
    ],
    ["**kwargs removed", "a, **kwargs", "a", "break", ["**kwargs removed"]],
    ["**kwargs added", "a", "a, **kw", "compatible", ["**kw added"]],
    ["an annotation changed", "a: int", "a: int | None", "compatible", ["a's annotation int -> int | None"]],
  ] as const)("%s", (_what, before, after, status, reasons) => {
    expect(compareFound(sig(before), sig(after))).toEqual({ status, reasons });
  });

  it("a staticmethod that became a method breaks", () => {
    expect(compareFound(sig("a", "@staticmethod\n"), sig("a")).status).toBe("break");
    // @overload stubs are not the definition.
    const text = "@overload\ndef f(a: int): ...\ndef f(a, b=None):\n    pass\n";
    expect(printParams(findDefinition(text, "f", "def")!)).toBe("(a, b=None)");
  });
});

describe("comparePythonApi", () => {
  it("the installed torch against itself: every definition unchanged", () => {
    const r = comparePythonApi(installed, installed);
    expect(r.sameFiles).toBe(true);
    expect(r.summary).toEqual({ unchanged: WATCHED.length, compatible: 0, break: 0, missing: 0 });
  });

  it("an edited release: a keyword added, a positional removed, a method deleted, a decorator dropped, a file gone", () => {
    const wrapper = "torch/_inductor/codegen/wrapper.py";
    const next = release("next", {
      [wrapper]: (t) =>
        edit(
          edit(
            edit(
              t,
              "    def _generate_kernel_call_helper(",
              "        current_stream_idx=None,\n",
              "        current_stream_idx=None,\n        launcher=None,\n",
            ),
            "    def make_allocation(",
            "shape, stride, allocation_shape",
            "shape, allocation_shape",
          ),
          "class PythonWrapperCodegen(",
          "    @staticmethod\n    def create(",
          "    def create(",
        ),
      "torch/_inductor/codegen/common.py": (t) =>
        edit(t, "class DeviceOpOverrides", "def cpp_kernel_type(", "def cpp_kernel_type_v2("),
      "torch/distributed/distributed_c10d.py": null,
    });
    const r = comparePythonApi(installed, next);
    const by = (name: string) => r.entries.find((e) => e.name === name)!;
    expect(by("PythonWrapperCodegen._generate_kernel_call_helper")).toMatchObject({
      status: "compatible",
      reasons: ["keyword-only parameter added: launcher=None"],
    });
    expect(by("PythonWrapperCodegen._generate_kernel_call_helper").new).toMatch(
      /current_stream_idx=None, launcher=None/,
    );
    expect(by("PythonWrapperCodegen.make_allocation")).toMatchObject({
      status: "break",
      reasons: ["positional parameter removed: stride"],
      old: "(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False)",
      new: "(self, name, device, dtype, shape, allocation_shape=None, is_pinned=False)",
      usedBy: "torch_<name>/_inductor.py",
    });
    expect(by("PythonWrapperCodegen.make_allocation").where).toMatch(/^torch\/_inductor\/codegen\/wrapper\.py:\d+$/);
    expect(by("PythonWrapperCodegen.create")).toMatchObject({
      status: "break",
      reasons: ["decorators staticmethod -> none"],
    });
    expect(by("DeviceOpOverrides.cpp_kernel_type")).toMatchObject({
      status: "missing",
      new: null,
      reasons: ["not defined in torch 2.99.0"],
    });
    for (const name of ["Backend", "Backend.register_backend", "Backend._plugins"])
      expect(by(name)).toMatchObject({
        status: "missing",
        reasons: ["torch 2.99.0 has no torch/distributed/distributed_c10d.py"],
      });
    expect(r.summary).toEqual({ unchanged: WATCHED.length - 7, compatible: 1, break: 2, missing: 4 });
  });
});

describe("the report", () => {
  const report = (pythonApi: PythonApiReport): UpgradeReport => ({
    fromTorch: "2.13.0",
    toTorch: "2.99.0",
    baseline: "2.13.0",
    overloads: [],
    yamlErrors: [],
    core: { before: 193, after: 193, addedUncovered: [], removedUncovered: [] },
    derived: { added: [], removed: [] },
    compositeInTarget: [],
    summary: { unchanged: 0, signature: 0, schema: 0, removed: 0, dispatch: 0, tags: 0 },
    pythonApi,
    actionNeeded: pythonApi.summary.break + pythonApi.summary.missing > 0,
  });

  it("renders drift for the terminal, Markdown and JSON with a count line", () => {
    const next = release("render", {
      "torch/_inductor/codegen/wrapper.py": (t) =>
        edit(t, "    def make_allocation(", "shape, stride, allocation_shape", "shape, allocation_shape"),
      "torch/_dynamo/device_interface.py": (t) =>
        edit(
          t,
          "class DeviceInterface",
          "def is_bf16_supported(including_emulation: bool = False)",
          "def is_bf16_supported(including_emulation: bool = False, *, dtype=None)",
        ),
    });
    const r = report(comparePythonApi(installed, next));
    const t = upgradeToTerminal(r);
    expect(t).toContain(
      `private torch Python APIs ${installed.version} -> 2.99.0: ${WATCHED.length} watched, ${WATCHED.length - 2} unchanged, 1 compatible, 1 break, 0 missing\n`,
    );
    expect(t).toMatch(
      /^ {2}PythonWrapperCodegen\.make_allocation +break +torch_<name>\/_inductor\.py +torch\/_inductor\/codegen\/wrapper\.py:\d+$/m,
    );
    expect(t).toMatch(/^ {6}positional parameter removed: stride$/m);
    expect(t).toMatch(/^ {2}DeviceInterface\.is_bf16_supported +compatible +torch_<name>\/_compile\.py /m);
    expect(t).toMatch(/^ {6}new: @staticmethod \(including_emulation: bool = False, \*, dtype=None\)$/m);
    expect(t).toMatch(/action needed\n$/);
    const md = upgradeToMarkdown(r);
    expect(md).toContain("## Private torch Python APIs");
    expect(md).toMatch(
      /^\| `PythonWrapperCodegen\.make_allocation` \| break \| torch_<name>\/_inductor\.py \| `torch\/_inductor\/codegen\/wrapper\.py:\d+` \|$/m,
    );
    expect(md).toContain(
      "  - old: `(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False)`",
    );
    const j = JSON.parse(upgradeToJson(r));
    expect(j.pythonApi.summary).toEqual({ unchanged: WATCHED.length - 2, compatible: 1, break: 1, missing: 0 });
  });

  it("says unchanged for the same torch, and why when it cannot compare", () => {
    const same = upgradeToTerminal(report(comparePythonApi(installed, installed)));
    expect(same).toContain(
      `${WATCHED.length} watched, ${WATCHED.length} unchanged, 0 compatible, 0 break, 0 missing (the same files)\n`,
    );
    expect(same).toMatch(/nothing to do\n$/);
    const none = upgradeToTerminal(report(pythonApiUnavailable("2.13.0", "2.99.0", "no baseline torch 2.13.0")));
    expect(none).toContain("private torch Python APIs: not compared (no baseline torch 2.13.0)\n");
  });
});
