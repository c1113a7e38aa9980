/**
 * `opgen-backend init`: renders scaffolds/ into a new backend project.
 *
 * A project is `scaffolds/common/` (Python package, setup.py, backend.yaml,
 * tests, CI, README: the files that carry the project's name) plus the C++ of
 * backends/ref (Note [Projects copy the reference backend]); device kinds
 * differ only in which driver and kernel library they copy (referenceFileFor)
 * and in a few values of ScaffoldVars. Files ending in `.hbs` are logic-free
 * Handlebars templates (placeholders only) rendered with ScaffoldVars and
 * lose the suffix; every other file is copied byte for byte. Path segments
 * may hold placeholders too (`torch_{{name}}/`).
 *
 * Note [init changes nothing on error]: every check (name, device kind,
 * target directory) runs and every file is rendered in memory before the
 * first write, so a failing init leaves the disk as it was. The files go
 * through src/write: each write is atomic, and without --force nothing that
 * exists is touched.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Handlebars from "handlebars";
import YAML from "yaml";
import { deviceNameProblem, KNOWN_DEVICES } from "../backend/names.js";
import { MIN_TORCH } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { VERSION } from "../version.js";
import { cmp } from "../vocab.js";
import { writeFiles } from "../write/files.js";

export const DEVICE_KINDS = ["cpu", "cuda"] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

/**
 * Why a project of each kind may find no device, for the warning its
 * package gives on import (and the reason `opgen-backend test` reports
 * when it skips the run): Note [No GPU] in backends/ref/csrc/driver/cuda.
 */
const NO_DEVICE_REASON: Readonly<Record<DeviceKind, string>> = {
  cpu: "the reference CPU driver was started with REF_DEVICE_COUNT=0",
  cuda: "no NVIDIA GPU is visible to the CUDA runtime (no GPU, no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them)",
};

/**
 * Note [Projects copy the reference backend]: a project's C++ (driver,
 * kernel library, ATen glue, runtime) is `backends/ref/csrc/`, copied byte
 * for byte: it carries no name (messages ask the runtime for the device's
 * name), so this repository compiles, lints and runs conformance on exactly
 * what a vendor starts from. Its conformance expectations come along. The
 * scaffold adds only the files that carry the project's name.
 */
const REFERENCE_FILES = ["csrc", "conformance-expectations.yaml"] as const;

/**
 * Whether `rel` (a path under backends/ref/csrc) belongs in a project of
 * `kind`: csrc/driver/<kind>/ and csrc/kernels/<kind>/ hold one device's
 * driver and kernel library, and a project gets only its own; the headers,
 * the ATen glue and the runtime are shared by every kind.
 */
function referenceFileFor(kind: DeviceKind, rel: string): boolean {
  const [layer, sub] = rel.split("/");
  if (layer !== "driver" && layer !== "kernels") return true;
  return !(DEVICE_KINDS as readonly string[]).includes(sub ?? "") || sub === kind;
}

/**
 * The operators a CUDA project may register: those whose ATen glue calls
 * only kernel library entry points the CUDA library implements
 * (backends/ref/cuda-ops.txt); the rest run through the CPU fallback.
 */
const DEVICE_OPS: Readonly<Record<DeviceKind, string | null>> = { cpu: null, cuda: "cuda-ops.txt" };

/** Which operators a new project registers: the starter subset or the whole reference set. */
export const KERNEL_SETS = ["starter", "all"] as const;
export type KernelSet = (typeof KERNEL_SETS)[number];

/**
 * Device names torch knows beyond c10's DeviceType list (names.ts): Python-level
 * or historical backends a renamed PrivateUse1 must not shadow either.
 */
const EXTRA_RESERVED = ["ort", "hip", "xla", "privateuse1", "npu", "gpu", "accelerator", "backends"] as const;

