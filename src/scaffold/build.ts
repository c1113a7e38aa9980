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
 * Note [Incremental builds]: pip (>= 21.3) builds in the source tree, so
 * build/temp.<platform>/build.ninja and the objects survive between builds; ninja
 * recompiles only sources whose content or headers changed, then setuptools
 * relinks. setup.py lists headers as `depends` so a header-only edit still
 * reaches ninja.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Command } from "commander";
import { execa } from "execa";
import YAML from "yaml";
import { registerGenCommands } from "../cli/gen.js";
import { discoverTorch } from "../torch/discover.js";
import { UserError } from "../util/errors.js";

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
  /** Progress sink; default: stdout. */
  readonly log?: (line: string) => void;
}

export interface BuildResult {
  readonly dir: string;
  readonly python: string;
  /** Sources ninja compiled in this build (relative to the project). */
  readonly compiled: readonly string[];
  readonly seconds: number;
  readonly generator: "opgen" | "torchgen-bootstrap";
}

const GENERATED = path.join("csrc", "generated");

export async function build(dir: string, opts: BuildOptions = {}): Promise<BuildResult> {
  const t0 = Date.now();
  const log = opts.log ?? ((s: string) => process.stdout.write(`${s}\n`));
  const root = path.resolve(dir);
  for (const f of ["backend.yaml", "setup.py", "pyproject.toml"]) {
    if (!existsSync(path.join(root, f))) {
      throw new UserError(`${path.join(dir, f)} not found; is ${dir} a project made by \`opgen-backend init\`?`);
    }
  }
  // Note [No autoload while building]: the torch probe and gen must not load
  // installed backends: this very project's (possibly stale or half-built)
  // package would be autoloaded, and in the project directory ./<package>
  // shadows the installed one. The Python children inherit this.
  const { install, generator } = await withoutBackendAutoload(async () => {
    const install = await discoverTorch(opts.python);
    log(`[build] torch ${install.version} (${install.python})`);
    log("[build] gen backend.yaml -> csrc/generated");
    return { install, generator: await generate(root, install.python, log) };
  });

  log("[build] pip install --no-build-isolation (ninja)");
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  env.TORCH_DEVICE_BACKEND_AUTOLOAD = "0"; // see Note [No autoload while building]
  if (opts.jobs !== undefined) env.MAX_JOBS = String(opts.jobs);
  if (opts.werror) env[`${envPrefix(root)}_WERROR`] = "1";
  // The project's venv bin first: ninja and friends installed next to python.
  env.PATH = `${path.dirname(install.python)}${path.delimiter}${env.PATH ?? ""}`;
  mkdirSync(path.join(root, "build"), { recursive: true });
  const logFile = path.join(root, "build", "opgen-build.log");
  const lines: string[] = [];
  const compiled: string[] = [];
  const child = execa(
    install.python,
    [
      "-m",
      "pip",
      "install",
      "--no-build-isolation",
      "--no-deps",
      "--disable-pip-version-check",
      "-v",
      ...(opts.target ? ["--target", path.resolve(opts.target), "--upgrade"] : []),
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
  writeFileSync(logFile, `${lines.join("\n")}\n`);
  if (r.exitCode !== 0) {
    // Compiler diagnostics and setup.py's own messages, not the (long) compile command lines.
    const interesting = lines
      .filter((l) => /error:|Error:|FAILED|is stale|is missing|undefined reference/.test(l) && !/\s-c\s/.test(l))
      .slice(-25);
    throw new UserError(
      `build failed (pip exit ${r.exitCode}); full log: ${logFile}\n${(interesting.length ? interesting : lines.slice(-25)).join("\n")}`,
    );
  }
  await importCheck(root, install.python, env, opts.target);
  const seconds = (Date.now() - t0) / 1000;
  log(
    `[build] installed ${packageName(root)} into ${opts.target ? path.resolve(opts.target) : install.python} in ${seconds.toFixed(1)} s (${compiled.length} file(s) compiled)`,
  );
  return { dir: root, python: install.python, compiled, seconds, generator };
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
async function importCheck(root: string, python: string, env: Record<string, string>, target?: string): Promise<void> {
  const pkg = packageName(root);
  const checkEnv = { ...env };
  // The check loads the package the way users do: through torch's autoload too.
  if (process.env.TORCH_DEVICE_BACKEND_AUTOLOAD === undefined) delete checkEnv.TORCH_DEVICE_BACKEND_AUTOLOAD;
  else checkEnv.TORCH_DEVICE_BACKEND_AUTOLOAD = process.env.TORCH_DEVICE_BACKEND_AUTOLOAD;
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
      `${pkg} was built but cannot be loaded: ${name} is declared (backend.yaml lists the operator) but not defined; define it in a file under csrc/kernels/ (\`opgen-backend gen backend.yaml --stubs csrc/kernels\` writes a skeleton)`,
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

function projectConfig(root: string): Record<string, unknown> {
  try {
    const doc = YAML.parse(readFileSync(path.join(root, "backend.yaml"), "utf8"));
    return doc && typeof doc === "object" ? (doc as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function deviceName(root: string): string {
  const d = projectConfig(root).device;
  return typeof d === "string" ? d : "privateuseone";
}

function envPrefix(root: string): string {
  return deviceName(root).toUpperCase();
}

function packageName(root: string): string {
  const p = projectConfig(root).python_package;
  return typeof p === "string" ? p : `torch_${deviceName(root)}`;
}

/**
 * Runs `opgen-backend gen backend.yaml -o csrc/generated` in process (the same
 * command, so the same checks, report and write-if-changed). The escape hatch
 * OPGEN_BUILD_GEN=torchgen generates with torchgen.gen_backend_stubs instead
 * (see bootstrapGen), e.g. to tell a gen bug from a kernel bug.
 */
async function generate(root: string, python: string, log: (s: string) => void): Promise<BuildResult["generator"]> {
  if (process.env.OPGEN_BUILD_GEN === "torchgen") {
    log("[build] OPGEN_BUILD_GEN=torchgen: generating with torchgen.gen_backend_stubs");
    await bootstrapGen(root, python);
    return "torchgen-bootstrap";
  }
  const program = new Command().exitOverride();
  registerGenCommands(program);
  await program.parseAsync(
    ["gen", path.join(root, "backend.yaml"), "-o", path.join(root, GENERATED), "--python", python],
    {
      from: "user",
    },
  );
  return "opgen";
}

/** Keys torchgen's gen_backend_stubs rejects (ours; see src/backend/load.ts). */
const OUR_KEYS = ["device", "python_package", "fallback"];

/**
 * Alternative generator with the same outputs `gen` has: torchgen's header and
 * registration file (its include rewritten to be relative) and an
 * op_manifest.json with the fields setup.py's staleness check and the
 * conformance runner read. Files are written only when their bytes change.
 */
export async function bootstrapGen(root: string, python: string): Promise<void> {
  const yamlBytes = readFileSync(path.join(root, "backend.yaml"));
  const cfg = YAML.parse(yamlBytes.toString("utf8")) as Record<string, unknown>;
  const stripped: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cfg)) if (!OUR_KEYS.includes(k)) stripped[k] = v;
  const tmp = mkdtempSync(path.join(tmpdir(), "opgen-bootstrap-"));
  try {
    const src = path.join(tmp, "backend.yaml");
    writeFileSync(src, YAML.stringify(stripped));
    const out = path.join(tmp, "out");
    const r = await execa(python, ["-m", "torchgen.gen_backend_stubs", "-s", src, "-o", out], {
      reject: false,
      all: true,
    });
    if (r.exitCode !== 0) {
      throw new UserError(
        `backend.yaml: torchgen.gen_backend_stubs rejected it:\n${String(r.all).split("\n").slice(-8).join("\n")}`,
      );
    }
    const backend = String(cfg.backend ?? "PrivateUse1");
    const header = `${backend}NativeFunctions.h`;
    const reg = `Register${backend}.cpp`;
    const banner = "// @generated by opgen-backend (bootstrap: torchgen.gen_backend_stubs)\n";
    const files: Record<string, string> = {
      [header]: banner + readFileSync(path.join(out, header), "utf8"),
      [reg]:
        banner +
        readFileSync(path.join(out, reg), "utf8").replace(/#include "[^"]*\/(\w+NativeFunctions\.h)"/, '#include "$1"'),
    };
    const device = typeof cfg.device === "string" ? cfg.device : "privateuseone";
    const ver = await execa(python, ["-c", "import torch; print(torch.__version__.split('+')[0])"], { cwd: tmp });
    const supported = Array.isArray(cfg.supported) ? (cfg.supported as unknown[]).map(String).sort() : [];
    files["op_manifest.json"] = `${JSON.stringify(
      {
        generator: "@generated by opgen-backend",
        backend,
        device,
        python_package: typeof cfg.python_package === "string" ? cfg.python_package : `torch_${device}`,
        cpp_namespace: cfg.cpp_namespace,
        class_name: cfg.class_name ?? `${backend}NativeFunctions`,
        torch_version: ver.stdout.trim(),
        yaml_sha256: createHash("sha256").update(yamlBytes).digest("hex"),
        operators: supported.map((name) => ({ name, served_by: "kernel" })),
      },
      null,
      2,
    )}\n`;
    const outDir = path.join(root, GENERATED);
    mkdirSync(outDir, { recursive: true });
    for (const [name, content] of Object.entries(files)) {
      const p = path.join(outDir, name);
      if (existsSync(p) && readFileSync(p, "utf8") === content) continue;
      writeFileSync(p, content);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
