/**
 * The operator lists (`supported:`, `autograd:`, `symint:`, `full_codegen:`,
 * `ir_gen:`, `runtime:`): each entry's name resolved against the catalog
 * (with a suggestion when it is not an operator), duplicates dropped, and the
 * rules across lists (torchgen's group split, SymInt entries, runtime
 * overloads served once).
 */
import { hasSymInt } from "../../model/schema.js";
import type { NativeFunction, NativeFunctionsGroup } from "../../model/types.js";
import type { SourceLoc } from "../../util/errors.js";
import type { YMap } from "../../yaml/tree.js";
import { isAlias, isMap, isSeq } from "../../yaml/tree.js";
import { q } from "../names.js";
import { didYouMean } from "../suggest.js";
import type { OpEntry } from "../types.js";
import { readAutogradMapping } from "./backward.js";
import { describe, isNullScalar, type KeyContext, pyyamlString, type TopKeys } from "./context.js";

export type OpListKey = "supported" | "autograd" | "symint" | "full_codegen" | "ir_gen" | "runtime";

/** An op list entry as written, resolved or not. */
interface RawEntry {
  readonly name: string;
  readonly loc: SourceLoc;
  readonly fn: NativeFunction | null;
}

/** An `autograd:` entry written as a mapping: the backward it names (backward.ts). */
export interface AutogradMapping {
  readonly backward: string | null;
  readonly backwardLoc: SourceLoc | null;
  readonly formulaNode: YMap | null;
}

export interface OpLists {
  readonly supported: OpEntry[];
  readonly autograd: OpEntry[];
  readonly symint: OpEntry[];
  readonly fullCodegen: OpEntry[];
  readonly irGen: OpEntry[];
  readonly runtime: OpEntry[];
  /** `autograd:` entries written as mappings, by op name. */
  readonly autogradMappings: ReadonlyMap<string, AutogradMapping>;
}

/** Every list, then the rules across lists. */
export function readOpLists(cx: KeyContext, top: TopKeys): OpLists {
  const autogradMappings = new Map<string, AutogradMapping>();
  const supportedRaw = readOpList(cx, "supported", top.value("supported"));
  const autogradRaw = readOpList(cx, "autograd", top.value("autograd"), autogradMappings);
  const symintRaw = readOpList(cx, "symint", top.value("symint"));
  const fullCodegenRaw = readOpList(cx, "full_codegen", top.value("full_codegen"));
  const irGenRaw = readOpList(cx, "ir_gen", top.value("ir_gen"));
  const runtimeRaw = readOpList(cx, "runtime", top.value("runtime"));

  const supported = dedup(cx, "supported", supportedRaw);
  const autograd = dedup(cx, "autograd", autogradRaw);
  const symint = dedup(cx, "symint", symintRaw);
  const fullCodegen = dedup(cx, "full_codegen", fullCodegenRaw);
  const irGen = dedup(cx, "ir_gen", irGenRaw);
  const runtime = dedup(cx, "runtime", runtimeRaw);

  // torchgen's gen_backend_stubs appends full_codegen to supported, so for
  // every rule below the two are one list.
  const forward = new Map<string, OpEntry>();
  for (const e of supported) forward.set(e.name, e);
  for (const e of fullCodegen) {
    const s = forward.get(e.name);
    if (s) {
      cx.warn(
        e.loc,
        `${e.name} is listed in both supported (line ${s.loc.line}) and full_codegen (line ${e.loc.line}); list it once`,
      );
    } else forward.set(e.name, e);
  }
  checkGroupSplit(cx, forward, autograd);
  checkSymint(cx, symint, forward, autograd);
  checkRuntime(cx, runtime, forward, autograd);
  return { supported, autograd, symint, fullCodegen, irGen, runtime, autogradMappings };
}

