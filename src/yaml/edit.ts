/**
 * Adds names to a top-level list of a YAML file a person wrote (backend.yaml's
 * `supported:`), by inserting text, not by printing the document again: every
 * comment, blank line, quote, order and spelling already there stays byte for
 * byte. The `yaml` package only says where things are; this module computes
 * the new text and writes nothing (src/write does).
 *
 * Where the names go, by how the list is written now:
 * - a block list (`key:` then `- name` lines): after the line of its last
 *   item, at the indentation of its first `-`, after one comment line that
 *   says who added them;
 * - a flow list (`key: [a, b]`): before its `]`, comma-separated (a flow list
 *   has no room for the comment);
 * - no value (`key:`, `key: ~`, `key: null`): a block list under the key,
 *   indented as the file's other block lists (else two spaces);
 * - no such key: `key:` and a block list at the end of the file.
 * Lines end as the file's do (CRLF or LF).
 */
import type * as Yaml from "yaml";
import { yamlPackage } from "./document.js";

export interface ListAddition {
  readonly text: string;
  /** 1-based line of the first added name in `text`. */
  readonly line: number;
}

type Range = readonly [number, number, number];

const rangeOf = (node: unknown): Range | undefined => (node as { range?: Range | null }).range ?? undefined;

/**
 * `text` with `names` appended to the top-level list `key`. Throws a plain
 * Error when `text` is not a mapping or `key` holds something else than a
 * list or nothing: callers only edit files their loader has accepted.
 */
export function appendToTopLevelList(
  text: string,
  key: string,
  names: readonly string[],
  comment: string,
): ListAddition {
  if (names.length === 0) return { text, line: 0 };
  const Y = yamlPackage();
  const doc = Y.parseDocument(text, { version: "1.1", uniqueKeys: false, merge: false });
  if (doc.errors.length > 0) throw new Error(`cannot edit YAML with errors: ${doc.errors[0]!.message}`);
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const top = doc.contents;
  if (top !== null && !Y.isMap(top)) throw new Error("the YAML's top level is not a mapping");
  const pair = top?.items.find((p) => Y.isScalar(p.key) && p.key.value === key);
  const value = pair?.value ?? null;

  if (pair === undefined) {
    // At the end: after a final newline, added if missing.
    const head = text.length === 0 || text.endsWith("\n") ? text : text + eol;
    const indent = blockIndent(Y, top, text);
    const added = [`${key}:`, `${indent}# ${comment}`, ...names.map((n) => `${indent}- ${n}`)];
    return { text: head + added.join(eol) + eol, line: lineAt(head, head.length) + 2 };
  }
  if (Y.isSeq(value) && value.flow) {
    const r = rangeOf(value)!;
    const close = text.lastIndexOf("]", r[1] - 1);
    const before = text.slice(r[0] + 1, close).trimEnd();
    const sep = value.items.length === 0 || before.endsWith(",") ? (before.length === 0 ? "" : " ") : ", ";
    const at = r[0] + 1 + before.length;
    return { text: text.slice(0, at) + sep + names.join(", ") + text.slice(at), line: lineAt(text, at) };
  }
  if (Y.isSeq(value) && value.items.length > 0) {
    const r = rangeOf(value)!;
    const indent = " ".repeat(r[0] - lineStart(text, r[0]));
    const last = rangeOf(value.items[value.items.length - 1])!;
    const at = afterLine(text, last[1]);
    const head = at === text.length && !text.endsWith("\n") ? text + eol : text.slice(0, at);
    const added = [`${indent}# ${comment}`, ...names.map((n) => `${indent}- ${n}`)];
    return { text: head + added.join(eol) + eol + text.slice(at), line: lineAt(head, head.length) + 1 };
  }
  if (value === null || (Y.isScalar(value) && value.value === null)) {
    // `key:` or `key: ~`: the null's text goes, a comment after it stays.
    const v = value === null ? undefined : rangeOf(value);
    const keyEnd = rangeOf(pair.key)![1];
    // (With the space before it: `key: ~  # c` becomes `key:  # c`.)
    let [cut, cutEnd] = v ? [text[v[0] - 1] === " " ? v[0] - 1 : v[0], v[1]] : [keyEnd + 1, keyEnd + 1];
    const rest = text.slice(cutEnd);
    if (/^(?:\r?\n|$)/.test(rest)) cut = text.slice(0, cut).trimEnd().length;
    const stripped = text.slice(0, cut) + rest;
    const at = afterLine(stripped, cut);
    const head = at === stripped.length && !stripped.endsWith("\n") ? stripped + eol : stripped.slice(0, at);
    const indent = blockIndent(Y, top, text);
    const added = [`${indent}# ${comment}`, ...names.map((n) => `${indent}- ${n}`)];
    return { text: head + added.join(eol) + eol + stripped.slice(at), line: lineAt(head, head.length) + 1 };
  }
  throw new Error(`'${key}' is not a list`);
}

/** The indentation of the file's first top-level block list with items; two spaces when there is none. */
function blockIndent(Y: typeof Yaml, top: Yaml.YAMLMap | null, text: string): string {
  for (const p of top?.items ?? []) {
    const v = p.value;
    if (Y.isSeq(v) && !v.flow && v.items.length > 0) {
      const r = rangeOf(v)!;
      return " ".repeat(r[0] - lineStart(text, r[0]));
    }
  }
  return "  ";
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/** The offset just past the newline that ends the line `end` is on (`end` exclusive: a value ending at a newline ends that line). */
function afterLine(text: string, end: number): number {
  if (end > 0 && text[end - 1] === "\n") return end;
  const nl = text.indexOf("\n", end);
  return nl < 0 ? text.length : nl + 1;
}

function lineAt(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) n++;
  return n;
}
