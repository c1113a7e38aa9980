/**
 * Which operators and dtypes a run covers: the op manifest (docs/INTERFACES.md)
 * filtered by `--ops` globs and `--core`, dtypes from the manifest's claims
 * narrowed by `--dtypes`, then `--shard i/n`.
 *
 * Note [Deterministic shards]: shards partition the *sorted* selected ops
 * round-robin (op j goes to shard j mod n), so every machine of a CI matrix
 * computes the same partition from the same manifest and flags, the shards
 * never overlap, and together they cover the unsharded selection exactly.
 * An op's dtypes all stay in one shard, which keeps "passes on every claimed
 * dtype" computable per shard.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "../util/errors.js";
import { cmp } from "../vocab.js";
import { globMatch } from "./expectations.js";
import { DEFAULT_DTYPES, DTYPE_ORDER, OP_KINDS, type OpKind, type OpUnderTest } from "./types.js";

export interface ManifestOp {
  readonly name: string;
  readonly kind?: string;
  readonly core?: boolean;
  readonly view?: boolean;
  readonly dtypes?: readonly string[];
  readonly served_by?: string;
}

export interface OpManifest {
  readonly device: string;
  readonly python_package: string;
  readonly torch_version?: string;
  /** How many overloads of the torch it was made for are tagged `core` (absent in older manifests). */
  readonly core_total?: number;
  readonly dtypes?: readonly string[];
  /** Note [Partial dtypes] (src/backend/keys/dtypes.ts): dtype -> the ops that claim it besides `dtypes`. */
  readonly partial_dtypes?: Readonly<Record<string, readonly string[]>>;
  readonly operators: readonly ManifestOp[];
}

export function readManifest(file: string): OpManifest {
  if (!existsSync(file)) {
    throw new UserError(
      `no op manifest at ${file}; run \`opgen-backend gen\` or \`opgen-backend build\` first, or pass --manifest`,
    );
  }
  let m: OpManifest;
  try {
    m = JSON.parse(readFileSync(file, "utf8")) as OpManifest;
  } catch (e) {
    throw new UserError(`${file}: not valid JSON (${(e as Error).message}); regenerate it with \`opgen-backend gen\``);
  }
  if (!m || typeof m.device !== "string" || !Array.isArray(m.operators)) {
    throw new UserError(
      `${file}: not an op manifest (needs "device" and "operators"); regenerate it with \`opgen-backend gen\``,
    );
  }
  return m;
}

/**
 * The op manifest of the project a check module runs on (--manifest, else
 * the project's csrc/generated/op_manifest.json) and the arguments naming its
 * package and device (`--package P --device D`), as the custom-operator and
 * distributed checks pass them to `python -m opgen_conformance...`.
 */
export function projectTarget(projectDir: string, manifest?: string): { manifest: OpManifest; args: string[] } {
  const m = readManifest(
    path.resolve(manifest ?? path.join(path.resolve(projectDir), "csrc", "generated", "op_manifest.json")),
  );
  return { manifest: m, args: ["--package", m.python_package, "--device", m.device] };
}

export interface Shard {
  /** 1-based */
  readonly index: number;
  readonly count: number;
}

export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m ? Number(m[1]) : Number.NaN;
  const count = m ? Number(m[2]) : Number.NaN;
  if (!m || count < 1 || index < 1 || index > count) {
    throw new UserError(`--shard ${text}: expected i/n with 1 <= i <= n, e.g. --shard 1/4`);
  }
  return { index, count };
}

export function parseDtypes(text: string): string[] {
  const list = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const bad = list.filter((d) => !(DTYPE_ORDER as readonly string[]).includes(d));
  if (bad.length > 0 || list.length === 0) {
    throw new UserError(
      `--dtypes ${text}: unknown dtype ${bad.join(", ") || "(none)"}; allowed: ${DTYPE_ORDER.join(", ")}`,
    );
  }
  return list;
}

const GiB = 2 ** 30;
const UNITS: Readonly<Record<string, number>> = { K: 2 ** 10, M: 2 ** 20, G: GiB, T: 2 ** 40 };
/** Below this a worker cannot import torch and OpInfo (~0.35 GB) and still run samples. */
export const MIN_WORKER_MEMORY = GiB;

/**
 * `--worker-memory`: `4G`, `512M`, `1.5G` (binary units; a trailing `B`/`iB`
 * is allowed), or `off` -> bytes, null for no limit. Note [Worker memory
 * limit] in python/opgen_conformance/worker.py says what the limit does.
 */
