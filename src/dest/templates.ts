/**
 * Loads the logic-free Handlebars templates under templates/ (placeholders and
 * #each only; every decision is made in TypeScript before rendering). HTML
 * escaping is off: the output is C++ and JSON, and everything printed has
 * been checked where it came from (Note [Nothing unchecked reaches C++]).
 *
 * `npm run build` compiles each template to a plain JavaScript function
 * (scripts/precompile-templates.mjs, into dist/dest/templates.precompiled.cjs)
 * that renders what Handlebars renders under strict mode. A compiled template
 * is used only while its source text is unchanged, and then Handlebars is not
 * loaded at all (its runtime cost a cold `gen` ~20 ms before the first
 * render). Otherwise (tests run from src/, an edited template, no build) the
 * template is compiled from source with full Handlebars, which is CommonJS and
 * so required synchronously, on first render. Either way a missing property
 * throws `templates/<file>:line:col: "name" not defined in <context>`.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type HandlebarsNS from "handlebars";

/** templates/ at the package root, from src/dest (tests) or dist/dest (built). */
const TEMPLATE_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));
const OPTIONS = { noEscape: true, strict: true } as const;

type Render = (context: object) => string;
type Precompiled = Readonly<Record<string, { readonly source: string; readonly render: Render }>>;

const require = createRequire(import.meta.url);
let precompiled: Precompiled | null | undefined;

function loadPrecompiled(): Precompiled | null {
  try {
    return require("./templates.precompiled.cjs") as Precompiled;
  } catch {
    return null; // not built (tests run from src/)
  }
}

/**
 * Handlebars' strict-mode error (`"x" not defined in <ctx> - line:col`, the
 * column 0-based) in the compiled templates' words: `templates/<file>:line:col: ...`.
 */
function strictError(name: string, e: unknown): unknown {
  const m = e instanceof Error ? /^(".*" not defined in .*) - (\d+):(\d+)$/s.exec(e.message) : null;
  if (!m) return e;
  return new Error(`templates/${name}:${m[2]}:${Number(m[3]) + 1}: ${m[1]}`, { cause: e });
}

function compile(name: string, text: string): Render {
  const t = (require("handlebars") as typeof HandlebarsNS).compile(text, OPTIONS);
  return (context) => {
    try {
      return t(context);
    } catch (e) {
      throw strictError(name, e);
    }
  };
}

const cache = new Map<string, Render>();

export function render(name: string, context: object): string {
  let t = cache.get(name);
  if (!t) {
    const text = readFileSync(`${TEMPLATE_DIR}${name}`, "utf8");
    precompiled ??= loadPrecompiled();
    const pre = precompiled?.[name];
    t = pre && pre.source === text ? pre.render : compile(name, text);
    cache.set(name, t);
  }
  return t(context);
}
