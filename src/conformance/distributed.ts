/**
 * `opgen-backend test --distributed N`: the project's c10d backend
 * ("<device>ccl", backends/ref/csrc/runtime/Distributed.cpp) checked at
 * world size N by python/opgen_conformance/distributed.py (N rank processes
 * on this machine, Gloo over the loopback), each collective and dtype
 * against Gloo on the same CPU tensors. Its rows become the report's results
 * (op `c10d::<collective>`, check `values`), so they are written, summarized
 * and gate CI as the operator checks do.
 */
import { execa } from "execa";
import { resolvePython } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { makeReport } from "./aggregate.js";
import { pythonEnv } from "./driver.js";
import { projectTarget } from "./select.js";
import type { OpUnderTest, Report, Result, Status } from "./types.js";

export interface DistributedOptions {
  readonly projectDir: string;
  readonly python?: string;
  readonly manifest?: string;
  readonly world: number;
  readonly timeoutS: number;
}

export interface DistributedRow {
  readonly op: string;
  readonly dtype: string;
  readonly check: string;
  readonly sample: number;
  readonly input: string;
  readonly status: "pass" | "fail";
  readonly message: string;
}

/** One result per collective × dtype × check: the first failing sample, else the first. */
export function distributedResults(rows: readonly DistributedRow[]): Result[] {
  const groups = new Map<string, DistributedRow[]>();
  for (const r of rows) {
    const key = `${r.op}\u0000${r.dtype}\u0000${r.check}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()].map((g) => {
    const shown = g.find((r) => r.status === "fail") ?? (g[0] as DistributedRow);
    const status: Status = shown.status;
    return {
      op: shown.op,
      dtype: shown.dtype,
      check: shown.check,
      status,
      message: shown.message,
      seed: 0,
      sample: shown.sample,
      samples: g.length,
      input: shown.input,
    };
  });
}

export async function runDistributed(opts: DistributedOptions): Promise<Report> {
  const { manifest, args } = projectTarget(opts.projectDir, opts.manifest);
  const python = resolvePython(opts.python);
  const r = await execa(
    python,
    ["-m", "opgen_conformance.distributed", ...args, "--world", String(opts.world), "--timeout", String(opts.timeoutS)],
    { env: pythonEnv(), reject: false },
  );
  const last = () => String(r.stderr).trim().split("\n").slice(-8).join("\n");
  if (r.exitCode !== 0) {
    throw new UserError(
      `the distributed checks at world size ${opts.world} could not run with '${python}':\n${last()}`,
    );
  }
  let rows: DistributedRow[];
  try {
    rows = JSON.parse(String(r.stdout));
  } catch {
    throw new UserError(`the distributed checks printed no results:\n${last()}`);
  }
  return distributedReport(rows, manifest, opts.world);
}

/**
 * The report of one run: an op per collective (its dtypes), marked as the
 * distributed tier in meta (so the reports' headlines name the backend and
 * world size, and count collectives, not core-ATen operators).
 */
export function distributedReport(
  rows: readonly DistributedRow[],
  manifest: { readonly device: string; readonly torch_version?: string },
  world: number,
): Report {
  const results = distributedResults(rows);
  const dtypes = new Map<string, Set<string>>();
  for (const x of results) dtypes.set(x.op, (dtypes.get(x.op) ?? new Set()).add(x.dtype));
  const ops: OpUnderTest[] = [...dtypes].map(([op, ds]) => ({
    op,
    kind: "mutable",
    core: false,
    view: false,
    dtypes: [...ds].sort(),
  }));
  return makeReport(
    {
      device: manifest.device,
      seed: 0,
      max_samples: 1,
      torch_version: manifest.torch_version ?? "",
      shards: [],
      distributed: { backend: `${manifest.device}ccl`, world },
    },
    ops,
    results,
    0,
  );
}
