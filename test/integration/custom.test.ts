/**
 * `custom:` operators and `autograd:` mapping entries (issue 14): every
 * malformed entry is one file:line:col diagnostic and nothing is generated;
 * a good YAML gives the TORCH_LIBRARY definitions, the autograd Functions
 * and the Python module.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { computeCoverage } from "../../src/dest/coverage.js";
import { buildPlan, generate } from "../../src/dest/index.js";
import { kernelStubs } from "../../src/impl/kernels.js";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch } from "../../src/torch/discover.js";
import { formatDiagnostic, UserError } from "../../src/util/errors.js";

let catalog: OperatorCatalog;
beforeAll(async () => {
  catalog = await loadCatalog(await discoverTorch(process.env.OPGEN_PYTHON));
});

const y = (...lines: string[]): string => `${lines.join("\n")}\n`;
const HEAD = ["backend: PrivateUse1", "cpp_namespace: at::mychip", "device: mychip", "free_functions: true"];
const GOOD = [
  "custom:",
  "  - func: fused_bias_gelu(Tensor self, Tensor bias, str approximate='none') -> Tensor",
  "    kernel: fused_bias_gelu",
  "    backward: fused_bias_gelu_backward",
  "    fake: torch.empty_like(self)",
  "    reference: torch.nn.functional.gelu(self + bias, approximate=approximate)",
  "    doc: GELU of self + bias.",
  "  - func: fused_bias_gelu_backward(Tensor grad, Tensor self, Tensor bias, str approximate='none') -> (Tensor, Tensor)",
  "    kernel: fused_bias_gelu_backward",
  "    reference: (grad, grad.sum(0))",
  "  - func: gelu_grad(Tensor grad, Tensor self, *, str approximate='none') -> Tensor",
  "    kernel: gelu_grad",
  "    reference: torch.ops.aten.gelu_backward(grad, self, approximate=approximate)",
];

function diagnosticsOf(text: string): string[] {
  try {
    parseBackendYaml(text, "backend.yaml", catalog);
  } catch (e) {
    if (e instanceof UserError) return e.diagnostics.map(formatDiagnostic);
    throw e;
  }
  throw new Error("expected a UserError, but the YAML was accepted");
}

describe("malformed custom: entries", () => {
  const cases: [string, { given: string; want: string[] }][] = [
    [
      "bad schema",
      {
        given: y(...HEAD, "custom:", "  - func: fused(Tensor self -> Tensor", "    kernel: fused"),
        want: [
          "backend.yaml:6:28: custom func is not a valid schema: expected ', ' or ')' after an argument, found ' -> Tensor'; write it as in native_functions.yaml, e.g. fused_gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
        ],
      },
    ],
    [
      "unknown type",
      {
        given: y(...HEAD, "custom:", "  - func: fused(Tensor self, Tensr bias) -> Tensor", "    kernel: fused"),
        want: [],
      },
    ],
    [
      "missing kernel",
      {
        given: y(...HEAD, "custom:", "  - func: fused(Tensor self) -> Tensor", "    reference: self"),
        want: [
          "backend.yaml:6:5: custom entry has no kernel:; name the C++ kernel that computes it (a function in cpp_namespace)",
        ],
      },
    ],
    [
      "backward naming an unknown kernel",
      {
        given: y(
          ...HEAD,
          "custom:",
          "  - func: fused(Tensor self) -> Tensor",
          "    kernel: fused",
          "    backward: fused_bwd",
          "    reference: self",
        ),
        want: [
          'backend.yaml:6:5: custom operator fused names backward kernel "fused_bwd", which no custom: entry has as its kernel; declare the backward as a custom: operator and name its kernel (known: fused)',
        ],
      },
    ],
    [
      "a name that clashes with an aten op",
      {
        given: y(
          ...HEAD,
          "custom:",
          "  - func: gelu(Tensor self) -> Tensor",
          "    kernel: my_gelu",
          "    reference: self",
        ),
        want: [
          'backend.yaml:6:11: custom operator "gelu" clashes with the aten operator of that name (torch.ops.aten.gelu); give it a name of its own, e.g. mychip_gelu or fused_gelu',
        ],
      },
    ],
    [
      "backward with the wrong signature",
      {
        given: y(
          ...HEAD,
          "custom:",
          "  - func: fused(Tensor self, int k) -> Tensor",
          "    kernel: fused",
          "    backward: fused_bwd",
          "    reference: self",
          "  - func: fused_bwd(Tensor grad, Tensor self) -> Tensor",
          "    kernel: fused_bwd",
          "    reference: grad",
        ),
        want: [
          'backend.yaml:6:5: custom operator fused: backward "fused_bwd" (fused_bwd, line 10) does not fit: it takes 2 arguments, not 3; a backward takes (Tensor grad, Tensor self, int k) -> Tensor (Note [Backward convention])',
        ],
      },
    ],
    [
      "another namespace, an unknown key, a mutated argument",
      {
        given: y(
          ...HEAD,
          "custom:",
          "  - func: other::fused(Tensor self) -> Tensor",
          "    kernel: fused",
          "  - func: fused2(Tensor(a!) self) -> Tensor",
          "    kernal: fused2",
        ),
        want: [],
      },
    ],
    [
      "autograd entry naming an unknown backward",
      {
        given: y(...HEAD, "autograd:", "  - op: gelu", "    backward: nope"),
        want: [
          'backend.yaml:7:15: autograd entry gelu names backward kernel "nope", which no custom: entry has as its kernel; declare the backward as a custom: operator and name its kernel (known: none)',
        ],
      },
    ],
  ];
  it.each(cases)("%s", (_name, { given, want }) => {
    const got = diagnosticsOf(given);
    if (want.length > 0) expect(got).toEqual(want);
    else {
      expect(got.length).toBeGreaterThan(0);
      for (const d of got) expect(d).toMatch(/^backend\.yaml:\d+:\d+: /);
    }
  });

  it("an unknown type is named", () => {
    const got = diagnosticsOf(
      y(...HEAD, "custom:", "  - func: fused(Tensor self, Tensr bias) -> Tensor", "    kernel: fused"),
    );
    expect(got.join("\n")).toMatch(/^backend\.yaml:6:\d+: custom func is not a valid schema: .*Tensr/);
  });

  it("reports every problem of a file in one run", () => {
    const got = diagnosticsOf(
      y(
        ...HEAD,
        "custom:",
        "  - func: other::fused(Tensor self) -> Tensor",
        "    kernel: fused",
        "  - func: fused2(Tensor(a!) self) -> Tensor",
        "    kernal: fused2",
      ),
    );
    expect(got).toEqual([
      'backend.yaml:6:11: custom func is in namespace "other"; custom operators live in the device\'s namespace "mychip" (write mychip:: or nothing)',
      "backend.yaml:8:5: custom entry has no kernel:; name the C++ kernel that computes it (a function in cpp_namespace)",
      "backend.yaml:8:29: custom func argument self is mutated or aliased; custom operators here are functional: drop the annotation and return new tensors",
      'backend.yaml:9:5: unknown custom key "kernal"; did you mean "kernel"? allowed: func, kernel, backward, fake, reference, samples, doc',
    ]);
  });
});

describe("an autograd: operator listed twice", () => {
  it.each([
    ["two mappings", ["  - op: gelu", "    backward: gelu_grad", "  - op: gelu", "    backward: nope"], "gelu_grad"],
    ["a plain entry, then a mapping", ["  - gelu", "  - op: gelu", "    backward: nope"], null],
  ])("%s: the first entry wins, with its backward, and the second is reported ignored", (_n, entries, want) => {
    const config = parseBackendYaml(y(...HEAD, "autograd:", ...entries, ...GOOD), "backend.yaml", catalog);
    expect(config.autogradBackward.get("gelu") ?? null).toBe(want);
    expect(config.warnings.map((w) => w.message)).toContainEqual(
      expect.stringMatching(/^gelu is listed twice in autograd/),
    );
  });
});

describe("generated autograd and custom operators", () => {
  const text = y(...HEAD, "autograd:", "  - op: gelu", "    backward: gelu_grad", "  - op: relu", ...GOOD);
  const files = () =>
    new Map(generate(parseBackendYaml(text, "backend.yaml", catalog), catalog).map((f) => [f.path, f.content]));

  it("defines the operators, their kernels and autograd Functions", () => {
    const cpp = files().get("AutogradFunctions.cpp")!;
    expect(cpp).toContain(
      `m.def("fused_bias_gelu_backward(Tensor grad, Tensor self, Tensor bias, str approximate='none') -> (Tensor, Tensor)");`,
    );
    expect(cpp).toContain('m.impl("fused_bias_gelu", &::at::mychip::fused_bias_gelu);');
    expect(cpp).toContain('m.impl("fused_bias_gelu", &mychipFusedBiasGelu_autograd);');
    expect(cpp).toContain(
      'TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {\n  m.impl("gelu", &atenGelu_autograd);\n  m.impl("relu", &atenRelu_autograd);\n}',
    );
    expect(cpp).toContain('findSchemaOrThrow("mychip::gelu_grad", "")');
    expect(cpp).toContain("backward of relu not implemented for mychip");
    // The vendor's forward kernels are registered below autograd.
    const reg = files().get("RegisterPrivateUse1.cpp")!;
    expect(reg).toMatch(/m\.impl\("gelu", /);
    expect(reg).toMatch(/m\.impl\("relu", /);
    expect(files().has("RegisterAutogradPrivateUse1.cpp")).toBe(false);
    expect(files().get("PrivateUse1NativeFunctions.h")).toContain(
      "::std::tuple<at::Tensor,at::Tensor> fused_bias_gelu_backward(const at::Tensor & grad, const at::Tensor & self, const at::Tensor & bias, c10::string_view approximate);",
    );
  });

  it("writes the Python module: wrappers, fakes, references", () => {
    const py = files().get("ops.py")!;
    expect(py).toContain("def fused_bias_gelu(self: Tensor, bias: Tensor, approximate: str = 'none') -> Tensor:");
    expect(py).toContain('@torch.library.register_fake("mychip::fused_bias_gelu")');
    // A backward's fake is tensors like the forward's Tensor arguments.
    expect(py).toContain("return ((torch.empty_like(self), torch.empty_like(bias)))");
    expect(py).toContain("return torch.ops.mychip.gelu_grad.default(grad, self, approximate=approximate)");
    expect(py).toContain('REFERENCES = {"fused_bias_gelu": _reference_fused_bias_gelu');
  });

  it("marks the outputs derivatives.yaml calls non-differentiable", () => {
    const t = y(...HEAD, "autograd:", "  - op: log_sigmoid_forward");
    const cpp = generate(parseBackendYaml(t, "backend.yaml", catalog), catalog).find(
      (f) => f.path === "AutogradFunctions.cpp",
    )!.content;
    // log_sigmoid_forward's buffer: output_differentiability: [True, False]
    expect(cpp).toContain("ctx->mark_non_differentiable({std::get<1>(result)});");
    expect(cpp).toContain("backward of log_sigmoid_forward not implemented for mychip");
  });

  it("keeps torchgen's meaning for autograd entries written as names", () => {
    const t = y(...HEAD, "autograd:", "  - relu");
    const f = generate(parseBackendYaml(t, "backend.yaml", catalog), catalog).map((x) => x.path);
    expect(f).toContain("RegisterAutogradPrivateUse1.cpp");
    expect(f).not.toContain("AutogradFunctions.cpp");
  });
});

describe("gen --stubs", () => {
  it("writes the custom kernels and the backward an autograd entry lacks", () => {
    const text = y(...HEAD, "autograd:", "  - op: gelu", ...GOOD.slice(0, 7));
    const config = parseBackendYaml(
      text.replace("    backward: fused_bias_gelu_backward\n", ""),
      "backend.yaml",
      catalog,
    );
    const stubs = new Map(kernelStubs(buildPlan(config, catalog)).map((f) => [f.path, f.content]));
    expect(stubs.get("fused_bias_gelu.cpp")).toContain(
      "at::Tensor fused_bias_gelu(const at::Tensor & /*self*/, const at::Tensor & /*bias*/, c10::string_view /*approximate*/) {",
    );
    const bwd = stubs.get("gelu_autograd_backward.cpp")!;
    expect(bwd).toContain(
      "at::Tensor gelu_autograd_backward(const at::Tensor & /*grad*/, const at::Tensor & /*self*/, c10::string_view /*approximate*/) {",
    );
    expect(bwd).toContain("//     autograd: [{op: gelu, backward: gelu_autograd_backward}]");
  });
});

