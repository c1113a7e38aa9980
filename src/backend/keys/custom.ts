/**
 * `custom:` in the backend YAML: vendor operators declared by schema in the
 * device's namespace (src/backend/custom.ts has what they are and the Notes
 * on backwards), one reader per key of an entry. Every problem is a
 * file:line:col diagnostic; an entry with one is dropped, and nothing is
 * generated while one is an error.
 */
import { callArguments, parseSchema, printSchema, printType, SchemaParseError } from "../../model/schema.js";
import type { FunctionSchema, Type } from "../../model/types.js";
import type { SourceLoc } from "../../util/errors.js";
import { isAlias, isMap, isScalar, type YMap } from "../../yaml/tree.js";
import type { BackwardFormula, CustomOp } from "../custom.js";
import { cppIdentifierProblem, q } from "../names.js";
import { didYouMean } from "../suggest.js";
import { checkBackwardName, readFormula } from "./backward.js";
import { isNullScalar, type KeyContext, pyyamlString, type Read } from "./context.js";

/** Reads `custom:`; entries with errors are dropped (the errors stop generation). */
export function readCustom(cx: KeyContext, node: unknown, device: string): CustomOp[] {
  if (node === null || node === undefined || (isScalar(node) && node.value === null) || isAlias(node)) return [];
  if (!("items" in (node as object)) || isMap(node)) {
    cx.error(
      cx.locOf(node),
      "custom is not a list; it must be a list of mappings with func:, kernel: and optionally backward:, fake:, reference:, samples:, doc:",
    );
    return [];
  }
  const items = (node as { items: unknown[] }).items;
  const ops: CustomOp[] = [];
  const byName = new Map<string, CustomOp>();
  for (const item of items) {
    if (isAlias(item)) continue;
    const op = readEntry(cx, item, device);
    if (!op) continue;
    const prev = byName.get(op.name);
    if (prev) {
      cx.error(
        op.loc,
        `custom operator ${op.name} is declared twice (first at line ${prev.loc.line}); declare each once`,
      );
      continue;
    }
    byName.set(op.name, op);
    ops.push(op);
  }
  // Backward names are checked once every entry is known.
  const byKernel = new Map(ops.map((o) => [o.kernel, o]));
  const good: CustomOp[] = [];
  for (const op of ops) {
    if (
      op.backward !== null &&
      !checkBackwardName(cx, op.backward, op.func, op.loc, byKernel, `custom operator ${op.name}`)
    ) {
      continue;
    }
    good.push(op);
  }
  return good;
}

const CUSTOM_KEYS = ["func", "kernel", "backward", "fake", "reference", "samples", "doc"] as const;
type CustomKey = (typeof CUSTOM_KEYS)[number];

const ABSENT = { kind: "absent" } as const;
const INVALID = { kind: "invalid" } as const;

/** One `custom:` entry: each key's reader in turn, then the operator if none found a problem. */
function readEntry(cx: KeyContext, item: unknown, device: string): CustomOp | null {
  const loc = cx.locOf(item);
  if (!isMap(item)) {
    cx.error(
      loc,
      `custom entry is not a mapping; write func: (a schema), kernel: and optionally backward:, fake:, reference:, doc:`,
    );
    return null;
  }
  const keys = entryKeys(cx, item);
  const funcText = entryText(cx, "func", keys.get("func"));
  const func = readFunc(cx, device, funcText, loc);
  // Without a func: (or with one that is not text) the entry is too far off for "no kernel:" to help.
  const kernel = readKernel(cx, keys.get("kernel"), funcText.kind === "ok", loc);
  const backward = readBackward(cx, keys.get("backward"), func);
  const fake = readPython(cx, "fake", keys.get("fake"));
  const reference = readPython(cx, "reference", keys.get("reference"));
  const samples = readPython(cx, "samples", keys.get("samples"));
  const doc = readDoc(cx, keys.get("doc"));
  if (
    func === null ||
    kernel.kind !== "ok" ||
    backward.kind !== "ok" ||
    fake.kind === "invalid" ||
    reference.kind === "invalid" ||
    samples.kind === "invalid" ||
    doc.kind === "invalid"
  ) {
    return null;
  }
  const name = func.name.overloadName ? `${func.name.name.base}.${func.name.overloadName}` : func.name.name.base;
  if (reference.kind === "absent") {
    cx.warn(
      loc,
      `custom operator ${name} has no reference:, so \`opgen-backend test\` cannot check it; give a Python expression`,
    );
  }
  const text = (r: Read<string>) => (r.kind === "ok" ? r.value : null);
  return {
    name,
    func,
    schema: printSchema(func),
    kernel: kernel.value,
    backward: backward.value.backward,
    formula: backward.value.formula,
    fake: text(fake),
    reference: text(reference),
    samples: text(samples),
    doc: text(doc) ?? "",
    loc,
  };
}

