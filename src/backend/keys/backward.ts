/**
 * `backward:` wherever the backend YAML writes it, and the mapping form of
 * `autograd:` entries (`{op: gelu, backward: <kernel>}`): a backward names a
 * custom operator's kernel (Note [Backward convention]) or gives formulas
 * (Note [Backward formulas]), both in src/backend/custom.ts. A custom entry's
 * backward is read with the entry (keys/custom.ts); an autograd entry's once
 * load.ts has resolved its operator.
 */
import { callArguments, printType } from "../../model/schema.js";
import type { FunctionSchema, NativeFunction } from "../../model/types.js";
import type { SourceLoc } from "../../util/errors.js";
import { isMap, type YMap } from "../../yaml/tree.js";
import {
  type AutogradBackward,
  type BackwardFormula,
  backwardProblem,
  type CustomOp,
  FORMULA_CXX_NAMES,
  type FormulaEntry,
  formulaNames,
  functionProblem,
  isPlainTensor,
} from "../custom.js";
import { cppIdentifierProblem, q } from "../names.js";
import { didYouMean } from "../suggest.js";
import { type KeyContext, pyyamlString } from "./context.js";

/**
 * Reads a backward written as formulas (Note [Backward formulas]) for the
 * forward `fwd`; reports every problem and returns null after any.
 */
export function readFormula(cx: KeyContext, node: YMap, fwd: FunctionSchema, what: string): BackwardFormula | null {
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
    const k = pyyamlString(p.key);
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
    const expr = v === null ? null : pyyamlString(v);
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

/** Checks that `backward` names a custom kernel with the conventional signature; reports and returns false if not. */
export function checkBackwardName(
  cx: KeyContext,
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

/**
 * Reads one mapping entry of `autograd:` (`{op: name, backward: kernel}`);
 * returns the op name and its location, or null after an error.
 */
export function readAutogradMapping(
  cx: KeyContext,
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
    const k = pyyamlString(p.key);
    const v = pyyamlString(p.value);
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
  cx: KeyContext,
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
