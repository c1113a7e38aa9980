/**
 * Translates native_functions.yaml entries into NativeFunction objects, the
 * way torchgen's NativeFunction.from_yaml reads them (every key it reads, with
 * its defaults), then adds the operators torchgen generates itself
 * (native_function_generation.py: the `autogen:` out=/functional variants)
 * and groups functional/inplace/mutable/out variants as
 * get_grouped_native_functions does.
 *
 * Note [Autogen'd operators]: torchgen does not create operators from the
 * `autogen:` list; it derives which variants are missing from the schemas of
 * each signature group and uses `autogen:` only as a switch (an out= variant is
 * made only when a name in the source entry's autogen list contains "out") and
 * as a cross-check. We follow the derivation, so the schemas we produce are
 * the ones torch registers (an integration test compares them with
 * torch._C._jit_get_all_schemas()).
 *
 * Errors in the file are collected (Note [Diagnostics]) and thrown together.
 */
import { type Diagnostic, type SourceLoc, UserError } from "../util/errors.js";
import {
  flatAll,
  hasSymInt,
  isTensorLike,
  operatorNameString,
  parseOperatorName,
  parseSchema,
  printBaseOperatorName,
  printSchema,
  SchemaParseError,
  schemaKind,
  selfArgument,
  signature,
  signatureKey,
  unambiguousName,
} from "./schema.js";
import type {
  Argument,
  DeviceCheckType,
  FunctionSchema,
  NativeFunction,
  NativeFunctionsGroup,
  OperatorName,
  Return,
  SchemaKind,
  YamlLoc,
} from "./types.js";
import { readYamlList, type YamlEntry, type YamlValue } from "./yamlreader.js";

// Keys torchgen accepts but that carry nothing we generate from.
const IGNORED_KEYS: ReadonlySet<string> = new Set(["precomputed", "ufunc_inner_loop"]);

// torchgen UFUNC_DISPATCH_KEYS: ufunc_inner_loop implies kernels for these.
const UFUNC_DISPATCH_KEYS = ["CPU", "CUDA"] as const;

const KNOWN_KEYS: ReadonlySet<string> = new Set([
  "func",
  "variants",
  "tags",
  "dispatch",
  "structured",
  "structured_delegate",
  "structured_inherits",
  "autogen",
  "device_guard",
  "device_check",
  "manual_kernel_registration",
  "manual_cpp_binding",
  "python_module",
  "category_override",
  "cpp_no_default_args",
  "use_const_ref_for_mutable_tensors",
  ...IGNORED_KEYS,
]);

export interface ParsedNativeFunctions {
  /** Entries in file order, then the generated operators (torchgen's order). */
  readonly functions: readonly NativeFunction[];
  /** torchgen get_grouped_native_functions(functions), same order. */
  readonly groups: readonly (NativeFunctionsGroup | NativeFunction)[];
}

/**
 * Parses the text of native_functions.yaml into NativeFunctions, adds the
 * generated ones and groups them. `validTags` comes from tags.yaml; an empty
 * set skips tag validation.
 */
export function parseNativeFunctionsYaml(
  text: string,
  file: string,
  validTags: ReadonlySet<string>,
): ParsedNativeFunctions {
  const entries = readYamlList(text, file);
  const diags: Diagnostic[] = [];
  const fns: NativeFunction[] = [];
  for (const e of entries) {
    const f = fromYaml(e, file, validTags, diags);
    if (f) fns.push(f);
  }
  if (diags.length > 0) throw UserError.fromDiagnostics(diags);
  // A generated operator has the signature of the group it was made for, so
  // one pre-grouping serves both generation and grouping (torchgen groups
  // twice; the integration test checks that regrouping gives the same).
  const pre = preGroup(fns);
  const functions = generateInto(fns, pre);
  return { functions, groups: flattenGroups(pre) };
}

/** The functions of native_functions.yaml, then the generated ones. */
export function parseNativeFunctions(text: string, file: string, validTags: ReadonlySet<string>): NativeFunction[] {
  return [...parseNativeFunctionsYaml(text, file, validTags).functions];
}

