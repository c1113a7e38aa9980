/**
 * Translates the restricted YAML that PyTorch's operator files are written in
 * (native_functions.yaml, tags.yaml) into plain JS values, with the line and
 * column of every entry and key.
 *
 * Why not the `yaml` package: on native_functions.yaml it takes several times
 * `gen`'s whole time (Note [Cold start], bench/cold-load.mjs). These files use
 * a small, regular subset, which a line-oriented reader reads quickly.
 * Anything outside that subset is an error naming file:line:col rather than a
 * guess; a test checks that the result equals the `yaml` package's (in its
 * YAML 1.1 mode) on the installed torch's files.
 *
 * Supported shape (the only one these files use):
 *   - a top-level block sequence of block mappings (`- key: value`, then
 *     `  key: value` lines);
 *   - values: `{}`, plain scalars (resolved as PyYAML, which torchgen reads
 *     them with, does: src/yaml/scalars.ts), single- and
 *     double-quoted scalars, flow sequences of scalars (`[a, 'b']`), literal
 *     block scalars (`|`, `|-`, `|+`), and one nested level of either a block
 *     mapping of scalars (`dispatch:`) or a block sequence of scalars
 *     (`precomputed:`);
 *   - full-line and trailing (` #`) comments, blank lines.
 */
import { UserError } from "../util/errors.js";
import { resolvePlain } from "./scalars.js";

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
      // As indentOf, with the blank/comment case.
      const l = this.lines[k]!;
      let i = 0;
      while (l.charCodeAt(i) === 32) i++;
      const c = l.charCodeAt(i);
      // A blank or comment-only line; a tab in the indentation.
      v = i === l.length || c === 35 /* # */ ? -1 : c === 9 ? -2 : i;
      this.indents[k] = v;
    }
    return v;
  }

  /** readKey's second result: the column where the key's value starts. */
  valueStart = 0;
  /** The block and entry readers' second result: the line after what they read (-1 after the last entry). */
  blockEnd = 0;
  /** readQuoted's and readFlowSeq's second result: the column after the value. */
  valueEnd = 0;

  fail(line: number, col: number, what: string): never {
    throw new UserError(`${this.file}:${line + 1}:${col + 1}: ${what}`);
  }

  /** nextContent's last question and answer (a value's reader and then its caller both ask for the line after it). */
  private lastFrom = -1;
  private lastNext = -1;

  /** Index of the next line with content (skipping blank and comment-only lines), or -1. */
  nextContent(from: number): number {
    if (from === this.lastFrom) return this.lastNext;
    const n = this.lines.length;
    let next = -1;
    for (let k = from; k < n; k++) {
      if (this.ind(k) !== -1) {
        next = k;
        break;
      }
    }
    this.lastFrom = from;
    this.lastNext = next;
    return next;
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
  for (let k = r.nextContent(0); k >= 0; k = r.blockEnd) out.push(readEntry(r, k));
  return out;
}

/**
 * `o[key] = v`, also for the key `__proto__` (which an assignment would take
 * as the object's prototype): every key read is an own key, so an unknown
 * one is reported like any other.
 */
function setOwn<T>(o: Record<string, T>, key: string, v: T): void {
  if (key === "__proto__")
    Object.defineProperty(o, key, { value: v, enumerable: true, writable: true, configurable: true });
  else o[key] = v;
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

  /**
   * The entry whose `- ` is on line index `k` (0-based), exactly as
   * readYamlList reads it, and the line index of the next entry (or -1).
   */
  read(k: number): { readonly entry: YamlEntry; readonly next: number } {
    const entry = readEntry(this.r, k);
    return { entry, next: this.r.blockEnd };
  }

  /** The line index of the first entry, or -1 for a file without content. */
  first(): number {
    return this.r.nextContent(0);
  }
}

