import { describe, expect, it } from "vitest";
import {
  operatorNameString,
  parseBaseOperatorName,
  parseSchema,
  printSchema,
  printType,
  SchemaParseError,
  schemaKind,
  signature,
  signatureKey,
  tensorOptions,
} from "../../src/model/schema.js";

// Each case is a schema that must print back byte-for-byte.
const roundTrips: [string, { given: string }][] = [
  ["no overload", { given: "relu(Tensor self) -> Tensor" }],
  ["overload + kwarg-only default", { given: "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" }],
  ["inplace", { given: "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)" }],
  ["out", { given: "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)" }],
  ["dunder inplace", { given: "__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)" }],
  ["dunder", { given: "__lshift__.Tensor(Tensor self, Tensor other) -> Tensor" }],
  ["no arguments", { given: "_cufft_get_plan_cache_size(DeviceIndex device_index) -> int" }],
  ["empty args", { given: "_has_compatible_shallow_copy_type_helper() -> bool" }],
  ["void return", { given: "_assert_async(Tensor self) -> ()" }],
  [
    "fixed-size list + list default",
    { given: "f(Tensor self, int[2] kernel_size, SymInt[2] stride=[], int[1] dim=[0,1]) -> Tensor" },
  ],
  ["optional list", { given: "f(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor" }],
  ["list of optional", { given: "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor" }],
  ["annotated list", { given: "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]" }],
  ["annotated list arg", { given: "_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()" }],
  ["annotated optional", { given: "f(Tensor self, *, Tensor(a!)? out=None) -> Tensor(a!)?" }],
  ["alias union", { given: "f(Tensor(a|b) self) -> Tensor(a|b)" }],
  [
    "named tuple returns",
    {
      given:
        "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
    },
  ],
  ["tuple returns", { given: "f(Tensor self) -> (Tensor, Tensor, int)" }],
  ["list return", { given: "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]" }],
  ["negative default", { given: "f(Tensor self, int dim=-1, float eps=-1e-05) -> Tensor" }],
  ["double-quoted string default", { given: 'f(Tensor self, str padding="valid") -> Tensor' }],
  ["single-quoted string default", { given: "gelu(Tensor self, *, str approximate='none') -> Tensor" }],
  ["string default with comma and paren", { given: 'f(Tensor self, str s="a, b)") -> Tensor' }],
  ["enum-like default", { given: "f(Tensor self, *, MemoryFormat memory_format=contiguous_format) -> Tensor" }],
  [
    "tensor options",
    {
      given:
        "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    },
  ],
  [
    "functional suffix",
    {
      given:
        "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
    },
  ],
  ["custom class", { given: "f(__torch__.torch.classes.quantized.Conv2dPackedParamsBase packed) -> Tensor" }],
  ["pre-self positional", { given: "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor" }],
  [
    "mutable positional",
    {
      given:
        "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, float c) -> (Tensor output, Tensor mask)",
    },
  ],
  ["generator + symint", { given: "randn(SymInt[] size, *, Generator? generator, ScalarType? dtype=None) -> Tensor" }],
];

describe("parseSchema/printSchema round trip", () => {
  it.each(roundTrips)("%s", (_name, { given }) => {
    expect(printSchema(parseSchema(given))).toBe(given);
  });
});

describe("parseSchema structure", () => {
  it("splits positional, kwarg-only and out arguments", () => {
    const s = parseSchema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
    expect(s.arguments.positional.map((a) => a.name)).toEqual(["self", "other"]);
    expect(s.arguments.kwargOnly.map((a) => a.name)).toEqual(["alpha"]);
    expect(s.arguments.out.map((a) => a.name)).toEqual(["out"]);
    expect(s.arguments.kwargOnly[0]!.default).toBe("1");
    expect(s.arguments.out[0]!.annotation).toEqual({ aliasSet: ["a"], isWrite: true, aliasSetAfter: [] });
    expect(s.returns).toHaveLength(1);
  });

  const types: [string, { given: string; want: unknown }][] = [
    ["optional", { given: "Tensor?", want: { kind: "optional", elem: { kind: "base", name: "Tensor" } } }],
    ["fixed list", { given: "int[2]", want: { kind: "list", size: 2, elem: { kind: "base", name: "int" } } }],
    [
      "optional list",
      {
        given: "int[]?",
        want: { kind: "optional", elem: { kind: "list", size: null, elem: { kind: "base", name: "int" } } },
      },
    ],
    [
      "list of optional",
      {
        given: "Tensor?[]",
        want: { kind: "list", size: null, elem: { kind: "optional", elem: { kind: "base", name: "Tensor" } } },
      },
    ],
  ];
  it.each(types)("type %s", (_name, { given, want }) => {
    const t = parseSchema(`f(${given} x) -> ()`).arguments.positional[0]!.type;
    expect(t).toEqual(want);
    expect(printType(t)).toBe(given);
  });

  const annotations: [string, { given: string; want: unknown }][] = [
    ["write", { given: "Tensor(a!)", want: { aliasSet: ["a"], isWrite: true, aliasSetAfter: [] } }],
    ["read", { given: "Tensor(a)", want: { aliasSet: ["a"], isWrite: false, aliasSetAfter: [] } }],
    ["wildcard after", { given: "Tensor(a -> *)", want: { aliasSet: ["a"], isWrite: false, aliasSetAfter: ["*"] } }],
    ["union", { given: "Tensor(a|b)", want: { aliasSet: ["a", "b"], isWrite: false, aliasSetAfter: [] } }],
    ["write optional", { given: "Tensor(a!)?", want: { aliasSet: ["a"], isWrite: true, aliasSetAfter: [] } }],
  ];
  it.each(annotations)("annotation %s", (_name, { given, want }) => {
    expect(parseSchema(`f(${given} self) -> ()`).arguments.positional[0]!.annotation).toEqual(want);
  });

  const names: [string, { given: string; want: object; str: string }][] = [
    [
      "plain",
      {
        given: "add",
        want: { base: "add", inplace: false, dunderMethod: false, functionalOverload: false },
        str: "add",
      },
    ],
    [
      "inplace",
      {
        given: "add_",
        want: { base: "add", inplace: true, dunderMethod: false, functionalOverload: false },
        str: "add_",
      },
    ],
    [
      "dunder",
      {
        given: "__and__",
        want: { base: "and", inplace: false, dunderMethod: true, functionalOverload: false },
        str: "__and__",
      },
    ],
    [
      "dunder inplace",
      {
        given: "__iand__",
        want: { base: "and", inplace: true, dunderMethod: true, functionalOverload: false },
        str: "__iand__",
      },
    ],
    [
      "functional",
      {
        given: "_native_batch_norm_legit_functional",
        want: { base: "_native_batch_norm_legit", inplace: false, dunderMethod: false, functionalOverload: true },
        str: "_native_batch_norm_legit_functional",
      },
    ],
  ];
  it.each(names)("base name %s", (_name, { given, want, str }) => {
    expect(parseBaseOperatorName(given)).toEqual(want);
    expect(operatorNameString(parseSchema(`${given}.x(Tensor(a!) self) -> Tensor(a!)`).name)).toBe(`${str}.x`);
  });

  it("finds tensor options", () => {
    const s = parseSchema(
      "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    );
    expect(tensorOptions(s.arguments)?.index).toBe(0);
    expect(tensorOptions(parseSchema("f(Tensor self, *, ScalarType? dtype=None) -> Tensor").arguments)).toBeNull();
  });
});

describe("parse errors carry the column", () => {
  const errors: [string, { given: string; col: number; message: RegExp }][] = [
    ["unknown type", { given: "f(Tensr self) -> Tensor", col: 3, message: /unknown type 'Tensr'/ }],
    ["missing arrow", { given: "f(Tensor self)->Tensor", col: 15, message: /expected ' -> '/ }],
    ["missing name", { given: "f(Tensor) -> Tensor", col: 9, message: /expected ' ' and an argument name/ }],
    ["bad annotation", { given: "f(Tensor(A!) self) -> Tensor", col: 10, message: /unrecognized alias annotation/ }],
    ["annotation on int", { given: "f(int(a) x) -> Tensor", col: 6, message: /only allowed on Tensor/ }],
    ["two stars", { given: "f(Tensor self, *, int a, *, int b) -> Tensor", col: 26, message: /can only occur once/ }],
    ["dangling star", { given: "f(Tensor self, *) -> Tensor", col: 17, message: /at least one keyword-only/ }],
    [
      "immutable after out",
      {
        given: "f(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)",
        col: 35,
        message: /cannot follow mutable out/,
      },
    ],
    ["_out suffix", { given: "add_out(Tensor self) -> Tensor", col: 1, message: /_out suffix is reserved/ }],
    ["bad overload", { given: "add.(Tensor self) -> Tensor", col: 5, message: /not a valid overload name/ }],
    ["no paren", { given: "relu", col: 5, message: /expected '\('/ }],
    ["parenthesized single return", { given: "f(Tensor self) -> (Tensor)", col: 19, message: /single return/ }],
    ["trailing junk", { given: "f(Tensor self) -> Tensor x y", col: 27, message: /unexpected/ }],
    ["list size zero", { given: "f(int[0] x) -> Tensor", col: 7, message: /invalid list size/ }],
    ["unterminated string", { given: "f(str s='abc) -> Tensor", col: 9, message: /unterminated string/ }],
    ["missing default", { given: "f(int x=) -> Tensor", col: 9, message: /missing default value/ }],
    [
      "bad suffix after annotation",
      { given: "f(Tensor(a)?[] x) -> Tensor", col: 12, message: /unsupported alias-annotated/ },
    ],
    ["dunder with i", { given: "__int__(Tensor self) -> int", col: 1, message: /starting with 'i'/ }],
  ];
  it.each(errors)("%s", (_name, { given, col, message }) => {
    let err: unknown;
    try {
      parseSchema(given);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SchemaParseError);
    const e = err as SchemaParseError;
    expect(e.reason).toMatch(message);
    expect(e.col).toBe(col);
    expect(e.message).toContain(`column ${col}`);
  });
});

describe("schemaKind", () => {
  const kinds: [string, { given: string; want: string }][] = [
    ["functional", { given: "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", want: "functional" }],
    [
      "inplace",
      { given: "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", want: "inplace" },
    ],
    ["dunder inplace", { given: "__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", want: "inplace" }],
    [
      "out",
      { given: "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", want: "out" },
    ],
    [
      "mutable",
      {
        given:
          "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, float c) -> (Tensor output, Tensor mask)",
        want: "mutable",
      },
    ],
    [
      "scratch",
      {
        given: "_f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)",
        want: "scratch",
      },
    ],
    ["view is functional", { given: "view(Tensor(a) self, SymInt[] size) -> Tensor(a)", want: "functional" }],
    // torchgen only looks at post-self positionals for "mutable".
    ["mutated self without inplace name is functional", { given: "_f(Tensor(a!) self) -> ()", want: "functional" }],
  ];
  it.each(kinds)("%s", (_name, { given, want }) => {
    expect(schemaKind(parseSchema(given))).toBe(want);
  });

  it("rejects out and inplace together", () => {
    expect(() => schemaKind(parseSchema("add_.out(Tensor(a!) self, *, Tensor(b!) out) -> Tensor(a!)"))).toThrow(
      /both out= and inplace/,
    );
  });
});

describe("signatureKey (torchgen FunctionSchema.signature)", () => {
  const keys: [string, { given: string; want: string }][] = [
    [
      "functional",
      {
        given: "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        want: "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      },
    ],
    [
      "inplace",
      {
        given: "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        want: "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      },
    ],
    [
      "out",
      {
        given: "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        want: "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      },
    ],
    [
      "tensor options dropped",
      {
        given:
          "arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        want: "arange(Scalar start, Scalar end) -> Tensor",
      },
    ],
    [
      "post tensor options kept",
      {
        given:
          "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        want: "empty(SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor",
      },
    ],
    [
      "mutable inputs become returns",
      {
        given:
          "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, Tensor(b!) running_max, float c) -> (Tensor output, Tensor mask)",
        want: "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor running_min, Tensor running_max, float c) -> (Tensor, Tensor, Tensor, Tensor)",
      },
    ],
    [
      "out without return",
      {
        given: "_foreach_add.Scalar_out(Tensor[] self, Scalar scalar, *, Tensor(a!)[] out) -> ()",
        want: "_foreach_add(Tensor[] self, Scalar scalar) -> Tensor[]",
      },
    ],
    [
      "inplace list self",
      {
        given: "_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()",
        want: "_foreach_add(Tensor[] self, Scalar scalar) -> Tensor[]",
      },
    ],
    [
      "dunder keeps dunder",
      {
        given: "__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
        want: "__and__(Tensor self, Scalar other) -> Tensor",
      },
    ],
    [
      "bernoulli.p gets p=0.5",
      {
        given: "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
        want: "bernoulli(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor",
      },
    ],
    ["empty returns", { given: "_assert_async(Tensor self) -> ()", want: "_assert_async(Tensor self) -> ()" }],
    ["no args", { given: "f.x() -> Tensor", want: "f() -> Tensor" }],
    ["kwargs without positional", { given: "f.x(*, int a) -> Tensor", want: "f(*, int a) -> Tensor" }],
  ];
  it.each(keys)("%s", (_name, { given, want }) => {
    const s = parseSchema(given);
    expect(signatureKey(s)).toBe(want);
    // The fast key and the structural signature() must agree.
    expect(printSchema(signature(s))).toBe(want);
  });

  it("keepReturnNames names mutated inputs <name>_out", () => {
    const s = parseSchema(
      "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, float c) -> (Tensor output, Tensor mask)",
    );
    expect(printSchema(signature(s, { keepReturnNames: true }))).toBe(
      "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor running_min, float c) -> (Tensor output, Tensor mask, Tensor running_min_out)",
    );
  });
});
