/**
 * The autograd report (issue 14): for every operator the backend serves,
 * where its gradient comes from. `gen` prints the one-line summary and the
 * warnings; `coverage --json` carries the per-op detail.
 *
 * Note [Gradient sources]: an overload served on the device gets its
 * gradient from
 * - `vendor`: the vendor's own autograd, an `autograd:` entry (a generated
 *   Function, Note [Autograd entries are Functions]; `backward` names its
 *   backward kernel, null when it raises; `noFunction` says why a mapping
 *   entry got none and was registered as torchgen does), or a kernel registered on
 *   Autograd<Key> as torchgen does (the kernel records autograd itself);
 * - `derivatives.yaml`: PyTorch's formula, run by VariableType over the
 *   device's kernels;
 * - `composite`: an unregistered CompositeImplicitAutograd overload
 *   decomposes, and its gradient is its parts';
 * - `nowhere`: none. Notably a kernel registered for a
 *   CompositeImplicitAutograd overload: the dispatcher then uses the
 *   kernel below autograd and the decomposition nowhere, and derivatives.yaml
 *   has no formula for it, so gradients silently stop (a warning says so,
 *   unless the overload is listed under autograd:).
 * out= overloads (not differentiable in PyTorch) and overloads that return
 * no tensor are not listed.
 */
import { functionProblem } from "../backend/custom.js";
import type { BackendConfig } from "../backend/types.js";
import { coreOverloads, isTensorLike } from "../model/catalog.js";
import { schemaKind } from "../model/schema.js";
import type { NativeFunction, OperatorCatalog, SchemaKind } from "../model/types.js";
import type { Diagnostic, SourceLoc } from "../util/errors.js";
import type { Plan } from "./plan.js";

export type GradientSource = "vendor" | "derivatives.yaml" | "composite" | "nowhere";

export interface GradientEntry {
  readonly name: string;
  readonly source: GradientSource;
  /** For `vendor` from a generated Function: the backward kernel, or null (raises). */
  readonly backward?: string | null;
  /**
   * For an `autograd:` mapping entry that gets no generated Function (in-place,
   * out=, a view, an argument that cannot be saved): why; it is registered as
   * torchgen does and its kernel must record autograd itself.
   */
  readonly noFunction?: string;
  /** For `vendor` from formulas (Note [Backward formulas]): the inputs that have one. */
  readonly formula?: readonly string[];
}

export interface GradientReport {
  readonly counts: Readonly<Record<GradientSource, number>>;
  readonly ops: readonly GradientEntry[];
  readonly warnings: readonly Diagnostic[];
}

export function gradientReport(plan: Plan, catalog: OperatorCatalog): GradientReport {
  const c: BackendConfig = plan.config;
  const autogradLoc = new Map(c.autograd.map((e) => [e.name, e.loc]));
  // The first `supported:` entry of each name (a warning points at it); a
  // lookup per warning, not a scan, since a backend may list every operator.
  const supportedLoc = new Map<string, SourceLoc>();
  for (const e of c.supported) if (!supportedLoc.has(e.name)) supportedLoc.set(e.name, e.loc);
  const ops: GradientEntry[] = [];
  const warnings: Diagnostic[] = [];
  const seen = new Set<string>();
  const derivatives = catalog.derivatives;
  // Each served overload with the kind the plan gave it (runtime functions
  // are not registrations: their kind is read here).
  const served: { readonly f: NativeFunction; readonly kind: SchemaKind }[] = [
    ...plan.backend.registrations,
    ...(plan.autograd?.registrations ?? []),
  ];
  for (const f of plan.runtime) served.push({ f, kind: schemaKind(f.func) });
  for (const { f, kind } of served) {
    if (seen.has(f.name)) continue;
    seen.add(f.name);
    if (kind === "out" || !f.func.returns.some((r) => isTensorLike(r.type))) continue;
    const noFunction = c.autogradBackward.has(f.name) ? functionProblem(f) : null;
    if (noFunction !== null) {
      ops.push({ name: f.name, source: "vendor", noFunction });
    } else if (c.autogradFormula.has(f.name)) {
      const inputs = c.autogradFormula.get(f.name)!.entries.map((e) => e.input);
      ops.push({ name: f.name, source: "vendor", formula: inputs });
    } else if (c.autogradBackward.has(f.name)) {
      ops.push({ name: f.name, source: "vendor", backward: c.autogradBackward.get(f.name) ?? null });
    } else if (autogradLoc.has(f.name)) {
      ops.push({ name: f.name, source: "vendor" });
    } else if (
      derivatives.has(f.name) ||
      // VariableType gives an inplace overload its functional's formula.
      (kind === "inplace" && derivatives.has(catalog.groupOf.get(f.name)?.functional.name ?? ""))
    ) {
      ops.push({ name: f.name, source: "derivatives.yaml" });
    } else {
      ops.push({ name: f.name, source: "nowhere" });
      if (f.hasCompositeImplicitAutogradKernel) {
        const loc = supportedLoc.get(f.name);
        warnings.push({
          severity: "warning",
          ...(loc ? { loc } : {}),
          message:
            `${f.name} is CompositeImplicitAutograd: with a kernel of its own it no longer decomposes, so it has ` +
            `no gradient; list it under autograd: with a backward ({op: ${f.name}, backward: <kernel>}), or drop its kernel`,
        });
      }
    }
  }
  for (const o of c.custom) {
    ops.push(
      o.formula !== null
        ? { name: `${c.device}::${o.name}`, source: "vendor", formula: o.formula.entries.map((e) => e.input) }
        : o.backward === null
          ? { name: `${c.device}::${o.name}`, source: "nowhere" }
          : { name: `${c.device}::${o.name}`, source: "vendor", backward: o.backward },
    );
  }
  for (const f of coreOverloads(catalog)) {
    if (seen.has(f.name) || !f.hasCompositeImplicitAutogradKernel) continue;
    if (schemaKind(f.func) === "out") continue;
    ops.push({ name: f.name, source: "composite" });
  }
  ops.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const counts: Record<GradientSource, number> = { vendor: 0, "derivatives.yaml": 0, composite: 0, nowhere: 0 };
  for (const o of ops) counts[o.source]++;
  return { counts, ops, warnings };
}

/** `gen`'s one line. */
export function gradientSummary(r: GradientReport): string {
  const n = r.counts;
  return (
    `autograd: ${n["derivatives.yaml"]} from derivatives.yaml, ${n.composite} composite (core, decomposed), ` +
    `${n.vendor} from the vendor's autograd, ${n.nowhere} with no gradient` +
    (r.warnings.length > 0 ? `; ${r.warnings.length} warning(s)` : "")
  );
}
