/**
 * Turns the runner's per-sample JSONL into per (op, dtype, check) results and
 * a Report (Note [One result per op x dtype x check] in types.ts), and merges
 * reports of shards back into one.
 *
 * Everything here is a pure function of its inputs and sorts its output, so
 * a resumed run, a sharded-and-merged run and an uninterrupted run that saw
 * the same samples produce byte-identical reports.
 */
import { readFileSync } from "node:fs";
import { UserError } from "../util/errors.js";
import { cmp, STATUS_SEVERITY } from "../vocab.js";
import { isModel, type ModelCase } from "./models.js";
import {
  CHECKS,
  DTYPE_ORDER,
  GENERATOR,
  type OpUnderTest,
  type RawRecord,
  type Report,
  type ReportCoverage,
  type ReportMeta,
  type Result,
  type SampleStatus,
  type Status,
  type Summary,
} from "./types.js";
import { isUpstream, mergeUpstream, type UpstreamReport } from "./upstream-report.js";

const SEVERITY: Readonly<Record<SampleStatus, number>> = STATUS_SEVERITY;

export function parseJsonl(text: string): RawRecord[] {
  const out: RawRecord[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as RawRecord);
    } catch {
      // a torn last line of a killed run: the runner cuts it on --resume
    }
  }
  return out;
}

export function readJsonl(file: string): RawRecord[] {
  return parseJsonl(readFileSync(file, "utf8"));
}

export function dtypeRank(d: string): number {
  const i = (DTYPE_ORDER as readonly string[]).indexOf(d);
  return i < 0 ? DTYPE_ORDER.length : i;
}

function checkRank(c: string): number {
  const i = (CHECKS as readonly string[]).indexOf(c);
  return i < 0 ? CHECKS.length : i;
}

export function compareResults(a: Result, b: Result): number {
  return (
    cmp(a.op, b.op) ||
    dtypeRank(a.dtype) - dtypeRank(b.dtype) ||
    cmp(a.dtype, b.dtype) ||
    checkRank(a.check) - checkRank(b.check) ||
    cmp(a.check, b.check)
  );
}

interface Acc {
  status: SampleStatus;
  message: string;
  sample: number;
  seed: number;
  samples: number;
  input: string;
}

/** Per (op, dtype, check) results of the records; only ops in `ops` (all when undefined). */
export function aggregate(
  records: readonly RawRecord[],
  ops?: readonly { readonly op: string; readonly dtypes: readonly string[] }[],
): Result[] {
  const wanted = ops ? new Set(ops.flatMap((o) => o.dtypes.map((d) => `${o.op}\u0000${d}`))) : undefined;
  const acc = new Map<string, Acc>();
  const tasks = new Map<string, { samples: number; stopped?: string; seed: number }>();
  let seed = 0;
  for (const r of records) {
    switch (r.kind) {
      case "header":
        seed = r.seed;
        break;
      case "task": {
        const key = `${r.op}\u0000${r.dtype}`;
        if (wanted && !wanted.has(key)) break;
        tasks.set(key, { samples: r.samples, stopped: r.stopped, seed });
        break;
      }
      case "sample": {
        const key = `${r.op}\u0000${r.dtype}`;
        if (wanted && !wanted.has(key)) break;
        for (const [check, [status, message]] of Object.entries(r.checks)) {
          const k = `${key}\u0000${check}`;
          const prev = acc.get(k);
          if (!prev) {
            acc.set(k, { status, message, sample: r.sample, seed: r.seed, samples: 1, input: r.desc });
            continue;
          }
          prev.samples += 1;
          const worse = SEVERITY[status] > SEVERITY[prev.status];
          const sameEarlier = SEVERITY[status] === SEVERITY[prev.status] && r.sample < prev.sample;
          if (worse || sameEarlier) {
            prev.status = status;
            prev.message = message;
            prev.sample = r.sample;
            prev.seed = r.seed;
            prev.input = r.desc;
          }
        }
        break;
      }
      default:
        break;
    }
  }
  const out: Result[] = [];
  for (const [k, a] of acc) {
    const [op, dtype, check] = k.split("\u0000") as [string, string, string];
    out.push({ op, dtype, check, ...a });
  }
  // A finished task that produced no sample at all still gets a line: the
  // reader must see that (op, dtype) was tried, not silently missing.
  for (const [key, t] of tasks) {
    const [op, dtype] = key.split("\u0000") as [string, string];
    if (out.some((r) => r.op === op && r.dtype === dtype)) continue;
    out.push({
      op,
      dtype,
      check: "values",
      status: "skip",
      message: t.stopped ?? "no samples for this dtype (no OpInfo sample reaches it and the schema gives none)",
      seed: t.seed,
      sample: 0,
      samples: 0,
      input: "",
    });
  }
  return out.sort(compareResults);
}

