/**
 * The per-backend expectations file: known failures (XFAIL) and per-op
 * tolerances. Known failures that pass become XPASS so the file cannot rot.
 *
 *   expectations:
 *     - op: "div.Tensor_mode"        # glob over overload names
 *       dtype: float16               # optional glob; all dtypes when absent
 *       check: values                # optional; all checks when absent
 *       reason: "rounds toward zero"
 *       issue: https://tracker/123   # optional
 *       cpu: "AVX512"                # optional glob over eager's CPU capability
 *                                    # (torch.backends.cpu.get_cpu_capability()): an
 *                                    # eager behaviour of some machines only
 *       mode: compiled               # optional: any (the default), eager or compiled
 *                                    # (Note [Expectation modes])
 *     - test: "test_view_ops.py::*::test_unfold_*"   # instead of op: a glob over
 *       reason: "unsupported: ..."   # upstream test ids (test --upstream); no dtype/check
 *   tolerances:
 *     - op: "sum*"
 *       dtype: bfloat16              # optional
 *       rtol: 1e-2
 *       atol: 1e-3
 *       mode: compiled               # optional, as above
 *
 * Note [Expectation modes]: `test` runs the device's kernels eagerly,
 * `test --compile` runs every call through torch.compile with Inductor,
 * whose generated kernels (and numerics, and refusals) are not the device's;
 * both are judged against the same eager CPU. So an entry says which runs it
 * is about: `mode: any` (the default: eager CPU's own quirks, which every
 * entry of backends/ref's file is, show in both), `mode: eager` (a device
 * kernel's known failure, which compiled code may not even call: it must
 * neither hide a compiled failure nor turn XPASS there) or `mode: compiled`
 * (Inductor's own behaviour; its reason says why compiled differs from
 * eager). An entry of the other mode is ignored.
 *
 * Every problem is reported with file:line:col, all of them in one run
 * (Note [Diagnostics] in src/util/errors.ts). Read with src/yaml's
 * full-syntax reader, under YAML 1.1 scalar rules like every YAML we read.
 */
import { readFileSync } from "node:fs";
import { type Diagnostic, type SourceLoc, UserError } from "../util/errors.js";
import { parseDocument, positions } from "../yaml/document.js";
import { isMap, isScalar, isSeq, type YNode } from "../yaml/tree.js";
import { MODEL_CHECKS } from "./models.js";
import { CHECKS, type Result } from "./types.js";
import { UPSTREAM_PREFIX } from "./upstream-report.js";

/** An operator's checks, then a model case's own (an expectation may name either). */
const ALL_CHECKS: readonly string[] = [
  ...CHECKS,
  ...MODEL_CHECKS.filter((c) => !(CHECKS as readonly string[]).includes(c)),
];

/** Note [Expectation modes]: which runs an entry applies to. */
export const EXPECTATION_MODES = ["eager", "compiled", "any"] as const;
export type ExpectationMode = (typeof EXPECTATION_MODES)[number];

/** Does an entry of `mode` (absent: any) apply to a run that is `compiled` (or not)? */
export function modeApplies(mode: ExpectationMode | undefined, compiled: boolean): boolean {
  const m = mode ?? "any";
  return m === "any" || (m === "compiled") === compiled;
}

export interface Expectation {
  readonly op: string;
  readonly dtype: string;
  readonly check: string;
  readonly reason: string;
  readonly issue?: string;
  /** Note [CPU capability]: applies only where eager CPU runs this capability (a glob) */
  readonly cpu?: string;
  /** Note [Expectation modes]; absent: any */
  readonly mode?: ExpectationMode;
  readonly loc?: SourceLoc;
}

export interface Tolerance {
  readonly op: string;
  readonly dtype?: string;
  readonly rtol?: number;
  readonly atol?: number;
  /** Note [Expectation modes]; absent: any */
  readonly mode?: ExpectationMode;
}

export interface ExpectationsFile {
  readonly expectations: readonly Expectation[];
  readonly tolerances: readonly Tolerance[];
}

export const EMPTY_EXPECTATIONS: ExpectationsFile = { expectations: [], tolerances: [] };

export function loadExpectations(file: string): ExpectationsFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UserError(`cannot read expectations file ${file}: ${(e as Error).message}`);
  }
  return parseExpectations(text, file);
}

