/**
 * The report's coverage section (types.ts ReportCoverage): what `opgen-backend
 * coverage` says of the project's backend.yaml against the installed torch,
 * taken from computeCoverage itself so the two can never disagree. The
 * runner does not derive any of it.
 *
 * Computed once per op run (the lazy catalog and the coverage take ~0.3 s):
 * the run needs it for the core overloads that decompose (Note below), the
 * reports for their uncovered-core section.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { ManifestOperator } from "../dest/manifest.js";
import type { ReportCoverage } from "./types.js";

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
 * (python/opgen_conformance/checks.py fallback_verdict, told by the run
 * config's `decomposed`), it is left out of core_passed and counted apart
 * ("; 1 decomposes into the CPU fallback"). A warning, not a failure: the
 * backend never claimed the overload, and a starter project meets this for
 * every decomposition into what it has not written yet. A view op on the
 * fallback still fails (Note [No views through the fallback]).
 */

export interface CoreCoverage {
  /** the reports' section */
  readonly coverage: ReportCoverage;
  /** the core overloads of backend.yaml that decompose, as manifest entries (served_by "decomposition") */
  readonly decomposed: readonly ManifestOperator[];
}

/**
 * Coverage of `<project>/backend.yaml`, or undefined (with a warning) when it
 * cannot be computed, e.g. a --manifest of a project without backend.yaml.
 */
export async function coreCoverage(project: string, python: string): Promise<CoreCoverage | undefined> {
  const yamlPath = path.join(project, "backend.yaml");
  if (!existsSync(yamlPath)) return undefined;
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
    return {
      coverage: {
        core_total: cov.core.total,
        core_covered: cov.core.covered,
        missing: cov.core.missing.map((m) => ({ name: m.name, fate: m.fate })),
      },
      decomposed: cov.core.missing
        .filter((m) => m.fate === "decomposes")
        .map((m) => decomposedOperator(catalog.byName.get(m.name)!)),
    };
  } catch (e) {
    process.stderr.write(
      `opgen-backend: warning: ${yamlPath}: coverage failed, so the report lacks the uncovered core overloads and the core overloads that decompose are not tested: ${(e as Error).message.split("\n")[0]}\n`,
    );
    return undefined;
  }
}
