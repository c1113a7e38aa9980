/**
 * Plan -> `Register<Key>.cpp`: the C++ that puts the backend's kernels into
 * the dispatcher under one dispatch key (torchgen RegisterDispatchKey for an
 * external backend, same behaviour, different shape).
 *
 * Note [Registering function pointers]: torchgen wraps every kernel in a
 * function and registers it with `TORCH_FN(wrapper)`, which instantiates the
 * boxing/unboxing templates once per *function*. We register runtime function
 * pointers (`m.impl(name, &fn)`), which instantiates them once per distinct
 * *C++ function type*, and we only write a wrapper when it does something
 * (device check/guard, or copying results for a derived out=/inplace
 * overload); otherwise the kernel itself is registered. Derived out=
 * overloads share one boxed kernel (Note [Derived out= overloads]). Both unboxed and
 * boxed calls work exactly as with TORCH_FN; the only runtime difference is
 * one indirect call, which the dispatcher makes anyway for runtime functors.
 * Kernels with int64_t signatures for SymInt schemas are registered as they
 * are: the dispatcher converts (Note [SymInt in kernel signatures]).
 *
 * Includes are the few headers the emitted code needs, not ATen/Functions.h:
 * each wrapper and helper definition carries the headers it needs, and
 * printRegister asks for them where it prints it (Note [C++ printer]).
 */

import { printCType } from "../api/ctype.js";
import { cppFlags, DispatcherSignature } from "../api/dispatcher.js";
import { annotationEquals, isTensorLike, isWrite, printBaseOperatorName, tensorOptions } from "../model/catalog.js";
import type { Argument, NativeFunction } from "../model/types.js";
import { assertNever } from "../util/errors.js";
import {
  type Derivation,
  type DerivedChecks,
  type KernelDecl,
  type KeyPlan,
  type OutDtype,
  type Plan,
  type Registration,
  wrapperName,
} from "./plan.js";
import { CppFile, type IncludeOrder } from "./printer.js";
import { cppSource } from "./sources.js";

export interface WrapperFn {
  readonly name: string;
  readonly signature: string;
  readonly body: readonly string[];
  /** The headers its body needs beyond the file's own. */
  readonly includes: readonly string[];
}

/** A shared helper's definition (templates/cpp) and the headers it needs. */
export interface HelperDef {
  readonly source: string;
  readonly includes: readonly string[];
}

export interface RegisterModel {
  readonly dispatchKey: string;
  readonly header: string;
  /**
   * Note [Derived helpers defined once] (derivedDecls below): the
   * helpers derived overloads share, in `<cpp_namespace>::opgen_derived`:
   * declared in every file that uses them, defined (`defs`) only in the
   * backend key's file. Zero or one block.
   */
  readonly helperBlocks: readonly {
    readonly open: string;
    readonly decls: string;
    readonly defs: readonly HelperDef[];
    readonly close: string;
  }[];
  /** `using namespace` lines that bring the helpers into the file's anonymous namespace. */
  readonly usings: readonly string[];
  /** Overloads we could derive in principle but do not, with why (printed as comments). */
  readonly notes: readonly string[];
  readonly wrappers: readonly WrapperFn[];
  readonly registrations: readonly { readonly op: string; readonly fn: string }[];
}

/**
 * The C++ name that calls or takes the address of kernel k, fully qualified
 * (Note [Kernel home]): `at::mychip::MychipNativeFunctions::add`, or
 * `at::mychip::add` for free functions. Qualified, so neither form finds
 * anything by argument-dependent lookup (an `at::add` for at::Tensor
 * arguments), and `static_cast` to the kernel's pointer type picks the
 * overload either way.
 */
export function qualifiedKernel(plan: Plan, k: KernelDecl): string {
  return `${plan.kernelScope}::${k.sig.name}`;
}

