/**
 * Backend YAML loading against the installed torch's real operator catalog:
 * each invalid input gives exactly these diagnostics (every one with
 * file:line:col, all of them in one run); each valid input gives this config.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { loadBackendYaml, parseBackendYaml } from "../../src/backend/load.js";
import { editDistance, suggest } from "../../src/backend/suggest.js";
import type { BackendConfig } from "../../src/backend/types.js";
import { emitHeader } from "../../src/dest/header.js";
import { buildPlan } from "../../src/dest/plan.js";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch } from "../../src/torch/discover.js";
import { formatDiagnostic, UserError } from "../../src/util/errors.js";
import { fastParse } from "../../src/yaml/backend.js";

let catalog: OperatorCatalog;
beforeAll(async () => {
  catalog = await loadCatalog(await discoverTorch(process.env.OPGEN_PYTHON));
});

const y = (...lines: string[]): string => `${lines.join("\n")}\n`;
const HEAD = ["backend: PrivateUse1", "cpp_namespace: at::mychip", "device: mychip"];
const FIXTURES = "test/fixtures/backend";

/** The diagnostics a UserError carries, formatted as the CLI prints them. */
function diagnosticsOf(f: () => unknown): string[] {
  try {
    f();
  } catch (e) {
    if (e instanceof UserError) return e.diagnostics.map(formatDiagnostic);
    throw e;
  }
  throw new Error("expected a UserError, but the YAML was accepted");
}

/** A config reduced to what a reader compares: names instead of NativeFunction objects. */
function summary(c: BackendConfig) {
  return {
    backend: c.backend,
    cppNamespace: c.cppNamespace,
    kernelHome: c.kernelHome,
    device: c.device,
    pythonPackage: c.pythonPackage,
    fallback: c.fallback,
    dtypes: c.dtypes,
    useOutAsPrimary: c.useOutAsPrimary,
    deviceGuard: c.deviceGuard,
    supported: c.supported.map((e) => e.name),
    autograd: c.autograd.map((e) => e.name),
    symint: c.symint.map((e) => e.name),
    fullCodegen: c.fullCodegen.map((e) => e.name),
    irGen: c.irGen.map((e) => e.name),
    nonNative: c.nonNative.map((e) => ({ func: e.func, properties: e.properties, opkind: e.opkind })),
    warnings: c.warnings.map(formatDiagnostic),
  };
}
type Summary = ReturnType<typeof summary>;

const DEFAULTS = {
  cppNamespace: "at::mychip",
  backend: "PrivateUse1",
  kernelHome: { kind: "class", className: "PrivateUse1NativeFunctions" },
  device: "mychip",
  pythonPackage: "torch_mychip",
  fallback: "cpu",
  dtypes: null,
  useOutAsPrimary: false,
  deviceGuard: false,
  supported: [],
  autograd: [],
  symint: [],
  fullCodegen: [],
  irGen: [],
  nonNative: [],
  warnings: [],
} satisfies Summary;

