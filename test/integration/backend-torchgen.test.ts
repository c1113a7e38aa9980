/**
 * Our backend-YAML loader side by side with torchgen's gen_backend_stubs.py
 * from the installed wheel, the compatibility oracle:
 *  - every YAML torchgen accepts, we accept;
 *  - where torchgen rejects with a check of its own, we reject too, but with
 *    file:line:col diagnostics instead of a Python traceback;
 *  - where torchgen crashes or writes injected C++, we give clean errors.
 * torchgen runs in one Python process for all cases (see DRIVER): a cold
 * `python -m torchgen.gen_backend_stubs` costs seconds each on two shared cores,
 * which would make this file take minutes. One real CLI run checks the driver
 * agrees with the CLI.
 *
 * Also checks our hard-coded lists (torchgen's keys, DispatchKey names, the
 * device names torch knows) against the installed torch, so a torch upgrade
 * that changes them fails here rather than silently.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { OUR_KEYS, parseBackendYaml, TORCHGEN_KEYS } from "../../src/backend/load.js";
import { KNOWN_DEVICES, TORCHGEN_DISPATCH_KEYS } from "../../src/backend/names.js";
import { BACKEND_KEYS } from "../../src/backend/types.js";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";
import { formatDiagnostic, UserError } from "../../src/util/errors.js";

let install: TorchInstall;
let catalog: OperatorCatalog;
beforeAll(async () => {
  install = await discoverTorch(process.env.OPGEN_PYTHON);
  catalog = await loadCatalog(install);
});

const FIXTURES = "test/fixtures/backend";
const y = (...lines: string[]): string => `${lines.join("\n")}\n`;
const HEAD = ["backend: PrivateUse1", "cpp_namespace: at::mychip"];
/** torchgen knows none of our keys; a vendor YAML for both tools leaves them out. */
const withoutOurKeys = (text: string): string =>
  text
    .split("\n")
    .filter((l) => !OUR_KEYS.some((k) => l.startsWith(`${k}:`)))
    .join("\n");
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), "utf8");

interface TorchgenResult {
  readonly ok: boolean;
  /** The exception torchgen ended with, e.g. `AssertionError: Found an invalid operator name: add`; "" when ok. */
  readonly last: string;
  readonly outDir: string;
}

/**
 * Runs gen_backend_stubs as `python -m` does (runpy, `__main__`, sys.argv) once
 * per case, in one process. torchgen caches the parsed native_functions.yaml
 * and parse_backend_yaml adds the backend's keys to that cached object, so the
 * driver removes keys a case added before the next case runs.
 */
const DRIVER = `
import json, os, runpy, sys
from pathlib import Path
import torchgen.gen as G
import torchgen.gen_backend_stubs as S
root = Path(S.__file__).absolute().parent.parent
common = os.path.join(root, "aten/src")
if not os.path.exists(common):
    common = os.path.join(root, "torchgen/packaged")
G.parse_native_yaml(os.path.join(common, "ATen/native/native_functions.yaml"), os.path.join(common, "ATen/native/tags.yaml"))
snap = {p: set(v.backend_indices.keys()) for p, v in G._GLOBAL_PARSE_NATIVE_YAML_CACHE.items()}
out = {}
for name, c in json.load(open(sys.argv[1])).items():
    sys.argv = ["gen_backend_stubs", "-s", c["src"], "-o", c["out"]]
    try:
        runpy.run_module("torchgen.gen_backend_stubs", run_name="__main__")
        out[name] = {"ok": True, "last": ""}
    except BaseException as e:
        msg = str(e).splitlines()[0] if str(e) else ""
        out[name] = {"ok": False, "last": type(e).__name__ + ": " + msg}
    for p, v in G._GLOBAL_PARSE_NATIVE_YAML_CACHE.items():
        for k in list(v.backend_indices.keys()):
            if k not in snap.get(p, set()):
                del v.backend_indices[k]
print("@@RESULT@@" + json.dumps(out))
`;

