/**
 * Model-level conformance (`opgen-backend test --model FILE[:NAME]`): which
 * cases a model file holds (asked of the Python runner, which imports it),
 * and the "models" section every report carries, made from the runner's
 * per-case records (python/opgen_conformance/models.py) and the manifest.
 *
 * A case is a task of the runner like an (op, dtype): its results are
 * ordinary results whose op is `model:<file>:<case>` and whose dtype is
 * float32 (expectations, JUnit and report diff take them as they are); what
 * only a model has (the overloads it dispatched and how each was served,
 * its fallbacks, its step time, the first divergent operator) is in
 * `Report.models`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { cmp } from "../vocab.js";
import type { RunConfigModel } from "./runconfig.js";
import { runnerOutput } from "./runner.js";
import type { ManifestOp } from "./select.js";
import type { RawRecord, Result, Status } from "./types.js";

export const MODEL_PREFIX = "model:";

/** A case's one dtype (python/opgen_conformance/scheduler.py MODEL_DTYPE). */
export const MODEL_DTYPE = "float32";

/** python/opgen_conformance/models.py MODEL_CHECKS: the checks of one case, in report order. */
export const MODEL_CHECKS = ["errors", "values", "gradients", "step", "fallback", "compile"] as const;

export function isModel(op: string): boolean {
  return op.startsWith(MODEL_PREFIX);
}

/** How the device served one overload a case dispatched. */
export type Served = "kernel" | "derived" | "runtime" | "composite" | "fallback" | "other";

export interface ModelOp {
  readonly name: string;
  readonly served: Served;
  readonly forward: number;
  readonly backward: number;
  readonly step: number;
}

export interface ModelDivergence {
  readonly op: string;
  readonly phase: string;
  /** the call's index in the device run, and its counterpart's in eager's (null: none) */
  readonly index: number;
  readonly eager_index: number | null;
  readonly calls: number;
  readonly inputs: string;
  readonly message: string;
  /** the saved call; `python -m opgen_conformance replay --config C --file F` reruns it alone */
  readonly replay?: string;
}

export interface ModelCase {
  readonly name: string;
  readonly file: string;
  readonly case: string;
  readonly status: Status;
  readonly ops: readonly ModelOp[];
  readonly fallback: Readonly<Record<string, number>>;
  /** seconds of one training step (median), absent when the case did not run or the run was resumed */
  readonly time_s?: { readonly device: number; readonly eager: number; readonly ratio: number };
  readonly divergence?: ModelDivergence | null;
}

/** The case name of the runner's config: `model:<file stem>:<case>`. */
export function modelName(file: string, c: string): string {
  return `${MODEL_PREFIX}${path.basename(file, ".py")}:${c}`;
}

/** The cases `specs` (each `FILE[:NAME[,NAME]]`, `zoo` the shipped zoo) select, asked of the runner. */
export async function resolveModelCases(python: string, specs: readonly string[]): Promise<RunConfigModel[]> {
  const out: RunConfigModel[] = [];
  for (const spec of specs) {
    const text = await runnerOutput(python, ["model-cases", "--model", spec], `--model ${spec}`);
    for (const c of JSON.parse(text) as { file: string; case: string }[]) {
      const name = modelName(c.file, c.case);
      if (!out.some((m) => m.name === name)) out.push({ name, file: c.file, case: c.case });
    }
  }
  return out;
}

/**
 * The step times of a run's cases: kept in `<results>.stats.json`, not in the
 * results, which do not vary run to run (Note [Results stream]).
 */
export function modelTimes(resultsFile: string): Record<string, ModelCase["time_s"]> {
  const file = `${resultsFile}.stats.json`;
  if (!existsSync(file)) return {};
  const stats = JSON.parse(readFileSync(file, "utf8")) as { model_time_s?: Record<string, ModelCase["time_s"]> };
  return stats.model_time_s ?? {};
}

interface RawModelInfo {
  readonly ops?: Readonly<Record<string, { served: string; forward: number; backward: number; step: number }>>;
  readonly fallback?: Readonly<Record<string, number>>;
  readonly divergence?: ModelDivergence | null;
}