/**
 * Typed access to one entry's keys; problems become Diagnostics pointing at
 * the value of the key (plus an offset inside it), or at the key itself.
 * (A class rather than per-entry closures: this runs for every entry on the
 * catalog's cold path.)
 */
class EntryReader {
  constructor(
    readonly e: YamlEntry,
    readonly file: string,
    readonly diags: Diagnostic[],
  ) {}

  at(key: string, colOffset: number | "key"): SourceLoc {
    const k = this.e.keys[key];
    if (!k) return { file: this.file, line: this.e.line, col: 1 };
    if (colOffset === "key") return { file: this.file, line: k.line, col: k.col };
    return { file: this.file, line: k.line, col: (k.valueCol || k.col) + colOffset };
  }

  err(key: string, message: string, colOffset: number | "key" = 0): null {
    this.diags.push({ severity: "error", loc: this.at(key, colOffset), message });
    return null;
  }

  str(key: string): string | null {
    const x = this.e.value[key];
    if (x === undefined || x === null) return null;
    if (typeof x !== "string") return this.err(key, `'${key}' must be a string, got ${JSON.stringify(x)}`);
    return x;
  }

  bool(key: string, dflt: boolean): boolean {
    const x = this.e.value[key];
    if (x === undefined) return dflt;
    if (typeof x !== "boolean") {
      this.err(key, `'${key}' must be True or False, got ${JSON.stringify(x)}`);
      return dflt;
    }
    return x;
  }
}

