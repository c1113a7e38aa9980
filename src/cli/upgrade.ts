/**
 * `opgen-backend upgrade`: wiring only (the comparison is src/upgrade). Exit
 * 0: nothing to do; 1: action needed; 2: bad input (one line, nothing written).
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { Manifest } from "../dest/manifest.js";
import { loadCatalog } from "../model/catalog.js";
import type { OperatorCatalog } from "../model/types.js";
import { discoverTorch } from "../torch/discover.js";
import type { UpgradeReport } from "../upgrade/compare.js";
import type { PythonApiReport, PythonSources } from "../upgrade/python-api.js";
import type { FetchOptions } from "../upgrade/wheel.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { style } from "../util/term.js";
import { staleFiles, type WriteResult, writeFiles } from "../write/files.js";

interface UpgradeOpts {
  apply?: boolean;
  stubs?: string;
  python?: string;
  torchVersion?: string;
  fromPython?: string;
  cacheDir?: string;
  offline?: boolean;
  json?: boolean;
  markdown?: string;
}

class BadInput extends Error {}

function bad(message: string): never {
  throw new BadInput(message);
}

/** The project's torch pin: pyproject.toml's `dependencies = [... "torch==X" ...]`, else the manifest's torch. */
function projectPin(dir: string, manifest: Manifest): string {
  const py = path.join(dir, "pyproject.toml");
  if (existsSync(py)) {
    const m = /^dependencies\s*=\s*\[[^\]]*"torch==([^"]+)"/m.exec(readFileSync(py, "utf8"));
    if (m) return m[1]!;
  }
  return manifest.torch_version;
}

function readManifest(file: string): Manifest {
  if (!existsSync(file))
    bad(`${file}: no op manifest; run \`opgen-backend gen\` with the project's current torch first`);
  try {
    const m = JSON.parse(readFileSync(file, "utf8")) as Manifest;
    if (!Array.isArray(m.operators) || typeof m.torch_version !== "string") throw new Error("not a manifest");
    return m;
  } catch {
    return bad(`${file}: not an op_manifest.json written by \`opgen-backend gen\``);
  }
}

/**
 * The torch the manifest was generated against, for dispatch and core-ATen
 * changes by name: --from-python, else $OPGEN_PYTHON / python3 when it has
 * that torch, else its YAMLs from PyPI (Note [Schemas from a wheel]; with
 * --offline, from the cache only). Null (with a note on stderr) when none of these has it.
 */
interface Torch {
  readonly catalog: OperatorCatalog;
  /** Its Python files (Note [Watched Python APIs]), or why there are none. */
  readonly python: PythonSources | string;
}

const stripBuild = (v: string) => v.replace(/\+.*$/, "");

/** An installed torch's Python files: its package directory's parent holds `torch/...`. */
const installedPython = (version: string, torchDir: string): PythonSources => ({
  version: stripBuild(version),
  root: path.dirname(torchDir),
});

/** A fetched release's Python files (the cache's copy of the wheel's members). */
const fetchedPython = (version: string, root: string | null): PythonSources | string =>
  root
    ? { version, root }
    : `torch ${version}'s Python files are not in the cache, which an older opgen-backend wrote; run once without --offline`;

async function baselineCatalog(manifest: Manifest, opts: UpgradeOpts, fetchOpts: FetchOptions): Promise<Torch | null> {
  const explicit = opts.fromPython;
  try {
    const install = await discoverTorch(explicit);
    if (install.version.replace(/\+.*$/, "") === manifest.torch_version)
      return { catalog: await loadCatalog(install), python: installedPython(install.version, install.torchDir) };
    if (explicit)
      bad(`--from-python has torch ${install.version}; the manifest was generated with ${manifest.torch_version}`);
  } catch (e) {
    if (e instanceof BadInput || explicit) throw e;
  }
  try {
    const { fetchTorchSchemas } = await import("../upgrade/wheel.js");
    const fetched = await fetchTorchSchemas(manifest.torch_version, fetchOpts);
    return {
      catalog: await loadCatalog(fetched),
      python: fetchedPython(manifest.torch_version, fetched.pythonRoot),
    };
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
    process.stderr.write(`opgen-backend: upgrade: note: no baseline torch ${manifest.torch_version} (${e.message})\n`);
    return null;
  }
}

