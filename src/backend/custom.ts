/**
 * Reads the backend YAML's `custom:` section (vendor operators, declared by
 * schema in the device's namespace) and the mapping form of `autograd:`
 * entries (`{op: gelu, backward: <kernel>}`), into checked, readonly objects.
 * load.ts calls in here with the nodes; every problem is a file:line:col
 * diagnostic and nothing is generated while one is an error.
 *
 * Note [Backward convention]: a backward, for a custom op or for an aten op
 * under `autograd:`, is itself a `custom:` operator (so torch.compile traces
 * it like any op, and conformance tests it against its reference). Its
 * arguments are one Tensor gradient per Tensor return of the forward, then
 * the forward's arguments in order (same types, names free); it returns one
 * Tensor per `Tensor` argument of the forward, in order (the gradient of
 * that argument; an undefined tensor for none). Every other argument gets no
 * gradient. `backward:` names that operator's `kernel:`.
 *
 * Note [Backward formulas]: instead of a kernel, `backward:` may be a mapping
 * from differentiable inputs (the forward's `Tensor` arguments) to a C++
 * expression over other ops, as derivatives.yaml writes them:
 * `backward: {self: "grad * weight", weight: "(grad * self).sum_to_size(weight.sizes())"}`.
 * An expression may name the forward's arguments (as the C++ types a
 * Function saves them in, Note [Saved arguments] in dest/autograd.ts),
 * `grad` (the incoming gradient of a one-output op), `grads[i]` (of output
 * i), `result` (the forward's output; `result0`, `result1`, ... for several),
 * and, qualified, the namespaces `at`, `c10`, `std` (at::rsqrt(x)); besides
 * those only `true`, `false`, `nullptr`, `int64_t` and `double` (literals,
 * casts). Members (`x.sum(-1, true)`) and names after `::` are C++'s to
 * check. Any other name would reach into the generated Function's own
 * locals or an unqualified overload set the vendor did not choose, so it is
 * refused, as are `;`, comments and preprocessor lines (one expression, not
 * statements). An input without a formula gets an undefined gradient. The
 * expressions run in the generated Function's backward through the
 * dispatcher, so with create_graph their own gradients come from the ops
 * they call (double backward works where those ops have gradients).
 */
import {
  callArguments,
  parseSchema,
  printSchema,
  printType,
  SchemaParseError,
  schemaKind,
  typeEquals,
} from "../model/schema.js";
import type { FunctionSchema, NativeFunction, Type } from "../model/types.js";
import type { Diagnostic, SourceLoc } from "../util/errors.js";
import { isAlias, isMap, isScalar, type YMap } from "../yaml/tree.js";
import { cppIdentifierProblem, q } from "./names.js";
import { didYouMean } from "./suggest.js";

/** One `custom:` entry. */
export interface CustomOp {
  /** Operator name without namespace: `fused_bias_gelu` (an overload is `name.overload`). */
  readonly name: string;
  /** The schema as parsed (name without namespace). */
  readonly func: FunctionSchema;
  /** The schema as TORCH_LIBRARY's m.def takes it (printed, normalized). */
  readonly schema: string;
  /** The C++ kernel (in cpp_namespace, or a member of class_name). */
  readonly kernel: string;
  /** The backward operator (another entry), or null: a formula, or no gradient (backward raises). */
  readonly backward: string | null;
  /** The backward as formulas over other ops (Note [Backward formulas]), or null. */
  readonly formula: BackwardFormula | null;
  /** A Python expression over the argument names giving the fake (meta) outputs, or null. */
  readonly fake: string | null;
  /** A Python expression over the argument names: the reference implementation, or null. */
  readonly reference: string | null;
  /**
   * A Python expression over `dtype`: the conformance samples, a list of
   * `(args, kwargs)`; null: made from the schema.
   */
  readonly samples: string | null;
  /** Docstring of the Python wrapper. */
  readonly doc: string;
  readonly loc: SourceLoc;
}

/** One differentiable input's gradient formula (Note [Backward formulas]). */
export interface FormulaEntry {
  /** The forward's argument (a `Tensor`). */
  readonly input: string;
  /** The C++ expression, as written. */
  readonly expr: string;
  readonly loc: SourceLoc;
}

/** A backward written as formulas: one per differentiable input that has a gradient, in argument order. */
export interface BackwardFormula {
  readonly entries: readonly FormulaEntry[];
  /** Whether an expression names the forward's outputs (`result`, `resultN`): then the Function saves them. */
  readonly usesResult: boolean;
}