describe("autograd: entries that get no generated Function", () => {
  // Note [Autograd entries are Functions]: these keep torchgen's registration;
  // gen says so per entry, and the coverage JSON carries the reason.
  const text = y(
    ...HEAD,
    "autograd:",
    "  - op: gelu_",
    "  - op: add.out",
    "  - op: transpose.int",
    "  - op: index.Tensor",
    "    backward: index_grad",
    "  - op: gelu",
    "custom:",
    "  - func: index_grad(Tensor grad, Tensor self, Tensor?[] indices) -> Tensor",
    "    kernel: index_grad",
    "    reference: grad",
  );
  const key = "it is registered on AutogradPrivateUse1 as torchgen does, so its kernel must record autograd itself";
  const tail = "; list it as a plain name to say so, or list a functional overload instead";

  it("warns per entry with file:line:col and the reason", () => {
    const config = parseBackendYaml(text, "backend.yaml", catalog);
    expect(config.warnings.map(formatDiagnostic)).toEqual([
      `backend.yaml:6:9: warning: autograd entry gelu_ gets no generated autograd Function: it is in-place (it writes self), and a generated Function wraps functional operators only; ${key}${tail}`,
      `backend.yaml:7:9: warning: autograd entry add.out gets no generated autograd Function: it is an out= variant, and out= overloads are not differentiable in PyTorch; ${key}${tail}`,
      `backend.yaml:8:9: warning: autograd entry transpose.int gets no generated autograd Function: it returns a view of an input (an aliased return), which a Function cannot give; ${key}${tail}`,
      `backend.yaml:9:9: warning: autograd entry index.Tensor gets no generated autograd Function: its argument indices (Tensor?[]) cannot be saved for backward (savable: Tensor, Tensor?, int, SymInt, float, bool, str, Scalar, int[], SymInt[]); ${key} and its backward: is not used${tail}`,
    ]);
  });

  it("registers them as torchgen does and says why in the coverage JSON", () => {
    const config = parseBackendYaml(text, "backend.yaml", catalog);
    const files = new Map(generate(config, catalog).map((f) => [f.path, f.content]));
    const direct = files.get("RegisterAutogradPrivateUse1.cpp")!;
    for (const op of ["gelu_", "add.out", "transpose.int", "index.Tensor"]) expect(direct).toContain(`m.impl("${op}"`);
    expect(direct).not.toContain('m.impl("gelu",');
    expect(files.get("AutogradFunctions.cpp")).toContain('m.impl("gelu", &atenGelu_autograd);');
    const grads = computeCoverage(config, catalog).autograd.ops;
    const byName = new Map(grads.map((g) => [g.name, g]));
    expect(byName.get("gelu_")).toEqual({
      name: "gelu_",
      source: "vendor",
      noFunction: "it is in-place (it writes self), and a generated Function wraps functional operators only",
    });
    expect(byName.get("transpose.int")?.noFunction).toMatch(/^it returns a view of an input/);
    expect(byName.get("index.Tensor")?.noFunction).toMatch(/^its argument indices \(Tensor\?\[\]\) cannot be saved/);
    expect(byName.get("gelu")).toEqual({ name: "gelu", source: "vendor", backward: null });
    // out= overloads are not in the gradient report at all (Note [Gradient sources]).
    expect(byName.has("add.out")).toBe(false);
  });

  it("gen --stubs writes a backward stub only for the entry that gets a Function", () => {
    const config = parseBackendYaml(text, "backend.yaml", catalog);
    const stubs = kernelStubs(buildPlan(config, catalog)).map((f) => f.path);
    expect(stubs.filter((p) => p.endsWith("_autograd_backward.cpp"))).toEqual(["gelu_autograd_backward.cpp"]);
    // index.Tensor's backward: still fake-registers like a backward (ops.py), though no Function calls it.
    const py = generate(config, catalog).find((f) => f.path === "ops.py")!.content;
    expect(py).toContain("def _fake_index_grad(grad, self, indices):\n    return (torch.empty_like(self))");
  });

  it("keeps quiet for entries written as plain names", () => {
    const config = parseBackendYaml(y(...HEAD, "autograd:", "  - gelu_", "  - transpose.int"), "backend.yaml", catalog);
    expect(config.warnings.filter((w) => /autograd entry/.test(w.message))).toEqual([]);
  });
});

