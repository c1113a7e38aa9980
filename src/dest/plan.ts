/**
 * Decides, once, what every emitter prints: which kernels the backend class
 * declares and which aten overloads get registered on which dispatch key,
 * served by what. Header, registration files, manifest, stubs and the kernel
 * check all read this plan, so they cannot disagree.
 *
 * The rules are torchgen's gen_backend_stubs (RegisterDispatchKey.
 * gen_unstructured), with the places where torchgen crashes made to work:
 *
 * - An overload the YAML lists is served by its kernel,
 *   `class_name::<dispatcher name>[_symint]` (or, with `free_functions: true`,
 *   the free function `<cpp_namespace>::<dispatcher name>[_symint]`: Note
 *   [Kernel home] in src/backend/types.ts).
 * - An unlisted out=/inplace overload whose group's functional overload is
 *   listed is derived: it calls the functional kernel and copies the result
 *   into the outputs (torchgen gets_generated_out_inplace_wrapper; see
 *   register.ts for how: typed wrappers for inplace, one boxed kernel for out=).
 *   Note [Derived wrappers beyond torchgen]: torchgen asserts on mutable
 *   overloads (e.g. `_fused_moving_avg_obs_fq_helper`), on out= overloads
 *   returning `()` with several outs (`_cudnn_rnn_backward.out`) and on
 *   inplace overloads over tensor lists (`_foreach_add_.List`); we derive
 *   those too, copying each functional result into the argument it updates.
 * - With `use_out_as_primary: true` torchgen derives nothing; we derive the
 *   inplace overload from a listed out= kernel (into a temporary of self's
 *   dtype, then copied back) and the functional overload from its Meta
 *   kernel's shapes plus the out= kernel (Note [Functional from out]).
 * - `manual_kernel_registration` functions are declared but not registered.
 *
 * The plan also decides AutogradFunctions.cpp's contents: which `autograd:`
 * entries and `custom:` operators get a torch::autograd::Function, with what
 * backward (Note [Autograd entries are Functions] in autograd.ts), and the
 * custom operators' kernels.
 */

import { cppFlags, DispatcherSignature, dispatcherName, kernelSignature } from "../api/dispatcher.js";
import { type BackwardFormula, type CustomOp, functionProblem } from "../backend/custom.js";
import { autogradKey, type BackendConfig, type KernelHome, type OpEntry } from "../backend/types.js";
import { groupFunctions, hasSymInt, isTensorLike, schemaKind } from "../model/catalog.js";
import { callArguments } from "../model/schema.js";
import type {
  FunctionSchema,
  NativeFunction,
  NativeFunctionsGroup,
  OperatorCatalog,
  SchemaKind,
} from "../model/types.js";
import { assertNever } from "../util/errors.js";
import { cmp } from "../vocab.js";

export type ServedBy = "kernel" | "derived_out" | "derived_inplace" | "derived_functional" | "autograd";

/** A backend kernel: one static member of class_name, or one free function (Note [Kernel home]). */
export interface KernelDecl {
  /** The listed operator: its name, where the YAML lists it, its NativeFunction. */
  readonly entry: OpEntry;
  readonly sig: DispatcherSignature;
  /** `static <decl>;` (a free function: `<decl>;`) exactly as in the header. */
  readonly declaration: string;
  readonly symint: boolean;
  readonly autograd: boolean;
}

/**
 * Note [Derived wrappers]: how a derived overload is served is decided here,
 * once; register.ts prints what `wrapper` says. `null`: the overload is
 * registered as one boxed kernel that every such overload shares (out= from
 * a functional kernel, Note [Derived out= overloads]; functional from an out=
 * kernel, Note [Functional from out]). Otherwise a typed C++ wrapper with
 * that signature (named by wrapperName) calls `from`'s kernel and copies the
 * results: inplace and mutable overloads from a functional kernel, inplace
 * from an out= kernel. The wrapper takes c10::SymInt where the kernel it
 * calls does (`from.symint`) and the overload has SymInt arguments.
 */
