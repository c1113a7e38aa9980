#!/usr/bin/env node
/**
 * Compiles templates/*.hbs into plain JavaScript render functions in
 * dist/dest/templates.precompiled.cjs (run by `npm run build` after tsc), so
 * that `gen` renders its templates without loading Handlebars at all (its
 * runtime cost a cold process ~20 ms before the first template rendered).
 *
 * Our templates are logic-free, so the compiler is small: Handlebars.parse
 * (which already applies `~` whitespace control and the standalone-line rules)
 * gives the AST, and each node becomes one term of a `+` expression, as in
 * Handlebars' own output, with the meaning Handlebars gives it under
 * { noEscape: true, strict: true }:
 *
 *   text                    appended as is
 *   {{{name}}}, {{{this.name}}}, and the {{name}} forms (noEscape: the same)
 *                           strict lookup on the current context: a missing
 *                           property throws `templates/<file>:line:col:
 *                           "name" not defined in <context>`; null and
 *                           undefined print as nothing
 *   {{{this}}}, {{{.}}}     the current context
 *   {{#each list}}...{{else}}...{{/each}}
 *                           Handlebars' each: arrays (holes skipped), other
 *                           iterables, then an object's own keys; `list` is
 *                           looked up non-strictly, as Handlebars does for
 *                           helper arguments (missing = empty); the {{else}}
 *                           part renders when nothing was iterated
 *   {{! comment }}          nothing
 *
 * Anything else (helpers and built-in helper names, partials, #if, ../, @data,
 * dotted paths, literals, hash arguments, block parameters, decorators) fails
 * the build with `templates/<file>:line:col: unsupported ...`. A function
 * found in the context (a lambda, which Handlebars would call) throws when
 * rendered. test/unit/templates.test.ts checks the output against
 * Handlebars.compile for every template.
 *
 * Each entry keeps the template text it was compiled from; src/dest/templates.ts
 * uses an entry only while templates/ still holds exactly that text, and
 * compiles from source with full Handlebars otherwise (tests, edited
 * templates, no build).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Handlebars from "handlebars";

/**
 * Helpers the generated functions call; defined once at the top of the
 * generated module. `lookup` is Handlebars' lookupProperty under the default
 * prototype-access rules: own properties only (never a prototype's own
 * `constructor`).
 */
export const RUNTIME = `function lookup(obj, name) {
  const v = obj[name];
  if (v == null) return v;
  if (Object.prototype.hasOwnProperty.call(obj, name) && !(name === "constructor" && typeof v === "function" && obj === v.prototype)) return v;
  return undefined;
}
function print(v, where) {
  if (typeof v === "function") throw new Error(where + ": a function in the context; templates call no helpers or lambdas");
  return v != null ? v : "";
}
function strict(obj, name, where) {
  if (!obj || !(name in obj)) throw new Error(where + ': "' + name + '" not defined in ' + obj);
  return print(lookup(obj, name), where);
}
function each(list, ctx, fn, inverse, where) {
  if (typeof list === "function") print(list, where);
  let out = "";
  let i = 0;
  if (list && typeof list === "object") {
    if (Array.isArray(list)) {
      for (; i < list.length; i++) if (i in list) out = out + fn(list[i]);
    } else if (list[Symbol.iterator]) {
      for (const v of list) {
        out = out + fn(v);
        i++;
      }
    } else {
      for (const k of Object.keys(list)) {
        out = out + fn(list[k]);
        i++;
      }
    }
  }
  // The {{else}} part's value is returned as is (not made a string), as Handlebars does.
  if (i === 0 && inverse) return inverse(ctx != null ? ctx : {});
  return out;
}
`;

/**
 * Compiles one template's source to the text of a JavaScript function
 * expression `function (c0) { ... }` returning the rendered string; it calls
 * the helpers in RUNTIME. `name` is the file name under templates/, used in
 * messages. Throws an Error listing every unsupported construct, one
 * `templates/<name>:line:col: unsupported ...` per line.
 */
