/**
 * The data of an `opgen-backend bench` run and its views: the runner's rows
 * (python/opgen_conformance/bench.py) turned into per-operator ratios, family
 * and overall geomeans and fast_p, then JSON, Markdown, HTML and terminal
 * text of the same `BenchReport`, and the comparison of two of them for
 * `report diff` (Note [Bench noise]).
 *
 * Note [Bench summary]: a row is one (op, dtype, size); its ratio is the
 * device's median time over eager's (lower is better, 1 = as fast), its spread
 * the two sides' relative spreads (IQR / median) added in quadrature. An
 * operator's ratio is the geomean of its rows', each operator counts once in
 * its family's geomean and in the overall one. fast_p (KernelBench) is the
 * fraction of benchmarked operators that pass conformance and are at least p
 * times as fast as eager (ratio <= 1/p); an operator that could not be timed
 * counts as not fast. Without a conformance report it is not given, and the
 * speed-only fraction is shown for what it is.
 */

import { isProblem } from "../vocab.js";
import { FAMILIES, FAMILY_TITLES, type Family, familyOf } from "./families.js";
import { GENERATOR, type Report } from "./types.js";

export const FAST_P = [0.5, 1, 2] as const;
/** An operator whose error against float64 exceeds eager's this many times is flagged (Note [Bench accuracy] in bench.py). */
export const ACCURACY_FLAG = 4;
/** Note [Bench noise]: a slowdown counts when log(new/old) exceeds this many combined spreads. */
export const NOISE_SIGMAS = 3;

export interface BenchSide {
  readonly median_s: number;
  readonly q1_s: number;
  readonly q3_s: number;
  /** (q3 - q1) / median */
  readonly spread: number;
  readonly runs: number;
  readonly reps: number;
}

export interface BenchAccuracy {
  /** RMS error against float64; null: infinite (a NaN or inf where float64 is finite) */
  readonly device_err: number | null;
  readonly eager_err: number | null;
  /** device_err / eager_err (floored at half an ulp); null when eager's is 0 and the device's not */
  readonly ratio: number | null;
}

/** One line of the runner's results JSONL. */
export interface BenchRawRow {
  readonly op: string;
  readonly kind: string;
  readonly family: string;
  readonly dtype: string;
  readonly size: string;
  readonly source?: string;
  readonly note?: string;
  readonly error?: string;
  readonly device?: BenchSide;
  readonly eager?: BenchSide;
  readonly accuracy?: BenchAccuracy;
}

export interface BenchRow extends BenchRawRow {
  /** device median / eager median */
  readonly ratio?: number;
  /** sqrt(device.spread² + eager.spread²) */
  readonly ratio_spread?: number;
  readonly accuracy_flagged?: boolean;
}

export interface BenchOp {
  readonly op: string;
  readonly family: Family;
  readonly kind: string;
  /** geomean of the rows' ratios; absent when no row was timed */
  readonly ratio?: number;
  /** worst row's accuracy ratio */
  readonly accuracy?: number;
  readonly accuracy_flagged: boolean;
  /** from the conformance report: true/false, null when none was given or it lacks the op */
  readonly conformant: boolean | null;
  readonly errors: number;
}

export interface BenchFamily {
  readonly family: Family;
  readonly ops: number;
  readonly timed: number;
  readonly geomean: number | null;
}

export interface BenchMeta {
  /** the device benchmarked, e.g. "refdev" (its torch device type) */
  readonly device: string;
  /** what the device ran on, in words */
  readonly device_label: string;
  /** the eager reference, e.g. "eager CPU" */
  readonly reference: string;
  readonly threads: number;
  readonly workers: number;
  readonly runs: number;
  /** "wall" or "cpu" (the worker thread's CPU time) */
  readonly clock: string;
  /** the `--repeat-op` debug knob as given ("1": off) */
  readonly repeat_op: string;
  readonly torch_version: string;
  /** the conformance report fast_p was counted against; null: not given */
  readonly conformance: string | null;
}

export interface BenchSummary {
  readonly ops: number;
  readonly ops_timed: number;
  readonly rows: number;
  readonly rows_timed: number;
  readonly errors: number;
  readonly geomean: number | null;
  readonly families: readonly BenchFamily[];
  /** p -> fraction; null when no conformance report was given */
  readonly fast_p: Readonly<Record<string, number>> | null;
  /** the same fractions ignoring correctness (every timed op counts as correct) */
  readonly fast_p_speed_only: Readonly<Record<string, number>>;
  readonly accuracy_flagged: readonly string[];
}

