/**
 * Custom operators (the backend YAML's `custom:`: vendor operators declared
 * by schema in the device's namespace) and backwards (a custom entry's, or
 * an `autograd:` mapping entry's `{op: gelu, backward: <kernel>}`): what
 * they are, and the rules the readers (src/backend/keys/custom.ts,
 * keys/backward.ts) and the emitters (src/dest) share.
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
import { callArguments, printType, schemaKind, typeEquals } from "../model/schema.js";
import type { FunctionSchema, NativeFunction, Type } from "../model/types.js";
import type { SourceLoc } from "../util/errors.js";

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
export const FORMULA_CXX_NAMES = ["at", "c10", "std", "true", "false", "nullptr", "int64_t", "double"] as const;

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