/** The backward of one `autograd:` entry: the custom operator it calls, formulas, or neither (raises). */
export interface AutogradBackward {
  readonly op: string;
  readonly backward: string | null;
  readonly formula: BackwardFormula | null;
  readonly loc: SourceLoc;
}

/** What the reader needs from load.ts's Checker. */
export interface ReaderContext {
  readonly device: string;
  locOf(node: unknown): SourceLoc;
  error(loc: SourceLoc, message: string): void;
  warn(loc: SourceLoc, message: string): void;
  /** A string scalar's value (as PyYAML reads it) or null. */
  str(node: unknown): string | null;
  /** Whether a scalar is written in quotes (its value then starts one column later). */
  quoted(node: unknown): boolean;
  /** True when `base` names an aten operator (any overload). */
  atenHasBase(base: string): boolean;
}

const CUSTOM_KEYS = ["func", "kernel", "backward", "fake", "reference", "samples", "doc"] as const;
/** Argument types a generated autograd Function can keep for backward (Note [Saved arguments] in dest/autograd.ts). */
const SAVABLE = new Set(["Tensor", "Tensor?", "int", "SymInt", "float", "bool", "str", "Scalar", "int[]", "SymInt[]"]);

export function savableType(t: Type): boolean {
  return SAVABLE.has(printType(t).replace(/\[\d+\]$/, "[]"));
}

/** Is `t` exactly `Tensor` (an argument that gets a gradient, a return that has one)? */
export function isPlainTensor(t: Type): boolean {
  return t.kind === "base" && t.name === "Tensor";
}

/**
 * Why an `autograd:` mapping entry cannot get a generated Function and is
 * registered as torchgen does instead, or null (Note [Autograd entries are
 * Functions] in dest/autograd.ts). The reason is worded for the warning and
 * the coverage report.
 */
export function functionProblem(f: NativeFunction): string | null {
  const s = f.func;
  const kind = schemaKind(s);
  switch (kind) {
    case "functional":
      break;
    case "inplace":
      return "it is in-place (it writes self), and a generated Function wraps functional operators only";
    case "out":
    case "scratch":
      return "it is an out= variant, and out= overloads are not differentiable in PyTorch";
    case "mutable":
      return "it mutates an argument, and a generated Function wraps functional operators only";
  }
  const view = s.returns.find((r) => r.annotation !== null);
  if (view) return "it returns a view of an input (an aliased return), which a Function cannot give";
  if (s.returns.length === 0 || !s.returns.every((r) => isPlainTensor(r.type))) {
    return `its returns (${s.returns.map((r) => printType(r.type)).join(", ") || "none"}) are not all Tensors`;
  }
  const bad = callArguments(s).find((a) => a.annotation !== null || !savableType(a.type));
  if (bad) {
    return `its argument ${bad.name} (${printType(bad.type)}) cannot be saved for backward (savable: ${[...SAVABLE].join(", ")})`;
  }
  return null;
}

/** Note [Backward convention]: why `bwd` cannot be the backward of `fwd`, or null. */
export function backwardProblem(fwd: FunctionSchema, bwd: FunctionSchema): string | null {
  const nGrads = fwd.returns.filter((r) => isPlainTensor(r.type)).length;
  const want = callArguments(fwd);
  const got = callArguments(bwd);
  const nIn = want.filter((a) => isPlainTensor(a.type)).length;
  const expected = `(${[...Array.from({ length: nGrads }, (_, i) => `Tensor grad${nGrads > 1 ? i : ""}`), ...want.map((a) => `${printType(a.type)} ${a.name}`)].join(", ")}) -> ${nIn === 1 ? "Tensor" : `(${Array(nIn).fill("Tensor").join(", ")})`}`;
  const fail = (what: string) => `${what}; a backward takes ${expected} (Note [Backward convention])`;
  if (got.length !== nGrads + want.length) return fail(`it takes ${got.length} arguments, not ${nGrads + want.length}`);
  for (let i = 0; i < nGrads; i++) {
    if (!isPlainTensor(got[i]!.type)) return fail(`its argument ${got[i]!.name} is ${printType(got[i]!.type)}`);
  }
  for (let i = 0; i < want.length; i++) {
    const g = got[nGrads + i]!;
    if (!typeEquals(g.type, want[i]!.type)) {
      return fail(
        `its argument ${g.name} is ${printType(g.type)} where the forward's ${want[i]!.name} is ${printType(want[i]!.type)}`,
      );
    }
  }
  if (bwd.returns.length !== nIn || !bwd.returns.every((r) => isPlainTensor(r.type))) {
    return fail(
      `it returns ${bwd.returns.length === 0 ? "nothing" : bwd.returns.map((r) => printType(r.type)).join(", ")}`,
    );
  }
  return null;
}