export interface BenchReport {
  readonly kind: "bench";
  readonly generator: string;
  readonly meta: BenchMeta;
  readonly summary: BenchSummary;
  readonly ops: readonly BenchOp[];
  readonly rows: readonly BenchRow[];
}

export function geomean(xs: readonly number[]): number | null {
  const ok = xs.filter((x) => Number.isFinite(x) && x > 0);
  if (ok.length === 0) return null;
  return Math.exp(ok.reduce((s, x) => s + Math.log(x), 0) / ok.length);
}

/** Linear-interpolated quantile of sorted values (numpy's default, Python's statistics "inclusive"). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** Relative spread of samples: interquartile range over median. */
export function relativeSpread(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const med = quantile(s, 0.5);
  return med > 0 ? (quantile(s, 0.75) - quantile(s, 0.25)) / med : 0;
}

export function rowOf(r: BenchRawRow): BenchRow {
  if (!r.device || !r.eager || r.error || !(r.eager.median_s > 0)) return r;
  const acc = r.accuracy?.ratio;
  return {
    ...r,
    ratio: r.device.median_s / r.eager.median_s,
    ratio_spread: Math.hypot(r.device.spread, r.eager.spread),
    ...(r.accuracy ? { accuracy_flagged: acc === null || (acc !== undefined && acc > ACCURACY_FLAG) } : {}),
  };
}

/** Which ops pass a conformance report: listed with no problem result (PROBLEM_STATUSES). */
export function conformantOps(rep: Report): Map<string, boolean> {
  const m = new Map<string, boolean>();
  for (const r of rep.results) {
    m.set(r.op, (m.get(r.op) ?? true) && !isProblem(r.status));
  }
  return m;
}

/** fast_p over ops: (conformant and ratio <= 1/p) / all ops. */
export function fastP(ops: readonly Pick<BenchOp, "ratio" | "conformant">[], p: number, speedOnly = false): number {
  if (ops.length === 0) return 0;
  const fast = ops.filter((o) => o.ratio !== undefined && (speedOnly || o.conformant === true) && o.ratio <= 1 / p);
  return fast.length / ops.length;
}

