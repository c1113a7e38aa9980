/**
 * `opgen-backend bench [project-dir]`: selects operators from the op
 * manifest as `test` does, writes the bench config (Note [Bench config] in
 * python/opgen_conformance/bench.py), runs the Python coordinator with the
 * user's Python, shows its progress, and turns its rows into the reports
 * (bench-report.ts). Timings come from this command, never from tests.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { resolvePython } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { acquireLock, appendText, writeText } from "../write/files.js";
import { parseReport } from "./aggregate.js";
import {
  type BenchMeta,
  type BenchRawRow,
  type BenchReport,
  benchToHtml,
  benchToJson,
  benchToMarkdown,
  benchToTerminal,
  conformantOps,
  makeBenchReport,
} from "./bench-report.js";
import { globMatch } from "./expectations.js";
import { familyOf } from "./families.js";
import { runRunnerProcess } from "./runner.js";
import { type OpInfo, type OpManifest, readManifest, type Selection, selectOps } from "./select.js";
import { OP_KINDS, type OpKind } from "./types.js";

/** python/opgen_conformance/bench.py BENCH_VERSION */
export const BENCH_VERSION = 1;

export interface BenchOptions {
  readonly projectDir: string;
  readonly python?: string;
  readonly manifest?: string;
  readonly selection: Selection;
  readonly workers: number;
  readonly threads: number;
  readonly runs: number;
  /** seconds of timed samples per row at most (after the first five) */
  readonly budgetS: number;
  /** "wall" (default) or "cpu": the worker thread's CPU time (Note [Bench timing]) */
  readonly clock: "wall" | "cpu";
  /** debug (`--repeat-op [GLOB=]N`): every timed device call of the matching ops runs the operator N times */
  readonly repeatOp: RepeatOp;
  readonly accuracy: boolean;
  /** seconds one operator (all its dtypes and sizes) may take */
  readonly timeoutS: number;
  readonly seed: number;
  readonly results?: string;
  readonly cacheDir?: string;
  /** a `test --json` report: fast_p counts only the operators that pass it */
  readonly conformance?: string;
  readonly json?: string;
  readonly markdown?: string;
  readonly html?: string;
  readonly quiet?: boolean;
}

export interface RepeatOp {
  /** the ops it applies to; absent: all */
  readonly glob?: string;
  readonly n: number;
}

/** `--repeat-op N` or `--repeat-op GLOB=N`. */
export function parseRepeatOp(v: string): RepeatOp {
  const m = /^(?:(.+)=)?(\d+)$/.exec(v.trim());
  const n = m ? Number(m[2]) : Number.NaN;
  if (!m || !Number.isInteger(n) || n < 1) {
    throw new UserError(`--repeat-op ${v}: expected N or GLOB=N with N an integer >= 1 (e.g. 3, or 'mm=3')`);
  }
  return m[1] ? { glob: m[1], n } : { n };
}

export function repeatText(r: RepeatOp): string {
  return r.glob ? `${r.glob}=${r.n}` : String(r.n);
}

/** What an op is timed in when eager runs none of its default dtypes (bench.py OP_KEYS). */
const ALTERNATIVES = ["int64", "bool"] as const;

/** The dtypes timed per op: the asked ones it claims, else its first claimed of a preferred few. */
export function benchDtypes(claimed: readonly string[], asked: readonly string[] | undefined): string[] {
  const want = asked ?? ["float32"];
  const hit = want.filter((d) => claimed.includes(d));
  if (hit.length > 0 || asked) return hit;
  const fallback = ["float32", "int64", "int32", "bool", "float64", "complex64", "uint8"].find((d) =>
    claimed.includes(d),
  );
  return fallback ? [fallback] : claimed.slice(0, 1);
}

function opInfo(m: OpManifest): Record<string, OpInfo> {
  const info: Record<string, OpInfo> = {};
  for (const o of m.operators) {
    const kind = (OP_KINDS as readonly string[]).includes(String(o.kind)) ? (o.kind as OpKind) : "functional";
    info[o.name] = { exists: true, kind, core: Boolean(o.core), view: Boolean(o.view) };
  }
  return info;
}

