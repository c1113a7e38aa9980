/**
 * `upgrade --torch-version`'s wheel reader (Note [Schemas from a wheel]),
 * offline: a wheel-shaped zip of the installed torch's YAMLs served from a
 * local HTTP server with the JSON API's shape and byte ranges.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog } from "../../src/model/catalog.js";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";
import { PYTHON_API_FILES } from "../../src/upgrade/python-api.js";
import { fetchTorchSchemas } from "../../src/upgrade/wheel.js";
import { type FakePypi, fakePypi, torchWheel } from "../helpers/pypi.js";

let install: TorchInstall;
let texts: { nf: string; tags: string; der: string };
let wheel: Buffer;
let tmp: string;
let cacheN = 0;
const servers: FakePypi[] = [];
const cache = () => path.join(tmp, `cache${cacheN++}`);

async function serve(...args: Parameters<typeof fakePypi>): Promise<FakePypi> {
  const s = await fakePypi(...args);
  servers.push(s);
  return s;
}

beforeAll(async () => {
  install = await discoverTorch();
  texts = {
    nf: readFileSync(install.nativeFunctionsYaml, "utf8"),
    tags: readFileSync(install.tagsYaml, "utf8"),
    der: readFileSync(install.derivativesYaml, "utf8"),
  };
  wheel = torchWheel(texts.nf, texts.tags, texts.der);
  tmp = mkdtempSync(path.join(tmpdir(), "opgen-wheel-"));
});

afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("fetchTorchSchemas", () => {
  it("reads the three YAMLs out of the wheel with range requests, and caches them", async () => {
    const pypi = await serve(new Map([["2.14.0", wheel]]), { releasePages: true });
    const dir = cache();
    const got = await fetchTorchSchemas("2.14.0", { index: pypi.index, cacheDir: dir });
    expect(got.fromCache).toBe(false);
    expect(got.wheel).toBe("torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    expect(readFileSync(got.nativeFunctionsYaml, "utf8")).toBe(texts.nf);
    expect(readFileSync(got.tagsYaml, "utf8")).toBe(texts.tags);
    expect(readFileSync(got.derivativesYaml, "utf8")).toBe(texts.der);
    // Never the whole wheel: every request for it is a range, and less than the wheel came over.
    const wheelRequests = pypi.requests.filter((r) => r.path.endsWith(".whl"));
    expect(wheelRequests.length).toBeGreaterThan(0);
    expect(wheelRequests.every((r) => r.range?.startsWith("bytes="))).toBe(true);
    expect(pypi.requests.map((r) => r.path)).not.toContain("/pypi/torch/json");
    // The same catalog an installed torch gives.
    const [fetched, installed] = await Promise.all([loadCatalog(got), loadCatalog(install)]);
    expect(fetched.torchVersion).toBe("2.14.0");
    expect(fetched.functions.length).toBe(installed.functions.length);
    expect(fetched.byName.get("add.Tensor")?.funcText).toBe(installed.byName.get("add.Tensor")?.funcText);

    const n = pypi.requests.length;
    const again = await fetchTorchSchemas("2.14.0", { index: pypi.index, cacheDir: dir });
    expect(again).toMatchObject({ fromCache: true, wheel: got.wheel, bytes: 0 });
    expect(pypi.requests.length).toBe(n);
    // --offline reads the cache too.
    expect((await fetchTorchSchemas("2.14.0", { cacheDir: dir, offline: true })).fromCache).toBe(true);
  });

  it("fetches the torch Python files upgrade's API drift reads, and caches them with the YAMLs", async () => {
    // All but one: a wheel without a file is recorded as such (its definitions are then missing).
    const [absent, ...present] = PYTHON_API_FILES;
    const python = Object.fromEntries(
      present.map((f) => [f, readFileSync(path.join(install.torchDir, "..", f), "utf8")]),
    );
    const pypi = await serve(new Map([["2.14.3", torchWheel(texts.nf, texts.tags, texts.der, { python })]]));
    const dir = cache();
    const got = await fetchTorchSchemas("2.14.3", { index: pypi.index, cacheDir: dir });
    expect(got.pythonRoot).toBe(path.join(dir, "torch-schemas/2.14.3/python"));
    for (const f of present) expect(readFileSync(path.join(got.pythonRoot!, f), "utf8"), f).toBe(python[f]);
    expect(existsSync(path.join(got.pythonRoot!, absent!))).toBe(false);
    const record = path.join(dir, "torch-schemas/2.14.3/wheel.json");
    expect(JSON.parse(readFileSync(record, "utf8")).python).toEqual(present);
    const again = await fetchTorchSchemas("2.14.3", { cacheDir: dir, offline: true });
    expect(again).toMatchObject({ fromCache: true, pythonRoot: got.pythonRoot });

    // A cache an older opgen-backend wrote (no `python` in the record): offline, the YAMLs without the
    // Python files; online, fetched again.
    writeFileSync(record, JSON.stringify({ version: "2.14.3", wheel: got.wheel }));
    expect(await fetchTorchSchemas("2.14.3", { cacheDir: dir, offline: true })).toMatchObject({
      fromCache: true,
      pythonRoot: null,
    });
    const refetched = await fetchTorchSchemas("2.14.3", { index: pypi.index, cacheDir: dir });
    expect(refetched).toMatchObject({ fromCache: false, pythonRoot: got.pythonRoot });
    expect(JSON.parse(readFileSync(record, "utf8")).python).toEqual(present);
  });

  it("falls back to the project page's releases, and normalises CRLF (Windows wheels)", async () => {
    const crlf = torchWheel(texts.nf.replace(/\n/g, "\r\n"), texts.tags.replace(/\n/g, "\r\n"), texts.der);
    const pypi = await serve(new Map([["2.14.1", crlf]]));
    const got = await fetchTorchSchemas("2.14.1", { index: pypi.index, cacheDir: cache() });
    expect(pypi.requests.map((r) => r.path).slice(0, 2)).toEqual(["/pypi/torch/2.14.1/json", "/pypi/torch/json"]);
    expect(readFileSync(got.nativeFunctionsYaml, "utf8")).toBe(texts.nf);
    expect(readFileSync(got.tagsYaml, "utf8")).toBe(texts.tags);
  });

  it("reads a zip64 wheel (sizes and offsets in zip64 records)", async () => {
    const pypi = await serve(new Map([["2.14.2", torchWheel(texts.nf, texts.tags, texts.der, { zip64: true })]]));
    const got = await fetchTorchSchemas("2.14.2", { index: pypi.index, cacheDir: cache() });
    expect(readFileSync(got.nativeFunctionsYaml, "utf8")).toBe(texts.nf);
    expect(readFileSync(got.derivativesYaml, "utf8")).toBe(texts.der);
  });

  it.each([
    [
      "a version the index does not have",
      "2.99.0",
      /^torch 2\.99\.0 is not a release on http:\/\/127\.0\.0\.1:\d+\/pypi \(the latest is 2\.14\.0\)/,
    ],
    ["not a release number", "2.14", /^--torch-version 2\.14: not a torch release like 2\.14\.0$/],
  ])("refuses %s in one line", async (_what, version, want) => {
    const pypi = await serve(new Map([["2.14.0", wheel]]));
    const err = await fetchTorchSchemas(version, { index: pypi.index, cacheDir: cache() }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(want);
    expect((err as Error).message).not.toContain("\n");
  });

  it("says it cannot reach the index when offline, and writes nothing", async () => {
    // A port nothing listens on.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dir = cache();
    const err = await fetchTorchSchemas("2.14.0", { index: `http://127.0.0.1:${port}/pypi`, cacheDir: dir }).catch(
      (e: Error) => e,
    );
    expect((err as Error).message).toMatch(
      /^cannot reach http:\/\/127\.0\.0\.1:\d+\/pypi\/torch\/2\.14\.0\/json \(ECONNREFUSED\);/,
    );
    expect(() => readFileSync(path.join(dir, "torch-schemas/2.14.0/wheel.json"))).toThrow();
    await expect(fetchTorchSchemas("2.14.0", { cacheDir: dir, offline: true })).rejects.toThrow(
      /schemas are not in the cache .*; run once without --offline/,
    );
  });

  it("refuses a server that ignores byte ranges instead of downloading the whole wheel", async () => {
    const pypi = await serve(new Map([["2.14.0", wheel]]), { noRanges: true });
    await expect(fetchTorchSchemas("2.14.0", { index: pypi.index, cacheDir: cache() })).rejects.toThrow(
      /answered 200 to a range request; it must serve byte ranges/,
    );
  });
});
