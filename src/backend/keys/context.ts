/**
 * What every per-key reader of the backend YAML (src/backend/keys/*.ts)
 * shares: the file's positions (node -> file:line:col), one list of
 * diagnostics, the catalog the operator names resolve against, and the
 * scalar readers (a string, a PyYAML boolean) whose messages every key uses.
 * A reader takes this context and the key's node, returns the key's value
 * (defaulted when the key is absent or wrong) and records what is wrong here.
 */
import type { OperatorCatalog } from "../../model/types.js";
import type { Diagnostic, SourceLoc } from "../../util/errors.js";
import { positions } from "../../yaml/document.js";
import { isAlias, isMap, isScalar, isSeq } from "../../yaml/tree.js";
import { q } from "../names.js";

// PyYAML's bool resolver (yaml/resolver.py), which is what torchgen sees.
export const PYYAML_BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;

/** A scalar read from the YAML: absent (missing key or null), invalid (already reported), or a value. */
export type Read<T> =
  | { readonly kind: "absent" }
  | { readonly kind: "invalid" }
  | { readonly kind: "ok"; readonly value: T };

/** The top-level mapping, read once (load.ts): each key's value node (null when absent) and where the key is. */
export interface TopKeys {
  value(key: string): unknown;
  keyLoc(key: string): SourceLoc | undefined;
  /** Where the mapping starts (what a missing key's error points at). */
  readonly loc: SourceLoc;
}

/** Per-catalog indexes for resolving names; built once per catalog. */
export interface CatalogIndex {
  readonly names: readonly string[];
  /** base name (before the dot) -> full names with that base */
  readonly overloads: ReadonlyMap<string, readonly string[]>;
}

const indexCache = new WeakMap<OperatorCatalog, CatalogIndex>();

function catalogIndex(catalog: OperatorCatalog): CatalogIndex {
  let ix = indexCache.get(catalog);
  if (ix) return ix;
  const names = [...catalog.byName.keys()].sort();
  const overloads = new Map<string, string[]>();
  for (const n of names) {
    const dot = n.indexOf(".");
    const base = dot < 0 ? n : n.slice(0, dot);
    const l = overloads.get(base);
    if (l) l.push(n);
    else overloads.set(base, [n]);
  }
  ix = { names, overloads };
  indexCache.set(catalog, ix);
  return ix;
}

export function describe(node: unknown): string {
  if (node === null || node === undefined) return "nothing";
  if (isAlias(node)) return "an alias";
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) {
    const v = node.value;
    if (v === null) return "empty (null)";
    switch (typeof v) {
      case "string":
        return `the string ${q(v)}`;
      case "number":
      case "bigint":
        return `the number ${String(node.source ?? v)}`;
      case "boolean":
        if (node.source !== undefined && !PYYAML_BOOL.test(node.source)) return `the string ${q(node.source)}`;
        return `the boolean ${String(node.source ?? v)}`;
      default:
        return `${typeof v}`;
    }
  }
  return "a value of unknown kind";
}

/**
 * The string PyYAML would read from `node`, or null. The `yaml` package's 1.1
 * schema also reads `y`/`n` (any case) as booleans; PyYAML does not.
 */
export function pyyamlString(node: unknown): string | null {
  if (!isScalar(node)) return null;
  if (typeof node.value === "string") return node.value;
  if (typeof node.value === "boolean" && node.source !== undefined && !PYYAML_BOOL.test(node.source)) {
    return node.source;
  }
  return null;
}

export function isNullScalar(node: unknown): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

export class KeyContext {
  readonly diags: Diagnostic[] = [];
  /** offset -> line:col. */
  private readonly position: (offset: number) => { line: number; col: number };
  /** Built on first use (misspelt names): it enumerates the whole catalog (Note [Lazy catalog]). */
  get ix(): CatalogIndex {
    return catalogIndex(this.catalog);
  }

  constructor(
    readonly file: string,
    readonly text: string,
    readonly catalog: OperatorCatalog,
  ) {
    this.position = positions(text);
  }

  locAt(offset: number): SourceLoc {
    return { file: this.file, ...this.position(offset) };
  }

  locOf(node: unknown): SourceLoc {
    const offset = (node as { offset?: number } | null)?.offset;
    return this.locAt(offset ?? 0);
  }

  error(loc: SourceLoc, message: string): void {
    this.diags.push({ severity: "error", loc, message });
  }

  warn(loc: SourceLoc, message: string): void {
    this.diags.push({ severity: "warning", loc, message });
  }

  /** Whether a scalar is written in quotes (its value then starts one column later). */
  quoted(node: unknown): boolean {
    const at = (node as { offset?: unknown } | null)?.offset;
    return typeof at === "number" && (this.text[at] === '"' || this.text[at] === "'");
  }

  readString(key: string, node: unknown): Read<string> {
    if (isNullScalar(node)) return { kind: "absent" };
    if (isAlias(node)) return { kind: "invalid" };
    const s = pyyamlString(node);
    if (s !== null) return { kind: "ok", value: s };
    this.error(this.locOf(node), `${key} is ${describe(node)}; it must be a string`);
    return { kind: "invalid" };
  }

  readBool(key: string, node: unknown, dflt: boolean): boolean {
    if (node === null || node === undefined || isAlias(node)) return dflt;
    if (
      isScalar(node) &&
      typeof node.value === "boolean" &&
      (node.source === undefined || PYYAML_BOOL.test(node.source))
    ) {
      return node.value;
    }
    this.error(this.locOf(node), `${key} is ${describe(node)}; it must be true or false`);
    return dflt;
  }
}
