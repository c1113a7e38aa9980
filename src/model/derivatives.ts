/**
 * Translates derivatives.yaml into "which operators have autograd formulas,
 * for which inputs": one DerivativeInfo per `- name:` entry, keyed by the full
 * operator name of its schema.
 *
 * We only need the entry names and the top-level keys, not the C++ formulas,
 * so a line scan does it: formulas may span lines (multi-line plain and
 * quoted scalars), but a continuation line is always indented deeper than
 * the two spaces of an entry's own keys. An integration test checks the
 * result against the `yaml` package. The catalog reads this file only when
 * someone asks (it is not on `gen`'s hot path).
 */
import type { DerivativeInfo } from "./types.js";

const KEY_RE = /^ {2}([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*):(?: |$)/;
// Keys of an entry that are not input names (load_derivatives.py).
const NON_INPUT_KEYS: ReadonlySet<string> = new Set(["name", "dispatch", "output_differentiability"]);
const RESULT_RE = /^result[0-9]*$/;
// `  output_differentiability: [True, False]` (one flow list on one line in torch's file; an entry may
// be a quoted condition, which has no comma).
const OUTPUT_DIFF_RE = /^ {2}output_differentiability: \[([^\]]*)\]/;

export function parseDerivativesYaml(text: string, file: string): Map<string, DerivativeInfo> {
  const out = new Map<string, DerivativeInfo>();
  const lines = text.split("\n");
  let cur: { name: string; line: number; diff: string[]; outs: boolean[] | null } | null = null;
  const flush = () => {
    if (!cur) return;
    const paren = cur.name.indexOf("(");
    const opName = (paren < 0 ? cur.name : cur.name.slice(0, paren)).trim();
    out.set(opName, {
      name: cur.name,
      loc: { file, line: cur.line },
      differentiable: cur.diff,
      outputDifferentiability: cur.outs,
    });
    cur = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.startsWith("- name:")) {
      flush();
      cur = {
        name: l
          .slice("- name:".length)
          .replace(/\s+#.*$/, "")
          .trim(),
        line: i + 1,
        diff: [],
        outs: null,
      };
      continue;
    }
    if (!cur) continue;
    const od = OUTPUT_DIFF_RE.exec(l);
    // A condition (a C++ expression in quotes) may hold at run time: differentiable.
    if (od) cur.outs = od[1]!.split(",").map((x) => x.trim() !== "False");
    const m = KEY_RE.exec(l);
    if (!m) continue;
    for (const k of m[1]!.split(", ")) {
      if (NON_INPUT_KEYS.has(k) || RESULT_RE.test(k)) continue;
      if (!cur.diff.includes(k)) cur.diff.push(k);
    }
  }
  flush();
  return out;
}