/** One entry -> a NativeFunction, or null after pushing its problems onto `diags`. */
export function fromYaml(
  e: YamlEntry,
  file: string,
  validTags: ReadonlySet<string>,
  diags: Diagnostic[],
): NativeFunction | null {
  const v = e.value;
  const loc: YamlLoc = { file, line: e.line };
  const r = new EntryReader(e, file, diags);

  for (const key of Object.keys(v)) {
    if (!KNOWN_KEYS.has(key)) r.err(key, `unknown key '${key}' in a native_functions.yaml entry`, "key");
  }
  const funcText = r.str("func");
  if (funcText === null) {
    if (v.func === undefined)
      diags.push({ severity: "error", loc: { ...loc, col: 1 }, message: "entry has no 'func:'" });
    return null;
  }
  let func: FunctionSchema;
  try {
    func = parseSchema(funcText);
  } catch (x) {
    if (x instanceof SchemaParseError) return r.err("func", x.reason, x.col - 1);
    throw x;
  }
  let kind: SchemaKind;
  try {
    kind = schemaKind(func);
  } catch (x) {
    if (x instanceof SchemaParseError) return r.err("func", x.reason);
    throw x;
  }

  const variantsText = r.str("variants") ?? "function";
  const variants: ("function" | "method")[] = [];
  for (const part of variantsText.split(", ")) {
    if (part === "function" || part === "method") {
      if (!variants.includes(part)) variants.push(part);
    } else r.err("variants", `illegal variant '${part}'; expected 'function' and/or 'method'`);
  }

  const tagsRaw = v.tags;
  const tags: string[] = [];
  if (tagsRaw !== undefined && tagsRaw !== null) {
    const list = typeof tagsRaw === "string" ? [tagsRaw] : Array.isArray(tagsRaw) ? tagsRaw : null;
    if (list === null) r.err("tags", "'tags' must be a tag or a list of tags");
    else
      for (const t of list) {
        if (typeof t !== "string") r.err("tags", `tag ${JSON.stringify(t)} is not a string`);
        else if (validTags.size > 0 && !validTags.has(t)) r.err("tags", `illegal tag '${t}' (not in tags.yaml)`);
        else if (!tags.includes(t)) tags.push(t);
      }
  }

  const manualKernelRegistration = r.bool("manual_kernel_registration", false);
  const structured = r.bool("structured", false);
  const delegateText = r.str("structured_delegate");
  let structuredDelegate: OperatorName | null = null;
  if (delegateText !== null) {
    try {
      structuredDelegate = parseOperatorName(delegateText);
    } catch (x) {
      if (x instanceof SchemaParseError) r.err("structured_delegate", x.reason, x.col - 1);
      else throw x;
    }
  }

  const dispatch: Record<string, string> = {};
  const rawDispatch = v.dispatch;
  if (rawDispatch !== undefined && rawDispatch !== null) {
    if (typeof rawDispatch !== "object" || Array.isArray(rawDispatch)) {
      r.err("dispatch", "'dispatch' must be a mapping of dispatch keys to kernel names");
    } else {
      if (manualKernelRegistration) r.err("dispatch", "cannot specify both manual_kernel_registration and dispatch");
      for (const [ks, kernel] of Object.entries(rawDispatch as Record<string, YamlValue>)) {
        if (typeof kernel !== "string") {
          r.err("dispatch", `kernel for '${ks}' must be a string`);
          continue;
        }
        for (const k of ks.split(",")) dispatch[k.trim()] = kernel;
      }
    }
  }
  const dispatchKeys = new Set(Object.keys(dispatch));
  const ufunc = v.ufunc_inner_loop;
  if (ufunc !== undefined && ufunc !== null) for (const k of UFUNC_DISPATCH_KEYS) dispatchKeys.add(k);
  // torchgen: no dispatch table and not structured means CompositeImplicitAutograd.
  if ((rawDispatch === undefined || rawDispatch === null) && !structured && structuredDelegate === null) {
    dispatchKeys.add("CompositeImplicitAutograd");
  }
  const onlyImplicit =
    dispatchKeys.size > 0 &&
    [...dispatchKeys].every((k) => k === "CompositeImplicitAutograd" || k === "CompositeImplicitAutogradNestedTensor");

  const autogenText = r.str("autogen") ?? "";
  const autogen: OperatorName[] = [];
  if (autogenText !== "") {
    let offset = 0;
    for (const part of autogenText.split(", ")) {
      try {
        autogen.push(parseOperatorName(part));
      } catch (x) {
        if (x instanceof SchemaParseError) r.err("autogen", x.reason, offset + x.col - 1);
        else throw x;
      }
      offset += part.length + 2;
    }
  }

  const deviceCheckText = r.str("device_check");
  let deviceCheck: DeviceCheckType = "ExactSame";
  if (deviceCheckText !== null) {
    if (deviceCheckText === "ExactSame" || deviceCheckText === "NoCheck") deviceCheck = deviceCheckText;
    else r.err("device_check", `illegal device_check '${deviceCheckText}'; expected ExactSame or NoCheck`);
  }

  const cppNoDefault = v.cpp_no_default_args;
  const cppNoDefaultArgs: string[] = [];
  if (cppNoDefault !== undefined && cppNoDefault !== null) {
    if (!Array.isArray(cppNoDefault)) r.err("cpp_no_default_args", "'cpp_no_default_args' must be a list");
    else for (const a of cppNoDefault) if (typeof a === "string") cppNoDefaultArgs.push(a);
  }

  const pythonModule = r.str("python_module");
  if (pythonModule !== null && variants.includes("method"))
    r.err("python_module", "functions in modules cannot be methods");

  return {
    name: operatorNameString(func.name),
    func,
    funcText,
    loc,
    variants,
    tags,
    allTags: impliedTags(tags, func, kind, validTags),
    dispatch,
    structured,
    structuredDelegate,
    structuredInherits: r.str("structured_inherits"),
    autogen,
    autogenerated: false,
    deviceGuard: r.bool("device_guard", true),
    deviceCheck,
    manualKernelRegistration,
    manualCppBinding: r.bool("manual_cpp_binding", false),
    pythonModule,
    categoryOverride: r.str("category_override"),
    cppNoDefaultArgs,
    useConstRefForMutableTensors: r.bool("use_const_ref_for_mutable_tensors", false),
    hasCompositeImplicitAutogradKernel: dispatchKeys.has("CompositeImplicitAutograd"),
    hasCompositeImplicitAutogradNestedTensorKernel: dispatchKeys.has("CompositeImplicitAutogradNestedTensor"),
    hasCompositeExplicitAutogradKernel: dispatchKeys.has("CompositeExplicitAutograd"),
    hasCompositeExplicitAutogradNonFunctionalKernel: dispatchKeys.has("CompositeExplicitAutogradNonFunctional"),
    isAbstract: structuredDelegate !== null || !onlyImplicit,
  };
}

