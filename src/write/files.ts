/**
 * The only module that writes generated output to disk (torchgen's FileManager,
 * stricter): every path must stay inside the output directory, a file is
 * rewritten only when its bytes change (so a no-op `gen` leaves mtimes alone
 * and build systems stay quiet), each write is atomic (temp file + rename in
 * the same directory), and all contents are computed before the first write so
 * a failing generator leaves nothing half-written.
 *
 * Modes: `write` (default), `dryRun` (report what would change), `check`
 * (report stale files; the CLI exits non-zero), and `createOnly` per file for
 * things a person edits afterwards (kernel stubs, a project `init` made
 * without --force): an existing file is never touched.
 *
 * Every other file the tool writes goes through writeText (reports, the run
 * config, the build log), appendText, freshDir or moveInto; test/unit/layers.test.ts checks
 * that no other module touches the file system for writing.
 */
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "../util/errors.js";
import { cmp } from "../vocab.js";

export interface OutputFile {
  /** Relative to the output directory, forward slashes. */
  readonly path: string;
  readonly content: string;
  /** Never overwrite an existing file (files a person edits afterwards). */
  readonly createOnly?: boolean;
}

/** An OutputFile, or one whose content is bytes (files `init` copies as they are). */
export interface FileToWrite extends Omit<OutputFile, "content"> {
  readonly content: string | Uint8Array;
}

export type FileStatus = "created" | "updated" | "unchanged" | "kept";

export interface WriteResult {
  readonly outDir: string;
  readonly files: readonly { readonly path: string; readonly status: FileStatus }[];
}

export interface WriteOptions {
  readonly dryRun?: boolean;
  readonly check?: boolean;
}

/** Resolve `rel` inside `outDir`, refusing anything that escapes it. */
export function resolveInside(outDir: string, rel: string): string {
  if (rel.length === 0 || path.isAbsolute(rel) || rel.includes("\0")) {
    throw new UserError(`refusing to write '${rel}': output paths must be relative to ${outDir}`);
  }
  const root = path.resolve(outDir);
  const abs = path.resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + path.sep)) {
    throw new UserError(`refusing to write '${rel}': it resolves outside the output directory ${outDir}`);
  }
  return abs;
}

function readOrNull(file: string): Buffer | null {
  try {
    return readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

export function writeFiles(outDir: string, files: readonly FileToWrite[], opts: WriteOptions = {}): WriteResult {
  const seen = new Set<string>();
  const plan: { rel: string; abs: string; content: string | Uint8Array; status: FileStatus }[] = [];
  for (const f of files) {
    const abs = resolveInside(outDir, f.path);
    if (seen.has(abs)) throw new Error(`generator bug: '${f.path}' emitted twice`);
    seen.add(abs);
    const old = readOrNull(abs);
    let status: FileStatus;
    if (old === null) status = "created";
    else if (f.createOnly) status = "kept";
    else
      status = old.equals(typeof f.content === "string" ? Buffer.from(f.content) : f.content) ? "unchanged" : "updated";
    plan.push({ rel: f.path, abs, content: f.content, status });
  }
  plan.sort((a, b) => cmp(a.rel, b.rel));
  if (!opts.dryRun && !opts.check) {
    for (const p of plan) {
      if (p.status !== "created" && p.status !== "updated") continue;
      mkdirSync(path.dirname(p.abs), { recursive: true });
      atomicWrite(p.abs, p.content);
    }
  }
  return { outDir, files: plan.map((p) => ({ path: p.rel, status: p.status })) };
}

/**
 * One file a command writes outside a generated tree (a report, the run
 * config, a build log): its directory is created, and the write is atomic, so
 * a reader never sees half of it.
 */
export function writeText(file: string, content: string): void {
  const abs = path.resolve(file);
  mkdirSync(path.dirname(abs), { recursive: true });
  atomicWrite(abs, content);
}

/**
 * A scratch directory a command owns (the raw wheel of `build --wheel`, the
 * sanitizer reports of one run): removed with what it holds, then made empty.
 */
export function freshDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

/**
 * Moves a finished file into `dir` (created): a rename, or on another file
 * system a copy beside the destination and then a rename, so readers never
 * see part of it.
 */
export function moveInto(file: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const dest = path.join(dir, path.basename(file));
  try {
    renameSync(file, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
    atomicWrite(dest, readFileSync(file));
    rmSync(file);
  }
  return dest;
}

/** Appends to a file others write too (GitHub's step summary); its directory must exist. */
export function appendText(file: string, content: string): void {
  appendFileSync(file, content);
}

function atomicWrite(abs: string, content: string | Uint8Array): void {
  const tmp = `${abs}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, abs);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

export function staleFiles(r: WriteResult): string[] {
  return r.files.filter((f) => f.status === "created" || f.status === "updated").map((f) => f.path);
}

/** A held lock; `release()` removes it (idempotent). */
export interface Lock {
  release(): void;
}

/**
 * Note [Results lock]: one process at a time writes a given results file (two
 * `opgen-backend test` runs on one project would interleave their JSONL lines
 * and each report the other's results). The lock is `<file>.lock`, created
 * exclusively and holding the owner's pid; a lock whose process is gone
 * (killed run) is taken over. `what` names the writer in the error.
 */
export function acquireLock(file: string, what: string, hint: string): Lock {
  const lock = `${file}.lock`;
  mkdirSync(path.dirname(lock), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: "wx" });
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        process.removeListener("exit", release);
        rmSync(lock, { force: true });
      };
      process.once("exit", release);
      return { release };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const owner = Number.parseInt(readText(lock), 10);
    if (Number.isInteger(owner) && owner > 0 && alive(owner)) {
      throw new UserError(`${file} is being written by another ${what} (pid ${owner}); ${hint}`);
    }
    rmSync(lock, { force: true }); // stale: its process is gone
  }
  throw new UserError(`${file}: could not take its lock ${lock}; remove it if no ${what} is running`);
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
