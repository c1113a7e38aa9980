/**
 * Plan -> `ops.py`: the Python side of the `custom:` operators, which the
 * project's setup.py installs as `<python_package>.ops`: a typed wrapper per
 * operator (docstring from the YAML's doc:), the fake registration
 * torch.compile traces with (torch.library.register_fake: the entry's fake:
 * expression, or for an operator that is another's backward, tensors like
 * the forward's Tensor arguments, Note [Backward convention]), and the
 * reference implementations and samples the conformance runner compares
 * with (`REFERENCES`, `SAMPLES`). Written only when there are custom operators; the
 * package imports it when it is there.
 */
import { backwardProblem, type CustomOp, isPlainTensor } from "../backend/custom.js";
import { callArguments } from "../model/schema.js";
import type { Argument, Type } from "../model/types.js";
import type { Plan } from "./plan.js";

function pyType(t: Type): string {
  switch (t.kind) {
    case "base":
      switch (t.name) {
        case "Tensor":
          return "Tensor";
        case "int":
        case "SymInt":
          return "int";
        case "float":
          return "float";
        case "bool":
          return "bool";
        case "str":
          return "str";
        case "Scalar":
          return "Union[int, float, bool]";
        default:
          return "Any";
      }
    case "optional":
      return `Optional[${pyType(t.elem)}]`;
    case "list":
      return `List[${pyType(t.elem)}]`;
    default:
      return "Any";
  }
}

function pyDefault(d: string): string {
  if (d === "Mean") return "1";
  if (d === "Sum") return "2";
  return d;
}

function params(func: CustomOp["func"], typed: boolean): string {
  const p = (a: Argument) =>
    `${a.name}${typed ? `: ${pyType(a.type)}` : ""}${a.default !== null ? `${typed ? " = " : "="}${pyDefault(a.default)}` : ""}`;
  const pos = func.arguments.positional.map(p);
  const kw = func.arguments.kwargOnly.map(p);
  return [...pos, ...(kw.length > 0 ? ["*", ...kw] : [])].join(", ");
}

function returns(func: CustomOp["func"]): string {
  if (func.returns.length === 0) return "None";
  if (func.returns.length === 1) return pyType(func.returns[0]!.type);
  return `Tuple[${func.returns.map((r) => pyType(r.type)).join(", ")}]`;
}

export function emitOpsModule(plan: Plan, banner: string): string {
  const c = plan.config;
  const L: string[] = [];
  L.push(`# ${banner}`);
  L.push(`"""Custom operators of the ${c.device} device (torch.ops.${c.device}), declared under`);
  L.push("custom: in backend.yaml: typed wrappers, fake registrations for torch.compile,");
  L.push('and the reference implementations the conformance runner checks against."""');
  L.push("");
  L.push("from typing import Any, List, Optional, Tuple, Union  # noqa: F401");
  L.push("");
  L.push("import torch");
  L.push("from torch import Tensor");
  L.push("");
  L.push(`__all__ = [${c.custom.map((o) => JSON.stringify(o.name.replace(".", "_"))).join(", ")}]`);
  L.push("");
  for (const o of c.custom) {
    const dot = o.name.indexOf(".");
    const [base, overload] = dot < 0 ? [o.name, "default"] : [o.name.slice(0, dot), o.name.slice(dot + 1)];
    const py = o.name.replace(".", "_");
    const names = callArguments(o.func).map((a) => a.name);
    const callArgs = [
      ...o.func.arguments.positional.map((a) => a.name),
      ...o.func.arguments.kwargOnly.map((a) => `${a.name}=${a.name}`),
    ];
    L.push("");
    L.push(`def ${py}(${params(o.func, true)}) -> ${returns(o.func)}:`);
    L.push(`    """${(o.doc || `${c.device}::${o.name}`).trimEnd().split("\n").join("\n    ")}`);
    L.push("");
    L.push(`    Schema: ${c.device}::${o.schema}`);
    L.push('    """');
    L.push(`    return torch.ops.${c.device}.${base}.${overload}(${callArgs.join(", ")})`);
    L.push("");
    let fake = o.fake;
    // A backward operator fake-registers as tensors like its forward's Tensor arguments.
    const fwd = plan.backwardForwards.get(o.name);
    if (fake === null && fwd && backwardProblem(fwd, o.func) === null) {
      const nGrads = fwd.returns.filter((r) => isPlainTensor(r.type)).length;
      const like = callArguments(fwd)
        .map((a, i) => (isPlainTensor(a.type) ? names[nGrads + i]! : null))
        .filter((n): n is string => n !== null)
        .map((n) => `torch.empty_like(${n})`);
      fake = like.length === 1 ? like[0]! : `(${like.join(", ")})`;
    }
    if (fake !== null) {
      L.push("");
      L.push(`@torch.library.register_fake(${JSON.stringify(`${c.device}::${o.name}`)})`);
      L.push(`def _fake_${py}(${params(o.func, false)}):`);
      L.push(`    return (${fake})`);
      L.push("");
    }
    if (o.reference !== null) {
      L.push("");
      L.push(`def _reference_${py}(${params(o.func, false)}):`);
      L.push(`    return (${o.reference})`);
      L.push("");
    }
  }
  L.push("");
  L.push("# Operator name -> reference implementation, for `opgen-backend test`.");
  const refs = c.custom.filter((o) => o.reference !== null);
  L.push(
    `REFERENCES = {${refs.map((o) => `${JSON.stringify(o.name)}: _reference_${o.name.replace(".", "_")}`).join(", ")}}`,
  );
  L.push("");
  L.push("# Operators with a backward (custom: backward:, a kernel or formulas): the runner checks their gradients.");
  L.push(
    `DIFFERENTIABLE = {${c.custom
      .filter((o) => o.backward !== null || o.formula !== null)
      .map((o) => JSON.stringify(o.name))
      .join(", ")}}`,
  );
  L.push("");
  L.push("# Operator name -> its conformance samples for a dtype, a list of (args, kwargs) (custom: samples:).");
  const sampled = c.custom.filter((o) => o.samples !== null);
  L.push(`SAMPLES = {${sampled.map((o) => `${JSON.stringify(o.name)}: lambda dtype: (${o.samples})`).join(", ")}}`);
  L.push("");
  // Note [Custom samples] (python/opgen_conformance/custom.py): where to add samples:; the file's own name, so
  // the module does not depend on where gen ran.
  L.push("# Operator name -> its custom: entry in backend.yaml, for the runner's messages.");
  L.push(
    `LOCATIONS = {${c.custom
      .map(
        (o) =>
          `${JSON.stringify(o.name)}: ${JSON.stringify(`${o.loc.file.split(/[\\/]/).pop()}:${o.loc.line}:${o.loc.col}`)}`,
      )
      .join(", ")}}`,
  );
  L.push("");
  L.push("# Operator name -> its schema, as TORCH_LIBRARY defines it.");
  L.push(`SCHEMAS = {${c.custom.map((o) => `${JSON.stringify(o.name)}: ${JSON.stringify(o.schema)}`).join(", ")}}`);
  L.push("");
  return L.join("\n");
}
