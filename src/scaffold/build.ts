/**
 * `opgen-backend build`: regenerate, compile and install a scaffolded backend
 * project into the Python in use.
 *
 * Steps: (1) `gen` backend.yaml -> csrc/generated (write-if-changed, so an
 * unchanged YAML leaves the generated sources' mtimes alone and ninja quiet);
 * (2) `pip install --no-build-isolation --no-deps .` in the project, which
 * runs its setup.py: torch's BuildExtension with ninja, objects kept in the
 * project's build/ directory, ccache when present. Compile steps are shown
 * as progress lines; the full log goes to build/opgen-build.log.
 *
 * Variants: `--debug` and `--sanitize` build the same sources with other
 * flags in build/<variant> and install into .opgen/<variant>/site (Note
 * [Build variants] in the scaffold's setup.py; sanitize.ts); `--wheel` runs
 * `pip wheel` on the release build instead of installing (wheel.ts).
 *
 * Note [Incremental builds]: pip (>= 21.3) builds in the source tree, so
 * build/temp.<platform>/build.ninja and the objects survive between builds; ninja
 * recompiles only sources whose content or headers changed, then setuptools
 * relinks. setup.py lists headers as `depends` so a header-only edit still
 * reaches ninja.
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { checkSanitizers, variantName } from "../conformance/sanitize.js";
import { runGen } from "../pipeline/gen.js";
import { discoverTorch } from "../torch/discover.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { freshDir, writeText } from "../write/files.js";
import { writeSummary } from "../write/summary.js";
import { recordSanitizedBuild } from "./sanitize.js";
import { checkAuditwheel, repairWheel, sourceDateEpoch } from "./wheel.js";

export interface BuildOptions {
  /** Python to build against; the discover rule applies (else OPGEN_PYTHON, else python3). */
  readonly python?: string;
  /** Parallel compile jobs (MAX_JOBS); default: leave it to torch (CPUs). */
  readonly jobs?: number;
  /** Turn compiler warnings into errors (the scaffold compiles warning-free). */
  readonly werror?: boolean;
  /**
   * Install into this directory (pip --target --upgrade) instead of the
   * interpreter's site-packages: for tests and sandboxes, since an installed
   * backend is autoloaded by every `import torch` of that interpreter. Put
   * the directory on PYTHONPATH to use it.
   */
  readonly target?: string;
  /** Write a distributable (manylinux) wheel into this directory instead of installing (wheel.ts). */
  readonly wheel?: string;
  /** -O0 -g, in build/debug (Note [Build variants] in the scaffold's setup.py). */
  readonly debug?: boolean;
  /** Sanitizers to build with (SANITIZERS), in build/sanitize-<names>; see sanitize.ts. */
  readonly sanitize?: readonly string[];
  /** Progress sink; default: stdout. */
  readonly log?: (line: string) => void;
}

export interface BuildResult {
  readonly dir: string;
  readonly python: string;
  /** Sources ninja compiled in this build (relative to the project). */
  readonly compiled: readonly string[];
  readonly seconds: number;
  /** With `wheel`: the repaired wheel, its sha256 and platform tag. */
  readonly wheel?: { readonly file: string; readonly sha256: string; readonly platform: string };
  /** A debug or sanitizer build: where it was installed (pip --target). */
  readonly site?: string;
}

const GENERATED = path.join("csrc", "generated");