export interface InitOptions {
  /** The torch device name, e.g. "mychip" (becomes torch.device("mychip"), torch.mychip, torch_mychip). */
  readonly name: string;
  readonly device?: DeviceKind | string;
  /** Write into a non-empty directory, replacing files the scaffold has. */
  readonly force?: boolean;
  /** Which reference operators backend.yaml lists (default "starter"). */
  readonly kernels?: KernelSet | string;
  /**
   * The torch release the project builds against, `x.y.z` (the CLI passes the
   * one discovered, or --torch-version): Note [Pinned torch].
   */
  readonly torchVersion: string;
}

/**
 * Everything a template may print (each field is read by some file of
 * scaffolds/common). name, NAME and package are checked identifiers.
 */
export interface ScaffoldVars {
  readonly name: string;
  readonly NAME: string;
  readonly package: string;
  readonly device_kind: DeviceKind;
  /** Why the package may find no device: its import warning and `unavailable_reason()`. */
  readonly no_device_reason: string;
  /** Note [Pinned torch]: the torch release, `x.y.z`. */
  readonly torch_version: string;
  /** The opgen-backend release that made the project (its CI installs the same). */
  readonly opgen_version: string;
  /** backend.yaml's `supported:` entries, one `  - op` line each. */
  readonly supported: string;
  /** backend.yaml's `runtime:` entries (the copied runtime's own operators), one `  - op` line each. */
  readonly runtime: string;
  /**
   * The reference backend.yaml's closing `autograd:` and `custom:` sections,
   * as written (Note [Reference autograd and custom operators] there), for a
   * CPU project; empty for a kind whose kernel library lacks their kernels.
   */
  readonly autograd_sections: string;
  /**
   * The reference backend.yaml's `partial_dtypes:` groups (Note [Partial
   * dtypes]) narrowed to the project's operators, for a CPU project (the
   * CUDA library refuses complex); empty when none remain.
   */
  readonly partial_dtypes: string;
}

export interface InitResult {
  readonly dir: string;
  readonly files: readonly string[];
  readonly vars: ScaffoldVars;
}

/** Why `name` cannot be a device name for a new backend, or null. */
export function initNameProblem(name: string): string | null {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    return `"${name}" is not a Python identifier (it becomes the package torch_${name} and the attribute torch.${name})`;
  }
  const p = deviceNameProblem(name);
  if (p) return p;
  if ((EXTRA_RESERVED as readonly string[]).includes(name) || KNOWN_DEVICES.includes(name)) {
    return `"${name}" collides with a device or attribute torch already has`;
  }
  return null;
}

/**
 * Why `v` cannot be the torch a project pins, or null. Note [Pinned torch]:
 * a compiled backend works only with the torch it was built against (C++
 * ABI), and its generated code matches only that torch's operator schemas, so
 * the project pins one release: the wheel's dependency, its CI's install, and
 * setup.py refuses to build generated code made for another torch.
 */
export function torchVersionProblem(v: string): string | null {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) return `"${v}" is not a torch release like 2.13.0`;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < MIN_TORCH[0] || (major === MIN_TORCH[0] && minor < MIN_TORCH[1])) {
    return `torch ${v} is older than ${MIN_TORCH.join(".")}, the oldest opgen-backend supports`;
  }
  return null;
}

export function scaffoldVars(
  name: string,
  kind: DeviceKind,
  torchVersion: string,
  ops: readonly string[] = [],
): ScaffoldVars {
  return {
    name,
    NAME: name.toUpperCase(),
    package: `torch_${name}`,
    device_kind: kind,
    no_device_reason: NO_DEVICE_REASON[kind],
    torch_version: torchVersion,
    opgen_version: VERSION,
    supported: ops.map((op) => `  - ${op}`).join("\n"),
    runtime: referenceYaml()
      .runtime.map((op) => `  - ${op}`)
      .join("\n"),
    autograd_sections: DEVICE_OPS[kind] === null ? referenceAutogradSections() : "",
    partial_dtypes: DEVICE_OPS[kind] === null ? partialDtypesYaml(ops) : "",
  };
}