const invalid: [string, { given: string; want: string[] }][] = [
  [
    "empty file",
    {
      given: "",
      want: [
        "backend.yaml:1:1: the backend YAML is empty; it must be a mapping with at least `backend:` and `cpp_namespace:`",
      ],
    },
  ],
  [
    "only comments",
    {
      given: y("# a backend yaml", "# with nothing in it"),
      want: [
        "backend.yaml:1:1: the backend YAML is empty; it must be a mapping with at least `backend:` and `cpp_namespace:`",
      ],
    },
  ],
  [
    "top level is a list",
    {
      given: y("- add.Tensor", "- mul.Tensor"),
      want: [
        "backend.yaml:1:1: the top level is a list; it must be a mapping of keys (backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom)",
      ],
    },
  ],
  [
    "top level is a scalar",
    {
      given: y("PrivateUse1"),
      want: [
        'backend.yaml:1:1: the top level is the string "PrivateUse1"; it must be a mapping of keys (backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom)',
      ],
    },
  ],
  [
    "YAML syntax error (unclosed flow list)",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "supported: [add.Tensor", "device: mychip"),
      want: [
        "backend.yaml:4:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]; fix the syntax (see https://yaml.org/spec/1.1/)",
      ],
    },
  ],
  [
    "YAML syntax error (tab indentation)",
    {
      given: y("backend: PrivateUse1", "supported:", "\t- add.Tensor"),
      want: [
        "backend.yaml:3:1: invalid YAML: Tabs are not allowed as indentation; fix the syntax (see https://yaml.org/spec/1.1/)",
      ],
    },
  ],
  [
    "two YAML documents",
    {
      given: y("backend: PrivateUse1", "---", "cpp_namespace: at::mychip"),
      want: [
        "backend.yaml:2:1: invalid YAML: Source contains multiple documents; please use YAML.parseAllDocuments(); fix the syntax (see https://yaml.org/spec/1.1/)",
      ],
    },
  ],
  [
    "missing backend and cpp_namespace",
    {
      given: y("supported:", "  - add.Tensor"),
      want: [
        "backend.yaml:1:1: `backend` is missing or empty; give the dispatch key to register on: one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA",
        "backend.yaml:1:1: `cpp_namespace` is missing or empty; give the C++ namespace of your kernels, e.g. `cpp_namespace: at::mychip`",
      ],
    },
  ],
  [
    "empty backend and null cpp_namespace",
    {
      given: y("backend: ''", "cpp_namespace:", "device: mychip"),
      want: [
        "backend.yaml:1:1: `backend` is missing or empty; give the dispatch key to register on: one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA",
        "backend.yaml:2:1: `cpp_namespace` is missing or empty; give the C++ namespace of your kernels, e.g. `cpp_namespace: at::mychip`",
      ],
    },
  ],
  [
    "in-tree key CPU",
    {
      given: y("backend: CPU", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "CPU" is a dispatch key PyTorch implements itself; an out-of-tree backend uses one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "in-tree key CUDA",
    {
      given: y("backend: CUDA", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "CUDA" is a dispatch key PyTorch implements itself; an out-of-tree backend uses one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "in-tree key Meta",
    {
      given: y("backend: Meta", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "Meta" is a dispatch key PyTorch implements itself; an out-of-tree backend uses one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "CompositeExplicitAutograd is not a backend",
    {
      given: y("backend: CompositeExplicitAutograd", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "CompositeExplicitAutograd" is not a backend dispatch key; use one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "CompositeImplicitAutograd is not a backend",
    {
      given: y("backend: CompositeImplicitAutograd", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "CompositeImplicitAutograd" is not a backend dispatch key; use one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "AutogradPrivateUse1 is not a backend",
    {
      given: y("backend: AutogradPrivateUse1", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "AutogradPrivateUse1" is not a backend dispatch key; use one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "PrivateUse2 has no device type",
    {
      given: y("backend: PrivateUse2", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: backend "PrivateUse2" has no device type in torch, so no tensor can reach it; use one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "unknown dispatch key with suggestion",
    {
      given: y("backend: PrivateUse", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: unknown dispatch key "PrivateUse"; did you mean "PrivateUse1"? backend must be one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "dispatch key in wrong case",
    {
      given: y("backend: privateuse1", "cpp_namespace: at::mychip"),
      want: [
        'backend.yaml:1:10: unknown dispatch key "privateuse1"; did you mean "PrivateUse1"? backend must be one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA',
      ],
    },
  ],
  [
    "backend is a number",
    {
      given: y("backend: 1", "cpp_namespace: at::mychip"),
      want: ["backend.yaml:1:10: backend is the number 1; it must be a string"],
    },
  ],
  [
    "supported is a string, autograd a mapping, symint a number",
    {
      given: y(...HEAD, "supported: add.Tensor", "autograd: {add.Tensor: 1}", "symint: 3"),
      want: [
        'backend.yaml:4:12: supported is the string "add.Tensor"; it must be a list of operator names like add.Tensor',
        "backend.yaml:5:11: autograd is a mapping; it must be a list of operator names like add.Tensor",
        "backend.yaml:6:9: symint is the number 3; it must be a list of operator names like add.Tensor",
      ],
    },
  ],
  [
    "full_codegen and ir_gen are not lists",
    {
      given: y("backend: XLA", "cpp_namespace: torch_xla", "full_codegen: abs", "ir_gen: true"),
      want: [
        'backend.yaml:3:15: full_codegen is the string "abs"; it must be a list of operator names like add.Tensor',
        "backend.yaml:4:9: ir_gen is the boolean true; it must be a list of operator names like add.Tensor",
      ],
    },
  ],
  [
    "unknown operators with suggestions",
    {
      given: y(...HEAD, "supported:", "  - ad.Tensor", "  - convolution_backward_overrideablee", "  - add.Tensr"),
      want: [
        'backend.yaml:5:5: supported entry "ad.Tensor" is not an operator of torch {torch}; did you mean "add.Tensor", "add_.Tensor" or "eq.Tensor"? (operators are written name.overload as in native_functions.yaml)',
        'backend.yaml:6:5: supported entry "convolution_backward_overrideablee" is not an operator of torch {torch}; did you mean "convolution_backward_overrideable", "convolution_backward_overrideable.out" or "convolution_overrideable"? (operators are written name.overload as in native_functions.yaml)',
        'backend.yaml:7:5: supported entry "add.Tensr" is not an operator of torch {torch}; did you mean "add.Tensor"?',
      ],
    },
  ],
  [
    "op named without its overload",
    {
      given: y(...HEAD, "supported:", "  - add", "  - max"),
      want: [
        'backend.yaml:5:5: supported entry "add" is not an operator: it has only named overloads; list each you implement: add.Scalar, add.Scalar_out, add.Tensor, add.out',
      ],
    },
  ],
  [
    "aten:: prefix and .default",
    {
      given: y(...HEAD, "supported:", "  - aten::relu", "  - relu.default"),
      want: [
        'backend.yaml:5:5: supported entry "aten::relu" has a namespace prefix; write "relu" (no aten::)',
        'backend.yaml:6:5: supported entry "relu.default" is not an operator; the overload Python calls .default is written "relu"',
      ],
    },
  ],
  [
    "entries that are not strings",
    {
      given: y(
        ...HEAD,
        "supported:",
        "  - 42",
        "  - 1.5",
        "  - true",
        "  - func: add.Tensor",
        "  - [add.Tensor]",
        "  -",
        "  - add.Tensor",
      ),
      want: [
        "backend.yaml:5:5: supported entry is the number 42; entries are operator names as strings, like add.Tensor",
        "backend.yaml:6:5: supported entry is the number 1.5; entries are operator names as strings, like add.Tensor",
        "backend.yaml:7:5: supported entry is the boolean true; entries are operator names as strings, like add.Tensor",
        "backend.yaml:8:5: supported entry is a mapping (a `key: value` line where an op name was expected?); entries are operator names as strings, like add.Tensor",
        "backend.yaml:9:5: supported entry is a list; entries are operator names as strings, like add.Tensor",
        "backend.yaml:10:4: supported entry is empty (null); entries are operator names as strings, like add.Tensor",
      ],
    },
  ],
  [
    "unknown keys with suggestions",
    {
      given: y(...HEAD, "suported:", "  - add.Tensor", "cpp_namspace: x", "extra_headers: [foo.h]", "zzz: 1"),
      want: [
        'backend.yaml:4:1: unknown key "suported"; did you mean "supported"? allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        'backend.yaml:6:1: unknown key "cpp_namspace"; did you mean "cpp_namespace"? allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        'backend.yaml:7:1: unknown key "extra_headers"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        'backend.yaml:8:1: unknown key "zzz"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
      ],
    },
  ],
  [
    "non-boolean flags",
    {
      given: y(...HEAD, "device_guard: 'true'", "use_out_as_primary: 1"),
      want: [
        'backend.yaml:4:15: device_guard is the string "true"; it must be true or false',
        "backend.yaml:5:21: use_out_as_primary is the number 1; it must be true or false",
      ],
    },
  ],
  [
    "flag spelt y (a string to PyYAML)",
    {
      given: y(...HEAD, "device_guard: y", "use_out_as_primary: ~"),
      want: [
        'backend.yaml:4:15: device_guard is the string "y"; it must be true or false',
        "backend.yaml:5:21: use_out_as_primary is empty (null); it must be true or false",
      ],
    },
  ],
  [
    "op group split between supported and autograd",
    {
      given: y(
        ...HEAD,
        "supported:",
        "  - add.Tensor",
        "  - mul.out",
        "autograd:",
        "  - add.out",
        "  - add_.Tensor",
        "  - mul.Tensor",
      ),
      want: [
        "backend.yaml:8:5: add.out is listed under autograd but add.Tensor, in the same op group, under supported (line 5); all variants of an op (add.Tensor, add_.Tensor, add.out) must be in supported or all in autograd",
        "backend.yaml:10:5: mul.Tensor is listed under autograd but mul.out, in the same op group, under supported (line 6); all variants of an op (mul.Tensor, mul_.Tensor, mul.out) must be in supported or all in autograd",
      ],
    },
  ],
  [
    "ungrouped op in supported and autograd",
    {
      given: y(...HEAD, "supported:", "  - max_pool2d", "autograd:", "  - max_pool2d"),
      want: [
        "backend.yaml:7:5: max_pool2d is listed under autograd but max_pool2d is also listed under supported (line 5); all variants of an op (max_pool2d) must be in supported or all in autograd",
      ],
    },
  ],
  [
    "full_codegen counts as supported for the split rule",
    {
      given: y("backend: XLA", "cpp_namespace: torch_xla", "full_codegen:", "  - abs", "autograd:", "  - abs.out"),
      want: [
        "backend.yaml:6:5: abs.out is listed under autograd but abs, in the same op group, under supported (line 4); all variants of an op (abs, abs_, abs.out) must be in supported or all in autograd",
      ],
    },
  ],
  [
    "symint entries without SymInt",
    {
      given: y(
        ...HEAD,
        "supported:",
        "  - add.Tensor",
        "  - view",
        "symint:",
        "  - add.Tensor",
        "  - view",
        "  - relu",
      ),
      want: [
        "backend.yaml:8:5: symint entry add.Tensor has no SymInt argument, so it has no SymInt kernel; list only ops whose schema takes SymInt",
        "backend.yaml:10:5: symint entry relu has no SymInt argument, so it has no SymInt kernel; list only ops whose schema takes SymInt",
      ],
    },
  ],
  [
    "duplicate keys",
    {
      given: y(...HEAD, "supported: [add.Tensor]", "backend: XLA", "supported: [mul.Tensor]"),
      want: [
        'backend.yaml:5:1: duplicate key "backend" (first at line 1); each key may appear once',
        'backend.yaml:6:1: duplicate key "supported" (first at line 4); each key may appear once',
      ],
    },
  ],
  [
    "anchors and aliases",
    {
      given: y(...HEAD, "supported: &ops", "  - add.Tensor", "autograd: *ops", "symint: *ops"),
      want: [
        "backend.yaml:5:3: YAML anchor &ops (used by 2 aliases, lines 6, 7) is not allowed; write values out in full, without & and *",
      ],
    },
  ],
  [
    "alias bomb (billion laughs)",
    {
      given: y(
        ...HEAD,
        'x: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        "x1: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
        "x2: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
        "x3: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
        "supported: *d",
      ),
      want: [
        'backend.yaml:4:1: unknown key "x"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        "backend.yaml:4:7: YAML anchor &a (used by 9 aliases, line 5) is not allowed; write values out in full, without & and *",
        'backend.yaml:5:1: unknown key "x1"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        "backend.yaml:5:8: YAML anchor &b (used by 9 aliases, line 6) is not allowed; write values out in full, without & and *",
        'backend.yaml:6:1: unknown key "x2"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        "backend.yaml:6:8: YAML anchor &c (used by 9 aliases, line 7) is not allowed; write values out in full, without & and *",
        'backend.yaml:7:1: unknown key "x3"; allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom',
        "backend.yaml:7:8: YAML anchor &d (used by 1 alias, line 8) is not allowed; write values out in full, without & and *",
      ],
    },
  ],
  [
    "deeply nested flow collections",
    {
      given: y(...HEAD, `supported: ${"[".repeat(10000)}${"]".repeat(10000)}`),
      want: [
        "backend.yaml:4:44: [ and { nest deeper than 32 levels; a backend YAML needs at most two (lists of names)",
      ],
    },
  ],
  [
    "cpp_namespace and class_name C++ injection",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: 'at { void evil(); } namespace x'",
        'class_name: "Foo { }; int x = system(\\"id\\"); struct Y"',
        "device: mychip",
        "supported: [add.Tensor]",
      ),
      want: [
        'backend.yaml:2:16: cpp_namespace "at { void evil(); } namespace x" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be a C++ namespace path like at::mychip',
        'backend.yaml:3:13: class_name "Foo { }; int x = system(\\"id\\"); struct Y" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be one C++ identifier like MychipNativeFunctions (no ::)',
      ],
    },
  ],
  [
    "cpp_namespace with leading :: and class_name with ::",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: ::at::mychip",
        "class_name: at::MychipNativeFunctions",
        "device: mychip",
      ),
      want: [
        'backend.yaml:2:16: cpp_namespace "::at::mychip" has an empty part (write a::b, without leading, trailing or doubled ::); it must be a C++ namespace path like at::mychip',
        'backend.yaml:3:13: class_name "at::MychipNativeFunctions" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be one C++ identifier like MychipNativeFunctions (no ::)',
      ],
    },
  ],
  [
    "C++ keywords and reserved names",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::class", "class_name: __Foo", "device: mychip"),
      want: [
        'backend.yaml:2:16: cpp_namespace part "class" is a C++ keyword; it must be a C++ namespace path like at::mychip',
        'backend.yaml:3:13: class_name "__Foo" is reserved in C++ (contains "__" or starts with _ and a capital); it must be one C++ identifier like MychipNativeFunctions (no ::)',
      ],
    },
  ],
  [
    "namespace std and identifiers starting with a digit",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: std::mychip", "class_name: 1Foo", "device: mychip"),
      want: [
        'backend.yaml:2:16: cpp_namespace "std::mychip" is inside namespace std, which programs may not add to; it must be a C++ namespace path like at::mychip',
        'backend.yaml:3:13: class_name "1Foo" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be one C++ identifier like MychipNativeFunctions (no ::)',
      ],
    },
  ],
  [
    "free_functions is not a boolean",
    {
      given: y(...HEAD, "free_functions: maybe", "supported: [abs]"),
      want: ['backend.yaml:4:17: free_functions is the string "maybe"; it must be true or false'],
    },
  ],
  [
    "free_functions is a list",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "free_functions: [true]", "device: mychip"),
      want: ["backend.yaml:3:17: free_functions is a list; it must be true or false"],
    },
  ],
  [
    "free_functions: y is PyYAML's string, not a boolean",
    {
      given: y(...HEAD, "free_functions: y"),
      want: ['backend.yaml:4:17: free_functions is the string "y"; it must be true or false'],
    },
  ],
  [
    "class_name together with free_functions: true",
    {
      given: y(...HEAD, "class_name: MychipNativeFunctions", "free_functions: true", "supported: [abs]"),
      want: [
        "backend.yaml:4:1: class_name cannot be given with free_functions: true (line 5): free-function kernels are <cpp_namespace>::<name>, members of no struct; remove class_name, or remove free_functions to keep kernels as static members of class_name",
      ],
    },
  ],
  [
    "class_name given empty, or invalid, with free_functions: true: every problem",
    {
      given: y(
        "backend: PrivateUse1",
        "free_functions: on",
        "cpp_namespace: at::mychip",
        "class_name: 'My Functions'",
        "device: mychip",
      ),
      want: [
        "backend.yaml:4:1: class_name cannot be given with free_functions: true (line 2): free-function kernels are <cpp_namespace>::<name>, members of no struct; remove class_name, or remove free_functions to keep kernels as static members of class_name",
        'backend.yaml:4:13: class_name "My Functions" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be one C++ identifier like MychipNativeFunctions (no ::)',
      ],
    },
  ],
  [
    "free functions in a namespace where torch has a function per operator",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::native", "free_functions: true", "device: mychip"),
      want: [
        'backend.yaml:2:16: cpp_namespace "at::native" is where torch declares its own function for each operator (at::native::add, ...), which free-function kernels of the same names would collide with; with free_functions: true use a namespace of your own like at::mychip',
      ],
    },
  ],
  [
    "cpp_namespace with a newline",
    {
      given: y("backend: PrivateUse1", 'cpp_namespace: "at\\n#include <evil>"', "device: mychip"),
      want: [
        'backend.yaml:2:16: cpp_namespace "at\\n#include <evil>" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be a C++ namespace path like at::mychip',
      ],
    },
  ],
  [
    "device torch already knows, bad package, bad fallback",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: at::mychip",
        "device: cuda",
        "python_package: torch-mychip",
        "fallback: gpu",
      ),
      want: [
        'backend.yaml:3:9: device "cuda" is a device torch already has; choose a new lower-case name like mychip',
        'backend.yaml:4:17: python_package "torch-mychip" is not a Python identifier (letters, digits and _); it must be an importable name like torch_mychip',
        'backend.yaml:5:11: fallback "gpu" is not a fallback policy; use cpu or none',
      ],
    },
  ],
  [
    "dtypes: aliases, torch. prefix, unknown names, non-strings",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: at::mychip",
        "device: mychip",
        "dtypes:",
        "- half",
        "- torch.float32",
        "- flaot32",
        "- float8_e4m3fn",
        "- 32",
        "- float64",
      ),
      want: [
        'backend.yaml:5:3: dtypes entry "half" is not a dtype we can test; torch.half is written float16 here (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)',
        'backend.yaml:6:3: dtypes entry "torch.float32": write float32, without torch.',
        'backend.yaml:7:3: dtypes entry "flaot32" is not a dtype we can test; did you mean "float32"? (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)',
        'backend.yaml:8:3: dtypes entry "float8_e4m3fn" is not a dtype we can test; the conformance runner has samples only for these (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)',
        "backend.yaml:9:3: dtypes entry is the number 32; entries are dtype names like float32 (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)",
      ],
    },
  ],
  [
    "dtypes that is not a list, and an empty one",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "device: mychip", "dtypes: float32"),
      want: [
        'backend.yaml:4:9: dtypes is the string "float32"; it must be a list of dtype names (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)',
      ],
    },
  ],
  [
    "partial_dtypes: a dtype of dtypes:, an op not listed, a key not allowed, a group without ops",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: at::mychip",
        "device: mychip",
        "dtypes: [float32]",
        "supported: [abs]",
        "partial_dtypes:",
        "- {dtypes: [complex64, float32], ops: [abs, ab]}",
        "- {dtypes: [complex128], opz: [abs]}",
      ),
      want: [
        "backend.yaml:7:12: partial_dtypes: float32 is in dtypes: already, which every operator claims; list it in one of the two",
        'backend.yaml:7:45: partial_dtypes ops entry "ab" is not an operator this YAML lists; did you mean "abs"?',
        "backend.yaml:8:3: partial_dtypes entry needs both dtypes: and ops:",
        'backend.yaml:8:26: partial_dtypes entry has key "opz"; allowed: dtypes, ops',
      ],
    },
  ],
  [
    "an empty dtypes list",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "device: mychip", "dtypes: []"),
      want: [
        "backend.yaml:4:9: dtypes is empty; list the dtypes your device supports, or leave the key out (allowed: float32, float64, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, bool)",
      ],
    },
  ],
  [
    "device name torch cannot parse",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "device: My2Chip"),
      want: [
        'backend.yaml:3:9: device "My2Chip" cannot be a torch device name (torch parses only lower-case letters and _, starting with a letter); choose a new lower-case name like mychip',
      ],
    },
  ],
  [
    "device that is a Python keyword",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mychip", "device: lambda"),
      want: [
        'backend.yaml:3:9: device "lambda" is a Python keyword, so torch.lambda could not be written; choose a new lower-case name like mychip',
      ],
    },
  ],
  [
    "device renamed on a backend other than PrivateUse1",
    {
      given: y("backend: XLA", "cpp_namespace: torch_xla", "device: tpu"),
      want: [
        'backend.yaml:3:9: device "tpu" cannot be set for backend XLA: torch renames only PrivateUse1; remove it or write device: xla',
      ],
    },
  ],
  [
    "unresolvable YAML tags",
    {
      given: y(
        "backend: !!python/object/apply:os.system PrivateUse1",
        "cpp_namespace: !mytag at::mychip",
        "device: mychip",
      ),
      want: [
        "backend.yaml:1:10: unsupported YAML: Unresolved tag: tag:yaml.org,2002:python/object/apply:os.system; use plain scalars, lists and mappings without tags",
        "backend.yaml:2:16: unsupported YAML: Unresolved tag: !mytag; use plain scalars, lists and mappings without tags",
      ],
    },
  ],
  [
    "non_native entries",
    {
      given: y(
        "backend: XLA",
        "cpp_namespace: torch_xla",
        "non_native:",
        "  - func: 'scalar(Scalar value'",
        "  - properties: [Lowr]",
        "  - func: scalar(Scalar value, ScalarType type) -> Tensor",
        "    opkind: 'x; y'",
        "    shape: 1",
        "  - 3",
      ),
      want: [
        "backend.yaml:4:11: non_native func is not a valid schema: expected ', ' or ')' after an argument, found end of schema (column 20); write it as in native_functions.yaml",
        "backend.yaml:5:5: non_native entry has no func:; give the operator schema",
        'backend.yaml:5:18: non_native property is the string "Lowr"; did you mean "Lower"? allowed: ShapePrecompute, ShapeCompute, ShapeCache, Lower, LowerDeclOnly, CanBeReused, CanBeReusedDeclOnly, CreateFn, CreateFnDeclOnly, TreatScalarsAsConstants',
        'backend.yaml:7:13: non_native opkind "x; y" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be a C++ name like ltc_cast',
        'backend.yaml:8:5: unknown non_native key "shape"; allowed: func, properties, opkind',
        "backend.yaml:9:5: non_native entry is the number 3; it must be a mapping with func: (a schema) and properties:",
      ],
    },
  ],
];

