/**
 * Translates derivatives.yaml into "which operators have autograd formulas,
 * for which inputs": one DerivativeInfo per `- name:` entry, keyed by the full
 * operator name of its schema. src/yaml/derivatives.ts reads the entries
 * (names and keys; the C++ formulas are never needed). The catalog reads this
 * file only when someone asks.
 */
import { scanDerivatives } from "../yaml/derivatives.js";
import type { DerivativeInfo } from "./types.js";

// Keys of an entry that are not input names (load_derivatives.py).
const NON_INPUT_KEYS: ReadonlySet<string> = new Set(["name", "dispatch", "output_differentiability"]);
const RESULT_RE = /^result[0-9]*$/;

export function parseDerivativesYaml(text: string, file: string): Map<string, DerivativeInfo> {
  const out = new Map<string, DerivativeInfo>();
  for (const e of scanDerivatives(text)) {
    const paren = e.name.indexOf("(");
    const opName = (paren < 0 ? e.name : e.name.slice(0, paren)).trim();
    const diff: string[] = [];
    for (const key of e.keys) {
      for (const k of key.split(", ")) {
        if (NON_INPUT_KEYS.has(k) || RESULT_RE.test(k)) continue;
        if (!diff.includes(k)) diff.push(k);
      }
    }
    out.set(opName, {
      name: e.name,
      loc: { file, line: e.line },
      differentiable: diff,
      // A condition (a C++ expression in quotes) may hold at run time: differentiable.
      outputDifferentiability: e.outputDifferentiability?.map((x) => x !== "False") ?? null,
    });
  }
  return out;
}