/** Runs torchgen over every case at once; returns results by case name. */
async function torchgenBatch(cases: ReadonlyMap<string, string>): Promise<Map<string, TorchgenResult>> {
  const dir = mkdtempSync(path.join(tmpdir(), "opgen-backend-tg-"));
  const spec: Record<string, { src: string; out: string }> = {};
  [...cases].forEach(([name, text], i) => {
    const src = path.join(dir, `case${i}.yaml`);
    writeFileSync(src, text);
    spec[name] = { src, out: path.join(dir, `out${i}`) };
  });
  const specFile = path.join(dir, "cases.json");
  writeFileSync(specFile, JSON.stringify(spec));
  const r = await execa(install.python, ["-c", DRIVER, specFile], { timeout: 300_000 });
  const json = r.stdout.slice(r.stdout.lastIndexOf("@@RESULT@@") + "@@RESULT@@".length);
  const raw = JSON.parse(json) as Record<string, { ok: boolean; last: string }>;
  return new Map(Object.entries(raw).map(([name, v]) => [name, { ...v, outDir: spec[name]!.out }]));
}

type Ours = { readonly kind: "accepted" } | { readonly kind: "rejected"; readonly diagnostics: readonly string[] };

function ours(text: string): Ours {
  try {
    parseBackendYaml(text, "backend.yaml", catalog);
    return { kind: "accepted" };
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
    const errors = e.diagnostics.filter((d) => d.severity === "error");
    // Every error must point into the file: no location-less, no traceback.
    for (const d of errors) expect(d.loc, formatDiagnostic(d)).toBeDefined();
    return { kind: "rejected", diagnostics: errors.map(formatDiagnostic) };
  }
}

const accepted: [string, { given: string }][] = [
  ["xla_native_functions.yaml (torch_xla's shape)", { given: fixture("xla_native_functions.yaml") }],
  ["torchgen_minimal.yaml", { given: fixture("torchgen_minimal.yaml") }],
  ["mychip.yaml without our keys", { given: withoutOurKeys(fixture("mychip.yaml")) }],
  ["npu_autograd.yaml without our keys", { given: withoutOurKeys(fixture("npu_autograd.yaml")) }],
  [
    "every torchgen key at once",
    {
      given: y(
        ...HEAD,
        "class_name: MychipKernels",
        "supported: [add.Tensor, view]",
        "autograd: [max_pool2d]",
        "symint: [view]",
        "full_codegen: [abs]",
        "non_native:",
        "  - func: scalar(Scalar value, ScalarType type) -> Tensor",
        "    properties: [ShapeCompute]",
        "ir_gen: [bernoulli.p]",
        "use_out_as_primary: false",
        "device_guard: true",
      ),
    },
  ],
  [
    "PyYAML spellings: yes/Off, empty lists as null",
    { given: y(...HEAD, "device_guard: yes", "use_out_as_primary: Off", "supported:", "symint:") },
  ],
  [
    "quoted, flow-style, dunder and autogen'd names",
    { given: y(...HEAD, "supported: ['add.Tensor', \"relu\", __ilshift__.Scalar, _cudnn_rnn_backward.out]") },
  ],
];

/** torchgen rejects these with its own check (an AssertionError); so do we, with locations. */
const bothReject: [string, { given: string; torchgen: RegExp; want: RegExp }][] = [
  [
    "op without its overload",
    {
      given: y(...HEAD, "supported: [add]"),
      torchgen: /invalid operator name: add/,
      want: /^backend\.yaml:3:13: supported entry "add" is not an operator/,
    },
  ],
  [
    "unknown op",
    {
      given: y(...HEAD, "supported: [ad.Tensor]"),
      torchgen: /invalid operator name: ad\.Tensor/,
      want: /^backend\.yaml:3:13: .*did you mean "add\.Tensor"/,
    },
  ],
  [
    "unknown key",
    {
      given: y(...HEAD, "suported: [add.Tensor]"),
      torchgen: /unexpected keys: suported/,
      want: /^backend\.yaml:3:1: unknown key "suported"; did you mean "supported"\?/,
    },
  ],
  [
    "op group split between supported and autograd",
    {
      given: y(...HEAD, "supported: [add.Tensor]", "autograd: [add.out]"),
      torchgen: /all variants of an op must either be registered/,
      want: /^backend\.yaml:4:12: add\.out is listed under autograd but add\.Tensor/,
    },
  ],
  [
    "non-boolean flag",
    {
      given: y(...HEAD, "device_guard: 'true'", "supported: [add.Tensor]"),
      torchgen: /True or False for device_guard/,
      want: /^backend\.yaml:3:15: device_guard is the string "true"; it must be true or false$/,
    },
  ],
  [
    "duplicate key",
    {
      given: y(...HEAD, "backend: XLA", "supported: [add.Tensor]"),
      torchgen: /duplicate key in the yaml\. key=backend, line=0/,
      want: /^backend\.yaml:3:1: duplicate key "backend" \(first at line 1\)/,
    },
  ],
  [
    "missing cpp_namespace",
    {
      given: y("backend: PrivateUse1", "supported: [add.Tensor]"),
      torchgen: /You must provide a value for "cpp_namespace"/,
      want: /^backend\.yaml:1:1: `cpp_namespace` is missing or empty/,
    },
  ],
  [
    "in-tree backend CPU",
    {
      given: y("backend: CPU", "cpp_namespace: at::mychip", "supported: [add.Tensor]"),
      torchgen: /Duplicate backend key: CPU/,
      want: /^backend\.yaml:1:10: backend "CPU" is a dispatch key PyTorch implements itself/,
    },
  ],
  [
    "symint entry without SymInt",
    {
      given: y(...HEAD, "supported: [add.Tensor]", "symint: [add.Tensor]"),
      torchgen: /symint kernel for PrivateUse1 without SymInt in schema/,
      want: /^backend\.yaml:4:10: symint entry add\.Tensor has no SymInt argument/,
    },
  ],
  [
    "top level is a list",
    {
      given: y("- add.Tensor"),
      torchgen: /Expected yaml_values to be a dict/,
      want: /^backend\.yaml:1:1: the top level is a list/,
    },
  ],
];