/** An entry's value nodes by key; a key that is not a name, twice, or unknown is reported and left out. */
function entryKeys(cx: KeyContext, item: YMap): ReadonlyMap<string, unknown> {
  const values = new Map<string, unknown>();
  for (const p of item.items) {
    const k = pyyamlString(p.key);
    if (k === null) {
      cx.error(cx.locOf(p.key), `custom entry key is not a name; keys are ${CUSTOM_KEYS.join(", ")}`);
      continue;
    }
    if (values.has(k)) {
      cx.error(cx.locOf(p.key), `duplicate key ${q(k)} in a custom entry; each key may appear once`);
      continue;
    }
    if (!(CUSTOM_KEYS as readonly string[]).includes(k)) {
      const hint = didYouMean(k, CUSTOM_KEYS, 1);
      cx.error(
        cx.locOf(p.key),
        `unknown custom key ${q(k)}${hint}${hint ? " " : "; "}allowed: ${CUSTOM_KEYS.join(", ")}`,
      );
      continue;
    }
    values.set(k, p.value);
  }
  return values;
}

/** A key's one line of text and where it is; absent when missing or null, invalid (reported) when not a string. */
function entryText(cx: KeyContext, key: CustomKey, node: unknown): Read<{ s: string; loc: SourceLoc }> {
  if (isNullScalar(node)) return ABSENT;
  const s = pyyamlString(node);
  if (s === null) {
    cx.error(
      cx.locOf(node),
      key === "backward"
        ? "custom backward is neither a kernel name nor a mapping of formulas; write backward: <kernel> or backward: {self: <C++ expression>, ...}"
        : `custom ${key} is not a string; write it as one line of text`,
    );
    return INVALID;
  }
  return { kind: "ok", value: { s, loc: cx.locOf(node) } };
}

/** `func:`, the schema (required); null after a problem. */
function readFunc(
  cx: KeyContext,
  device: string,
  text: Read<{ s: string; loc: SourceLoc }>,
  entryLoc: SourceLoc,
): FunctionSchema | null {
  if (text.kind === "absent") {
    cx.error(
      entryLoc,
      "custom entry has no func:; give the operator's schema, e.g. func: fused_gelu(Tensor self) -> Tensor",
    );
  }
  return text.kind === "ok" ? parseCustomSchema(cx, device, text.value.s, text.value.loc) : null;
}

/** `kernel:`, one C++ identifier (required; its absence is reported where `funcGiven`). */
function readKernel(cx: KeyContext, node: unknown, funcGiven: boolean, entryLoc: SourceLoc): Read<string> {
  const text = entryText(cx, "kernel", node);
  if (text.kind !== "ok") {
    if (funcGiven) {
      cx.error(
        entryLoc,
        "custom entry has no kernel:; name the C++ kernel that computes it (a function in cpp_namespace)",
      );
    }
    return INVALID;
  }
  const why = cppIdentifierProblem(text.value.s);
  if (why) {
    cx.error(text.value.loc, `custom kernel ${why}; it must be one C++ identifier, the kernel's name in cpp_namespace`);
    return INVALID;
  }
  return { kind: "ok", value: text.value.s };
}

/**
 * `backward:`: a kernel (checked against the other entries by readCustom) or
 * formulas over the forward `func` (read only when it parsed); ok with both
 * null when absent.
 */
function readBackward(
  cx: KeyContext,
  node: unknown,
  func: FunctionSchema | null,
): Read<{ backward: string | null; formula: BackwardFormula | null }> {
  if (isMap(node)) {
    const formula = func === null ? null : readFormula(cx, node, func, `custom operator ${func.name.name.base}`);
    return func !== null && formula === null ? INVALID : { kind: "ok", value: { backward: null, formula } };
  }
  const text = entryText(cx, "backward", node);
  if (text.kind === "invalid") return INVALID;
  if (text.kind === "absent") return { kind: "ok", value: { backward: null, formula: null } };
  const why = cppIdentifierProblem(text.value.s);
  if (why) {
    cx.error(
      text.value.loc,
      `custom backward ${why}; name the kernel: of the custom operator that computes the gradients`,
    );
    return INVALID;
  }
  return { kind: "ok", value: { backward: text.value.s, formula: null } };
}

