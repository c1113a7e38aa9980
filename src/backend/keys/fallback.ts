/** `fallback:`: what an operator without a kernel does (cpu, or none: it raises). */
import { q } from "../names.js";
import { FALLBACK_POLICIES, type FallbackPolicy } from "../types.js";
import type { KeyContext } from "./context.js";

export function readFallback(cx: KeyContext, node: unknown): FallbackPolicy {
  const read = cx.readString("fallback", node);
  if (read.kind !== "ok") return "cpu";
  const raw = read.value;
  const found = FALLBACK_POLICIES.find((p) => p === raw);
  if (found) return found;
  cx.error(cx.locOf(node), `fallback ${q(raw)} is not a fallback policy; use ${FALLBACK_POLICIES.join(" or ")}`);
  return "cpu";
}
