/**
 * `opgen-backend test [project-dir]`, `opgen-backend bench [project-dir]` and `opgen-backend report merge|diff`:
 * commander wiring only (src/cli/main.ts calls registerConformanceCommands); the runner lives in src/conformance.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import type { Command } from "commander";
import { mergeReports, missingShards, parseReport } from "../conformance/aggregate.js";
import { hasCustomOps, runCustomOps } from "../conformance/custom.js";
import {
  DiffInputError,
  diffReports,
  diffToJson,
  diffToMarkdown,
  diffToTerminal,
  readReportForDiff,
} from "../conformance/diff.js";
import { runDistributed } from "../conformance/distributed.js";
import { checkOutcome, runTest, writeOutputs } from "../conformance/driver.js";
import { toTerminal } from "../conformance/formats.js";
import { RUN_CONFIG_DEFAULTS } from "../conformance/runconfig.js";
import { parseSanitizers } from "../conformance/sanitize.js";
import {
  defaultWorkerMemory,
  parseDtypes,
  parseMemorySize,
  parseOpGlobs,
  parseShard,
  type Selection,
} from "../conformance/select.js";
import type { Report } from "../conformance/types.js";
import { UserError } from "../util/errors.js";
import { style } from "../util/term.js";
import { isProblem } from "../vocab.js";
import { writeText } from "../write/files.js";

function int(flag: string, min: number): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new UserError(`${flag} ${v}: expected an integer >= ${min}`);
    return n;
  };
}

/** The operators `test` and `bench` run: --ops, --core, --dtypes (and test's --shard). */
function selectionOf(f: { ops?: string[]; core?: boolean; dtypes?: string; shard?: string }): Selection {
  return {
    ...(f.ops ? { globs: parseOpGlobs(f.ops) } : {}),
    core: Boolean(f.core),
    ...(f.dtypes ? { dtypes: parseDtypes(f.dtypes) } : {}),
    ...(f.shard ? { shard: parseShard(f.shard) } : {}),
  };
}

/** `test --compile`'s default seconds per sample, its compiles included. */
const COMPILE_TIMEOUT_S = 300;

