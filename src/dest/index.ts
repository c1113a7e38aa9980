/**
 * The emitters of `opgen-backend gen`, behind one call: a Plan -> the
 * generated files as `{path, content}` (src/write puts them on disk). Pure:
 * nothing here reads or writes the disk. Also the kernel-stub emitter
 * (`gen --stubs`, stubs.ts); checking the vendor's sources is src/impl's.
 */
import path from "node:path";
import type { BackendConfig } from "../backend/types.js";
import type { OperatorCatalog } from "../model/types.js";
import { GENERATOR } from "../vocab.js";
import type { OutputFile } from "../write/files.js";
import { emitAutogradFunctions } from "./autograd.js";
import { emitHeader, headerFileName } from "./header.js";
import { buildManifest, emitManifest } from "./manifest.js";
import { buildPlan, type Plan } from "./plan.js";
import { emitOpsModule } from "./python.js";
import { printRegister, registerModels } from "./register.js";

function banner(config: BackendConfig): string {
  return `${GENERATOR} from ${path.basename(config.file)}. Do not edit: rerun \`opgen-backend gen\`.`;
}

/** buildPlan + generateFromPlan. */
export function generate(config: BackendConfig, catalog: OperatorCatalog): OutputFile[] {
  return generateFromPlan(buildPlan(config, catalog));
}

export function generateFromPlan(plan: Plan): OutputFile[] {
  const c = plan.config;
  const headerName = headerFileName(plan);
  const b = banner(c);
  const files: OutputFile[] = [{ path: headerName, content: emitHeader(plan, b) }];
  for (const model of registerModels(plan, b)) {
    files.push({
      path: `Register${model.dispatchKey}.cpp`,
      content: printRegister(model, c.backend, headerName),
    });
  }
  const fns = emitAutogradFunctions(plan, headerName, b);
  if (fns !== null) files.push({ path: "AutogradFunctions.cpp", content: fns });
  if (c.custom.length > 0) files.push({ path: "ops.py", content: emitOpsModule(plan, b) });
  files.push({ path: "op_manifest.json", content: emitManifest(buildManifest(plan)) });
  return files;
}

export { type GradientReport, gradientReport, gradientSummary } from "./gradients.js";
export type { KernelDecl, Plan, Registration, ServedBy } from "./plan.js";
export { buildPlan } from "./plan.js";
export { emitKernelStubs } from "./stubs.js";
