import { describe, expect, it } from "vitest";
import {
  defaultWorkerMemory,
  type OpInfo,
  type OpManifest,
  parseDtypes,
  parseMemorySize,
  parseShard,
  selectOps,
  shardOps,
} from "../../src/conformance/select.js";
import { UserError } from "../../src/util/errors.js";

const manifest: OpManifest = {
  device: "mychip",
  python_package: "torch_mychip",
  operators: [
    { name: "relu" },
    { name: "add.Tensor", core: true },
    { name: "add_.Tensor" },
    { name: "add.out", dtypes: ["float32"] },
    { name: "view" },
    { name: "mul.Tensor" },
    { name: "gone.x" },
  ],
};

const info: Record<string, OpInfo> = {
  relu: { exists: true, kind: "functional", core: true, view: false },
  "add.Tensor": { exists: true, kind: "functional", core: false, view: false },
  "add_.Tensor": { exists: true, kind: "inplace", core: false, view: false },
  "add.out": { exists: true, kind: "out", core: false, view: false },
  view: { exists: true, kind: "functional", core: true, view: true },
  "mul.Tensor": { exists: true, kind: "functional", core: true, view: false },
  "gone.x": { exists: false, kind: "functional", core: false, view: false },
};

describe("selectOps", () => {
  it("takes every existing op, sorted, filling kind/core/view; the manifest wins", () => {
    const { ops } = selectOps(manifest, info, {});
    expect(ops.map((o) => o.op)).toEqual(["add.Tensor", "add.out", "add_.Tensor", "mul.Tensor", "relu", "view"]);
    expect(ops.find((o) => o.op === "add.Tensor")!.core).toBe(true);
    expect(ops.find((o) => o.op === "add_.Tensor")!.kind).toBe("inplace");
    expect(ops.find((o) => o.op === "view")!.view).toBe(true);
    expect(ops.find((o) => o.op === "add.out")!.dtypes).toEqual(["float32"]);
  });

  it("--ops globs, --core, --dtypes", () => {
    expect(selectOps(manifest, info, { globs: ["add*"] }).ops.map((o) => o.op)).toEqual([
      "add.Tensor",
      "add.out",
      "add_.Tensor",
    ]);
    expect(selectOps(manifest, info, { core: true }).ops.map((o) => o.op)).toEqual([
      "add.Tensor",
      "mul.Tensor",
      "relu",
      "view",
    ]);
    const d = selectOps(manifest, info, { dtypes: ["int64", "float32"] }).ops;
    expect(d.find((o) => o.op === "relu")!.dtypes).toEqual(["int64", "float32"]);
    expect(d.find((o) => o.op === "add.out")!.dtypes).toEqual(["float32"]);
    expect(selectOps(manifest, info, { globs: ["nomatch*", "relu"] }).unmatched).toEqual(["nomatch*"]);
  });

  it("partial_dtypes: the listed ops alone claim those dtypes (Note [Partial dtypes])", () => {
    const claims: OpManifest = { ...manifest, dtypes: ["float32", "int64"], partial_dtypes: { complex64: ["relu"] } };
    const all = selectOps(claims, info, {}).ops;
    expect(all.find((o) => o.op === "relu")!.dtypes).toEqual(["float32", "complex64", "int64"]);
    expect(all.find((o) => o.op === "add.out")!.dtypes).toEqual(["float32"]);
    const only = selectOps(claims, info, { dtypes: ["complex64"] }).ops;
    expect(only.map((o) => [o.op, o.dtypes])).toEqual([["relu", ["complex64"]]]);
    expect(() => selectOps(claims, info, { dtypes: ["complex128"] })).toThrow(
      "its backend.yaml dtypes: are float32, int64, and partial_dtypes: complex64 for some ops",
    );
  });

  it("backend.yaml's dtypes (the manifest's) are what is tested; --dtypes narrows them", () => {
    const claims: OpManifest = { ...manifest, dtypes: ["float32", "int64", "bool"] };
    const all = selectOps(claims, info, {}).ops;
    expect(all.find((o) => o.op === "relu")!.dtypes).toEqual(["float32", "int64", "bool"]);
    expect(all.find((o) => o.op === "add.out")!.dtypes).toEqual(["float32"]);
    const widening: OpManifest = { ...claims, operators: [{ name: "relu", dtypes: ["float64", "int64"] }] };
    expect(selectOps(widening, info, {}).ops[0]!.dtypes).toEqual(["int64"]);
    const narrowed = selectOps(claims, info, { dtypes: ["int64", "float64"] }).ops;
    expect(narrowed.find((o) => o.op === "relu")!.dtypes).toEqual(["int64"]);
    expect(narrowed.find((o) => o.op === "add.out")).toBeUndefined();
    expect(() => selectOps(claims, info, { dtypes: ["float64"] })).toThrow(
      "--dtypes float64: the backend claims none of these; its backend.yaml dtypes: are float32, int64, bool",
    );
  });

  it("shards partition the selection deterministically", () => {
    const all = selectOps(manifest, info, {}).ops.map((o) => o.op);
    for (const n of [1, 2, 3, 4, 7]) {
      const parts = Array.from({ length: n }, (_, i) =>
        selectOps(manifest, info, { shard: { index: i + 1, count: n } }).ops.map((o) => o.op),
      );
      expect(parts.flat().sort()).toEqual(all);
      expect(new Set(parts.flat()).size).toBe(all.length);
      const again = Array.from({ length: n }, (_, i) =>
        selectOps(manifest, info, { shard: { index: i + 1, count: n } }).ops.map((o) => o.op),
      );
      expect(again).toEqual(parts);
    }
  });

  it("shard assignment ignores manifest order", () => {
    const ops = [{ op: "c" }, { op: "a" }, { op: "b" }];
    expect(shardOps(ops, { index: 1, count: 2 }).map((o) => o.op)).toEqual(["a", "c"]);
    expect(shardOps([...ops].reverse(), { index: 1, count: 2 }).map((o) => o.op)).toEqual(["a", "c"]);
  });
});

