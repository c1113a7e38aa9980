/**
 * `upgrade --apply`'s decisions before it writes: which pin files init owns
 * (Note [Files init owns]) and which kernels get stubs.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendYaml } from "../../src/backend/load.js";
import { generate } from "../../src/dest/index.js";
import type { Manifest } from "../../src/dest/manifest.js";
import { buildPlan } from "../../src/dest/plan.js";
import { kernelStubs } from "../../src/impl/kernels.js";
import { loadCatalog, parseSchema } from "../../src/model/catalog.js";
import type { NativeFunction, OperatorCatalog } from "../../src/model/types.js";
import { init } from "../../src/scaffold/init.js";
import { discoverTorch } from "../../src/torch/discover.js";
import { newKernelStubs, planPins } from "../../src/upgrade/apply.js";

let tmp: string;
let catalog: OperatorCatalog;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "opgen-apply-"));
  catalog = await loadCatalog(await discoverTorch());
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("planPins", () => {
  it("moves the pin in every file init rendered with it, and keeps a file a person changed", () => {
    const dir = path.join(tmp, "pins");
    init(dir, { name: "pinchip", torchVersion: "2.13.0" });
    const manifest = { device: "pinchip" } as Manifest;
    const read = (f: string) => readFileSync(path.join(dir, f), "utf8");
    const plan = planPins(dir, manifest, "2.13.0", "2.14.0");
    expect(plan.kind).toBe("cpu");
    expect(plan.move.map((f) => f.path).sort()).toEqual([".github/workflows/ci.yml", "README.md", "pyproject.toml"]);
    for (const f of plan.move) {
      expect(f.content, f.path).toBe(read(f.path).replace(/torch(==| )2\.13\.0/g, "torch$12.14.0"));
    }
    expect(plan.kept).toEqual([]);

    writeFileSync(path.join(dir, "pyproject.toml"), `${read("pyproject.toml")}\n[tool.ours]\nx = 1\n`);
    const edited = planPins(dir, manifest, "2.13.0", "2.14.0");
    expect(edited.move.map((f) => f.path).sort()).toEqual([".github/workflows/ci.yml", "README.md"]);
    const lines = read("pyproject.toml")
      .split("\n")
      .flatMap((l, i) => (l.includes('"torch==2.13.0"') ? [i + 1] : []));
    expect(lines).toHaveLength(2);
    expect(edited.kept).toEqual([{ path: "pyproject.toml", lines }]);
    expect(planPins(dir, manifest, "2.13.0", "2.13.0")).toEqual({ move: [], kept: [], kind: null });
  });
});

describe("newKernelStubs", () => {
  it("stubs a kernel no manifest entry served, never one whose definition exists with the old signature", () => {
    const yaml =
      "backend: PrivateUse1\ncpp_namespace: upg\nfree_functions: true\nsupported:\n  - abs\n  - narrow_copy\nsymint:\n  - narrow_copy\n";
    const config = parseBackendYaml(yaml, "backend.yaml", catalog);
    const m = JSON.parse(
      generate(config, catalog).find((f) => f.path === "op_manifest.json")!.content as string,
    ) as Manifest;
    // The project defines narrow_copy's kernel only (abs falls back, as if gen had never declared it).
    const src = mkdtempSync(path.join(tmp, "stubs-"));
    for (const s of kernelStubs(buildPlan(config, catalog))) {
      if (s.path === "narrow_copy.cpp") writeFileSync(path.join(src, s.path), s.content);
    }
    // The target: narrow_copy's dim becomes SymInt (its kernel's signature changes).
    const nc = catalog.byName.get("narrow_copy")!;
    const text = "narrow_copy(Tensor self, SymInt dim, SymInt start, SymInt length) -> Tensor";
    const changed: NativeFunction = { ...nc, func: parseSchema(text), funcText: text };
    const target: OperatorCatalog = {
      ...catalog,
      functions: catalog.functions.map((f) => (f.name === "narrow_copy" ? changed : f)),
      byName: new Map([...catalog.byName].map(([k, f]) => [k, k === "narrow_copy" ? changed : f])),
    };
    const plan = buildPlan(config, target);
    // Every kernel served before: nothing to stub (abs: the manifest says it was served; narrow_copy's
    // definition no longer matches, which the report names as a break).
    expect(newKernelStubs(plan, m, [src])).toEqual([]);
    // A manifest in which abs was not served: abs is new, and gets its stub.
    const without = { ...m, operators: m.operators.filter((o) => o.name !== "abs") };
    const stubs = newKernelStubs(plan, without, [src]);
    expect(stubs.map((s) => [s.path, s.createOnly])).toEqual([["abs.cpp", true]]);
  });
});
