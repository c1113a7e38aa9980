/**
 * Finds the Python and the torch a user builds against, and the operator YAMLs
 * that torch ships. One rule for every command that needs Python (gen, build,
 * test): `--python`, else env OPGEN_PYTHON, else `python3` on PATH.
 *
 * The probe is one short Python process; its answer is cached per process so
 * that `gen` pays for it once.
 */

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { UserError } from "../util/errors.js";

/** Oldest torch we generate for: the packaged YAML layout and c10 APIs we rely on. */
export const MIN_TORCH: readonly [number, number] = [2, 13];

export interface TorchInstall {
  readonly python: string;
  readonly pythonVersion: string;
  /** e.g. "2.13.0+cpu" */
  readonly version: string;
  readonly versionTuple: readonly [number, number, number];
  /** .../site-packages/torch */
  readonly torchDir: string;
  /** The -isystem directories for compiling against this torch. */
  readonly includeDirs: readonly string[];
  readonly libDir: string;
  readonly nativeFunctionsYaml: string;
  readonly tagsYaml: string;
  readonly derivativesYaml: string;
}

export function resolvePython(explicit?: string): string {
  if (explicit && explicit.length > 0) return explicit;
  const env = process.env.OPGEN_PYTHON;
  if (env && env.length > 0) return env;
  return "python3";
}

// Deliberately does not `import torch` (Note [Cold start]): `gen` must start fast. It finds
// the packages and reads torch/version.py as text.
const PROBE = `
import json, os, sys, importlib.util
out = {"python": sys.executable, "pythonVersion": sys.version.split()[0]}
spec = importlib.util.find_spec("torch")
gspec = importlib.util.find_spec("torchgen")
if spec is None or not spec.origin:
    out["error"] = "ModuleNotFoundError: No module named 'torch'"
elif gspec is None or not gspec.origin:
    out["error"] = "torch is installed without torchgen"
else:
    out["torchDir"] = os.path.dirname(spec.origin)
    out["torchgenDir"] = os.path.dirname(gspec.origin)
    ver = None
    try:
        with open(os.path.join(out["torchDir"], "version.py")) as f:
            for line in f:
                if line.startswith("__version__"):
                    ver = line.split("=", 1)[1].strip().strip(chr(39) + chr(34))
    except OSError:
        pass
    out["version"] = ver or "unknown"
print(json.dumps(out))
`;

const cache = new Map<string, Promise<TorchInstall>>();

export function discoverTorch(pythonOpt?: string): Promise<TorchInstall> {
  const python = resolvePython(pythonOpt);
  let p = cache.get(python);
  if (!p) {
    p = probe(python);
    cache.set(python, p);
    p.catch(() => cache.delete(python));
  }
  return p;
}

interface ProbeRun {
  readonly error: NodeJS.ErrnoException | null;
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the probe without blocking the event loop: `gen` starts it first and
 * loads its modules and the backend YAML while Python starts (Note [Cold
 * start]). Plain child_process, not execa, which costs more to import.
 * Long-running Python processes (build, conformance workers) go through execa.
 */
function runProbe(python: string): Promise<ProbeRun> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let error: NodeJS.ErrnoException | null = null;
    const child = spawn(python, ["-c", PROBE], { stdio: ["ignore", "pipe", "pipe"] });
    // Not spawn's `timeout` option: its timer outlives a Python that failed to start
    // (ENOENT), keeping the process alive for the whole timeout after the command is done.
    const timer = setTimeout(() => child.kill("SIGTERM"), 120_000);
    timer.unref();
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", (e: NodeJS.ErrnoException) => {
      error = e;
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({
        error,
        status,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
  });
}

async function probe(python: string): Promise<TorchInstall> {
  const r = await runProbe(python);
  if (r.error) {
    const code = r.error.code;
    const why =
      code === "ENOENT" ? "no such program" : code === "EACCES" ? "not executable" : (code ?? r.error.message);
    throw new UserError(`cannot run Python '${python}' (${why}); pass --python <path> or set OPGEN_PYTHON`);
  }
  if (r.status !== 0) {
    const last = (r.stderr || r.stdout || "").trim().split("\n").pop() ?? "";
    const how = r.status === null ? `killed by ${r.signal}` : `exit ${r.status}`;
    throw new UserError(
      `Python '${python}' failed (${how}): ${last}; pass a working interpreter with --python or OPGEN_PYTHON`,
    );
  }
  const stdout = r.stdout;
  let info: Record<string, unknown>;
  try {
    info = JSON.parse(stdout.trim().split("\n").pop() ?? "");
  } catch {
    throw new UserError(`Python '${python}' did not answer the torch probe; is it a CPython 3 interpreter?`);
  }
  if (typeof info.error === "string") {
    throw new UserError(
      `torch is not importable from '${python}' (${info.error}); install it with \`${python} -m pip install torch==2.13.0\` or pick another interpreter with --python / OPGEN_PYTHON`,
    );
  }
  const version = String(info.version);
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m) throw new UserError(`cannot read torch version '${version}' from '${python}'`);
  const vt: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (vt[0] < MIN_TORCH[0] || (vt[0] === MIN_TORCH[0] && vt[1] < MIN_TORCH[1])) {
    throw new UserError(
      `torch ${version} in '${python}' is older than the oldest supported (${MIN_TORCH.join(".")}); upgrade with \`${python} -m pip install torch==2.13.0\``,
    );
  }
  const torchgenDir = String(info.torchgenDir);
  const packaged = path.join(torchgenDir, "packaged");
  const install: TorchInstall = {
    python: String(info.python),
    pythonVersion: String(info.pythonVersion),
    version,
    versionTuple: vt,
    torchDir: String(info.torchDir),
    includeDirs: [
      path.join(String(info.torchDir), "include"),
      path.join(String(info.torchDir), "include", "torch", "csrc", "api", "include"),
    ],
    libDir: path.join(String(info.torchDir), "lib"),
    nativeFunctionsYaml: path.join(packaged, "ATen", "native", "native_functions.yaml"),
    tagsYaml: path.join(packaged, "ATen", "native", "tags.yaml"),
    derivativesYaml: path.join(packaged, "autograd", "derivatives.yaml"),
  };
  for (const f of [install.nativeFunctionsYaml, install.tagsYaml, install.derivativesYaml]) {
    if (!existsSync(f)) {
      throw new UserError(`torch ${version} at ${install.torchDir} does not ship ${f}; is the install complete?`);
    }
  }
  return install;
}