/** The C++ OutDtype enumerator for a rule (templates/cpp/DerivedDecls.h). */
function outDtypeC(rule: OutDtype): string {
  switch (rule) {
    case "castable":
      return "OutDtype::kCastable";
    case "equal":
      return "OutDtype::kEqual";
    case "equal_iterator":
      return "OutDtype::kEqualIterator";
    default:
      return assertNever(rule, "out dtype rule");
  }
}

/**
 * Eager's meta function of a structured overload (Note [Derived out dtype
 * checks]): `at::meta::<name>_outf` for out= (its arguments in schema order,
 * as the dispatcher's), `at::meta::<name>` for inplace (`add_`); `_symint`
 * names the variant that takes c10::SymInt. Its C++ types are the
 * dispatcher's (the syntax-only compile test checks every structured group).
 */
function metaFunction(f: NativeFunction, symint: boolean): DispatcherSignature {
  const base = printBaseOperatorName(f.func.name.name) + (symint ? "_symint" : "");
  const name = f.func.arguments.out.length > 0 ? `${base}_outf` : base;
  return new DispatcherSignature(f.func, cppFlags(f, symint), `at::meta::${name}`);
}

function metaHeader(f: NativeFunction): string {
  return `<ATen/ops/${f.func.name.name.base}_meta_dispatch.h>`;
}

/** torchgen gen_device_check: tensor-like out and positional arguments. */
function deviceCheckLines(f: NativeFunction, wrapper: string): string[] {
  if (f.deviceCheck === "NoCheck") return [];
  const args = [...f.func.arguments.out, ...f.func.arguments.positional].filter((a) => isTensorLike(a.type));
  if (args.length === 0) return [];
  return [
    "std::optional<c10::Device> common_device = std::nullopt;",
    ...args.map(
      (a) => `c10::impl::check_and_update_common_device(common_device, ${a.name}, "${wrapper}", "${a.name}");`,
    ),
  ];
}

/** torchgen's DeviceGuard choice: the `device` argument of factories, else the first tensor-like argument. */
function deviceGuardLine(f: NativeFunction): string | null {
  if (!f.deviceGuard) return null;
  if (tensorOptions(f.func.arguments) !== null) {
    return "const c10::DeviceGuard device_guard(at::device_or_default(device));";
  }
  const a = f.func.arguments;
  const self = a.positional.filter((x) => x.name === "self");
  const first = [...self, ...a.out, ...a.positional].find((x) => isTensorLike(x.type));
  return first ? `const c10::OptionalDeviceGuard device_guard(at::device_of(${first.name}));` : null;
}

interface Emitted {
  wrapper: WrapperFn | null;
  fn: string;
}

/**
 * A registration's callee for kernels served by themselves (Note [Registering
 * function pointers]): the kernel, or a wrapper that checks devices and sets
 * a device guard first.
 */
class KernelEmitter {
  private readonly callees = new Map<string, string>();

  constructor(
    private readonly plan: Plan,
    private readonly dispatchKey: string,
  ) {}

  /** What to call to run kernel k (its guarded wrapper when there is one). */
  callee(k: KernelDecl): string {
    return this.callees.get(k.entry.name) ?? qualifiedKernel(this.plan, k);
  }

  emit(r: Registration): Emitted {
    const k = r.kernel;
    const name = wrapperName(this.dispatchKey, r.f);
    const body: string[] = [];
    const includes: string[] = [];
    if (this.plan.config.deviceGuard) {
      const check = deviceCheckLines(r.f, name);
      const guard = deviceGuardLine(r.f);
      if (check.length > 0) includes.push("<ATen/core/op_registration/adaption.h>");
      if (guard) includes.push("<ATen/DeviceGuard.h>", "<c10/core/DeviceGuard.h>");
      body.push(...check);
      if (guard) body.push(guard);
    }
    if (body.length === 0) {
      return { wrapper: null, fn: `static_cast<${k.sig.ptrType()}>(&${qualifiedKernel(this.plan, k)})` };
    }
    body.push(`return ${qualifiedKernel(this.plan, k)}(${k.sig.args.map((a) => a.name).join(", ")});`);
    this.callees.set(k.entry.name, name);
    return { wrapper: { name, signature: k.sig.decl(name), body, includes }, fn: `&${name}` };
  }
}

