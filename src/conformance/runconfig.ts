/**
 * The run config `opgen-backend test` hands the Python runner
 * (python/opgen_conformance/config.py RunConfig reads it).
 *
 * Note [Run config contract]: every key is written, every default is decided
 * here (RUN_CONFIG_DEFAULTS, which the CLI's flags also default to), and the
 * runner refuses a config with a missing or unknown key or another `version`.
 * Change this file, config.py and RUN_CONFIG_VERSION together.
 */
import type { Tolerance } from "./expectations.js";
import type { OpKind } from "./types.js";

/** python/opgen_conformance/__init__.py PROTOCOL_VERSION (a test says they agree). */
export const RUN_CONFIG_VERSION = 4;

export interface RunConfigOp {
  readonly name: string;
  readonly kind: OpKind;
  readonly view: boolean;
  readonly core: boolean;
  /** Note [Core overloads through their decomposition] (coverage.ts): the fallback check only warns */
  readonly decomposed: boolean;
  readonly dtypes: readonly string[];
}

/** One case of a model file (python/opgen_conformance/modelfile.py, Note [Model case]). */
export interface RunConfigModel {
  /** `model:<file stem>:<case>`, the case's op name in results */
  readonly name: string;
  readonly file: string;
  readonly case: string;
}

export interface RunConfig {
  readonly version: number;
  /** The torch device name under test ("cpu" with `faults`: the runner's self-test). */
  readonly device: string;
  /** The Python package that registers the device; null: none (faults mode). */
  readonly package: string | null;
  /** A Python file of injected faults, run on CPU instead of a device; null: none. */
  readonly faults: string | null;
  readonly seed: number;
  /** Samples per op and dtype. */
  readonly max_samples: number;
  /** How many of an op's first samples also check gradients. */
  readonly grad_samples: number;
  /** Seconds one sample may take before it counts as a hang. */
  readonly timeout_s: number;
  /** Seconds a worker may take to import torch and the device. */
  readonly startup_timeout_s: number;
  /** Seconds generating one task's samples may take (at least timeout_s). */
  readonly gen_timeout_s: number;
  /** Crashes or hangs of one (op, dtype) before its remaining samples are skipped. */
  readonly max_incidents: number;
  readonly workers: number;
  /** Per-worker allocation limit (Note [Worker memory limit]); null: none. */
  readonly worker_memory_bytes: number | null;
  /** Continue from the results file's earlier records. */
  readonly resume: boolean;
  /**
   * `test --compile`: every device call runs through `torch.compile(fn, backend="inductor")`
   * (Note [Compiled mode] in python/opgen_conformance/compiled.py); results are marked compiled.
   */
  readonly compile: boolean;
  /** The results JSONL. */
  readonly results: string;
  /** OpInfo index and sample cache. */
  readonly cache_dir: string;
  readonly tolerances: readonly Tolerance[];
  readonly ops: readonly RunConfigOp[];
  readonly models: readonly RunConfigModel[];
}

type Defaulted = Exclude<keyof RunConfig, "device" | "results" | "cache_dir" | "ops">;

export const RUN_CONFIG_DEFAULTS: Readonly<Pick<RunConfig, Defaulted>> = Object.freeze({
  version: RUN_CONFIG_VERSION,
  package: null,
  faults: null,
  seed: 0,
  max_samples: 6,
  grad_samples: 3,
  timeout_s: 60,
  startup_timeout_s: 300,
  gen_timeout_s: 180,
  max_incidents: 2,
  workers: 1,
  worker_memory_bytes: null,
  resume: false,
  compile: false,
  tolerances: [],
  models: [],
});

/** A complete run config: the given keys over the defaults. */
export function runConfig(
  given: Pick<RunConfig, "device" | "results" | "cache_dir" | "ops"> & Partial<Omit<RunConfig, "version">>,
): RunConfig {
  return { ...RUN_CONFIG_DEFAULTS, ...given, version: RUN_CONFIG_VERSION };
}