export function parseExpectations(text: string, file: string): ExpectationsFile {
  const doc = parseDocument(text, { uniqueKeys: true });
  const pos = positions(text);
  const diags: Diagnostic[] = [];
  const locOf = (n: YNode | null | undefined): SourceLoc =>
    n ? { file, ...pos(n.offset) } : { file, line: 1, col: 1 };
  const err = (n: YNode | null | undefined, message: string) =>
    diags.push({ severity: "error", loc: locOf(n), message });
  for (const e of doc.errors) diags.push({ severity: "error", loc: { file, ...pos(e.offset) }, message: e.message });
  if (diags.length > 0) throw UserError.fromDiagnostics(diags);
  const expectations: Expectation[] = [];
  const tolerances: Tolerance[] = [];
  const root = doc.root;
  if (root === null) return EMPTY_EXPECTATIONS;
  if (!isMap(root)) {
    err(root, "the expectations file must be a mapping with keys `expectations` and/or `tolerances`");
    throw UserError.fromDiagnostics(diags);
  }
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : "";
    const value = pair.value;
    if (key !== "expectations" && key !== "tolerances") {
      err(pair.key, `unknown key '${key}'; allowed: expectations, tolerances`);
      continue;
    }
    if (value === null) continue;
    if (!isSeq(value)) {
      err(value, `'${key}' must be a list of mappings`);
      continue;
    }
    for (const node of value.items) {
      if (!isMap(node)) {
        err(node, `each entry of '${key}' must be a mapping`);
        continue;
      }
      const fields = new Map<string, { value: unknown; node: YNode }>();
      for (const p of node.items) {
        const k = isScalar(p.key) ? String(p.key.value) : "";
        fields.set(k, { value: isScalar(p.value) ? p.value.value : undefined, node: p.value ?? p.key });
      }
      const allowed =
        key === "expectations"
          ? ["op", "test", "dtype", "check", "reason", "issue", "cpu", "mode"]
          : ["op", "dtype", "rtol", "atol", "mode"];
      for (const [k, f] of fields) {
        if (!allowed.includes(k)) err(f.node, `unknown field '${k}' in ${key} entry; allowed: ${allowed.join(", ")}`);
      }
      const str = (k: string, required: boolean): string | undefined => {
        const f = fields.get(k);
        if (!f) {
          if (required) err(node, `${key} entry needs '${k}'`);
          return undefined;
        }
        if (typeof f.value !== "string" || f.value.length === 0) {
          err(f.node, `'${k}' must be a non-empty string`);
          return undefined;
        }
        return f.value;
      };
      const num = (k: string): number | undefined => {
        const f = fields.get(k);
        if (!f) return undefined;
        const v = typeof f.value === "string" ? Number(f.value) : f.value;
        if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
          err(f.node, `'${k}' must be a non-negative number`);
          return undefined;
        }
        return v;
      };
      // An expectations entry names an operator (op:) or an upstream test (test:), not both.
      const isTest = key === "expectations" && fields.has("test");
      if (isTest && fields.has("op")) err(fields.get("op")?.node, "an entry names an op or a test, not both");
      for (const k of isTest ? ["dtype", "check"] : []) {
        const f = fields.get(k);
        if (f) err(f.node, `'${k}' applies to op entries; a test entry names whole tests (test ids or globs)`);
      }
      const modeText = str("mode", false);
      if (modeText !== undefined && !(EXPECTATION_MODES as readonly string[]).includes(modeText)) {
        err(fields.get("mode")?.node, `unknown mode '${modeText}'; allowed: ${EXPECTATION_MODES.join(", ")}`);
      }
      const mode = modeText !== undefined && modeText !== "any" ? (modeText as ExpectationMode) : undefined;
      const test = isTest ? str("test", true) : undefined;
      if (key === "expectations" && !isTest && !fields.has("op")) {
        err(node, "expectations entry needs 'op' (an operator glob) or 'test' (an upstream test id glob)");
      }
      const op = isTest ? (test ? `${UPSTREAM_PREFIX}${test}` : undefined) : str("op", key === "tolerances");
      const dtype = isTest ? undefined : str("dtype", false);
      if (key === "expectations") {
        const check = isTest ? undefined : str("check", false);
        if (check !== undefined && check !== "*" && !ALL_CHECKS.includes(check)) {
          err(fields.get("check")?.node, `unknown check '${check}'; allowed: ${ALL_CHECKS.join(", ")}`);
        }
        const reason = str("reason", true);
        const issue = str("issue", false);
        const cpu = str("cpu", false);
        if (op && reason) {
          expectations.push({
            op,
            dtype: dtype ?? "*",
            check: check ?? "*",
            reason,
            ...(issue ? { issue } : {}),
            ...(cpu ? { cpu } : {}),
            ...(mode ? { mode } : {}),
            loc: locOf(node),
          });
        }
      } else {
        const rtol = num("rtol");
        const atol = num("atol");
        if (rtol === undefined && atol === undefined) err(node, "a tolerances entry needs rtol and/or atol");
        if (op)
          tolerances.push({
            op,
            ...(dtype ? { dtype } : {}),
            ...(rtol !== undefined ? { rtol } : {}),
            ...(atol !== undefined ? { atol } : {}),
            ...(mode ? { mode } : {}),
          });
      }
    }
  }
  if (diags.length > 0) throw UserError.fromDiagnostics(diags);
  return { expectations, tolerances };
}