export type Derivation =
  /** call the kernel of `from` (functional), copy results into f's outputs/mutated arguments */
  | {
      readonly kind: "fromFunctional";
      readonly from: KernelDecl;
      readonly checks: DerivedChecks;
      readonly wrapper: DispatcherSignature | null;
    }
  /** call the out= kernel `from` into temporaries / fresh outputs */
  | { readonly kind: "fromOut"; readonly from: KernelDecl; readonly wrapper: DispatcherSignature | null };

export interface Registration {
  /** Full operator name, e.g. `add.Tensor`. */
  readonly op: string;
  readonly f: NativeFunction;
  readonly kind: SchemaKind;
  readonly dispatchKey: string;
  readonly autograd: boolean;
  readonly servedBy: ServedBy;
  /** The kernel that runs (for derived overloads: the kernel they call). */
  readonly kernel: KernelDecl;
  readonly derivation: Derivation | null;
}

export interface KeyPlan {
  readonly dispatchKey: string;
  readonly autograd: boolean;
  readonly kernels: readonly KernelDecl[];
  /** Sorted by op name. */
  readonly registrations: readonly Registration[];
}

/** A `custom:` operator's kernel: declared in the header, registered on the backend key. */
export interface CustomKernel {
  readonly op: CustomOp;
  /** As the header declares it (Note [Kernel home]). */
  readonly declaration: string;
}

/**
 * A generated torch::autograd::Function, for an `autograd:` entry that can
 * have one or a `custom:` operator (Note [Autograd entries are Functions] in
 * autograd.ts).
 */
export interface AutogradFunction {
  /** The qualified operator (`aten::gelu`, `ref::fused_bias_gelu`) and overload. */
  readonly ns: string;
  readonly name: string;
  readonly overload: string;
  readonly func: FunctionSchema;
  /** The custom operator whose kernel is the backward (Note [Backward convention] in src/backend/custom.ts), or null. */
  readonly backward: CustomOp | null;
  /** The backward as formulas (Note [Backward formulas] in src/backend/custom.ts), or null. */
  readonly formula: BackwardFormula | null;
  /** Returns derivatives.yaml's output_differentiability marks False (indexes). */
  readonly nonDifferentiable: readonly number[];
}

export interface Plan {
  readonly config: BackendConfig;
  /**
   * What kernel names are qualified with (Note [Kernel home]):
   * `at::mychip::MychipNativeFunctions`, or `at::mychip` for free functions.
   */
  readonly kernelScope: string;
  readonly backend: KeyPlan;
  readonly autograd: KeyPlan | null;
  /**
   * Header lines: backend declarations sorted and deduplicated, then autograd
   * ones (torchgen gen_dispatchkey_nativefunc_headers).
   */
  readonly declarations: readonly string[];
  /** Overloads torchgen would derive but we cannot (explained), by op name. */
  readonly skipped: ReadonlyMap<string, string>;
  /**
   * `runtime:` overloads, sorted by name: registered by the project's runtime,
   * not by gen; the manifest and coverage list them (Note [Runtime operators]).
   */
  readonly runtime: readonly NativeFunction[];
  /** The torch the plan is for (the catalog's version, local suffix kept). */
  readonly torchVersion: string;
  /** How many overloads this torch tags `core` (the manifest's core_total). */
  readonly coreTotal: number;
  /** The custom operators' kernels, in `custom:` order. */
  readonly customKernels: readonly CustomKernel[];
  /**
   * The Functions AutogradFunctions.cpp defines: `autograd:` entries that get
   * one, in their order, then every custom operator, in its.
   */
  readonly functions: readonly AutogradFunction[];
  /**
   * The forward each custom operator is the backward of, by the custom
   * operator's name: a custom operator's `backward:`, then an `autograd:`
   * entry's (which wins where both name one). ops.py fake-registers such a
   * backward as tensors like its forward's Tensor arguments.
   */
  readonly backwardForwards: ReadonlyMap<string, FunctionSchema>;
}

function backwardForwards(config: BackendConfig): Map<string, FunctionSchema> {
  const byKernel = new Map(config.custom.map((o) => [o.kernel, o]));
  const forwards = new Map<string, FunctionSchema>();
  for (const o of config.custom) if (o.backward) forwards.set(byKernel.get(o.backward)!.name, o.func);
  for (const e of config.autograd) {
    const bk = config.autogradBackward.get(e.name) ?? null;
    if (bk) forwards.set(byKernel.get(bk)!.name, e.fn.func);
  }
  return forwards;
}