/**
 * The helpers derived overloads share (Note [Derived helpers defined once]):
 * copy_into_out/self, to_meta (Note [Meta copies]), the two boxed kernels.
 */
type Helper = "copy" | "meta" | "derivedOut" | "derivedFunctional";

/** The boxed kernels' headers (templates/cpp/DerivedOutKernel.cpp, DerivedFunctionalKernel.cpp). */
const BOXED_INCLUDES = [
  "<ATen/core/dispatch/Dispatcher.h>",
  "<ATen/core/stack.h>",
  "<memory>",
  "<mutex>",
  "<optional>",
  "<vector>",
];

/** Each helper's definition, in the order the defining file prints them. */
const HELPER_DEFS: readonly { readonly helper: Helper; readonly file: string; readonly includes: readonly string[] }[] =
  [
    {
      helper: "copy",
      file: "CopyInto.cpp",
      includes: ["<ATen/ops/_copy_from.h>", "<ATen/ops/_copy_from_and_resize.h>"],
    },
    { helper: "meta", file: "MetaCopies.cpp", includes: ["<ATen/EmptyTensor.h>"] },
    { helper: "derivedOut", file: "DerivedOutKernel.cpp", includes: BOXED_INCLUDES },
    {
      helper: "derivedFunctional",
      file: "DerivedFunctionalKernel.cpp",
      includes: [...BOXED_INCLUDES, "<ATen/ops/empty_strided.h>"],
    },
  ];

/**
 * The derived overloads' callees, as the plan's Derivation says (Note
 * [Derived wrappers]): a shared boxed kernel or a typed wrapper over the
 * kernel it derives from. Records which shared helpers they call.
 */
class DerivedEmitter {
  readonly helpers = new Set<Helper>();

  constructor(
    private readonly dispatchKey: string,
    private readonly callee: (k: KernelDecl) => string,
  ) {}

  emit(r: Registration, d: Derivation): Emitted {
    if (d.kind === "fromFunctional") {
      return d.wrapper === null
        ? this.derivedOut(r, d.from, d.checks)
        : this.fromFunctional(r, d.from, d.checks, d.wrapper);
    }
    return d.wrapper === null ? this.functionalFromOut(d.from) : this.inplaceFromOut(d.from, d.wrapper);
  }

  /**
   * Note [Derived out= overloads] (templates/cpp/DerivedOutKernel.cpp): one
   * boxed kernel for all, given the out dtype rule and, for a structured
   * overload, a MetaCheck: a plain function that calls its meta function with
   * the stack's arguments (no boxing templates per C++ type, unlike a
   * KernelFunction made from the meta function would instantiate).
   */
  private derivedOut(r: Registration, from: KernelDecl, checks: DerivedChecks): Emitted {
    // The boxed kernel copies into the outs, and makes meta copies of the arguments.
    this.uses("copy", "derivedOut", "meta");
    const n = from.entry.fn.func.name;
    let wrapper: WrapperFn | null = null;
    if (checks.meta) {
      const m = metaFunction(r.f, false);
      const name = wrapperName(this.dispatchKey, r.f, "meta");
      const args = m.args.map((a, i) => `meta_arg<${a.type.cpp()}>(s[${i}])`);
      wrapper = {
        name,
        signature: `void ${name}(torch::jit::Stack& s)`,
        body: [`${m.name}(${args.join(", ")});`],
        includes: [metaHeader(r.f)],
      };
    }
    const fn = `derived_out(c10::DispatchKey::${this.dispatchKey}, "aten::${printBaseOperatorName(n.name)}", "${n.overloadName}", ${outDtypeC(checks.outDtype)}, ${wrapper ? `&${wrapper.name}` : "nullptr"})`;
    return { wrapper, fn };
  }

