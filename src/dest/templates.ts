/**
 * Renders the logic-free Handlebars templates under templates/ (placeholders
 * and #each only; every decision is made in TypeScript before rendering).
 * HTML escaping is off: the output is C++ and JSON, and everything printed
 * has been checked where it came from (Note [Nothing unchecked reaches C++]).
 *
 * One path: a template is Handlebars' precompiled spec run by Handlebars'
 * single-file runtime. `npm run build` stores the specs
 * (scripts/precompile-templates.mjs, dist/dest/templates.precompiled.cjs); a
 * stored spec is used only while its template's text is unchanged, and
 * otherwise (tests run from src/, an edited template, no build) the spec is
 * made from the source with Handlebars' compiler on first render. Either way
 * a missing property throws `templates/<file>:line:col: "name" not defined in
 * <context>`.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type HandlebarsNS from "handlebars";

/** templates/ at the package root, from src/dest (tests) or dist/dest (built). */
const TEMPLATE_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));
const OPTIONS = { noEscape: true, strict: true } as const;

type Render = (context: object) => string;
type Spec = Parameters<typeof HandlebarsNS.template>[0];
type Precompiled = Readonly<Record<string, { readonly source: string; readonly spec: Spec }>>;

const require = createRequire(import.meta.url);
let precompiled: Precompiled | null | undefined;

function loadPrecompiled(): Precompiled | null {
  try {
    return require("./templates.precompiled.cjs") as Precompiled;
  } catch {
    return null; // not built (tests run from src/)
  }
}

/** A spec made from source now, as the build would have made it. */
function specOf(text: string): Spec {
  const compiler = require("handlebars") as typeof HandlebarsNS;
  return new Function(`return ${compiler.precompile(text, OPTIONS)};`)() as Spec;
}

/**
 * Handlebars' strict-mode error (`"x" not defined in <ctx> - line:col`, the
 * column 0-based) in the templates' words: `templates/<file>:line:col: ...`.
 */
function strictError(name: string, e: unknown): unknown {
  const m = e instanceof Error ? /^(".*" not defined in .*) - (\d+):(\d+)$/s.exec(e.message) : null;
  if (!m) return e;
  return new Error(`templates/${name}:${m[2]}:${Number(m[3]) + 1}: ${m[1]}`, { cause: e });
}

const cache = new Map<string, Render>();

export function render(name: string, context: object): string {
  let t = cache.get(name);
  if (!t) {
    const text = readFileSync(`${TEMPLATE_DIR}${name}`, "utf8");
    precompiled ??= loadPrecompiled();
    const pre = precompiled?.[name];
    const runtime = require("handlebars/dist/handlebars.runtime.min.js") as typeof HandlebarsNS;
    const template = runtime.template(pre && pre.source === text ? pre.spec : specOf(text));
    t = (context) => {
      try {
        return template(context);
      } catch (e) {
        throw strictError(name, e);
      }
    };
    cache.set(name, t);
  }
  return t(context);
}

/**
 * Note [C++ helper sources]: C++ that gen prints without filling anything in
 * (the helpers derived overloads share, Note [Derived helpers defined once])
 * is kept as plain C++ under templates/cpp/, not as templates: gen copies a
 * file's text as it is into Register<Key>.cpp's helper namespace, after
 * DerivedDecls.cpp.hbs's declarations, and test/integration/compile.test.ts
 * compiles the files the same way as a translation unit of their own. They
 * hold no #include: the registration file's include list carries what they
 * need.
 */
const sources = new Map<string, string>();

export function cppSource(name: string): string {
  let text = sources.get(name);
  if (text === undefined) {
    text = readFileSync(`${TEMPLATE_DIR}cpp/${name}`, "utf8");
    sources.set(name, text);
  }
  return text;
}