/** torchgen crashes (a Python exception that is no check of its own) or emits injected C++; we reject cleanly. */
const torchgenMishandles: [string, { given: string; torchgen: RegExp; injected?: string; want: RegExp }][] = [
  [
    "op given as a number",
    {
      given: y(...HEAD, "supported:", "  - 42"),
      torchgen: /^TypeError: argument of type 'int' is not iterable/,
      want: /^backend\.yaml:4:5: supported entry is the number 42; entries are operator names as strings/,
    },
  ],
  [
    "op given as a boolean",
    {
      given: y(...HEAD, "supported: [add.Tensor, true]"),
      torchgen: /^TypeError: argument of type 'bool' is not iterable/,
      want: /^backend\.yaml:3:25: supported entry is the boolean true/,
    },
  ],
  [
    "op given as a mapping",
    {
      given: y(...HEAD, "supported:", "  - func: add.Tensor"),
      torchgen: /^AttributeError: 'dict' object has no attribute/,
      want: /^backend\.yaml:4:5: supported entry is a mapping/,
    },
  ],
  [
    "empty file",
    {
      given: "",
      torchgen: /Expected yaml_values to be a dict, got <class 'NoneType'>/,
      want: /^backend\.yaml:1:1: the backend YAML is empty/,
    },
  ],
  [
    "C++ injection through cpp_namespace",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: 'at { void evil(); } namespace x'", "supported: [add.Tensor]"),
      torchgen: /./,
      injected: "namespace at { void evil(); } namespace x {",
      want: /^backend\.yaml:2:16: cpp_namespace "at \{ void evil\(\); \} namespace x" is not a C\+\+ identifier/,
    },
  ],
  [
    "C++ injection through class_name",
    {
      given: y(...HEAD, "class_name: 'Foo { }; int pwned = 1; struct Bar'", "supported: [add.Tensor]"),
      torchgen: /./,
      injected: "struct Foo { }; int pwned = 1; struct Bar {",
      want: /^backend\.yaml:3:13: class_name "Foo \{ \}; int pwned = 1; struct Bar" is not a C\+\+ identifier/,
    },
  ],
];

const OUR_KEYS_YAML = y(
  ...HEAD,
  "supported: [add.Tensor]",
  ...OUR_KEYS.map((k) => `${k}: ${k === "fallback" ? "cpu" : "mychip"}`),
);

/** Every case's torchgen result, from one batch run (see DRIVER). */
let tg: Map<string, TorchgenResult>;
beforeAll(async () => {
  const all = new Map<string, string>([
    ...accepted.map(([n, c]): [string, string] => [`accept: ${n}`, c.given]),
    ...bothReject.map(([n, c]): [string, string] => [`reject: ${n}`, c.given]),
    ...torchgenMishandles.map(([n, c]): [string, string] => [`mishandle: ${n}`, c.given]),
    ["our keys", OUR_KEYS_YAML],
  ]);
  tg = await torchgenBatch(all);
});

const result = (name: string): TorchgenResult => {
  const r = tg.get(name);
  if (!r) throw new Error(`no torchgen result for ${name}`);
  return r;
};