/** Ops whose every result is pass/warn/skip (and at least one pass). */
export function passingOps(results: readonly Result[]): Set<string> {
  const bad = new Set<string>();
  const good = new Set<string>();
  for (const r of results) {
    if (r.status === "pass" || r.status === "warn") good.add(r.op);
    else if (r.status !== "skip") bad.add(r.op);
  }
  return new Set([...good].filter((o) => !bad.has(o)));
}

export function summarize(results: readonly Result[], ops: readonly OpUnderTest[], coreTotal: number): Summary {
  const n = (s: Status) => results.filter((r) => r.status === s).length;
  const passing = passingOps(results);
  // model cases and upstream tests are counted by their sections, not as operators
  const tested = new Set(results.filter((r) => !isModel(r.op) && !isUpstream(r.op)).map((r) => r.op));
  // An op "passes" only if every claimed dtype was run: a missing dtype (an
  // interrupted run) must not count as conformant.
  const seen = new Set(results.map((r) => `${r.op}\u0000${r.dtype}`));
  const complete = (o: OpUnderTest) => o.dtypes.every((d) => seen.has(`${o.op}\u0000${d}`));
  const okOps = ops.filter((o) => passing.has(o.op) && complete(o));
  // Note [Core overloads through their decomposition] (coverage.ts): one that reached the fallback is not core-conformant.
  const fellBack = new Set(
    results.filter((r) => r.check === "fallback" && r.status !== "pass" && r.status !== "skip").map((r) => r.op),
  );
  const corePassing = okOps.filter((o) => o.core && !(o.decomposed && fellBack.has(o.op)));
  return {
    total: results.length,
    passed: n("pass"),
    warned: n("warn"),
    failed: n("fail"),
    crashed: n("crash"),
    timed_out: n("timeout"),
    compile_failed: n("compile-failed"),
    skipped: n("skip"),
    xfail: n("xfail"),
    xpass: n("xpass"),
    ops: tested.size,
    ops_passed: okOps.length,
    core_total: coreTotal,
    core_passed: corePassing.length,
    core_decomposed: corePassing.filter((o) => o.decomposed).length,
    core_decomposed_fallback: ops.filter((o) => o.core && o.decomposed && fellBack.has(o.op)).length,
  };
}

export function makeReport(
  meta: ReportMeta,
  ops: readonly OpUnderTest[],
  results: readonly Result[],
  coreTotal: number,
  coverage?: ReportCoverage,
  models?: readonly ModelCase[],
  upstream?: UpstreamReport,
): Report {
  const sortedOps = [...ops].sort((a, b) => cmp(a.op, b.op));
  const sorted = [...results].sort(compareResults);
  return {
    generator: GENERATOR,
    meta,
    summary: summarize(sorted, sortedOps, coreTotal),
    ops: sortedOps,
    results: sorted,
    ...(coverage ? { coverage } : {}),
    ...(models?.length ? { models } : {}),
    ...(upstream ? { upstream } : {}),
  };
}