/** The tags torchgen adds on its own: pt2_compliant_tag for aten ops, out, inplace. */
function impliedTags(
  tags: readonly string[],
  func: FunctionSchema,
  kind: SchemaKind,
  validTags: ReadonlySet<string>,
): string[] {
  const all = [...tags];
  const add = (t: string) => {
    if ((validTags.size === 0 || validTags.has(t)) && !all.includes(t)) all.push(t);
  };
  add("pt2_compliant_tag");
  if (func.arguments.out.length > 0) add("out");
  if (kind === "inplace") add("inplace");
  return all.sort();
}

// ---------------------------------------------------------------------------
// Generated operators (torchgen native_function_generation.py)

// From native_function_generation.py: an inplace op whose schema cannot be
// grouped, so torchgen generates nothing for it.
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: ReadonlySet<string> = new Set(["polygamma_"]);

/** torchgen pre_group_native_functions: signature key -> kind -> function, in first-seen order. */
export function preGroup(fns: readonly NativeFunction[]): Map<string, Map<SchemaKind, NativeFunction>> {
  const groups = new Map<string, Map<SchemaKind, NativeFunction>>();
  for (const f of fns) {
    const key = signatureKey(f.func);
    let d = groups.get(key);
    if (!d) {
      d = new Map();
      groups.set(key, d);
    }
    const kind = schemaKind(f.func);
    const prev = d.get(kind);
    if (prev) {
      throw new UserError(
        `${f.loc.file}:${f.loc.line}:1: duplicate ${kind} variant for signature ${key} (also ${prev.name} at line ${prev.loc.line})`,
      );
    }
    d.set(kind, f);
  }
  return groups;
}

/** torchgen NativeFunction.is_view_op. */
export function isViewOp(f: NativeFunction): boolean {
  for (const r of f.func.returns) if (r.annotation !== null && !r.annotation.isWrite) return true;
  if (f.tags.includes("inplace_view") && f.name !== "resize_" && f.name !== "resize_as_") return true;
  const a = f.func.arguments;
  for (const list of [a.positional, a.kwargOnly, a.out]) {
    for (const x of list) if (x.annotation?.aliasSetAfter.includes("*")) return true;
  }
  return false;
}

/** Returns `fns` followed by the operators torchgen generates (Note [Autogen'd operators]). */
export function addGeneratedNativeFunctions(fns: readonly NativeFunction[]): NativeFunction[] {
  return generateInto(fns, preGroup(fns));
}

/** torchgen add_generated_native_functions; also adds each generated function to its group in `pre`. */
function generateInto(
  fns: readonly NativeFunction[],
  pre: Map<string, Map<SchemaKind, NativeFunction>>,
): NativeFunction[] {
  const rs = [...fns];
  for (const d of pre.values()) {
    const g = generateForGroup(d);
    if (g !== null) rs.push(...g);
  }
  return rs;
}

/**
 * torchgen add_generated_native_functions for one signature group `d`: the
 * operators it generates (out= first, then functional; null for none), also
 * added to `d`. Depends on nothing outside `d`, so groups can be completed
 * one at a time (the lazy catalog, lazy.ts).
 */