/** `partial_dtypes:` of the reference backend.yaml for a project listing `ops` (plus the runtime's and autograd's). */
function partialDtypesYaml(ops: readonly string[]): string {
  const ref = referenceYaml();
  const listed = new Set([...ops, ...ref.runtime, ...ref.autograd]);
  const groups = ref.partialDtypes
    .map((g) => ({ dtypes: g.dtypes, ops: g.ops.filter((op) => listed.has(op)) }))
    .filter((g) => g.ops.length > 0);
  if (groups.length === 0) return "";
  const lines = [
    "# Dtypes only some operators take (the reference kernels take complex in",
    "# these alone): `opgen-backend test` runs just these operators in them.",
    "partial_dtypes:",
  ];
  for (const g of groups) {
    lines.push(`  - dtypes: [${g.dtypes.join(", ")}]`, "    ops:", ...g.ops.map((op) => `      - ${op}`));
  }
  return lines.join("\n");
}

/** The repository's scaffolds/ directory (works from src/ under tsx/vitest and from dist/). */
export function scaffoldsRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, "scaffolds");
    if (existsSync(path.join(candidate, "common"))) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error("cannot find the scaffolds/ directory of opgen-backend");
}

/** The repository's backends/ref/ directory, beside scaffolds/. */
export function referenceRoot(): string {
  return path.join(path.dirname(scaffoldsRoot()), "backends", "ref");
}

/** An op-list file of backends/ref (starter-ops.txt, cuda-ops.txt): one operator a line, `#` comments. */
function readOpList(file: string): string[] {
  return readFileSync(path.join(referenceRoot(), file), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith("#"));
}

/** The operators of a kernel set, read from backends/ref (backend.yaml, starter-ops.txt). */
export function referenceOps(set: KernelSet): string[] {
  return set === "starter" ? readOpList("starter-ops.txt") : referenceYaml().supported;
}

/**
 * The reference backend.yaml from its `autograd:` key to the end, with the
 * comment block that introduces it: the sections a project copies as they
 * are (Note [Reference autograd and custom operators] in that file).
 */
export function referenceAutogradSections(): string {
  const lines = readFileSync(path.join(referenceRoot(), "backend.yaml"), "utf8").split("\n");
  let start = lines.findIndex((l) => l.startsWith("autograd:"));
  if (start < 0) return "";
  while (start > 0 && lines[start - 1]!.startsWith("#")) start--;
  return lines.slice(start).join("\n").trimEnd();
}

/** backends/ref/backend.yaml's op lists. */
function referenceYaml(): {
  supported: string[];
  runtime: string[];
  autograd: string[];
  partialDtypes: { dtypes: string[]; ops: string[] }[];
} {
  const yaml = YAML.parse(readFileSync(path.join(referenceRoot(), "backend.yaml"), "utf8")) as {
    supported?: string[];
    runtime?: string[];
    autograd?: (string | { op: string })[];
    partial_dtypes?: { dtypes: string[]; ops: string[] }[];
  };
  return {
    partialDtypes: yaml.partial_dtypes ?? [],
    supported: [...(yaml.supported ?? [])],
    runtime: [...(yaml.runtime ?? [])],
    autograd: (yaml.autograd ?? []).map((e) => (typeof e === "string" ? e : e.op)),
  };
}

/**
 * The operators of a kernel set that a project of `kind` registers: for a
 * kind with its own op list (DEVICE_OPS), those of the set it covers.
 */
export function kernelSetOps(set: KernelSet, kind: DeviceKind): string[] {
  const file = DEVICE_OPS[kind];
  if (file === null) return referenceOps(set);
  // A kind without the autograd: and custom: sections (ScaffoldVars
  // autograd_sections) lists the aten operators of `autograd:` as supported.
  const ops = set === "all" ? [...referenceOps(set), ...referenceYaml().autograd] : referenceOps(set);
  const covered = new Set(readOpList(file));
  return ops.filter((op) => covered.has(op));
}

