/**
 * derivatives.yaml's entry reader: for each `- name:` entry, the schema it
 * names, its line, its top-level keys as written (`self, other`, `result`,
 * `output_differentiability`) and the items of its output_differentiability
 * flow list. src/model/derivatives.ts gives them their meaning.
 *
 * The formulas (the values) are never needed, so a line scan does it: a
 * formula may span lines (multi-line plain and quoted scalars), but a
 * continuation line is always indented deeper than the two spaces of an
 * entry's own keys. An integration test checks the result against the `yaml`
 * package.
 */

export interface DerivativesEntry {
  /** The `name:` value (a schema), trailing comment dropped. */
  readonly name: string;
  /** 1-based line of `- name:`. */
  readonly line: number;
  /** The entry's keys after `name`, as written (a key may list several names: `self, other`). */
  readonly keys: readonly string[];
  /** `output_differentiability: [...]`'s items as written, trimmed; null when the entry has none. */
  readonly outputDifferentiability: readonly string[] | null;
}

const KEY_RE = /^ {2}([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*):(?: |$)/;
// `  output_differentiability: [True, False]` (one flow list on one line in torch's file; an item may
// be a quoted condition, which has no comma).
const OUTPUT_DIFF_RE = /^ {2}output_differentiability: \[([^\]]*)\]/;

export function scanDerivatives(text: string): DerivativesEntry[] {
  const out: DerivativesEntry[] = [];
  const lines = text.split(/\r?\n/);
  let cur: { name: string; line: number; keys: string[]; outs: string[] | null } | null = null;
  const flush = () => {
    if (cur) out.push({ name: cur.name, line: cur.line, keys: cur.keys, outputDifferentiability: cur.outs });
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
        keys: [],
        outs: null,
      };
      continue;
    }
    if (!cur) continue;
    const od = OUTPUT_DIFF_RE.exec(l);
    if (od) cur.outs = od[1]!.split(",").map((x) => x.trim());
    const m = KEY_RE.exec(l);
    if (m) cur.keys.push(m[1]!);
  }
  flush();
  return out;
}
