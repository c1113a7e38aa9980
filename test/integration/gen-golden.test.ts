/**
 * `gen` output pinned byte for byte: the sha256 of every file the CLI writes
 * for three backend YAMLs (the core-ATen overloads, every operator of the
 * catalog, the reference backend's and an autograd fixture) against the installed torch, compared
 * with test/fixtures/gen/golden.json. Refactors of the pipeline must leave
 * these unchanged; a deliberate change of the generated code regenerates the
 * file with `OPGEN_UPDATE_GOLDEN=1 npx vitest run test/integration/gen-golden.test.ts`
 * and says why in its commit.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch } from "../../src/torch/discover.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const GOLDEN = path.join(ROOT, "test/fixtures/gen/golden.json");

interface Golden {
  readonly torch: string;
  readonly yamls: Record<string, Record<string, string>>;
}

let catalog: OperatorCatalog;
let work: string;

beforeAll(async () => {
  catalog = await loadCatalog(await discoverTorch(process.env.OPGEN_PYTHON));
  work = mkdtempSync(path.join(tmpdir(), "opgen-golden-"));
});

/** The YAMLs bench/gen.mjs times, plus the reference backend's. */
function yamls(): Record<string, string> {
  const list = (names: string[]) =>
    `backend: PrivateUse1\ncpp_namespace: at::benchchip\nsupported:\n${names.map((n) => `- ${n}\n`).join("")}`;
  const core = catalog.functions.filter((f) => f.tags.includes("core")).map((f) => f.name);
  const all = catalog.functions.map((f) => f.name);
  const byCode = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const out: Record<string, string> = {
    core: path.join(work, "core.yaml"),
    all: path.join(work, "all.yaml"),
    // A copy of backends/ref/backend.yaml as of the golden hashes, so that
    // adding an operator to the reference backend does not move them.
    ref: path.join(ROOT, "test/fixtures/gen/golden/backend.yaml"),
    autograd: path.join(ROOT, "test/fixtures/backend/npu_autograd.yaml"),
    // autograd: mappings (a backward kernel, formulas) and custom: operators.
    custom: path.join(ROOT, "test/fixtures/gen/golden/custom.yaml"),
  };
  writeFileSync(out.core!, list(core.sort(byCode)));
  writeFileSync(out.all!, list(all.sort(byCode)));
  return out;
}

function genHashes(yaml: string, outDir: string): Record<string, string> {
  const r = spawnSync(process.execPath, [path.join(ROOT, "bin/opgen-backend.js"), "gen", yaml, "-o", outDir], {
    cwd: work,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  expect(r.status, r.stderr).toBe(0);
  const hashes: Record<string, string> = {};
  for (const f of readdirSync(outDir, { recursive: true, withFileTypes: true })) {
    if (!f.isFile()) continue;
    const abs = path.join(f.parentPath, f.name);
    hashes[path.relative(outDir, abs)] = createHash("sha256").update(readFileSync(abs)).digest("hex");
  }
  return Object.fromEntries(Object.entries(hashes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

describe("gen output is byte-identical to the committed golden hashes", () => {
  it("core ATen, every operator, and backends/ref", () => {
    const got: Golden = {
      torch: catalog.torchVersion,
      yamls: Object.fromEntries(
        Object.entries(yamls()).map(([name, yaml]) => [name, genHashes(yaml, path.join(work, `out-${name}`))]),
      ),
    };
    if (process.env.OPGEN_UPDATE_GOLDEN === "1") {
      writeFileSync(GOLDEN, `${JSON.stringify(got, null, 2)}\n`);
      return;
    }
    const want = JSON.parse(readFileSync(GOLDEN, "utf8")) as Golden;
    expect(got.torch, "the golden hashes were taken against another torch").toBe(want.torch);
    expect(got.yamls).toEqual(want.yamls);
  });
});
