/**
 * Translates the restricted YAML that PyTorch's operator files are written in
 * (native_functions.yaml, tags.yaml) into plain JS values, with the line and
 * column of every entry and key.
 *
 * Why not the `yaml` package: it takes ~1 s (plus ~170 ms to import) on
 * native_functions.yaml, which alone would blow `gen`'s whole time budget.
 * These files use a small, regular subset, so a line-oriented reader does it
 * in a few milliseconds. Anything outside that subset is an error naming
 * file:line:col rather than a guess; a test checks that the result equals the
 * `yaml` package's on the installed torch's files.
 *
 * Supported shape (the only one these files use):
 *   - a top-level block sequence of block mappings (`- key: value`, then
 *     `  key: value` lines);
 *   - values: `{}`, plain scalars (resolved like YAML 1.2's core schema, as the
 *     `yaml` package does: null/bool/int/float/string), single- and
 *     double-quoted scalars, flow sequences of scalars (`[a, 'b']`), literal
 *     block scalars (`|`, `|-`, `|+`), and one nested level of either a block
 *     mapping of scalars (`dispatch:`) or a block sequence of scalars
 *     (`precomputed:`);
 *   - full-line and trailing (` #`) comments, blank lines.
 */
import { UserError } from "../util/errors.js";

export type YamlScalar = string | number | boolean | null;
export type YamlValue = YamlScalar | readonly YamlValue[] | { readonly [key: string]: YamlValue };

export interface KeyLoc {
  /** 1-based line of the key */
  readonly line: number;
  /** 1-based column of the key */
  readonly col: number;
  /** 1-based column where an inline value starts (0 when the value is a nested block) */
  readonly valueCol: number;
}

export interface YamlEntry {
  /** 1-based line of the entry's `- ` */
  readonly line: number;
  readonly value: { readonly [key: string]: YamlValue };
  readonly keys: { readonly [key: string]: KeyLoc };
}

class Reader {
  readonly lines: string[];
  /**
   * Per line, computed on first use: its indentation, -1 for a blank or
   * comment-only line, -2 for tab indentation (-3: not computed yet). Lazy
   * because the catalog reads only some entries of native_functions.yaml.
   */
  private readonly indents: Int32Array;
  constructor(
    text: string,
    readonly file: string,
  ) {
    this.lines = text.split("\n");
    // A trailing \r (CRLF files) is not part of any value.
    if (text.includes("\r")) {
      for (let k = 0; k < this.lines.length; k++) {
        const l = this.lines[k]!;
        if (l.endsWith("\r")) this.lines[k] = l.slice(0, -1);
      }
    }
    this.indents = new Int32Array(this.lines.length).fill(-3);
  }

  /** The indentation of line k: -1 for a blank or comment-only line, -2 for tab indentation. */
  ind(k: number): number {
    let v = this.indents[k]!;
    if (v === -3) {
      const l = this.lines[k]!;
      const i = indentOf(l);
      v = i >= 0 && (i === l.length || l.charCodeAt(i) === 35) /* # */ ? -1 : i;
      this.indents[k] = v;
    }
    return v;
  }

  fail(line: number, col: number, what: string): never {
    throw new UserError(`${this.file}:${line + 1}:${col + 1}: ${what}`);
  }

  /** Index of the next line with content (skipping blank and comment-only lines), or -1. */
  nextContent(from: number): number {
    const n = this.lines.length;
    for (let k = from; k < n; k++) if (this.ind(k) !== -1) return k;
    return -1;
  }
}

function indentOf(l: string): number {
  let i = 0;
  while (i < l.length && l.charCodeAt(i) === 32) i++;
  // Tabs are not indentation in YAML; refuse rather than guess.
  if (i < l.length && l.charCodeAt(i) === 9) return -2;
  return i;
}

/** Reads a file whose top level is a sequence of mappings. */
export function readYamlList(text: string, file: string): YamlEntry[] {
  const r = new Reader(text, file);
  const out: YamlEntry[] = [];
  let k = r.nextContent(0);
  while (k >= 0) {
    const e = readEntry(r, k);
    out.push(e.entry);
    k = e.next;
  }
  return out;
}