/** Names a formula may use unqualified besides the inputs, grad/grads and results (Note [Backward formulas]). */
const FORMULA_CXX_NAMES = ["at", "c10", "std", "true", "false", "nullptr", "int64_t", "double"] as const;

/**
 * The unqualified names a formula uses, each with its offset, or the first
 * thing that keeps it from being one C++ expression.
 */
export function formulaNames(
  expr: string,
): { readonly names: readonly { name: string; at: number }[] } | { readonly problem: string; readonly at: number } {
  const names: { name: string; at: number }[] = [];
  const open: { c: string; at: number }[] = [];
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    const next = expr[i + 1] ?? "";
    if (/[^\x20-\x7e]/.test(c)) return { problem: "has a character outside printable ASCII", at: i };
    if (c === '"') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== '"') {
        if (expr[j] === "\\") return { problem: "has a backslash in a string", at: j };
        j++;
      }
      if (j >= expr.length) return { problem: "leaves a string open", at: i };
      i = j + 1;
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(next))) {
      // A number: digits, '.', suffixes (f, L, u) and exponents (1e-6).
      let j = i + 1;
      while (
        j < expr.length &&
        (/[0-9A-Za-z_.]/.test(expr[j]!) || (/[+-]/.test(expr[j]!) && /[eE]/.test(expr[j - 1]!)))
      ) {
        j++;
      }
      i = j;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < expr.length && /[A-Za-z0-9_]/.test(expr[j]!)) j++;
      const before = expr.slice(0, i).trimEnd();
      // x.member, p->member and ns::name are C++'s to resolve, not ours.
      if (!(before.endsWith(".") || before.endsWith("->") || before.endsWith("::"))) {
        names.push({ name: expr.slice(i, j), at: i });
      }
      i = j;
      continue;
    }
    if (c === ";") return { problem: "has a ';' (write one expression, not statements)", at: i };
    if (c === "#") return { problem: "has a '#' (no preprocessor lines)", at: i };
    if (c === "/" && (next === "/" || next === "*")) return { problem: "has a comment", at: i };
    if (c === "'" || c === "\\" || c === "`" || c === "@" || c === "$") {
      return { problem: `has a '${c}' (write strings in double quotes)`, at: i };
    }
    if (c === "(" || c === "[" || c === "{") open.push({ c, at: i });
    else if (c === ")" || c === "]" || c === "}") {
      const o = open.pop();
      if (o === undefined) return { problem: `closes a '${c}' it did not open`, at: i };
      if (o.c !== pairs[c]) return { problem: `closes '${o.c}' with '${c}'`, at: i };
    }
    i++;
  }
  const left = open.pop();
  if (left) return { problem: `leaves a '${left.c}' open`, at: left.at };
  if (expr.trim() === "") return { problem: "is empty", at: 0 };
  return { names };
}

/**
 * Reads a backward written as formulas (Note [Backward formulas]) for the
 * forward `fwd`; reports every problem and returns null after any.
 */