/** The entry starting at line `k`; sets r.blockEnd to the line of the next entry, or -1. */
function readEntry(r: Reader, k: number): YamlEntry {
  const l = r.lines[k]!;
  const ind = indentOf(l);
  if (ind === -2) r.fail(k, 0, "tab characters are not allowed for indentation");
  if (ind !== 0 || !l.startsWith("- ")) {
    r.fail(k, ind, "expected a top-level list entry starting with '- '");
  }
  const value: Record<string, YamlValue> = {};
  const keys: Record<string, KeyLoc> = {};
  // The first key sits on the `- ` line at column 2; the rest at indent 2.
  let n = readKeyValue(r, k, value, keys);
  for (;;) {
    n = r.nextContent(n);
    if (n < 0) break;
    const ni = r.ind(n);
    if (ni === 0) break;
    if (ni === -2) r.fail(n, 0, "tab characters are not allowed for indentation");
    if (ni !== 2) r.fail(n, Math.max(ni, 0), `unexpected indentation ${ni}; keys of an entry are indented by 2 spaces`);
    n = readKeyValue(r, n, value, keys);
  }
  r.blockEnd = n;
  return { line: k + 1, value, keys };
}

/**
 * Parses a top-level `key: value` at column 2 of line `k` into the entry's
 * `value` and `keys`; returns the index of the line after it (and its nested
 * block).
 */
function readKeyValue(r: Reader, k: number, value: Record<string, YamlValue>, keys: Record<string, KeyLoc>): number {
  const l = r.lines[k]!;
  const key = readKey(r, k, 2);
  const valueStart = r.valueStart;
  if (Object.hasOwn(keys, key)) r.fail(k, 2, `duplicate key '${key}' (first at line ${keys[key]!.line})`);
  let v: YamlValue = null;
  let valueCol = valueStart + 1;
  let end = k + 1;
  // The first character after the key says what follows.
  const c0 = valueStart < l.length ? l.charCodeAt(valueStart) : -1;
  if (c0 === -1 || c0 === 35 /* # */) {
    // Nested block (or null).
    valueCol = 0;
    const next = r.nextContent(k + 1);
    const ni = next < 0 ? -1 : r.ind(next);
    if (next >= 0 && ni > 2) {
      const nl = r.lines[next]!;
      const seq = nl.startsWith("- ", ni) || (nl.length === ni + 1 && nl.charCodeAt(ni) === 45); /* - */
      v = seq ? readBlockSeq(r, next, ni) : readBlockMap(r, next, ni);
      end = r.blockEnd;
    } else if (next >= 0 && ni === 2 && r.lines[next]!.startsWith("- ", ni)) {
      // A block sequence may sit at the same indentation as its key.
      v = readBlockSeq(r, next, ni);
      end = r.blockEnd;
    }
  } else if (c0 === 124 /* | */) {
    v = readLiteralBlock(r, k, valueStart, 2);
    end = r.blockEnd;
  } else v = readInlineValue(r, k, valueStart, 2);
  setOwn(value, key, v);
  setOwn(keys, key, { line: k + 1, col: 3, valueCol });
  return end;
}

// `key:` then a space or the end of the line; keys are plain words, or
// comma-separated words for `dispatch:` (`CPU, CUDA:`).
const KEY_RE = /([A-Za-z0-9_]+(?:, ?[A-Za-z0-9_]+| [A-Za-z0-9_]+)*):(?: +|$)/y;

