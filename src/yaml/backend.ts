/**
 * A fast path for the shape almost every backend YAML has: top-level
 * `key: word` lines, and `key:` followed by `- word` lines, with comments.
 * It yields the same tree (tree.ts), with the same offsets, that load.ts
 * builds from the `yaml` package's parse, so one set of checks reads both.
 *
 * Why: `gen` runs cold, and cold the `yaml` package's import and parse of a
 * YAML listing every operator would be most of `gen`'s time (Note [Cold
 * start], bench/cold-load.mjs). Anything outside its narrow
 * subset (quotes, flow collections, anchors, tags, tabs, nested mappings,
 * words YAML 1.1 reads as null or as y/n booleans, ...) makes it give up, and
 * the `yaml` package reads the file. A unit test checks that both paths give
 * identical results on every test input.
 */
import { assertNever } from "../util/errors.js";
import { yamlBool } from "./scalars.js";
import type { YMap, YNode, YPair, YScalar, YSeq } from "./tree.js";

const KEY = /^([A-Za-z_][A-Za-z0-9_]*):(.*)$/;
const ITEM = /^( *)- (.*)$/;
// A plain scalar that YAML reads as a string, unless it is one of the special
// words below: starts with a letter or _, no spaces, no indicator characters;
// `::` inside is fine (`at::mychip`).
const WORD = /^[A-Za-z_][A-Za-z0-9_.:]*$/;
// Other words the YAML 1.1 schema treats specially: leave them to the parser.
const SPECIAL = /^(?:y|n|yes|no|true|false|on|off|null)$/i;

/** Mutable while being built; handed out as the readonly tree.ts types. */
type Building = { kind: "map"; items: YPair[]; offset: number };

/**
 * The top-level mapping, `null` for a document with no content, or
 * `undefined` when the text is outside the subset.
 */
export function fastParse(text: string): YMap | null | undefined {
  if (text.includes("\r") || text.includes("\t") || text.charCodeAt(0) === 0xfeff) return undefined;
  const map: Building = { kind: "map", items: [], offset: 0 };
  let openKey: YPair | null = null; // a bare `key:` whose value may be a list
  let seq: { kind: "seq"; items: YNode[]; offset: number } | null = null;
  let seqIndent = -1;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const r = readLine(text.slice(start, end), start);
    if (r === undefined) return undefined;
    switch (r.kind) {
      case "blank":
        break;
      case "key": {
        if (SPECIAL.test(r.key)) return undefined;
        let value: YScalar;
        if (r.value === null) {
          // The parser's null for a bare `key:` sits just after the colon.
          value = scalar(null, start + r.key.length + 1, "");
        } else {
          const v = word(r.value, r.valueAt);
          if (v === undefined) return undefined;
          value = v;
        }
        const pair: YPair = { key: scalar(r.key, start, r.key), value };
        if (map.items.length === 0) map.offset = start;
        map.items.push(pair);
        openKey = r.value === null ? pair : null;
        seq = null;
        seqIndent = -1;
        break;
      }
      case "item": {
        if (seq === null) {
          if (openKey === null) return undefined;
          seq = { kind: "seq", items: [], offset: start + r.indent };
          seqIndent = r.indent;
          // Replace the bare key's null with the list (pairs are readonly to readers only).
          (openKey as { value: YNode | null }).value = seq as YSeq;
          openKey = null;
        } else if (r.indent !== seqIndent) return undefined;
        const v = word(r.value, r.valueAt);
        if (v === undefined) return undefined;
        seq.items.push(v);
        break;
      }
      default:
        return assertNever(r, "line kind");
    }
    start = end + 1;
  }
  return map.items.length === 0 ? null : map;
}

type Line =
  | { readonly kind: "blank" }
  | { readonly kind: "key"; readonly key: string; readonly value: string | null; readonly valueAt: number }
  | { readonly kind: "item"; readonly indent: number; readonly value: string; readonly valueAt: number };

function readLine(line: string, at: number): Line | undefined {
  const t = line.trimStart();
  if (t === "" || t.startsWith("#")) return { kind: "blank" };
  const item = ITEM.exec(line);
  if (item) {
    const indent = item[1]!.length;
    const value = stripComment(item[2]!);
    if (value === undefined) return undefined;
    return { kind: "item", indent, value, valueAt: at + indent + 2 };
  }
  const key = KEY.exec(line);
  if (!key) return undefined;
  const rest = key[2]!;
  if (rest === "") return { kind: "key", key: key[1]!, value: null, valueAt: -1 };
  // `key: value`: exactly one space, then the value (other spacing: let the parser decide).
  if (!rest.startsWith(" ") || rest.startsWith("  ")) return undefined;
  const value = stripComment(rest.slice(1));
  if (value === undefined) return undefined;
  return { kind: "key", key: key[1]!, value, valueAt: at + key[1]!.length + 2 };
}

/** `word   # comment` -> `word`; undefined when what remains is not one WORD. */
function stripComment(s: string): string | undefined {
  const hash = s.indexOf(" #");
  const v = (hash < 0 ? s : s.slice(0, hash)).trimEnd();
  return WORD.test(v) && !v.endsWith(":") ? v : undefined;
}

function word(v: string, at: number): YScalar | undefined {
  // PyYAML's booleans, which we build as booleans (with their source text).
  const b = yamlBool(v);
  if (b !== undefined) return scalar(b, at, v);
  if (SPECIAL.test(v)) return undefined;
  return scalar(v, at, v);
}

function scalar(value: unknown, offset: number, source: string): YScalar {
  return { kind: "scalar", value, source, offset };
}