const SEVERITY: Readonly<Record<Status, number>> = {
  skip: 0,
  pass: 1,
  xfail: 1,
  warn: 2,
  fail: 3,
  xpass: 3,
  "compile-failed": 3,
  timeout: 4,
  crash: 5,
};

/**
 * The models section: one entry per case of the run, from its results, its
 * record's `model` data and the step times (`<results>.stats.json`). An
 * overload the device served with a registered kernel is `derived` when gen
 * derived that kernel (the manifest's served_by), `runtime` for the
 * runtime's own operators.
 */
export function modelCases(
  models: readonly RunConfigModel[],
  records: readonly RawRecord[],
  results: readonly Result[],
  manifestOps: readonly ManifestOp[],
  times: Readonly<Record<string, ModelCase["time_s"]>>,
): ModelCase[] {
  const servedBy = new Map(manifestOps.map((o) => [o.name, o.served_by ?? "kernel"]));
  const info = new Map<string, RawModelInfo>();
  for (const r of records) {
    if (r.kind === "sample" && isModel(r.op) && r.model) info.set(r.op, r.model as RawModelInfo);
  }
  return models.map((m) => {
    const rs = results.filter((r) => r.op === m.name);
    let status: Status = "skip";
    for (const r of rs) if (SEVERITY[r.status] > SEVERITY[status]) status = r.status;
    const i = info.get(m.name) ?? {};
    const ops: ModelOp[] = Object.entries(i.ops ?? {})
      .map(([name, o]) => {
        let served = o.served as Served;
        if (served === "kernel") {
          const by = servedBy.get(name) ?? "kernel";
          served = by.startsWith("derived") ? "derived" : by === "runtime" ? "runtime" : "kernel";
        }
        return { name, served, forward: o.forward, backward: o.backward, step: o.step };
      })
      .sort((a, b) => cmp(a.name, b.name));
    const t = times[m.name];
    return {
      name: m.name,
      file: m.file,
      case: m.case,
      status,
      ops,
      fallback: i.fallback ?? {},
      ...(t ? { time_s: t } : {}),
      ...(i.divergence !== undefined ? { divergence: i.divergence } : {}),
    };
  });
}

function geomean(xs: readonly number[]): number {
  return xs.length ? Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length) : Number.NaN;
}

/** `n/m cases match, k fall back; step time device/eager geomean g (worst w)`. */
export function modelsLine(cases: readonly ModelCase[]): string {
  const ok = cases.filter((c) => c.status === "pass" || c.status === "warn" || c.status === "xfail").length;
  const fb = cases.filter((c) => Object.keys(c.fallback).length > 0).length;
  const ratios = cases.flatMap((c) => (c.time_s ? [c.time_s.ratio] : []));
  const speed = ratios.length
    ? `; step time device/eager CPU geomean ${geomean(ratios).toFixed(2)}×, worst ${Math.max(...ratios).toFixed(2)}×`
    : "";
  return `${ok}/${cases.length} model cases match eager CPU, ${fb} use the CPU fallback${speed}`;
}

const SERVED_ORDER: readonly Served[] = ["fallback", "other", "composite", "derived", "runtime", "kernel"];

