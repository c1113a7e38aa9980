/**
 * The build-time template compiler (scripts/precompile-templates.mjs) against
 * Handlebars itself. Every template in templates/, rendered with the contexts
 * the real pipeline passes (captured from generate() and kernelStubs() over
 * fixture YAMLs) and with variants of them (odd strings, numbers, null,
 * missing properties, empty and non-array lists), gives exactly what
 * Handlebars.compile(source, { noEscape: true, strict: true }) gives, or the
 * same error; the supported syntax is checked the same way on small
 * templates; anything else is refused with templates/<file>:line:col.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import Handlebars from "handlebars";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { buildPlan, generate } from "../../src/dest/index.js";
import { kernelStubs } from "../../src/impl/kernels.js";
import { loadCatalog } from "../../src/model/catalog.js";
import { discoverTorch } from "../../src/torch/discover.js";

type Render = (context: unknown) => unknown;
interface Compiler {
  compileTemplate(source: string, name: string): string;
  templateFunction(source: string, name: string): Render;
}

// Every render() call of the pipeline, with its context.
const captured = vi.hoisted(() => [] as [string, object][]);
vi.mock("../../src/dest/templates.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/dest/templates.js")>();
  return {
    render: (name: string, context: object) => {
      captured.push([name, context]);
      return actual.render(name, context);
    },
  };
});

const compiler = (await import(new URL("../../scripts/precompile-templates.mjs", import.meta.url).href)) as Compiler;
const TEMPLATES = path.resolve(import.meta.dirname, "../../templates");
const FIXTURES = path.resolve(import.meta.dirname, "../fixtures");
const NAMES = readdirSync(TEMPLATES)
  .filter((f) => f.endsWith(".hbs"))
  .sort();
const OPTIONS = { noEscape: true, strict: true } as const;

/** What a render gives: its text, or its error as `Class: message`. */
function outcome(f: () => unknown): string {
  try {
    return `ok: ${f()}`;
  } catch (e) {
    return e instanceof Error ? `${e.constructor.name}: ${e.message}` : `thrown: ${String(e)}`;
  }
}

/** Handlebars' outcome, its strict-mode message put in the compiled templates' words (1-based column). */
function reference(source: string, name: string): Render {
  const t = Handlebars.compile(source, OPTIONS);
  return (context) => {
    try {
      return t(context);
    } catch (e) {
      const m = e instanceof Error ? /^(".*" not defined in .*) - (\d+):(\d+)$/s.exec(e.message) : null;
      if (!m) throw e;
      throw new Error(`templates/${name}:${m[2]}:${Number(m[3]) + 1}: ${m[1]}`);
    }
  };
}

function expectSame(source: string, name: string, contexts: readonly unknown[]): void {
  const ours = compiler.templateFunction(source, name);
  const theirs = reference(source, name);
  for (const c of contexts) {
    const got = outcome(() => ours(c));
    expect(got, `${name} with ${describeContext(c)}`).toBe(outcome(() => theirs(c)));
  }
}

function describeContext(c: unknown): string {
  const s = JSON.stringify(c, (_k, v) => (v === undefined ? "<undefined>" : v instanceof Set ? [...v] : v));
  return s === undefined ? String(c) : s.length > 300 ? `${s.slice(0, 300)}...` : s;
}

/** Every way of replacing one leaf, emptying one list or dropping one property (at any depth) of `c`. */
function variants(c: unknown): unknown[] {
  const out: unknown[] = [];
  const leaves: unknown[] = ["{{{x}}} $& $1 \\ \" ' \n\r\t\u2028 ~ }}", "", 0, 7, false, true, null, undefined];
  const walk = (v: unknown, rebuild: (v: unknown) => unknown, depth: number): void => {
    if (Array.isArray(v)) {
      out.push(rebuild([]), rebuild(new Set(v)), rebuild(Object.fromEntries(v.map((x, i) => [`k${i}`, x]))));
      if (v.length) out.push(rebuild([...v, ...v]));
      v.forEach((x, i) => {
        walk(x, (y) => rebuild(v.map((z, j) => (j === i ? y : z))), depth + 1);
      });
    } else if (v !== null && typeof v === "object") {
      for (const k of Object.keys(v)) {
        const { [k]: dropped, ...rest } = v as Record<string, unknown>;
        out.push(rebuild(rest));
        walk(dropped, (y) => rebuild({ ...rest, [k]: y }), depth + 1);
      }
    } else if (depth > 0) {
      for (const l of leaves) out.push(rebuild(l));
    }
  };
  walk(c, (v) => v, 0);
  return out;
}