export async function runBench(opts: BenchOptions): Promise<BenchReport> {
  const project = path.resolve(opts.projectDir);
  const manifestFile = path.resolve(opts.manifest ?? path.join(project, "csrc", "generated", "op_manifest.json"));
  const manifest = readManifest(manifestFile);
  const python = resolvePython(opts.python);
  const { ops, unmatched } = selectOps(manifest, opInfo(manifest), { ...opts.selection, dtypes: undefined });
  if (unmatched.length > 0)
    throw new UserError(`--ops ${unmatched.join(", ")}: matches no operator in ${manifestFile}`);
  // Views and scratch/mutable overloads time metadata or need state of their own: not benchmarked.
  const timed = ops
    .filter((o) => !o.view && (o.kind === "functional" || o.kind === "inplace" || o.kind === "out"))
    .map((o) => ({
      name: o.op,
      kind: o.kind,
      family: familyOf(o.op),
      dtypes: benchDtypes(o.dtypes, opts.selection.dtypes),
      // --dtypes given: those alone; else an op eager runs in none of them tries these (bitwise ops)
      alternatives: opts.selection.dtypes ? [] : ALTERNATIVES.filter((d) => o.dtypes.includes(d)),
      repeat: opts.repeatOp.glob === undefined || globMatch(opts.repeatOp.glob, o.op) ? opts.repeatOp.n : 1,
    }))
    .filter((o) => o.dtypes.length > 0);
  if (timed.length === 0)
    throw new UserError(`nothing to benchmark: the selection matches no timed operator in ${manifestFile}`);
  let conformance: Map<string, boolean> | null = null;
  if (opts.conformance) {
    let text: string;
    try {
      text = readFileSync(opts.conformance, "utf8");
    } catch (e) {
      throw new UserError(`--conformance ${opts.conformance}: cannot read it (${(e as Error).message})`);
    }
    conformance = conformantOps(parseReport(text, opts.conformance));
  }
  const outDir = path.join(project, ".opgen", "bench");
  const resultsFile = path.resolve(opts.results ?? path.join(outDir, "results.jsonl"));
  const configFile = `${resultsFile}.config.json`;
  const lock = acquireLock(
    resultsFile,
    "`opgen-backend bench`",
    "wait for it to finish, or give this run its own file with --results",
  );
  try {
    const config = {
      version: BENCH_VERSION,
      device: manifest.device,
      package: manifest.python_package,
      threads: opts.threads,
      workers: opts.workers,
      warmup: 2,
      runs: opts.runs,
      budget_s: opts.budgetS,
      clock: opts.clock,
      accuracy: opts.accuracy,
      timeout_s: opts.timeoutS,
      seed: opts.seed,
      results: resultsFile,
      cache_dir: path.resolve(opts.cacheDir ?? path.join(project, ".opgen", "cache")),
      ops: timed,
    };
    writeText(configFile, `${JSON.stringify(config, null, 2)}\n`);
    const view = new BenchProgress(Boolean(opts.quiet));
    await runRunnerProcess(
      python,
      ["bench", "--config", configFile],
      "the bench runner",
      (e) => view.on(e as BenchEvent),
      {
        env: { OMP_NUM_THREADS: String(opts.threads) },
      },
    );
    const raw = readFileSync(resultsFile, "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as BenchRawRow);
    const setupFile = `${resultsFile}.setup.json`;
    const setup = existsSync(setupFile)
      ? (JSON.parse(readFileSync(setupFile, "utf8")) as {
          device_label: string;
          reference: string;
          torch_version: string;
        })
      : {
          device_label: `device ${manifest.device} (unavailable)`,
          reference: "none",
          torch_version: manifest.torch_version ?? "",
        };
    const meta: BenchMeta = {
      device: manifest.device,
      device_label: setup.device_label,
      reference: setup.reference,
      threads: opts.threads,
      workers: opts.workers,
      runs: opts.runs,
      clock: opts.clock,
      repeat_op: repeatText(opts.repeatOp),
      torch_version: setup.torch_version || (manifest.torch_version ?? ""),
      conformance: opts.conformance ? path.basename(opts.conformance) : null,
    };
    const report = makeBenchReport(meta, raw, conformance);
    writeBenchOutputs(report, opts);
    if (!opts.quiet) process.stdout.write(benchToTerminal(report));
    return report;
  } finally {
    lock.release();
  }
}

export function writeBenchOutputs(
  report: BenchReport,
  out: { readonly json?: string; readonly markdown?: string; readonly html?: string },
): void {
  if (out.json) writeText(out.json, benchToJson(report));
  if (out.markdown) writeText(out.markdown, benchToMarkdown(report));
  if (out.html) writeText(out.html, benchToHtml(report));
  const step = process.env.GITHUB_STEP_SUMMARY;
  if (step) appendText(step, benchToMarkdown(report));
}

type BenchEvent =
  | { readonly event: "start"; readonly tasks_total: number; readonly workers: number }
  | { readonly event: "unavailable"; readonly reason: string }
  | { readonly event: "task"; readonly op: string; readonly tasks_done: number; readonly tasks_total: number }
  | { readonly event: "finished"; readonly elapsed_s: number };

/** A line per 10% of the operators (and the start and end), on stderr. */
class BenchProgress {
  private lastDecile = -1;
  constructor(private readonly quiet: boolean) {}
  on(e: BenchEvent): void {
    if (this.quiet) return;
    switch (e.event) {
      case "start":
        process.stderr.write(`bench: ${e.tasks_total} operators, ${e.workers} worker${e.workers === 1 ? "" : "s"}\n`);
        break;
      case "unavailable":
        process.stderr.write(`bench: nothing timed: ${e.reason}\n`);
        break;
      case "task": {
        const pct = e.tasks_total > 0 ? Math.floor((100 * e.tasks_done) / e.tasks_total) : 100;
        if (Math.floor(pct / 10) !== this.lastDecile) {
          this.lastDecile = Math.floor(pct / 10);
          process.stderr.write(`bench: ${pct}% (${e.tasks_done}/${e.tasks_total}, last ${e.op})\n`);
        }
        break;
      }
      case "finished":
        process.stderr.write(`bench: done in ${e.elapsed_s.toFixed(1)} s\n`);
        break;
      default:
        break;
    }
  }
}