export function makeBenchReport(
  meta: BenchMeta,
  raw: readonly BenchRawRow[],
  conformance: ReadonlyMap<string, boolean> | null,
): BenchReport {
  const rows = raw.map(rowOf).sort((a, b) => cmp(a.op, b.op) || cmp(a.dtype, b.dtype) || sizeOrder(a, b, raw));
  const byOp = new Map<string, BenchRow[]>();
  for (const r of rows) byOp.set(r.op, [...(byOp.get(r.op) ?? []), r]);
  const ops: BenchOp[] = [...byOp].map(([op, rs]) => {
    const ratios = rs.flatMap((r) => (r.ratio !== undefined ? [r.ratio] : []));
    const g = geomean(ratios);
    const accs = rs.flatMap((r) => (r.accuracy ? [r.accuracy.ratio ?? Number.POSITIVE_INFINITY] : []));
    const acc = accs.length ? Math.max(...accs) : undefined;
    return {
      op,
      family: familyOf(op),
      kind: rs[0]!.kind,
      ...(g !== null ? { ratio: g } : {}),
      ...(acc !== undefined ? { accuracy: acc } : {}),
      accuracy_flagged: rs.some((r) => r.accuracy_flagged === true),
      conformant: conformance ? (conformance.get(op) ?? false) : null,
      errors: rs.filter((r) => r.error !== undefined).length,
    };
  });
  const families: BenchFamily[] = FAMILIES.flatMap((family) => {
    const members = ops.filter((o) => o.family === family);
    if (members.length === 0) return [];
    const timed = members.flatMap((o) => (o.ratio !== undefined ? [o.ratio] : []));
    return [{ family, ops: members.length, timed: timed.length, geomean: geomean(timed) }];
  });
  const p = (speedOnly: boolean) => Object.fromEntries(FAST_P.map((x) => [String(x), fastP(ops, x, speedOnly)]));
  const timedOps = ops.filter((o) => o.ratio !== undefined);
  return {
    kind: "bench",
    generator: GENERATOR,
    meta,
    summary: {
      ops: ops.length,
      ops_timed: timedOps.length,
      rows: rows.length,
      rows_timed: rows.filter((r) => r.ratio !== undefined).length,
      errors: rows.filter((r) => r.error !== undefined).length,
      geomean: geomean(timedOps.map((o) => o.ratio!)),
      families,
      fast_p: conformance ? p(false) : null,
      fast_p_speed_only: p(true),
      accuracy_flagged: ops.filter((o) => o.accuracy_flagged).map((o) => o.op),
    },
    ops,
    rows,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Rows of one op and dtype stay in the runner's order (smallest size first). */
function sizeOrder(a: BenchRow, b: BenchRow, raw: readonly BenchRawRow[]): number {
  const ia = raw.findIndex((r) => r.op === a.op && r.dtype === a.dtype && r.size === a.size);
  const ib = raw.findIndex((r) => r.op === b.op && r.dtype === b.dtype && r.size === b.size);
  return ia - ib;
}

// -- formatting -------------------------------------------------------------------

export function fmtRatio(x: number | null | undefined): string {
  if (x === null || x === undefined) return "-";
  return `${x < 10 ? x.toFixed(2) : x.toFixed(1)}×`;
}

export function fmtTime(s: number | undefined): string {
  if (s === undefined) return "-";
  if (s < 1e-3) return `${(s * 1e6).toFixed(1)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(2)} ms`;
  return `${s.toFixed(2)} s`;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(0)}%`;
}

function fastPText(s: BenchSummary): string {
  const sp = FAST_P.map((p) => `fast_${p} ${pct(s.fast_p_speed_only[String(p)]!)}`).join(", ");
  if (!s.fast_p) return `fast_p: not given (no --conformance report); speed alone: ${sp}`;
  return `fast_p (conformant and at least p× as fast): ${FAST_P.map((p) => `fast_${p} ${pct(s.fast_p![String(p)]!)}`).join(", ")}; speed alone: ${sp}`;
}

export function worstOps(rep: BenchReport, n: number): BenchOp[] {
  return rep.ops
    .filter((o) => o.ratio !== undefined)
    .sort((a, b) => b.ratio! - a.ratio! || cmp(a.op, b.op))
    .slice(0, n);
}

function headline(rep: BenchReport): string {
  const m = rep.meta;
  return `${m.device_label} against ${m.reference}, ${m.threads} thread${m.threads === 1 ? "" : "s"} each, ${m.clock === "cpu" ? "thread CPU time" : "wall time"}, torch ${m.torch_version}${m.repeat_op !== "1" ? `; --repeat-op ${m.repeat_op} (debug: device calls repeated)` : ""}`;
}

export function benchToJson(rep: BenchReport): string {
  return `${JSON.stringify(rep, null, 2)}\n`;
}

export function benchToTerminal(rep: BenchReport): string {
  const s = rep.summary;
  const o: string[] = [];
  o.push(`bench: ${headline(rep)}`);
  o.push(
    `  ${s.ops_timed}/${s.ops} operators timed (${s.rows_timed} rows, ${s.errors} not timed); geomean device/eager ${fmtRatio(s.geomean)} (lower is better)`,
  );
  for (const f of s.families)
    o.push(`  ${FAMILY_TITLES[f.family].padEnd(46)} ${String(f.timed).padStart(4)} ops  ${fmtRatio(f.geomean)}`);
  o.push(`  ${fastPText(s)}`);
  const worst = worstOps(rep, 5);
  if (worst.length) o.push(`  slowest: ${worst.map((w) => `${w.op} ${fmtRatio(w.ratio)}`).join(", ")}`);
  if (s.accuracy_flagged.length) {
    o.push(`  less accurate than eager (> ${ACCURACY_FLAG}× its error vs float64): ${s.accuracy_flagged.join(", ")}`);
  }
  return `${o.join("\n")}\n`;
}

function md(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/`/g, "'");
}