describe("compiled templates render what Handlebars renders", () => {
  const byName = new Map<string, object[]>();

  beforeAll(async () => {
    const catalog = await loadCatalog(await discoverTorch());
    const yamls = [
      "gen/snapshot/backend.yaml",
      "gen/out_primary.yaml",
      "gen/xla_like.yaml",
      "gen/minimal_device.yaml",
      "backend/npu_autograd.yaml",
      "gen/runtime_free/backend.yaml", // free_functions: true
    ];
    for (const rel of yamls) {
      const file = path.join(FIXTURES, rel);
      const text = readFileSync(file, "utf8");
      const config = parseBackendYaml(text, file, catalog);
      generate(config, catalog);
      kernelStubs(buildPlan(config, catalog));
    }
    for (const [name, context] of captured) byName.set(name, [...(byName.get(name) ?? []), context]);
  });

  it.each(NAMES)("%s, with the pipeline's contexts", (name) => {
    const contexts = byName.get(name) ?? [];
    expect(contexts.length, `no fixture renders ${name}`).toBeGreaterThan(0);
    expectSame(readFileSync(path.join(TEMPLATES, name), "utf8"), name, contexts);
  });

  it.each(NAMES)("%s, with variants of them (odd values, missing properties, other lists)", (name) => {
    const contexts = byName.get(name) ?? [];
    // The smallest and the largest real context; variants of each.
    const size = (c: object) => JSON.stringify(c).length;
    const sorted = [...contexts].sort((a, b) => size(a) - size(b));
    const picks = [...new Set([sorted[0], sorted.at(-1)])].map((c) => shrink(c));
    expectSame(readFileSync(path.join(TEMPLATES, name), "utf8"), name, [
      ...picks.flatMap(variants),
      {},
      null,
      undefined,
      "text",
    ]);
  });
});

/** The context with every list cut to its first two entries (variants grow quadratically). */
function shrink(c: unknown): unknown {
  if (Array.isArray(c)) return c.slice(0, 2).map(shrink);
  if (c !== null && typeof c === "object") return Object.fromEntries(Object.entries(c).map(([k, v]) => [k, shrink(v)]));
  return c;
}

describe("the supported syntax behaves as in Handlebars", () => {
  // Handlebars logs each inherited property it refuses to read (we refuse silently).
  const quiet = vi.spyOn(console, "error");
  beforeAll(() => {
    quiet.mockImplementation(() => {});
  });
  afterAll(() => {
    quiet.mockRestore();
  });
  const contexts: unknown[] = [
    { xs: ["1", "2"], ys: ["y"], y: "Y", a: 1, b: 2 },
    { xs: [], ys: [], y: "Y", a: 1, b: 2 },
    { xs: [], ys: ["y"], y: null, a: "a", b: undefined },
    { xs: [null, undefined, 0, false, "", {}, [1, 2], { y: "in" }], ys: [[]], y: 0, a: 1, b: 2 },
    // biome-ignore lint/suspicious/noSparseArray: Handlebars skips holes
    { xs: [, "after a hole"], ys: new Set(["s"]), y: "Y", a: 1, b: 2 },
    { xs: { k: "v", l: "w" }, ys: "a string", y: "Y", a: 1, b: 2 },
    { xs: null, y: "Y", a: 1, b: 2 },
    { y: "Y" },
    { xs: ["s"], y: "Y" },
    Object.create({ y: "inherited", xs: ["inherited"] }),
    {},
    null,
  ];
  it.each([
    ["text only", "no placeholders\n"],
    ["placeholders", "a {{{y}}} b {{y}} c {{{this.y}}} d\n"],
    ["adjacent values add up, as in Handlebars", "{{{a}}}{{{b}}}-{{{a}}}{{{b}}}\n"],
    ["each, standalone lines", "top\n{{#each xs}}\n  - {{{this}}}\n{{/each}}\nbottom\n"],
    ["each, indented standalone lines", "top\n  {{#each xs}}\n  - {{{.}}}\n  {{/each}}\nbottom\n"],
    ["each, inline", "[{{#each xs}}<{{{this}}}>{{/each}}]\n"],
    ["each over this", "{{#each this}}{{{this}}};{{/each}}"],
    ["nested each", "{{#each xs}}{{#each this}}({{{this}}}){{/each}};{{/each}}\n"],
    ["properties of list entries", "{{#each xs}}{{{y}}}\n{{/each}}"],
    ["else", "{{#each xs}}\n{{{this}}}\n{{else}}\nnone, {{{y}}}\n{{/each}}\n"],
    ["else each", "{{#each xs}}x{{{this}}}{{else each ys}}y{{{this}}}{{/each}}\n"],
    ["else with adjacent values", "{{#each xs}}{{else}}{{{a}}}{{{b}}}{{/each}}{{{a}}}"],
    ["whitespace control", "a  {{~{y}~}}  b\n{{~#each xs~}}\n  {{{this}}}  \n{{~/each~}}\n  c\n"],
    ["comments", "{{! one }}\n  {{!-- two }} --}}\nx {{! three }} y\n"],
    ["escapes", "\\{{y}} {{{y}}}\n"],
    ["empty block", "{{#each xs}}{{/each}}|{{#each xs}}{{! c }}{{/each}}"],
  ])("%s", (_what, source) => {
    expectSame(source, "t.hbs", contexts);
  });

  it("a missing property throws naming the template, the property and where it is", () => {
    const t = compiler.templateFunction("a\n  {{{ y }}}\n", "t.hbs");
    expect(() => t({})).toThrow(/^templates\/t\.hbs:2:7: "y" not defined in \[object Object\]$/);
    // as strict Handlebars does: "y" not defined in [object Object] - 2:6
    expect(() => Handlebars.compile("a\n  {{{ y }}}\n", OPTIONS)({})).toThrow(
      /^"y" not defined in \[object Object\] - 2:6$/,
    );
  });

  it("render() says the same from a compiled template and from Handlebars", async () => {
    const { render } =
      await vi.importActual<typeof import("../../src/dest/templates.js")>("../../src/dest/templates.js");
    const name = "NativeFunctions.h.hbs";
    const compiled = compiler.templateFunction(readFileSync(path.join(TEMPLATES, name), "utf8"), name);
    const want = /^templates\/NativeFunctions\.h\.hbs:3:7: "banner" not defined in \[object Object\]$/;
    expect(() => compiled({})).toThrow(want);
    expect(() => render(name, {})).toThrow(want);
  });

  it("a function in the context is refused, not called", () => {
    const t = compiler.templateFunction("{{{y}}}{{#each xs}}{{/each}}", "t.hbs");
    expect(() => t({ y: () => "called" })).toThrow(/^templates\/t\.hbs:1:4: a function in the context/);
    expect(() => t({ y: "", xs: () => ["called"] })).toThrow(/^templates\/t\.hbs:1:16: a function in the context/);
  });
});

