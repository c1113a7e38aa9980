/**
 * Translates a built OperatorCatalog to and from a JSON snapshot, so that a
 * caller that opts in (loadCatalog's `cacheDir`) pays for parsing
 * native_functions.yaml once per torch rather than once per process.
 *
 * Why: building the catalog is ~3,000 schema parses and groupings that run
 * while V8 is still cold; JSON.parse of the finished objects is native code
 * and several times cheaper. The snapshot is keyed by the SHA-256 of the YAML
 * texts it was built from plus SNAPSHOT_VERSION (bump it whenever the model's
 * types or derivations change), so a changed torch or a newer opgen-backend
 * never reads a stale one. Writing is atomic (temp file + rename); any I/O
 * failure just means no snapshot.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { NativeFunction, NativeFunctionsGroup, TagInfo } from "./types.js";

export const SNAPSHOT_VERSION = 1;

export interface SnapshotData {
  readonly functions: readonly NativeFunction[];
  readonly groups: readonly (NativeFunctionsGroup | NativeFunction)[];
  readonly tags: readonly TagInfo[];
}

interface SnapshotFile {
  readonly version: number;
  readonly functions: NativeFunction[];
  /** Indices into functions: a number (ungrouped) or [functional, inplace, mutable, out] (-1 for none). */
  readonly groups: (number | [number, number, number, number])[];
  readonly tags: TagInfo[];
}

export function snapshotPath(cacheDir: string, nativeFunctionsText: string, tagsText: string): string {
  const h = createHash("sha256")
    .update(`opgen-backend catalog v${SNAPSHOT_VERSION}\0`)
    .update(nativeFunctionsText)
    .update("\0")
    .update(tagsText)
    .digest("hex");
  return path.join(cacheDir, `catalog-${h.slice(0, 32)}.json`);
}

export function readSnapshot(file: string): SnapshotData | null {
  let raw: SnapshotFile;
  try {
    raw = JSON.parse(readFileSync(file, "utf8")) as SnapshotFile;
  } catch {
    return null;
  }
  if (raw.version !== SNAPSHOT_VERSION || !Array.isArray(raw.functions) || !Array.isArray(raw.groups)) return null;
  const fns = raw.functions;
  const at = (i: number) => (i < 0 ? null : (fns[i] ?? null));
  const groups: (NativeFunctionsGroup | NativeFunction)[] = [];
  for (const g of raw.groups) {
    if (typeof g === "number") {
      const f = fns[g];
      if (!f) return null;
      groups.push(f);
    } else {
      const functional = at(g[0]);
      const out = at(g[3]);
      if (!functional || !out) return null;
      groups.push({ functional, inplace: at(g[1]), mutable: at(g[2]), out, structured: out.structured });
    }
  }
  return { functions: fns, groups, tags: raw.tags };
}

export function writeSnapshot(file: string, data: SnapshotData): void {
  const index = new Map<NativeFunction, number>();
  data.functions.forEach((f, i) => {
    index.set(f, i);
  });
  const ix = (f: NativeFunction | null) => (f ? index.get(f)! : -1);
  const body: SnapshotFile = {
    version: SNAPSHOT_VERSION,
    functions: [...data.functions],
    groups: data.groups.map((g) => ("func" in g ? ix(g) : [ix(g.functional), ix(g.inplace), ix(g.mutable), ix(g.out)])),
    tags: [...data.tags],
  };
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(body));
    renameSync(tmp, file);
  } catch {
    // A cache that cannot be written is only a slower next run.
  }
}