export function compileTemplate(source, name) {
  const file = `templates/${name}`;
  let ast;
  try {
    ast = Handlebars.parse(source);
  } catch (e) {
    throw new Error(`${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const helpers = new Set(Object.keys(Handlebars.helpers));
  const problems = [];
  // Handlebars columns are 0-based; ours (src/util/errors.ts) are 1-based.
  const where = (node) => (node.loc ? `${file}:${node.loc.start.line}:${node.loc.start.column + 1}` : file);
  const unsupported = (node, what) => problems.push(`${where(node)}: unsupported ${what}`);

  /** A path we can read: `this`/`.` (parts []), `name` or `this.name`; else null after reporting it. */
  const simplePath = (p, what) => {
    const problem =
      p.type !== "PathExpression"
        ? `a ${p.type}`
        : p.data
          ? `@data variable @${p.parts.join(".")}`
          : p.depth > 0
            ? `parent context path ${p.original}`
            : p.parts.length > 1
              ? `dotted path ${p.original}`
              : null;
    if (problem) unsupported(p, `${what}: ${problem}`);
    return problem ? null : p;
  };

  /**
   * A program's output, as Handlebars computes it: one `+` chain of its
   * parts, left to right, each `(v != null ? v : "")`, so adjacent values
   * are added before any text is (Handlebars prints {{{a}}}{{{b}}} with
   * a = 1, b = 2 as "3"); an empty program is "".
   */
  const program = (prog, depth) => {
    const ctx = `c${depth}`;
    const parts = [];
    for (const node of prog.body) {
      switch (node.type) {
        case "ContentStatement":
          if (node.value) parts.push(JSON.stringify(node.value));
          break;
        case "CommentStatement":
          break;
        case "MustacheStatement": {
          if (node.params.length || node.hash) {
            unsupported(node, `helper call {{${node.path.original ?? ""} ...}}`);
            break;
          }
          const p = simplePath(node.path, "expression");
          if (!p) break;
          const w = JSON.stringify(where(p));
          if (p.parts.length === 0) {
            parts.push(`print(${ctx}, ${w})`);
            break;
          }
          // `name` (not `this.name`) is looked up among helpers first.
          if (!/^(\.|this\b)/.test(p.original) && helpers.has(p.parts[0])) {
            unsupported(p, `built-in helper ${p.parts[0]}`);
            break;
          }
          parts.push(`strict(${ctx}, ${JSON.stringify(p.parts[0])}, ${w})`);
          break;
        }
        case "BlockStatement": {
          const helper = node.path.type === "PathExpression" ? node.path.original : node.path.type;
          if (helper !== "each" || node.path.depth || node.path.data) {
            unsupported(node, `block {{#${helper}}}`);
            break;
          }
          if (!node.program) {
            unsupported(node, "inverted block {{^each}}");
            break;
          }
          if (node.program.blockParams?.length) {
            unsupported(node, `block parameters as |${node.program.blockParams.join(" ")}|`);
            break;
          }
          if (node.params.length !== 1 || node.hash) {
            unsupported(node, "{{#each}} arguments: exactly one list, no hash");
            break;
          }
          const p = simplePath(node.params[0], "{{#each}} argument");
          if (!p) break;
          const list = p.parts.length === 0 ? ctx : `lookup(${ctx}, ${JSON.stringify(p.parts[0])})`;
          const body = fn(`c${depth + 1}`, program(node.program, depth + 1));
          const inverse = node.inverse ? fn(ctx, program(node.inverse, depth)) : "null";
          parts.push(`each(${list}, ${ctx}, ${body}, ${inverse}, ${JSON.stringify(where(p))})`);
          break;
        }
        case "PartialStatement":
        case "PartialBlockStatement":
          unsupported(node, "partial");
          break;
        case "Decorator":
        case "DecoratorBlock":
          unsupported(node, "decorator");
          break;
        default:
          unsupported(node, node.type);
      }
    }
    return parts;
  };
  const chain = (parts) => (parts.length ? parts.map((p) => p.replaceAll("\n", "\n  ")).join("\n  + ") : '""');
  const fn = (param, parts) => `function (${param}) {\n${indent(`return ${chain(parts)};`)}}`;

  const parts = program(ast, 0);
  if (problems.length) throw new Error(problems.join("\n"));
  // The runtime returns '' + main(): a string, whatever the chain gave.
  return `function (c0) {\n${indent(`return "" + (${chain(parts)});`)}}`;
}

const indent = (text) => text.replace(/^/gm, "  ") + "\n";

/** compileTemplate's function, ready to call (tests). */
export function templateFunction(source, name) {
  return new Function(`"use strict";\n${RUNTIME}return ${compileTemplate(source, name)};`)();
}

function main() {
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const dir = path.join(repo, "templates");
  let out = "// @generated by scripts/precompile-templates.mjs from templates/*.hbs. Do not edit.\n";
  out += `"use strict";\n${RUNTIME}module.exports = {\n`;
  const errors = [];
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".hbs"))
    .sort();
  for (const name of names) {
    const source = readFileSync(path.join(dir, name), "utf8");
    try {
      const render = compileTemplate(source, name).replaceAll("\n", "\n    ");
      out += `  ${JSON.stringify(name)}: {\n    source: ${JSON.stringify(source)},\n    render: ${render},\n  },\n`;
    } catch (e) {
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  if (errors.length) {
    for (const e of errors) console.error(e);
    process.exit(1);
  }
  out += "};\n";
  writeFileSync(path.join(repo, "dist", "dest", "templates.precompiled.cjs"), out);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