function collect(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

/** `test --upstream`: PyTorch's test files on the device (src/conformance/upstream.ts). */
async function upstreamAction(dir: string, f: TestFlags, timeoutGiven: boolean): Promise<void> {
  const other = (
    [
      ["--ops", f.ops],
      ["--core", f.core],
      ["--model", f.model],
      ["--dtypes", f.dtypes],
      ["--faults", f.faults],
      ["--sanitize", f.sanitize],
      ["--resume", f.resume],
      ["--compile", f.compile],
    ] as const
  ).filter(([, v]) => v !== undefined && v !== false);
  if (other.length) {
    throw new UserError(
      `--upstream runs PyTorch's test files; ${other.map(([k]) => k).join(", ")} select operators (run them without --upstream)`,
    );
  }
  const { runUpstream, UPSTREAM_TIMEOUT_S } = await import("../conformance/upstream.js");
  const { report } = await runUpstream({
    ...projectOf(dir, f),
    files: Array.isArray(f.upstream) ? f.upstream : [],
    ...(f.upstreamDir ? { dir: f.upstreamDir } : {}),
    strict: Boolean(f.strict),
    updateExpectations: Boolean(f.updateExpectations),
    ...(f.shard ? { shard: parseShard(f.shard) } : {}),
    timeoutS: timeoutGiven ? f.timeout : UPSTREAM_TIMEOUT_S,
    expectations: f.expectations,
    results: f.results,
    cacheDir: f.cacheDir,
    ...outputsOf(f),
  });
  if (f.failOnProblems) checkOutcome(report);
}

/** The report outputs both `test` and `report merge` write. */
interface ReportFlags {
  json?: string;
  junit?: string;
  html?: string;
  markdown?: string;
  quiet?: boolean;
  failOnProblems: boolean;
}

interface TestFlags extends ReportFlags {
  python?: string;
  manifest?: string;
  ops?: string[];
  core?: boolean;
  dtypes?: string;
  shard?: string;
  workers?: number;
  workerMemory?: string;
  timeout: number;
  seed: number;
  maxSamples: number;
  resume?: boolean;
  results?: string;
  expectations?: string;
  faults?: string;
  cacheDir?: string;
  sanitize?: string | true;
  model?: string[];
  compile?: boolean;
  upstream?: string[] | true;
  upstreamDir?: string;
  strict?: boolean;
  updateExpectations?: boolean;
  distributed?: number;
}

/** The memory this process may use: the machine's, or less under a cgroup (container) limit. */
function machineMemory(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 ? Math.min(totalmem(), limit) : totalmem();
}

export function registerConformanceCommands(program: Command): void {
  registerTestCommand(program);
  registerBenchCommand(program);
  registerReportCommands(program);
}

/** `[project-dir]`, `--python`, `--manifest`: the project whose device `test` and `bench` run. */
function projectArguments(cmd: Command): Command {
  return cmd
    .argument("[project-dir]", "the backend project (its csrc/generated/op_manifest.json is read)", ".")
    .option("--python <path>", "the Python the device package is installed in (else $OPGEN_PYTHON, else python3)")
    .option("--manifest <file>", "op manifest to read instead of <project>/csrc/generated/op_manifest.json");
}

/** What projectArguments read, as every runner takes it. */
function projectOf(dir: string, f: { python?: string; manifest?: string }) {
  return { projectDir: dir, python: f.python, manifest: f.manifest };
}

/** The report files a run writes, and whether it prints progress (ReportFlags, as the runners take them). */
function outputsOf(f: ReportFlags) {
  return { json: f.json, junit: f.junit, html: f.html, markdown: f.markdown, quiet: Boolean(f.quiet) };
}

/** Writes a finished report's files, prints its summary and fails on its problems, as ReportFlags say. */
function publish(report: Report, f: ReportFlags): void {
  writeOutputs(report, f);
  if (!f.quiet) process.stdout.write(toTerminal(report, style(process.stdout)));
  if (f.failOnProblems) checkOutcome(report);
}

/** Whether the command line gave --timeout (each kind of run has its own default otherwise). */
function timeoutGiven(cmd: Command): boolean {
  return cmd.getOptionValueSource("timeout") !== "default";
}

function registerTestCommand(program: Command): void {
  const cmd = program
    .command("test")
    .description("run the conformance suite: every registered overload vs eager CPU PyTorch, per dtype and check");
  projectArguments(cmd);
  testSelectionOptions(cmd);
  testRunOptions(cmd);
  testOutputOptions(cmd);
  cmd.action(async (dir: string, f: TestFlags, c: Command) => {
    if (f.upstream !== undefined || f.upstreamDir !== undefined) await upstreamAction(dir, f, timeoutGiven(c));
    else if (f.distributed !== undefined) await distributedAction(dir, f, f.distributed, timeoutGiven(c));
    else await operatorsAction(dir, f, timeoutGiven(c));
  });
}

/** What `test` runs: the operators (--ops, --core, --dtypes, --shard), a model, upstream tests or c10d. */
function testSelectionOptions(cmd: Command): void {
  cmd
    .option(
      "--ops <globs>",
      "only overloads matching these globs (comma-separated, repeatable), e.g. 'add*,mul.Tensor'",
      collect,
    )
    .option("--core", "only the core-ATen overloads")
    .option(
      "--model <file[:names]>",
      "run a model file's cases instead of the operators: on the device and eager CPU from the same weights, judged against float64 ('zoo': the shipped transformers zoo; names: comma-separated globs; repeatable)",
      collect,
    )
    .option(
      "--upstream [files]",
      "run PyTorch's own device-generic test files on the device instead of the operators, at the commit torch was built from (FILE[::Class] comma-separated, repeatable; default: the view, indexing, shape, ufunc, reduction, sort, type-promotion tests, test_ops' TestCommon and test_nn's TestNNDeviceType)",
      (v: string, prev: string[] | true | undefined) => [...(Array.isArray(prev) ? prev : []), v],
    )
    .option(
      "--upstream-dir <dir>",
      "with --upstream: take the files from this PyTorch checkout instead of fetching them",
    )
    .option("--strict", "with --upstream: a test that ran any operator through the CPU fallback fails")
    .option(
      "--update-expectations",
      "with --upstream: add an expectations entry for each test that fails today (its first error line as the reason); entries already there stay",
    )
    .option(
      "--distributed <n>",
      "check the project's c10d backend (<device>ccl) instead of the operators: every collective at world size n (processes on this machine, Gloo over 127.0.0.1) against Gloo on CPU tensors",
      int("--distributed", 1),
    )
    .option("--dtypes <list>", "only these dtypes, e.g. float32,int64")
    .option(
      "--compile",
      "compiled mode: each sample's device call (with --model: the model's forward and backward) through torch.compile(backend=\"inductor\") against the same eager CPU judges; Inductor failing to compile is its own status, compile-failed, and graph breaks warn; --timeout defaults to 300 s here",
    )
    .option("--shard <i/n>", "run the i-th of n deterministic shards (merge them with `report merge`)");
}

/** How `test` runs: workers and their limits, samples, resuming, expectations, faults, sanitizers. */
function testRunOptions(cmd: Command): void {
  cmd
    .option("-j, --workers <n>", "worker processes", int("--workers", 1))
    .option(
      "--worker-memory <size>",
      "memory each worker may allocate, e.g. 4G; a kernel that allocates more fails its sample with out-of-memory instead of exhausting the machine ('off': no limit; default: 3/4 of RAM shared among the workers)",
    )
    .option(
      "--timeout <s>",
      "seconds one sample (with --upstream: one test, default 300) may take before it counts as a hang",
      int("--timeout", 1),
      RUN_CONFIG_DEFAULTS.timeout_s,
    )
    .option("--seed <n>", "seed for sample generation", int("--seed", 0), RUN_CONFIG_DEFAULTS.seed)
    .option("--max-samples <n>", "samples per op and dtype", int("--max-samples", 1), RUN_CONFIG_DEFAULTS.max_samples)
    .option("--resume", "continue the interrupted run recorded in the results file")
    .option("--results <file>", "results JSONL (default <project>/.opgen/conformance/results[.shard-i-of-n].jsonl)")
    .option(
      "--expectations <file>",
      "known failures and tolerances (default <project>/conformance-expectations.yaml if present)",
    )
    .option("--faults <file>", "dry run: test CPU with faults injected from this Python file instead of the device")
    .option("--cache-dir <dir>", "where the OpInfo index is cached (default <project>/.opgen/cache)")
    .option(
      "--sanitize [list]",
      "run the workers on the project's `build --sanitize` build (default address,undefined): a sanitizer finding is a crash of its sample, with the report's first frames",
    );
}

/** The reports `test` writes (ReportFlags). */
function testOutputOptions(cmd: Command): void {
  cmd
    .option("--json <file>", "write the JSON report")
    .option("--junit <file>", "write JUnit XML (one testcase per op × dtype × check)")
    .option("--html <file>", "write the self-contained HTML report")
    .option("--markdown <file>", "write the Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)")
    .option("-q, --quiet", "no progress and no terminal summary")
    .option("--no-fail-on-problems", "exit 0 even when checks fail");
}

/** `test --distributed n`: the c10d backend's collectives at world size n (src/conformance/distributed.ts). */
async function distributedAction(dir: string, f: TestFlags, world: number, timeoutGiven: boolean): Promise<void> {
  const report = await runDistributed({
    ...projectOf(dir, f),
    world,
    // the whole run (rank start-up included), unless --timeout says otherwise
    timeoutS: timeoutGiven ? f.timeout : 300,
  });
  publish(report, f);
}

/** `test` on the operators (or a model's cases): the worker pool, then the custom operators. */
async function operatorsAction(dir: string, f: TestFlags, timeoutGiven: boolean): Promise<void> {
  for (const [flag, on] of [
    ["--strict", f.strict],
    ["--update-expectations", f.updateExpectations],
  ] as const) {
    if (on) throw new UserError(`${flag} applies to --upstream runs`);
  }
  const workers = f.workers ?? Math.max(1, Math.min(4, availableParallelism()));
  const { report, sanitized } = await runTest({
    ...projectOf(dir, f),
    selection: selectionOf(f),
    workers,
    workerMemoryBytes:
      f.workerMemory !== undefined ? parseMemorySize(f.workerMemory) : defaultWorkerMemory(machineMemory(), workers),
    // Note [Compiled mode]: a sample's first call compiles (Dynamo, Inductor, the C++ compiler)
    timeoutS: f.compile && !timeoutGiven ? COMPILE_TIMEOUT_S : f.timeout,
    seed: f.seed,
    maxSamples: f.maxSamples,
    resume: Boolean(f.resume),
    results: f.results,
    expectations: f.expectations,
    faults: f.faults,
    cacheDir: f.cacheDir,
    ...(f.sanitize !== undefined
      ? { sanitize: parseSanitizers(f.sanitize === true ? "address,undefined" : f.sanitize) }
      : {}),
    ...outputsOf(f),
    ...(f.model ? { models: f.model } : {}),
    ...(f.compile ? { compile: true } : {}),
  });
  // Custom operators against their references: once per run, not per shard.
  let customFailed = 0;
  if (!f.faults && !f.model && !f.compile && (!f.shard || f.shard.startsWith("1/")) && hasCustomOps(dir)) {
    customFailed = await runCustomOps({
      ...projectOf(dir, f),
      quiet: f.quiet,
      ...(sanitized ? { sanitized } : {}),
    });
  }
  if (f.failOnProblems) checkOutcome(report);
  if (f.failOnProblems && customFailed > 0) {
    throw new UserError(`conformance: ${customFailed} custom operator check(s) failed`);
  }
}

function registerReportCommands(program: Command): void {
  const report = program.command("report").description("work with conformance and bench reports");
  registerMergeCommand(report);
  registerDiffCommand(report);
}

function registerMergeCommand(report: Command): void {
  report
    .command("merge")
    .description("combine the JSON reports of `test --shard i/n` runs into one report")
    .argument("<reports...>", "JSON reports written by `test --json`")
    .option("--json <file>", "write the merged JSON report")
    .option("--junit <file>", "write JUnit XML")
    .option("--html <file>", "write the HTML report")
    .option("--markdown <file>", "write the Markdown summary")
    .option("-q, --quiet", "no terminal summary")
    .option("--no-fail-on-problems", "exit 0 even when the merged report has failures")
    .action(mergeAction);
}

function mergeAction(files: string[], f: ReportFlags): void {
  const reports = files.map((file) => {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new UserError(`cannot read report ${file}: ${(e as Error).message}`);
    }
    return { file, report: parseReport(text, file) };
  });
  const merged = mergeReports(reports);
  const missing = missingShards(merged.meta.shards);
  if (missing.length > 0) {
    process.stderr.write(
      `opgen-backend: warning: shard${missing.length > 1 ? "s" : ""} ${missing.join(", ")} not merged; the report covers part of the run\n`,
    );
  }
  publish(merged, f);
}

