/**
 * torchgen as the oracle: for the same backend YAML, the set of kernel
 * declarations in our `<Backend>NativeFunctions.h` equals the set in the one
 * `python -m torchgen.gen_backend_stubs` (from the installed wheel) writes.
 *
 * YAMLs: the realistic vendor lists under test/fixtures/gen/, one listing the
 * core-ATen overloads (built from the catalog's `core` tag), and "every
 * operator torchgen can handle". That last set is found, not hard-coded: it
 * is every operator in the catalog (autogen'd ones included) — torchgen
 * 2.13 accepts that whole list, which this test asserts by running it (if a
 * future torch rejects some operator, the torchgen run fails here and the
 * set must be narrowed by what its error names). A second variant lists
 * every SymInt-bearing operator under `symint:` with device guards on.
 *
 * Where torchgen crashes (test/fixtures/gen/torchgen_crashes.yaml) we check
 * that it does crash and that we still declare the listed kernels; the
 * compile test builds that output.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { generate } from "../../src/dest/index.js";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/gen");

let install: TorchInstall;
let catalog: OperatorCatalog;
let work: string;

beforeAll(async () => {
  install = await discoverTorch();
  catalog = await loadCatalog(install);
  work = mkdtempSync(path.join(tmpdir(), "opgen-oracle-"));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** `static ...;` lines of a generated header, whitespace-normalized. */
function declarations(header: string): string[] {
  return header
    .split("\n")
    .map((l) => l.trim().replace(/\s+/g, " "))
    .filter((l) => l.startsWith("static "))
    .sort();
}

function ours(name: string, text: string): { header: string; files: Map<string, string> } {
  const config = parseBackendYaml(text, `${name}.yaml`, catalog);
  const files = new Map(generate(config, catalog).map((f) => [f.path, f.content]));
  const headerPath = [...files.keys()].find((p) => p.endsWith("NativeFunctions.h"))!;
  return { header: files.get(headerPath)!, files };
}

async function torchgen(name: string, text: string): Promise<{ ok: boolean; header: string; stderr: string }> {
  const dir = path.join(work, name);
  const yaml = path.join(work, `${name}.yaml`);
  writeFileSync(yaml, text);
  const r = await execa(install.python, ["-m", "torchgen.gen_backend_stubs", "-s", yaml, "-o", dir], {
    reject: false,
  });
  const h = readdirSync(dir, { withFileTypes: true }).find((e) => e.name.endsWith("NativeFunctions.h"));
  return {
    ok: r.exitCode === 0,
    header: h ? readFileSync(path.join(dir, h.name), "utf8") : "",
    stderr: r.stderr,
  };
}

function yamlFor(names: readonly string[], extra = "", symint: readonly string[] = []): string {
  let s = `backend: PrivateUse1\ncpp_namespace: at::mychip\n${extra}supported:\n`;
  for (const n of names) s += `- ${n}\n`;
  if (symint.length > 0) {
    s += "symint:\n";
    for (const n of symint) s += `- ${n}\n`;
  }
  return s;
}

function expectSameSet(name: string, mine: string[], theirs: string[]): void {
  const a = new Set(mine);
  const b = new Set(theirs);
  const onlyOurs = mine.filter((x) => !b.has(x));
  const onlyTorchgen = theirs.filter((x) => !a.has(x));
  expect({ name, onlyOurs, onlyTorchgen }).toEqual({ name, onlyOurs: [], onlyTorchgen: [] });
  expect(theirs.length).toBeGreaterThan(0);
}

const sortedNames = (fs: readonly { name: string }[]) => fs.map((f) => f.name).sort();

describe("declarations equal torchgen's", () => {
  const fixtures = readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".yaml") && f !== "torchgen_crashes.yaml")
    .sort();

  it.each(fixtures)("fixture %s", async (file) => {
    const text = readFileSync(path.join(FIXTURES, file), "utf8");
    const name = path.basename(file, ".yaml");
    const tg = await torchgen(name, text);
    expect(tg.ok, tg.stderr).toBe(true);
    expectSameSet(name, declarations(ours(name, text).header), declarations(tg.header));
  });

  it("core ATen (every overload tagged core)", async () => {
    const core = sortedNames(catalog.functions.filter((f) => f.tags.includes("core")));
    expect(core.length).toBe(193);
    const text = yamlFor(core);
    const tg = await torchgen("core", text);
    expect(tg.ok, tg.stderr).toBe(true);
    expectSameSet("core", declarations(ours("core", text).header), declarations(tg.header));
  });

  it("every operator torchgen can handle (the whole catalog)", async () => {
    const all = sortedNames(catalog.functions);
    const text = yamlFor(all);
    const tg = await torchgen("all", text);
    expect(tg.ok, tg.stderr).toBe(true);
    const mine = declarations(ours("all", text).header);
    expectSameSet("all", mine, declarations(tg.header));
  });

  it("every operator, SymInt kernels wherever the schema has SymInt, device guards on", async () => {
    const all = sortedNames(catalog.functions);
    const sym = catalog.functions
      .filter((f) => [...f.func.arguments.positional, ...f.func.arguments.kwargOnly].some((a) => hasSymIntType(a.type)))
      .map((f) => f.name)
      .sort();
    const text = yamlFor(all, "device_guard: true\n", sym);
    const tg = await torchgen("allsym", text);
    expect(tg.ok, tg.stderr).toBe(true);
    expectSameSet("allsym", declarations(ours("allsym", text).header), declarations(tg.header));
  });
});

describe("where torchgen crashes", () => {
  it("torchgen_crashes.yaml: torchgen fails, we declare every listed kernel", async () => {
    const text = readFileSync(path.join(FIXTURES, "torchgen_crashes.yaml"), "utf8");
    const tg = await torchgen("crashes", text);
    expect(tg.ok).toBe(false);
    expect(tg.stderr).toMatch(/AssertionError/);
    const { header, files } = ours("crashes", text);
    // torchgen writes the header before it crashes on the registrations: same declarations.
    expectSameSet("crashes", declarations(header), declarations(tg.header));
    const reg = files.get("RegisterPrivateUse1.cpp")!;
    for (const op of ["_cudnn_rnn_backward.out", "_fused_moving_avg_obs_fq_helper", "_foreach_add_.List"]) {
      expect(reg).toContain(`m.impl("${op}"`);
    }
  });
});

function hasSymIntType(t: import("../../src/model/types.js").Type): boolean {
  return t.kind === "base" ? t.name === "SymInt" : t.kind === "custom" ? false : hasSymIntType(t.elem);
}