describe("invalid backend YAML", () => {
  it.each(invalid)("%s", (_name, { given, want }) => {
    // {torch} stands for the installed version, which messages about op names cite.
    const expected = want.map((w) => w.replaceAll("{torch}", catalog.torchVersion));
    expect(diagnosticsOf(() => parseBackendYaml(given, "backend.yaml", catalog))).toEqual(expected);
  });
});

const valid: [string, { given: string; want: Partial<Summary> }][] = [
  [
    "torchgen's minimal YAML: every default",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at::mini", "supported:", "  - add.Tensor"),
      want: {
        cppNamespace: "at::mini",
        device: "privateuseone",
        pythonPackage: "torch_privateuseone",
        supported: ["add.Tensor"],
        warnings: [
          "backend.yaml:1:1: warning: no `device:` given, so the device keeps torch's name `privateuseone`; set `device: <name>` to rename it",
        ],
      },
    },
  ],
  [
    "empty lists as null, PyYAML booleans",
    {
      given: y(...HEAD, "supported:", "autograd: ~", "symint: []", "device_guard: yes", "use_out_as_primary: Off"),
      want: { deviceGuard: true, useOutAsPrimary: false },
    },
  ],
  [
    "free_functions: true",
    {
      given: y(...HEAD, "free_functions: true", "supported: [abs]"),
      want: { kernelHome: { kind: "free" }, supported: ["abs"] },
    },
  ],
  [
    "free_functions: false (PyYAML's no) keeps class_name",
    {
      given: y(...HEAD, "class_name: MychipKernels", "free_functions: no"),
      want: { kernelHome: { kind: "class", className: "MychipKernels" } },
    },
  ],
  [
    "namespaces torch fills with operator functions are fine for a struct",
    {
      given: y("backend: PrivateUse1", "cpp_namespace: at", "free_functions: false", "device: mychip"),
      want: { cppNamespace: "at" },
    },
  ],
  [
    "quoted and flow-style op names, dunder and autogen'd operators",
    {
      given: y(...HEAD, "supported: ['add.Tensor', \"mul.Tensor\", relu, __ilshift__.Scalar, _cudnn_rnn_backward.out]"),
      want: { supported: ["add.Tensor", "mul.Tensor", "relu", "__ilshift__.Scalar", "_cudnn_rnn_backward.out"] },
    },
  ],
  [
    "duplicate op entries are a warning citing both lines",
    {
      given: y(
        ...HEAD,
        "supported:",
        "  - add.Tensor",
        "  - mul.Tensor",
        "  - add.Tensor",
        "symint:",
        "  - view",
        "  - view",
      ),
      want: {
        supported: ["add.Tensor", "mul.Tensor"],
        symint: ["view"],
        warnings: [
          "backend.yaml:7:5: warning: add.Tensor is listed twice in supported (lines 5 and 7); the second entry is ignored",
          "backend.yaml:9:5: warning: symint entry view is not listed in supported, autograd or full_codegen, so it has no effect",
          "backend.yaml:10:5: warning: view is listed twice in symint (lines 9 and 10); the second entry is ignored",
        ],
      },
    },
  ],
  [
    "all of our keys, class_name and a three-part namespace",
    {
      given: y(
        "backend: PrivateUse1",
        "cpp_namespace: vendor::torch_ext::mychip",
        "class_name: MychipKernels",
        "device: my_chip",
        "python_package: mychip_torch",
        "fallback: none",
        "dtypes: [int64, bfloat16, float32, bool, float32]",
        "device_guard: true",
        "use_out_as_primary: true",
        "supported: [add.out]",
      ),
      want: {
        dtypes: ["float32", "bfloat16", "int64", "bool"],
        warnings: [
          "backend.yaml:7:42: warning: float32 is listed twice in dtypes (at 7:27 and 7:42); the second entry is ignored",
        ],
        cppNamespace: "vendor::torch_ext::mychip",
        kernelHome: { kind: "class", className: "MychipKernels" },
        device: "my_chip",
        pythonPackage: "mychip_torch",
        fallback: "none",
        deviceGuard: true,
        useOutAsPrimary: true,
        supported: ["add.out"],
      },
    },
  ],
  [
    "a whole op group under autograd is fine",
    {
      given: y(...HEAD, "supported: [mul.Tensor]", "autograd: [add.Tensor, add_.Tensor, add.out]"),
      want: { supported: ["mul.Tensor"], autograd: ["add.Tensor", "add_.Tensor", "add.out"] },
    },
  ],
  [
    "XLA keeps its device name; writing it out is allowed",
    {
      given: y("backend: XLA", "cpp_namespace: torch_xla", "device: xla", "full_codegen: [abs]", "supported: [abs]"),
      want: {
        backend: "XLA",
        cppNamespace: "torch_xla",
        kernelHome: { kind: "class", className: "XLANativeFunctions" },
        device: "xla",
        pythonPackage: "torch_xla",
        supported: ["abs"],
        fullCodegen: ["abs"],
        warnings: [
          "backend.yaml:4:16: warning: abs is listed in both supported (line 5) and full_codegen (line 4); list it once",
        ],
      },
    },
  ],
  [
    "Lazy backend with non_native and ir_gen",
    {
      given: y(
        "backend: Lazy",
        "cpp_namespace: torch::lazy",
        "ir_gen: [bernoulli.p]",
        "non_native:",
        "  - func: scalar(Scalar value, ScalarType type) -> Tensor",
        "    properties:",
        "      - ShapeCompute",
        "      - TreatScalarsAsConstants",
        "  - func: expand(Tensor input, int[] size, bool is_scalar_expand) -> Tensor",
        "    opkind: at::aten::expand",
      ),
      want: {
        backend: "Lazy",
        cppNamespace: "torch::lazy",
        kernelHome: { kind: "class", className: "LazyNativeFunctions" },
        device: "lazy",
        pythonPackage: "torch_lazy",
        irGen: ["bernoulli.p"],
        nonNative: [
          {
            func: "scalar(Scalar value, ScalarType type) -> Tensor",
            properties: ["ShapeCompute", "TreatScalarsAsConstants"],
            opkind: null,
          },
          {
            func: "expand(Tensor input, int[] size, bool is_scalar_expand) -> Tensor",
            properties: [],
            opkind: "at::aten::expand",
          },
        ],
      },
    },
  ],
];

