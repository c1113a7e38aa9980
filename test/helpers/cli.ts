/**
 * The opgen-backend CLI as the tests run it: a child process of bin/, with
 * the project's Python, no colour, CI mode. One definition for every test
 * file that drives the CLI (review §4.5: it was written six times).
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { execa } from "execa";

export const ROOT = path.resolve(__dirname, "..", "..");
export const CLI = path.join(ROOT, "bin", "opgen-backend.js");
/** The Python the tests build and run against: OPGEN_PYTHON, else the repo's venv (scripts/setup.sh). */
export const PYTHON = process.env.OPGEN_PYTHON ?? path.join(ROOT, ".venv", "bin", "python");

/**
 * An async runner of the CLI in `cwd`, with `env` added to every call: it
 * never rejects, and `all` holds stdout and stderr interleaved.
 */
export function cliIn(cwd: string, env: Record<string, string> = {}) {
  return (args: readonly string[], more: Record<string, string> = {}) =>
    execa("node", [CLI, ...args], {
      cwd,
      reject: false,
      all: true,
      env: { OPGEN_PYTHON: PYTHON, NO_COLOR: "1", CI: "1", ...env, ...more },
    });
}

/** The CLI run to completion in `cwd` (default: the repo), blocking: exit code, stdout and stderr apart. */
export function cliSync(args: readonly string[], cwd = ROOT): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
