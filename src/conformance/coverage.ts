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
import type { ReportCoverage } from "./types.js";

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