const DIFF_HELP = `
A result (op x dtype x check) regressed when it is a problem (fail, crash,
timeout, xpass) in <new> and was not one in <old>, or is a worse one
(fail -> crash). Results only in <new> are "new", only in <old> "gone".

Two \`bench --json\` reports: a row (op x dtype x size) regressed when its
device/eager ratio grew by more than its noise allows: exp(3 x the two
runs' relative spreads (IQR/median) added in quadrature), or it was timed in
<old> and not in <new>.

Exit status:
  0  nothing regressed and no new result is a problem
  1  something regressed, or a new result is a problem (gate CI on this)
  2  bad input: a file is missing, not JSON, or not a conformance report`;

interface DiffFlags {
  json?: boolean;
  markdown?: string;
}

function registerDiffCommand(report: Command): void {
  report
    .command("diff")
    .description(
      "what regressed, got fixed, is new or gone between two JSON reports (e.g. main's and this branch's); conformance or bench reports",
    )
    .argument("<old>", "the baseline JSON report (e.g. the main branch's last run)")
    .argument("<new>", "the JSON report to judge")
    .option("--json", "print the diff as JSON instead of the table")
    .option("--markdown <file>", "also write a short Markdown summary (for a pull-request comment or job summary)")
    .addHelpText("after", DIFF_HELP)
    .action(async (oldFile: string, newFile: string, f: DiffFlags) => {
      if (isBenchFile(oldFile) || isBenchFile(newFile)) await benchDiffAction(oldFile, newFile, f);
      else diffAction(oldFile, newFile, f);
    });
}

