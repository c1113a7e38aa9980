/**
 * The build side of `build --sanitize` (Note [Sanitizer builds] in
 * src/conformance/sanitize.ts): find the compiler's sanitizer runtimes,
 * check that the sanitized package imports and runs an operator with them
 * preloaded, and record the build for `test --sanitize`.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { PYTHON_DIR } from "../conformance/runner.js";
import { SANITIZERS, type SanitizedBuild, sanitizedBuildFile, sanitizerEnv } from "../conformance/sanitize.js";
import { UserError } from "../util/errors.js";
import { freshDir, writeText } from "../write/files.js";

/** The shared runtime library of each sanitizer (GCC's names) and the Debian package that has it. */
const RUNTIME: Record<string, { lib: string; pkg: string }> = {
  address: { lib: "libasan.so", pkg: "libasan8" },
  undefined: { lib: "libubsan.so", pkg: "libubsan1" },
};

/** The runtimes of the g++ on PATH (the compiler setup.py builds with), ASan's first. */
export async function sanitizerRuntimes(sanitizers: readonly string[], env: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  for (const s of SANITIZERS.filter((x) => sanitizers.includes(x))) {
    const { lib, pkg } = RUNTIME[s]!;
    const r = await execa("g++", [`-print-file-name=${lib}`], { env, reject: false });
    const found = r.exitCode === 0 ? String(r.stdout).trim() : "";
    if (!path.isAbsolute(found) || !existsSync(found)) {
      throw new UserError(`--sanitize ${s}: g++ has no ${lib} (its sanitizer runtime); install it (Debian: ${pkg})`);
    }
    out.push(realpathSync(found));
  }
  return out;
}

/**
 * After `build --sanitize`: checks that the package imports and runs an
 * operator with the runtimes preloaded, where a report at import (a static
 * initializer's bug, or a suppression torch needs) shows at once instead of
 * as every worker failing to start; then records the build in
 * .opgen/<variant>/build.json (variantName: a debug build records its own).
 */
export async function recordSanitizedBuild(
  root: string,
  variant: string,
  sanitizers: readonly string[],
  site: string,
  env: Record<string, string>,
  pkg: string,
  device: string,
  python: string,
): Promise<SanitizedBuild> {
  const b: SanitizedBuild = { sanitizers, preload: await sanitizerRuntimes(sanitizers, env), site };
  const logDir = path.join(root, ".opgen", variant, "import-check");
  freshDir(logDir);
  const r = await execa(python, ["-c", `import torch, ${pkg}._C; torch.ones(3, device="${device}").sum().item()`], {
    cwd: tmpdir(), // not the project: its in-tree package is the release build
    env: { ...env, TORCH_DEVICE_BACKEND_AUTOLOAD: "0", ...sanitizerEnv(b, PYTHON_DIR, logDir) },
    reject: false,
    all: true,
  });
  if (r.exitCode !== 0) {
    const reports = readdirSync(logDir).map((f) => readFileSync(path.join(logDir, f), "utf8"));
    const text = [...reports, String(r.all)].join("\n").trim().split("\n").slice(0, 40).join("\n");
    throw new UserError(
      `${pkg} (${variant}) was built but does not run with the sanitizer runtimes preloaded:\n${text}`,
    );
  }
  writeText(sanitizedBuildFile(root, variant), `${JSON.stringify(b, null, 2)}\n`);
  return b;
}
