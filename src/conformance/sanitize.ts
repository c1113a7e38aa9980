/**
 * What `test --sanitize` runs the conformance runner in: the project's
 * sanitizer build (made by `build --sanitize`, src/scaffold/sanitize.ts) and
 * the sanitizer runtimes preloaded.
 *
 * Note [Sanitizer builds]: setup.py compiles the extension with
 * -fsanitize=... in build/sanitize-<names> (Note [Build variants]), and build
 * installs it into <project>/.opgen/sanitize-<names>/site, never over the
 * release install. Python is not instrumented, so the sanitizer runtimes of
 * the compiler that built the extension (g++'s libasan, libubsan) must be
 * loaded first, with LD_PRELOAD; build records them next to the install
 * (build.json) and checks that the extension imports with them, and `test
 * --sanitize` starts the runner, and so every worker, with that environment
 * (Note [Sanitized workers] in python/opgen_conformance/sanitizer.py).
 *
 * Options, and why:
 * - detect_leaks=0: LeakSanitizer reports once, at exit, for the whole
 *   process; a worker runs many samples, so a leak could not be pinned on
 *   one, and CPython and torch keep their interned objects and registries
 *   to the end on purpose (reports by the thousand, none a kernel's).
 * - allocator_may_return_null=1: eager CPU and torch's allocator raise on an
 *   impossible size (the invalid-input probes ask for some); ASan's default,
 *   abort, would turn that expected error into a crash.
 * - halt_on_error=1 for UBSan (ASan halts anyway): a finding ends the worker,
 *   so it is recorded as a crash of the sample that caused it.
 * - suppressions: python/opgen_conformance/suppressions/*.supp, each entry
 *   with the reason it is not the backend's bug.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { UserError } from "../util/errors.js";

export const SANITIZERS = ["address", "undefined"] as const;

/** python/opgen_conformance/sanitizer.py LOGS_ENV: where the runner finds a dead worker's report. */
export const LOGS_ENV = "OPGEN_SANITIZER_LOGS";

/** What `build --sanitize` leaves for `test --sanitize` (<project>/.opgen/<variant>/build.json). */
export interface SanitizedBuild {
  readonly sanitizers: readonly string[];
  /** Absolute paths of the runtimes to preload, ASan's first (it must come first in the link map). */
  readonly preload: readonly string[];
  /** Where the sanitized package is installed (pip --target). */
  readonly site: string;
}

/** Each name must be one of SANITIZERS; the one check `build` and `test` make (setup.py repeats it for a bare `pip install`). */
export function checkSanitizers(names: readonly string[]): void {
  for (const n of names) {
    if (!(SANITIZERS as readonly string[]).includes(n)) {
      throw new UserError(`--sanitize ${n}: not a sanitizer opgen-backend builds with; use ${SANITIZERS.join(",")}`);
    }
  }
}

/** "address,undefined" -> ["address", "undefined"]; each must be one of SANITIZERS. */
export function parseSanitizers(list: string): string[] {
  const names = [...new Set(list.split(/[,\s]+/).filter(Boolean))].sort();
  if (names.length === 0) throw new UserError(`--sanitize needs sanitizers, e.g. ${SANITIZERS.join(",")}`);
  checkSanitizers(names);
  return names;
}

/**
 * A build variant's name (Note [Build variants] in the scaffold's setup.py,
 * whose build_variant() is the same rule in Python, kept equal by
 * test/unit/ship.test.ts): "" for release, else "debug", "sanitize-<names>"
 * (sorted, deduplicated) or "debug-sanitize-<names>". The variant compiles in
 * build/<variant>, installs into .opgen/<variant>/site and, when sanitized,
 * records itself in .opgen/<variant>/build.json.
 */
export function variantName(opts: { readonly debug?: boolean; readonly sanitize?: readonly string[] }): string {
  const san = [...new Set(opts.sanitize ?? [])].sort();
  return [...(opts.debug ? ["debug"] : []), ...(san.length ? [`sanitize-${san.join("-")}`] : [])].join("-");
}

export function sanitizedBuildFile(root: string, variant: string): string {
  return path.join(root, ".opgen", variant, "build.json");
}

/** The suppression files shipped with the runner. */
export function suppressionsDir(pythonDir: string): string {
  return path.join(pythonDir, "opgen_conformance", "suppressions");
}

/**
 * The environment of a sanitized run; reports go to <logDir>/{asan,ubsan}.<pid>.
 * `memoryBytes`, the worker's allocation limit, becomes ASan's
 * malloc_limit_mb: the RLIMIT_DATA of Note [Worker memory limit] cannot apply
 * under ASan, whose shadow memory is mapped before the worker starts.
 */
export function sanitizerEnv(
  b: SanitizedBuild,
  pythonDir: string,
  logDir: string,
  memoryBytes?: number | null,
): Record<string, string> {
  const supp = suppressionsDir(pythonDir);
  const asan = [
    "detect_leaks=0",
    "allocator_may_return_null=1",
    `suppressions=${path.join(supp, "asan.supp")}`,
    `log_path=${path.join(logDir, "asan")}`,
    ...(memoryBytes ? [`malloc_limit_mb=${Math.max(1, Math.floor(memoryBytes / 2 ** 20))}`] : []),
  ];
  const ubsan = [
    "halt_on_error=1",
    "print_stacktrace=1",
    `suppressions=${path.join(supp, "ubsan.supp")}`,
    `log_path=${path.join(logDir, "ubsan")}`,
  ];
  return {
    LD_PRELOAD: [...b.preload, process.env.LD_PRELOAD].filter(Boolean).join(" "),
    ASAN_OPTIONS: asan.join(":"),
    UBSAN_OPTIONS: ubsan.join(":"),
    PYTHONPATH: [b.site, pythonDir, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
    [LOGS_ENV]: logDir,
  };
}

/**
 * The build `test --sanitize <names>` runs: the one `build --sanitize <names>`
 * recorded, with or without --debug; where both were built, the newer.
 */
export function loadSanitizedBuild(root: string, sanitizers: readonly string[]): SanitizedBuild & { variant: string } {
  const found = [false, true]
    .map((debug) => variantName({ debug, sanitize: sanitizers }))
    .map((variant) => ({ variant, file: sanitizedBuildFile(root, variant) }))
    .filter((c) => existsSync(c.file))
    .sort((a, b) => statSync(b.file).mtimeMs - statSync(a.file).mtimeMs);
  if (found.length === 0) {
    throw new UserError(
      `no ${variantName({ sanitize: sanitizers })} build of ${root}; run \`opgen-backend build ${root} --sanitize ${[...new Set(sanitizers)].sort().join(",")}\` first`,
    );
  }
  const { variant, file } = found[0]!;
  return { ...(JSON.parse(readFileSync(file, "utf8")) as SanitizedBuild), variant };
}