describe("flag parsing", () => {
  it.each(["0/2", "3/2", "1", "a/b", "1/0"])("rejects --shard %s", (s) => {
    expect(() => parseShard(s)).toThrow(UserError);
  });
  it("parses --shard and --dtypes", () => {
    expect(parseShard("2/3")).toEqual({ index: 2, count: 3 });
    expect(parseDtypes("float32, int64")).toEqual(["float32", "int64"]);
    expect(() => parseDtypes("float33")).toThrow(/unknown dtype float33/);
  });
});

describe("--worker-memory", () => {
  it.each([
    ["4G", 4 * 2 ** 30],
    ["1.5g", 1.5 * 2 ** 30],
    ["2048M", 2 ** 31],
    ["2GiB", 2 ** 31],
    ["1T", 2 ** 40],
    ["off", null],
    ["OFF", null],
  ] as const)("%s", (given, want) => {
    expect(parseMemorySize(given)).toBe(want);
  });

  it.each([
    [
      "512M",
      "--worker-memory 512M: is less than the 1G a worker needs to import torch and OpInfo; write a size like 4G or 512M (at least 1G), or off",
    ],
    ["4", "--worker-memory 4: is not a size; write a size like 4G or 512M (at least 1G), or off"],
    ["lots", "--worker-memory lots: is not a size; write a size like 4G or 512M (at least 1G), or off"],
  ] as const)("refuses %s", (given, message) => {
    expect(() => parseMemorySize(given)).toThrow(message);
  });

  it("defaults to 3/4 of RAM shared among the workers, at least 1G each", () => {
    expect(defaultWorkerMemory(24 * 2 ** 30, 2)).toBe(9 * 2 ** 30);
    expect(defaultWorkerMemory(2 * 2 ** 30, 8)).toBe(2 ** 30);
  });
});
