/** `non_native:`: gen_lazy_tensor's entries (func: a schema, properties:, opkind:), checked and kept. */
import { parseSchema, SchemaParseError } from "../../model/schema.js";
import { isAlias, isMap, isScalar, isSeq } from "../../yaml/tree.js";
import { cppNamespaceProblem, q } from "../names.js";
import { didYouMean } from "../suggest.js";
import type { NonNativeEntry } from "../types.js";
import { describe, isNullScalar, type KeyContext } from "./context.js";

/** gen_lazy_tensor's LazyIrProperties names, the only values `non_native[].properties` may hold. */
const LAZY_IR_PROPERTIES: readonly string[] = [
  "ShapePrecompute",
  "ShapeCompute",
  "ShapeCache",
  "Lower",
  "LowerDeclOnly",
  "CanBeReused",
  "CanBeReusedDeclOnly",
  "CreateFn",
  "CreateFnDeclOnly",
  "TreatScalarsAsConstants",
];

export function readNonNative(cx: KeyContext, node: unknown): NonNativeEntry[] {
  if (isNullScalar(node) || isAlias(node)) return [];
  if (!isSeq(node)) {
    cx.error(
      cx.locOf(node),
      `non_native is ${describe(node)}; it must be a list of mappings with func: and properties:`,
    );
    return [];
  }
  const out: NonNativeEntry[] = [];
  for (const item of node.items) {
    if (isAlias(item)) continue;
    const loc = cx.locOf(item);
    if (!isMap(item)) {
      cx.error(
        loc,
        `non_native entry is ${describe(item)}; it must be a mapping with func: (a schema) and properties:`,
      );
      continue;
    }
    let func: string | null = null;
    let properties: string[] = [];
    let opkind: string | null = null;
    const seen = new Set<string>();
    for (const p of item.items) {
      const k = p.key;
      if (!isScalar(k) || typeof k.value !== "string") {
        cx.error(cx.locOf(k), `non_native key is ${describe(k)}; keys are func, properties, opkind`);
        continue;
      }
      if (seen.has(k.value)) {
        cx.error(cx.locOf(k), `duplicate key ${q(k.value)} in a non_native entry; each key may appear once`);
        continue;
      }
      seen.add(k.value);
      switch (k.value) {
        case "func": {
          const s = cx.readString("non_native func", p.value);
          if (s.kind === "absent") cx.error(cx.locOf(k), "non_native func is empty; give the operator schema");
          if (s.kind === "ok") {
            try {
              parseSchema(s.value);
              func = s.value;
            } catch (e) {
              if (!(e instanceof SchemaParseError)) throw e;
              cx.error(
                cx.locOf(p.value),
                `non_native func is not a valid schema: ${e.reason} (column ${e.col}); write it as in native_functions.yaml`,
              );
            }
          }
          break;
        }
        case "properties":
          properties = readProperties(cx, p.value);
          break;
        case "opkind": {
          const s = cx.readString("non_native opkind", p.value);
          if (s.kind === "ok") {
            const why = cppNamespaceProblem(s.value);
            if (why) cx.error(cx.locOf(p.value), `non_native opkind ${why}; it must be a C++ name like ltc_cast`);
            else opkind = s.value;
          }
          break;
        }
        default: {
          const hint = didYouMean(k.value, ["func", "properties", "opkind"], 1);
          cx.error(
            cx.locOf(k),
            `unknown non_native key ${q(k.value)}${hint}${hint ? " " : "; "}allowed: func, properties, opkind`,
          );
        }
      }
    }
    if (func === null) {
      if (!seen.has("func")) cx.error(loc, "non_native entry has no func:; give the operator schema");
      continue;
    }
    out.push({ func, properties, opkind, loc });
  }
  return out;
}

export function readProperties(cx: KeyContext, node: unknown): string[] {
  if (isNullScalar(node)) return [];
  if (!isSeq(node)) {
    cx.error(
      cx.locOf(node),
      `non_native properties is ${describe(node)}; it must be a list of: ${LAZY_IR_PROPERTIES.join(", ")}`,
    );
    return [];
  }
  const out: string[] = [];
  for (const it of node.items) {
    if (isScalar(it) && typeof it.value === "string" && LAZY_IR_PROPERTIES.includes(it.value)) out.push(it.value);
    else if (!isAlias(it)) {
      const hint = isScalar(it) && typeof it.value === "string" ? didYouMean(it.value, LAZY_IR_PROPERTIES, 1) : "";
      cx.error(
        cx.locOf(it),
        `non_native property is ${describe(it)}${hint}${hint ? " " : "; "}allowed: ${LAZY_IR_PROPERTIES.join(", ")}`,
      );
    }
  }
  return out;
}
