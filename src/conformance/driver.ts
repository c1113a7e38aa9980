/**
 * `opgen-backend test`: selects operators from the op manifest, starts the
 * Python runner (python/opgen_conformance, shipped in this package) with the
 * user's Python through execa, shows its progress, then turns the results
 * JSONL into every report asked for.
 *
 * The runner writes results to disk as they come (Note [Results stream] in
 * python/opgen_conformance/results.py); this side only reads them back once the
 * runner has finished, so an interrupted `test` loses nothing and
 * `--resume` picks up where it stopped.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { resolvePython } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { style } from "../util/term.js";
import { acquireLock, appendText, freshDir, writeText } from "../write/files.js";
import { aggregate, failed, makeReport, readJsonl } from "./aggregate.js";
import { type CoreCoverage, coreCoverage } from "./coverage.js";
import {
  applyExpectations,
  EMPTY_EXPECTATIONS,
  type ExpectationsFile,
  loadExpectations,
  modeApplies,
} from "./expectations.js";
import { problems, toHtml, toJson, toJunit, toMarkdown, toTerminal } from "./formats.js";
import { isModel, MODEL_DTYPE, modelCases, modelReplayLines, modelTimes, resolveModelCases } from "./models.js";
import { type RunConfig, type RunConfigModel, runConfig } from "./runconfig.js";
import { cpuCapability, PYTHON_DIR, pythonEnv, runRunnerProcess } from "./runner.js";
import { LOGS_ENV, loadSanitizedBuild, sanitizerEnv } from "./sanitize.js";
import { type OpInfo, type OpManifest, readManifest, type Selection, type Shard, selectOps } from "./select.js";
import { OP_KINDS, type OpKind, type OpUnderTest, type Report, type Result } from "./types.js";

export { PYTHON_DIR, pythonEnv } from "./runner.js";

export interface Outputs {
  readonly json?: string;
  readonly junit?: string;
  readonly html?: string;
  readonly markdown?: string;
}

export interface TestOptions extends Outputs {
  readonly projectDir: string;
  readonly python?: string;
  readonly manifest?: string;
  readonly selection: Selection;
  readonly workers: number;
  /** Per-worker allocation limit (Note [Worker memory limit]); null or absent: none. */
  readonly workerMemoryBytes?: number | null;
  readonly timeoutS: number;
  readonly seed: number;
  readonly maxSamples: number;
  readonly resume: boolean;
  readonly results?: string;
  readonly expectations?: string;
  /** test CPU with faults injected from this Python file instead of the device */
  readonly faults?: string;
  readonly cacheDir?: string;
  readonly quiet?: boolean;
  /** Run the workers on the project's sanitizer build of these sanitizers (Note [Sanitizer builds]). */
  readonly sanitize?: readonly string[];
  /** `--model FILE[:NAME]`: run these model files' cases instead of the operators (models.ts). */
  readonly models?: readonly string[];
  /** `--compile`: the device side through torch.compile with Inductor (Note [Compiled mode]). */
  readonly compile?: boolean;
}

/**
 * What the runner needs of each overload besides its name: `gen` records its
 * kind, core tag and view-ness and the torch's core total in the manifest,
 * so no Python process (and no torch import) is needed to learn them. A
 * manifest without them was written by an older opgen-backend.
 */
function fromManifest(m: OpManifest, file: string): { coreTotal: number; info: Record<string, OpInfo> } {
  const refresh = "; a manifest written by an older opgen-backend lacks it: rerun `opgen-backend gen` (or `build`)";
  if (typeof m.core_total !== "number") throw new UserError(`${file}: no core_total${refresh}`);
  const info: Record<string, OpInfo> = {};
  for (const o of m.operators) {
    const bad =
      typeof o.kind !== "string"
        ? "no kind"
        : !(OP_KINDS as readonly string[]).includes(o.kind)
          ? `kind ${JSON.stringify(o.kind)} (allowed: ${OP_KINDS.join(", ")})`
          : typeof o.core !== "boolean"
            ? "no core (true or false)"
            : typeof o.view !== "boolean"
              ? "no view (true or false)"
              : null;
    if (bad !== null) throw new UserError(`${file}: operator ${o.name} has ${bad}${refresh}`);
    info[o.name] = { exists: true, kind: o.kind as OpKind, core: o.core as boolean, view: o.view as boolean };
  }
  return { coreTotal: m.core_total, info };
}

function shardSuffix(s?: Shard): string {
  return s ? `.shard-${s.index}-of-${s.count}` : "";
}

