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
import { type YamlEntry, YamlListFile, type YamlValue } from "../yaml/operators.js";
import {
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

// The keys an entry may have. The last two are keys torchgen accepts but
// that carry nothing we generate from.
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
  "ufunc_inner_loop",
  "precomputed",
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
  const yaml = new YamlListFile(text, file);
  const diags: Diagnostic[] = [];
  const fns: NativeFunction[] = [];
  for (let k = yaml.first(); k >= 0; ) {
    const { entry, next } = yaml.read(k);
    k = next;
    const f = fromYaml(entry, file, validTags, diags);
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

/**
 * Typed access to the entry fromYaml is reading; problems become Diagnostics
 * pointing at the value of the key (plus an offset inside it), or at the key
 * itself.
 */
class EntryReader {
  constructor(
    readonly e: YamlEntry,
    private readonly file: string,
    private readonly diags: Diagnostic[],
  ) {}

  /** A known key's value (KNOWN_KEYS: no name of Object.prototype); undefined when the entry has no such key. */
  get(key: string): YamlValue | undefined {
    return this.e.value[key];
  }

  at(key: string, colOffset: number | "key"): SourceLoc {
    const k = Object.hasOwn(this.e.keys, key) ? this.e.keys[key] : undefined;
    if (!k) return { file: this.file, line: this.e.line, col: 1 };
    if (colOffset === "key") return { file: this.file, line: k.line, col: k.col };
    return { file: this.file, line: k.line, col: (k.valueCol || k.col) + colOffset };
  }

  err(key: string, message: string, colOffset: number | "key" = 0): null {
    this.diags.push({ severity: "error", loc: this.at(key, colOffset), message });
    return null;
  }

  /** A string value, null when absent or null (an error when of another type). */
  str(key: string): string | null {
    const x = this.get(key);
    if (x === undefined || x === null) return null;
    if (typeof x !== "string") return this.err(key, `'${key}' must be a string, got ${JSON.stringify(x)}`);
    return x;
  }

  bool(key: string, dflt: boolean): boolean {
    const x = this.get(key);
    if (x === undefined) return dflt;
    if (typeof x !== "boolean") {
      this.err(key, `'${key}' must be True or False, got ${JSON.stringify(x)}`);
      return dflt;
    }
    return x;
  }
}

/** `variants:` (default `function`), duplicates dropped. */
function readVariants(r: EntryReader): ("function" | "method")[] {
  const variantsText = r.str("variants") ?? "function";
  if (variantsText === "function") return ["function"];
  if (variantsText === "function, method") return ["function", "method"];
  if (variantsText === "method") return ["method"];
  if (variantsText === "method, function") return ["method", "function"];
  const variants: ("function" | "method")[] = [];
  for (const part of variantsText.split(", ")) {
    if (part === "function" || part === "method") {
      if (!variants.includes(part)) variants.push(part);
    } else r.err("variants", `illegal variant '${part}'; expected 'function' and/or 'method'`);
  }
  return variants;
}

/** `tags:` a tag or a list of tags from tags.yaml, duplicates dropped. */
function readTags(r: EntryReader, validTags: ReadonlySet<string>): string[] {
  const tagsRaw = r.get("tags");
  if (tagsRaw === undefined || tagsRaw === null) return [];
  const list = typeof tagsRaw === "string" ? [tagsRaw] : Array.isArray(tagsRaw) ? tagsRaw : null;
  if (list === null) {
    r.err("tags", "'tags' must be a tag or a list of tags");
    return [];
  }
  const tags: string[] = [];
  for (const t of list) {
    if (typeof t !== "string") r.err("tags", `tag ${JSON.stringify(t)} is not a string`);
    else if (validTags.size > 0 && !validTags.has(t)) r.err("tags", `illegal tag '${t}' (not in tags.yaml)`);
    else if (!tags.includes(t)) tags.push(t);
  }
  return tags;
}

/** `structured_delegate:` an operator name. */
function readStructuredDelegate(r: EntryReader): OperatorName | null {
  const delegateText = r.str("structured_delegate");
  if (delegateText === null) return null;
  try {
    return parseOperatorName(delegateText);
  } catch (x) {
    if (x instanceof SchemaParseError) r.err("structured_delegate", x.reason, x.col - 1);
    else throw x;
    return null;
  }
}

/** What `dispatch:` (with `ufunc_inner_loop:`, `structured:` and a delegate) says about kernels. */
interface DispatchInfo {
  readonly dispatch: Record<string, string>;
  readonly hasImplicit: boolean;
  readonly hasImplicitNested: boolean;
  readonly hasExplicit: boolean;
  readonly hasExplicitNonFunctional: boolean;
  /** torchgen's is_abstract. */
  readonly isAbstract: boolean;
}

/** The dispatch keys torchgen sees (its `dispatch` dict), as flags. */
function readDispatch(
  r: EntryReader,
  manualKernelRegistration: boolean,
  structured: boolean,
  structuredDelegate: OperatorName | null,
): DispatchInfo {
  let anyKey = false;
  let onlyImplicitKeys = true;
  let hasImplicit = false;
  let hasImplicitNested = false;
  let hasExplicit = false;
  let hasExplicitNonFunctional = false;
  const dispatch: Record<string, string> = {};
  const rawDispatch = r.get("dispatch");
  if (rawDispatch !== undefined && rawDispatch !== null) {
    if (typeof rawDispatch !== "object" || Array.isArray(rawDispatch)) {
      r.err("dispatch", "'dispatch' must be a mapping of dispatch keys to kernel names");
    } else {
      if (manualKernelRegistration) r.err("dispatch", "cannot specify both manual_kernel_registration and dispatch");
      // A `dispatch:` block, or `dispatch: {}`.
      const table = rawDispatch as Record<string, YamlValue>;
      for (const ks of Object.keys(table)) {
        const kernel = table[ks];
        if (typeof kernel !== "string") {
          r.err("dispatch", `kernel for '${ks}' must be a string`);
          continue;
        }
        // `CPU, CUDA` names two dispatch keys.
        const keys = ks.split(",");
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i]!.trim();
          // (`__proto__` would set the table's prototype, not add a key: as torchgen never sees it, skip it.)
          if (k === "__proto__") continue;
          dispatch[k] = kernel;
          anyKey = true;
          if (k === "CompositeImplicitAutograd") hasImplicit = true;
          else if (k === "CompositeImplicitAutogradNestedTensor") hasImplicitNested = true;
          else {
            onlyImplicitKeys = false;
            if (k === "CompositeExplicitAutograd") hasExplicit = true;
            else if (k === "CompositeExplicitAutogradNonFunctional") hasExplicitNonFunctional = true;
          }
        }
      }
    }
  }
  const ufunc = r.get("ufunc_inner_loop");
  if (ufunc !== undefined && ufunc !== null) {
    // torchgen UFUNC_DISPATCH_KEYS: ufunc_inner_loop implies CPU and CUDA kernels.
    anyKey = true;
    onlyImplicitKeys = false;
  }
  // torchgen: no dispatch table and not structured means CompositeImplicitAutograd.
  if ((rawDispatch === undefined || rawDispatch === null) && !structured && structuredDelegate === null) {
    anyKey = true;
    hasImplicit = true;
  }
  const onlyImplicit = anyKey && onlyImplicitKeys;

  return {
    dispatch,
    hasImplicit,
    hasImplicitNested,
    hasExplicit,
    hasExplicitNonFunctional,
    isAbstract: structuredDelegate !== null || !onlyImplicit,
  };
}

