/** `dtypes:`: the dtypes the device supports, as torch names them (DTYPES). */
import type { SourceLoc } from "../../util/errors.js";
import { isAlias, isMap, isSeq } from "../../yaml/tree.js";
import { q } from "../names.js";
import { didYouMean } from "../suggest.js";
import { DTYPE_ALIASES, DTYPES, type Dtype } from "../types.js";
import { describe, isNullScalar, type KeyContext, pyyamlString } from "./context.js";

/** `dtypes:` a list of torch dtype names (DTYPES); null when absent. */
export function readDtypes(cx: KeyContext, node: unknown): Dtype[] | null {
  if (isNullScalar(node) || isAlias(node)) return null;
  const allowed = `allowed: ${DTYPES.join(", ")}`;
  if (!isSeq(node)) {
    cx.error(cx.locOf(node), `dtypes is ${describe(node)}; it must be a list of dtype names (${allowed})`);
    return null;
  }
  const seen = new Map<Dtype, SourceLoc>();
  let bad = false;
  for (const item of node.items) {
    if (isAlias(item)) continue;
    const loc = cx.locOf(item);
    const raw = pyyamlString(item);
    if (raw === null) {
      cx.error(loc, `dtypes entry is ${describe(item)}; entries are dtype names like float32 (${allowed})`);
      bad = true;
      continue;
    }
    const bare = raw.startsWith("torch.") ? raw.slice("torch.".length) : raw;
    const known = DTYPES.find((d) => d === bare);
    if (!known) {
      const alias = DTYPE_ALIASES[bare];
      const hint = alias
        ? `; torch.${bare} is written ${alias} here`
        : didYouMean(bare, DTYPES) || "; the conformance runner has samples only for these";
      cx.error(loc, `dtypes entry ${q(raw)} is not a dtype we can test${hint} (${allowed})`);
      bad = true;
      continue;
    }
    if (bare !== raw) {
      cx.error(loc, `dtypes entry ${q(raw)}: write ${known}, without torch.`);
      bad = true;
      continue;
    }
    const prev = seen.get(known);
    if (prev) {
      cx.warn(
        loc,
        `${known} is listed twice in dtypes (at ${prev.line}:${prev.col} and ${loc.line}:${loc.col}); the second entry is ignored`,
      );
      continue;
    }
    seen.set(known, loc);
  }
  if (seen.size === 0 && !bad) {
    cx.error(
      cx.locOf(node),
      `dtypes is empty; list the dtypes your device supports, or leave the key out (${allowed})`,
    );
  }
  return DTYPES.filter((d) => seen.has(d));
}

/**
 * `partial_dtypes:` Note [Partial dtypes]: dtypes some operators take and
 * others not (the reference device's complex64/complex128), each group a
 * mapping `{dtypes: [...], ops: [...]}`: the listed ops claim the listed
 * dtypes on top of `dtypes:`, which every op claims. So `test` runs an op
 * in exactly what it claims, and a dtype an op does not take is not a
 * failure of that op. A dtype here must not be in `dtypes:` (every op
 * claims those); an op must be one the YAML lists. Result: dtype -> its
 * ops, sorted, in DTYPES order; empty when absent.
 */
export function readPartialDtypes(
  cx: KeyContext,
  node: unknown,
  everywhere: readonly Dtype[] | null,
  listed: ReadonlySet<string>,
): ReadonlyMap<Dtype, readonly string[]> {
  const found = new Map<Dtype, Set<string>>();
  if (isNullScalar(node) || isAlias(node)) return new Map();
  const shape = "a list of mappings {dtypes: [dtype, ...], ops: [operator, ...]}";
  if (!isSeq(node)) {
    cx.error(cx.locOf(node), `partial_dtypes is ${describe(node)}; it must be ${shape}`);
    return new Map();
  }
  for (const group of node.items) {
    if (isAlias(group)) continue;
    if (!isMap(group)) {
      cx.error(
        cx.locOf(group),
        `partial_dtypes entry is ${describe(group)}; entries are mappings {dtypes: [...], ops: [...]}`,
      );
      continue;
    }
    let dtypes: Dtype[] | null = null;
    let ops: string[] = [];
    let opsNode: unknown = null;
    for (const p of group.items) {
      const key = pyyamlString(p.key);
      if (key === "dtypes") {
        dtypes = readDtypes(cx, p.value);
        for (const d of dtypes ?? []) {
          if (everywhere?.includes(d)) {
            cx.error(
              cx.locOf(p.value),
              `partial_dtypes: ${d} is in dtypes: already, which every operator claims; list it in one of the two`,
            );
          }
        }
      } else if (key === "ops") {
        opsNode = p.value;
        ops = readOpNames(cx, p.value, listed);
      } else {
        cx.error(cx.locOf(p.key), `partial_dtypes entry has key ${q(key ?? describe(p.key))}; allowed: dtypes, ops`);
      }
    }
    if (dtypes === null || opsNode === null) {
      cx.error(cx.locOf(group), "partial_dtypes entry needs both dtypes: and ops:");
      continue;
    }
    for (const d of dtypes) {
      const set = found.get(d) ?? new Set<string>();
      for (const o of ops) set.add(o);
      found.set(d, set);
    }
  }
  return new Map(DTYPES.filter((d) => found.has(d)).map((d) => [d, [...found.get(d)!].sort()]));
}

function readOpNames(cx: KeyContext, node: unknown, listed: ReadonlySet<string>): string[] {
  if (!isSeq(node)) {
    cx.error(cx.locOf(node), `partial_dtypes ops is ${describe(node)}; it must be a list of operator names`);
    return [];
  }
  const names: string[] = [];
  for (const item of node.items) {
    if (isAlias(item)) continue;
    const raw = pyyamlString(item);
    if (raw === null) {
      cx.error(
        cx.locOf(item),
        `partial_dtypes ops entry is ${describe(item)}; entries are operator names like add.Tensor`,
      );
    } else if (!listed.has(raw)) {
      cx.error(
        cx.locOf(item),
        `partial_dtypes ops entry ${q(raw)} is not an operator this YAML lists${didYouMean(raw, [...listed])}`,
      );
    } else {
      names.push(raw);
    }
  }
  return names;
}