export interface RunOutcome {
  readonly report: Report;
  readonly resultsFile: string;
  readonly configFile: string;
  /** Under --sanitize, the environment the runner ran in (Note [Sanitized workers]): the custom-operator checks run in it too. */
  readonly sanitized?: Readonly<Record<string, string>>;
}

export async function runTest(opts: TestOptions): Promise<RunOutcome> {
  const project = path.resolve(opts.projectDir);
  const manifestFile = path.resolve(opts.manifest ?? path.join(project, "csrc", "generated", "op_manifest.json"));
  const manifest: OpManifest = readManifest(manifestFile);
  const python = resolvePython(opts.python);
  const expFile = opts.expectations ?? path.join(project, "conformance-expectations.yaml");
  const exp: ExpectationsFile =
    opts.expectations || existsSync(expFile) ? loadExpectations(expFile) : EMPTY_EXPECTATIONS;

  const models = opts.models?.length ? await resolveModelCases(python, opts.models) : [];
  // Note [Core overloads through their decomposition] (coverage.ts): an op run adds them.
  const cov = opts.faults ? undefined : await coreCoverage(project, python);
  const decomposed = models.length ? [] : (cov?.decomposed ?? []);
  const known = new Set(manifest.operators.map((o) => o.name));
  const runManifest: OpManifest = {
    ...manifest,
    operators: [...manifest.operators, ...decomposed.filter((o) => !known.has(o.name))],
  };
  const { coreTotal, info } = fromManifest(runManifest, manifestFile);
  const decomposedNames = new Set(decomposed.map((o) => o.name));
  // A model run tests its cases, not the operators.
  const selected = models.length ? { ops: [], unmatched: [] } : selectOps(runManifest, info, opts.selection);
  const unmatched = selected.unmatched;
  const ops = selected.ops.map((o) => (decomposedNames.has(o.op) ? { ...o, decomposed: true as const } : o));
  if (unmatched.length > 0) {
    throw new UserError(`--ops ${unmatched.join(", ")}: matches no operator in ${manifestFile}`);
  }
  if (ops.length === 0 && models.length === 0 && !opts.selection.shard) {
    throw new UserError(`nothing to test: the selection matches no operator in ${manifestFile}`);
  }

  const outDir = path.join(project, ".opgen", "conformance");
  const resultsFile = path.resolve(
    opts.results ?? path.join(outDir, `results${shardSuffix(opts.selection.shard)}.jsonl`),
  );
  const lock = acquireLock(
    resultsFile,
    "`opgen-backend test`",
    "wait for it to finish, or give this run its own file with --results",
  );
  try {
    return await runLocked(opts, { project, python, manifest, ops, models, coreTotal, exp, resultsFile, cov });
  } finally {
    lock.release();
  }
}

/** What runTest settled before taking the results lock. */
interface Settled {
  readonly project: string;
  readonly python: string;
  readonly manifest: OpManifest;
  readonly ops: readonly OpUnderTest[];
  readonly models: readonly RunConfigModel[];
  readonly coreTotal: number;
  readonly exp: ExpectationsFile;
  readonly resultsFile: string;
  readonly cov: CoreCoverage | undefined;
}

