/**
 * `opgen-backend report diff <old.json> <new.json>`: what changed between two
 * conformance reports, per (op, dtype, check) result.
 *
 * Note [Report diff]: a result is a *problem* when its status is one of
 * PROBLEM_STATUSES (vocab.ts: what fails a run). Between the two reports
 * a key is
 *   - regressed: a problem in new that was not one in old (pass -> fail), or a
 *     worse problem by STATUS_SEVERITY (fail -> crash);
 *   - fixed: a problem in old that is not one in new;
 *   - changed: any other status change (pass -> warn, fail -> xpass, ...);
 *   - new: only in new (a new op, dtype or check); a new problem gates too;
 *   - gone: only in old (an op no longer listed, a dtype no longer claimed).
 * The gate (exit 1) is "something regressed or a new result is a problem":
 * a pull request that adds a failing op must not pass because the op was not
 * in main's report.
 */
import { readFileSync } from "node:fs";
import { UserError } from "../util/errors.js";
import type { Style } from "../util/term.js";
import { isProblem, STATUS_SEVERITY } from "../vocab.js";
import { compareResults, problemCount } from "./aggregate.js";
import { coreLevel } from "./formats.js";
import type { Report, Result, Status, Summary } from "./types.js";

/** Bad input to `report diff` (exit 2, not 1: 1 means "regressed"; Note [Exit codes]). */
export class DiffInputError extends UserError {
  constructor(message: string) {
    super(message, [], { exitCode: 2 });
  }
}

export interface DiffEntry {
  readonly op: string;
  readonly dtype: string;
  readonly check: string;
  /** absent for new results */
  readonly old?: Status;
  /** absent for gone results */
  readonly new?: Status;
  /** the new result's message (the old one's for gone/fixed-by-removal) */
  readonly message: string;
  readonly seed: number;
  readonly sample: number;
}

export interface ReportDiff {
  readonly old: { readonly file: string; readonly summary: Summary; readonly device: string };
  readonly new: { readonly file: string; readonly summary: Summary; readonly device: string };
  /** differences in run settings that make results less comparable (seed, samples, torch, device) */
  readonly notes: readonly string[];
  readonly regressed: readonly DiffEntry[];
  readonly fixed: readonly DiffEntry[];
  readonly changed: readonly DiffEntry[];
  readonly added: readonly DiffEntry[];
  readonly gone: readonly DiffEntry[];
  /** the exit code: 1 when something regressed or a new result is a problem, else 0 */
  readonly gate: 0 | 1;
}

function key(r: Result): string {
  return `${r.op}\u0000${r.dtype}\u0000${r.check}`;
}

function entry(r: Result, old: Status | undefined, now: Status | undefined): DiffEntry {
  return {
    op: r.op,
    dtype: r.dtype,
    check: r.check,
    ...(old !== undefined ? { old } : {}),
    ...(now !== undefined ? { new: now } : {}),
    message: r.message,
    seed: r.seed,
    sample: r.sample,
  };
}

