/**
 * `opgen-backend gen` and `opgen-backend coverage`: wiring only. The pipeline is
 * torch discovery -> operator catalog -> backend YAML -> emitters -> writer;
 * each stage lives in its own module and throws UserError for bad input.
 */
import path from "node:path";
import type { Command } from "commander";
import type { BackendConfig } from "../backend/types.js";
import type { OperatorCatalog } from "../model/types.js";
import { discoverTorch } from "../torch/discover.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { style } from "../util/term.js";
import { type OutputFile, staleFiles, type WriteResult, writeFiles } from "../write/files.js";

// The pipeline's modules are imported when a command runs, not when it is
// registered, and in parallel with the Python probe (loadInputs): `gen`
// starts in well under torchgen's time only if nothing waits needlessly.
const catalogModule = () => import("../model/catalog.js");
const backendModule = () => import("../backend/load.js");
const destModule = () => import("../dest/index.js");

interface CommonOpts {
  python?: string;
  json?: boolean;
}

export async function loadInputs(
  yamlPath: string,
  python?: string,
): Promise<{ catalog: OperatorCatalog; config: BackendConfig }> {
  // Start Python first; load our modules while it runs.
  const installP = discoverTorch(python);
  installP.catch(() => {});
  const [{ loadCatalog }, { loadBackendYaml }] = await Promise.all([catalogModule(), backendModule()]);
  const catalog = await loadCatalog(await installP);
  const config = loadBackendYaml(yamlPath, catalog);
  for (const w of config.warnings) process.stderr.write(`${formatDiagnostic(w)}\n`);
  return { catalog, config };
}

function report(r: WriteResult, opts: { json?: boolean; dryRun?: boolean; check?: boolean }, what: string): void {
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ outDir: r.outDir, files: r.files }, null, 2)}\n`);
    return;
  }
  const s = style();
  for (const f of r.files) {
    if (f.status === "unchanged" && !opts.dryRun) continue;
    const tag =
      f.status === "created"
        ? s.green(opts.dryRun || opts.check ? "would create" : "created")
        : f.status === "updated"
          ? s.yellow(opts.dryRun || opts.check ? "would update" : "updated")
          : s.dim(f.status);
    process.stdout.write(`${tag} ${path.join(r.outDir, f.path)}\n`);
  }
  const n = staleFiles(r).length;
  process.stdout.write(
    `${what}: ${r.files.length} file(s), ${n} ${opts.dryRun || opts.check ? "stale" : "written"}, ${
      r.files.length - n
    } unchanged\n`,
  );
}

export function registerGenCommands(program: Command): void {
  program
    .command("gen")
    .description("generate <Backend>NativeFunctions.h, Register<Backend>.cpp, autograd wiring and op_manifest.json")
    .argument("[backend-yaml]", "the backend YAML (torchgen gen_backend_stubs format + our keys)")
    .option("-s, --source-yaml <file>", "same as the positional argument (torchgen's spelling)")
    .option("-o, --output-dir <dir>", "where generated files go (default: csrc/generated next to the YAML)")
    .option("--python <path>", "the Python whose torch we build against (else $OPGEN_PYTHON, else python3)")
    .option("--dry-run", "list what would change; write nothing")
    .option("--check", "exit 1 when generated files are stale (for CI); write nothing")
    .option("--stubs <dir>", "also write a skeleton .cpp for each kernel without a definition (never overwrites)")
    .option("--impl-path <dir>", "check that kernel sources under <dir> define every kernel with the right signature")
    .option("--json", "machine-readable output")
    .action(async (positional: string | undefined, opts: CommonOpts & Record<string, string | boolean | undefined>) => {
      const yamlPath = positional ?? (opts.sourceYaml as string | undefined) ?? "backend.yaml";
      const outDir = (opts.outputDir as string | undefined) ?? path.join(path.dirname(yamlPath), "csrc", "generated");
      // The emitters load while the probe runs.
      const dest = destModule();
      dest.catch(() => {});
      const { catalog, config } = await loadInputs(yamlPath, opts.python);
      const { generate, kernelStubs, missingKernels } = await dest;
      const files: OutputFile[] = generate(config, catalog, { sourceYamlPath: yamlPath });
      const mode = { dryRun: Boolean(opts.dryRun), check: Boolean(opts.check), json: Boolean(opts.json) };
      const r = writeFiles(outDir, files, mode);
      report(r, mode, "gen");
      let failed = mode.check && staleFiles(r).length > 0;
      if (typeof opts.stubs === "string") {
        const stubs = writeFiles(opts.stubs, kernelStubs(config, catalog, { existingDirs: [opts.stubs] }), mode);
        report(stubs, mode, "stubs");
      }
      if (typeof opts.implPath === "string") {
        const problems = missingKernels(config, catalog, opts.implPath);
        for (const p of problems) process.stderr.write(`${formatDiagnostic(p)}\n`);
        if (problems.some((p) => p.severity === "error")) failed = true;
      }
      if (failed) {
        throw new UserError(
          mode.check
            ? `generated files in ${outDir} are stale; run \`opgen-backend gen ${yamlPath} -o ${outDir}\``
            : "kernel check failed",
        );
      }
    });

  program
    .command("coverage")
    .description("which core-ATen overloads the backend covers, lacks, and which ops will fall back to CPU")
    .argument("[backend-yaml]", "the backend YAML", "backend.yaml")
    .option("--python <path>", "the Python whose torch we build against")
    .option("--all", "list every uncovered core overload, not only the first ones")
    .option("--json", "machine-readable output")
    .action(async (yamlPath: string, opts: CommonOpts & { all?: boolean }) => {
      const [{ catalog, config }, { computeCoverage, formatCoverageTable }] = await Promise.all([
        loadInputs(yamlPath, opts.python),
        import("./coverage.js"),
      ]);
      const cov = computeCoverage(config, catalog);
      if (opts.json) process.stdout.write(`${JSON.stringify(cov, null, 2)}\n`);
      else process.stdout.write(formatCoverageTable(cov, { all: Boolean(opts.all) }));
    });
}