/** `report diff` of two conformance reports; a file it cannot read is a DiffInputError (exit 2). */
function diffAction(oldFile: string, newFile: string, f: DiffFlags): void {
  const d = diffReports(readReportForDiff(oldFile), readReportForDiff(newFile));
  if (f.markdown) {
    writeText(f.markdown, diffToMarkdown(d));
  }
  process.stdout.write(f.json ? diffToJson(d) : diffToTerminal(d, style(process.stdout)));
  if (d.gate) {
    const newProblems = d.added.filter((e) => e.new !== undefined && isProblem(e.new));
    throw new UserError(
      `report diff: ${d.regressed.length} regressed, ${newProblems.length} new problem${newProblems.length === 1 ? "" : "s"}`,
    );
  }
}

/** Whether a file given to `report diff` is a bench report (bad files are the conformance reader's to explain). */
function isBenchFile(file: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { kind?: unknown }).kind === "bench";
  } catch {
    return false;
  }
}

async function benchDiffAction(oldFile: string, newFile: string, f: DiffFlags): Promise<void> {
  const { benchDiffToMarkdown, benchDiffToTerminal, diffBench, isBenchReport } = await import(
    "../conformance/bench-report.js"
  );
  const read = (file: string) => {
    let r: unknown;
    try {
      r = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new DiffInputError(`report diff: ${file}: cannot read it as JSON (${(e as Error).message})`);
    }
    if (!isBenchReport(r) || !Array.isArray(r.rows)) {
      throw new DiffInputError(
        `report diff: ${file}: not a bench report; compare two \`bench --json\` reports (or two \`test --json\` ones)`,
      );
    }
    return { file, report: r };
  };
  const d = diffBench(read(oldFile), read(newFile));
  if (f.markdown) writeText(f.markdown, benchDiffToMarkdown(d));
  process.stdout.write(f.json ? `${JSON.stringify(d, null, 2)}\n` : benchDiffToTerminal(d));
  if (d.gate) throw new UserError(`report diff: ${d.regressed.length} bench row(s) slower beyond their noise`);
}