  /** Note [Functional from out] (templates/cpp/DerivedFunctionalKernel.cpp). */
  private functionalFromOut(from: KernelDecl): Emitted {
    // The boxed kernel runs the Meta kernel on meta copies of the arguments.
    this.uses("derivedFunctional", "meta");
    const n = from.entry.fn.func.name;
    const fn = `derived_functional(c10::DispatchKey::${this.dispatchKey}, "aten::${printBaseOperatorName(n.name)}", "${n.overloadName}")`;
    return { wrapper: null, fn };
  }

  private fromFunctional(r: Registration, from: KernelDecl, checks: DerivedChecks, sig: DispatcherSignature): Emitted {
    this.uses("copy");
    const f = r.f;
    const have = new Set(sig.args.map((a) => a.name));
    const firstOut = f.func.arguments.out[0]?.name;
    const fromOut: Record<string, string> = firstOut
      ? {
          dtype: `${firstOut}.scalar_type()`,
          layout: `${firstOut}.layout()`,
          device: `${firstOut}.device()`,
          pin_memory: "::std::nullopt",
        }
      : {};
    const callArgs = from.sig.args.map((a) => {
      if (have.has(a.name)) return a.name;
      const e = fromOut[a.name];
      if (e === undefined) throw new Error(`cannot derive ${f.name} from ${from.entry.name}: no value for '${a.name}'`);
      return e;
    });
    const body = checks.meta ? this.metaCheck(f, sig) : [];
    body.push(`auto tmp = ${this.callee(from)}(${callArgs.join(", ")});`);
    body.push(...copyResults(f, sig, checks.outDtype));
    const includes = checks.meta ? [metaHeader(f)] : [];
    return { wrapper: { name: sig.name, signature: sig.decl(), body, includes }, fn: `&${sig.name}` };
  }

  /**
   * Eager's meta function of structured overload f on meta copies of the
   * wrapper's arguments (Note [Derived out dtype checks]); mutated tensors
   * are copied into locals, which the meta function takes by reference.
   */
  private metaCheck(f: NativeFunction, sig: DispatcherSignature): string[] {
    this.uses("meta");
    const meta = metaFunction(f, sig.flags.symint);
    const written = sig.args.filter((a) => isTensorLike(a.argument.type) && isWrite(a.argument));
    const arg = (a: (typeof sig.args)[number]) =>
      !isTensorLike(a.argument.type) ? a.name : isWrite(a.argument) ? `${a.name}_meta` : `to_meta(${a.name})`;
    return [
      ...written.map((a) => `auto ${a.name}_meta = to_meta(${a.name});`),
      `${meta.name}(${sig.args.map(arg).join(", ")});`,
    ];
  }

  private inplaceFromOut(from: KernelDecl, sig: DispatcherSignature): Emitted {
    this.uses("copy");
    const outArg = from.entry.fn.func.arguments.out[0]!.name;
    const callArgs = from.sig.args.map((a) => (a.name === outArg ? "tmp" : a.name));
    const body = [
      "at::Tensor tmp = at::empty({0}, self.options());",
      `${this.callee(from)}(${callArgs.join(", ")});`,
      "copy_into_self(tmp, self);",
      "return self;",
    ];
    return {
      wrapper: { name: sig.name, signature: sig.decl(), body, includes: ["<ATen/ops/empty.h>"] },
      fn: `&${sig.name}`,
    };
  }

  private uses(...helpers: readonly Helper[]): void {
    for (const h of helpers) this.helpers.add(h);
  }
}

/**
 * After `auto tmp = <functional kernel>(...)`: its results copied into f's
 * outputs and mutated arguments, and f's return. The functional's results,
 * in order, are f's own returns, then every mutated argument that f does not
 * return (torchgen FunctionSchema.signature()).
 */