describe("torchgen accepts, so do we", () => {
  it.each(accepted)("%s", (name, { given }) => {
    const r = result(`accept: ${name}`);
    expect(r.ok, r.last).toBe(true);
    expect(ours(given)).toEqual({ kind: "accepted" });
  });

  it("the batch driver agrees with a real `python -m torchgen.gen_backend_stubs` run", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "opgen-backend-tg-cli-"));
    const text = accepted[0]![1].given;
    const src = path.join(dir, "backend.yaml");
    writeFileSync(src, text);
    await execa(install.python, ["-m", "torchgen.gen_backend_stubs", "-s", src, "-o", dir], { timeout: 300_000 });
    const header = "XLANativeFunctions.h";
    const cli = readFileSync(path.join(dir, header), "utf8");
    expect(cli).toBe(readFileSync(path.join(result(`accept: ${accepted[0]![0]}`).outDir, header), "utf8"));
  });
});

describe("torchgen rejects with a check, so do we (with locations)", () => {
  it.each(bothReject)("%s", (name, { given, torchgen: tgWant, want }) => {
    const r = result(`reject: ${name}`);
    expect(r.ok).toBe(false);
    expect(r.last).toMatch(/^AssertionError: /);
    expect(r.last).toMatch(tgWant);
    const o = ours(given);
    expect(o.kind).toBe("rejected");
    if (o.kind === "rejected")
      expect(
        o.diagnostics.some((d) => want.test(d)),
        o.diagnostics.join("\n"),
      ).toBe(true);
  });
});

describe("torchgen crashes or emits injected C++; we give clean errors", () => {
  it.each(torchgenMishandles)("%s", (name, { given, torchgen: tgWant, injected, want }) => {
    const r = result(`mishandle: ${name}`);
    if (injected === undefined) {
      expect(r.ok).toBe(false);
      expect(r.last).toMatch(tgWant);
    } else {
      // torchgen writes the text straight into the header it generates.
      expect(r.ok, r.last).toBe(true);
      const header = readFileSync(path.join(r.outDir, "PrivateUse1NativeFunctions.h"), "utf8");
      expect(header).toContain(injected);
    }
    const o = ours(given);
    expect(o.kind).toBe("rejected");
    if (o.kind === "rejected") {
      expect(
        o.diagnostics.some((d) => want.test(d)),
        o.diagnostics.join("\n"),
      ).toBe(true);
      expect(o.diagnostics.join("\n")).not.toMatch(/Traceback|Error:/);
    }
  });
});

describe("our hard-coded lists match the installed torch", () => {
  it("torchgen pops exactly TORCHGEN_KEYS and rejects exactly our keys", () => {
    expect(result("our keys").last).toContain(`contains unexpected keys: ${OUR_KEYS.join(", ")}.`);
    // Its error message lists a slightly different set than it reads
    // (extra_headers listed but never popped; device_guard popped but not
    // listed), so read the source.
    const src = readFileSync(
      path.join(path.dirname(path.dirname(install.nativeFunctionsYaml)), "../../gen_backend_stubs.py"),
      "utf8",
    );
    const popped = [...src.matchAll(/yaml_values\.pop\("(\w+)"/g)].map((m) => m[1]).sort();
    expect(popped).toEqual([...TORCHGEN_KEYS].sort());
  });

  it("DispatchKey names, backend keys and known device names", async () => {
    const probe = `
import json, torch, warnings
from torchgen.model import DispatchKey
warnings.simplefilter("ignore")
def parses(n):
    try:
        torch.device(n); return True
    except Exception:
        return False
print(json.dumps({"keys": list(DispatchKey.__members__.keys()), "devices": {n: parses(n) for n in ${JSON.stringify([...KNOWN_DEVICES, "mychip"])}}}))
`;
    const r = await execa(install.python, ["-c", probe], { timeout: 120_000 });
    const got = JSON.parse(r.stdout) as { keys: string[]; devices: Record<string, boolean> };
    expect([...TORCHGEN_DISPATCH_KEYS].sort()).toEqual([...got.keys].sort());
    for (const k of BACKEND_KEYS) expect(got.keys).toContain(k);
    for (const k of BACKEND_KEYS) expect(got.keys).toContain(`Autograd${k}`);
    // c10 names "metal" but torch.device refuses it; every other name parses.
    const refused = Object.entries(got.devices)
      .filter(([, ok]) => !ok)
      .map(([n]) => n)
      .sort();
    expect(refused).toEqual(["metal", "mychip"]);
  });
});
