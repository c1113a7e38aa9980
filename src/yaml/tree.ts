/**
 * The YAML tree load.ts checks, whichever reader produced it: backend.ts for
 * the common plain shape, or the `yaml` package's Document for everything
 * else (converted in load.ts). Every node keeps the offset of its first
 * character so a diagnostic can say file:line:col.
 *
 * Having our own small tree (instead of the `yaml` package's node classes)
 * lets the fast path build it without loading that package at all (Note
 * [Cold start]).
 */

export interface YScalar {
  readonly kind: "scalar";
  /** As resolved by YAML 1.1 (string, boolean, number, null, ...). */
  readonly value: unknown;
  /** The text as written, for plain scalars (PyYAML resolves from it; see load.ts). */
  readonly source: string | undefined;
  readonly offset: number;
}
export interface YSeq {
  readonly kind: "seq";
  readonly items: readonly YNode[];
  readonly offset: number;
}
export interface YPair {
  readonly key: YNode;
  readonly value: YNode | null;
}
export interface YMap {
  readonly kind: "map";
  readonly items: readonly YPair[];
  readonly offset: number;
}
/** `*name`: always an error here (see load.ts), kept so checks can skip it. */
export interface YAlias {
  readonly kind: "alias";
  readonly offset: number;
}
export type YNode = YScalar | YSeq | YMap | YAlias;

const kindOf = (n: unknown): string | undefined =>
  typeof n === "object" && n !== null ? (n as { kind?: string }).kind : undefined;

export const isScalar = (n: unknown): n is YScalar => kindOf(n) === "scalar";
export const isSeq = (n: unknown): n is YSeq => kindOf(n) === "seq";
export const isMap = (n: unknown): n is YMap => kindOf(n) === "map";
export const isAlias = (n: unknown): n is YAlias => kindOf(n) === "alias";