export async function build(dir: string, opts: BuildOptions = {}): Promise<BuildResult> {
  const t0 = Date.now();
  const log = opts.log ?? ((s: string) => process.stdout.write(`${s}\n`));
  const root = path.resolve(dir);
  checkSanitizers(opts.sanitize ?? []);
  if (opts.wheel !== undefined && (opts.debug || opts.sanitize?.length || opts.target)) {
    throw new UserError(
      "--wheel builds the release variant and installs nothing; leave out --debug, --sanitize and --target",
    );
  }
  const variant = variantName(opts);
  // A debug or sanitizer build is installed apart, never over the release one.
  const target = opts.target ?? (variant ? path.join(root, ".opgen", variant, "site") : undefined);
  for (const f of ["backend.yaml", "setup.py", "pyproject.toml"]) {
    if (!existsSync(path.join(root, f))) {
      throw new UserError(`${path.join(dir, f)} not found; is ${dir} a project made by \`opgen-backend init\`?`);
    }
  }
  // Note [No autoload while building]: the torch probe and gen must not load
  // installed backends: this very project's (possibly stale or half-built)
  // package would be autoloaded, and in the project directory ./<package>
  // shadows the installed one. The Python children inherit this.
  const { install, names } = await withoutBackendAutoload(async () => {
    const install = await discoverTorch(opts.python);
    log(`[build] torch ${install.version} (${install.python})`);
    log("[build] gen backend.yaml -> csrc/generated");
    return { install, names: await generate(root, install.python, log) };
  });
  if (opts.wheel !== undefined) await checkAuditwheel(install.python);

  log(
    `[build] pip ${opts.wheel !== undefined ? "wheel" : "install"} --no-build-isolation (ninja)${variant ? `, ${variant} build` : ""}`,
  );
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  env.TORCH_DEVICE_BACKEND_AUTOLOAD = "0"; // see Note [No autoload while building]
  if (opts.jobs !== undefined) env.MAX_JOBS = String(opts.jobs);
  const NAME = names.device.toUpperCase();
  if (opts.werror) env[`${NAME}_WERROR`] = "1";
  if (opts.debug) env[`${NAME}_DEBUG`] = "1";
  if (opts.sanitize?.length) env[`${NAME}_SANITIZE`] = [...opts.sanitize].sort().join(",");
  const rawWheels = path.join(root, "build", "wheel-raw");
  if (opts.wheel !== undefined) {
    env.SOURCE_DATE_EPOCH = await sourceDateEpoch(root);
    freshDir(rawWheels);
  }
  // The project's venv bin first: ninja and friends installed next to python.
  env.PATH = `${path.dirname(install.python)}${path.delimiter}${env.PATH ?? ""}`;
  const logFile = path.join(root, "build", "opgen-build.log");
  const lines: string[] = [];
  const compiled: string[] = [];
  const child = execa(
    install.python,
    [
      "-m",
      "pip",
      opts.wheel !== undefined ? "wheel" : "install",
      "--no-build-isolation",
      "--no-deps",
      "--disable-pip-version-check",
      "-v",
      ...(opts.wheel !== undefined ? ["-w", rawWheels] : []),
      ...(target ? ["--target", path.resolve(target), "--upgrade"] : []),
      ".",
    ],
    { cwd: root, env, all: true, reject: false, buffer: false },
  );
  let partial = "";
  child.all?.on("data", (chunk: Buffer) => {
    const text = partial + chunk.toString("utf8");
    const parts = text.split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      lines.push(line);
      const p = progress(line, root);
      if (p) {
        if (p.source) compiled.push(p.source);
        log(p.text);
      }
    }
  });
  const r = await child;
  if (partial) lines.push(partial);
  writeText(logFile, `${lines.join("\n")}\n`);
  if (r.exitCode !== 0) {
    // Compiler diagnostics and setup.py's own messages, not the (long) compile command lines.
    const interesting = lines
      .filter((l) => /error:|Error:|FAILED|is stale|is missing|undefined reference/.test(l) && !/\s-c\s/.test(l))
      .slice(-25);
    throw new UserError(
      `build failed (pip exit ${r.exitCode}); full log: ${logFile}\n${(interesting.length ? interesting : lines.slice(-25)).join("\n")}`,
    );
  }
  if (opts.wheel !== undefined) {
    log("[build] auditwheel repair (torch's libraries excluded)");
    const w = await repairWheel(install.python, rawWheels, path.resolve(opts.wheel), env);
    const seconds = (Date.now() - t0) / 1000;
    log(`[build] wrote ${w.wheel} (${w.platform}, sha256 ${w.sha256}) in ${seconds.toFixed(1)} s`);
    return {
      dir: root,
      python: install.python,
      compiled,
      seconds,
      wheel: { file: w.wheel, sha256: w.sha256, platform: w.platform },
    };
  }
  if (opts.sanitize?.length) {
    // The sanitized extension cannot load until its runtime is preloaded:
    // recordSanitizedBuild checks the import with it, as `test --sanitize` will run.
    await recordSanitizedBuild(
      root,
      variant,
      [...opts.sanitize].sort(),
      path.resolve(target!),
      env,
      names.pythonPackage,
      names.device,
      install.python,
    );
  } else {
    await importCheck(names.pythonPackage, install.python, env, target);
  }
  const seconds = (Date.now() - t0) / 1000;
  log(
    `[build] installed ${names.pythonPackage}${variant ? ` (${variant})` : ""} into ${target ? path.resolve(target) : install.python} in ${seconds.toFixed(1)} s (${compiled.length} file(s) compiled)`,
  );
  return {
    dir: root,
    python: install.python,
    compiled,
    seconds,
    ...(target && variant ? { site: path.resolve(target) } : {}),
  };
}

