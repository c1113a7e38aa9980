/**
 * `opgen-backend gen` and `opgen-backend coverage`: wiring only. The pipeline
 * is src/pipeline/gen.ts (runGen); coverage is a view of the plan
 * (src/dest/coverage.ts).
 */
import path from "node:path";
import type { Command } from "commander";
import { loadInputs, runGen } from "../pipeline/gen.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { writeSummary } from "../write/summary.js";

interface CommonOpts {
  python?: string;
  json?: boolean;
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
      const mode = { dryRun: Boolean(opts.dryRun), check: Boolean(opts.check) };
      const g = await runGen({
        yamlPath,
        outDir,
        python: opts.python,
        mode,
        stubsDir: typeof opts.stubs === "string" ? opts.stubs : undefined,
        implPath: typeof opts.implPath === "string" ? opts.implPath : undefined,
      });
      for (const w of g.config.warnings) process.stderr.write(`${formatDiagnostic(w)}\n`);
      const report = (r: typeof g.result, what: string) => {
        if (opts.json) process.stdout.write(`${JSON.stringify({ outDir: r.outDir, files: r.files }, null, 2)}\n`);
        else process.stdout.write(`${writeSummary(r, mode, what).join("\n")}\n`);
      };
      report(g.result, "gen");
      if (!opts.json) {
        // The autograd report (Note [Gradient sources] in src/dest/gradients.ts).
        const { gradientReport, gradientSummary } = await import("../dest/gradients.js");
        const grads = gradientReport(g.plan, g.catalog);
        // One write: a backend listing every operator gets hundreds of warnings.
        process.stderr.write(grads.warnings.map((w) => `${formatDiagnostic(w)}\n`).join(""));
        process.stdout.write(`${gradientSummary(grads)}\n`);
      }
      if (g.stubs) report(g.stubs, "stubs");
      for (const p of g.kernelProblems) process.stderr.write(`${formatDiagnostic(p)}\n`);
      const stale = mode.check && g.result.files.some((f) => f.status === "created" || f.status === "updated");
      if (stale || g.kernelProblems.some((p) => p.severity === "error")) {
        throw new UserError(
          mode.check
            ? `generated files in ${outDir} are stale; run \`opgen-backend gen ${yamlPath} -o ${outDir}\``
            : "kernel check failed",
        );
      }
    });

  program
    .command("coverage")
    .description(
      "which core-ATen overloads the backend covers, lacks, and which ops will fall back to CPU; " +
        "with --model, every overload a model reaches",
    )
    .argument("[backend-yaml]", "the backend YAML", "backend.yaml")
    .option("--python <path>", "the Python whose torch we build against")
    .option("--all", "list every uncovered core overload, not only the first ones")
    .option(
      "--model <file[:name,...]>",
      "the overloads these model cases dispatch (forward, backward, step), against the YAML (repeatable; 'zoo': the shipped zoo)",
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option("--add", "with --model: list the overloads that would fall back (or raise) under supported:")
    .option("--json", "machine-readable output")
    .action(async (yamlPath: string, opts: CommonOpts & { all?: boolean; model: string[]; add?: boolean }) => {
      if (opts.model.length > 0) return modelCoverage(yamlPath, opts);
      if (opts.add) {
        throw new UserError("--add needs --model FILE[:NAME,...]: it adds the overloads that model needs");
      }
      const [{ catalog, config }, { computeCoverage, formatCoverageTable }] = await Promise.all([
        loadInputs(yamlPath, opts.python),
        import("../dest/coverage.js"),
      ]);
      for (const w of config.warnings) process.stderr.write(`${formatDiagnostic(w)}\n`);
      const cov = computeCoverage(config, catalog);
      if (opts.json) process.stdout.write(`${JSON.stringify(cov, null, 2)}\n`);
      else process.stdout.write(formatCoverageTable(cov, { all: Boolean(opts.all) }));
    });
}

/** `coverage --model` (src/conformance/modelcoverage.ts): the listing, then with --add the edit. */
async function modelCoverage(yamlPath: string, opts: CommonOpts & { model: string[]; add?: boolean }): Promise<void> {
  const [{ runModelCoverage, addMissing, modelsLabel }, { formatModelCoverage }, { style }] = await Promise.all([
    import("../conformance/modelcoverage.js"),
    import("../dest/coverage.js"),
    import("../util/term.js"),
  ]);
  const err = style(process.stderr);
  const { config, catalog, models, report } = await runModelCoverage({
    yamlPath,
    models: opts.model,
    python: opts.python,
    progress: (line) => process.stderr.write(`${err.dim(line)}\n`),
  });
  for (const w of config.warnings) process.stderr.write(`${formatDiagnostic(w)}\n`);
  const added = opts.add ? addMissing(config, catalog, report, `--model ${modelsLabel(opts.model)}`) : undefined;
  if (opts.json) {
    const files = models.map((m) => path.relative(process.cwd(), m.file) || m.file);
    const out = { ...report, models: files, ...(added ? { added: added.names } : {}) };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  process.stdout.write(formatModelCoverage(report, style(process.stdout)));
  const stubs = `\`opgen-backend gen ${config.file} --stubs ${path.join(path.dirname(config.file), "csrc", "aten")}\``;
  const n = report.missing.length;
  if (added === undefined) {
    if (n > 0)
      process.stdout.write(
        `--add lists ${n === 1 ? "it" : "them"} under supported:; then ${stubs} writes the kernel stubs\n`,
      );
    return;
  }
  if (added.names.length === 0) {
    process.stdout.write(`nothing to add: ${config.file} lists every overload the model needs\n`);
    return;
  }
  const k = added.names.length;
  process.stdout.write(
    `added ${k} overload${k === 1 ? "" : "s"} under supported: (${config.file}:${added.line}): ${added.names.join(", ")}\n` +
      `next: ${stubs} writes a kernel stub for each one your sources do not define yet\n`,
  );
}