function kernelDecl(entry: OpEntry, home: KernelHome, symintNames: ReadonlySet<string>, autograd: boolean): KernelDecl {
  const f = entry.fn;
  const symint = symintNames.has(entry.name) && hasSymInt(f.func);
  const sig = kernelSignature(f, symint);
  return { entry, sig, declaration: declaration(home, sig), symint, autograd };
}

/** The C++ name of the wrapper registered for f on `dispatchKey` (`prefix` "meta": its meta check). */
export function wrapperName(dispatchKey: string, f: NativeFunction, prefix = "wrapper"): string {
  return `${prefix}_${dispatchKey}_${f.func.name.overloadName}_${dispatcherName(f.func)}`;
}

/** A derived overload's typed wrapper (Note [Derived wrappers]). */
function wrapperSignature(dispatchKey: string, f: NativeFunction, from: KernelDecl): DispatcherSignature {
  const flags = cppFlags(f, from.symint && hasSymInt(f.func));
  return new DispatcherSignature(f.func, flags, wrapperName(dispatchKey, f));
}

/** The declaration form of Note [Kernel home], for every kernel the header declares. */
function declaration(home: KernelHome, sig: DispatcherSignature): string {
  switch (home.kind) {
    case "class":
      return `static ${sig.decl()};`;
    case "free":
      return `${sig.decl()};`;
    default:
      return assertNever(home, "kernel home");
  }
}

function planKey(
  entries: readonly OpEntry[],
  config: BackendConfig,
  catalog: OperatorCatalog,
  dispatchKey: string,
  autogradOps: ReadonlySet<string>,
  skipped: Map<string, string>,
): KeyPlan {
  const autograd = dispatchKey !== config.backend;
  const symintNames = new Set(config.symint.map((e) => e.name));
  const kernels = new Map<string, KernelDecl>();
  for (const e of entries)
    if (!kernels.has(e.name))
      kernels.set(e.name, kernelDecl(e, config.kernelHome, symintNames, autogradOps.has(e.name)));

  const regs: Registration[] = [];
  const add = (f: NativeFunction, servedBy: ServedBy, kernel: KernelDecl, derivation: Derivation | null) => {
    if (f.manualKernelRegistration) return;
    regs.push({
      op: f.name,
      f,
      kind: schemaKind(f.func),
      dispatchKey,
      autograd: kernel.autograd,
      servedBy: kernel.autograd && servedBy === "kernel" ? "autograd" : servedBy,
      kernel,
      derivation,
    });
  };

  // The runtime serves these (Note [Runtime operators] in src/backend/load.ts).
  const runtime = new Set(config.runtime.map((e) => e.name));
  const seenGroups = new Set<NativeFunctionsGroup>();
  for (const k of kernels.values()) {
    add(k.entry.fn, "kernel", k, null);
    const g = catalog.groupOf.get(k.entry.name);
    if (!g || seenGroups.has(g)) continue;
    seenGroups.add(g);
    deriveInGroup(g, kernels, runtime, config, dispatchKey, add, skipped);
  }
  regs.sort((a, b) => cmp(a.op, b.op));
  return { dispatchKey, autograd, kernels: [...kernels.values()], registrations: regs };
}

function deriveInGroup(
  g: NativeFunctionsGroup,
  kernels: ReadonlyMap<string, KernelDecl>,
  runtime: ReadonlySet<string>,
  config: BackendConfig,
  dispatchKey: string,
  add: (f: NativeFunction, servedBy: ServedBy, kernel: KernelDecl, derivation: Derivation | null) => void,
  skipped: Map<string, string>,
): void {
  const functional = kernels.get(g.functional.name);
  const out = kernels.get(g.out.name);
  for (const f of groupFunctions(g)) {
    if (kernels.has(f.name) || runtime.has(f.name)) continue;
    const kind = schemaKind(f.func);
    if (!config.useOutAsPrimary) {
      if (functional && kind !== "functional") {
        add(f, kind === "out" ? "derived_out" : "derived_inplace", functional, {
          kind: "fromFunctional",
          from: functional,
          checks: derivedChecks(f),
          wrapper: kind === "out" ? null : wrapperSignature(dispatchKey, f, functional),
        });
      }
    } else if (out && (kind === "inplace" || kind === "functional")) {
      const why = fromOutProblem(f, out);
      if (why === null) {
        add(f, kind === "inplace" ? "derived_inplace" : "derived_functional", out, {
          kind: "fromOut",
          from: out,
          wrapper: kind === "inplace" ? wrapperSignature(dispatchKey, f, out) : null,
        });
      } else {
        skipped.set(f.name, why);
      }
    }
  }
}

