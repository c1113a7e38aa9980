/**
 * Loads the logic-free Handlebars templates under templates/ (placeholders and
 * #each only; every decision is made in TypeScript before rendering). HTML
 * escaping is off: the output is C++ and JSON, and everything printed has
 * been checked where it came from (Note [Nothing unchecked reaches C++]).
 *
 * `npm run build` precompiles the templates (scripts/precompile-templates.mjs);
 * a precompiled template is used only while its source text is unchanged, and
 * then only the Handlebars runtime is loaded: the full compiler costs a cold
 * `gen` ~60 ms. Handlebars is CommonJS, so it is required synchronously, on
 * first render.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type HandlebarsNS from "handlebars";

/** templates/ at the package root, from src/dest (tests) or dist/dest (built). */
const TEMPLATE_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));
const OPTIONS = { noEscape: true, strict: true } as const;

type Precompiled = Readonly<
  Record<string, { readonly source: string; readonly spec: Parameters<typeof HandlebarsNS.template>[0] }>
>;

const require = createRequire(import.meta.url);
let precompiled: Precompiled | null | undefined;

function loadPrecompiled(): Precompiled | null {
  try {
    return require("./templates.precompiled.cjs") as Precompiled;
  } catch {
    return null; // not built (tests run from src/)
  }
}

const cache = new Map<string, HandlebarsNS.TemplateDelegate>();

export function render(name: string, context: object): string {
  let t = cache.get(name);
  if (!t) {
    const text = readFileSync(`${TEMPLATE_DIR}${name}`, "utf8");
    precompiled ??= loadPrecompiled();
    const pre = precompiled?.[name];
    if (pre && pre.source === text) {
      t = (require("handlebars/runtime") as typeof HandlebarsNS).template(pre.spec);
    } else {
      t = (require("handlebars") as typeof HandlebarsNS).compile(text, OPTIONS);
    }
    cache.set(name, t);
  }
  return t(context);
}