/** How many results have a problem status (vocab.ts PROBLEM_STATUSES: fail, compile-failed, crash, timeout, xpass). */
export function problemCount(s: Summary): number {
  return s.failed + (s.compile_failed ?? 0) + s.crashed + s.timed_out + s.xpass;
}

/** Is this report a failure for CI? Any problem (update the expectations for an XPASS). */
export function failed(s: Summary): boolean {
  return problemCount(s) > 0;
}

export function parseReport(text: string, file: string): Report {
  let r: Report;
  try {
    r = JSON.parse(text) as Report;
  } catch (e) {
    throw new UserError(`${file}: not JSON (${(e as Error).message}); pass reports written by \`test --json\``);
  }
  if (!r || typeof r !== "object" || !Array.isArray(r.results) || !Array.isArray(r.ops) || !r.meta) {
    throw new UserError(
      `${file}: not a conformance report (needs meta, ops, results); pass files written by \`test --json\``,
    );
  }
  return r;
}

/** Shards a merged report lacks, e.g. ["2/3"] when only 1/3 and 3/3 were merged. */
export function missingShards(shards: readonly string[]): string[] {
  const parsed = shards.map((x) => /^(\d+)\/(\d+)$/.exec(x)).filter((m): m is RegExpExecArray => m !== null);
  const counts = new Set(parsed.map((m) => Number(m[2])));
  if (counts.size !== 1) return [];
  const n = [...counts][0]!;
  const have = new Set(parsed.map((m) => Number(m[1])));
  return Array.from({ length: n }, (_, i) => i + 1)
    .filter((i) => !have.has(i))
    .map((i) => `${i}/${n}`);
}

/** Combine shard reports. Shards must come from the same settings and not overlap. */
export function mergeReports(reports: readonly { file: string; report: Report }[]): Report {
  if (reports.length === 0) throw new UserError("report merge: no reports given");
  const first = reports[0]!.report;
  const problems: string[] = [];
  const ops = new Map<string, OpUnderTest>();
  const results = new Map<string, Result>();
  const shards: string[] = [];
  let coreTotal = first.summary.core_total;
  for (const { file, report } of reports) {
    for (const k of ["device", "seed", "max_samples", "torch_version", "compiled"] as const) {
      if (report.meta[k] !== first.meta[k]) {
        problems.push(
          `${file}: ${k} is ${JSON.stringify(report.meta[k])}, ${reports[0]!.file} has ${JSON.stringify(first.meta[k])}`,
        );
      }
    }
    coreTotal = Math.max(coreTotal, report.summary.core_total);
    shards.push(...report.meta.shards);
    for (const o of report.ops) ops.set(o.op, o);
    for (const r of report.results) {
      const k = `${r.op}\u0000${r.dtype}\u0000${r.check}`;
      const prev = results.get(k);
      if (prev && JSON.stringify(prev) !== JSON.stringify(r)) {
        problems.push(`${file}: ${r.op} ${r.dtype} ${r.check} is also in another shard with a different result`);
      }
      results.set(k, r);
    }
  }
  if (problems.length > 0) {
    throw new UserError(
      `report merge: the reports do not come from one run's shards`,
      problems.map((message) => ({ severity: "error" as const, message })),
    );
  }
  const meta: ReportMeta = { ...first.meta, shards: [...new Set(shards)].sort() };
  // Every shard computed the same coverage from the same backend.yaml and torch.
  const coverage = reports.find((r) => r.report.coverage)?.report.coverage;
  const models = new Map<string, ModelCase>();
  for (const { report } of reports) for (const m of report.models ?? []) models.set(m.name, m);
  const upstream = mergeUpstream(reports.flatMap((r) => (r.report.upstream ? [r.report.upstream] : [])));
  return makeReport(
    meta,
    [...ops.values()],
    [...results.values()],
    coreTotal,
    coverage,
    [...models.values()],
    upstream,
  );
}
