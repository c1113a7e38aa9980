/**
 * Coverage of a backend against the installed torch: which core-ATen
 * overloads it registers (directly or through a derived out/inplace wrapper),
 * which it lacks, and what happens to a lacking op at run time: it decomposes
 * (CompositeImplicitAutograd), runs a composite kernel on top of other ops
 * (CompositeExplicitAutograd[NonFunctional]), or falls back to CPU through the
 * boxed fallback. The registered set comes from the same plan `gen` emits
 * from, so coverage can never disagree with what is registered.
 */
import type { BackendConfig } from "../backend/types.js";
import type { NativeFunction, OperatorCatalog } from "../model/types.js";
import { assertNever, formatDiagnostic } from "../util/errors.js";
import { cmp } from "../vocab.js";
import { type GradientReport, gradientReport } from "./gradients.js";
import { buildPlan } from "./plan.js";

export type Fate = "decomposes" | "composite-kernel" | "cpu-fallback" | "not-implemented";

export interface CoverageReport {
  readonly backend: string;
  readonly device: string;
  readonly torchVersion: string;
  readonly fallback: BackendConfig["fallback"];
  readonly core: {
    readonly total: number;
    readonly covered: number;
    readonly coveredOps: readonly { readonly name: string; readonly servedBy: string }[];
    readonly missing: readonly { readonly name: string; readonly fate: Fate }[];
  };
  readonly registeredTotal: number;
  /** Every operator of the installed torch that is neither registered nor composite (falls back, or fails with fallback: none). */
  readonly cpuFallback: readonly string[];
  /** Where each served operator's gradient comes from (Note [Gradient sources] in src/dest/gradients.ts). */
  readonly autograd: {
    readonly counts: GradientReport["counts"];
    readonly ops: GradientReport["ops"];
    readonly warnings: readonly string[];
  };
}

/** What happens at run time to an operator the backend does not register (`fallback:` decides the last case). */
export function fateOf(f: NativeFunction, fallback: BackendConfig["fallback"]): Fate {
  if (f.hasCompositeImplicitAutogradKernel) return "decomposes";
  if (f.hasCompositeExplicitAutogradKernel || f.hasCompositeExplicitAutogradNonFunctionalKernel) {
    return "composite-kernel";
  }
  switch (fallback) {
    case "cpu":
      return "cpu-fallback";
    case "none":
      return "not-implemented";
    default:
      return assertNever(fallback, "fallback policy");
  }
}

export function computeCoverage(config: BackendConfig, catalog: OperatorCatalog): CoverageReport {
  const plan = buildPlan(config, catalog);
  const registered = new Map<string, string>();
  for (const r of [...plan.backend.registrations, ...(plan.autograd?.registrations ?? [])]) {
    registered.set(r.f.name, r.servedBy);
  }
  for (const f of plan.runtime) registered.set(f.name, "runtime");

  const coveredOps: { name: string; servedBy: string }[] = [];
  const missing: { name: string; fate: Fate }[] = [];
  const cpuFallback: string[] = [];
  for (const f of catalog.functions) {
    const name = f.name;
    const servedBy = registered.get(name);
    const isCore = f.tags.includes("core");
    if (servedBy !== undefined) {
      if (isCore) coveredOps.push({ name, servedBy });
      continue;
    }
    const fate = fateOf(f, config.fallback);
    if (isCore) missing.push({ name, fate });
    if (fate === "cpu-fallback" || fate === "not-implemented") cpuFallback.push(name);
  }
  const grads = gradientReport(plan, catalog);
  const byName = (a: { name: string }, b: { name: string }) => cmp(a.name, b.name);
  coveredOps.sort(byName);
  missing.sort(byName);
  cpuFallback.sort();
  return {
    backend: config.backend,
    device: config.device,
    torchVersion: catalog.torchVersion,
    fallback: config.fallback,
    core: { total: coveredOps.length + missing.length, covered: coveredOps.length, coveredOps, missing },
    registeredTotal: registered.size,
    cpuFallback,
    autograd: { counts: grads.counts, ops: grads.ops, warnings: grads.warnings.map(formatDiagnostic) },
  };
}

export function formatCoverageTable(c: CoverageReport, opts: { all: boolean }): string {
  const lines: string[] = [];
  const pct = c.core.total === 0 ? 0 : (100 * c.core.covered) / c.core.total;
  lines.push(`backend ${c.backend} (device '${c.device}') against torch ${c.torchVersion}`);
  lines.push(`core ATen: ${c.core.covered}/${c.core.total} overloads registered (${pct.toFixed(1)}%)`);
  lines.push(`registered overloads in all: ${c.registeredTotal}`);
  const fates: Record<Fate, string[]> = {
    decomposes: [],
    "composite-kernel": [],
    "cpu-fallback": [],
    "not-implemented": [],
  };
  for (const m of c.core.missing) fates[m.fate].push(m.name);
  const limit = opts.all ? Number.POSITIVE_INFINITY : 12;
  const describe: Record<Fate, string> = {
    "cpu-fallback": "missing core overloads that fall back to CPU",
    "not-implemented": "missing core overloads that raise NotImplementedError (fallback: none)",
    "composite-kernel": "missing core overloads served by a composite kernel over other ops",
    decomposes: "missing core overloads that decompose (CompositeImplicitAutograd)",
  };
  for (const fate of ["cpu-fallback", "not-implemented", "composite-kernel", "decomposes"] as const) {
    if (fate === "cpu-fallback" && c.fallback === "none") continue;
    if (fate === "not-implemented" && c.fallback === "cpu") continue;
    const names = fates[fate];
    lines.push("");
    lines.push(`${describe[fate]}: ${names.length}`);
    for (const n of names.slice(0, limit)) lines.push(`  ${n}`);
    if (names.length > limit) lines.push(`  ... ${names.length - limit} more (--all to list)`);
  }
  lines.push("");
  const what = c.fallback === "cpu" ? "would fall back to CPU" : "would raise (no fallback)";
  lines.push(`operators of this torch that ${what}: ${c.cpuFallback.length} (--json lists them)`);
  const g = c.autograd.counts;
  lines.push(
    `gradients: ${g["derivatives.yaml"]} from derivatives.yaml, ${g.composite} composite, ${g.vendor} from the ` +
      `vendor's autograd, ${g.nowhere} with none (--json lists each)`,
  );
  for (const w of c.autograd.warnings) lines.push(`  ${w}`);
  return `${lines.join("\n")}\n`;
}