/** `fake:`, `reference:`, `samples:`: one Python expression over the argument names (optional). */
function readPython(cx: KeyContext, key: "fake" | "reference" | "samples", node: unknown): Read<string> {
  const text = entryText(cx, key, node);
  if (text.kind !== "ok") return text;
  const why = pythonExprProblem(text.value.s);
  if (why) {
    cx.error(text.value.loc, `custom ${key} ${why}; it must be one Python expression over the argument names`);
    return INVALID;
  }
  return { kind: "ok", value: text.value.s };
}

/** `doc:`, the Python wrapper's docstring (optional): plain text that cannot end the docstring. */
function readDoc(cx: KeyContext, node: unknown): Read<string> {
  const text = entryText(cx, "doc", node);
  if (text.kind !== "ok") return text;
  const doc = text.value.s;
  if (/"""|\\/.test(doc) || /[^\x20-\x7e\n]/.test(doc)) {
    cx.error(text.value.loc, 'custom doc has """, a backslash or a non-ASCII character; write plain text');
    return INVALID;
  }
  return { kind: "ok", value: doc };
}

/**
 * Parses a custom schema: the device's namespace prefix is optional, others
 * are refused; custom types, mutation and aliasing are refused (a custom
 * operator here is functional: its outputs are new tensors).
 */
function parseCustomSchema(cx: KeyContext, device: string, raw: string, loc: SourceLoc): FunctionSchema | null {
  let s = raw;
  let offset = 0;
  const ns = /^([A-Za-z_][A-Za-z0-9_]*)::/.exec(s);
  if (ns) {
    if (ns[1] !== device) {
      cx.error(
        loc,
        `custom func is in namespace ${q(ns[1]!)}; custom operators live in the device's namespace ${q(device)} (write ${device}:: or nothing)`,
      );
      return null;
    }
    s = s.slice(ns[0].length);
    offset = ns[0].length;
  }
  let func: FunctionSchema;
  try {
    func = parseSchema(s);
  } catch (e) {
    if (!(e instanceof SchemaParseError)) throw e;
    const at = { ...loc, col: loc.col + offset + e.col - 1 };
    cx.error(
      at,
      `custom func is not a valid schema: ${e.reason}; write it as in native_functions.yaml, e.g. fused_gelu(Tensor self, *, str approximate="none") -> Tensor`,
    );
    return null;
  }
  const where = (name: string) => {
    const i = raw.indexOf(name);
    return i < 0 ? loc : { ...loc, col: loc.col + i };
  };
  let ok = true;
  for (const a of [...callArguments(func), ...func.arguments.out]) {
    if (containsCustomClass(a.type)) {
      cx.error(
        where(a.name),
        `custom func argument ${a.name} has unknown type ${printType(a.type)}; use the types of native_functions.yaml (Tensor, int, float, bool, str, Scalar, lists, optionals)`,
      );
      ok = false;
    }
    if (a.annotation !== null || func.arguments.out.includes(a)) {
      cx.error(
        where(a.name),
        `custom func argument ${a.name} is mutated or aliased; custom operators here are functional: drop the annotation and return new tensors`,
      );
      ok = false;
    }
  }
  for (const r of func.returns) {
    if (containsCustomClass(r.type)) {
      cx.error(loc, `custom func returns unknown type ${printType(r.type)}; use the types of native_functions.yaml`);
      ok = false;
    }
    if (r.annotation !== null) {
      cx.error(loc, "custom func returns a view or alias; custom operators here return new tensors");
      ok = false;
    }
  }
  if (func.name.name.inplace || func.name.name.dunderMethod) {
    cx.error(loc, "custom func has an inplace or dunder name; name a functional operator");
    ok = false;
  }
  const base = func.name.name.base;
  if (cx.catalog.hasBase(base)) {
    cx.error(
      where(base),
      `custom operator ${q(base)} clashes with the aten operator of that name (torch.ops.aten.${base}); ` +
        `give it a name of its own, e.g. ${device}_${base} or fused_${base}`,
    );
    ok = false;
  }
  return ok ? func : null;
}

function containsCustomClass(t: Type): boolean {
  switch (t.kind) {
    case "base":
      return false;
    case "custom":
      return true;
    case "optional":
    case "list":
      return containsCustomClass(t.elem);
  }
}

/** Why a Python expression written in the YAML cannot go into the generated module, or null. */
function pythonExprProblem(s: string): string | null {
  if (s.trim() === "") return "is empty";
  if (/[\n\r]/.test(s)) return "spans several lines (write one expression on one line)";
  if (/[^\x20-\x7e]/.test(s)) return "has characters outside printable ASCII";
  let depth = 0;
  for (const c of s) {
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    if (depth < 0) return "closes a bracket it did not open";
  }
  if (depth !== 0) return "leaves a bracket open";
  return null;
}