describe("anything else fails the build with file:line:col", () => {
  it.each([
    ["a\n{{> part}}", "2:1: unsupported partial"],
    ["{{#if y}}x{{/if}}", "1:1: unsupported block {{#if}}"],
    ["{{#y}}x{{/y}}", "1:1: unsupported block {{#y}}"],
    ["{{^each xs}}x{{/each}}", "1:1: unsupported inverted block {{^each}}"],
    ["{{foo y}}", "1:1: unsupported helper call {{foo ...}}"],
    ["{{foo k=1}}", "1:1: unsupported helper call {{foo ...}}"],
    ["{{{log}}}", "1:4: unsupported built-in helper log"],
    ["{{../y}}", "1:3: unsupported expression: parent context path ../y"],
    ["{{@index}}", "1:3: unsupported expression: @data variable @index"],
    ["{{a.b}}", "1:3: unsupported expression: dotted path a.b"],
    ['{{"s"}}', "1:3: unsupported expression: a StringLiteral"],
    ["{{#each xs as |x|}}{{/each}}", "1:1: unsupported block parameters as |x|"],
    ["{{#each xs ys}}{{/each}}", "1:1: unsupported {{#each}} arguments: exactly one list, no hash"],
    ["{{#each xs.ys}}{{/each}}", "1:9: unsupported {{#each}} argument: dotted path xs.ys"],
    ['{{#*inline "p"}}x{{/inline}}', "1:1: unsupported decorator"],
    ["{{{{raw}}}}x{{{{/raw}}}}", "1:1: unsupported block {{#raw}}"],
  ])("%j", (source, want) => {
    expect(() => compiler.compileTemplate(source, "t.hbs")).toThrow(`templates/t.hbs:${want}`);
  });

  it("reports every problem in a template, one per line", () => {
    expect(() => compiler.compileTemplate("{{> a}}\n{{#each xs}}{{@key}}{{/each}}\n", "t.hbs")).toThrow(
      "templates/t.hbs:1:1: unsupported partial\ntemplates/t.hbs:2:15: unsupported expression: @data variable @key",
    );
  });

  it("names the template in a syntax error", () => {
    expect(() => compiler.compileTemplate("{{#each}", "t.hbs")).toThrow(/^templates\/t\.hbs: Parse error on line 1/);
  });
});
