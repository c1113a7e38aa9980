/**
 * The full-syntax reader: the `yaml` package's Document API under YAML 1.1
 * scalar rules (PyYAML's, as everywhere in src/yaml), its nodes converted to
 * src/yaml/tree.ts's, each keeping its offset. Used where the line readers do
 * not apply: a backend YAML of unusual shape (src/backend/load.ts) and the
 * expectations file (src/conformance/expectations.ts). The package is loaded
 * on the first call only (Note [Cold start]); synchronously, through require,
 * since its callers are synchronous.
 */
import { createRequire } from "node:module";
import type * as Yaml from "yaml";
import type { YNode } from "./tree.js";

/** A problem the package found: where, and the first line of its message. */
export interface YamlProblem {
  readonly offset: number;
  readonly message: string;
}

/** `&name` and the offsets of the aliases (`*name`) that use it. */
export interface YamlAnchor {
  readonly name: string;
  readonly offset: number;
  readonly uses: readonly number[];
}

export interface ParsedDocument {
  /** The tree; null when empty or when there are errors. */
  readonly root: YNode | null;
  readonly errors: readonly YamlProblem[];
  readonly warnings: readonly YamlProblem[];
  /** Anchors in document order, and aliases whose anchor comes later or never. */
  readonly anchors: readonly YamlAnchor[];
  readonly strayAliases: readonly number[];
}

export interface DocumentOptions {
  /** Report a repeated key as an error (false: the caller reports them). */
  readonly uniqueKeys: boolean;
}

let yamlModule: typeof Yaml | undefined;
export function yamlPackage(): typeof Yaml {
  yamlModule ??= createRequire(import.meta.url)("yaml") as typeof Yaml;
  return yamlModule;
}

export function parseDocument(text: string, options: DocumentOptions): ParsedDocument {
  const Y = yamlPackage();
  const doc = Y.parseDocument(text, {
    version: "1.1",
    uniqueKeys: options.uniqueKeys,
    merge: false,
    prettyErrors: false,
  });
  const problem = (e: Yaml.YAMLError): YamlProblem => ({
    offset: e.pos[0],
    message: e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, ""),
  });
  const anchors = new Map<string, { offset: number; uses: number[] }>();
  const strayAliases: number[] = [];
  const at = (node: unknown): number => (node as { range?: [number] }).range?.[0] ?? 0;
  // A broken document's tree is not walked (callers report its errors only).
  const broken = doc.errors.length > 0;
  if (!broken) {
    Y.visit(doc, (_key, node) => {
      if (node === null || Y.isPair(node)) return;
      if (Y.isAlias(node)) {
        const a = anchors.get(node.source);
        if (a) a.uses.push(at(node));
        else strayAliases.push(at(node));
        return;
      }
      const anchor = (node as { anchor?: string }).anchor;
      if (anchor && !anchors.has(anchor)) anchors.set(anchor, { offset: at(node), uses: [] });
    });
  }
  return {
    root: broken ? null : toTree(Y, doc.contents),
    errors: doc.errors.map(problem),
    warnings: doc.warnings.map(problem),
    anchors: [...anchors].map(([name, a]) => ({ name, offset: a.offset, uses: a.uses })),
    strayAliases,
  };
}

/** 1-based line and column of each offset of `text`. */
export function positions(text: string): (offset: number) => { line: number; col: number } {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return (offset) => {
    // The last line start at or before offset.
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, col: offset - starts[lo]! + 1 };
  };
}

function toTree(Y: typeof Yaml, node: unknown): YNode | null {
  if (node === null || node === undefined) return null;
  const offset = (node as { range?: [number] }).range?.[0] ?? 0;
  if (Y.isScalar(node)) return { kind: "scalar", value: node.value, source: node.source, offset };
  if (Y.isAlias(node)) return { kind: "alias", offset };
  if (Y.isSeq(node)) {
    return { kind: "seq", items: node.items.map((n) => toTree(Y, n) ?? nullScalar(offset)), offset };
  }
  if (Y.isMap(node)) {
    const items = node.items.map((p) => ({ key: toTree(Y, p.key) ?? nullScalar(offset), value: toTree(Y, p.value) }));
    return { kind: "map", items, offset };
  }
  throw new Error(`unexpected YAML node: ${String(node)}`);
}

function nullScalar(offset: number): YNode {
  return { kind: "scalar", value: null, source: "", offset };
}