export function benchToMarkdown(rep: BenchReport): string {
  const s = rep.summary;
  const o: string[] = [];
  o.push(`### Operator benchmark: \`${rep.meta.device}\``);
  o.push("");
  o.push(`${headline(rep)}. Ratio = device time / eager time (lower is better).`);
  o.push("");
  o.push(
    `**Geomean ${fmtRatio(s.geomean)}** over ${s.ops_timed}/${s.ops} operators (${s.rows_timed} op×dtype×size rows; ${s.errors} not timed). ${fastPText(s)}.`,
  );
  o.push("");
  o.push("| family | operators timed | geomean |");
  o.push("|---|---:|---:|");
  for (const f of s.families) o.push(`| ${FAMILY_TITLES[f.family]} | ${f.timed}/${f.ops} | ${fmtRatio(f.geomean)} |`);
  const worst = worstOps(rep, 15);
  if (worst.length) {
    o.push("");
    o.push("Slowest operators:");
    o.push("");
    o.push("| operator | family | ratio | accuracy vs eager |");
    o.push("|---|---|---:|---:|");
    for (const w of worst) {
      o.push(
        `| \`${md(w.op)}\` | ${w.family} | ${fmtRatio(w.ratio)} | ${w.accuracy !== undefined ? fmtRatio(w.accuracy) : "-"} |`,
      );
    }
  }
  o.push("");
  o.push(
    s.accuracy_flagged.length
      ? `Less accurate than eager (> ${ACCURACY_FLAG}× eager CPU's error against float64): ${s.accuracy_flagged.map((x) => `\`${md(x)}\``).join(", ")}.`
      : `No operator is more than ${ACCURACY_FLAG}× less accurate than eager CPU against float64.`,
  );
  o.push("");
  o.push("<details><summary>All rows</summary>");
  o.push("");
  o.push("| operator | dtype | size | device | eager | ratio | spread | accuracy |");
  o.push("|---|---|---|---:|---:|---:|---:|---:|");
  for (const r of rep.rows) {
    o.push(
      `| \`${md(r.op)}\` | ${r.dtype} | ${md(r.size)} | ${fmtTime(r.device?.median_s)} | ${fmtTime(r.eager?.median_s)} | ${r.error ? md(r.error.slice(0, 80)) : fmtRatio(r.ratio)} | ${r.ratio_spread !== undefined ? pct(r.ratio_spread) : "-"} | ${r.accuracy ? `${fmtRatio(r.accuracy.ratio)}${r.accuracy_flagged ? " ⚠" : ""}` : "-"} |`,
    );
  }
  o.push("");
  o.push("</details>");
  return `${o.join("\n")}\n`;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * The ratio plot: one lane per family, a dot per operator at its ratio on a
 * log2 axis from 1/16× to 16× (beyond: at the edge), the family geomean as a
 * bar, 1× as the line to beat. Inline SVG: the page loads nothing.
 */
export function ratioPlotSvg(rep: BenchReport): string {
  const fams = rep.summary.families.filter((f) => f.timed > 0);
  const left = 340;
  const width = 900;
  const lane = 26;
  const top = 24;
  const h = top + lane * fams.length + 30;
  const lo = -4;
  const hi = 4;
  const x = (r: number) => left + ((Math.min(hi, Math.max(lo, Math.log2(r))) - lo) / (hi - lo)) * (width - left - 20);
  const o: string[] = [];
  o.push(
    `<svg id="ratio-plot" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${h}" viewBox="0 0 ${width} ${h}" role="img" aria-label="device/eager time ratio per operator, by family">`,
  );
  for (let e = lo; e <= hi; e++) {
    const xx = x(2 ** e);
    o.push(
      `<line x1="${xx}" y1="${top - 6}" x2="${xx}" y2="${h - 26}" stroke="${e === 0 ? "#1f2328" : "#d0d7de"}" stroke-width="${e === 0 ? 1.5 : 1}"/>`,
    );
    const label = e >= 0 ? `${2 ** e}×` : `1/${2 ** -e}×`;
    o.push(`<text x="${xx}" y="${h - 10}" font-size="11" text-anchor="middle" fill="#57606a">${label}</text>`);
  }
  fams.forEach((f, i) => {
    const y = top + lane * i + lane / 2;
    o.push(
      `<text x="${left - 10}" y="${y + 4}" font-size="12" text-anchor="end" fill="#1f2328">${esc(FAMILY_TITLES[f.family])} (${f.timed})</text>`,
    );
    for (const op of rep.ops.filter((x) => x.family === f.family && x.ratio !== undefined)) {
      const fill = op.ratio! <= 1 ? "#1a7f37" : op.ratio! <= 2 ? "#bf8700" : "#cf222e";
      // a small deterministic jitter from the name keeps equal ratios apart
      let hsh = 0;
      for (const c of op.op) hsh = (hsh * 31 + c.charCodeAt(0)) >>> 0;
      const jy = y + ((hsh % 11) - 5);
      o.push(
        `<circle class="op-dot" data-op="${esc(op.op)}" data-family="${f.family}" data-ratio="${op.ratio!.toFixed(4)}" cx="${x(op.ratio!).toFixed(1)}" cy="${jy}" r="3.5" fill="${fill}" fill-opacity="0.75"><title>${esc(op.op)}: ${fmtRatio(op.ratio)}</title></circle>`,
      );
    }
    if (f.geomean !== null) {
      const gx = x(f.geomean).toFixed(1);
      o.push(
        `<line class="family-geomean" data-family="${f.family}" data-geomean="${f.geomean.toFixed(4)}" x1="${gx}" y1="${y - 10}" x2="${gx}" y2="${y + 10}" stroke="#0969da" stroke-width="3"><title>${esc(FAMILY_TITLES[f.family])} geomean ${fmtRatio(f.geomean)}</title></line>`,
      );
    }
  });
  o.push("</svg>");
  return o.join("");
}

