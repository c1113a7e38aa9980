/**
 * `opgen-backend test --upstream [FILE,...]`: PyTorch's own device-generic
 * test files, for the exact torch the project builds against, run on the
 * device (issue 24). This side finds the files (fetched per commit into the
 * user's cache, or a PyTorch checkout's with --upstream-dir), with the
 * sibling files of test/ they import, writes the run config, starts the
 * Python runner (python/opgen_conformance/upstream.py, Note [Upstream runs])
 * with a progress view, and turns its records into the reports
 * (upstream-report.ts) and, with --update-expectations, into entries of the
 * expectations file.
 *
 * Note [Upstream files]: the files are PyTorch's at torch.version.git_version
 * (read from the installed torch's version.py), as raw files under
 * `<base>/<commit>/test/<file>`; the base is GitHub's raw host unless
 * $OPGEN_UPSTREAM_URL names another (a mirror, or a local server in tests).
 * A commit's files never change, so the cache
 * (`<cache>/upstream/<commit>/test/`) is never revalidated, and what the
 * server did not have is kept too (`absent.json`), so a second run makes no
 * request. The helpers in torch.testing._internal ship in the wheel; what a
 * file imports besides is looked up as `test/<module>.py` and fetched, and
 * what is not there is said in the file's part of the report.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { discoverTorch } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { defaultCacheDir, type Http, httpGet } from "../util/http.js";
import { style } from "../util/term.js";
import { acquireLock, writeFiles, writeText } from "../write/files.js";
import { appendToTopLevelList } from "../yaml/edit.js";
import { makeReport } from "./aggregate.js";
import { type Outputs, writeOutputs } from "./driver.js";
import { applyExpectations, EMPTY_EXPECTATIONS, type ExpectationsFile, loadExpectations } from "./expectations.js";
import { toTerminal } from "./formats.js";
import { pythonEnv, runnerOutput, runRunnerProcess } from "./runner.js";
import { readManifest, type Shard } from "./select.js";
import type { Report, Result } from "./types.js";
import {
  isUpstream,
  UPSTREAM_PREFIX,
  type UpstreamRecord,
  upstreamResults,
  upstreamSection,
} from "./upstream-report.js";

/** Seconds one upstream test may take when --timeout is not given (a test runs many ops; a sample runs one). */
export const UPSTREAM_TIMEOUT_S = 300;

export const DEFAULT_UPSTREAM_URL = "https://raw.githubusercontent.com/pytorch/pytorch";

/**
 * The default set (issue 24): the view, indexing, shape, unary and binary
 * ufunc, reduction, sort/select and type-promotion tests, test_ops'
 * TestCommon and test_nn's device-generic classes.
 */
export const DEFAULT_UPSTREAM_FILES: readonly string[] = [
  "test_view_ops.py",
  "test_indexing.py",
  "test_shape_ops.py",
  "test_unary_ufuncs.py",
  "test_binary_ufuncs.py",
  "test_reductions.py",
  "test_sort_and_select.py",
  "test_type_promotion.py",
  "test_ops.py::TestCommon",
  "test_nn.py::TestNNDeviceType",
];

export interface UpstreamSpec {
  /** path under test/ */
  readonly file: string;
  /** generic test classes to run (all when empty) */
  readonly classes: readonly string[];
}