describe("valid backend YAML", () => {
  it.each(valid)("%s", (_name, { given, want }) => {
    expect(summary(parseBackendYaml(given, "backend.yaml", catalog))).toEqual({ ...DEFAULTS, ...want });
  });
});

describe("fixtures", () => {
  it("mychip.yaml: a new PrivateUse1 vendor", () => {
    const c = loadBackendYaml(`${FIXTURES}/mychip.yaml`, catalog);
    const s = summary(c);
    expect(s).toMatchObject({
      backend: "PrivateUse1",
      cppNamespace: "at::mychip",
      kernelHome: { kind: "class", className: "MychipNativeFunctions" },
      device: "mychip",
      pythonPackage: "torch_mychip",
      fallback: "cpu",
      deviceGuard: true,
      warnings: [],
    });
    expect(s.supported).toHaveLength(31);
    expect(s.supported.slice(0, 3)).toEqual(["empty.memory_format", "empty_strided", "as_strided"]);
    expect(s.symint).toEqual([
      "empty.memory_format",
      "empty_strided",
      "as_strided",
      "view",
      "_reshape_alias",
      "resize_",
      "set_.source_Storage_storage_offset",
    ]);
    // Every entry keeps where it was written, and its resolved operator.
    const add = c.supported.find((e) => e.name === "add.Tensor")!;
    expect(add.loc).toEqual({ file: `${FIXTURES}/mychip.yaml`, line: 26, col: 5 });
    expect(add.fn).toBe(catalog.byName.get("add.Tensor"));
    // What the vendor sees of cpp_namespace and symint: the header's namespace
    // and SymInt kernels for the symint entries only.
    const header = emitHeader(buildPlan(c, catalog), "");
    expect(header).toContain("namespace at::mychip {");
    expect(header).toContain("static at::Tensor view_symint(const at::Tensor & self, c10::SymIntArrayRef size);");
    expect(header).toContain(
      "static at::Tensor add(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha);",
    );
  });

  it("xla_native_functions.yaml: torch_xla's shape loads unchanged", () => {
    const s = summary(loadBackendYaml(`${FIXTURES}/xla_native_functions.yaml`, catalog));
    expect(s).toMatchObject({
      backend: "XLA",
      cppNamespace: "torch_xla",
      kernelHome: { kind: "class", className: "XLANativeFunctions" },
      device: "xla",
      pythonPackage: "torch_xla",
      autograd: ["einsum", "max_pool2d", "max_pool3d"],
      irGen: ["bernoulli", "bernoulli.p"],
      warnings: [],
    });
    expect(s.supported).toHaveLength(116);
    expect(s.fullCodegen).toHaveLength(46);
    expect(s.symint).toHaveLength(7);
  });

  it("npu_autograd.yaml: autograd entries and use_out_as_primary", () => {
    const s = summary(loadBackendYaml(`${FIXTURES}/npu_autograd.yaml`, catalog));
    expect(s).toMatchObject({
      cppNamespace: "npu_native",
      device: "npu",
      pythonPackage: "torch_npu",
      useOutAsPrimary: true,
      deviceGuard: false,
      autograd: ["max_pool2d", "dropout", "native_layer_norm", "native_layer_norm_backward"],
      warnings: [],
    });
  });

  it("invalid_everything.yaml: every problem in one run, warnings included", () => {
    const f = `${FIXTURES}/invalid_everything.yaml`;
    expect(diagnosticsOf(() => loadBackendYaml(f, catalog))).toEqual([
      `${f}:2:10: backend "CUDA" is a dispatch key PyTorch implements itself; an out-of-tree backend uses one of PrivateUse1, XLA, Lazy, HPU, IPU, VE, MTIA`,
      `${f}:3:16: cpp_namespace part "mychip; int pwned" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be a C++ namespace path like at::mychip`,
      `${f}:4:13: class_name "My Functions" is not a C++ identifier (letters, digits and _, not starting with a digit); it must be one C++ identifier like MychipNativeFunctions (no ::)`,
      `${f}:5:9: device "cpu" is a device torch already has; choose a new lower-case name like mychip`,
      `${f}:6:11: fallback "maybe" is not a fallback policy; use cpu or none`,
      `${f}:7:15: device_guard is the string "sometimes"; it must be true or false`,
      `${f}:8:1: unknown key "suported"; did you mean "supported"? allowed keys: backend, class_name, cpp_namespace, supported, autograd, symint, full_codegen, non_native, ir_gen, use_out_as_primary, device_guard, device, python_package, fallback, dtypes, partial_dtypes, free_functions, runtime, custom`,
      `${f}:12:5: supported entry "add" is not an operator: it has only named overloads; list each you implement: add.Scalar, add.Scalar_out, add.Tensor, add.out`,
      `${f}:14:5: supported entry is the number 7; entries are operator names as strings, like add.Tensor`,
      `${f}:15:5: supported entry "sigmoid.Tensor" is not an operator of torch ${catalog.torchVersion}; sigmoid has: sigmoid, sigmoid.out`,
      `${f}:16:5: warning: add.Tensor is listed twice in supported (lines 11 and 16); the second entry is ignored`,
      `${f}:18:5: relu_ is listed under autograd but relu.out, in the same op group, under supported (line 13); all variants of an op (relu, relu_, relu.out) must be in supported or all in autograd`,
      `${f}:20:5: symint entry relu.out has no SymInt argument, so it has no SymInt kernel; list only ops whose schema takes SymInt`,
      `${f}:21:5: warning: symint entry view is not listed in supported, autograd or full_codegen, so it has no effect`,
    ]);
  });

  it("a missing file or a directory is one clear error", () => {
    expect(() => loadBackendYaml(`${FIXTURES}/nope.yaml`, catalog)).toThrow(
      new UserError(
        `${FIXTURES}/nope.yaml: cannot read backend YAML: no such file; pass the path of your backend.yaml`,
      ),
    );
    expect(() => loadBackendYaml(FIXTURES, catalog)).toThrow(/cannot read backend YAML: is a directory/);
  });

  it("a file over the size limit is refused before parsing", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "opgen-backend-"));
    const f = path.join(dir, "huge.yaml");
    writeFileSync(f, `backend: PrivateUse1\n# ${"x".repeat(5 * 1024 * 1024)}\n`);
    expect(diagnosticsOf(() => loadBackendYaml(f, catalog))).toEqual([
      `${f}:1:1: the file has 5242904 characters; a backend YAML may have at most 4194304`,
    ]);
  });
});

