/**
 * `opgen-backend upgrade --apply`: what moving the project's torch pins
 * writes, decided before anything is written (the CLI then regenerates
 * through runGen, the service `gen` and `build` use).
 *
 * Note [Files init owns]: the pins (Note [Pinned torch] in
 * src/scaffold/init.ts) are in files `init` rendered from scaffolds/ and a
 * person may edit afterwards (pyproject.toml, the CI workflow, the README).
 * Which files carry the pin is not a list kept here: it is the files whose
 * rendering changes with `torch_version` (render at the old pin and at the
 * new one, compare). Such a file is moved only while its content is still
 * exactly what init renders for this project at the old pin (its name from
 * the manifest, its device kind and opgen-backend version tried in turn); it
 * is then replaced by what init renders at the new pin, so the next upgrade
 * recognises it again. A file a person changed is left as it is and its pin
 * lines are reported for them to move. setup.py carries no pin of its own: it
 * reads pyproject.toml's, and checks the manifest's torch, which gen rewrites.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Manifest } from "../dest/manifest.js";
import type { Plan } from "../dest/plan.js";
import { kernelStubs } from "../impl/kernels.js";
import { unambiguousName } from "../model/catalog.js";
import { DEVICE_KINDS, type DeviceKind, renderScaffold, scaffoldVars } from "../scaffold/init.js";
import type { OutputFile } from "../write/files.js";

export interface PinPlan {
  /** Files init owns, still as it wrote them, with the pin moved: write these. */
  readonly move: readonly OutputFile[];
  /** Pin-carrying files a person changed since init: left alone; their pin lines (1-based). */
  readonly kept: readonly { readonly path: string; readonly lines: readonly number[] }[];
  /** The device kind whose scaffold the project matched, or null when none of its pin files did. */
  readonly kind: DeviceKind | null;
}

const text = (c: Buffer | string) => (typeof c === "string" ? c : c.toString("utf8"));

function readOrNull(file: string): string | null {
  return existsSync(file) ? readFileSync(file, "utf8") : null;
}

/** The opgen-backend version the project's CI installs (`opgen-backend@X`), if it says. */
function opgenVersionOf(dir: string): string | null {
  const ci = readOrNull(path.join(dir, ".github", "workflows", "ci.yml"));
  return ci ? (/opgen-backend@([\w.+-]+)/.exec(ci)?.[1] ?? null) : null;
}

/** Lines of `content` that pin a torch other than `to` (1-based): the pin, or an older one never moved. */
function pinLines(content: string, to: string): number[] {
  return content.split("\n").flatMap((l, i) => {
    const pins = [...l.matchAll(/torch(?:==| )(\d+\.\d+\.\d+)\b/g)].map((m) => m[1]);
    return pins.some((v) => v !== to) ? [i + 1] : [];
  });
}

/**
 * The pin moves for project `dir` from torch `from` to `to` (releases,
 * `x.y.z`). Pure but for reading the project's files.
 */
export function planPins(dir: string, manifest: Manifest, from: string, to: string): PinPlan {
  if (from === to) return { move: [], kept: [], kind: null };
  const name = manifest.device;
  const versions = [...new Set([opgenVersionOf(dir), scaffoldVars(name, "cpu", from).opgen_version])].filter(
    (v): v is string => v !== null,
  );
  // Every (kind, opgen version) init could have used; the one whose pin files match most is this project's.
  let best: { kind: DeviceKind; opgen: string; own: Set<string>; carriers: string[] } | null = null;
  for (const kind of DEVICE_KINDS) {
    for (const opgen of versions) {
      const vars = (v: string) => ({ ...scaffoldVars(name, kind, v), opgen_version: opgen });
      const before = renderScaffold(kind, vars(from));
      const after = renderScaffold(kind, vars(to));
      const carriers = [...before.keys()].filter((p) => text(before.get(p)!) !== text(after.get(p) ?? ""));
      const own = new Set(carriers.filter((p) => readOrNull(path.join(dir, p)) === text(before.get(p)!)));
      if (!best || own.size > best.own.size) best = { kind, opgen, own, carriers };
    }
  }
  if (!best) return { move: [], kept: [], kind: null };
  const { kind, opgen, own, carriers } = best;
  const after = renderScaffold(kind, { ...scaffoldVars(name, kind, to), opgen_version: opgen });
  const move: OutputFile[] = [];
  const kept: { path: string; lines: number[] }[] = [];
  for (const p of carriers) {
    const now = readOrNull(path.join(dir, p));
    if (now === null) continue; // removed by a person: nothing to move
    if (own.has(p)) move.push({ path: p, content: text(after.get(p)!) });
    else {
      const lines = pinLines(now, to);
      if (lines.length) kept.push({ path: p, lines });
    }
  }
  return { move, kept, kind: own.size ? kind : null };
}

/**
 * `gen --stubs` (kernelStubs, create-only) for the kernels the target's plan
 * declares that no kernel served in the manifest: what the new torch adds.
 * Never for a kernel whose signature changed: its definition exists, and the
 * report names it as a break for a person to fix.
 */
export function newKernelStubs(plan: Plan, manifest: Manifest, existingDirs: readonly string[]): OutputFile[] {
  const had = new Set(
    manifest.operators.filter((o) => o.served_by === "kernel" || o.served_by === "autograd").map((o) => o.name),
  );
  const fresh = new Set(
    [...plan.backend.kernels, ...(plan.autograd?.kernels ?? [])]
      .filter((k) => !had.has(k.entry.name))
      .map((k) => `${unambiguousName(k.entry.fn.func.name)}.cpp`),
  );
  return kernelStubs(plan, { existingDirs }).filter((f) => fresh.has(f.path));
}