export function readFormula(cx: ReaderContext, node: YMap, fwd: FunctionSchema, what: string): BackwardFormula | null {
  const args = callArguments(fwd);
  const byName = new Map(args.map((a) => [a.name, a]));
  const differentiable = args.filter((a) => isPlainTensor(a.type)).map((a) => a.name);
  const nOut = fwd.returns.length;
  const results = nOut === 1 ? ["result"] : fwd.returns.map((_, i) => `result${i}`);
  const own = [...(nOut === 1 ? ["grad"] : []), "grads", ...results];
  const allowed = [...args.map((a) => a.name), ...own, ...FORMULA_CXX_NAMES];
  const allowedText =
    `the arguments (${args.map((a) => a.name).join(", ")}), ${own.join(", ")}, names qualified by at::, c10:: or std::, ` +
    "and true, false, nullptr, int64_t, double";
  const forTensors = `formulas are for the Tensor arguments: ${differentiable.join(", ") || "none"}`;
  let ok = true;
  const err = (loc: SourceLoc, m: string) => {
    cx.error(loc, m);
    ok = false;
  };
  // An argument named like the formula's own names would be shadowed by them.
  const clash = args.find((a) => a.name === "grad" || a.name === "grads" || /^result\d*$/.test(a.name));
  if (clash) {
    err(
      cx.locOf(node),
      `${what} has an argument named ${clash.name}, which a backward formula uses for its own value; ` +
        "rename the argument, or name a backward kernel instead",
    );
  }
  const got = new Map<string, FormulaEntry>();
  let usesResult = false;
  for (const p of node.items) {
    const kLoc = cx.locOf(p.key);
    const k = cx.str(p.key);
    if (k === null) {
      err(kLoc, `${what}: a backward formula's key is not a name; ${forTensors}`);
      continue;
    }
    const arg = byName.get(k);
    if (!arg) {
      const hint = didYouMean(k, differentiable);
      err(
        kLoc,
        `${what}: backward formula for ${q(k)}, which is not an argument${hint}${hint ? " " : "; "}${forTensors}`,
      );
      continue;
    }
    if (!isPlainTensor(arg.type)) {
      err(
        kLoc,
        `${what}: backward formula for ${k}, which is ${printType(arg.type)} and has no gradient; ${forTensors}`,
      );
      continue;
    }
    if (got.has(k)) {
      err(kLoc, `${what}: two backward formulas for ${k}; give each input one`);
      continue;
    }
    const v = p.value;
    const expr = v === null ? null : cx.str(v);
    const vLoc = v === null ? kLoc : cx.locOf(v);
    if (expr === null || expr.trim() === "") {
      err(vLoc, `${what}: the backward formula for ${k} is not a string; write one C++ expression, e.g. "grad * 2"`);
      continue;
    }
    // Columns inside the expression: a quoted scalar starts one character later.
    const quoted = v !== null && cx.quoted(v) ? 1 : 0;
    const at = (i: number): SourceLoc => ({ ...vLoc, col: vLoc.col + quoted + i });
    const read = formulaNames(expr);
    if ("problem" in read) {
      err(at(read.at), `${what}: the backward formula for ${k} ${read.problem}; write one C++ expression`);
      continue;
    }
    let good = true;
    for (const n of read.names) {
      if (n.name === "result" || /^result\d+$/.test(n.name)) usesResult = true;
      if (allowed.includes(n.name)) continue;
      good = false;
      let why: string;
      if (n.name === "grad" && nOut > 1)
        why = `; the operator has ${nOut} outputs, so write grads[i] for output i's gradient`;
      else if (n.name === "result" && nOut > 1) why = `; the operator has ${nOut} outputs: write ${results.join(", ")}`;
      else if (/^result\d+$/.test(n.name)) why = `; the operator's outputs are ${results.join(", ")}`;
      else {
        const hint = didYouMean(n.name, [...args.map((a) => a.name), ...own]);
        why = `${hint}${hint ? " " : "; "}a formula may use ${allowedText} (write at::${n.name} for an ATen function)`;
      }
      err(at(n.at), `${what}: the backward formula for ${k} uses ${q(n.name)}${why}`);
    }
    if (good) got.set(k, { input: k, expr, loc: vLoc });
  }
  if (node.items.length === 0) {
    err(cx.locOf(node), `${what}: the backward mapping is empty; ${forTensors}, or leave backward: out`);
  }
  if (!ok) return null;
  return { entries: differentiable.flatMap((n) => (got.has(n) ? [got.get(n)!] : [])), usesResult };
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

/** Reads `custom:`; entries with errors are dropped (the errors stop generation). */
export function readCustom(cx: ReaderContext, node: unknown): CustomOp[] {
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
    const op = readEntry(cx, item);
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

/** Checks that `backward` names a custom kernel with the conventional signature; reports and returns false if not. */
export function checkBackwardName(
  cx: ReaderContext,
  backward: string,
  fwd: FunctionSchema,
  loc: SourceLoc,
  byKernel: ReadonlyMap<string, CustomOp>,
  what: string,
): boolean {
  const target = byKernel.get(backward);
  if (!target) {
    const known = [...byKernel.keys()].sort();
    const hint = didYouMean(backward, known);
    cx.error(
      loc,
      `${what} names backward kernel ${q(backward)}, which no custom: entry has as its kernel${hint}${hint ? " " : "; "}` +
        `declare the backward as a custom: operator and name its kernel (known: ${known.join(", ") || "none"})`,
    );
    return false;
  }
  const why = backwardProblem(fwd, target.func);
  if (why) {
    cx.error(loc, `${what}: backward ${q(backward)} (${target.name}, line ${target.loc.line}) does not fit: ${why}`);
    return false;
  }
  return true;
}

function readEntry(cx: ReaderContext, item: unknown): CustomOp | null {
  const loc = cx.locOf(item);
  if (!isMap(item)) {
    cx.error(
      loc,
      `custom entry is not a mapping; write func: (a schema), kernel: and optionally backward:, fake:, reference:, doc:`,
    );
    return null;
  }
  const values = new Map<string, { value: unknown; keyLoc: SourceLoc }>();
  for (const p of (item as YMap).items) {
    const k = cx.str(p.key);
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
    values.set(k, { value: p.value, keyLoc: cx.locOf(p.key) });
  }
  let ok = true;
  const text = (key: string): { s: string; loc: SourceLoc } | null => {
    const v = values.get(key);
    if (!v || v.value === null || (isScalar(v.value) && v.value.value === null)) return null;
    const s = cx.str(v.value);
    if (s === null) {
      cx.error(
        cx.locOf(v.value),
        key === "backward"
          ? "custom backward is neither a kernel name nor a mapping of formulas; write backward: <kernel> or backward: {self: <C++ expression>, ...}"
          : `custom ${key} is not a string; write it as one line of text`,
      );
      ok = false;
      return null;
    }
    return { s, loc: cx.locOf(v.value) };
  };

  // --- func
  const funcText = text("func");
  let func: FunctionSchema | null = null;
  if (funcText === null) {
    if (ok)
      cx.error(
        loc,
        "custom entry has no func:; give the operator's schema, e.g. func: fused_gelu(Tensor self) -> Tensor",
      );
    ok = false;
  } else {
    func = parseCustomSchema(cx, funcText.s, funcText.loc);
    if (func === null) ok = false;
  }

  // --- kernel
  const kernelText = text("kernel");
  let kernel = "";
  if (kernelText === null) {
    if (ok || funcText !== null) {
      cx.error(loc, "custom entry has no kernel:; name the C++ kernel that computes it (a function in cpp_namespace)");
    }
    ok = false;
  } else {
    const why = cppIdentifierProblem(kernelText.s);
    if (why) {
      cx.error(
        kernelText.loc,
        `custom kernel ${why}; it must be one C++ identifier, the kernel's name in cpp_namespace`,
      );
      ok = false;
    } else kernel = kernelText.s;
  }

  // --- backward: a kernel (checked against the other entries by readCustom) or formulas
  const bwNode = values.get("backward")?.value;
  let formula: BackwardFormula | null = null;
  if (isMap(bwNode)) {
    if (func !== null) {
      formula = readFormula(cx, bwNode, func, `custom operator ${func.name.name.base}`);
      if (formula === null) ok = false;
    }
    values.delete("backward");
  }
  const bwText = text("backward");
  let backward: string | null = null;
  if (bwText !== null) {
    const why = cppIdentifierProblem(bwText.s);
    if (why) {
      cx.error(
        bwText.loc,
        `custom backward ${why}; name the kernel: of the custom operator that computes the gradients`,
      );
      ok = false;
    } else backward = bwText.s;
  }

  // --- fake, reference: Python expressions over the argument names
  const py = (key: "fake" | "reference" | "samples"): string | null => {
    const t = text(key);
    if (t === null) return null;
    const why = pythonExprProblem(t.s);
    if (why) {
      cx.error(t.loc, `custom ${key} ${why}; it must be one Python expression over the argument names`);
      ok = false;
      return null;
    }
    return t.s;
  };
  const fake = py("fake");
  const reference = py("reference");
  const samples = py("samples");
  const docText = text("doc");
  const doc = docText?.s ?? "";
  if (docText && (/"""|\\/.test(doc) || /[^\x20-\x7e\n]/.test(doc))) {
    cx.error(docText.loc, 'custom doc has """, a backslash or a non-ASCII character; write plain text');
    ok = false;
  }
  if (!ok || func === null) return null;
  const name = func.name.overloadName ? `${func.name.name.base}.${func.name.overloadName}` : func.name.name.base;
  if (reference === null) {
    cx.warn(
      loc,
      `custom operator ${name} has no reference:, so \`opgen-backend test\` cannot check it; give a Python expression`,
    );
  }
  return { name, func, schema: printSchema(func), kernel, backward, formula, fake, reference, samples, doc, loc };
}

/**
 * Parses a custom schema: the device's namespace prefix is optional, others
 * are refused; custom types, mutation and aliasing are refused (a custom
 * operator here is functional: its outputs are new tensors).
 */
function parseCustomSchema(cx: ReaderContext, raw: string, loc: SourceLoc): FunctionSchema | null {
  let s = raw;
  let offset = 0;
  const ns = /^([A-Za-z_][A-Za-z0-9_]*)::/.exec(s);
  if (ns) {
    if (ns[1] !== cx.device) {
      cx.error(
        loc,
        `custom func is in namespace ${q(ns[1]!)}; custom operators live in the device's namespace ${q(cx.device)} (write ${cx.device}:: or nothing)`,
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
  if (cx.atenHasBase(base)) {
    cx.error(
      where(base),
      `custom operator ${q(base)} clashes with the aten operator of that name (torch.ops.aten.${base}); ` +
        `give it a name of its own, e.g. ${cx.device}_${base} or fused_${base}`,
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

/**
 * Reads one mapping entry of `autograd:` (`{op: name, backward: kernel}`);
 * returns the op name and its location, or null after an error.
 */
export function readAutogradMapping(
  cx: ReaderContext,
  item: YMap,
): {
  name: string;
  loc: SourceLoc;
  backward: string | null;
  backwardLoc: SourceLoc | null;
  formulaNode: YMap | null;
} | null {
  let name: string | null = null;
  let nameLoc: SourceLoc | null = null;
  let backward: string | null = null;
  let backwardLoc: SourceLoc | null = null;
  let formulaNode: YMap | null = null;
  let ok = true;
  for (const p of item.items) {
    const k = cx.str(p.key);
    const v = cx.str(p.value);
    if (k === "backward" && isMap(p.value)) {
      // Formulas, read once load.ts has resolved the op (checkAutogradBackwards).
      formulaNode = p.value;
      backwardLoc = cx.locOf(p.value);
    } else if (k === "op" && v !== null) {
      name = v;
      nameLoc = cx.locOf(p.value);
    } else if (k === "backward" && v !== null) {
      const why = cppIdentifierProblem(v);
      if (why) {
        cx.error(cx.locOf(p.value), `autograd backward ${why}; name the kernel: of a custom operator`);
        ok = false;
      }
      backward = v;
      backwardLoc = cx.locOf(p.value);
    } else {
      cx.error(
        cx.locOf(p.key),
        "autograd entry keys are op: (an operator name) and backward: (a custom kernel, or a mapping of formulas: Note [Backward formulas])",
      );
      ok = false;
    }
  }
  if (name === null || nameLoc === null) {
    if (ok) cx.error(cx.locOf(item), "autograd entry has no op:; write {op: <operator>, backward: <custom kernel>}");
    return null;
  }
  return ok ? { name, loc: nameLoc, backward, backwardLoc, formulaNode } : null;
}

/** The checked backwards of `autograd:` entries (load.ts resolved the ops). */
export function checkAutogradBackwards(
  cx: ReaderContext,
  entries: readonly {
    name: string;
    loc: SourceLoc;
    fn: NativeFunction;
    backward: string | null;
    backwardLoc: SourceLoc | null;
    formulaNode: YMap | null;
  }[],
  custom: readonly CustomOp[],
  autogradKey: string,
): AutogradBackward[] {
  const byKernel = new Map(custom.map((o) => [o.kernel, o]));
  const out: AutogradBackward[] = [];
  for (const e of entries) {
    const why = functionProblem(e.fn);
    if (why !== null) {
      // Note [Autograd entries are Functions]: such an entry keeps torchgen's
      // meaning, which the vendor may not expect from the mapping form.
      cx.warn(
        e.loc,
        `autograd entry ${e.name} gets no generated autograd Function: ${why}; it is registered on ${autogradKey} ` +
          `as torchgen does, so its kernel must record autograd itself` +
          (e.backward !== null || e.formulaNode !== null ? " and its backward: is not used" : "") +
          "; list it as a plain name to say so, or list a functional overload instead",
      );
    }
    if (e.formulaNode !== null) {
      const formula = readFormula(cx, e.formulaNode, e.fn.func, `autograd entry ${e.name}`);
      if (formula !== null) out.push({ op: e.name, backward: null, formula, loc: e.backwardLoc ?? e.loc });
      continue;
    }
    if (e.backward === null || e.backwardLoc === null) {
      out.push({ op: e.name, backward: null, formula: null, loc: e.loc });
      continue;
    }
    if (checkBackwardName(cx, e.backward, e.fn.func, e.backwardLoc, byKernel, `autograd entry ${e.name}`)) {
      out.push({ op: e.name, backward: e.backward, formula: null, loc: e.backwardLoc });
    }
  }
  return out;
}

export type { Diagnostic };
