/**
 * The operator YAMLs of a torch release without installing it, for
 * `opgen-backend upgrade --torch-version X` (issue 15): PyPI's JSON API names
 * the release's wheels; we read three members of one wheel with HTTP range
 * requests and cache them per version.
 *
 * Note [Schemas from a wheel]: a wheel is a zip, whose central directory
 * (the list of members with their offsets) sits at the end of the file. So
 * the tail (end-of-central-directory record, zip64 when the wheel needs it),
 * then the central directory, then each wanted member's local header and
 * deflated bytes are three rounds of range requests: a few MB of a wheel of
 * hundreds. The members are torchgen's packaged native_functions.yaml,
 * tags.yaml and derivatives.yaml, the same files loadCatalog reads from an
 * installed torch, so a fetched release goes through exactly the path an
 * installed one does. They are the same on every platform, so we take the
 * smallest wheel of the release. A release is immutable on PyPI, so the cache
 * (keyed by version) is never revalidated.
 *
 * The same rounds also fetch the torch Python files whose private APIs the
 * project's package relies on (PYTHON_API_FILES, Note [Watched Python APIs]),
 * into the cache's `python/` (laid out as in site-packages). A wheel without
 * one of them is recorded as such (the report calls its definitions
 * missing); a cache an older opgen-backend wrote, without the record's
 * `python` list, is fetched again, or read without the Python files offline.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import type { CatalogSources } from "../model/catalog.js";
import { UserError } from "../util/errors.js";
import { defaultCacheDir, type Http, httpGet } from "../util/http.js";
import { writeFiles } from "../write/files.js";
import { PYTHON_API_FILES } from "./python-api.js";

export { defaultCacheDir } from "../util/http.js";

export const DEFAULT_INDEX = "https://pypi.org/pypi";

/** The wheel members a catalog is built from, and where they go in the cache. */
const MEMBERS = {
  "native_functions.yaml": "torchgen/packaged/ATen/native/native_functions.yaml",
  "tags.yaml": "torchgen/packaged/ATen/native/tags.yaml",
  "derivatives.yaml": "torchgen/packaged/autograd/derivatives.yaml",
} as const;

export interface FetchOptions {
  /** PyPI's JSON API base (default DEFAULT_INDEX, or $OPGEN_PYPI_URL). */
  readonly index?: string;
  /** Where fetched releases are kept (default defaultCacheDir()). */
  readonly cacheDir?: string;
  /** Per-request timeout. */
  readonly timeoutMs?: number;
  /** Only what the cache holds: no request is made. */
  readonly offline?: boolean;
}

export interface FetchedTorch extends CatalogSources {
  /** The wheel the members came from (file name), or null when read from the cache without a record. */
  readonly wheel: string | null;
  readonly fromCache: boolean;
  /**
   * Holds the wheel's PYTHON_API_FILES as `torch/...` (those the wheel has);
   * null when the cache predates them and --offline kept us from fetching.
   */
  readonly pythonRoot: string | null;
  /** Bytes transferred (0 from the cache). */
  readonly bytes: number;
}

async function get(http: Http, url: string, range?: [number, number]): Promise<Response> {
  return httpGet(http, url, range);
}

/** Bytes [start, end) of `url`; refuses a server that ignores the range (it would send the whole wheel). */
async function range(http: Http, url: string, start: number, end: number): Promise<Buffer> {
  const r = await get(http, url, [start, end]);
  if (r.status !== 206) {
    await r.body?.cancel();
    throw new UserError(`${url} answered ${r.status} to a range request; it must serve byte ranges (HTTP 206)`);
  }
  const b = Buffer.from(await r.arrayBuffer());
  http.bytes += b.length;
  if (b.length !== end - start)
    throw new UserError(`${url}: asked for ${end - start} bytes at ${start}, got ${b.length}`);
  return b;
}

interface WheelFile {
  readonly filename: string;
  readonly url: string;
  readonly size: number;
}

type PypiFile = { filename?: string; url?: string; size?: number; packagetype?: string; yanked?: boolean };

async function getJson<T>(http: Http, url: string): Promise<T | null> {
  const r = await get(http, url);
  if (r.status === 404) {
    await r.body?.cancel();
    return null;
  }
  if (!r.ok) {
    await r.body?.cancel();
    throw new UserError(`${url} answered ${r.status}`);
  }
  const text = await r.text();
  http.bytes += text.length;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UserError(`${url} did not answer with PyPI's JSON API`);
  }
}