/**
 * Note [Derived out dtype checks]: eager CPU has no one rule for the dtype of
 * an out= tensor, and a derived overload checks it the way the overload's own
 * eager kernel does, which native_functions.yaml mostly tells:
 *
 * - A structured overload (`structured: True` out=, `structured_delegate`
 *   inplace) checks everything in its meta function, before any compute:
 *   TensorIterator's castable-or-equal rules, a reduction's exact result
 *   dtype, shapes. We run that very function, `at::meta::<name>`, on meta
 *   copies of the arguments before the kernel (Note [Meta copies]), so the
 *   checks, their messages and their order (out dtype before the kernel's own
 *   refusals) are eager's. The Meta dispatch key is no substitute: importing
 *   torch registers Python meta functions over many C++ ones, with other rules.
 *   Not where the meta function reads tensor data: an index list (`Tensor?[]`,
 *   index.Tensor_out) may hold boolean masks, which it expands with nonzero(),
 *   and a meta tensor has no values to count.
 * - An out= overload made by `autogen:` is torchgen's composite kernel: the
 *   functional runs first, then `copy_arg` requires the out dtype to equal
 *   the result's ("Expected out tensor to have dtype ...").
 * - Any other out= kernel is hand-written; most cast to the out like
 *   TensorIterator (c10::canCast), the ones in EQUAL_OUT_DTYPE refuse any
 *   dtype but the result's. Nothing in the YAML says which (abs.out and
 *   sin.out look alike there, but abs_out builds TensorIterator::unary_op,
 *   which checks all-same-dtype), so that one table says it, also for the
 *   structured overloads whose meta function we cannot run.
 *
 * Other inplace and mutable overloads keep Note [Derived copies]'s checks.
 */
export interface DerivedChecks {
  /** Run `at::meta::<name>` on meta copies of the arguments before the kernel. */
  readonly meta: boolean;
  /** What an out= tensor's dtype must be, checked when the result is copied into it. */
  readonly outDtype: OutDtype;
}

/**
 * `castable`: c10::canCast from the result's ("result type Float can't be cast
 * to the desired output type Long"); `equal`: the result's, worded as
 * torchgen's copy_arg and structured kernels' resize_out; `equal_iterator`:
 * the result's, worded as TensorIterator's all-same-dtype check ("Found dtype
 * Double but expected Float").
 */
export type OutDtype = "castable" | "equal" | "equal_iterator";

/**
 * Out= overloads without a meta check (unstructured and not autogen'd, or
 * with an index list) whose eager CPU kernel refuses an out dtype the result
 * could be cast to (Note [Derived out dtype checks]).
 * Found by calling every such overload that has a functional sibling in torch
 * 2.13 on inputs made from its schema, with each out in turn of several
 * castable dtypes (overloads the schema alone cannot make inputs for are not
 * covered; CompositeImplicitAutograd ones are never derived); the wording is
 * eager's where eager words it as TensorIterator does, else `equal`.
 */
