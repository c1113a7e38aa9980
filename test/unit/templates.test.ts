/**
 * The one template path (src/dest/templates.ts): Handlebars' precompiled spec
 * run by its single-file runtime, the spec coming from the build
 * (scripts/precompile-templates.mjs) or made from source. Checked with the
 * contexts the real pipeline passes (captured from generate() and
 * kernelStubs() over fixture YAMLs): the stored specs give what render() gives
 * and what Handlebars.compile gives; a missing property is reported as
 * templates/<file>:line:col.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import Handlebars from "handlebars";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { buildPlan, generate } from "../../src/dest/index.js";
import { kernelStubs } from "../../src/impl/kernels.js";
import { loadCatalog } from "../../src/model/catalog.js";
import { discoverTorch } from "../../src/torch/discover.js";

// Every render() call of the pipeline, with its context.
const captured = vi.hoisted(() => [] as [string, object][]);
vi.mock("../../src/dest/templates.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/dest/templates.js")>();
  return {
    ...actual,
    render: (name: string, context: object) => {
      captured.push([name, context]);
      return actual.render(name, context);
    },
  };
});

const script = (await import(new URL("../../scripts/precompile-templates.mjs", import.meta.url).href)) as {
  precompiledModule(dir: string): string;
  OPTIONS: object;
};
const TEMPLATES = path.resolve(import.meta.dirname, "../../templates");
const FIXTURES = path.resolve(import.meta.dirname, "../fixtures");
const NAMES = readdirSync(TEMPLATES)
  .filter((f) => f.endsWith(".hbs"))
  .sort();
const runtime = createRequire(import.meta.url)("handlebars/dist/handlebars.runtime.min.js") as typeof Handlebars;

/** What the build stores, loaded as the built module would be. */
function built(): Record<string, { source: string; spec: Parameters<typeof Handlebars.template>[0] }> {
  const module = { exports: {} };
  new Function("module", script.precompiledModule(TEMPLATES))(module);
  return module.exports as ReturnType<typeof built>;
}

describe("templates", () => {
  const byName = new Map<string, object[]>();
  let render: (name: string, context: object) => string;

  beforeAll(async () => {
    ({ render } = await vi.importActual<typeof import("../../src/dest/templates.js")>("../../src/dest/templates.js"));
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
      const config = parseBackendYaml(readFileSync(file, "utf8"), file, catalog);
      generate(config, catalog);
      kernelStubs(buildPlan(config, catalog));
    }
    for (const [name, context] of captured) byName.set(name, [...(byName.get(name) ?? []), context]);
  });

  it("the build stores a spec for every template, made from its current text", () => {
    const b = built();
    expect(Object.keys(b)).toEqual(NAMES);
    for (const name of NAMES) expect(b[name]!.source).toBe(readFileSync(path.join(TEMPLATES, name), "utf8"));
  });

  it.each(NAMES)("%s: stored spec = render() = Handlebars.compile, with the pipeline's contexts", (name) => {
    const contexts = byName.get(name) ?? [];
    expect(contexts.length, `no fixture renders ${name}`).toBeGreaterThan(0);
    const stored = runtime.template(built()[name]!.spec);
    const reference = Handlebars.compile(readFileSync(path.join(TEMPLATES, name), "utf8"), script.OPTIONS);
    for (const c of contexts) {
      const want = reference(c);
      expect(stored(c)).toBe(want);
      expect(render(name, c)).toBe(want);
    }
  });

  it("a missing property throws naming the template, the property and where it is", () => {
    expect(() => render("NativeFunctions.h.hbs", {})).toThrow(
      /^templates\/NativeFunctions\.h\.hbs:\d+:\d+: "banner" not defined in \[object Object\]$/,
    );
  });
});