/**
 * The release's wheels, from PyPI's JSON API: the release's own page, else
 * the project page's `releases` (some mirrors serve only that); a one-line
 * error for a version the index does not have.
 */
async function releaseWheels(http: Http, version: string): Promise<WheelFile[]> {
  let url = `${http.base}/torch/${version}/json`;
  let files = (await getJson<{ urls?: PypiFile[] }>(http, url))?.urls;
  if (!files) {
    url = `${http.base}/torch/json`;
    const project = await getJson<{ info?: { version?: string }; releases?: Record<string, PypiFile[]> }>(http, url);
    files = project?.releases?.[version];
    if (!files) {
      const latest = project?.info?.version;
      throw new UserError(
        `torch ${version} is not a release on ${http.base}${latest ? ` (the latest is ${latest})` : ""}; pass a released version like 2.14.0`,
      );
    }
  }
  const wheels = files
    .filter((u) => u.packagetype === "bdist_wheel" && !u.yanked && u.filename && u.url && typeof u.size === "number")
    .map((u) => ({ filename: u.filename!, url: new URL(u.url!, url).href, size: u.size! }));
  if (wheels.length === 0)
    throw new UserError(`torch ${version} on ${http.base} has no wheel to read its schemas from`);
  return wheels.sort((a, b) => a.size - b.size || (a.filename < b.filename ? -1 : 1));
}

