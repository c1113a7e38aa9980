/**
 * How a plain (unquoted) YAML scalar reads, under PyYAML's YAML 1.1 rules
 * (yaml/resolver.py), which torchgen reads both native_functions.yaml and
 * backend YAMLs with: so `yes`/`on` are booleans and `1e5` is a string, here
 * as in torchgen. Both of our line readers resolve plain scalars here.
 * Timestamps (PyYAML reads `2001-12-14` as a date) stay strings.
 */

export type PlainScalar = string | number | boolean | null;

const TRUE = new Set(["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"]);
const FALSE = new Set(["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"]);
const NULL = new Set(["", "~", "null", "Null", "NULL"]);
/** First characters of the null and boolean words: n N y Y t T f F o O. */
const WORD_START = new Set([..."nNyYtTfFoO"].map((ch) => ch.charCodeAt(0)));
const INT =
  /^(?:[-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/;
const FLOAT =
  /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;

/** PyYAML's booleans. */
export function yamlBool(s: string): boolean | undefined {
  return TRUE.has(s) ? true : FALSE.has(s) ? false : undefined;
}

/** Sign and base-60 parts, as PyYAML's construct_yaml_int/float combine them. */
function sexagesimal(s: string, part: (p: string) => number): number {
  const sign = s.startsWith("-") ? -1 : 1;
  let v = 0;
  for (const p of s.replace(/^[-+]/, "").split(":")) v = v * 60 + part(p);
  return sign * v;
}

function int(s: string): number {
  const t = s.replaceAll("_", "");
  const sign = t.startsWith("-") ? -1 : 1;
  const u = t.replace(/^[-+]/, "");
  if (u === "0") return 0;
  if (u.startsWith("0b")) return sign * Number.parseInt(u.slice(2), 2);
  if (u.startsWith("0x")) return sign * Number.parseInt(u.slice(2), 16);
  if (u.startsWith("0")) return sign * Number.parseInt(u.slice(1), 8);
  if (u.includes(":")) return sign * sexagesimal(u, (p) => Number.parseInt(p, 10));
  return sign * Number.parseInt(u, 10);
}

function float(s: string): number {
  const t = s.replaceAll("_", "").toLowerCase();
  const sign = t.startsWith("-") ? -1 : 1;
  const u = t.replace(/^[-+]/, "");
  if (u === ".inf") return sign * Number.POSITIVE_INFINITY;
  if (u === ".nan") return Number.NaN;
  if (u.includes(":")) return sign * sexagesimal(u, (p) => Number.parseFloat(p));
  return sign * Number.parseFloat(u);
}

/** A plain scalar's value: null, boolean, integer, float, or the string itself. */
export function resolvePlain(s: string): PlainScalar {
  // Most values (kernel names, `function, method`, schemas) are no special
  // scalar; those start with ~, a number's first character, or (null and the
  // booleans, at most 5 long) n/N/y/Y/t/T/f/F/o/O.
  const c = s.charCodeAt(0);
  const number = (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46;
  if (!number && c !== 126 && (s.length > 5 || !WORD_START.has(c))) return s.length > 0 ? s : null;
  if (NULL.has(s)) return null;
  const b = yamlBool(s);
  if (b !== undefined) return b;
  if (number) {
    if (INT.test(s)) return int(s);
    if (FLOAT.test(s)) return float(s);
  }
  return s;
}
