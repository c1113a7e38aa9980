/**
 * The report's coverage section (types.ts ReportCoverage): what `opgen-backend
 * coverage` says of the project's backend.yaml against the installed torch,
 * taken from computeCoverage itself so the two can never disagree. The
 * runner does not derive any of it.
 *
 * Only computed when a run writes a report file (JSON/HTML/Markdown): the
 * edit-and-retest loop (`test --ops X`, terminal only) does not pay for
 * loading the operator catalog.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { ManifestOperator } from "../dest/manifest.js";
import type { OpUnderTest, ReportCoverage, Result } from "./types.js";

/** Coverage of `<project>/backend.yaml`, or undefined (with a warning) when it cannot be computed. */
export async function reportCoverage(project: string, python: string): Promise<ReportCoverage | undefined> {
  const yamlPath = path.join(project, "backend.yaml");
  if (!existsSync(yamlPath)) return undefined;
  try {
    const [{ discoverTorch }, { loadCatalog }, { loadBackendYaml }, { computeCoverage }] = await Promise.all([
      import("../torch/discover.js"),
      import("../model/catalog.js"),
      import("../backend/load.js"),
      import("../dest/coverage.js"),
    ]);
    const catalog = await loadCatalog(await discoverTorch(python));
    const cov = computeCoverage(loadBackendYaml(yamlPath, catalog), catalog);
    return {
      core_total: cov.core.total,
      core_covered: cov.core.covered,
      missing: cov.core.missing.map((m) => ({ name: m.name, fate: m.fate })),
    };
  } catch (e) {
    process.stderr.write(
      `opgen-backend: warning: the report lacks the uncovered core overloads: coverage of ${yamlPath} failed: ${(e as Error).message.split("\n")[0]}\n`,
    );
    return undefined;
  }
}

/**
 * Note [Core overloads through their decomposition]: a core ATen overload
 * with a CompositeImplicitAutograd kernel that the backend does not register
 * (coverage fate "decomposes": var.dim, avg_pool1d, the sym_* queries, ...)
 * still runs on the device, through the overloads it decomposes into. A user
 * meets it as any other op, so `test` runs it as any other op: it is added to
 * the run (never to the manifest gen writes), sampled and judged with every
 * check. It counts towards core ATen conformance when it passes with no
 * operator on the CPU fallback, and the headline says what served it
 * ("193/193 (100.0%): 183 kernels, 10 through their decomposition"). One that
 * decomposes into an operator the device lacks is reported as such: its
 * fallback check warns "decomposes into operators served by the CPU fallback"
 * (decompositionVerdicts), it is left out of core_passed and counted apart
 * ("; 1 decomposes into the CPU fallback"). A warning, not a failure: the
 * backend never claimed the overload, and a starter project meets this for
 * every decomposition into what it has not written yet. A view op on the
 * fallback still fails (Note [No views through the fallback]).
 *
 * The core overloads of `<project>/backend.yaml` that decompose, as manifest
 * entries (served_by "decomposition"); none when the coverage cannot be
 * computed (with a warning), e.g. a --manifest of a project without backend.yaml.
 */
export async function decomposedCoreOps(project: string, python: string): Promise<ManifestOperator[]> {
  const yamlPath = path.join(project, "backend.yaml");
  if (!existsSync(yamlPath)) return [];
  try {
    const [{ discoverTorch }, { loadCatalog }, { loadBackendYaml }, { computeCoverage }, { decomposedOperator }] =
      await Promise.all([
        import("../torch/discover.js"),
        import("../model/catalog.js"),
        import("../backend/load.js"),
        import("../dest/coverage.js"),
        import("../dest/manifest.js"),
      ]);
    const catalog = await loadCatalog(await discoverTorch(python));
    const cov = computeCoverage(loadBackendYaml(yamlPath, catalog), catalog);
    return cov.core.missing
      .filter((m) => m.fate === "decomposes")
      .map((m) => decomposedOperator(catalog.byName.get(m.name)!));
  } catch (e) {
    process.stderr.write(
      `opgen-backend: warning: the core overloads that decompose are not tested: coverage of ${yamlPath} failed: ${(e as Error).message.split("\n")[0]}\n`,
    );
    return [];
  }
}

/** The runner's fallback verdicts for overloads run through their decomposition, as the Note above says. */
export function decompositionVerdicts(results: readonly Result[], ops: readonly OpUnderTest[]): Result[] {
  const decomposed = new Set(ops.filter((o) => o.decomposed).map((o) => o.op));
  return results.map((r) =>
    decomposed.has(r.op) && r.check === "fallback" && r.status === "fail" && !r.message.startsWith("view ops")
      ? {
          ...r,
          status: "warn",
          message: `decomposes into operators served by the CPU fallback: ${r.message.replace(/^[^:]*: /, "")}`,
        }
      : decomposed.has(r.op) && r.check === "fallback" && r.status === "warn"
        ? {
            ...r,
            message: `decomposes into operators served by the CPU fallback: ${r.message.replace(/^[^:]*: /, "")}`,
          }
        : r,
  );
}