interface BenchFlags {
  python?: string;
  manifest?: string;
  ops?: string[];
  core?: boolean;
  dtypes?: string;
  workers?: number;
  threads: number;
  runs: number;
  budget: number;
  clock: string;
  repeatOp: string;
  accuracy: boolean;
  timeout: number;
  seed: number;
  results?: string;
  cacheDir?: string;
  conformance?: string;
  json?: string;
  markdown?: string;
  html?: string;
  quiet?: boolean;
}

function registerBenchCommand(program: Command): void {
  const cmd = program
    .command("bench")
    .description(
      "time every listed operator on the device and on eager (CUDA where torch has a GPU, else CPU) in one process per worker, at the same thread count",
    );
  projectArguments(cmd)
    .option("--ops <globs>", "only overloads matching these globs (comma-separated, repeatable)", collect)
    .option("--core", "only the core-ATen overloads")
    .option(
      "--dtypes <list>",
      "dtypes to time (default: float32, or int64, else bool, for an op eager runs in no float32 input)",
    )
    .option(
      "-j, --workers <n>",
      "worker processes (default 1: parallel workers share the machine's cores)",
      int("--workers", 1),
    )
    .option("--threads <n>", "torch threads in each worker, for the device and eager alike", int("--threads", 1), 1)
    .option("--runs <n>", "timed samples per row at most (the median is reported)", int("--runs", 5), 15)
    .option("--budget <s>", "seconds of timed samples per row after the first five", Number, 1)
    .option(
      "--clock <wall|cpu>",
      "wall time, or the worker thread's CPU time (for a device that computes on the calling thread, on a shared machine)",
      "wall",
    )
    .option(
      "--repeat-op <[glob=]n>",
      "debug: every timed device call of the ops matching glob (default: all) runs the operator n times, a real slowdown of that kernel (to check `report diff`)",
      "1",
    )
    .option("--no-accuracy", "skip the accuracy column (the device's and eager's error against float64 CPU)")
    .option("--timeout <s>", "seconds one operator (all its sizes) may take", int("--timeout", 1), 600)
    .option("--seed <n>", "seed for the inputs", int("--seed", 0), 0)
    .option("--conformance <file>", "a `test --json` report: fast_p counts only the operators that pass it")
    .option("--results <file>", "rows JSONL (default <project>/.opgen/bench/results.jsonl)")
    .option("--cache-dir <dir>", "where the OpInfo index is cached (default <project>/.opgen/cache)")
    .option("--json <file>", "write the JSON report (what `report diff` compares)")
    .option("--markdown <file>", "write the Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)")
    .option("--html <file>", "write the self-contained HTML report with the ratio plot")
    .option("-q, --quiet", "no progress and no terminal summary")
    .action(async (dir: string, f: BenchFlags) => {
      if (!(f.budget > 0)) throw new UserError(`--budget ${f.budget}: expected a positive number of seconds`);
      if (f.clock !== "wall" && f.clock !== "cpu") throw new UserError(`--clock ${f.clock}: expected wall or cpu`);
      const { parseRepeatOp, runBench } = await import("../conformance/bench.js");
      await runBench({
        ...projectOf(dir, f),
        selection: selectionOf(f),
        workers: f.workers ?? 1,
        threads: f.threads,
        runs: f.runs,
        budgetS: f.budget,
        clock: f.clock,
        repeatOp: parseRepeatOp(f.repeatOp),
        accuracy: f.accuracy,
        timeoutS: f.timeout,
        seed: f.seed,
        results: f.results,
        cacheDir: f.cacheDir,
        conformance: f.conformance,
        json: f.json,
        markdown: f.markdown,
        html: f.html,
        quiet: Boolean(f.quiet),
      });
    });
}
