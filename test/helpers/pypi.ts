/**
 * A tiny stand-in for PyPI, for `upgrade --torch-version` tests without the
 * network: a zip written here (deflated members, the layout a wheel has),
 * served from 127.0.0.1 with the JSON API's shape and HTTP range requests.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import zlib from "node:zlib";

/**
 * A zip file of `members` (name -> text), deflated, with a central directory.
 * `zip64`: the central directory's sizes and offsets in zip64 records (as a
 * writer must past 4 GiB or 65,535 members), the 32-bit fields saturated.
 */
export function makeZip(members: Readonly<Record<string, string>>, opts: { zip64?: boolean } = {}): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(members)) {
    const raw = Buffer.from(text, "utf8");
    const data = zlib.deflateRawSync(raw);
    const crc = zlib.crc32(raw);
    const nameBuf = Buffer.from(name, "utf8");
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(raw.length, 22);
    local.writeUInt16LE(nameBuf.length, 26);
    // An extra field in the local header only, as some zip writers add: readers must use the local lengths.
    const extra = Buffer.from([0xfe, 0xca, 4, 0, 1, 2, 3, 4]);
    local.writeUInt16LE(extra.length, 28);
    // zip64 extra: original size, compressed size, local header offset (the saturated fields, in this order).
    const z64 = Buffer.alloc(opts.zip64 ? 28 : 0);
    if (opts.zip64) {
      z64.writeUInt16LE(1, 0);
      z64.writeUInt16LE(24, 2);
      z64.writeBigUInt64LE(BigInt(raw.length), 4);
      z64.writeBigUInt64LE(BigInt(data.length), 12);
      z64.writeBigUInt64LE(BigInt(offset), 20);
    }
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(opts.zip64 ? 0xffffffff : data.length, 20);
    central.writeUInt32LE(opts.zip64 ? 0xffffffff : raw.length, 24);
    central.writeUInt16LE(nameBuf.length, 28);
    central.writeUInt16LE(z64.length, 30);
    central.writeUInt32LE(opts.zip64 ? 0xffffffff : offset, 42);
    locals.push(local, nameBuf, extra, data);
    centrals.push(central, nameBuf, z64);
    offset += local.length + nameBuf.length + extra.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const n = Object.keys(members).length;
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : n, 8);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : n, 10);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : cd.length, 12);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : offset, 16);
  if (!opts.zip64) return Buffer.concat([...locals, cd, eocd]);
  const rec = Buffer.alloc(56);
  rec.writeUInt32LE(0x06064b50, 0);
  rec.writeBigUInt64LE(44n, 4);
  rec.writeUInt16LE(45, 12);
  rec.writeUInt16LE(45, 14);
  rec.writeBigUInt64LE(BigInt(n), 24);
  rec.writeBigUInt64LE(BigInt(n), 32);
  rec.writeBigUInt64LE(BigInt(cd.length), 40);
  rec.writeBigUInt64LE(BigInt(offset), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(offset + cd.length), 8);
  locator.writeUInt32LE(1, 16);
  return Buffer.concat([...locals, cd, rec, locator, eocd]);
}

export interface FakePypi {
  /** The JSON API base, e.g. http://127.0.0.1:PORT/pypi */
  readonly index: string;
  /** Every request's path and Range header. */
  readonly requests: { path: string; range: string | undefined }[];
  close(): Promise<void>;
}

/**
 * Serves `releases` (version -> wheel bytes) as torch on a fake index: the
 * project page (`/pypi/torch/json`, with `releases`) always, the release
 * pages only when `releasePages` (some mirrors lack them), wheels with byte
 * ranges unless `noRanges`.
 */
export async function fakePypi(
  releases: ReadonlyMap<string, Buffer>,
  opts: { releasePages?: boolean; noRanges?: boolean } = {},
): Promise<FakePypi> {
  const requests: FakePypi["requests"] = [];
  // Relative URLs, as the mirror here writes them (resolved against the page's own URL).
  const files = (v: string, wheel: Buffer, up: string) => [
    {
      filename: `torch-${v}-cp311-cp311-manylinux_2_28_x86_64.whl`,
      url: `${up}files/torch-${v}.whl`,
      size: wheel.length,
      packagetype: "bdist_wheel",
      yanked: false,
    },
    { filename: `torch-${v}.tar.gz`, url: `${up}files/nope`, size: 1, packagetype: "sdist", yanked: false },
  ];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? "";
    requests.push({ path: url, range: req.headers.range });
    const json = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url === "/pypi/torch/json") {
      const versions = [...releases.keys()];
      return json({
        info: { version: versions[versions.length - 1] },
        releases: Object.fromEntries([...releases].map(([v, w]) => [v, files(v, w, "../../")])),
      });
    }
    const page = /^\/pypi\/torch\/([^/]+)\/json$/.exec(url);
    if (page && opts.releasePages && releases.has(page[1]!)) {
      return json({ info: { version: page[1] }, urls: files(page[1]!, releases.get(page[1]!)!, "../../../") });
    }
    const wheel = /^\/files\/torch-(.+)\.whl$/.exec(url);
    const body = wheel ? releases.get(wheel[1]!) : undefined;
    if (!body) {
      res.writeHead(404);
      return res.end();
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    if (!m || opts.noRanges) {
      res.writeHead(200, { "content-length": body.length });
      return res.end(body);
    }
    const [a, b] = [Number(m[1]), Math.min(Number(m[2]), body.length - 1)];
    res.writeHead(206, { "content-range": `bytes ${a}-${b}/${body.length}`, "content-length": b - a + 1 });
    res.end(body.subarray(a, b + 1));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    index: `http://127.0.0.1:${port}/pypi`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A wheel-shaped zip holding torchgen's three packaged YAMLs (and a member we
 * must not read); `python`: torch Python files by their path in the wheel
 * (`torch/_inductor/...`), for upgrade's Python API drift.
 */
export function torchWheel(
  nativeFunctions: string,
  tags: string,
  derivatives: string,
  opts: { zip64?: boolean; python?: Readonly<Record<string, string>> } = {},
): Buffer {
  return makeZip(
    {
      "torch/__init__.py": "# not read\n",
      ...opts.python,
      "torchgen/packaged/ATen/native/native_functions.yaml": nativeFunctions,
      "torchgen/packaged/ATen/native/tags.yaml": tags,
      "torchgen/packaged/autograd/derivatives.yaml": derivatives,
      "torch-2.x.dist-info/RECORD": "",
    },
    opts,
  );
}