export function diffReports(
  oldRep: { file: string; report: Report },
  newRep: { file: string; report: Report },
): ReportDiff {
  const a = oldRep.report;
  const b = newRep.report;
  const notes: string[] = [];
  for (const k of ["device", "seed", "max_samples", "torch_version"] as const) {
    if (a.meta[k] !== b.meta[k]) {
      notes.push(`${k} differs: ${JSON.stringify(a.meta[k])} in old, ${JSON.stringify(b.meta[k])} in new`);
    }
  }
  const olds = new Map(a.results.map((r) => [key(r), r]));
  const news = new Map(b.results.map((r) => [key(r), r]));
  const regressed: DiffEntry[] = [];
  const fixed: DiffEntry[] = [];
  const changed: DiffEntry[] = [];
  const added: DiffEntry[] = [];
  const gone: DiffEntry[] = [];
  for (const r of [...b.results].sort(compareResults)) {
    const was = olds.get(key(r));
    if (!was) {
      added.push(entry(r, undefined, r.status));
      continue;
    }
    if (was.status === r.status) continue;
    const e = entry(r, was.status, r.status);
    if (isProblem(r.status) && (!isProblem(was.status) || STATUS_SEVERITY[r.status] > STATUS_SEVERITY[was.status])) {
      regressed.push(e);
    } else if (isProblem(was.status) && !isProblem(r.status)) fixed.push(e);
    else changed.push(e);
  }
  for (const r of [...a.results].sort(compareResults)) {
    if (!news.has(key(r))) gone.push(entry(r, r.status, undefined));
  }
  const gate = regressed.length > 0 || added.some((e) => isProblem(e.new!)) ? 1 : 0;
  return {
    old: { file: oldRep.file, summary: a.summary, device: a.meta.device },
    new: { file: newRep.file, summary: b.summary, device: b.meta.device },
    notes,
    regressed,
    fixed,
    changed,
    added,
    gone,
    gate,
  };
}

/** Reads a report for `report diff`; anything wrong is a DiffInputError naming the file. */
export function readReportForDiff(file: string): { file: string; report: Report } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new DiffInputError(`report diff: ${file}: cannot read it (${err.code ?? err.message})`);
  }
  let r: Report;
  try {
    r = JSON.parse(text) as Report;
  } catch (e) {
    throw new DiffInputError(`report diff: ${file}: not JSON (${(e as Error).message})`);
  }
  const bad = (what: string) =>
    new DiffInputError(
      `report diff: ${file}: not a conformance report (${what}); pass files written by \`test --json\``,
    );
  if (!r || typeof r !== "object" || Array.isArray(r)) throw bad("not an object");
  if (!r.meta || typeof r.meta !== "object") throw bad("no meta");
  if (!r.summary || typeof r.summary !== "object") throw bad("no summary");
  if (!Array.isArray(r.results)) throw bad("no results list");
  for (const [i, x] of r.results.entries()) {
    if (!x || typeof x.op !== "string" || typeof x.dtype !== "string" || typeof x.check !== "string") {
      throw bad(`results[${i}] lacks op, dtype or check`);
    }
    if (typeof x.status !== "string") throw bad(`results[${i}] (${x.op} ${x.dtype} ${x.check}) has no status`);
  }
  return { file, report: r };
}

function arrow(e: DiffEntry): string {
  return `${e.old ?? "-"} -> ${e.new ?? "-"}`;
}

function countBy(es: readonly DiffEntry[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const e of es) m.set(e.op, (m.get(e.op) ?? 0) + 1);
  return m;
}

function perOp(es: readonly DiffEntry[], max: number): string {
  const m = [...countBy(es)];
  const shown = m.slice(0, max).map(([op, n]) => `${op} (${n})`);
  return `${shown.join(", ")}${m.length > max ? `, … ${m.length - max} more ops` : ""}`;
}

function totalsLine(d: ReportDiff): string {
  const o = d.old.summary;
  const n = d.new.summary;
  // A run with no core total (the distributed tier's collectives) has no core-ATen level to compare.
  const core =
    o.core_total === 0 && n.core_total === 0 ? "" : `core ATen conformance ${coreLevel(o)} -> ${coreLevel(n)}; `;
  return (
    `${core}operators passing ${o.ops_passed}/${o.ops} -> ${n.ops_passed}/${n.ops}; ` +
    `problems ${problemCount(o)} -> ${problemCount(n)}; results ${o.total} -> ${n.total}`
  );
}