async function withoutBackendAutoload<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.TORCH_DEVICE_BACKEND_AUTOLOAD;
  process.env.TORCH_DEVICE_BACKEND_AUTOLOAD = "0";
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.TORCH_DEVICE_BACKEND_AUTOLOAD;
    else process.env.TORCH_DEVICE_BACKEND_AUTOLOAD = saved;
  }
}

/**
 * Loads the freshly installed extension in a new interpreter. A shared
 * library links even when a kernel that backend.yaml lists was never
 * defined; the loader is where that shows, so we look and name the kernel.
 */
export async function importCheck(
  pkg: string,
  python: string,
  env: Record<string, string>,
  target?: string,
): Promise<void> {
  // The package is imported explicitly, with torch's autoload off: another
  // backend installed in the same interpreter would otherwise be autoloaded
  // first and hold PrivateUse1, so the package would refuse to load (Note
  // [One PrivateUse1 backend] in the scaffold's _torch_<device>_autoload.py;
  // a backend made otherwise aborts the process: "multiple backend fallbacks
  // for PrivateUse1"). That the package autoloads is tested by its own tests.
  const checkEnv: Record<string, string> = { ...env, TORCH_DEVICE_BACKEND_AUTOLOAD: "0" };
  if (target) checkEnv.PYTHONPATH = [path.resolve(target), env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  const r = await execa(python, ["-c", `import ${pkg}._C`], {
    cwd: tmpdir(), // not the project: its source package would shadow the installed one
    env: checkEnv,
    reject: false,
    all: true,
  });
  if (r.exitCode === 0) return;
  const out = String(r.all);
  const sym = /undefined symbol: (\S+)/.exec(out)?.[1];
  if (sym) {
    const demangled = await execa("c++filt", [sym], { reject: false });
    const name = demangled.exitCode === 0 ? demangled.stdout.trim() : sym;
    throw new UserError(
      `${pkg} was built but cannot be loaded: ${name} is declared (backend.yaml lists the operator) but not defined; define it in a source file under csrc/ (\`opgen-backend gen backend.yaml --stubs <dir>\` writes a skeleton)`,
    );
  }
  // Python prints chained exceptions cause first: keep every exception line.
  const lines = out.split("\n");
  const errors = lines.filter((l) => /^\w[\w.]*(Error|Exception)\b/.test(l));
  throw new UserError(
    `${pkg} was built but importing it fails (python -c "import ${pkg}._C"):\n${[...errors, ...lines.slice(-4)].join("\n")}`,
  );
}

/** Ninja's "[3/12] c++ -MMD ... -c /abs/csrc/kernels/binary.cpp -o ..." -> a short progress line. */
function progress(line: string, root: string): { text: string; source?: string } | null {
  const m = /^\s*\[(\d+)\/(\d+)\]\s+(.*)$/.exec(line);
  if (!m) return null;
  const src = /\s(\S+\.(?:cpp|cc|cxx|cu))\s+-o\s/.exec(m[3]!);
  if (src) {
    const rel = path.relative(root, src[1]!.replace(/^'|'$/g, ""));
    return { text: `[build] [${m[1]}/${m[2]}] compile ${rel}`, source: rel };
  }
  return { text: `[build] [${m[1]}/${m[2]}] ${m[3]!.split(" ")[0]}` };
}

/** The project's device and Python package names, as gen resolved them from backend.yaml. */
interface ProjectNames {
  readonly device: string;
  readonly pythonPackage: string;
}

/**
 * Runs gen backend.yaml -> csrc/generated (the same service as `opgen-backend
 * gen`, so the same checks and write-if-changed) and takes the names from the
 * config it resolved, so build never re-derives backend.yaml's defaults.
 */
async function generate(root: string, python: string, log: (line: string) => void): Promise<ProjectNames> {
  const g = await runGen({ yamlPath: path.join(root, "backend.yaml"), outDir: path.join(root, GENERATED), python });
  for (const w of g.config.warnings) process.stderr.write(`${formatDiagnostic(w)}\n`);
  for (const line of writeSummary(g.result, {}, "gen")) log(line);
  return { device: g.config.device, pythonPackage: g.config.pythonPackage };
}