async function runLocked(opts: TestOptions, settled: Settled): Promise<RunOutcome> {
  const { project, python, manifest, ops, models, coreTotal, exp, resultsFile, cov } = settled;
  const configFile = `${resultsFile}.config.json`;
  const device = opts.faults ? "cpu" : manifest.device;
  const sanitized = opts.sanitize?.length ? sanitizedRun(project, resultsFile, opts) : undefined;
  const config: RunConfig = runConfig({
    device,
    package: opts.faults ? null : manifest.python_package,
    faults: opts.faults ? path.resolve(opts.faults) : null,
    seed: opts.seed,
    max_samples: opts.maxSamples,
    timeout_s: opts.timeoutS,
    workers: opts.workers,
    // Under ASan the limit is its malloc_limit_mb (sanitizerEnv), not RLIMIT_DATA.
    worker_memory_bytes: sanitized ? null : (opts.workerMemoryBytes ?? null),
    resume: opts.resume,
    compile: Boolean(opts.compile),
    results: resultsFile,
    cache_dir: opts.cacheDir ?? path.join(project, ".opgen", "cache"),
    // Note [Expectation modes]: the tolerances of this run's mode, without the key the runner does not read
    tolerances: exp.tolerances.filter((t) => modeApplies(t.mode, Boolean(opts.compile))).map(({ mode: _, ...t }) => t),
    ops: ops.map((o) => ({
      name: o.op,
      kind: o.kind,
      view: o.view,
      core: o.core,
      decomposed: Boolean(o.decomposed),
      dtypes: o.dtypes,
    })),
    models,
  });
  writeText(configFile, `${JSON.stringify(config, null, 2)}\n`);
  // Eager's CPU capability, for expectations that name one (Note [CPU capability]), while the runner runs.
  const cpuP = exp.expectations.some((e) => e.cpu !== undefined) ? cpuCapability(python) : Promise.resolve(undefined);
  if (opts.resume && !existsSync(resultsFile)) {
    process.stderr.write(`opgen-backend: no earlier results at ${resultsFile}; starting from scratch\n`);
  }

  await runPython(python, configFile, Boolean(opts.quiet), sanitized);

  const raw = readJsonl(resultsFile);
  const wanted = [...ops, ...models.map((m) => ({ op: m.name, dtypes: [MODEL_DTYPE] }))];
  const compiled = Boolean(opts.compile);
  const aggregated: Result[] = compiled
    ? aggregate(raw, wanted).map((r) => ({ ...r, compiled: true as const }))
    : aggregate(raw, wanted);
  const results = applyExpectations(aggregated, exp.expectations, await cpuP, compiled);
  const report = makeReport(
    {
      device,
      seed: opts.seed,
      max_samples: opts.maxSamples,
      torch_version: manifest.torch_version ?? "",
      shards: opts.selection.shard ? [`${opts.selection.shard.index}/${opts.selection.shard.count}`] : [],
      ...(compiled ? { compiled: true as const } : {}),
    },
    ops,
    results,
    coreTotal,
    opts.json || opts.html || opts.markdown ? cov?.coverage : undefined,
    modelCases(models, raw, results, manifest.operators, modelTimes(resultsFile)),
  );
  writeOutputs(report, opts);
  if (!opts.quiet) {
    const st = style(process.stdout);
    process.stdout.write(toTerminal(report, st));
    const envText = sanitized
      ? Object.entries(sanitized)
          .map(([k, v]) => `${k}='${v}'`)
          .join(" ")
      : // the runner's own PYTHONPATH: the caller's (a --target install) stays on it
        `PYTHONPATH='${pythonEnv().PYTHONPATH}'`;
    const runner = `${envText} ${python} -m opgen_conformance`;
    for (const line of modelReplayLines(report.models ?? [], runner, configFile)) {
      process.stdout.write(st.dim(`${line}\n`));
    }
    const first = problems(report).find((r) => !isModel(r.op));
    if (first) {
      process.stdout.write(
        st.dim(
          `rerun one sample alone: ${runner} rerun --config ${configFile} ` +
            `--op '${first.op}' --dtype ${first.dtype} --seed ${first.seed} --sample ${first.sample}\n`,
        ),
      );
    }
  }
  return { report, resultsFile, configFile, ...(sanitized ? { sanitized } : {}) };
}

/**
 * The environment of a sanitized run (Note [Sanitized workers]); its reports
 * go to <results>.sanitizer/, emptied first. Timeouts are the caller's: a
 * sanitized kernel runs a few times slower.
 */
function sanitizedRun(project: string, resultsFile: string, opts: TestOptions): Record<string, string> {
  const b = loadSanitizedBuild(project, opts.sanitize ?? []);
  const logs = `${resultsFile}.sanitizer`;
  freshDir(logs);
  return sanitizerEnv(b, PYTHON_DIR, logs, opts.workerMemoryBytes);
}

export function writeOutputs(report: Report, out: Outputs): void {
  const write = (file: string | undefined, text: () => string) => {
    if (!file) return;
    writeText(file, text());
  };
  write(out.json, () => toJson(report));
  write(out.junit, () => toJunit(report));
  write(out.html, () => toHtml(report));
  write(out.markdown, () => toMarkdown(report));
  const step = process.env.GITHUB_STEP_SUMMARY;
  if (step) appendText(step, toMarkdown(report));
}

export function checkOutcome(report: Report): void {
  if (failed(report.summary)) {
    const s = report.summary;
    const parts = [
      s.failed ? `${s.failed} failed` : "",
      s.compile_failed ? `${s.compile_failed} failed to compile` : "",
      s.crashed ? `${s.crashed} crashed` : "",
      s.timed_out ? `${s.timed_out} timed out` : "",
      s.xpass ? `${s.xpass} unexpectedly passed (update the expectations file)` : "",
    ].filter((p) => p);
    throw new UserError(`conformance: ${parts.join(", ")}`);
  }
}