/**
 * A sequence-of-mappings file read one entry at a time, on demand (the
 * catalog parses only the native_functions.yaml entries `gen` asks about).
 */
export class YamlListFile {
  private readonly r: Reader;
  constructor(text: string, file: string) {
    this.r = new Reader(text, file);
  }

  /** The lines, without line ends (for a caller that scans for entries itself). */
  get lines(): readonly string[] {
    return this.r.lines;
  }

  /** The indentation of line k: -1 for a blank or comment-only line, -2 for tab indentation. */
  indentAt(k: number): number {
    return this.r.ind(k);
  }

  /** The entry whose `- ` is on line index `k` (0-based), exactly as readYamlList reads it. */
  entryAt(k: number): YamlEntry {
    return readEntry(this.r, k).entry;
  }
}

/** Reads the entry starting at line `k`; `next` is the line of the next entry, or -1. */
function readEntry(r: Reader, k: number): { entry: YamlEntry; next: number } {
  const l = r.lines[k]!;
  const ind = indentOf(l);
  if (ind === -2) r.fail(k, 0, "tab characters are not allowed for indentation");
  if (ind !== 0 || !l.startsWith("- ")) {
    r.fail(k, ind, "expected a top-level list entry starting with '- '");
  }
  const entryLine = k;
  const value: Record<string, YamlValue> = {};
  const keys: Record<string, KeyLoc> = {};
  // The first key sits on the `- ` line at column 2; the rest at indent 2.
  let n = readKeyValue(r, k, 2, value, keys);
  for (;;) {
    n = r.nextContent(n);
    if (n < 0) break;
    const ni = r.ind(n);
    if (ni === 0) break;
    if (ni === -2) r.fail(n, 0, "tab characters are not allowed for indentation");
    if (ni !== 2) r.fail(n, Math.max(ni, 0), `unexpected indentation ${ni}; keys of an entry are indented by 2 spaces`);
    n = readKeyValue(r, n, 2, value, keys);
  }
  return { entry: { line: entryLine + 1, value, keys }, next: n };
}

/** Parses `key: value` at column `col` of line `k`; returns the index of the line after it (and its nested block). */
function readKeyValue(
  r: Reader,
  k: number,
  col: number,
  into: Record<string, YamlValue>,
  keys: Record<string, KeyLoc>,
): number {
  const l = r.lines[k]!;
  const { key, valueStart } = readKey(r, k, col);
  if (Object.hasOwn(into, key)) {
    r.fail(k, col, `duplicate key '${key}' (first at line ${keys[key]!.line})`);
  }
  // The first character after the key says what follows (no substring: this runs per key, cold).
  const c0 = valueStart < l.length ? l.charCodeAt(valueStart) : -1;
  if (c0 === -1 || c0 === 35 /* # */) {
    // Nested block (or null).
    const n = r.nextContent(k + 1);
    const ni = n < 0 ? -1 : r.ind(n);
    if (n >= 0 && ni > col) {
      const nl = r.lines[n]!;
      if (nl.startsWith("- ", ni) || nl === `${" ".repeat(ni)}-`) {
        const [seq, next] = readBlockSeq(r, n, ni);
        into[key] = seq;
        keys[key] = { line: k + 1, col: col + 1, valueCol: 0 };
        return next;
      }
      const [map, next] = readBlockMap(r, n, ni);
      into[key] = map;
      keys[key] = { line: k + 1, col: col + 1, valueCol: 0 };
      return next;
    }
    if (n >= 0 && ni === col && r.lines[n]!.startsWith("- ", ni)) {
      // A block sequence may sit at the same indentation as its key.
      const [seq, next] = readBlockSeq(r, n, ni);
      into[key] = seq;
      keys[key] = { line: k + 1, col: col + 1, valueCol: 0 };
      return next;
    }
    into[key] = null;
    keys[key] = { line: k + 1, col: col + 1, valueCol: 0 };
    return k + 1;
  }
  keys[key] = { line: k + 1, col: col + 1, valueCol: valueStart + 1 };
  if (c0 === 124 /* | */) {
    const [s, next] = readLiteralBlock(r, k, valueStart, col);
    into[key] = s;
    return next;
  }
  into[key] = readInlineValue(r, k, valueStart);
  return k + 1;
}