export function benchToHtml(rep: BenchReport): string {
  const s = rep.summary;
  const o: string[] = [];
  o.push("<!DOCTYPE html>");
  o.push('<html lang="en"><head><meta charset="utf-8">');
  o.push(`<title>opgen-backend bench: ${esc(rep.meta.device)}</title>`);
  o.push("<style>");
  o.push(
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f2328}" +
      "table{border-collapse:collapse}td,th{padding:2px 6px;border:1px solid #d0d7de;text-align:left}" +
      "td.n{text-align:right;font-variant-numeric:tabular-nums}th.op{font-family:monospace;font-weight:normal}" +
      "code{font-size:12px}details.family{margin:.4em 0;border:1px solid #d0d7de;border-radius:6px;padding:.3em .6em}" +
      "details.family>summary{cursor:pointer;font-weight:600}.slow{color:#cf222e}.fast{color:#1a7f37}.flag{color:#9a6700;font-weight:600}" +
      ".badge{display:inline-block;padding:0 6px;margin-left:6px;border-radius:8px;color:#fff;font-size:12px;font-weight:normal;background:#0969da}",
  );
  o.push("</style></head><body>");
  o.push(`<h1>Operator speed of <code>${esc(rep.meta.device)}</code> against ${esc(rep.meta.reference)}</h1>`);
  o.push(`<p id="setup">${esc(headline(rep))}. Ratio = device time / eager time: lower is better, 1× is as fast.</p>`);
  o.push(
    `<p id="headline" data-geomean="${s.geomean?.toFixed(4) ?? ""}"><strong>Geomean ${fmtRatio(s.geomean)}</strong> over ${s.ops_timed}/${s.ops} operators (${s.rows_timed} rows timed, ${s.errors} not). ${esc(fastPText(s))}.</p>`,
  );
  o.push(ratioPlotSvg(rep));
  o.push("<h2>Families</h2>");
  o.push('<table id="families"><tr><th>family</th><th>operators timed</th><th>geomean</th></tr>');
  for (const f of s.families) {
    o.push(
      `<tr data-family="${f.family}"><td>${esc(FAMILY_TITLES[f.family])}</td><td class="n">${f.timed}/${f.ops}</td><td class="n">${fmtRatio(f.geomean)}</td></tr>`,
    );
  }
  o.push("</table>");
  o.push(
    s.accuracy_flagged.length
      ? `<p id="accuracy-flags" class="flag">Less accurate than eager (over ${ACCURACY_FLAG}× eager CPU's error against float64): ${s.accuracy_flagged.map((x) => `<code>${esc(x)}</code>`).join(", ")}</p>`
      : `<p id="accuracy-flags">No operator is over ${ACCURACY_FLAG}× less accurate than eager CPU against float64.</p>`,
  );
  o.push("<h2>Operators</h2>");
  for (const f of s.families) {
    const members = rep.ops.filter((x) => x.family === f.family);
    o.push(
      `<details class="family" data-family="${f.family}"><summary>${esc(FAMILY_TITLES[f.family])} (${members.length})<span class="badge">${fmtRatio(f.geomean)}</span></summary>`,
    );
    o.push(
      "<table><tr><th>operator</th><th>dtype</th><th>size</th><th>device</th><th>eager</th><th>ratio</th><th>spread</th><th>accuracy</th><th>inputs</th></tr>",
    );
    for (const m of members) {
      for (const r of rep.rows.filter((x) => x.op === m.op)) {
        const cls = r.ratio === undefined ? "" : r.ratio > 1 ? "slow" : "fast";
        o.push(
          `<tr class="row" data-op="${esc(r.op)}" data-dtype="${esc(r.dtype)}" data-ratio="${r.ratio?.toFixed(4) ?? ""}"><th class="op">${esc(r.op)}</th><td>${esc(r.dtype)}</td><td>${esc(r.size)}</td>` +
            `<td class="n">${fmtTime(r.device?.median_s)}</td><td class="n">${fmtTime(r.eager?.median_s)}</td>` +
            `<td class="n ${cls}">${r.error ? esc(r.error) : fmtRatio(r.ratio)}</td><td class="n">${r.ratio_spread !== undefined ? pct(r.ratio_spread) : "-"}</td>` +
            `<td class="n${r.accuracy_flagged ? " flag" : ""}">${r.accuracy ? fmtRatio(r.accuracy.ratio) : "-"}</td><td><small>${esc(r.source ?? "")}${r.note ? `; ${esc(r.note)}` : ""}</small></td></tr>`,
        );
      }
    }
    o.push("</table></details>");
  }
  o.push(`<footer><small>${esc(rep.generator)}</small></footer>`);
  o.push("</body></html>");
  return `${o.join("\n")}\n`;
}