function servedCounts(c: ModelCase): string {
  return SERVED_ORDER.map((s) => [s, c.ops.filter((o) => o.served === s).length] as const)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`)
    .join(", ");
}

function mdCell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** The Markdown models section. */
export function modelsMarkdown(cases: readonly ModelCase[]): string[] {
  if (cases.length === 0) return [];
  const out = ["", `**Models:** ${modelsLine(cases)}.`, ""];
  out.push("| | case | overloads | falls back | step device/eager | first divergent op |");
  out.push("|---|---|---|---|---|---|");
  for (const c of cases) {
    const fb = Object.keys(c.fallback);
    const d = c.divergence;
    out.push(
      `| ${c.status} | \`${c.name}\` | ${servedCounts(c)} | ${fb.length ? mdCell(fb.join(", ")) : "—"} | ` +
        `${c.time_s ? `${c.time_s.ratio.toFixed(2)}×` : "—"} | ${d ? mdCell(`\`${d.op}\` (${d.phase}): ${d.message}`) : "—"} |`,
    );
  }
  return out;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const SERVED_COLOR: Readonly<Record<Served, string>> = {
  kernel: "#2da44e",
  derived: "#4ac26b",
  runtime: "#6fdd8b",
  composite: "#9be9a8",
  other: "#d0d7de",
  fallback: "#cf222e",
};

/** The HTML models section: a row per case, and per case the overloads it dispatched. */
export function modelsHtml(cases: readonly ModelCase[], color: (s: Status) => string): string[] {
  if (cases.length === 0) return [];
  const o: string[] = [];
  o.push(`<h2 id="models">Models (${cases.length})</h2>`);
  o.push(`<p id="models-line">${esc(modelsLine(cases))}.</p>`);
  o.push(
    '<table id="model-cases"><tr><th>status</th><th>case</th><th>overloads</th><th>falls back</th>' +
      "<th>step: device</th><th>eager CPU</th><th>ratio</th><th>first divergent op</th></tr>",
  );
  for (const c of cases) {
    const fb = Object.entries(c.fallback);
    const d = c.divergence;
    const t = c.time_s;
    o.push(
      `<tr class="model-row" data-case="${esc(c.name)}" data-status="${c.status}">` +
        `<td style="background:${color(c.status)};color:#fff">${c.status}</td><td><code>${esc(c.name)}</code></td>` +
        `<td>${esc(servedCounts(c))}</td><td class="msg">${fb.length ? esc(fb.map(([k, v]) => `${k} (${v})`).join(", ")) : "—"}</td>` +
        `<td>${t ? `${(t.device * 1000).toFixed(1)} ms` : "—"}</td><td>${t ? `${(t.eager * 1000).toFixed(1)} ms` : "—"}</td>` +
        `<td>${t ? `${t.ratio.toFixed(2)}×` : "—"}</td>` +
        `<td class="msg">${d ? `<code>${esc(d.op)}</code> (${esc(d.phase)}, call ${d.index}${d.eager_index === null ? ", not on eager's path" : ""}): ${esc(d.message)}<br>inputs ${esc(d.inputs)}` : "—"}</td></tr>`,
    );
  }
  o.push("</table>");
  for (const c of cases) {
    o.push(
      `<details class="model-ops" data-case="${esc(c.name)}"><summary><code>${esc(c.name)}</code>: ${c.ops.length} overloads dispatched (${esc(servedCounts(c))})</summary>`,
    );
    o.push("<table><tr><th>overload</th><th>served</th><th>forward</th><th>backward</th><th>step</th></tr>");
    const sorted = [...c.ops].sort(
      (a, b) => SERVED_ORDER.indexOf(a.served) - SERVED_ORDER.indexOf(b.served) || cmp(a.name, b.name),
    );
    for (const op of sorted) {
      o.push(
        `<tr class="model-op" data-served="${op.served}"><td><code>${esc(op.name)}</code></td>` +
          `<td style="background:${SERVED_COLOR[op.served]}">${op.served}</td><td>${op.forward}</td><td>${op.backward}</td><td>${op.step}</td></tr>`,
      );
    }
    o.push("</table></details>");
  }
  return o;
}

/** The terminal's models lines: the totals, and each case that does not match. */
export function modelsTerminal(cases: readonly ModelCase[]): string[] {
  if (cases.length === 0) return [];
  const out = [`models: ${modelsLine(cases)}`];
  for (const c of cases) {
    const d = c.divergence;
    if (d)
      out.push(
        `  ${c.name}: first divergent op ${d.op} (${d.phase}, call ${d.index}, inputs ${d.inputs}): ${d.message}`,
      );
  }
  return out;
}

/** Per divergent case, the command that reruns its first divergent call alone. */
export function modelReplayLines(cases: readonly ModelCase[], runner: string, configFile: string): string[] {
  return cases.flatMap((c) =>
    c.divergence?.replay
      ? [
          `rerun ${c.name}'s ${c.divergence.op} alone: ${runner} replay --config ${configFile} --file ${c.divergence.replay}`,
        ]
      : [],
  );
}
