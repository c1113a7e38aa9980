/**
 * Loads the logic-free Handlebars templates under templates/ (placeholders and
 * #each only; every decision is made in TypeScript before rendering). HTML
 * escaping is off: the output is C++ and JSON, and everything printed has
 * been checked where it came from (Note [Nothing unchecked reaches C++]).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Handlebars from "handlebars";

/** templates/ at the package root, from src/dest (tests) or dist/dest (built). */
const TEMPLATE_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));

const cache = new Map<string, Handlebars.TemplateDelegate>();

export function render(name: string, context: object): string {
  let t = cache.get(name);
  if (!t) {
    const text = readFileSync(`${TEMPLATE_DIR}${name}`, "utf8");
    t = Handlebars.compile(text, { noEscape: true, strict: true });
    cache.set(name, t);
  }
  return t(context);
}