describe("backward formulas (Note [Backward formulas])", () => {
  const rms = (...backward: string[]) =>
    y(
      ...HEAD,
      "custom:",
      "  - func: fused_rms(Tensor self, Tensor weight, float eps=1e-06, int k=0) -> Tensor",
      "    kernel: fused_rms",
      "    backward:",
      ...backward.map((l) => `      ${l}`),
      "    reference: self",
    );
  const cases: [string, { given: string; want: string[] }][] = [
    [
      "an unknown input name",
      {
        given: rms('slef: "grad"'),
        want: [
          'backend.yaml:9:7: custom operator fused_rms: backward formula for "slef", which is not an argument; did you mean "self"? formulas are for the Tensor arguments: self, weight',
        ],
      },
    ],
    [
      "a formula for a non-differentiable input",
      {
        given: rms('self: "grad"', 'eps: "grad"'),
        want: [
          "backend.yaml:10:7: custom operator fused_rms: backward formula for eps, which is float and has no gradient; formulas are for the Tensor arguments: self, weight",
        ],
      },
    ],
    [
      "a name that is no input, grad or result",
      {
        given: rms('self: "grad * weigth"'),
        want: [
          'backend.yaml:9:21: custom operator fused_rms: the backward formula for self uses "weigth"; did you mean "weight"? a formula may use the arguments (self, weight, eps, k), grad, grads, result, names qualified by at::, c10:: or std::, and true, false, nullptr, int64_t, double (write at::weigth for an ATen function)',
        ],
      },
    ],
    [
      "an unqualified function",
      {
        given: rms("weight: grad * rsqrt(self)"),
        want: [
          'backend.yaml:9:22: custom operator fused_rms: the backward formula for weight uses "rsqrt"; a formula may use the arguments (self, weight, eps, k), grad, grads, result, names qualified by at::, c10:: or std::, and true, false, nullptr, int64_t, double (write at::rsqrt for an ATen function)',
        ],
      },
    ],
    [
      "the generated Function's own locals",
      {
        given: rms('self: "ctx->saved_data.size() * grad"'),
        want: [
          'backend.yaml:9:14: custom operator fused_rms: the backward formula for self uses "ctx"; a formula may use the arguments (self, weight, eps, k), grad, grads, result, names qualified by at::, c10:: or std::, and true, false, nullptr, int64_t, double (write at::ctx for an ATen function)',
        ],
      },
    ],
    [
      "statements",
      {
        given: rms('self: "grad; std::abort()"'),
        want: [
          "backend.yaml:9:18: custom operator fused_rms: the backward formula for self has a ';' (write one expression, not statements); write one C++ expression",
        ],
      },
    ],
    [
      "an unbalanced bracket and an empty formula",
      {
        given: rms('self: "(grad * weight"', 'weight: ""'),
        want: [
          "backend.yaml:9:14: custom operator fused_rms: the backward formula for self leaves a '(' open; write one C++ expression",
          'backend.yaml:10:15: custom operator fused_rms: the backward formula for weight is not a string; write one C++ expression, e.g. "grad * 2"',
        ],
      },
    ],
    [
      "grad of an operator with several outputs",
      {
        given: y(
          ...HEAD,
          "custom:",
          "  - func: fused_pair(Tensor self) -> (Tensor, Tensor)",
          "    kernel: fused_pair",
          "    backward: {self: grad + result}",
          "    reference: (self, self)",
        ),
        want: [
          'backend.yaml:8:22: custom operator fused_pair: the backward formula for self uses "grad"; the operator has 2 outputs, so write grads[i] for output i\'s gradient',
          'backend.yaml:8:29: custom operator fused_pair: the backward formula for self uses "result"; the operator has 2 outputs: write result0, result1',
        ],
      },
    ],
    [
      "an autograd entry's formula",
      {
        given: y(
          ...HEAD,
          "autograd:",
          "  - op: gelu",
          "    backward: {self: grad * gelu_grad(self), approximate: grad}",
        ),
        want: [
          'backend.yaml:7:29: autograd entry gelu: the backward formula for self uses "gelu_grad"; a formula may use the arguments (self, approximate), grad, grads, result, names qualified by at::, c10:: or std::, and true, false, nullptr, int64_t, double (write at::gelu_grad for an ATen function)',
          "backend.yaml:7:46: autograd entry gelu: backward formula for approximate, which is str and has no gradient; formulas are for the Tensor arguments: self",
        ],
      },
    ],
  ];
  it.each(cases)("%s", (_name, { given, want }) => {
    expect(diagnosticsOf(given)).toEqual(want);
  });

  it("emits the formulas into the Function's backward, saving what they name", () => {
    const text = y(
      ...HEAD,
      "autograd:",
      "  - op: gelu",
      '    backward: {self: "grad * at::sigmoid(1.702 * self) * (1 + 1.702 * self * (1 - at::sigmoid(1.702 * self)))"}',
      "  - op: log_sigmoid_forward",
      "    backward: {self: 'grads[0] * at::sigmoid(-self) + 0 * result1'}",
      "custom:",
      "  - func: fused_rms(Tensor self, Tensor weight, float eps=1e-06, int k=0) -> Tensor",
      "    kernel: fused_rms",
      "    backward:",
      '      self: "grad * weight * at::rsqrt(self.pow(2).mean(-1, true) + eps)"',
      '      weight: "(grad * result / weight).sum_to_size(weight.sizes())"',
      "    reference: self",
    );
    const config = parseBackendYaml(text, "backend.yaml", catalog);
    const files = new Map(generate(config, catalog).map((f) => [f.path, f.content]));
    const cpp = files.get("AutogradFunctions.cpp")!;
    expect(cpp).toContain("#include <ATen/Functions.h>");
    // Formulas that name result save the outputs after the inputs.
    expect(cpp).toContain("    ctx->save_for_backward({self, weight, result});");
    expect(cpp).toContain(
      [
        "    const torch::autograd::variable_list saved = ctx->get_saved_variables();",
        "    const at::Tensor& self = saved[0];",
        "    const at::Tensor& weight = saved[1];",
        '    const auto eps = ctx->saved_data["eps"].toDouble();',
        "    const at::Tensor& result = saved[2];",
        "    const at::Tensor& grad = grads[0];",
        "    // mychip::fused_rms: one gradient per argument, undefined without a formula.",
        "    return {",
        "        at::Tensor(grad * weight * at::rsqrt(self.pow(2).mean(-1, true) + eps)),",
        "        at::Tensor((grad * result / weight).sum_to_size(weight.sizes())),",
        "        at::Tensor(),",
        "        at::Tensor(),",
        "    };",
      ].join("\n"),
    );
    // Only the names a formula uses get a local: k is saved but not read back.
    expect(cpp).not.toContain('const auto k = ctx->saved_data["k"]');
    expect(cpp).toContain(
      "        at::Tensor(grad * at::sigmoid(1.702 * self) * (1 + 1.702 * self * (1 - at::sigmoid(1.702 * self)))),",
    );
    expect(cpp).toContain("    ctx->save_for_backward({self, std::get<0>(result), std::get<1>(result)});");
    expect(cpp).toContain("    const at::Tensor& result1 = saved[2];");
    expect(cpp).not.toContain("backward of gelu not implemented");
    // Formulas need no backward kernel: gen --stubs writes none, and the reports say where gradients come from.
    expect(kernelStubs(buildPlan(config, catalog)).map((f) => f.path)).not.toContain("gelu_autograd_backward.cpp");
    const grads = new Map(computeCoverage(config, catalog).autograd.ops.map((g) => [g.name, g]));
    expect(grads.get("gelu")).toEqual({ name: "gelu", source: "vendor", formula: ["self"] });
    expect(grads.get("mychip::fused_rms")).toEqual({
      name: "mychip::fused_rms",
      source: "vendor",
      formula: ["self", "weight"],
    });
    expect(files.get("ops.py")).toContain('DIFFERENTIABLE = {"fused_rms"}');
  });
});