interface Entry {
  readonly name: string;
  readonly method: number;
  readonly crc: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly offset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Where the central directory is: from the end-of-central-directory record (zip64 when the fields overflow). */
async function centralDirectory(http: Http, w: WheelFile): Promise<{ offset: number; size: number }> {
  const tailLen = Math.min(w.size, 22 + 0xffff + 20);
  const tail = await range(http, w.url, w.size - tailLen, w.size);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new UserError(`${w.filename} is not a zip file (no end-of-central-directory record)`);
  let size = tail.readUInt32LE(at + 12);
  let offset = tail.readUInt32LE(at + 16);
  if (offset === 0xffffffff || size === 0xffffffff) {
    const loc = at - 20;
    if (loc < 0 || tail.readUInt32LE(loc) !== ZIP64_LOCATOR) throw new UserError(`${w.filename}: broken zip64 record`);
    const recAt = Number(tail.readBigUInt64LE(loc + 8));
    const rec = await range(http, w.url, recAt, recAt + 56);
    if (rec.readUInt32LE(0) !== ZIP64_EOCD) throw new UserError(`${w.filename}: broken zip64 record`);
    size = Number(rec.readBigUInt64LE(40));
    offset = Number(rec.readBigUInt64LE(48));
  }
  return { offset, size };
}

function parseCentral(buf: Buffer, wheel: string): Entry[] {
  const out: Entry[] = [];
  let i = 0;
  while (i + 46 <= buf.length && buf.readUInt32LE(i) === CENTRAL) {
    const nameLen = buf.readUInt16LE(i + 28);
    const extraLen = buf.readUInt16LE(i + 30);
    const commentLen = buf.readUInt16LE(i + 32);
    const name = buf.toString("utf8", i + 46, i + 46 + nameLen);
    let compressedSize = buf.readUInt32LE(i + 20);
    let size = buf.readUInt32LE(i + 24);
    let offset = buf.readUInt32LE(i + 42);
    // zip64 extra field (0x0001): the 64-bit values, in this order, for the fields that overflowed.
    let e = i + 46 + nameLen;
    const eEnd = e + extraLen;
    while (e + 4 <= eEnd) {
      const id = buf.readUInt16LE(e);
      const len = buf.readUInt16LE(e + 2);
      if (id === 1) {
        let p = e + 4;
        const next = () => {
          const v = Number(buf.readBigUInt64LE(p));
          p += 8;
          return v;
        };
        if (size === 0xffffffff) size = next();
        if (compressedSize === 0xffffffff) compressedSize = next();
        if (offset === 0xffffffff) offset = next();
      }
      e += 4 + len;
    }
    out.push({ name, method: buf.readUInt16LE(i + 10), crc: buf.readUInt32LE(i + 16), compressedSize, size, offset });
    i = eEnd + commentLen;
  }
  if (out.length === 0) throw new UserError(`${wheel}: cannot read its central directory`);
  return out;
}

async function member(http: Http, w: WheelFile, e: Entry): Promise<string> {
  // The local header repeats name and extra with lengths of its own; 30 + name + a generous extra.
  const head = await range(http, w.url, e.offset, Math.min(w.size, e.offset + 30 + e.name.length + 1024));
  if (head.readUInt32LE(0) !== LOCAL) throw new UserError(`${w.filename}: ${e.name} has no local header`);
  const start = e.offset + 30 + head.readUInt16LE(26) + head.readUInt16LE(28);
  const data = await range(http, w.url, start, start + e.compressedSize);
  let raw: Buffer;
  if (e.method === 0) raw = data;
  else if (e.method === 8) raw = zlib.inflateRawSync(data);
  else throw new UserError(`${w.filename}: ${e.name} uses zip method ${e.method}; only stored and deflated are read`);
  const crc32 = (zlib as unknown as { crc32?: (b: Buffer) => number }).crc32;
  if (raw.length !== e.size || (crc32 && crc32(raw) >>> 0 !== e.crc >>> 0)) {
    throw new UserError(`${w.filename}: ${e.name} does not match its checksum`);
  }
  // A Windows wheel ships them with CRLF line ends; the cache holds what a Linux install has.
  return raw.toString("utf8").replace(/\r\n/g, "\n");
}

function sources(dir: string, version: string): CatalogSources {
  return {
    version,
    nativeFunctionsYaml: path.join(dir, "native_functions.yaml"),
    tagsYaml: path.join(dir, "tags.yaml"),
    derivativesYaml: path.join(dir, "derivatives.yaml"),
  };
}

/**
 * The operator YAMLs of torch `version` (a release, `x.y.z`), from the cache
 * or from PyPI. Throws a one-line UserError when offline, for a version PyPI
 * does not have, or for a wheel we cannot read.
 */
export async function fetchTorchSchemas(version: string, opts: FetchOptions = {}): Promise<FetchedTorch> {
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    throw new UserError(`--torch-version ${version}: not a torch release like 2.14.0`);
  }
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const rel = `torch-schemas/${version}`;
  const dir = path.join(cacheDir, rel);
  const record = path.join(dir, "wheel.json");
  // The record is written last (writeFiles goes in path order), so with it the three YAMLs are there.
  if (existsSync(record) && Object.keys(MEMBERS).every((f) => existsSync(path.join(dir, f)))) {
    let rec: { wheel?: string; python?: unknown } = {};
    try {
      rec = JSON.parse(readFileSync(record, "utf8")) as typeof rec;
    } catch {}
    const hasPython = Array.isArray(rec.python);
    if (hasPython || opts.offline) {
      const pythonRoot = hasPython ? path.join(dir, "python") : null;
      return { ...sources(dir, version), wheel: rec.wheel ?? null, fromCache: true, pythonRoot, bytes: 0 };
    }
  }
  if (opts.offline) {
    throw new UserError(`torch ${version}'s schemas are not in the cache ${cacheDir}; run once without --offline`);
  }
  const http: Http = {
    base: (opts.index ?? process.env.OPGEN_PYPI_URL ?? DEFAULT_INDEX).replace(/\/+$/, ""),
    timeoutMs: opts.timeoutMs ?? 60_000,
    offlineHint:
      "--torch-version needs the network once per release (it is cached afterwards), or install that torch and pass --python",
    bytes: 0,
    requests: 0,
  };
  const [w] = await releaseWheels(http, version);
  const cd = await centralDirectory(http, w!);
  const entries = parseCentral(await range(http, w!.url, cd.offset, cd.offset + cd.size), w!.filename);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const files = await Promise.all(
    Object.entries(MEMBERS).map(async ([file, inWheel]) => {
      const e = byName.get(inWheel);
      if (!e) throw new UserError(`${w!.filename} has no ${inWheel}; opgen-backend reads torch 2.13 and later`);
      return { path: `${rel}/${file}`, content: await member(http, w!, e) };
    }),
  );
  const python = await Promise.all(
    PYTHON_API_FILES.filter((f) => byName.has(f)).map(async (f) => ({
      path: `${rel}/python/${f}`,
      content: await member(http, w!, byName.get(f)!),
    })),
  );
  const rec = { version, wheel: w!.filename, python: python.map((f) => f.path.slice(rel.length + "/python/".length)) };
  writeFiles(cacheDir, [
    ...files,
    ...python,
    { path: `${rel}/wheel.json`, content: `${JSON.stringify(rec, null, 2)}\n` },
  ]);
  return {
    ...sources(dir, version),
    wheel: w!.filename,
    fromCache: false,
    pythonRoot: path.join(dir, "python"),
    bytes: http.bytes,
  };
}