function copyResults(f: NativeFunction, sig: DispatcherSignature, outDtype: OutDtype): string[] {
  const body: string[] = [];
  const fa = f.func.arguments;
  const self = fa.positional.filter((a) => a.name === "self");
  const post = fa.positional.filter((a) => a.name !== "self");
  const mutated = [...self, ...fa.out, ...post].filter(isWrite);
  const nReturns = f.func.returns.length;
  const extra = mutated.filter((a) => !f.func.returns.some((r) => sameAlias(a, r.annotation)));
  const total = nReturns + extra.length;
  const elem = (i: number) => (total === 1 ? "tmp" : `std::get<${i}>(tmp)`);
  const isOut = (a: Argument) => fa.out.includes(a);
  const copyInto = (src: string, a: Argument): string[] => {
    const copy = (from: string, to: string) =>
      isOut(a) ? `copy_into_out(${from}, ${to}, ${outDtypeC(outDtype)});` : `copy_into_self(${from}, ${to});`;
    if (a.type.kind === "list") {
      return [
        `TORCH_CHECK(${src}.size() == ${a.name}.size(), "${f.name}: expected ", ${src}.size(), " tensors in '${a.name}', got ", ${a.name}.size());`,
        `for (size_t i = 0; i < ${a.name}.size(); ++i) {`,
        `  ${copy(`${src}[i]`, `${a.name}[i]`)}`,
        "}",
      ];
    }
    return [copy(src, a.name)];
  };
  const retExprs: string[] = [];
  f.func.returns.forEach((ret, i) => {
    const target = mutated.find((a) => sameAlias(a, ret.annotation));
    if (target) {
      body.push(...copyInto(elem(i), target));
      retExprs.push(target.name);
    } else {
      retExprs.push(elem(i));
    }
  });
  extra.forEach((a, j) => {
    body.push(...copyInto(elem(nReturns + j), a));
  });
  if (nReturns === 1) body.push(`return ${retExprs[0]};`);
  else if (nReturns > 1) body.push(`return ${printCType(sig.returns)}(${retExprs.join(", ")});`);
  return body;
}

/** Whether `a` is the (annotated) input that return annotation `ann` names. */
function sameAlias(a: Argument, ann: Argument["annotation"]): boolean {
  return a.annotation !== null && ann !== null && annotationEquals(a.annotation, ann);
}

interface KeyBody {
  readonly key: KeyPlan;
  readonly helpers: ReadonlySet<Helper>;
  readonly wrappers: readonly WrapperFn[];
  readonly registrations: readonly { readonly op: string; readonly fn: string }[];
}

function emitKey(plan: Plan, key: KeyPlan): KeyBody {
  const kernels = new KernelEmitter(plan, key.dispatchKey);
  const derived = new DerivedEmitter(key.dispatchKey, (k) => kernels.callee(k));
  const wrappers: WrapperFn[] = [];
  const registrations: { op: string; fn: string }[] = [];
  const emitted = new Map<string, Emitted>();
  // Kernels first, so derived wrappers can call the guarded kernel wrappers.
  for (const r of key.registrations) if (r.derivation === null) emitted.set(r.op, kernels.emit(r));
  for (const r of key.registrations) if (r.derivation !== null) emitted.set(r.op, derived.emit(r, r.derivation));
  // Kernel wrappers before the derived wrappers that call them.
  for (const isDerived of [false, true]) {
    for (const r of key.registrations) {
      const w = emitted.get(r.op)!.wrapper;
      if (w && (r.derivation !== null) === isDerived) wrappers.push(w);
    }
  }
  for (const r of key.registrations) registrations.push({ op: r.op, fn: emitted.get(r.op)!.fn });
  return { key, helpers: derived.helpers, wrappers, registrations };
}

/**
 * The models of Register<Key>.cpp for the backend key and, when there are
 * autograd entries, Autograd<Key>: the backend key's file defines every
 * derived helper either file uses (Note [Derived helpers defined once]).
 */
export function registerModels(plan: Plan, banner: string): RegisterModel[] {
  const bodies = [emitKey(plan, plan.backend), ...(plan.autograd ? [emitKey(plan, plan.autograd)] : [])];
  const defined = HELPER_DEFS.filter((d) => bodies.some((b) => b.helpers.has(d.helper))).map((d) => ({
    source: cppSource(d.file).trimEnd(),
    includes: d.includes,
  }));
  return bodies.map((b, i) => registerModel(plan, b, i === 0 ? defined : [], banner));
}

