/**
 * Translates derivatives.yaml into "which operators have autograd formulas,
 * for which inputs": one DerivativeInfo per `- name:` entry, keyed by the full
 * operator name of its schema. src/yaml/derivatives.ts reads the entries
 * (names and keys; the C++ formulas are never needed). The catalog reads this
 * file only when someone asks.
 */
import { readFileSync } from "node:fs";
import { scanDerivativeNames, scanDerivatives } from "../yaml/derivatives.js";
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

/**
 * Note [Formula names first]: every gen prints where each served overload's
 * gradient comes from (src/dest/gradients.ts), which needs only which
 * operators derivatives.yaml names; the entries themselves (inputs, output
 * differentiability) are needed only for `autograd:` entries that get a
 * Function. So the file is read once, when first asked for, and its names
 * come from a scan of the `- name:` lines alone unless the entries were
 * already read. bench/micro-optimizations.md has the cost of each.
 */
export class Formulas {
  private text: string | null = null;
  private entries: Map<string, DerivativeInfo> | null = null;
  private nameSet: ReadonlySet<string> | null = null;
  constructor(private readonly file: string) {}

  private read(): string {
    this.text ??= readFileSync(this.file, "utf8");
    return this.text;
  }

  get derivatives(): ReadonlyMap<string, DerivativeInfo> {
    this.entries ??= parseDerivativesYaml(this.read(), this.file);
    return this.entries;
  }

  get names(): ReadonlySet<string> {
    this.nameSet ??= this.entries ? new Set(this.entries.keys()) : scanDerivativeNames(this.read());
    return this.nameSet;
  }
}
