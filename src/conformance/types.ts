/**
 * The data a conformance run produces, from the Python runner's per-sample
 * JSONL records to the per (op, dtype, check) results every report is made of.
 *
 * Note [One result per op x dtype x check]: a check's result over all samples
 * of an (op, dtype) is its worst sample (crash > timeout > fail > warn > pass >
 * skip); seed and sample index name the first sample with that status, so a
 * reader can rerun exactly that sample alone. Every report (terminal, JSON,
 * JUnit, Markdown, HTML) is a view of the same `Report`, so they agree.
 */
import { DEFAULT_DTYPES as DEFAULTS, DTYPES, type SampleStatus, type Status } from "../vocab.js";
import type { ModelCase } from "./models.js";
import type { UpstreamReport } from "./upstream-report.js";

export type { SampleStatus, Status } from "../vocab.js";

/** Report order; python/opgen_conformance/checks.py CHECKS is the same list (a test says so). */
export const CHECKS = [
  "errors",
  "invalid_inputs",
  "values",
  "extremes",
  "dtype",
  "shape",
  "device",
  "device_index",
  "strides",
  "mutation",
  "inplace",
  "out",
  "out_nonempty",
  "view",
  "gradients",
  "fallback",
  "compile",
] as const;
export type Check = (typeof CHECKS)[number];

/** dtype order in reports: floating first, then complex, integers, bool (the dtypes backend.yaml may claim). */
export const DTYPE_ORDER: readonly string[] = DTYPES;

/** Claimed when neither the manifest nor --dtypes says otherwise. */
export const DEFAULT_DTYPES: readonly string[] = DEFAULTS;

export const STATUSES: readonly Status[] = [
  "pass",
  "warn",
  "fail",
  "compile-failed",
  "crash",
  "timeout",
  "skip",
  "xfail",
  "xpass",
];

export const OP_KINDS = ["functional", "inplace", "out", "mutable", "scratch"] as const;
export type OpKind = (typeof OP_KINDS)[number];

/** One operator under test, from the manifest after selection. */
export interface OpUnderTest {
  readonly op: string;
  readonly kind: OpKind;
  readonly core: boolean;
  readonly view: boolean;
  readonly dtypes: readonly string[];
  /** a core overload the backend does not register, run through its decomposition (coverage.ts) */
  readonly decomposed?: true;
}

/** One line of the runner's results JSONL. */
export type RawRecord =
  | {
      readonly kind: "header";
      readonly seed: number;
      readonly max_samples: number;
      readonly device: string;
    }
  | {
      readonly kind: "sample";
      readonly op: string;
      readonly dtype: string;
      readonly sample: number;
      readonly seed: number;
      readonly source: string;
      readonly desc: string;
      readonly checks: Readonly<Record<string, readonly [SampleStatus, string]>>;
      /** the sample crashed or hung (the runner counts these per task) */
      readonly incident?: boolean;
      /** a model case's report data (python/opgen_conformance/models.py; read by models.ts) */
      readonly model?: unknown;
    }
  | {
      readonly kind: "task";
      readonly op: string;
      readonly dtype: string;
      readonly samples: number;
      readonly stopped?: string;
    };

export interface Result {
  readonly op: string;
  readonly dtype: string;
  readonly check: string;
  readonly status: Status;
  readonly message: string;
  readonly seed: number;
  readonly sample: number;
  /** how many samples this check ran on */
  readonly samples: number;
  /** the sample's inputs, described without addresses */
  readonly input: string;
  /** expectation that turned this into xfail/xpass */
  readonly expected?: { readonly reason: string; readonly issue?: string };
  /** `test --compile`: the device side ran through torch.compile (Inductor); absent in eager runs */
  readonly compiled?: true;
}

export interface Summary {
  readonly total: number;
  readonly passed: number;
  readonly warned: number;
  readonly failed: number;
  readonly crashed: number;
  readonly timed_out: number;
  /** `test --compile`: Inductor could not compile the call (Note [Compiled mode]) */
  readonly compile_failed: number;
  readonly skipped: number;
  readonly xfail: number;
  readonly xpass: number;
  readonly ops: number;
  readonly ops_passed: number;
  readonly core_total: number;
  readonly core_passed: number;
  /** of core_passed, the overloads that passed through their decomposition (absent in older reports) */
  readonly core_decomposed?: number;
  /** core overloads run through their decomposition that reached the CPU fallback: not counted in core_passed */
  readonly core_decomposed_fallback?: number;
}

export interface ReportMeta {
  readonly device: string;
  readonly seed: number;
  readonly max_samples: number;
  readonly torch_version: string;
  readonly shards: readonly string[];
  /** `test --compile`: every result is of compiled mode; absent in eager runs */
  readonly compiled?: true;
  /** `test --distributed N`: the results are the c10d backend's collectives at world size N; absent otherwise */
  readonly distributed?: { readonly backend: string; readonly world: number };
}

/**
 * The core-ATen overloads the backend does not register at all, as `coverage`
 * computes them (src/dest/coverage.ts computeCoverage, from backend.yaml and
 * the installed torch): the runner never derives them itself. `fate` says
 * what happens to a call: "cpu-fallback" (the boxed fallback copies to CPU),
 * "not-implemented" (fallback: none), "decomposes" or "composite-kernel".
 */
export interface ReportCoverage {
  readonly core_total: number;
  readonly core_covered: number;
  readonly missing: readonly { readonly name: string; readonly fate: string }[];
}

export interface Report {
  readonly generator: string;
  readonly meta: ReportMeta;
  readonly summary: Summary;
  readonly ops: readonly OpUnderTest[];
  readonly results: readonly Result[];
  /** absent when the run had no backend.yaml to compute it from (e.g. --manifest alone) */
  readonly coverage?: ReportCoverage;
  /** the model cases of a `test --model` run (models.ts); absent when it ran none */
  readonly models?: readonly ModelCase[];
  /** the PyTorch test files of a `test --upstream` run (upstream-report.ts); absent when it ran none */
  readonly upstream?: UpstreamReport;
}

export { GENERATOR } from "../vocab.js";
