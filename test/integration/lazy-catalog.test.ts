/**
 * The lazy catalog (src/model/lazy.ts, Note [Lazy catalog]) against the eager
 * reader: whatever was asked for first, the whole-file views come out equal,
 * in the same order, made of the same objects the point lookups returned.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { buildCatalog } from "../../src/model/catalog.js";
import { LazyNativeFunctions } from "../../src/model/lazy.js";
import { parseNativeFunctionsYaml } from "../../src/model/native.js";
import { parseTagsYaml } from "../../src/model/tags.js";
import type { NativeFunction, OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch, type TorchInstall } from "../../src/torch/discover.js";
import { UserError } from "../../src/util/errors.js";

let torch: TorchInstall;
let nf: string;
let tags: string;

beforeAll(async () => {
  torch = await discoverTorch(process.env.OPGEN_PYTHON);
  nf = readFileSync(torch.nativeFunctionsYaml, "utf8");
  tags = readFileSync(torch.tagsYaml, "utf8");
});

function eager() {
  const validTags = new Set(parseTagsYaml(tags, torch.tagsYaml).map((t) => t.tag));
  return parseNativeFunctionsYaml(nf, torch.nativeFunctionsYaml, validTags);
}

function expectSameAsEager(c: OperatorCatalog): void {
  const e = eager();
  expect(c.functions).toEqual(e.functions);
  expect(c.groups).toEqual(e.groups);
  expect([...c.byName.keys()]).toEqual(e.functions.map((f) => f.name));
  expect(c.byName.size).toBe(c.functions.length);
  // One object per operator, whichever view found it first.
  for (const f of c.functions) expect(c.byName.get(f.name)).toBe(f);
  for (const g of c.groups) {
    if ("func" in g) continue;
    for (const f of [g.functional, g.inplace, g.mutable, g.out]) {
      if (f) {
        expect(c.groupOf.get(f.name)).toBe(g);
        expect(c.byName.get(f.name)).toBe(f);
      }
    }
  }
}

describe("lazy catalog", () => {
  it.each<[string, (c: OperatorCatalog) => void]>([
    ["nothing asked first", () => {}],
    [
      "a few operators and groups first (incl. generated ones)",
      (c) => {
        for (const n of [
          "add.Tensor",
          "add_.Tensor",
          "relu",
          "_cudnn_rnn_backward.out",
          "_native_batch_norm_legit_functional",
        ]) {
          expect(c.byName.get(n)?.name).toBe(n);
        }
        expect(c.groupOf.get("add.out")?.functional.name).toBe("add.Tensor");
        expect(c.byName.get("no_such_op.Tensor")).toBeUndefined();
        expect(c.byName.has("add")).toBe(false);
        expect(c.groupOf.get("relu")?.out.name).toBe("relu.out");
      },
    ],
    [
      "every operator one at a time",
      (c) => {
        for (const f of eager().functions) expect(c.byName.get(f.name)?.name).toBe(f.name);
      },
    ],
  ])("%s: equals the eager reader", (_name, touch) => {
    const c = buildCatalog(torch, nf, tags);
    touch(c);
    expectSameAsEager(c);
  });

  it("point lookups keep the catalog lazy", () => {
    const validTags = new Set(parseTagsYaml(tags, torch.tagsYaml).map((t) => t.tag));
    const lazy = LazyNativeFunctions.of(nf, torch.nativeFunctionsYaml, validTags)!;
    expect(lazy.fn("no_such_op")).toBeUndefined();
    expect(lazy.isWhole).toBe(false);
    expect(lazy.fn("add.out")?.name).toBe("add.out");
    expect(lazy.group("add_.Tensor")?.functional.name).toBe("add.Tensor");
    expect(lazy.isWhole).toBe(false);
    const e = eager();
    expect(lazy.fn("relu")).toEqual(e.functions.find((f) => f.name === "relu"));
  });

  it("Note [Core without the whole catalog]: the core overloads from the tags: lines, equal to the eager reader's, still lazy", () => {
    const validTags = new Set(parseTagsYaml(tags, torch.tagsYaml).map((t) => t.tag));
    const lazy = LazyNativeFunctions.of(nf, torch.nativeFunctionsYaml, validTags)!;
    const core = lazy.coreNames();
    expect(lazy.isWhole).toBe(false);
    expect(core).toEqual(eager().functions.flatMap((f) => (f.tags.includes("core") ? [f.name] : [])));
    expect(core.length).toBeGreaterThan(150);
    // A tags: value of another shape: the whole file is read instead, with the same answer.
    const odd = nf.replace("  tags: [core, pointwise]", "  tags:\n  - core\n  - pointwise");
    expect(odd).not.toBe(nf);
    const other = LazyNativeFunctions.of(odd, torch.nativeFunctionsYaml, validTags)!;
    expect(other.coreNames()).toEqual(core);
    expect(other.isWhole).toBe(true);
  });

  it("reports a bad entry when its operator is first asked for, with file:line:col", () => {
    const text = "- func: good(Tensor self) -> Tensor\n\n- func: bad(Tensor self) -> Tensor\n  tags: no_such_tag\n";
    const c = buildCatalog({ ...torch, nativeFunctionsYaml: "nf.yaml" }, text, tags);
    expect(c.byName.get("good")?.name).toBe("good");
    const err = (() => {
      try {
        c.byName.get("bad");
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).diagnostics.map((d) => `${d.loc?.file}:${d.loc?.line}`)).toEqual(["nf.yaml:4"]);
  });

  it("reads a file of another shape eagerly (every problem at once)", () => {
    const text =
      "# leading comment\n- func: a(Tensor self) -> Tensor  # trailing comment\n- variants: function\n  func: b(Tensor self) -> Tensor\n";
    const c = buildCatalog({ ...torch, nativeFunctionsYaml: "nf.yaml" }, text, tags);
    expect(c.functions.map((f: NativeFunction) => f.name)).toEqual(["a", "b"]);
    const bad =
      "- func: a(Tensor self) -> Tensor  # c\n  tags: nope\n- func: b(Tensor self) -> Tensor\n  tags: nope2\n";
    let err: unknown = null;
    try {
      buildCatalog({ ...torch, nativeFunctionsYaml: "nf.yaml" }, bad, tags);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).diagnostics.map((d) => d.loc?.line)).toEqual([2, 4]);
  });
});