/** `autogen:` a comma-separated list of operator names. */
function readAutogen(r: EntryReader): OperatorName[] {
  const autogenText = r.str("autogen") ?? "";
  if (autogenText === "") return [];
  const parts = autogenText.includes(", ") ? autogenText.split(", ") : [autogenText];
  const names: OperatorName[] = [];
  let offset = 0;
  for (const part of parts) {
    try {
      names.push(parseOperatorName(part));
    } catch (x) {
      if (x instanceof SchemaParseError) r.err("autogen", x.reason, offset + x.col - 1);
      else throw x;
    }
    offset += part.length + 2;
  }
  return names;
}

/** `device_check:` ExactSame (default) or NoCheck. */
function readDeviceCheck(r: EntryReader): DeviceCheckType {
  const deviceCheckText = r.str("device_check");
  if (deviceCheckText === null) return "ExactSame";
  if (deviceCheckText === "ExactSame" || deviceCheckText === "NoCheck") return deviceCheckText;
  r.err("device_check", `illegal device_check '${deviceCheckText}'; expected ExactSame or NoCheck`);
  return "ExactSame";
}

/** `cpp_no_default_args:` a list of argument names. */
function readCppNoDefaultArgs(r: EntryReader): string[] {
  const cppNoDefault = r.get("cpp_no_default_args");
  const cppNoDefaultArgs: string[] = [];
  if (cppNoDefault !== undefined && cppNoDefault !== null) {
    if (!Array.isArray(cppNoDefault)) r.err("cpp_no_default_args", "'cpp_no_default_args' must be a list");
    else for (const a of cppNoDefault) if (typeof a === "string") cppNoDefaultArgs.push(a);
  }
  return cppNoDefaultArgs;
}