/** The target torch's catalog: another interpreter's (--python), or a release's YAMLs from PyPI (--torch-version). */
async function targetCatalog(
  pin: string,
  opts: UpgradeOpts,
  fetchOpts: FetchOptions,
  checkTargetVersion: (pin: string, target: string) => void,
): Promise<Torch> {
  if (opts.torchVersion !== undefined) {
    if (opts.python) bad("--python and --torch-version both name the target torch; pass one");
    checkTargetVersion(pin, opts.torchVersion);
    const { fetchTorchSchemas } = await import("../upgrade/wheel.js");
    const fetched = await fetchTorchSchemas(opts.torchVersion, fetchOpts);
    return { catalog: await loadCatalog(fetched), python: fetchedPython(opts.torchVersion, fetched.pythonRoot) };
  }
  const install = await discoverTorch(opts.python);
  checkTargetVersion(pin, install.version);
  return { catalog: await loadCatalog(install), python: installedPython(install.version, install.torchDir) };
}

/**
 * The drift of the private Python APIs between the two torches (Note
 * [Python API drift]), each definition's user named by the project's own
 * package directory (init writes `torch_<name>/`) when there is one.
 */
async function pythonApiDrift(
  dir: string,
  from: string,
  baseline: Torch | null,
  target: Torch,
): Promise<PythonApiReport> {
  const { comparePythonApi, pythonApiUnavailable } = await import("../upgrade/python-api.js");
  const to = stripBuild(target.catalog.torchVersion);
  if (typeof target.python === "string") return pythonApiUnavailable(from, to, target.python);
  if (!baseline) return pythonApiUnavailable(from, to, `no baseline torch ${from}`);
  if (typeof baseline.python === "string") return pythonApiUnavailable(from, to, baseline.python);
  const r = comparePythonApi(baseline.python, target.python);
  const packages = readdirSync(dir, { withFileTypes: true }).filter(
    (e) => e.isDirectory() && /^torch_\w+$/.test(e.name) && existsSync(path.join(dir, e.name, "__init__.py")),
  );
  if (packages.length !== 1) return r;
  const pkg = packages[0]!.name;
  return { ...r, entries: r.entries.map((e) => ({ ...e, usedBy: e.usedBy.replace(/^torch_<name>\//, `${pkg}/`) })) };
}

interface Applied {
  readonly pins: { readonly moved: readonly string[]; readonly unchanged: readonly string[] };
  readonly generated: WriteResult;
  readonly stubs: WriteResult;
  /** What the upgrade leaves to a person, one line each. */
  readonly left: readonly string[];
}

/**
 * --apply (Note [Files init owns]): everything is computed first (the pin
 * moves, the stubs, runGen in dry-run mode, which plans and renders every
 * generated file against the target), then written: the pins, the stubs
 * (create-only), then runGen for real.
 * Refuses, writing nothing, while backend.yaml lists overloads the target does
 * not have: backend.yaml is the person's file.
 */
async function applyUpgrade(
  dir: string,
  report: UpgradeReport,
  manifest: Manifest,
  target: OperatorCatalog,
  opts: UpgradeOpts,
): Promise<Applied> {
  const [{ planPins, newKernelStubs }, { runGen }, { where }] = await Promise.all([
    import("../upgrade/apply.js"),
    import("../pipeline/gen.js"),
    import("../upgrade/compare.js"),
  ]);
  const removed = report.overloads.filter((o) => o.changes.some((c) => c.kind === "removed"));
  if (removed.length || report.yamlErrors.length) {
    const what = [
      ...removed.map((o) => `${o.op}${o.loc ? ` (${where(o.loc)})` : ""}`),
      ...report.yamlErrors.map((d) => formatDiagnostic(d)),
    ];
    throw new UserError(
      `cannot apply: backend.yaml does not load against torch ${report.toTorch} (${what.join("; ")}); edit backend.yaml first, then run upgrade --apply again; nothing was written`,
    );
  }
  const to = report.toTorch;
  const from = projectPin(dir, manifest);
  const pins = planPins(dir, manifest, from, to);
  const stubsDir = opts.stubs ?? path.join(dir, "csrc", existsSync(path.join(dir, "csrc", "aten")) ? "aten" : "");
  const req = {
    yamlPath: path.join(dir, "backend.yaml"),
    outDir: path.join(dir, "csrc", "generated"),
    catalog: target,
  };
  // Everything rendered (and every check run) before the first write: gen in dry-run mode.
  const dry = await runGen({ ...req, mode: { dryRun: true } });
  const stubFiles = newKernelStubs(dry.plan, manifest, [path.join(dir, "csrc")]);
  const pinWrite = writeFiles(dir, pins.move);
  const stubs = writeFiles(stubsDir, stubFiles);
  const g = await runGen(req);
  const left: string[] = [];
  for (const k of pins.kept) {
    left.push(
      `${k.path} changed since init: move its torch pin to ${to} yourself (${k.lines.map((l) => `${path.join(dir, k.path)}:${l}`).join(", ")})`,
    );
  }
  for (const f of staleFiles(stubs)) left.push(`${path.join(stubsDir, f)}: implement the kernel the new torch adds`);
  for (const o of report.overloads) {
    for (const c of o.changes) {
      if (c.kind === "signature") {
        for (const b of c.breaks)
          left.push(`${where(b.loc)}: ${o.op}'s kernel no longer matches; new: ${c.newDeclaration}`);
      } else if (c.kind === "dispatch") {
        left.push(`${o.op}${o.loc ? ` (${where(o.loc)})` : ""}: ${c.effect}`);
      }
    }
  }
  for (const e of report.pythonApi?.entries ?? []) {
    if (e.status === "break" || e.status === "missing")
      left.push(
        `${e.usedBy}: torch's ${e.name} (${e.where ?? e.file}) ${e.status === "break" ? "breaks" : "is gone"}: ${e.reasons.join("; ")}`,
      );
  }
  const moved = staleFiles(pinWrite);
  return {
    pins: { moved, unchanged: pins.move.map((f) => f.path).filter((p) => !moved.includes(p)) },
    generated: g.result,
    stubs,
    left,
  };
}

function appliedToTerminal(dir: string, a: Applied): string {
  const rel = (r: WriteResult, p: string) => path.relative(dir, path.join(r.outDir, p)) || ".";
  const lines = ["", "applied:"];
  for (const p of a.pins.moved) lines.push(`  moved the torch pin  ${p}`);
  for (const f of a.generated.files)
    if (f.status !== "unchanged") lines.push(`  ${f.status} (gen)  ${rel(a.generated, f.path)}`);
  for (const f of a.stubs.files)
    if (f.status === "created") lines.push(`  stub for a new kernel  ${rel(a.stubs, f.path)}`);
  if (lines.length === 2) lines.push("  nothing to change");
  if (a.left.length) lines.push("left for you:", ...a.left.map((l) => `  ${l}`));
  return `${lines.join("\n")}\n`;
}

export function registerUpgradeCommand(program: Command): void {
  program
    .command("upgrade")
    .description(
      "report what moving the project to another torch changes for this backend (writes nothing unless --apply)",
    )
    .argument("[dir]", "the project directory (backend.yaml, csrc/generated/op_manifest.json)", ".")
    .option("--python <path>", "the Python with the target torch (else $OPGEN_PYTHON, else python3)")
    .option(
      "--torch-version <x.y.z>",
      "the target torch release, without installing it: its operator schemas are read from its wheel on PyPI ($OPGEN_PYPI_URL) and cached",
    )
    .option("--cache-dir <dir>", "where fetched schemas are kept (else $OPGEN_CACHE_DIR, else ~/.cache/opgen-backend)")
    .option("--offline", "use only cached schemas; never ask PyPI")
    .option(
      "--from-python <path>",
      "a Python with the torch the manifest was generated against, for dispatch and core-ATen changes by name",
    )
    .option(
      "--apply",
      "move the torch pins (files init wrote and nobody changed), regenerate csrc/generated and write stubs for new kernels",
    )
    .option("--stubs <dir>", "with --apply: where stubs for new kernels go (default: csrc/aten, else csrc)")
    .option("--json", "print the report as JSON")
    .option("--markdown <file>", "also write the report as Markdown (for the upgrade pull request)")
    .addHelpText(
      "after",
      `
Exit status:
  0  the target torch changes nothing for this backend
  1  action needed (signatures, removed overloads, dispatch, tags, derived siblings, core ATen,
     a private torch Python API the package's Inductor/Dynamo/c10d registration uses that
     broke or is gone)
  2  bad input: no manifest (or one older than backend.yaml), a torch older than the
     project's pin, a nightly torch, a --torch-version PyPI does not have (or no network)
  With --apply: 0 when applied with nothing left for you; 1 when something is
  (a break, a pin in a file you changed, a dispatch change, a new kernel's stub)
  or when it cannot apply (backend.yaml lists overloads the target removed)`,
    )
    .action(async (dir: string, opts: UpgradeOpts) => {
      const [{ compareUpgrade, checkTargetVersion }, fmt, { sourceFiles }] = await Promise.all([
        import("../upgrade/compare.js"),
        import("../upgrade/format.js"),
        import("../impl/kernels.js"),
      ]);
      let report: ReturnType<typeof compareUpgrade>;
      let manifest: Manifest;
      let target: OperatorCatalog;
      const yamlFile = path.join(dir, "backend.yaml");
      const generated = path.join(dir, "csrc", "generated");
      try {
        if (!existsSync(yamlFile)) bad(`${yamlFile}: no backend.yaml; pass the project directory`);
        manifest = readManifest(path.join(generated, "op_manifest.json"));
        const yamlText = readFileSync(yamlFile, "utf8");
        // Otherwise the report would mix edits to backend.yaml with what the new torch changes.
        if (manifest.yaml_sha256 && createHash("sha256").update(yamlText).digest("hex") !== manifest.yaml_sha256) {
          bad(
            `${yamlFile} changed since op_manifest.json was generated; run \`opgen-backend gen\` with the current torch first`,
          );
        }
        const fetchOpts: FetchOptions = { offline: Boolean(opts.offline), cacheDir: opts.cacheDir };
        const to = await targetCatalog(projectPin(dir, manifest), opts, fetchOpts, checkTargetVersion);
        target = to.catalog;
        const from =
          target.torchVersion.replace(/\+.*$/, "") === manifest.torch_version
            ? to
            : await baselineCatalog(manifest, opts, fetchOpts);
        const baseline = from?.catalog ?? null;
        const kernelSources = sourceFiles(path.join(dir, "csrc")).filter(
          (f) => !path.resolve(f).startsWith(path.resolve(generated) + path.sep),
        );
        report = compareUpgrade({
          manifest,
          yamlText,
          yamlFile,
          target,
          baseline,
          kernelSources,
          pythonApi: await pythonApiDrift(dir, manifest.torch_version, from, to),
        });
      } catch (e) {
        if (!(e instanceof BadInput || e instanceof UserError)) throw e;
        // Bad input exits 2: 1 means "action needed" (Note [Exit codes]).
        throw new UserError(`upgrade: ${e.message}`, e instanceof UserError ? e.diagnostics : [], { exitCode: 2 });
      }
      if (opts.markdown) {
        const md = path.resolve(opts.markdown);
        writeFiles(path.dirname(md), [{ path: path.basename(md), content: fmt.upgradeToMarkdown(report) }]);
      }
      if (!opts.apply) {
        process.stdout.write(opts.json ? fmt.upgradeToJson(report) : fmt.upgradeToTerminal(report, style()));
        if (report.actionNeeded) throw new UserError(`upgrade to torch ${report.toTorch}: action needed`);
        return;
      }
      const applied = await applyUpgrade(dir, report, manifest, target, opts);
      if (opts.json) process.stdout.write(`${JSON.stringify({ ...report, applied }, null, 2)}\n`);
      else process.stdout.write(fmt.upgradeToTerminal(report, style()) + appliedToTerminal(dir, applied));
      if (applied.left.length) {
        throw new UserError(`upgrade to torch ${report.toTorch} applied; ${applied.left.length} thing(s) left for you`);
      }
    });
}