// -- report diff (Note [Bench noise]) ---------------------------------------------------

/**
 * Note [Bench noise]: a row slowed down when log(new ratio / old ratio)
 * exceeds NOISE_SIGMAS times its noise, sqrt(old spread² + new spread²), the
 * relative spreads (IQR / median) each run measured for that row. A noisy
 * row (a small op on a loaded machine) needs a larger change to count, a
 * steady one a small change; no constant decides it. A row timed in old that
 * fails to run in new is a regression too.
 */
export function noiseThreshold(oldSpread: number, newSpread: number): number {
  return Math.exp(NOISE_SIGMAS * Math.hypot(oldSpread, newSpread));
}

export interface BenchDiffEntry {
  readonly op: string;
  readonly dtype: string;
  readonly size: string;
  readonly old_ratio?: number;
  readonly new_ratio?: number;
  /** new ratio / old ratio */
  readonly change?: number;
  /** the change beyond which this row counts (noiseThreshold) */
  readonly threshold?: number;
  readonly error?: string;
}

export interface BenchDiff {
  readonly kind: "bench";
  readonly old: { readonly file: string; readonly geomean: number | null; readonly device: string };
  readonly new: { readonly file: string; readonly geomean: number | null; readonly device: string };
  readonly notes: readonly string[];
  readonly regressed: readonly BenchDiffEntry[];
  readonly improved: readonly BenchDiffEntry[];
  /** rows compared within their noise */
  readonly steady: number;
  readonly added: number;
  readonly gone: number;
  readonly gate: 0 | 1;
}

function rowKey(r: BenchRow): string {
  return `${r.op}\u0000${r.dtype}\u0000${r.size}`;
}

