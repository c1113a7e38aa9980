/**
 * `opgen-backend test`, custom operators (issue 14): when the project declares
 * `custom:` operators (gen wrote csrc/generated/ops.py), the Python runner
 * checks each against its reference implementation: errors, values, dtypes,
 * shapes and gradients (python/opgen_conformance/custom.py). Run after the
 * aten conformance run, in the same Python; its lines go to the terminal and
 * a failure fails the command like a failed check.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { resolvePython } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { pythonEnv } from "./driver.js";
import { LOGS_ENV } from "./sanitize.js";
import { projectTarget } from "./select.js";

export interface CustomOpsOptions {
  readonly projectDir: string;
  readonly python?: string;
  readonly manifest?: string;
  readonly quiet?: boolean;
  /**
   * `test --sanitize`: the sanitized run's environment (RunOutcome.sanitized).
   * The checks run in it, in its reports directory, so they call the
   * sanitized build's kernels, not a release install that may not exist.
   */
  readonly sanitized?: Readonly<Record<string, string>>;
}

/** Whether the project has custom operators to check (gen wrote their Python module). */
export function hasCustomOps(projectDir: string): boolean {
  return existsSync(path.join(path.resolve(projectDir), "csrc", "generated", "ops.py"));
}

/** Runs the custom-operator checks; returns how many (operator, dtype) pairs failed. */
export async function runCustomOps(opts: CustomOpsOptions): Promise<number> {
  const target = projectTarget(opts.projectDir, opts.manifest);
  const python = resolvePython(opts.python);
  const r = await execa(python, ["-m", "opgen_conformance", "custom", ...target.args, "--json"], {
    env: { ...pythonEnv(), ...(opts.sanitized ?? {}) },
    ...(opts.sanitized ? { cwd: opts.sanitized[LOGS_ENV] } : {}),
    reject: false,
  });
  const cannotRun = () => {
    const last = String(r.stderr).trim().split("\n").slice(-5).join("\n");
    return new UserError(`the custom-operator checks could not run with Python '${python}':\n${last}`);
  };
  if (r.exitCode !== 0 && r.exitCode !== 1) throw cannotRun();
  let results: { op: string; dtype: string; samples: number; status: string; problems: string[] }[];
  try {
    results = JSON.parse(String(r.stdout));
  } catch {
    throw cannotRun(); // exited before printing its results (a traceback on stderr)
  }
  const failed = results.filter((x) => x.status === "fail");
  if (!opts.quiet) {
    for (const x of results) {
      process.stdout.write(`custom ${x.status.padEnd(4)} ${x.op} ${x.dtype} (${x.samples} samples)\n`);
      for (const p of x.problems) process.stdout.write(`       ${p}\n`);
    }
    // Note [Custom samples] (python/opgen_conformance/custom.py): a skip checked nothing and says what to add.
    const skipped = results.filter((x) => x.status === "skip").length;
    process.stdout.write(
      `custom operators: ${results.length - failed.length - skipped} passed, ${skipped} skipped, ${failed.length} failed\n`,
    );
  }
  return failed.length;
}