/** The key at column `col` of line `k`; sets r.valueStart. */
function readKey(r: Reader, k: number, col: number): string {
  const l = r.lines[k]!;
  KEY_RE.lastIndex = col;
  const m = KEY_RE.exec(l);
  if (m) {
    r.valueStart = KEY_RE.lastIndex;
    return m[1]!;
  }
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

/** A nested block mapping of scalars at indentation `ind` from line `k`; sets r.blockEnd. */
function readBlockMap(r: Reader, k: number, ind: number): Record<string, YamlValue> {
  const map: Record<string, YamlValue> = {};
  let n = k;
  for (;;) {
    const l = r.lines[n]!;
    const key = readKey(r, n, ind);
    const valueStart = r.valueStart;
    if (Object.hasOwn(map, key)) {
      let first = k;
      while (readKey(r, first, ind) !== key) first = r.nextContent(first + 1);
      r.fail(n, ind, `duplicate key '${key}' (first at line ${first + 1})`);
    }
    const c0 = valueStart < l.length ? l.charCodeAt(valueStart) : -1;
    if (c0 === -1 || c0 === 35 /* # */) r.fail(n, ind, "nested blocks deeper than one level are not supported here");
    if (c0 === 124) r.fail(n, valueStart, "block scalars are not supported inside a nested mapping");
    setOwn(map, key, readInlineValue(r, n, valueStart, ind));
    const next = r.nextContent(n + 1);
    const ni = next < 0 ? -1 : r.ind(next);
    if (ni < ind) {
      r.blockEnd = next < 0 ? r.lines.length : next;
      return map;
    }
    if (ni > ind) r.fail(next, ni, `unexpected indentation ${ni} inside a mapping indented by ${ind}`);
    n = next;
  }
}

/** A nested block sequence of scalars at indentation `ind` from line `k`; sets r.blockEnd. */
function readBlockSeq(r: Reader, k: number, ind: number): YamlValue[] {
  const seq: YamlValue[] = [];
  let n = k;
  for (;;) {
    const l = r.lines[n]!;
    if (!l.startsWith("- ", ind)) {
      r.blockEnd = n;
      return seq;
    }
    let v = ind + 2;
    while (v < l.length && l.charCodeAt(v) === 32) v++;
    const rest = l.slice(v);
    if (rest === "" || rest.startsWith("#")) r.fail(n, ind, "empty or nested list items are not supported here");
    if (looksLikeKey(rest)) r.fail(n, v, "mappings inside a nested list are not supported here");
    seq.push(readInlineValue(r, n, v, ind + 2));
    const next = r.nextContent(n + 1);
    if (next < 0) {
      r.blockEnd = r.lines.length;
      return seq;
    }
    const ni = r.ind(next);
    if (ni < ind) {
      r.blockEnd = next;
      return seq;
    }
    if (ni > ind) r.fail(next, ni, `unexpected indentation ${ni} inside a list indented by ${ind}`);
    n = next;
  }
}

function looksLikeKey(s: string): boolean {
  const m = /^[A-Za-z0-9_][A-Za-z0-9_, ]*:( |$)/.exec(s);
  return m !== null;
}

/** `|`, `|-`, `|+` literal block scalars (tags.yaml's `desc:`); sets r.blockEnd. */
function readLiteralBlock(r: Reader, k: number, at: number, parentIndent: number): string {
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
  r.blockEnd = n;
  if (header === "|-") return s;
  if (kept.length > 0) s += "\n";
  if (header === "|+") s += "\n".repeat(body.length - end);
  return s;
}

/**
 * An inline value starting at column `at` of line `k`, running to the end of
 * the line (or a comment). `ownIndent` is the column of its key (of the text
 * after `- ` for a list item): a more-indented line after it would continue it.
 */
function readInlineValue(r: Reader, k: number, at: number, ownIndent: number): YamlValue {
  const l = r.lines[k]!;
  const c = l.charCodeAt(at);
  // Most values (kernel names, schemas, `function, method`) start with a
  // letter, digit or '_', which none of the constructs below start with.
  if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95)) {
    const v = readSpecialValue(r, k, at, c);
    if (v !== undefined) return v;
  }
  // Plain scalar: to a ` #` comment or the end of the line.
  let end = l.length;
  const hash = l.indexOf(" #", at);
  if (hash >= 0) end = hash;
  let s = l.slice(at, end);
  const last = s.charCodeAt(s.length - 1);
  if (!(last > 32 && last < 127)) s = s.trimEnd();
  const colon = s.indexOf(": ");
  if (colon >= 0 || s.endsWith(":")) {
    r.fail(k, at + (colon >= 0 ? colon : s.length - 1), "unexpected ': ' inside a plain value (quote the value)");
  }
  // A plain scalar continued on more-indented lines is valid YAML that we do
  // not support; catch it instead of silently truncating.
  const next = r.nextContent(k + 1);
  if (next >= 0) {
    const ni = r.ind(next);
    if (ni > ownIndent && !r.lines[next]!.startsWith("- ", ni)) {
      r.fail(next, ni, "multi-line plain values are not supported here");
    }
  }
  return resolvePlain(s);
}