type Event =
  | { readonly event: "start"; readonly tasks_total: number; readonly tasks_done: number; readonly workers: number }
  | { readonly event: "index"; readonly cache_dir: string; readonly building?: boolean }
  | { readonly event: "unavailable"; readonly reason: string }
  | {
      readonly event: "task";
      readonly op: string;
      readonly dtype: string;
      readonly tasks_done: number;
      readonly tasks_total: number;
      readonly samples: number;
    }
  | {
      readonly event: "incident";
      readonly kind: "crash" | "timeout" | "skip";
      readonly op: string;
      readonly dtype: string;
      readonly sample: number;
      readonly message: string;
    }
  | { readonly event: "finished"; readonly tasks_done: number; readonly samples: number; readonly elapsed_s: number };

/** Live view on a TTY (one redrawn line); in CI or a pipe, a line per 10% and per incident. */
class ProgressView {
  private readonly tty = Boolean(process.stderr.isTTY) && !process.env.CI;
  private readonly st = style(process.stderr);
  private lastDecile = -1;
  private readonly t0 = Date.now();
  private crashes = 0;
  private timeouts = 0;
  constructor(private readonly quiet: boolean) {}

  on(e: Event): void {
    if (this.quiet) return;
    switch (e.event) {
      case "start":
        this.line(
          `conformance: ${e.tasks_total} op×dtype tasks (${e.tasks_done} already done), ${e.workers} workers`,
          true,
        );
        break;
      case "unavailable":
        this.line(`conformance: every task skipped: ${e.reason}`, true);
        break;
      case "index":
        if (!this.tty && e.building !== false) {
          this.line("conformance: building the OpInfo index of this torch (once, ~30 s)", true);
        }
        break;
      case "task": {
        const pct = e.tasks_total > 0 ? Math.floor((100 * e.tasks_done) / e.tasks_total) : 100;
        const bad = [
          this.crashes ? this.st.red(`${this.crashes} crashed`) : "",
          this.timeouts ? this.st.red(`${this.timeouts} timed out`) : "",
        ]
          .filter((x) => x)
          .join(" ");
        const rate = e.samples / Math.max(0.001, (Date.now() - this.t0) / 1000);
        if (this.tty) {
          const width = 24;
          const fill = Math.round((width * pct) / 100);
          const bar = `${"█".repeat(fill)}${"░".repeat(width - fill)}`;
          this.redraw(
            `${bar} ${e.tasks_done}/${e.tasks_total} ${e.samples} samples ${rate.toFixed(1)}/s ${bad} ${this.st.dim(`${e.op} ${e.dtype}`)}`,
          );
        } else if (Math.floor(pct / 10) !== this.lastDecile) {
          this.lastDecile = Math.floor(pct / 10);
          this.line(
            `conformance: ${pct}% (${e.tasks_done}/${e.tasks_total} tasks, ${e.samples} samples, ${rate.toFixed(1)}/s) ${bad}`,
            true,
          );
        }
        break;
      }
      case "incident":
        if (e.kind === "crash") this.crashes++;
        else if (e.kind === "timeout") this.timeouts++;
        this.line(`${this.st.red(e.kind.toUpperCase())} ${e.op} ${e.dtype} sample ${e.sample}: ${e.message}`, true);
        break;
      case "finished":
        this.line(`conformance: ran ${e.samples} samples in ${e.elapsed_s.toFixed(1)} s`, true);
        break;
      default:
        break;
    }
  }

  private redraw(s: string): void {
    process.stderr.write(`\r\u001b[2K${s}`);
  }

  private line(s: string, clear: boolean): void {
    if (this.tty && clear) process.stderr.write("\r\u001b[2K");
    process.stderr.write(`${s}\n`);
  }
}

async function runPython(
  python: string,
  configFile: string,
  quiet: boolean,
  sanitized?: Record<string, string>,
): Promise<void> {
  const view = new ProgressView(quiet);
  await runRunnerProcess(
    python,
    ["run", "--config", configFile],
    "the conformance runner",
    (e) => view.on(e as Event),
    {
      env: sanitized ?? {},
      // Sanitized: in the reports directory, where the project's in-tree package
      // (the release build) cannot shadow the sanitized one (Note [Sanitized workers]).
      ...(sanitized ? { cwd: sanitized[LOGS_ENV] } : {}),
    },
  );
}
