/**
 * Words every stage shares, defined once: the dtypes a backend can claim and
 * the runner tests (python/opgen_conformance/__init__.py KNOWN_DTYPES is the
 * same set; a test says so), the dtypes claimed by default, how bad each
 * result status is, and the string order every sorted output uses.
 */

/**
 * The dtypes a backend can claim in `dtypes:` (torch.<name>), in report order:
 * floating first, then complex, integers, bool. These are the dtypes the
 * conformance runner makes samples for.
 */
export const DTYPES = [
  "float32",
  "float64",
  "float16",
  "bfloat16",
  "complex64",
  "complex128",
  "int64",
  "int32",
  "int16",
  "int8",
  "uint8",
  "bool",
] as const;
export type Dtype = (typeof DTYPES)[number];

/** Claimed when neither backend.yaml, the manifest nor --dtypes says otherwise. */
export const DEFAULT_DTYPES: readonly Dtype[] = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"];

/**
 * What a single sample's check says (Python side). "compile-failed": `test --compile` only, Inductor
 * could not compile a call eager CPU runs (python/opgen_conformance/compiled.py, Note [Compiled mode]).
 */
export type SampleStatus = "pass" | "fail" | "warn" | "skip" | "crash" | "timeout" | "compile-failed";
/** What a result says after expectations are applied. */
export type Status = SampleStatus | "xfail" | "xpass";

/** How bad a status is: a result is its worst sample; a group shows its worst result. */
export const STATUS_SEVERITY: Readonly<Record<Status, number>> = {
  crash: 8,
  timeout: 7,
  "compile-failed": 6,
  fail: 5,
  xpass: 4,
  xfail: 3,
  warn: 2,
  pass: 1,
  skip: 0,
};

/** Code-unit order, like Python's sorted() on str (no locale): every sorted output uses it. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
