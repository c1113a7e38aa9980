/** `dtypes:`: the dtypes the device supports, as torch names them (DTYPES). */
import type { SourceLoc } from "../../util/errors.js";
import { isAlias, isSeq } from "../../yaml/tree.js";
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