function readOpList(
  cx: KeyContext,
  key: OpListKey,
  node: unknown,
  mappings: Map<string, AutogradMapping> | null = null,
): RawEntry[] {
  // torchgen lets `supported:` and `symint:` be empty (null); we allow it for every list.
  if (isNullScalar(node) || isAlias(node)) return [];
  if (!isSeq(node)) {
    cx.error(cx.locOf(node), `${key} is ${describe(node)}; it must be a list of operator names like add.Tensor`);
    return [];
  }
  // Names first (bad entries reported here), then the catalog lookups (unknown names reported after them).
  const named: { name: string; loc: SourceLoc }[] = [];
  for (const item of node.items) {
    if (isAlias(item)) continue;
    const loc = cx.locOf(item);
    if (key === "autograd" && isMap(item)) {
      const m = readAutogradMapping(cx, item);
      if (m) {
        // A name listed twice keeps its first entry (dedup warns about the second), mapping included.
        if (!named.some((n) => n.name === m.name))
          mappings?.set(m.name, {
            backward: m.backward,
            backwardLoc: m.backwardLoc,
            formulaNode: m.formulaNode,
          });
        named.push({ name: m.name, loc: m.loc });
      }
      continue;
    }
    const name = pyyamlString(item);
    if (name === null) {
      const example = isMap(item) ? " (a `key: value` line where an op name was expected?)" : "";
      cx.error(
        loc,
        `${key} entry is ${describe(item)}${example}; entries are operator names as strings, like add.Tensor`,
      );
      continue;
    }
    named.push({ name, loc });
  }
  return named.map(({ name, loc }) => ({ name, loc, fn: resolveOp(cx, key, name, loc) }));
}

function resolveOp(cx: KeyContext, key: string, name: string, loc: SourceLoc): NativeFunction | null {
  const fn = cx.catalog.byName.get(name);
  if (fn) return fn;
  const v = cx.catalog.torchVersion;
  const rule = "operators are written name.overload as in native_functions.yaml";
  if (name.startsWith("aten::")) {
    const bare = name.slice("aten::".length);
    const hint = cx.catalog.byName.has(bare) ? `write ${q(bare)}` : rule;
    cx.error(loc, `${key} entry ${q(name)} has a namespace prefix; ${hint} (no aten::)`);
    return null;
  }
  const dot = name.indexOf(".");
  const base = dot < 0 ? name : name.slice(0, dot);
  const overloads = cx.ix.overloads.get(base);
  if (dot < 0 && overloads) {
    // torchgen matches exact OperatorName strings: `add` names the overload
    // with an empty name, which `add` does not have.
    const shown = overloads.slice(0, 8).join(", ") + (overloads.length > 8 ? `, ... (${overloads.length} in all)` : "");
    cx.error(
      loc,
      `${key} entry ${q(name)} is not an operator: it has only named overloads; list each you implement: ${shown}`,
    );
    return null;
  }
  if (dot >= 0 && name.slice(dot + 1) === "default" && cx.catalog.byName.has(base)) {
    cx.error(
      loc,
      `${key} entry ${q(name)} is not an operator; the overload Python calls .default is written ${q(base)}`,
    );
    return null;
  }
  if (dot >= 0 && overloads) {
    // The base name is right: offer its overloads, not look-alike names.
    const close = didYouMean(name, overloads);
    const hint = close || `; ${base} has: ${overloads.slice(0, 8).join(", ")}${overloads.length > 8 ? ", ..." : ""}`;
    cx.error(loc, `${key} entry ${q(name)} is not an operator of torch ${v}${hint}`);
    return null;
  }
  const hint = didYouMean(name, cx.ix.names);
  cx.error(loc, `${key} entry ${q(name)} is not an operator of torch ${v}${hint}${hint ? " " : "; "}(${rule})`);
  return null;
}