export function generateForGroup(d: Map<SchemaKind, NativeFunction>): NativeFunction[] | null {
  const hasFunctional = d.has("functional");
  const hasInplace = d.has("inplace");
  const hasMutable = d.has("mutable");
  const hasOut = d.has("out");
  if (!(hasMutable || hasInplace || hasOut || hasFunctional)) return null;
  const fnsOf = [...d.values()];
  const isCore = fnsOf.some((f) => f.tags.includes("core"));
  const areManual = fnsOf.every((f) => f.manualCppBinding);
  const hasViewOps = fnsOf.some((f) => isViewOp(f) && printBaseOperatorName(f.func.name.name) !== "set_");
  const areCompositeImplicit = fnsOf.every((f) => f.hasCompositeImplicitAutogradKernel);
  if (areManual || hasViewOps || (areCompositeImplicit && !isCore)) return null;
  if (hasOut && d.size === 1) {
    // torchgen asserts that only adaptive_avg_pool3d_backward.grad_input and
    // _slow_conv2d_backward.grad_input are lone out= ops; policing PyTorch's
    // own file is not our job, so we just skip them as it does.
    return null;
  }
  const inplace = d.get("inplace");
  if (inplace && INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY.has(inplace.name)) return null;
  const baseFn = d.get("mutable") ?? d.get("inplace") ?? d.get("out") ?? d.get("functional")!;
  const baseKind = schemaKind(baseFn.func);
  const baseFnValid = baseKind === "inplace" || baseFn.func.returns.some((r) => isTensorLike(r.type));
  const needsOut = baseFn.autogen.some((n) => operatorNameString(n).includes("out"));
  const getsOutVariant = !hasOut && baseFnValid && needsOut;
  const rs: NativeFunction[] = [];
  if (getsOutVariant) {
    const g = generateFunction(baseFn, "out");
    d.set("out", g);
    rs.push(g);
  }
  if (!hasFunctional && (hasOut || getsOutVariant)) {
    const g = generateFunction(baseFn, "functional");
    d.set("functional", g);
    rs.push(g);
  }
  return rs.length > 0 ? rs : null;
}

function withOverload(n: OperatorName, overloadName: string): OperatorName {
  return {
    name: { base: n.name.base, inplace: false, dunderMethod: n.name.dunderMethod, functionalOverload: false },
    overloadName,
  };
}

const expectedOutOverload = (overload: string): string => (overload ? `${overload}_out` : "out");

/** torchgen generate_out_args_from_schema: returns become `out`/`out{i}` arguments annotated with unused letters. */
function outArgsFromReturns(func: FunctionSchema): { returns: Return[]; outs: Argument[] } {
  const used = new Set(flatAll(func.arguments).flatMap((a) => a.annotation?.aliasSet ?? []));
  const valid = [..."abcdefghijklmnopqrstuvwxyz"].filter((x) => !used.has(x));
  const allPlainTensors = func.returns.every((r) => r.type.kind === "base" && r.type.name === "Tensor");
  const returns: Return[] = [];
  const outs: Argument[] = [];
  func.returns.forEach((r, i) => {
    if (isTensorLike(r.type)) {
      const annotation = { aliasSet: [valid[i]!], isWrite: true, aliasSetAfter: [] };
      outs.push({ name: func.returns.length === 1 ? "out" : `out${i}`, type: r.type, default: null, annotation });
      if (allPlainTensors) returns.push({ name: null, type: r.type, annotation });
    } else returns.push(r);
  });
  return { returns, outs };
}

