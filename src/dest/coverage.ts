/**
 * Coverage of a backend against the installed torch: which core-ATen
 * overloads it registers (directly or through a derived out/inplace wrapper),
 * which it lacks, and what happens to a lacking op at run time: it decomposes
 * (CompositeImplicitAutograd), runs a composite kernel on top of other ops
 * (CompositeExplicitAutograd[NonFunctional]), or falls back to CPU through the
 * boxed fallback. The registered set comes from the same plan `gen` emits
 * from, so coverage can never disagree with what is registered.
 *
 * `coverage --model` asks the same of the overloads a model reaches instead
 * of the core set (Note [Model coverage]).
 */
import type { BackendConfig } from "../backend/types.js";
import { operatorNameString } from "../model/schema.js";
import type { NativeFunction, OperatorCatalog } from "../model/types.js";
import { assertNever, formatDiagnostic } from "../util/errors.js";
import type { Style } from "../util/term.js";
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

/**
 * Note [Model coverage]: `coverage --model` judges the overloads a model's
 * cases dispatch on eager CPU (traced below autograd and the
 * CompositeImplicitAutograd decompositions: python/opgen_conformance/models.py
 * model_ops) against the same plan `gen` emits from. Each overload is
 *
 * - `listed`: its own kernel (supported:, full_codegen:, autograd:) or the
 *   runtime's (runtime:);
 * - `derived`: a wrapper gen makes over a listed sibling (the plan's
 *   derived_out/derived_inplace/derived_functional);
 * - `composite`: a composite kernel that runs on other operators: an explicit
 *   CompositeExplicitAutograd(NonFunctional) or CompositeImplicitAutograd one,
 *   or, for a structured_delegate overload (`addmm`, `silu_`), the kernel
 *   torchgen generates for every device that calls its out= overload
 *   (`addmm.out`) when that one is served. The trace does not see inside a
 *   composite: the operators it calls are checked by `test --model` on the
 *   device, not here;
 * - `fallback` (fallback: cpu) or `unsupported` (fallback: none): nothing of
 *   the device serves it. A structured_delegate overload whose out= overload is
 *   not served reaches the fallback as that out= overload (`detail`);
 * - `other`: not an operator of native_functions.yaml (profiler::*, the
 *   Python key's own): torch registers those for every device.
 *
 * The missing ones (fallback, unsupported) are what `--add` lists under
 * supported:, by the name the trace gave, so the kernel is the one the model
 * calls (gen derives its out=/inplace siblings from it).
 */
export type ModelFate = "listed" | "derived" | "composite" | "fallback" | "unsupported" | "other";

/** Report order: what needs work first. */
export const MODEL_FATES: readonly ModelFate[] = ["unsupported", "fallback", "composite", "derived", "listed", "other"];

export interface ModelOpCounts {
  readonly forward: number;
  readonly backward: number;
  readonly step: number;
}

/** One case as the runner traced it (`python -m opgen_conformance model-ops`). */
export interface TracedCase {
  /** `<file stem>:<case>` */
  readonly name: string;
  readonly ops: Readonly<Record<string, ModelOpCounts>>;
}

export interface ModelOpCoverage extends ModelOpCounts {
  readonly name: string;
  readonly fate: ModelFate;
  /**
   * listed: the section (supported, full_codegen, autograd, runtime); derived:
   * `from <listed overload>`; composite: the kernel (CompositeExplicitAutograd,
   * ..., `through <out= overload>`); fallback/unsupported: `as <out= overload>`
   * when that is what reaches the fallback, else empty; other: why.
   */
  readonly detail: string;
  /** The cases that dispatch it (their `name`s), in the order given. */
  readonly cases: readonly string[];
}

export interface ModelCoverageReport {
  readonly backend: string;
  readonly device: string;
  readonly torchVersion: string;
  readonly fallback: BackendConfig["fallback"];
  readonly cases: readonly string[];
  readonly counts: Readonly<Record<ModelFate, number>>;
  /** Every overload the cases reach, sorted by name. */
  readonly ops: readonly ModelOpCoverage[];
  /** The overloads nothing of the device serves: what `--add` lists under supported:. */
  readonly missing: readonly string[];
}

