/**
 * `opgen-backend upgrade`: wiring only (the comparison is src/upgrade). Exit
 * 0: nothing to do; 1: action needed; 2: bad input (one line, nothing written).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { Manifest } from "../dest/manifest.js";
import { loadCatalog } from "../model/catalog.js";
import type { OperatorCatalog } from "../model/types.js";
import { discoverTorch } from "../torch/discover.js";
import type { FetchOptions } from "../upgrade/wheel.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { style } from "../util/term.js";

interface UpgradeOpts {
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
async function baselineCatalog(
  manifest: Manifest,
  opts: UpgradeOpts,
  fetchOpts: FetchOptions,
): Promise<OperatorCatalog | null> {
  const explicit = opts.fromPython;
  try {
    const install = await discoverTorch(explicit);
    if (install.version.replace(/\+.*$/, "") === manifest.torch_version) return await loadCatalog(install);
    if (explicit)
      bad(`--from-python has torch ${install.version}; the manifest was generated with ${manifest.torch_version}`);
  } catch (e) {
    if (e instanceof BadInput || explicit) throw e;
  }
  try {
    const { fetchTorchSchemas } = await import("../upgrade/wheel.js");
    return await loadCatalog(await fetchTorchSchemas(manifest.torch_version, fetchOpts));
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
): Promise<OperatorCatalog> {
  if (opts.torchVersion !== undefined) {
    if (opts.python) bad("--python and --torch-version both name the target torch; pass one");
    checkTargetVersion(pin, opts.torchVersion);
    const { fetchTorchSchemas } = await import("../upgrade/wheel.js");
    return loadCatalog(await fetchTorchSchemas(opts.torchVersion, fetchOpts));
  }
  const install = await discoverTorch(opts.python);
  checkTargetVersion(pin, install.version);
  return loadCatalog(install);
}

export function registerUpgradeCommand(program: Command): void {
  program
    .command("upgrade")
    .description("report what moving the project to another torch changes for this backend (writes nothing)")
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
    .option("--json", "print the report as JSON")
    .option("--markdown <file>", "also write the report as Markdown (for the upgrade pull request)")
    .addHelpText(
      "after",
      `
Exit status:
  0  the target torch changes nothing for this backend
  1  action needed (signatures, removed overloads, dispatch, tags, derived siblings, core ATen)
  2  bad input: no manifest (or one older than backend.yaml), a torch older than the
     project's pin, a nightly torch, a --torch-version PyPI does not have (or no network)`,
    )
    .action(async (dir: string, opts: UpgradeOpts) => {
      const [{ compareUpgrade, checkTargetVersion }, fmt, { sourceFiles }] = await Promise.all([
        import("../upgrade/compare.js"),
        import("../upgrade/format.js"),
        import("../dest/kernels.js"),
      ]);
      let report: ReturnType<typeof compareUpgrade>;
      try {
        const yamlFile = path.join(dir, "backend.yaml");
        if (!existsSync(yamlFile)) bad(`${yamlFile}: no backend.yaml; pass the project directory`);
        const generated = path.join(dir, "csrc", "generated");
        const manifest = readManifest(path.join(generated, "op_manifest.json"));
        const yamlText = readFileSync(yamlFile, "utf8");
        // Otherwise the report would mix edits to backend.yaml with what the new torch changes.
        if (manifest.yaml_sha256 && createHash("sha256").update(yamlText).digest("hex") !== manifest.yaml_sha256) {
          bad(
            `${yamlFile} changed since op_manifest.json was generated; run \`opgen-backend gen\` with the current torch first`,
          );
        }
        const fetchOpts: FetchOptions = { offline: Boolean(opts.offline), cacheDir: opts.cacheDir };
        const target = await targetCatalog(projectPin(dir, manifest), opts, fetchOpts, checkTargetVersion);
        const baseline =
          target.torchVersion.replace(/\+.*$/, "") === manifest.torch_version
            ? target
            : await baselineCatalog(manifest, opts, fetchOpts);
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
        });
      } catch (e) {
        if (!(e instanceof BadInput || e instanceof UserError)) throw e;
        if (e instanceof UserError) for (const d of e.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
        process.stderr.write(`opgen-backend: upgrade: ${e.message}\n`);
        process.exit(2);
      }
      if (opts.markdown) {
        mkdirSync(path.dirname(path.resolve(opts.markdown)), { recursive: true });
        writeFileSync(opts.markdown, fmt.upgradeToMarkdown(report));
      }
      process.stdout.write(opts.json ? fmt.upgradeToJson(report) : fmt.upgradeToTerminal(report, style()));
      if (report.actionNeeded) {
        throw new UserError(`upgrade to torch ${report.toTorch}: action needed`);
      }
    });
}