function walk(root: string, rel = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...walk(root, r));
    else if (entry.isFile()) out.push(r);
  }
  return out;
}

const hbs = Handlebars.create();

function renderTemplate(text: string, vars: ScaffoldVars, where: string): string {
  try {
    // strict: a placeholder with no value is a bug in the scaffold, not an empty string.
    return hbs.compile(text, { noEscape: true, strict: true })(vars);
  } catch (err) {
    throw new Error(`scaffold template ${where}: ${(err as Error).message}`);
  }
}

/** Renders a scaffold in memory: relative output path -> content. */
export function renderScaffold(kind: DeviceKind, vars: ScaffoldVars): Map<string, Buffer | string> {
  const base = path.join(scaffoldsRoot(), "common");
  const files = new Map<string, Buffer | string>();
  for (const rel of walk(base)) {
    const src = path.join(base, rel);
    const isTemplate = rel.endsWith(".hbs");
    const outRel = renderTemplate(isTemplate ? rel.slice(0, -4) : rel, vars, `common/${rel} (path)`);
    files.set(
      outRel,
      isTemplate ? renderTemplate(readFileSync(src, "utf8"), vars, `common/${rel}`) : readFileSync(src),
    );
  }
  const ref = referenceRoot();
  for (const top of REFERENCE_FILES) {
    const abs = path.join(ref, top);
    if (!existsSync(abs)) continue;
    if (statSync(abs).isDirectory()) {
      for (const rel of walk(abs)) {
        if (top === "csrc" && !referenceFileFor(kind, rel)) continue;
        files.set(`${top}/${rel}`, readFileSync(path.join(abs, rel)));
      }
    } else {
      files.set(top, readFileSync(abs));
    }
  }
  return new Map([...files.entries()].sort(([a], [b]) => cmp(a, b)));
}

export function init(dir: string, opts: InitOptions): InitResult {
  const problems: string[] = [];
  const nameProblem = initNameProblem(opts.name);
  if (nameProblem) problems.push(`--name: ${nameProblem}; choose a new lower-case name like mychip`);
  const kind = opts.device ?? "cpu";
  if (!(DEVICE_KINDS as readonly string[]).includes(kind)) {
    problems.push(`--device: "${kind}" is not a device kind; use one of ${DEVICE_KINDS.join(", ")}`);
  }
  const kernels = opts.kernels ?? "starter";
  if (!(KERNEL_SETS as readonly string[]).includes(kernels)) {
    problems.push(`--kernels: "${kernels}" is not a kernel set; use one of ${KERNEL_SETS.join(", ")}`);
  }
  const torchProblem = torchVersionProblem(opts.torchVersion);
  if (torchProblem) problems.push(`--torch-version: ${torchProblem}`);
  const target = path.resolve(dir);
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) {
      problems.push(`${dir} exists and is not a directory; nothing was changed`);
    } else if (readdirSync(target).length > 0 && !opts.force) {
      problems.push(`${dir} is not empty; nothing was changed (use --force to write the scaffold into it anyway)`);
    }
  }
  if (problems.length > 0) {
    throw new UserError(
      problems.length === 1 ? problems[0]! : `init: ${problems.length} problems`,
      problems.length === 1 ? [] : problems.map((message) => ({ severity: "error" as const, message })),
    );
  }
  const vars = scaffoldVars(
    opts.name,
    kind as DeviceKind,
    opts.torchVersion,
    kernelSetOps(kernels as KernelSet, kind as DeviceKind),
  );
  const files = renderScaffold(kind as DeviceKind, vars);
  // See Note [init changes nothing on error].
  writeFiles(
    target,
    [...files].map(([rel, content]) => ({ path: rel, content, createOnly: !opts.force })),
  );
  return { dir: target, files: [...files.keys()], vars };
}