export function computeModelCoverage(
  config: BackendConfig,
  catalog: OperatorCatalog,
  traced: readonly TracedCase[],
): ModelCoverageReport {
  const plan = buildPlan(config, catalog);
  const registered = new Map<string, { servedBy: string; from: string }>();
  for (const r of [...plan.backend.registrations, ...(plan.autograd?.registrations ?? [])]) {
    registered.set(r.op, { servedBy: r.servedBy, from: r.kernel.entry.name });
  }
  const sections: [string, readonly { name: string }[]][] = [
    ["supported", config.supported],
    ["full_codegen", config.fullCodegen],
    ["autograd", config.autograd],
    ["runtime", config.runtime],
  ];
  const section = new Map<string, string>();
  for (const [key, entries] of sections) for (const e of entries) if (!section.has(e.name)) section.set(e.name, key);
  const runtime = new Set(config.runtime.map((e) => e.name));
  const served = (name: string) => registered.has(name) || runtime.has(name);
  const missingFate: ModelFate = config.fallback === "cpu" ? "fallback" : "unsupported";

  const fate = (name: string): { fate: ModelFate; detail: string } => {
    const reg = registered.get(name);
    if (reg !== undefined) {
      return reg.servedBy.startsWith("derived")
        ? { fate: "derived", detail: `from ${reg.from}` }
        : { fate: "listed", detail: section.get(name) ?? "supported" };
    }
    if (runtime.has(name)) return { fate: "listed", detail: "runtime" };
    const f = name.includes("::") ? undefined : catalog.byName.get(name);
    if (f === undefined)
      return { fate: "other", detail: "not in native_functions.yaml: torch serves it on every device" };
    if (f.hasCompositeImplicitAutogradKernel) return { fate: "composite", detail: "CompositeImplicitAutograd" };
    if (f.hasCompositeExplicitAutogradKernel) return { fate: "composite", detail: "CompositeExplicitAutograd" };
    if (f.hasCompositeExplicitAutogradNonFunctionalKernel) {
      return { fate: "composite", detail: "CompositeExplicitAutogradNonFunctional" };
    }
    if (f.structuredDelegate !== null) {
      const out = operatorNameString(f.structuredDelegate);
      if (served(out)) return { fate: "composite", detail: `through ${out}` };
      return { fate: missingFate, detail: `as ${out}` };
    }
    return { fate: missingFate, detail: "" };
  };

  const byOp = new Map<string, { forward: number; backward: number; step: number; cases: string[] }>();
  for (const c of traced) {
    for (const [name, n] of Object.entries(c.ops)) {
      let o = byOp.get(name);
      if (o === undefined) {
        o = { forward: 0, backward: 0, step: 0, cases: [] };
        byOp.set(name, o);
      }
      o.forward += n.forward;
      o.backward += n.backward;
      o.step += n.step;
      if (!o.cases.includes(c.name)) o.cases.push(c.name);
    }
  }
  const ops: ModelOpCoverage[] = [...byOp]
    .map(([name, o]) => ({ name, ...fate(name), ...o }))
    .sort((a, b) => cmp(a.name, b.name));
  const counts = Object.fromEntries(MODEL_FATES.map((f) => [f, 0])) as Record<ModelFate, number>;
  for (const o of ops) counts[o.fate]++;
  return {
    backend: config.backend,
    device: config.device,
    torchVersion: catalog.torchVersion,
    fallback: config.fallback,
    cases: traced.map((c) => c.name),
    counts,
    ops,
    missing: ops.filter((o) => o.fate === "fallback" || o.fate === "unsupported").map((o) => o.name),
  };
}

const PLAIN: Style = { red: (s) => s, green: (s) => s, yellow: (s) => s, dim: (s) => s, bold: (s) => s };

const FATE_TITLE: Readonly<Record<ModelFate, string>> = {
  unsupported: "unsupported (fallback: none: these raise on the device)",
  fallback: "falls back to CPU",
  composite: "composite (runs through other operators, which `test --model` checks on the device)",
  derived: "derived (gen wraps a listed sibling)",
  listed: "listed (a kernel of the backend or its runtime)",
  other: "other (not in native_functions.yaml; no kernel needed)",
};

/** The cases column: every case, or the first few. */
function casesCell(cases: readonly string[], all: readonly string[], short: (c: string) => string): string {
  if (all.length > 1 && cases.length === all.length) return `all ${all.length} cases`;
  const shown = cases.slice(0, 3).map(short).join(", ");
  return cases.length > 3 ? `${shown} +${cases.length - 3} more` : shown;
}

/** The terminal listing: per fate, each overload with its counts and the cases that need it. */
export function formatModelCoverage(r: ModelCoverageReport, st: Style = PLAIN): string {
  const stems = new Set(r.cases.map((c) => c.slice(0, c.lastIndexOf(":"))));
  const short = (c: string) => (stems.size === 1 ? c.slice(c.lastIndexOf(":") + 1) : c);
  const total = (k: keyof ModelOpCounts) => r.ops.reduce((s, o) => s + (o[k] > 0 ? 1 : 0), 0);
  const lines: string[] = [];
  lines.push(`backend ${r.backend} (device '${r.device}', fallback: ${r.fallback}) against torch ${r.torchVersion}`);
  lines.push(
    `${r.cases.length} case${r.cases.length === 1 ? "" : "s"} (${r.cases.map(short).join(", ")}) reach ` +
      `${r.ops.length} overloads: ${total("forward")} in forward, ${total("backward")} in backward, ${total("step")} in the optimizer step`,
  );
  const label = (o: ModelOpCoverage) => (o.detail && o.fate !== "other" ? `${o.name} (${o.detail})` : o.name);
  const width = Math.max(8, ...r.ops.map((o) => label(o).length));
  const num = (n: number) => String(n).padStart(5);
  const paint: Readonly<Record<ModelFate, (s: string) => string>> = {
    unsupported: st.red,
    fallback: st.red,
    composite: st.yellow,
    derived: st.green,
    listed: st.green,
    other: st.dim,
  };
  for (const fate of MODEL_FATES) {
    const these = r.ops.filter((o) => o.fate === fate);
    if (these.length === 0) continue;
    lines.push("");
    lines.push(st.bold(paint[fate](`${FATE_TITLE[fate]}: ${these.length}`)));
    lines.push(st.dim(`  ${"overload".padEnd(width)}   fwd  bwd  step  cases`));
    for (const o of these) {
      lines.push(
        `  ${label(o).padEnd(width)} ${num(o.forward)}${num(o.backward)}${num(o.step)}  ${casesCell(o.cases, r.cases, short)}`,
      );
    }
  }
  lines.push("");
  const n = r.missing.length;
  if (n === 0) lines.push(st.green("every overload the model reaches is served natively"));
  else {
    const what = r.fallback === "cpu" ? "would fall back to CPU" : "would raise (fallback: none)";
    lines.push(paint[r.fallback === "cpu" ? "fallback" : "unsupported"](`${n} overload${n === 1 ? "" : "s"} ${what}`));
  }
  return `${lines.join("\n")}\n`;
}