const EQUAL_OUT_DTYPE: ReadonlyMap<string, OutDtype> = new Map<string, OutDtype>([
  ["_native_batch_norm_legit.no_stats_out", "equal"],
  ["abs.out", "equal_iterator"],
  ["binary_cross_entropy_backward.grad_input", "equal_iterator"],
  ["conj_physical.out", "equal_iterator"],
  ["cummax.out", "equal"],
  ["cummin.out", "equal"],
  ["frexp.Tensor_out", "equal"],
  ["hardswish.out", "equal_iterator"],
  ["hardtanh.out", "equal_iterator"],
  ["histc.out", "equal"],
  ["histogram.bin_ct_out", "equal"],
  ["index.Tensor_out", "equal"],
  ["huber_loss_backward.out", "equal_iterator"],
  ["kthvalue.values", "equal"],
  ["linear.out", "equal"],
  ["log_sigmoid_backward.grad_input", "equal_iterator"],
  ["log_sigmoid_forward.output", "equal"],
  ["log_softmax.int_out", "equal"],
  ["logcumsumexp.out", "equal"],
  ["max_pool3d_with_indices.out", "equal"],
  ["reflection_pad2d.out", "equal"],
  ["median.dim_values", "equal"],
  ["mode.values", "equal"],
  ["nan_to_num.out", "equal"],
  ["nanmedian.dim_values", "equal"],
  ["narrow_copy.out", "equal"],
  ["nonzero.out", "equal"],
  ["nonzero_static.out", "equal"],
  ["searchsorted.Tensor_out", "equal"],
  ["soft_margin_loss.out", "equal_iterator"],
  ["softmax.int_out", "equal"],
  ["sort.values", "equal"],
  ["take.out", "equal"],
]);

export function derivedChecks(f: NativeFunction): DerivedChecks {
  const indexList = callArguments(f.func).some(
    (x) => x.type.kind === "list" && x.type.elem.kind === "optional" && isTensorLike(x.type.elem),
  );
  switch (schemaKind(f.func)) {
    case "out":
      if (f.structured && !indexList) return { meta: true, outDtype: "castable" };
      if (f.autogenerated) return { meta: false, outDtype: "equal" };
      return { meta: false, outDtype: EQUAL_OUT_DTYPE.get(f.name) ?? "castable" };
    case "inplace":
      return { meta: f.structuredDelegate !== null && !indexList, outDtype: "castable" };
    default:
      return { meta: false, outDtype: "castable" };
  }
}

/**
 * Note [Functional from out]: an inplace overload is derived from an out=
 * kernel into a temporary with self's options (an inplace result always has
 * self's dtype), then copied back. A functional overload is derived by one
 * boxed kernel that asks the operator's Meta kernel for the result's sizes,
 * strides and dtype, allocates the outputs and calls the out= kernel
 * (templates/cpp/DerivedFunctionalKernel.cpp); that needs tensor (or tensor
 * list) returns, one out= argument per return, and a tensor argument or a
 * `device` argument to say where the result lives.
 */
export function fromOutProblem(f: NativeFunction, out: KernelDecl): string | null {
  const isTensor = (t: { kind: string; name?: string }) => t.kind === "base" && t.name === "Tensor";
  if (schemaKind(f.func) === "inplace") {
    const self = f.func.arguments.positional.find((a) => a.name === "self");
    if (!self || !isTensor(self.type)) return "self is not a single Tensor";
    const outs = out.entry.fn.func.arguments.out;
    if (outs.length !== 1 || !isTensor(outs[0]!.type)) return "the out= overload does not have exactly one Tensor out";
    return null;
  }
  const outs = out.entry.fn.func.arguments.out;
  if (f.func.returns.length === 0 || f.func.returns.length !== outs.length) {
    return "its returns do not match the out= arguments one to one";
  }
  const tensorish = (t: NativeFunction["func"]["returns"][number]["type"]) =>
    isTensor(t) || (t.kind === "list" && isTensor(t.elem));
  if (!f.func.returns.every((r) => tensorish(r.type) && r.annotation === null)) return "a return is not a fresh Tensor";
  const args = callArguments(f.func);
  if (!args.some((a) => a.name === "device" || isTensorLike(a.type)))
    return "no argument says which device the result is on";
  return null;
}

function kernelScope(config: BackendConfig): string {
  const home = config.kernelHome;
  switch (home.kind) {
    case "class":
      return `${config.cppNamespace}::${home.className}`;
    case "free":
      return config.cppNamespace;
    default:
      return assertNever(home, "kernel home");
  }
}

/** The `autograd:` entries that get a Function (Note [Autograd entries are Functions] in autograd.ts). */
function wrappedAutograd(config: BackendConfig): ReadonlySet<string> {
  return new Set(
    config.autograd
      .filter((e) => config.autogradBackward.has(e.name) && functionProblem(e.fn) === null)
      .map((e) => e.name),
  );
}