/** torchgen generate_function: the functional or out= variant of `f`. */
function generateFunction(f: NativeFunction, k: "functional" | "out"): NativeFunction {
  const kind = schemaKind(f.func);
  let func: FunctionSchema;
  if (k === "functional") {
    const sig = signature(f.func, { keepReturnNames: true });
    func = {
      ...sig,
      name: {
        name: {
          base: f.func.name.name.base,
          inplace: false,
          dunderMethod: f.func.name.name.dunderMethod,
          // Note [Overload Ambiguity With Functional Variants]
          functionalOverload: kind === "mutable",
        },
        overloadName: f.func.name.overloadName,
      },
    };
  } else if (kind === "inplace") {
    const self = selfArgument(f.func.arguments)!;
    const a = f.func.arguments;
    func = {
      name: withOverload(f.func.name, expectedOutOverload(f.func.name.overloadName)),
      arguments: {
        positional: a.positional.map((x) => (x === self ? { ...x, annotation: null } : x)),
        kwargOnly: a.kwargOnly,
        out: [{ name: "out", type: self.type, default: null, annotation: self.annotation }],
      },
      returns: f.func.returns,
    };
  } else if (kind === "mutable" || kind === "functional") {
    const { returns, outs } = outArgsFromReturns(f.func);
    const args = kind === "functional" ? signature(f.func).arguments : f.func.arguments;
    func = {
      name: withOverload(f.func.name, expectedOutOverload(f.func.name.overloadName)),
      arguments: { positional: args.positional, kwargOnly: args.kwargOnly, out: outs },
      returns,
    };
  } else {
    throw new Error(
      `internal: cannot generate an out= variant from a ${kind} schema (${operatorNameString(f.func.name)})`,
    );
  }
  const outKind = func.arguments.out.length > 0;
  let kernel = outKind ? unambiguousName(func.name) : printBaseOperatorName(func.name.name);
  if (hasSymInt(f.func)) kernel += "_symint";
  const inherited = f.allTags.filter(
    (t) => t === "nondeterministic_seeded" || t === "view_copy" || t === "pt2_compliant_tag",
  );
  const tags = ["generated", ...f.tags.filter((t) => t === "nondeterministic_seeded" || t === "view_copy")];
  const allTags = new Set(["generated", ...inherited]);
  if (outKind) allTags.add("out");
  return {
    name: operatorNameString(func.name),
    func,
    funcText: printSchema(func),
    loc: f.loc,
    variants: ["function"],
    tags,
    allTags: [...allTags].sort(),
    dispatch: { CompositeExplicitAutograd: kernel },
    structured: false,
    structuredDelegate: null,
    structuredInherits: null,
    autogen: [],
    autogenerated: true,
    deviceGuard: false,
    deviceCheck: "NoCheck",
    manualKernelRegistration: false,
    manualCppBinding: false,
    pythonModule: null,
    categoryOverride: null,
    cppNoDefaultArgs: [],
    useConstRefForMutableTensors: f.useConstRefForMutableTensors,
    hasCompositeImplicitAutogradKernel: false,
    hasCompositeImplicitAutogradNestedTensorKernel: false,
    hasCompositeExplicitAutogradKernel: true,
    hasCompositeExplicitAutogradNonFunctionalKernel: false,
    isAbstract: f.isAbstract,
  };
}

// ---------------------------------------------------------------------------
// Grouping (torchgen get_grouped_native_functions)

/**
 * torchgen NativeFunctionsGroup.from_dict: a group needs a functional and an
 * out= variant. Where torchgen would assert (no functional variant, a scratch
 * variant in a larger group) we leave the functions ungrouped instead.
 */
export function fromDict(d: ReadonlyMap<SchemaKind, NativeFunction>): NativeFunctionsGroup | null {
  if (d.size === 1) return null;
  const functional = d.get("functional");
  const out = d.get("out");
  if (!functional || !out || d.has("scratch")) return null;
  return {
    functional,
    inplace: d.get("inplace") ?? null,
    mutable: d.get("mutable") ?? null,
    out,
    structured: out.structured,
  };
}

/** Groups in torchgen's order: by first appearance of each signature. */
export function groupNativeFunctions(fns: readonly NativeFunction[]): (NativeFunctionsGroup | NativeFunction)[] {
  return flattenGroups(preGroup(fns));
}

function flattenGroups(
  pre: ReadonlyMap<string, ReadonlyMap<SchemaKind, NativeFunction>>,
): (NativeFunctionsGroup | NativeFunction)[] {
  const res: (NativeFunctionsGroup | NativeFunction)[] = [];
  for (const d of pre.values()) {
    const g = fromDict(d);
    if (g) res.push(g);
    else res.push(...d.values());
  }
  return res;
}

export function isGroup(x: NativeFunctionsGroup | NativeFunction): x is NativeFunctionsGroup {
  return "functional" in x && "out" in x && !("func" in x);
}

/** torchgen NativeFunctionsGroup.functions(): functional, out, inplace, mutable. */
export function groupFunctions(g: NativeFunctionsGroup): NativeFunction[] {
  const r = [g.functional, g.out];
  if (g.inplace) r.push(g.inplace);
  if (g.mutable) r.push(g.mutable);
  return r;
}