// `key:` then a space or the end of the line; keys are plain words, or
// comma-separated words for `dispatch:` (`CPU, CUDA:`).
const KEY_RE = /([A-Za-z0-9_]+(?:, ?[A-Za-z0-9_]+| [A-Za-z0-9_]+)*):(?: +|$)/y;

function readKey(r: Reader, k: number, col: number): { key: string; valueStart: number } {
  const l = r.lines[k]!;
  KEY_RE.lastIndex = col;
  const m = KEY_RE.exec(l);
  if (m) return { key: m[1]!, valueStart: KEY_RE.lastIndex };
  // Slow path: say what is wrong.
  let i = col;
  for (; i < l.length; i++) {
    const c = l.charCodeAt(i);
    if (c === 58 /* : */) break;
    const ok =
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      (c >= 48 && c <= 57) ||
      c === 95 ||
      c === 44 /* , */ ||
      (c === 32 && i > col);
    if (!ok) r.fail(k, i, `unsupported character '${l[i]}' in a mapping key (expected 'key: value')`);
  }
  if (i >= l.length || i === col) r.fail(k, col, "expected 'key: value'");
  if (l.charCodeAt(i - 1) === 32) r.fail(k, i - 1, "space before ':' in a mapping key");
  return r.fail(k, i + 1, "expected a space after ':'");
}

function readBlockMap(r: Reader, k: number, ind: number): [Record<string, YamlValue>, number] {
  const map: Record<string, YamlValue> = {};
  const keys: Record<string, KeyLoc> = {};
  let n = k;
  for (;;) {
    const l = r.lines[n]!;
    const { key, valueStart } = readKey(r, n, ind);
    if (Object.hasOwn(map, key)) r.fail(n, ind, `duplicate key '${key}' (first at line ${keys[key]!.line})`);
    keys[key] = { line: n + 1, col: ind + 1, valueCol: valueStart + 1 };
    const c0 = valueStart < l.length ? l.charCodeAt(valueStart) : -1;
    if (c0 === -1 || c0 === 35 /* # */) r.fail(n, ind, "nested blocks deeper than one level are not supported here");
    if (c0 === 124) r.fail(n, valueStart, "block scalars are not supported inside a nested mapping");
    map[key] = readInlineValue(r, n, valueStart);
    const next = r.nextContent(n + 1);
    if (next < 0) return [map, r.lines.length];
    const ni = r.ind(next);
    if (ni < ind) return [map, next];
    if (ni > ind) r.fail(next, ni, `unexpected indentation ${ni} inside a mapping indented by ${ind}`);
    n = next;
  }
}

function readBlockSeq(r: Reader, k: number, ind: number): [YamlValue[], number] {
  const seq: YamlValue[] = [];
  let n = k;
  for (;;) {
    const l = r.lines[n]!;
    if (!l.startsWith("- ", ind)) return [seq, n];
    let v = ind + 2;
    while (v < l.length && l.charCodeAt(v) === 32) v++;
    const rest = l.slice(v);
    if (rest === "" || rest.startsWith("#")) r.fail(n, ind, "empty or nested list items are not supported here");
    if (looksLikeKey(rest)) r.fail(n, v, "mappings inside a nested list are not supported here");
    seq.push(readInlineValue(r, n, v));
    const next = r.nextContent(n + 1);
    if (next < 0) return [seq, r.lines.length];
    const ni = r.ind(next);
    if (ni < ind) return [seq, next];
    if (ni > ind) r.fail(next, ni, `unexpected indentation ${ni} inside a list indented by ${ind}`);
    n = next;
  }
}

function looksLikeKey(s: string): boolean {
  const m = /^[A-Za-z0-9_][A-Za-z0-9_, ]*:( |$)/.exec(s);
  return m !== null;
}

