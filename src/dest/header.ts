/**
 * Plan -> `<Backend>NativeFunctions.h`: the struct of static kernel
 * declarations vendors implement (torchgen DispatchKeyNativeFunctions.h,
 * same declarations, our banner).
 */
import path from "node:path";
import type { Plan } from "./plan.js";
import { render } from "./templates.js";

export function headerFileName(plan: Plan): string {
  return `${plan.config.backend}NativeFunctions.h`;
}

export function emitHeader(plan: Plan, banner: string): string {
  const c = plan.config;
  return render("NativeFunctions.h.hbs", {
    banner,
    backend: c.backend,
    yamlName: path.basename(c.file),
    cppNamespace: c.cppNamespace,
    className: c.className,
    declarations: plan.declarations,
  });
}