function registerModel(plan: Plan, body: KeyBody, defs: readonly HelperDef[], banner: string): RegisterModel {
  const { key } = body;
  const usesHelpers = body.helpers.size > 0;
  const ns = `${plan.config.cppNamespace}::opgen_derived`;
  const helperBlocks =
    usesHelpers || defs.length > 0
      ? [
          {
            open: `namespace ${ns} {`,
            decls: derivedDecls(plan.config.backend).trimEnd(),
            defs,
            close: `} // namespace ${ns}`,
          },
        ]
      : [];
  const usings = usesHelpers ? [`using namespace ::${ns};`] : [];
  const notes = key.autograd ? [] : [...plan.skipped].sort().map(([op, why]) => `${op} is not derived: ${why}.`);
  return {
    dispatchKey: key.dispatchKey,
    header: banner,
    helperBlocks,
    usings,
    notes,
    wrappers: body.wrappers,
    registrations: body.registrations,
  };
}

/**
 * The declarations of the derived overloads' shared helpers
 * (templates/cpp/DerivedDecls.h), under the note that says why they are
 * declared in every registration file and defined in one.
 */
export function derivedDecls(backend: string): string {
  return new CppFile()
    .comment(
      "Note [Derived helpers defined once]: the helpers that derived overloads",
      `share are defined in one translation unit (Register${backend}.cpp) and`,
      "declared here, so a backend with autograd registrations does not compile",
      "them twice. The defining file sees these declarations too, so the compiler",
      "checks that both agree.",
    )
    .toString()
    .concat(cppSource("DerivedDecls.h"));
}

/** The include block's order (Note [Include order] in printer.ts): what gen has always printed. */
const INCLUDE_ORDER: IncludeOrder = [
  "<ATen/Tensor.h>",
  "<torch/library.h>",
  "<ATen/core/op_registration/adaption.h>",
  "<ATen/DeviceGuard.h>",
  "<c10/core/DeviceGuard.h>",
  "<ATen/ops/_copy_from.h>",
  "<ATen/ops/_copy_from_and_resize.h>",
  "<ATen/ops/empty.h>",
  ...BOXED_INCLUDES,
  "<ATen/EmptyTensor.h>",
  "<ATen/ops/empty_strided.h>",
  /_meta_dispatch\.h>$/,
  /^"/,
];

/** Register<Key>.cpp from its model. */
export function printRegister(m: RegisterModel, backend: string, headerName: string): string {
  const f = new CppFile().comment(
    m.header,
    "",
    `Registers the ${backend} kernels declared in ${headerName} on the`,
    `${m.dispatchKey} dispatch key. Kernels are registered as plain function`,
    "pointers; typed wrappers exist only where they add a device check/guard or",
    "derive an inplace/mutable overload; derived out= overloads (and functional",
    "ones under use_out_as_primary) share one boxed kernel.",
  );
  f.comment(...m.notes)
    .line()
    .comment("clang-format off")
    .line();
  // The kernels' declarations, and the types of every signature here.
  f.include("<ATen/Tensor.h>", `"${headerName}"`).includesHere({ order: INCLUDE_ORDER }).line();
  for (const b of m.helperBlocks) {
    f.line(b.open).line().lines([b.decls]);
    for (const d of b.defs)
      f.include(...d.includes)
        .line()
        .lines([d.source]);
    f.line().line(b.close).line();
  }
  f.line("namespace {").line();
  for (const u of m.usings) f.line(u).line();
  for (const w of m.wrappers) {
    f.include(...w.includes);
    f.line(`${w.signature} {`);
    for (const l of w.body) f.line(`  ${l}`);
    f.line("}").line();
  }
  f.include("<torch/library.h>").line(`TORCH_LIBRARY_IMPL(aten, ${m.dispatchKey}, m) {`);
  for (const r of m.registrations) f.line(`  m.impl("${r.op}", ${r.fn});`);
  return f.line("}").line().line("} // namespace").toString();
}