export function parseMemorySize(text: string): number | null {
  const t = text.trim();
  if (t.toLowerCase() === "off") return null;
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT])(?:i?B)?$/i.exec(t);
  const bytes = m ? Math.floor(Number(m[1]) * UNITS[m[2]!.toUpperCase()]!) : Number.NaN;
  if (!m || !(bytes >= MIN_WORKER_MEMORY)) {
    const why = m ? `is less than the 1G a worker needs to import torch and OpInfo` : "is not a size";
    throw new UserError(`--worker-memory ${text}: ${why}; write a size like 4G or 512M (at least 1G), or off`);
  }
  return bytes;
}

/** The default limit: three quarters of the machine's memory, shared among the workers (at least 1G each). */
export function defaultWorkerMemory(totalBytes: number, workers: number): number {
  return Math.max(MIN_WORKER_MEMORY, Math.floor((totalBytes * 0.75) / Math.max(1, workers)));
}

/** `--ops` may repeat and hold comma-separated globs. */
export function parseOpGlobs(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(","))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export interface OpInfo {
  readonly exists: boolean;
  readonly kind: OpKind;
  readonly core: boolean;
  readonly view: boolean;
}

export interface Selection {
  readonly globs?: readonly string[];
  readonly core?: boolean;
  readonly dtypes?: readonly string[];
  readonly shard?: Shard;
}

/**
 * The ops under test. `info` fills what a manifest leaves out (kind, core,
 * view, from the schema); the manifest wins where it speaks.
 */
export function selectOps(
  manifest: OpManifest,
  info: Readonly<Record<string, OpInfo>>,
  sel: Selection,
): { readonly ops: OpUnderTest[]; readonly unmatched: string[] } {
  const globs = sel.globs ?? [];
  const claimed = manifest.dtypes;
  const partial = Object.entries(manifest.partial_dtypes ?? {});
  const anyClaim = (d: string) => claimed?.includes(d) || partial.some(([p]) => p === d);
  if (sel.dtypes && claimed && !sel.dtypes.some(anyClaim)) {
    throw new UserError(
      `--dtypes ${sel.dtypes.join(",")}: the backend claims none of these; its backend.yaml dtypes: are ${claimed.join(", ")}` +
        (partial.length > 0 ? `, and partial_dtypes: ${partial.map(([p]) => p).join(", ")} for some ops` : ""),
    );
  }
  const used = new Set<string>();
  const names = [...new Set(manifest.operators.map((o) => o.name))].sort();
  const byName = new Map(manifest.operators.map((o) => [o.name, o]));
  const picked: OpUnderTest[] = [];
  for (const name of names) {
    const m = byName.get(name)!;
    const i = info[name];
    if (i && !i.exists) continue;
    if (globs.length > 0) {
      const hit = globs.filter((g) => globMatch(g, name));
      if (hit.length === 0) continue;
      for (const g of hit) used.add(g);
    }
    const kind = (OP_KINDS as readonly string[]).includes(m.kind ?? "")
      ? (m.kind as OpKind)
      : (i?.kind ?? "functional");
    const core = m.core ?? i?.core ?? false;
    if (sel.core && !core) continue;
    // An op's own claims narrow the backend's (backend.yaml `dtypes:`, and the
    // partial_dtypes: that list it), never widen them.
    const own = partial.filter(([, ops]) => ops.includes(name)).map(([d]) => d);
    const base = claimed ?? (own.length > 0 ? DEFAULT_DTYPES : undefined);
    const backend = base && own.length > 0 ? DTYPE_ORDER.filter((d) => base.includes(d) || own.includes(d)) : base;
    let dtypes = [...(m.dtypes ?? backend ?? sel.dtypes ?? DEFAULT_DTYPES)];
    if (m.dtypes && backend) dtypes = dtypes.filter((d) => backend.includes(d));
    if (sel.dtypes) dtypes = dtypes.filter((d) => sel.dtypes!.includes(d));
    if (dtypes.length === 0) continue;
    picked.push({ op: name, kind, core, view: m.view ?? i?.view ?? false, dtypes });
  }
  const unmatched = globs.filter((g) => !used.has(g));
  return { ops: shardOps(picked, sel.shard), unmatched };
}

/** Note [Deterministic shards]. */
export function shardOps<T extends { readonly op: string }>(ops: readonly T[], shard?: Shard): T[] {
  const sorted = [...ops].sort((a, b) => cmp(a.op, b.op));
  if (!shard) return sorted;
  return sorted.filter((_, j) => j % shard.count === shard.index - 1);
}
