/**
 * Translates one installed torch (its packaged native_functions.yaml,
 * tags.yaml and, on demand, derivatives.yaml) into the OperatorCatalog every
 * other module reads: all operators including the autogen'd ones, lookup by
 * full name, torchgen's groups, tags.
 *
 * Loading is on `gen`'s hot path, so it reads the two small-enough files with
 * our own YAML reader (src/yaml/operators.ts), reads each native_functions.yaml entry
 * only when an operator of its group is first asked for (Note [Lazy catalog]
 * in lazy.ts: a cold `gen` of the core-ATen set parses ~1/5 of the file),
 * memoizes per YAML path, and leaves derivatives.yaml until
 * `catalog.derivatives` is first read. The model never writes anywhere.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { TorchInstall } from "../torch/discover.js";
import { parseDerivativesYaml } from "./derivatives.js";
import { LazyMap, LazyNativeFunctions } from "./lazy.js";
import { groupFunctions, isGroup, parseNativeFunctionsYaml } from "./native.js";
import { parseTagsYaml } from "./tags.js";
import type { DerivativeInfo, NativeFunction, NativeFunctionsGroup, OperatorCatalog, TagInfo } from "./types.js";

export { groupFunctions, groupNativeFunctions, isGroup, isViewOp } from "./native.js";
export * from "./schema.js";

/** The files a catalog is built from; TorchInstall satisfies it. */
export interface CatalogSources {
  readonly version: string;
  readonly nativeFunctionsYaml: string;
  readonly tagsYaml: string;
  readonly derivativesYaml: string;
}

const cache = new Map<string, Promise<OperatorCatalog>>();

/** The catalog of `install`'s torch; built once per native_functions.yaml path per process. */
export function loadCatalog(install: TorchInstall | CatalogSources): Promise<OperatorCatalog> {
  const key = install.nativeFunctionsYaml;
  let p = cache.get(key);
  if (!p) {
    p = (async () => {
      const [nf, tags] = await Promise.all([
        readFile(install.nativeFunctionsYaml, "utf8"),
        readFile(install.tagsYaml, "utf8"),
      ]);
      return buildCatalog(install, nf, tags);
    })();
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}

/**
 * Builds a catalog from file contents (tests, and callers that already hold
 * the text). Entries are parsed when first asked for (Note [Lazy catalog] in
 * lazy.ts); a file of unusual shape is read eagerly, reporting every problem.
 */
export function buildCatalog(src: CatalogSources, nativeFunctionsText: string, tagsText: string): OperatorCatalog {
  const tags = parseTagsYaml(tagsText, src.tagsYaml);
  const validTags = new Set(tags.map((t) => t.tag));
  const lazy = LazyNativeFunctions.of(nativeFunctionsText, src.nativeFunctionsYaml, validTags);
  if (!lazy) {
    const { functions, groups } = parseNativeFunctionsYaml(nativeFunctionsText, src.nativeFunctionsYaml, validTags);
    return assembleCatalog({ torchVersion: src.version, functions, groups, tags, derivatives: derivativesOf(src) });
  }
  return lazyCatalog(src, lazy, tags);
}

/** derivatives.yaml's formulas, read when first asked for. */
function derivativesOf(src: CatalogSources): () => ReadonlyMap<string, DerivativeInfo> {
  let read: ReadonlyMap<string, DerivativeInfo> | null = null;
  return () => {
    read ??= parseDerivativesYaml(readFileSync(src.derivativesYaml, "utf8"), src.derivativesYaml);
    return read;
  };
}

function lazyCatalog(src: CatalogSources, lazy: LazyNativeFunctions, tags: readonly TagInfo[]): OperatorCatalog {
  let functions: readonly NativeFunction[] | null = null;
  let groups: readonly (NativeFunctionsGroup | NativeFunction)[] | null = null;
  const derivatives = derivativesOf(src);
  let core: readonly string[] | null = null;
  return Object.freeze({
    torchVersion: src.version,
    get functions(): readonly NativeFunction[] {
      functions ??= Object.freeze([...lazy.all().functions]);
      return functions;
    },
    byName: new LazyMap<NativeFunction>(
      (k) => lazy.fn(k),
      () => lazy.all().byName,
    ),
    get groups(): readonly (NativeFunctionsGroup | NativeFunction)[] {
      groups ??= Object.freeze([...lazy.all().groups]);
      return groups;
    },
    groupOf: new LazyMap<NativeFunctionsGroup>(
      (k) => lazy.group(k),
      () => lazy.all().groupOf,
    ),
    tags: Object.freeze([...tags]),
    get derivatives(): ReadonlyMap<string, DerivativeInfo> {
      return derivatives();
    },
    hasBase: (base: string) => lazy.hasBase(base),
    coreNames: () => {
      core ??= Object.freeze(lazy.coreNames());
      return core;
    },
  });
}

/** What an eager catalog is assembled from: a file of unusual shape, or a test's edited copy of a torch's. */
export interface CatalogData {
  readonly torchVersion: string;
  readonly functions: readonly NativeFunction[];
  readonly groups: readonly (NativeFunctionsGroup | NativeFunction)[];
  readonly tags: readonly TagInfo[];
  /** Called when `derivatives` is first read. */
  readonly derivatives: () => ReadonlyMap<string, DerivativeInfo>;
}

/** A catalog over operators already built; `byName` and `groupOf` are derived from them. */
export function assembleCatalog(data: CatalogData): OperatorCatalog {
  const { functions, groups, tags, derivatives } = data;
  const byName = new Map<string, NativeFunction>();
  for (const f of functions) byName.set(f.name, f);
  const groupOf = new Map<string, NativeFunctionsGroup>();
  for (const g of groups) {
    if (!isGroup(g)) continue;
    for (const f of groupFunctions(g)) groupOf.set(f.name, g);
  }
  return Object.freeze({
    torchVersion: data.torchVersion,
    functions: Object.freeze([...functions]),
    byName,
    groups: Object.freeze([...groups]),
    groupOf,
    tags: Object.freeze([...tags]),
    get derivatives(): ReadonlyMap<string, DerivativeInfo> {
      return derivatives();
    },
    coreNames: () => functions.flatMap((f) => (f.tags.includes("core") ? [f.name] : [])),
    hasBase: (base: string) => functions.some((f) => f.name === base || f.name.startsWith(`${base}.`)),
  });
}

/** The overloads tagged `core`, in file order. */
export function coreOverloads(catalog: OperatorCatalog): NativeFunction[] {
  return catalog.coreNames().map((n) => catalog.byName.get(n)!);
}