/**
 * readInlineValue for a value starting with character `c` (not a letter,
 * digit or '_'): a flow list, a quoted string or `{}`, an error for
 * unsupported constructs; undefined for a plain scalar.
 */
function readSpecialValue(r: Reader, k: number, at: number, c: number): YamlValue | undefined {
  const l = r.lines[k]!;
  if (c === 91 /* [ */) {
    const seq = readFlowSeq(r, k, at);
    expectLineEnd(r, k, r.valueEnd);
    return seq;
  }
  if (c === 39 /* ' */ || c === 34 /* " */) {
    const s = readQuoted(r, k, at);
    expectLineEnd(r, k, r.valueEnd);
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
  return undefined;
}

function expectLineEnd(r: Reader, k: number, end: number): void {
  const l = r.lines[k]!;
  let i = end;
  while (i < l.length && l.charCodeAt(i) === 32) i++;
  if (i < l.length && !(l.charCodeAt(i) === 35 && i > end)) {
    r.fail(k, i, `unexpected '${l.slice(i, i + 10)}' after the value`);
  }
}

/** Sets r.valueEnd. */
function readQuoted(r: Reader, k: number, at: number): string {
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
      } else {
        r.valueEnd = j + 1;
        return s;
      }
    }
  }
  for (; i < l.length; i++) {
    const ch = l.charCodeAt(i);
    if (ch === 34) {
      r.valueEnd = i + 1;
      return s;
    }
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

/** Sets r.valueEnd. */
function readFlowSeq(r: Reader, k: number, at: number): YamlValue[] {
  const l = r.lines[k]!;
  const len = l.length;
  const out: YamlValue[] = [];
  let i = at + 1;
  while (i < len && l.charCodeAt(i) === 32) i++;
  if (l.charCodeAt(i) === 93) {
    r.valueEnd = i + 1;
    return out;
  }
  for (;;) {
    while (i < len && l.charCodeAt(i) === 32) i++;
    const c = l.charCodeAt(i);
    if (c === 39 || c === 34) {
      out.push(readQuoted(r, k, i));
      i = r.valueEnd;
    } else {
      const start = i;
      while (i < len) {
        const ch = l.charCodeAt(i);
        if (ch === 44 || ch === 93) break;
        if (ch === 91 || ch === 123 || ch === 125 || ch === 35) {
          r.fail(k, i, `unsupported character '${l[i]}' inside a flow list`);
        }
        i++;
      }
      if (i >= len) r.fail(k, at, "unterminated flow list '['");
      const item = l.slice(start, i).trimEnd();
      if (item === "") r.fail(k, start, "empty item in a flow list");
      if (item.includes(": ")) r.fail(k, start, "mappings inside a flow list are not supported");
      out.push(resolvePlain(item));
    }
    while (i < len && l.charCodeAt(i) === 32) i++;
    const d = l.charCodeAt(i);
    if (d === 93) break;
    if (d !== 44) r.fail(k, i, "expected ',' or ']' in a flow list");
    i++;
    while (i < len && l.charCodeAt(i) === 32) i++;
    // A trailing comma before ']' is allowed by YAML.
    if (l.charCodeAt(i) === 93) break;
  }
  r.valueEnd = i + 1;
  return out;
}