/**
 * One entry -> a NativeFunction, or null after pushing its problems onto
 * `diags`: `func:` parsed, then one reader per key.
 */
export function fromYaml(
  e: YamlEntry,
  file: string,
  validTags: ReadonlySet<string>,
  diags: Diagnostic[],
): NativeFunction | null {
  const r = new EntryReader(e, file, diags);
  for (const key of Object.keys(e.value)) {
    if (!KNOWN_KEYS.has(key)) r.err(key, `unknown key '${key}' in a native_functions.yaml entry`, "key");
  }
  const loc: YamlLoc = { file, line: e.line };
  const funcText = r.str("func");
  if (funcText === null) {
    if (r.get("func") === undefined)
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

  const variants = readVariants(r);
  const tags = readTags(r, validTags);
  const manualKernelRegistration = r.bool("manual_kernel_registration", false);
  const structured = r.bool("structured", false);
  const structuredDelegate = readStructuredDelegate(r);
  const d = readDispatch(r, manualKernelRegistration, structured, structuredDelegate);
  const autogen = readAutogen(r);
  const deviceCheck = readDeviceCheck(r);
  const cppNoDefaultArgs = readCppNoDefaultArgs(r);
  const pythonModule = r.str("python_module");
  if (pythonModule !== null && variants.includes("method"))
    r.err("python_module", "functions in modules cannot be methods");

  return {
    // = operatorNameString(func.name): the schema prints back exactly (Note [Lossless schemas]).
    name: funcText.slice(0, funcText.indexOf("(")),
    func,
    funcText,
    loc,
    variants,
    tags,
    allTags: impliedTags(tags, func, kind, validTags),
    dispatch: d.dispatch,
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
    hasCompositeImplicitAutogradKernel: d.hasImplicit,
    hasCompositeImplicitAutogradNestedTensorKernel: d.hasImplicitNested,
    hasCompositeExplicitAutogradKernel: d.hasExplicit,
    hasCompositeExplicitAutogradNonFunctionalKernel: d.hasExplicitNonFunctional,
    isAbstract: d.isAbstract,
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
    // The implied tags differ from each other: only the entry's own tags can hold `t`.
    if ((validTags.size === 0 || validTags.has(t)) && !tags.includes(t)) all.push(t);
  };
  add("pt2_compliant_tag");
  if (func.arguments.out.length > 0) add("out");
  if (kind === "inplace") add("inplace");
  // Default sort: UTF-16 code units, as Python's sorted() on these ASCII names.
  return all.sort();
}

// ---------------------------------------------------------------------------
// Generated operators (torchgen native_function_generation.py)

// From native_function_generation.py: an inplace op whose schema cannot be
// grouped, so torchgen generates nothing for it.
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: ReadonlySet<string> = new Set(["polygamma_"]);

/**
 * torchgen pre_group_native_functions: the functions of each signature
 * (signatureKey) by kind, in first-seen order. When given, `firsts` gets the
 * index in `fns` of each group's first function, and `members` the group
 * number of each function.
 */
export function preGroup(
  fns: readonly NativeFunction[],
  firsts?: number[],
  members?: number[],
): Map<SchemaKind, NativeFunction>[] {
  const groups: Map<SchemaKind, NativeFunction>[] = [];
  const bySignature = new Map<string, number>();
  for (let i = 0; i < fns.length; i++) {
    const f = fns[i]!;
    const key = signatureKey(f.func);
    let index = bySignature.get(key);
    if (index === undefined) {
      index = groups.length;
      bySignature.set(key, index);
      groups.push(new Map());
      firsts?.push(i);
    }
    const d = groups[index]!;
    members?.push(index);
    const kind = schemaKind(f.func);
    const prev = d.get(kind);
    if (prev) {
      throw new UserError(
        `${f.loc.file}:${f.loc.line}:1: duplicate ${kind} variant for signature ${signatureKey(f.func)} (also ${prev.name} at line ${prev.loc.line})`,
      );
    }
    d.set(kind, f);
  }
  return groups;
}

/** torchgen NativeFunction.is_view_op. */
export function isViewOp(f: NativeFunction): boolean {
  const rets = f.func.returns;
  for (let i = 0; i < rets.length; i++) {
    const an = rets[i]!.annotation;
    if (an !== null && !an.isWrite) return true;
  }
  if (f.tags.includes("inplace_view") && f.name !== "resize_" && f.name !== "resize_as_") return true;
  const a = f.func.arguments;
  return aliasesWildcard(a.positional) || aliasesWildcard(a.kwargOnly) || aliasesWildcard(a.out);
}

function aliasesWildcard(args: readonly Argument[]): boolean {
  for (let i = 0; i < args.length; i++) if (args[i]!.annotation?.aliasSetAfter.includes("*")) return true;
  return false;
}

/** torchgen add_generated_native_functions; also adds each generated function to its group in `pre`. */
function generateInto(
  fns: readonly NativeFunction[],
  pre: readonly Map<SchemaKind, NativeFunction>[],
): NativeFunction[] {
  const rs = [...fns];
  for (const d of pre) {
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
  const functional = d.get("functional");
  const inplace = d.get("inplace");
  const mutable = d.get("mutable");
  const out = d.get("out");
  const hasFunctional = functional !== undefined;
  const hasOut = out !== undefined;
  if (!(mutable || inplace || out || functional)) return null;
  let isCore = false;
  let areManual = true;
  let hasViewOps = false;
  let areCompositeImplicit = true;
  const members = [functional, inplace, mutable, out, d.get("scratch")];
  for (let i = 0; i < members.length; i++) {
    const f = members[i];
    if (!f) continue;
    if (!isCore && f.tags.includes("core")) isCore = true;
    if (!f.manualCppBinding) areManual = false;
    if (!hasViewOps && isViewOp(f) && printBaseOperatorName(f.func.name.name) !== "set_") hasViewOps = true;
    if (!f.hasCompositeImplicitAutogradKernel) areCompositeImplicit = false;
  }
  if (areManual || hasViewOps || (areCompositeImplicit && !isCore)) return null;
  if (hasOut && d.size === 1) {
    // torchgen asserts that only adaptive_avg_pool3d_backward.grad_input and
    // _slow_conv2d_backward.grad_input are lone out= ops; policing PyTorch's
    // own file is not our job, so we just skip them as it does.
    return null;
  }
  if (inplace && INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY.has(inplace.name)) return null;
  const baseFn = mutable ?? inplace ?? out ?? functional!;
  const baseKind = schemaKind(baseFn.func);
  let baseFnValid = baseKind === "inplace";
  for (const r of baseFn.func.returns) if (isTensorLike(r.type)) baseFnValid = true;
  // Whether an autogen name contains "out" (the dot between its parts cannot be part of it).
  let needsOut = false;
  for (const n of baseFn.autogen) {
    if (printBaseOperatorName(n.name).includes("out") || n.overloadName.includes("out")) needsOut = true;
  }
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
  const used = new Set<string>();
  const { positional, kwargOnly, out } = func.arguments;
  for (const list of [positional, kwargOnly, out]) {
    for (let i = 0; i < list.length; i++) {
      const an = list[i]!.annotation;
      if (an) for (const x of an.aliasSet) used.add(x);
    }
  }
  let allPlainTensors = true;
  for (const r of func.returns) if (!(r.type.kind === "base" && r.type.name === "Tensor")) allPlainTensors = false;
  const returns: Return[] = [];
  const outs: Argument[] = [];
  for (let i = 0; i < func.returns.length; i++) {
    const r = func.returns[i]!;
    if (isTensorLike(r.type)) {
      const annotation = { aliasSet: [nthUnusedLetter(used, i)!], isWrite: true, aliasSetAfter: [] };
      outs.push({ name: func.returns.length === 1 ? "out" : `out${i}`, type: r.type, default: null, annotation });
      if (allPlainTensors) returns.push({ name: null, type: r.type, annotation });
    } else returns.push(r);
  }
  return { returns, outs };
}

/** The `n`-th (0-based) of a..z not in `used`. */
function nthUnusedLetter(used: ReadonlySet<string>, n: number): string | undefined {
  for (let c = 97; c <= 122; c++) {
    const x = String.fromCharCode(c);
    if (!used.has(x) && n-- === 0) return x;
  }
  return undefined;
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
        positional: a.positional.map((x) =>
          x === self ? { name: x.name, type: x.type, default: x.default, annotation: null } : x,
        ),
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
  // Copied from the source: these tags (tags), and pt2_compliant_tag too (allTags).
  const tags = ["generated"];
  for (const t of f.tags) if (t === "nondeterministic_seeded" || t === "view_copy") tags.push(t);
  const allTags = ["generated"];
  for (const t of f.allTags) {
    if (t === "nondeterministic_seeded" || t === "view_copy" || t === "pt2_compliant_tag") allTags.push(t);
  }
  if (outKind) allTags.push("out");
  allTags.sort();
  return {
    name: operatorNameString(func.name),
    func,
    funcText: printSchema(func),
    loc: f.loc,
    variants: ["function"],
    tags,
    allTags,
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
  pre: readonly ReadonlyMap<SchemaKind, NativeFunction>[],
): (NativeFunctionsGroup | NativeFunction)[] {
  const res: (NativeFunctionsGroup | NativeFunction)[] = [];
  for (const d of pre) {
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