/** fnmatch-style glob: `*`, `?` and `[...]`; everything else literal. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") re += ".*";
    else if (c === "?") re += ".";
    else if (c === "[") {
      const j = glob.indexOf("]", i + 1);
      if (j < 0) re += "\\[";
      else {
        re += `[${glob
          .slice(i + 1, j)
          .replace(/^!/, "^")
          .replace(/\\/g, "\\\\")}]`;
        i = j;
      }
    } else re += c.replace(/[.+^${}()|\\/]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

export function globMatch(glob: string, s: string): boolean {
  return globToRegExp(glob).test(s);
}

const FAILING = new Set(["fail", "compile-failed", "crash", "timeout"]);

/**
 * Applies expectations: a matching failure becomes XFAIL; when none of an
 * expectation's matching results fails, its passing results become XPASS.
 *
 * Note [CPU capability]: some of eager CPU's behaviour depends on the
 * vector unit ATen dispatches to (torch.backends.cpu.get_cpu_capability()):
 * its AVX512 gelu gives NaN at +inf and overflows near the float max where
 * AVX2 and the scalar loop do not, and its AVX512 half-precision
 * gelu_backward goes to oneDNN, which cannot broadcast (float16 only where
 * the CPU has AVX512-FP16: the runner's capability then reads "AVX512+fp16",
 * python/opgen_conformance/__main__.py cpu_capability). An expectation with
 * `cpu:` applies only on a machine of that capability (`cpu` here; an
 * expectation with `cpu:` never applies when it is unknown), so it neither
 * hides a failure elsewhere nor turns into XPASS on another CI machine.
 */
export function applyExpectations(
  results: readonly Result[],
  exp: readonly Expectation[],
  cpu?: string,
  compiled = false,
): Result[] {
  const out = [...results];
  for (const e of exp) {
    if (!modeApplies(e.mode, compiled)) continue;
    if (e.cpu !== undefined && (cpu === undefined || !globMatch(e.cpu, cpu))) continue;
    const rop = globToRegExp(e.op);
    const rdt = globToRegExp(e.dtype);
    const rck = globToRegExp(e.check);
    const idx: number[] = [];
    out.forEach((r, i) => {
      if (rop.test(r.op) && rdt.test(r.dtype) && rck.test(r.check)) idx.push(i);
    });
    const anyFailing = idx.some((i) => FAILING.has(out[i]!.status) || out[i]!.status === "xfail");
    const expected = { reason: e.reason, ...(e.issue ? { issue: e.issue } : {}) };
    for (const i of idx) {
      const r = out[i]!;
      if (FAILING.has(r.status)) {
        out[i] = { ...r, status: "xfail", message: `expected (${e.reason}): ${r.status}: ${r.message}`, expected };
      } else if (!anyFailing && r.status === "pass") {
        out[i] = { ...r, status: "xpass", message: `expected to fail (${e.reason}) but passed`, expected };
      }
    }
  }
  return out;
}
