/**
 * The `gen` pipeline as one call, for every command that generates:
 * torch discovery -> operator catalog -> backend YAML -> plan -> emitters ->
 * writer. `opgen-backend gen` and `opgen-backend build` both run it, so they
 * apply the same checks and the same write-if-changed; it returns what it
 * decided (config, plan, write results) and prints nothing: callers report.
 */
import type { BackendConfig } from "../backend/types.js";
import type { Plan } from "../dest/plan.js";
import type { OperatorCatalog } from "../model/types.js";
import { discoverTorch } from "../torch/discover.js";
import type { Diagnostic } from "../util/errors.js";
import { type WriteOptions, type WriteResult, writeFiles } from "../write/files.js";

// The pipeline's modules are imported when gen runs, in parallel with the
// Python probe (loadInputs), so that nothing waits needlessly.
const catalogModule = () => import("../model/catalog.js");
const backendModule = () => import("../backend/load.js");
const destModule = () => import("../dest/index.js");

/**
 * The operator catalog of `python`'s torch (or `given`, a catalog the caller
 * already has: `upgrade --apply` with a release read from PyPI) and the
 * backend YAML checked against it.
 */
export async function loadInputs(
  yamlPath: string,
  python?: string,
  given?: OperatorCatalog,
): Promise<{ catalog: OperatorCatalog; config: BackendConfig }> {
  // Start Python first; load our modules while it runs.
  const installP = given ? null : discoverTorch(python);
  installP?.catch(() => {});
  const [{ loadCatalog }, { loadBackendYaml }] = await Promise.all([catalogModule(), backendModule()]);
  const catalog = given ?? (await loadCatalog(await installP!));
  const config = loadBackendYaml(yamlPath, catalog);
  return { catalog, config };
}

export interface GenRequest {
  readonly yamlPath: string;
  readonly outDir: string;
  /** The Python whose torch we generate for (the discover rule applies when absent). */
  readonly python?: string;
  /** The catalog to generate for, instead of discovering `python`'s torch. */
  readonly catalog?: OperatorCatalog;
  readonly mode?: WriteOptions;
  /** Also write a skeleton .cpp per kernel without a definition here (create-only). */
  readonly stubsDir?: string;
  /** Check that kernel sources under this directory define every kernel. */
  readonly implPath?: string;
}

export interface GenOutcome {
  readonly config: BackendConfig;
  readonly catalog: OperatorCatalog;
  readonly plan: Plan;
  readonly result: WriteResult;
  readonly stubs?: WriteResult;
  /** The `implPath` check's findings (errors and warnings). */
  readonly kernelProblems: readonly Diagnostic[];
}

export async function runGen(req: GenRequest): Promise<GenOutcome> {
  // The emitters load while the probe runs.
  const dest = destModule();
  dest.catch(() => {});
  const { catalog, config } = await loadInputs(req.yamlPath, req.python, req.catalog);
  const { buildPlan, generateFromPlan } = await dest;
  const plan = buildPlan(config, catalog);
  const files = generateFromPlan(plan);
  const mode = req.mode ?? {};
  const result = writeFiles(req.outDir, files, mode);
  // The vendor's sources are read only when asked for.
  const impl = req.stubsDir !== undefined || req.implPath !== undefined ? await import("../impl/kernels.js") : null;
  const stubs =
    req.stubsDir === undefined || impl === null
      ? undefined
      : writeFiles(req.stubsDir, impl.kernelStubs(plan, { existingDirs: [req.stubsDir] }), mode);
  const kernelProblems = req.implPath === undefined || impl === null ? [] : impl.missingKernels(plan, req.implPath);
  return { config, catalog, plan, result, stubs, kernelProblems };
}