describe("every operator of the installed torch", () => {
  it("loads when all are listed, and symint accepts exactly the SymInt ones", () => {
    const names = [...catalog.byName.keys()];
    const symint = names.filter((n) => /\bSymInt\b/.test(catalog.byName.get(n)!.funcText.split("->")[0]!));
    const text = y(...HEAD, "supported:", ...names.map((n) => `  - ${n}`), "symint:", ...symint.map((n) => `  - ${n}`));
    const c = parseBackendYaml(text, "all.yaml", catalog);
    expect(c.supported).toHaveLength(names.length);
    expect(c.symint).toHaveLength(symint.length);
    expect(c.warnings).toEqual([]);
  });
});

describe("suggestions", () => {
  it.each([
    ["kitten", "sitting", 10, 3],
    ["add", "add", 2, 0],
    ["abc", "abcdefgh", 2, 3],
  ])("editDistance(%s, %s, limit %i) = %i", (a, b, limit, want) => {
    expect(editDistance(a, b, limit)).toBe(want);
  });

  it("prefers exact-case matches and drops far candidates", () => {
    expect(suggest("privateuse1", ["PrivateUse1", "XLA", "Lazy"])).toEqual(["PrivateUse1"]);
    expect(suggest("zzzzzz", ["PrivateUse1", "XLA"])).toEqual([]);
  });
});