/** `|`, `|-`, `|+` literal block scalars (tags.yaml's `desc:`). */
function readLiteralBlock(r: Reader, k: number, at: number, parentIndent: number): [string, number] {
  const l = r.lines[k]!;
  const header = l
    .slice(at)
    .replace(/\s+#.*$/, "")
    .trimEnd();
  if (header !== "|" && header !== "|-" && header !== "|+") {
    r.fail(k, at, `unsupported block scalar header '${header}' (only |, |- and |+)`);
  }
  const body: string[] = [];
  let n = k + 1;
  let ind = -1;
  for (; n < r.lines.length; n++) {
    const bl = r.lines[n]!;
    const bi = indentOf(bl);
    if (bi === -2) r.fail(n, 0, "tab characters are not allowed for indentation");
    if (bi === bl.length) {
      body.push("");
      continue;
    }
    if (ind < 0) {
      if (bi <= parentIndent) break;
      ind = bi;
    }
    if (bi < ind) break;
    body.push(bl.slice(ind));
  }
  // Trailing blank lines belong to the chomping decision, not to the text.
  let end = body.length;
  while (end > 0 && body[end - 1] === "") end--;
  const kept = body.slice(0, end);
  let s = kept.join("\n");
  if (header === "|-") return [s, n];
  if (kept.length > 0) s += "\n";
  if (header === "|+") s += "\n".repeat(body.length - end);
  return [s, n];
}

/** An inline value starting at column `at` of line `k`, running to the end of the line (or a comment). */
function readInlineValue(r: Reader, k: number, at: number): YamlValue {
  const l = r.lines[k]!;
  const c = l.charCodeAt(at);
  if (c === 91 /* [ */) {
    const [seq, end] = readFlowSeq(r, k, at);
    expectLineEnd(r, k, end);
    return seq;
  }
  if (c === 39 /* ' */ || c === 34 /* " */) {
    const [s, end] = readQuoted(r, k, at);
    expectLineEnd(r, k, end);
    return s;
  }
  if (c === 123 /* { */) {
    // `dispatch: {}` (an explicitly empty table) is the only flow mapping used.
    const m = /^\{ *\}/.exec(l.slice(at));
    if (!m) r.fail(k, at, "flow mappings other than '{}' are not supported here");
    expectLineEnd(r, k, at + m[0].length);
    return {};
  }
  if (c === 38 || c === 42 || c === 33 || c === 37 || c === 64 || c === 96 || c === 62 || c === 124) {
    r.fail(k, at, `unsupported YAML construct starting with '${l[at]}'`);
  }
  if (c === 45 /* - */ && (at + 1 === l.length || l.charCodeAt(at + 1) === 32)) {
    r.fail(k, at, "a list item cannot start inline after a key");
  }
  // Plain scalar: to a ` #` comment or the end of the line.
  let end = l.length;
  const hash = l.indexOf(" #", at);
  if (hash >= 0) end = hash;
  const s = l.slice(at, end).trimEnd();
  const colon = s.indexOf(": ");
  if (colon >= 0 || s.endsWith(":")) {
    r.fail(k, at + (colon >= 0 ? colon : s.length - 1), "unexpected ': ' inside a plain value (quote the value)");
  }
  // A plain scalar continued on more-indented lines is valid YAML that we do
  // not support; catch it instead of silently truncating.
  const next = r.nextContent(k + 1);
  if (next >= 0) {
    const ni = r.ind(next);
    const ki = r.ind(k);
    const lineIsItem = l.startsWith("- ", ki);
    const ownIndent = lineIsItem ? ki + 2 : ki;
    if (ni > ownIndent && !r.lines[next]!.startsWith("- ", ni)) {
      r.fail(next, ni, "multi-line plain values are not supported here");
    }
  }
  return resolvePlain(s);
}

function expectLineEnd(r: Reader, k: number, end: number): void {
  const l = r.lines[k]!;
  let i = end;
  while (i < l.length && l.charCodeAt(i) === 32) i++;
  if (i < l.length && !(l.charCodeAt(i) === 35 && i > end)) {
    r.fail(k, i, `unexpected '${l.slice(i, i + 10)}' after the value`);
  }
}

function readQuoted(r: Reader, k: number, at: number): [string, number] {
  const l = r.lines[k]!;
  const q = l.charCodeAt(at);
  let s = "";
  let i = at + 1;
  if (q === 39) {
    for (;;) {
      const j = l.indexOf("'", i);
      if (j < 0) r.fail(k, at, "unterminated single-quoted string (multi-line strings are not supported here)");
      s += l.slice(i, j);
      if (l.charCodeAt(j + 1) === 39) {
        s += "'";
        i = j + 2;
      } else return [s, j + 1];
    }
  }
  for (; i < l.length; i++) {
    const ch = l.charCodeAt(i);
    if (ch === 34) return [s, i + 1];
    if (ch === 92 /* \ */) {
      const e = l[i + 1];
      const map: Record<string, string> = { n: "\n", t: "\t", '"': '"', "\\": "\\", "/": "/", r: "\r", "0": "\0" };
      if (e === undefined || !(e in map)) r.fail(k, i, `unsupported escape '\\${e ?? ""}' in a double-quoted string`);
      s += map[e];
      i++;
    } else s += l[i];
  }
  return r.fail(k, at, "unterminated double-quoted string (multi-line strings are not supported here)");
}

function readFlowSeq(r: Reader, k: number, at: number): [YamlValue[], number] {
  const l = r.lines[k]!;
  const out: YamlValue[] = [];
  let i = at + 1;
  const skip = () => {
    while (i < l.length && l.charCodeAt(i) === 32) i++;
  };
  skip();
  if (l.charCodeAt(i) === 93) return [out, i + 1];
  for (;;) {
    skip();
    const c = l.charCodeAt(i);
    if (c === 39 || c === 34) {
      const [s, end] = readQuoted(r, k, i);
      out.push(s);
      i = end;
    } else {
      const start = i;
      while (i < l.length) {
        const ch = l.charCodeAt(i);
        if (ch === 44 || ch === 93) break;
        if (ch === 91 || ch === 123 || ch === 125 || ch === 35) {
          r.fail(k, i, `unsupported character '${l[i]}' inside a flow list`);
        }
        i++;
      }
      if (i >= l.length) r.fail(k, at, "unterminated flow list '['");
      const item = l.slice(start, i).trimEnd();
      if (item === "") r.fail(k, start, "empty item in a flow list");
      if (item.includes(": ")) r.fail(k, start, "mappings inside a flow list are not supported");
      out.push(resolvePlain(item));
    }
    skip();
    const d = l.charCodeAt(i);
    if (d === 93) return [out, i + 1];
    if (d !== 44) r.fail(k, i, "expected ',' or ']' in a flow list");
    i++;
    skip();
    // A trailing comma before ']' is allowed by YAML.
    if (l.charCodeAt(i) === 93) return [out, i + 1];
  }
}

const INT_RE = /^[-+]?[0-9]+$/;
const FLOAT_RE = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;

/** First characters of null/true/false spellings (`~`, `.`, `+`, `-` and digits are checked apart). */
const PLAIN_SPECIAL_FIRST: ReadonlySet<number> = new Set([..."nNtTfF"].map((x) => x.charCodeAt(0)));

/** YAML 1.2 core schema, as the `yaml` package resolves plain scalars by default. */
function resolvePlain(s: string): YamlScalar {
  // Most values (kernel names, `function, method`, schemas) start with a
  // letter no special scalar starts with: skip the string compares below.
  const c = s.charCodeAt(0);
  if (!(c === 126 || c === 46 || c === 43 || c === 45 || (c >= 48 && c <= 57) || PLAIN_SPECIAL_FIRST.has(c))) {
    if (s.length > 0) return s;
  }
  switch (s) {
    case "":
    case "~":
    case "null":
    case "Null":
    case "NULL":
      return null;
    case "true":
    case "True":
    case "TRUE":
      return true;
    case "false":
    case "False":
    case "FALSE":
      return false;
    case ".inf":
    case ".Inf":
    case ".INF":
    case "+.inf":
    case "+.Inf":
    case "+.INF":
      return Number.POSITIVE_INFINITY;
    case "-.inf":
    case "-.Inf":
    case "-.INF":
      return Number.NEGATIVE_INFINITY;
    case ".nan":
    case ".NaN":
    case ".NAN":
      return Number.NaN;
  }
  if ((c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46) {
    if (INT_RE.test(s)) return Number.parseInt(s, 10);
    if (/^0o[0-7]+$/.test(s)) return Number.parseInt(s.slice(2), 8);
    if (/^0x[0-9a-fA-F]+$/.test(s)) return Number.parseInt(s.slice(2), 16);
    if (FLOAT_RE.test(s)) return Number.parseFloat(s);
  }
  return s;
}