/** Drops unresolved entries and later duplicates (a warning naming both lines). */
function dedup(cx: KeyContext, key: OpListKey, raw: readonly RawEntry[]): OpEntry[] {
  const seen = new Map<string, OpEntry>();
  const out: OpEntry[] = [];
  for (const r of raw) {
    if (r.fn === null) continue;
    const prev = seen.get(r.name);
    if (prev) {
      cx.warn(
        r.loc,
        `${r.name} is listed twice in ${key} (lines ${prev.loc.line} and ${r.loc.line}); the second entry is ignored`,
      );
      continue;
    }
    const e: OpEntry = { name: r.name, loc: r.loc, fn: r.fn };
    seen.set(r.name, e);
    out.push(e);
  }
  return out;
}

/**
 * Note [Runtime operators]: `runtime:` lists the overloads the project's
 * runtime registers by hand (the minimal set a device needs before any
 * kernel: empty, views, copies, resize_, set_, _local_scalar_dense). gen
 * registers nothing for them and derives nothing from or into them, but the
 * manifest lists them (served_by: runtime), so `coverage` counts them and
 * `opgen-backend test` tests them. An overload is served once: by the
 * runtime, or by a kernel listed under supported/autograd.
 */
function checkRuntime(
  cx: KeyContext,
  runtime: readonly OpEntry[],
  forward: ReadonlyMap<string, OpEntry>,
  autograd: readonly OpEntry[],
): void {
  const autogradByName = new Map(autograd.map((e) => [e.name, e]));
  for (const r of runtime) {
    const clash = forward.get(r.name) ?? autogradByName.get(r.name);
    if (!clash) continue;
    const where = forward.has(r.name) ? "supported" : "autograd";
    cx.error(
      r.loc,
      `${r.name} is listed under runtime (the runtime registers it) and under ${where} (line ${clash.loc.line}); ` +
        `an overload has one kernel: keep it in one list`,
    );
  }
}

/**
 * torchgen (parse_backend_yaml): "all variants of an op must either be
 * registered to a backend key, or to a backend's autograd key". A group is
 * functional/inplace/mutable/out sharing one signature; an ungrouped op is
 * its own group, so one op in both lists is the same mistake.
 */
function checkGroupSplit(cx: KeyContext, forward: ReadonlyMap<string, OpEntry>, autograd: readonly OpEntry[]): void {
  const reported = new Set<unknown>();
  for (const a of autograd) {
    const g = cx.catalog.groupOf.get(a.name);
    const members = g ? groupMembers(g).map((f) => f.name) : [a.name];
    const clash = members.map((m) => forward.get(m)).find((e) => e !== undefined);
    if (!clash) continue;
    const groupId = g ?? a.name;
    if (reported.has(groupId)) continue;
    reported.add(groupId);
    const what = clash.name === a.name ? `${a.name} is also listed` : `${clash.name}, in the same op group,`;
    cx.error(
      a.loc,
      `${a.name} is listed under autograd but ${what} under supported (line ${clash.loc.line}); ` +
        `all variants of an op (${members.join(", ")}) must be in supported or all in autograd`,
    );
  }
}

function checkSymint(
  cx: KeyContext,
  symint: readonly OpEntry[],
  forward: ReadonlyMap<string, OpEntry>,
  autograd: readonly OpEntry[],
): void {
  const autogradNames = new Set(autograd.map((e) => e.name));
  for (const s of symint) {
    if (!hasSymInt(s.fn.func)) {
      cx.error(
        s.loc,
        `symint entry ${s.name} has no SymInt argument, so it has no SymInt kernel; list only ops whose schema takes SymInt`,
      );
      continue;
    }
    if (!forward.has(s.name) && !autogradNames.has(s.name)) {
      cx.warn(
        s.loc,
        `symint entry ${s.name} is not listed in supported, autograd or full_codegen, so it has no effect`,
      );
    }
  }
}

function groupMembers(g: NativeFunctionsGroup): NativeFunction[] {
  return [g.functional, g.inplace, g.mutable, g.out].filter((f): f is NativeFunction => f !== null);
}