describe("the fast reader and the yaml package agree", () => {
  /** Diagnostics or config summary, whichever a reader produced. */
  const outcome = (text: string, fastPath: boolean): unknown => {
    try {
      return summary(parseBackendYaml(text, "backend.yaml", catalog, { fastPath }));
    } catch (e) {
      if (e instanceof UserError) return e.diagnostics.map(formatDiagnostic);
      throw e;
    }
  };
  const fixtures = readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".yaml"))
    .map((f): [string, string] => [f, readFileSync(path.join(FIXTURES, f), "utf8")]);
  const inputs: [string, string][] = [
    ...invalid.map(([n, c]): [string, string] => [n, c.given]),
    ...valid.map(([n, c]): [string, string] => [n, c.given]),
    ...fixtures,
    [
      "bare keys and compact lists",
      y(
        "backend: PrivateUse1",
        "cpp_namespace: at::mychip",
        "supported:",
        "- add.Tensor",
        "autograd:",
        "device_guard:",
        "device: mychip # trailing",
        "symint:",
      ),
    ],
    [
      "comments and blank lines around lists",
      y(
        "# head",
        "",
        "backend: PrivateUse1  # key",
        "cpp_namespace: at::mychip",
        "supported:",
        "  # a comment",
        "",
        "  - add.Tensor   # why",
        "  - relu",
        "device: mychip",
      ),
    ],
    ["flags spelt every PyYAML way", y(...HEAD, "device_guard: ON", "use_out_as_primary: False", "supported: []")],
  ];

  it.each(inputs)("%s", (_name, text) => {
    expect(outcome(text, true)).toEqual(outcome(text, false));
  });

  it("reads the plain-shaped fixtures itself (no yaml package)", () => {
    // invalid_everything.yaml quotes values on purpose; the others are plain.
    for (const [name, text] of fixtures.filter(([n]) => n !== "invalid_everything.yaml")) {
      expect(fastParse(text), name).not.toBeUndefined();
    }
  });

  it.each([
    ["flow list", "supported: [add.Tensor]\n"],
    ["quoted value", "backend: 'PrivateUse1'\n"],
    ["anchor", "supported: &a\n  - add.Tensor\n"],
    ["y is not a boolean to PyYAML", "device_guard: y\n"],
    ["null word", "class_name: null\n"],
    ["nested mapping", "non_native:\n  - func: x\n"],
    ["tab", "backend:\tPrivateUse1\n"],
    ["CRLF", "backend: PrivateUse1\r\n"],
    ["two spaces after the colon", "backend:  PrivateUse1\n"],
    ["document marker", "---\nbackend: PrivateUse1\n"],
    ["uneven list indentation", "supported:\n  - a\n    - b\n"],
  ])("leaves %s to the yaml package", (_name, text) => {
    expect(fastParse(text)).toBeUndefined();
  });
});

describe("runtime: (Note [Runtime operators])", () => {
  const base = "backend: PrivateUse1\ncpp_namespace: at::k\nfree_functions: true\ndevice: k\n";
  it("an overload listed under runtime and under supported is an error at the runtime entry", () => {
    const yaml = `${base}runtime:\n  - view\nsupported:\n  - relu\n  - view\n`;
    expect(diagnosticsOf(() => parseBackendYaml(yaml, "backend.yaml", catalog))).toEqual([
      "backend.yaml:6:5: view is listed under runtime (the runtime registers it) and under supported (line 9); an overload has one kernel: keep it in one list",
    ]);
  });

  it("a misspelled runtime entry is an error with file:line:col like any op list", () => {
    const d = diagnosticsOf(() => parseBackendYaml(`${base}runtime: [veiw]\n`, "backend.yaml", catalog));
    expect(d).toHaveLength(1);
    expect(d[0]).toMatch(/^backend\.yaml:5:11: runtime entry "veiw"/);
  });
});