const FILE_RE = /^(?:[A-Za-z0-9_][A-Za-z0-9_.-]*\/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\.py$/;
const CLASS_RE = /^[A-Za-z_]\w*$/;

/** `FILE[::CLASS[+CLASS]]` items, comma-separated (repeatable); none: the default set. */
export function parseUpstreamSpecs(values: readonly string[]): UpstreamSpec[] {
  const items = values
    .flatMap((v) => v.split(","))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const out = new Map<string, string[]>();
  const bad: string[] = [];
  for (const item of items.length ? items : DEFAULT_UPSTREAM_FILES) {
    const [file, cls, ...rest] = item.split("::");
    const classes = cls ? cls.split("+") : [];
    if (
      !file ||
      !FILE_RE.test(file) ||
      file.split("/").includes("..") ||
      rest.length ||
      !classes.every((c) => CLASS_RE.test(c))
    ) {
      bad.push(item);
      continue;
    }
    const prev = out.get(file);
    // A file named whole and by class runs whole.
    out.set(
      file,
      prev === undefined ? classes : prev.length && classes.length ? [...new Set([...prev, ...classes])] : [],
    );
  }
  if (bad.length) {
    throw new UserError(
      `--upstream ${bad.join(", ")}: not a test file; allowed: a path under PyTorch's test/ ending in .py, optionally ::Class (a generic test class, e.g. test_ops.py::TestCommon; several joined by +)`,
    );
  }
  return [...out].map(([file, classes]) => ({ file, classes }));
}

export interface UpstreamOptions extends Outputs {
  readonly projectDir: string;
  readonly python?: string;
  readonly manifest?: string;
  /** --upstream values (empty: the default set) */
  readonly files: readonly string[];
  /** --upstream-dir: a PyTorch checkout */
  readonly dir?: string;
  readonly strict: boolean;
  readonly updateExpectations: boolean;
  readonly shard?: Shard;
  readonly timeoutS: number;
  readonly expectations?: string;
  readonly results?: string;
  readonly cacheDir?: string;
  readonly quiet?: boolean;
}

/** torch.version.git_version of the installed torch, read from its version.py (no torch import). */
export async function torchCommit(python?: string): Promise<string> {
  const t = await discoverTorch(python);
  const file = path.join(t.torchDir, "version.py");
  const m = /^git_version\s*=\s*['"]([0-9a-f]{7,40})['"]/m.exec(existsSync(file) ? readFileSync(file, "utf8") : "");
  if (!m)
    throw new UserError(`${file}: no git_version; this torch does not say which PyTorch commit it was built from`);
  return m[1]!;
}

interface Located {
  /** the test/ directory the files are in */
  readonly testDir: string;
  readonly commit: string;
  readonly source: string;
  /** per file, the modules it imports that nothing provides */
  readonly missing: Readonly<Record<string, readonly string[]>>;
}

function warn(msg: string): void {
  process.stderr.write(`opgen-backend: warning: ${msg}\n`);
}

/** The modules each file imports that neither the Python nor testDir has (python upstream-deps). */
async function missingImports(
  python: string,
  testDir: string,
  files: readonly string[],
): Promise<Record<string, string[]>> {
  if (files.length === 0) return {};
  const abs = files.map((f) => path.join(testDir, f));
  const text = await runnerOutput(
    python,
    ["upstream-deps", "--test-dir", testDir, ...abs],
    "cannot read the imports of the upstream test files",
  );
  const raw = JSON.parse(text) as Record<string, string[]>;
  const out: Record<string, string[]> = {};
  for (const f of files) out[f] = raw[path.join(testDir, f)] ?? [];
  return out;
}

/** test/<module>.py: where a sibling import lives (`from common_foo import x`, `import nn.helpers`). */
function moduleFile(module: string): string {
  return `${module.replace(/\./g, "/")}.py`;
}

/** Files from a PyTorch checkout (--upstream-dir); its HEAD should be torch's commit. */
async function fromCheckout(
  python: string,
  dir: string,
  want: string,
  specs: readonly UpstreamSpec[],
): Promise<Located> {
  const testDir = path.resolve(dir, "test");
  if (!existsSync(testDir)) throw new UserError(`--upstream-dir ${dir}: no test/ directory; pass a PyTorch checkout`);
  const absent = specs.filter((s) => !existsSync(path.join(testDir, s.file))).map((s) => s.file);
  if (absent.length) throw new UserError(`--upstream-dir ${dir}: no ${absent.map((f) => `test/${f}`).join(", ")}`);
  const r = await execa("git", ["-C", dir, "rev-parse", "HEAD"], { reject: false });
  const head = r.exitCode === 0 ? String(r.stdout).trim() : "";
  if (!head) warn(`--upstream-dir ${dir}: not a git checkout, so its commit is unknown; torch was built from ${want}`);
  else if (head !== want) {
    warn(
      `--upstream-dir ${dir} is at ${head.slice(0, 12)}, torch was built from ${want.slice(0, 12)}: its tests may expect another torch (check out ${want.slice(0, 12)})`,
    );
  }
  const missing = await missingImports(
    python,
    testDir,
    specs.map((s) => s.file),
  );
  return { testDir, commit: head || want, source: "checkout", missing };
}

/** Files fetched per commit into the cache (Note [Upstream files]). */
async function fetched(python: string, commit: string, specs: readonly UpstreamSpec[]): Promise<Located> {
  const base = (process.env.OPGEN_UPSTREAM_URL || DEFAULT_UPSTREAM_URL).replace(/\/+$/, "");
  const cache = defaultCacheDir();
  const rel = `upstream/${commit}`;
  const root = path.join(cache, rel);
  const testDir = path.join(root, "test");
  const absentFile = path.join(root, "absent.json");
  const absent = new Set<string>(
    existsSync(absentFile) ? (JSON.parse(readFileSync(absentFile, "utf8")) as string[]) : [],
  );
  const http: Http = {
    base,
    timeoutMs: 60_000,
    offlineHint: `test --upstream fetches PyTorch's test files once per commit (they are cached in ${root} afterwards); set $OPGEN_UPSTREAM_URL to a mirror, or pass a PyTorch checkout with --upstream-dir`,
    bytes: 0,
    requests: 0,
  };
  const fresh: { path: string; content: string }[] = [];
  const get = async (file: string): Promise<boolean> => {
    if (existsSync(path.join(testDir, file))) return true;
    if (absent.has(file)) return false;
    const url = `${base}/${commit}/test/${file}`;
    const r = await httpGet(http, url);
    if (r.status === 404) {
      await r.body?.cancel();
      absent.add(file);
      return false;
    }
    if (!r.ok) {
      await r.body?.cancel();
      throw new UserError(`${url} answered ${r.status}`);
    }
    const content = await r.text();
    http.bytes += content.length;
    fresh.push({ path: `${rel}/test/${file}`, content });
    // written at once: the import scan reads it
    writeFiles(cache, [{ path: `${rel}/test/${file}`, content }]);
    return true;
  };
  const notThere = (await Promise.all(specs.map(async (s) => ((await get(s.file)) ? null : s.file)))).filter(
    (f): f is string => f !== null,
  );
  if (notThere.length) {
    writeFiles(cache, [{ path: `${rel}/absent.json`, content: `${JSON.stringify([...absent].sort(), null, 2)}\n` }]);
    throw new UserError(
      `--upstream: PyTorch ${commit.slice(0, 12)} has no ${notThere.map((f) => `test/${f}`).join(", ")} (${base})`,
    );
  }
  // Sibling imports, transitively: scan, fetch what exists, scan the fetched.
  const missing: Record<string, string[]> = {};
  let scan = specs.map((s) => s.file);
  const scanned = new Set<string>();
  const owners = new Map<string, string>(specs.map((s) => [s.file, s.file]));
  while (scan.length) {
    for (const f of scan) scanned.add(f);
    const gone = await missingImports(python, testDir, scan);
    const next: string[] = [];
    for (const [file, modules] of Object.entries(gone)) {
      const owner = owners.get(file) ?? file;
      for (const m of modules) {
        const f = moduleFile(m);
        if (await get(f)) {
          if (!scanned.has(f) && !next.includes(f)) {
            next.push(f);
            owners.set(f, owner);
          }
        } else {
          missing[owner] = [...new Set([...(missing[owner] ?? []), m])].sort();
        }
      }
    }
    scan = next;
  }
  if (absent.size) {
    writeFiles(cache, [{ path: `${rel}/absent.json`, content: `${JSON.stringify([...absent].sort(), null, 2)}\n` }]);
  }
  progressLine(
    http.requests
      ? `upstream: fetched ${fresh.length} file${fresh.length === 1 ? "" : "s"} (${http.bytes} bytes, ${http.requests} requests) of PyTorch ${commit.slice(0, 12)} from ${base} into ${root}`
      : `upstream: PyTorch ${commit.slice(0, 12)}'s files from the cache ${root}`,
  );
  return { testDir, commit, source: base, missing };
}

function progressLine(s: string): void {
  process.stderr.write(`${s}\n`);
}

type Event =
  | { readonly event: "upstream_start"; readonly files: number; readonly device: string }
  | { readonly event: "upstream_file"; readonly file: string; readonly tests: number }
  | { readonly event: "upstream_test"; readonly file: string; readonly id: string; readonly status: string }
  | {
      readonly event: "incident";
      readonly kind: "crash" | "timeout";
      readonly file: string;
      readonly id: string;
      readonly message: string;
    }
  | { readonly event: "upstream_done"; readonly file: string; readonly counts: Readonly<Record<string, number>> }
  | { readonly event: "finished"; readonly elapsed_s: number };

/** As the op runner's view (driver.ts): one redrawn line on a TTY; in CI or a pipe, a line per file and per incident. */
class UpstreamProgress {
  private readonly tty = Boolean(process.stderr.isTTY) && !process.env.CI;
  private readonly st = style(process.stderr);
  private files = 0;
  private fileNo = 0;
  private tests = 0;
  private done = 0;
  private failed = 0;
  private lastDecile = -1;
  constructor(private readonly quiet: boolean) {}

  on(e: Event): void {
    if (this.quiet) return;
    switch (e.event) {
      case "upstream_start":
        this.files = e.files;
        this.line(`upstream: ${e.files} test file${e.files === 1 ? "" : "s"} on ${e.device}`);
        break;
      case "upstream_file":
        this.fileNo++;
        this.tests = e.tests;
        this.done = 0;
        this.failed = 0;
        this.lastDecile = -1;
        this.line(`upstream: [${this.fileNo}/${this.files}] ${e.file}: ${e.tests} tests`);
        break;
      case "upstream_test": {
        this.done++;
        if (e.status === "fail") this.failed++;
        const pct = this.tests ? Math.floor((100 * this.done) / this.tests) : 100;
        const bad = this.failed ? this.st.red(` ${this.failed} failed`) : "";
        if (this.tty) {
          process.stderr.write(
            `\r\u001b[2K[${this.fileNo}/${this.files}] ${e.file} ${this.done}/${this.tests}${bad} ${this.st.dim(e.id.split("::").pop() ?? "")}`,
          );
        } else if (Math.floor(pct / 10) !== this.lastDecile) {
          this.lastDecile = Math.floor(pct / 10);
          this.line(`upstream: ${e.file} ${pct}% (${this.done}/${this.tests})${bad}`);
        }
        break;
      }
      case "incident":
        this.done++;
        this.line(`${this.st.red(e.kind.toUpperCase())} ${e.id}: ${e.message}`);
        break;
      case "upstream_done": {
        const parts = Object.entries(e.counts)
          .sort()
          .map(([k, v]) => `${v} ${k}`);
        this.line(`upstream: ${e.file} done: ${parts.join(", ") || "no tests"}`);
        break;
      }
      case "finished":
        this.line(`upstream: ran in ${e.elapsed_s.toFixed(1)} s`);
        break;
      default:
        break;
    }
  }

  private line(s: string): void {
    if (this.tty) process.stderr.write("\r\u001b[2K");
    process.stderr.write(`${s}\n`);
  }
}

async function runRunner(python: string, configFile: string, quiet: boolean): Promise<void> {
  const view = new UpstreamProgress(quiet);
  await runRunnerProcess(python, ["upstream", "--config", configFile], "the upstream test runner", (e) =>
    view.on(e as Event),
  );
}

function readRecords(file: string): UpstreamRecord[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as UpstreamRecord);
}

const FAILING = new Set(["fail", "crash", "timeout"]);

/** YAML's double-quoted scalar is a superset of a JSON string. */
const q = (s: string) => JSON.stringify(s);

/**
 * The entries --update-expectations adds: one per failing test no entry
 * covers yet, its reason the status and the first line of its error.
 */
export function newExpectations(results: readonly Result[]): string[] {
  return results
    .filter((r) => isUpstream(r.op) && FAILING.has(r.status))
    .map((r) => {
      const first = r.message.split("\n")[0]!.trim().slice(0, 300);
      return `{test: ${q(r.op.slice(UPSTREAM_PREFIX.length))}, reason: ${q(`${r.status}: ${first}`)}}`;
    });
}

export interface UpstreamOutcome {
  readonly report: Report;
  /** entries --update-expectations added (0 without it) */
  readonly added: number;
}

export async function runUpstream(opts: UpstreamOptions): Promise<UpstreamOutcome> {
  const project = path.resolve(opts.projectDir);
  const manifestFile = path.resolve(opts.manifest ?? path.join(project, "csrc", "generated", "op_manifest.json"));
  const manifest = readManifest(manifestFile);
  const python = (await discoverTorch(opts.python)).python;
  const expFile = path.resolve(opts.expectations ?? path.join(project, "conformance-expectations.yaml"));
  const exp: ExpectationsFile =
    existsSync(expFile) || opts.expectations ? loadExpectations(expFile) : EMPTY_EXPECTATIONS;
  const specs = parseUpstreamSpecs(opts.files);
  const want = await torchCommit(python);
  const where = opts.dir ? await fromCheckout(python, opts.dir, want, specs) : await fetched(python, want, specs);
  for (const [file, mods] of Object.entries(where.missing)) {
    if (mods.length) warn(`${file} imports ${mods.join(", ")}: not installed, and not a file of PyTorch's test/`);
  }

  const suffix = opts.shard ? `.shard-${opts.shard.index}-of-${opts.shard.count}` : "";
  const resultsFile = path.resolve(
    opts.results ?? path.join(project, ".opgen", "conformance", `upstream${suffix}.jsonl`),
  );
  const lock = acquireLock(resultsFile, "`opgen-backend test --upstream`", "wait for it to finish, or pass --results");
  let records: UpstreamRecord[];
  const configFile = `${resultsFile}.config.json`;
  try {
    const config = {
      device: manifest.device,
      package: manifest.python_package,
      test_dir: where.testDir,
      timeout_s: opts.timeoutS,
      shard: opts.shard ? [opts.shard.index, opts.shard.count] : null,
      results: resultsFile,
      cache_dir: opts.cacheDir ?? path.join(project, ".opgen", "cache"),
      files: specs.map((s) => ({ name: s.file, path: path.join(where.testDir, s.file), classes: s.classes })),
    };
    writeText(configFile, `${JSON.stringify(config, null, 2)}\n`);
    await runRunner(python, configFile, Boolean(opts.quiet));
    records = readRecords(resultsFile);
  } finally {
    lock.release();
  }

  const raw = upstreamResults(records, opts.strict);
  let added = 0;
  let entries = exp.expectations;
  if (opts.updateExpectations) {
    const before = applyExpectations(raw, entries);
    const lines = newExpectations(before);
    if (lines.length) {
      const text = existsSync(expFile) ? readFileSync(expFile, "utf8") : "";
      const edit = appendToTopLevelList(
        text,
        "expectations",
        lines,
        `added by opgen-backend test --upstream --update-expectations: what fails at PyTorch ${where.commit.slice(0, 12)}; give each a reason (unsupported: ..., eager-cpu: ...)`,
      );
      writeText(expFile, edit.text);
      entries = loadExpectations(expFile).expectations;
      added = lines.length;
      progressLine(`upstream: added ${added} entr${added === 1 ? "y" : "ies"} to ${expFile} (line ${edit.line})`);
    }
  }
  const results = applyExpectations(raw, entries);
  const classes = Object.fromEntries(specs.map((s) => [s.file, s.classes]));
  const section = upstreamSection(
    records,
    results,
    { commit: where.commit, source: where.source, strict: opts.strict, classes },
    where.missing,
  );
  const report = makeReport(
    {
      device: manifest.device,
      seed: 0,
      max_samples: 0,
      torch_version: manifest.torch_version ?? "",
      shards: opts.shard ? [`${opts.shard.index}/${opts.shard.count}`] : [],
    },
    [],
    results,
    0,
    undefined,
    undefined,
    section,
  );
  writeOutputs(report, opts);
  if (!opts.quiet) {
    const st = style(process.stdout);
    process.stdout.write(toTerminal(report, st));
    const first = results.find((r) => isUpstream(r.op) && FAILING.has(r.status) && r.op.includes("::"));
    if (first) {
      const id = first.op.slice(UPSTREAM_PREFIX.length);
      process.stdout.write(
        st.dim(
          `rerun one test alone: cd ${where.testDir} && PYTHONPATH='${pythonEnv().PYTHONPATH}' TORCH_DEVICE_BACKEND_AUTOLOAD=0 ` +
            `PYTORCH_TESTING_DEVICE_ONLY_FOR=${manifest.device} OPGEN_UPSTREAM_PACKAGE=${manifest.python_package ?? ""} ` +
            `${python} -m pytest -p opgen_conformance.upstream_plugin --noconftest '${id}'\n`,
        ),
      );
    }
  }
  return { report, added };
}