export function diffBench(
  oldRep: { file: string; report: BenchReport },
  newRep: { file: string; report: BenchReport },
): BenchDiff {
  const a = oldRep.report;
  const b = newRep.report;
  const notes: string[] = [];
  for (const k of ["device", "reference", "threads", "clock", "torch_version", "repeat_op"] as const) {
    if (a.meta[k] !== b.meta[k]) {
      notes.push(`${k} differs: ${JSON.stringify(a.meta[k])} in old, ${JSON.stringify(b.meta[k])} in new`);
    }
  }
  const olds = new Map(a.rows.map((r) => [rowKey(r), r]));
  const newKeys = new Set(b.rows.map(rowKey));
  const regressed: BenchDiffEntry[] = [];
  const improved: BenchDiffEntry[] = [];
  let steady = 0;
  let added = 0;
  for (const r of b.rows) {
    const was = olds.get(rowKey(r));
    if (!was) {
      added++;
      continue;
    }
    const base = { op: r.op, dtype: r.dtype, size: r.size };
    if (was.ratio !== undefined && r.ratio === undefined) {
      regressed.push({ ...base, old_ratio: was.ratio, error: r.error ?? "not timed" });
      continue;
    }
    if (was.ratio === undefined || r.ratio === undefined) continue;
    const change = r.ratio / was.ratio;
    const threshold = noiseThreshold(was.ratio_spread ?? 0, r.ratio_spread ?? 0);
    const e = { ...base, old_ratio: was.ratio, new_ratio: r.ratio, change, threshold };
    if (change > threshold) regressed.push(e);
    else if (change < 1 / threshold) improved.push(e);
    else steady++;
  }
  const gone = a.rows.filter((r) => !newKeys.has(rowKey(r))).length;
  const bySlowdown = (x: BenchDiffEntry, y: BenchDiffEntry) => (y.change ?? Infinity) - (x.change ?? Infinity);
  regressed.sort(bySlowdown);
  improved.sort((x, y) => x.change! - y.change!);
  return {
    kind: "bench",
    old: { file: oldRep.file, geomean: a.summary.geomean, device: a.meta.device },
    new: { file: newRep.file, geomean: b.summary.geomean, device: b.meta.device },
    notes,
    regressed,
    improved,
    steady,
    added,
    gone,
    gate: regressed.length > 0 ? 1 : 0,
  };
}

function entryText(e: BenchDiffEntry): string {
  if (e.error) return `${fmtRatio(e.old_ratio)} -> not timed (${e.error})`;
  return `${fmtRatio(e.old_ratio)} -> ${fmtRatio(e.new_ratio)} (${e.change!.toFixed(2)}× slower; noise allows ${e.threshold!.toFixed(2)}×)`;
}

export function benchDiffToTerminal(d: BenchDiff, maxRows = 50): string {
  const o: string[] = [];
  o.push(`report diff (bench): ${d.old.file} -> ${d.new.file}`);
  for (const n of d.notes) o.push(`note: ${n}`);
  o.push(
    `geomean ${fmtRatio(d.old.geomean)} -> ${fmtRatio(d.new.geomean)}; ${d.steady} rows within their noise, ${d.improved.length} faster, ${d.regressed.length} slower; ${d.added} new rows, ${d.gone} gone`,
  );
  if (d.regressed.length) {
    o.push("");
    o.push(`regressed (${d.regressed.length}):`);
    for (const e of d.regressed.slice(0, maxRows)) o.push(`  ${e.op}  ${e.dtype}  ${e.size}  ${entryText(e)}`);
    if (d.regressed.length > maxRows) o.push(`  … ${d.regressed.length - maxRows} more (--json lists all)`);
  }
  o.push("");
  o.push(
    d.gate ? `${d.regressed.length} rows slower beyond their noise: exit 1` : "nothing slowed down beyond its noise",
  );
  return `${o.join("\n")}\n`;
}

export function benchDiffToMarkdown(d: BenchDiff, maxRows = 20): string {
  const o: string[] = [];
  o.push(
    `### Operator speed against the base report: ${d.gate ? `❌ ${d.regressed.length} rows slower` : "✅ nothing slowed down"}`,
  );
  o.push("");
  o.push(
    `Geomean ${fmtRatio(d.old.geomean)} -> ${fmtRatio(d.new.geomean)}; ${d.steady} rows within their noise, ${d.improved.length} faster.${d.notes.length ? ` Note: ${d.notes.join("; ")}.` : ""}`,
  );
  if (d.regressed.length) {
    o.push("");
    o.push("| op | dtype | size | ratio | change | noise allows |");
    o.push("|---|---|---|---:|---:|---:|");
    for (const e of d.regressed.slice(0, maxRows)) {
      o.push(
        `| \`${md(e.op)}\` | ${e.dtype} | ${md(e.size)} | ${e.error ? `${fmtRatio(e.old_ratio)} -> ${md(e.error.slice(0, 60))}` : `${fmtRatio(e.old_ratio)} -> ${fmtRatio(e.new_ratio)}`} | ${e.change !== undefined ? `${e.change.toFixed(2)}×` : "-"} | ${e.threshold !== undefined ? `${e.threshold.toFixed(2)}×` : "-"} |`,
      );
    }
  }
  return `${o.join("\n")}\n`;
}

export function isBenchReport(x: unknown): x is BenchReport {
  return typeof x === "object" && x !== null && (x as { kind?: unknown }).kind === "bench";
}