/** The terminal view: every regression and fix, new problems; new/gone/changed otherwise summed per op. */
export function diffToTerminal(d: ReportDiff, st: Style, maxRows = 50): string {
  const out: string[] = [];
  out.push(`${st.bold("report diff:")} ${d.old.file} -> ${d.new.file}`);
  for (const n of d.notes) out.push(st.yellow(`note: ${n}`));
  out.push(totalsLine(d));
  const table = (title: string, es: readonly DiffEntry[], paint: (s: string) => string) => {
    out.push("");
    out.push(st.bold(`${title} (${es.length})`));
    if (es.length === 0) return;
    const rows = es.slice(0, maxRows).map((e) => [e.op, e.dtype, e.check, arrow(e), e.message.replace(/\s+/g, " ")]);
    const w = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const r of rows) {
      const msg = r[4]!.length > 100 ? `${r[4]!.slice(0, 99)}…` : r[4]!;
      out.push(
        `  ${paint(
          r
            .slice(0, 4)
            .map((c, i) => c.padEnd(w[i]!))
            .join("  "),
        )}  ${st.dim(msg)}`,
      );
    }
    if (es.length > maxRows) out.push(st.dim(`  … ${es.length - maxRows} more (--json lists all)`));
  };
  table("regressed", d.regressed, st.red);
  table("fixed", d.fixed, st.green);
  const newProblems = d.added.filter((e) => isProblem(e.new!));
  table("new problems", newProblems, st.red);
  out.push("");
  out.push(`${st.bold(`new results (${d.added.length})`)}${d.added.length ? `: ${perOp(d.added, 12)}` : ""}`);
  out.push(`${st.bold(`gone results (${d.gone.length})`)}${d.gone.length ? `: ${perOp(d.gone, 12)}` : ""}`);
  out.push(
    `${st.bold(`other status changes (${d.changed.length})`)}${d.changed.length ? `: ${perOp(d.changed, 12)}` : ""}`,
  );
  out.push("");
  out.push(
    d.gate
      ? st.red(
          `${d.regressed.length} regressed, ${newProblems.length} new problem${newProblems.length === 1 ? "" : "s"}: exit 1`,
        )
      : st.green(`nothing regressed; ${d.fixed.length} fixed`),
  );
  return `${out.join("\n")}\n`;
}

function mdCell(s: string, max = 100): string {
  const one = s.replace(/\s+/g, " ").trim();
  return (one.length > max ? `${one.slice(0, max - 1)}…` : one).replace(/\|/g, "\\|").replace(/`/g, "'");
}

/** For a pull-request comment: the verdict, totals, then at most `maxRows` regressions/new problems and fixes. */
export function diffToMarkdown(d: ReportDiff, maxRows = 20): string {
  const out: string[] = [];
  const newProblems = d.added.filter((e) => isProblem(e.new!));
  out.push(
    `### Conformance against the base report: ${d.gate ? `❌ ${d.regressed.length} regressed, ${newProblems.length} new problems` : "✅ nothing regressed"}${d.fixed.length ? `, ${d.fixed.length} fixed` : ""}`,
  );
  out.push("");
  out.push(`${totalsLine(d)}.`);
  out.push("");
  out.push(
    `${d.added.length} new results, ${d.gone.length} gone, ${d.changed.length} other status changes.${d.notes.length ? ` Note: ${d.notes.join("; ")}.` : ""}`,
  );
  const rows = [
    ...d.regressed.map((e) => ["regressed", e] as const),
    ...newProblems.map((e) => ["new", e] as const),
    ...d.fixed.map((e) => ["fixed", e] as const),
  ];
  if (rows.length > 0) {
    out.push("");
    out.push("| | op | dtype | check | status | message |");
    out.push("|---|---|---|---|---|---|");
    for (const [what, e] of rows.slice(0, maxRows)) {
      const icon = what === "fixed" ? "✅" : "❌";
      out.push(`| ${icon} ${what} | \`${e.op}\` | ${e.dtype} | ${e.check} | ${arrow(e)} | ${mdCell(e.message)} |`);
    }
    if (rows.length > maxRows) out.push(`\n${rows.length - maxRows} more in the full diff (\`report diff --json\`).`);
  }
  return `${out.join("\n")}\n`;
}

export function diffToJson(d: ReportDiff): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