/** The signature flags of custom operators and Functions: int64_t for SymInt, plain references. */
export const NO_FLAGS = { symint: false, constRefForMutable: false, iListRef: false } as const;

function customKernel(config: BackendConfig, op: CustomOp): CustomKernel {
  return { op, declaration: declaration(config.kernelHome, new DispatcherSignature(op.func, NO_FLAGS, op.kernel)) };
}

/** A custom operator's name and overload: `fused_add.Tensor` -> fused_add, Tensor. */
function splitName(name: string): { name: string; overload: string } {
  const dot = name.indexOf(".");
  return dot < 0 ? { name, overload: "" } : { name: name.slice(0, dot), overload: name.slice(dot + 1) };
}

function autogradFunctions(
  config: BackendConfig,
  catalog: OperatorCatalog,
  wrapped: ReadonlySet<string>,
): AutogradFunction[] {
  const byKernel = new Map(config.custom.map((o) => [o.kernel, o]));
  const backwardOp = (kernel: string | null | undefined) => (kernel == null ? null : byKernel.get(kernel)!);
  const fns: AutogradFunction[] = [];
  for (const e of config.autograd) {
    if (!wrapped.has(e.name)) continue;
    // derivatives.yaml is read only when an entry gets a Function.
    const flags = catalog.derivatives.get(e.name)?.outputDifferentiability ?? null;
    fns.push({
      ns: "aten",
      name: e.fn.func.name.name.base,
      overload: e.fn.func.name.overloadName,
      func: e.fn.func,
      backward: backwardOp(config.autogradBackward.get(e.name)),
      formula: config.autogradFormula.get(e.name) ?? null,
      nonDifferentiable: (flags ?? []).flatMap((d, i) => (d ? [] : [i])),
    });
  }
  for (const o of config.custom) {
    fns.push({
      ns: config.device,
      ...splitName(o.name),
      func: o.func,
      backward: backwardOp(o.backward),
      formula: o.formula,
      nonDifferentiable: [],
    });
  }
  return fns;
}

/** Every kernel the plan declares: the backend key's, then autograd's. */
export function kernelsOf(plan: Plan): KernelDecl[] {
  return [...plan.backend.kernels, ...(plan.autograd?.kernels ?? [])];
}

export function buildPlan(config: BackendConfig, catalog: OperatorCatalog): Plan {
  const skipped = new Map<string, string>();
  // Autograd entries that get a Function have their kernels on the backend
  // key (Note [Autograd entries are Functions] in autograd.ts).
  const wrapped = wrappedAutograd(config);
  const backendEntries = [
    ...config.supported,
    ...config.fullCodegen,
    ...config.autograd.filter((e) => wrapped.has(e.name)),
  ];
  const backend = planKey(backendEntries, config, catalog, config.backend, wrapped, skipped);
  const direct = config.autograd.filter((e) => !wrapped.has(e.name));
  const all = new Set(direct.map((e) => e.name));
  const autograd =
    direct.length > 0 ? planKey(direct, config, catalog, autogradKey(config.backend), all, skipped) : null;
  // Default sort compares UTF-16 code units, like Python's sorted() on these ASCII strings.
  const uniqSorted = (xs: readonly KernelDecl[]) => [...new Set(xs.map((k) => k.declaration))].sort();
  const customKernels = config.custom.map((o) => customKernel(config, o));
  const declarations = [
    ...uniqSorted(backend.kernels.filter((k) => !k.autograd)),
    ...uniqSorted([...backend.kernels.filter((k) => k.autograd), ...(autograd?.kernels ?? [])]),
    ...[...new Set(customKernels.map((k) => k.declaration))].sort(),
  ];
  const runtime = config.runtime.map((e) => e.fn).sort((a, b) => cmp(a.name, b.name));
  const coreTotal = catalog.coreNames().length;
  return {
    config,
    kernelScope: kernelScope(config),
    backend,
    autograd,
    declarations,
    skipped,
    runtime,
    torchVersion: catalog.torchVersion,
    coreTotal,
    customKernels,
    functions: autogradFunctions(config, catalog, wrapped),
    backwardForwards: backwardForwards(config),
  };
}
