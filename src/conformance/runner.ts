/**
 * Starting the Python runner (python/opgen_conformance, shipped in this
 * package) with the user's Python: its environment, a command that prints
 * an answer, and a run whose stdout is JSON-line progress events.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { UserError } from "../util/errors.js";
import { useColor } from "../util/term.js";

/** python/ next to src/ and dist/: this file is src/conformance/x.ts or dist/conformance/x.js. */
export const PYTHON_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "python");

export function pythonEnv(): Record<string, string> {
  const prev = process.env.PYTHONPATH;
  return { PYTHONPATH: prev ? `${PYTHON_DIR}${path.delimiter}${prev}` : PYTHON_DIR, PYTHONUNBUFFERED: "1" };
}

/**
 * The stdout of `python -m opgen_conformance <args>`, a command that prints
 * its answer (model-cases, model-ops, upstream-deps); a non-zero exit is a
 * UserError `<what>: <the last lines it printed on stderr>`.
 */
export async function runnerOutput(
  python: string,
  args: readonly string[],
  what: string,
  cancel?: AbortSignal,
): Promise<string> {
  const r = await execa(python, ["-m", "opgen_conformance", ...args], {
    env: pythonEnv(),
    reject: false,
    ...(cancel ? { cancelSignal: cancel } : {}),
  });
  if (r.isCanceled) throw new Error(`${args[0]} was cancelled`);
  if (r.exitCode !== 0) {
    const why = String(r.stderr ?? "")
      .trim()
      .split("\n")
      .slice(-3)
      .join("\n");
    throw new UserError(`${what}: ${why || `the runner exited with ${r.exitCode ?? r.signal}`}`);
  }
  return String(r.stdout);
}

/**
 * `python -m opgen_conformance <args>` with the runner's environment: each
 * JSON line on its stdout is a progress event for `onEvent`; a non-zero exit
 * is a UserError that names `what` and shows the last lines it printed.
 */
export async function runRunnerProcess(
  python: string,
  args: readonly string[],
  what: string,
  onEvent: (e: unknown) => void,
  extra: { readonly env?: Record<string, string>; readonly cwd?: string } = {},
): Promise<void> {
  const child = execa(python, ["-m", "opgen_conformance", ...args], {
    env: { ...pythonEnv(), ...(useColor(process.stderr) ? {} : { NO_COLOR: "1" }), ...(extra.env ?? {}) },
    ...(extra.cwd ? { cwd: extra.cwd } : {}),
    reject: false,
    buffer: { stdout: false, stderr: true },
    stdin: "pipe",
  });
  let tail = "";
  for await (const line of child.iterable({ from: "stdout" })) {
    const text = String(line);
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      tail = `${tail}\n${text}`.slice(-4000);
      continue;
    }
    onEvent(event);
  }
  const r = await child;
  if (r.exitCode !== 0) {
    const err = `${String(r.stderr ?? "")}\n${tail}`.trim().split("\n").slice(-6).join("\n");
    throw new UserError(`${what} failed (exit ${r.exitCode ?? r.signal}):\n${err}`);
  }
}

/** Eager CPU's capability in `python`: torch.backends.cpu.get_cpu_capability() ("AVX2", "AVX512", "DEFAULT", ...), "+fp16" with AVX512-FP16 (Note [CPU capability]). */
export async function cpuCapability(python: string): Promise<string> {
  const text = await runnerOutput(python, ["cpu-capability"], "asking eager CPU's capability");
  return text.trim();
}
