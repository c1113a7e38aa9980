/**
 * `opgen-backend upgrade`: what moving a project to another torch changes for
 * this backend, before anything fails to compile (issue 15). Report only:
 * nothing here writes.
 *
 * Note [Upgrade comparison]: the project's op_manifest.json records, for every
 * overload gen registered, the schema, kind, tags and kernel of the torch it
 * was generated against. We rebuild the plan for backend.yaml against the
 * target torch's catalog (the same buildPlan gen runs, so what we predict is
 * what gen will emit) and compare it with the manifest, overload by overload:
 *
 * - signature: the kernel's C++ declaration under the old schema (the
 *   manifest's, through the same kernelSignature) differs from the new plan's
 *   KernelDecl; the kernel definitions the signature-aware scanner
 *   (src/impl/kernels.ts) finds under the project's sources that do not match
 *   the new declaration are named with file:line. A schema change that leaves
 *   what a definition must match alone (`int[]` -> `SymInt[]` for an
 *   overload not in `symint:`, a renamed argument) is reported as a schema
 *   change, not as a break.
 * - removed: the target has no overload of that name; one with the same base
 *   name and the same arguments and returns is reported as the rename, else
 *   did-you-mean candidates (src/backend/suggest.ts). backend.yaml itself would
 *   no longer load, so its entries for these are dropped before planning (the
 *   errors are kept in the report with their file:line).
 * - dispatch: the overload became (or stopped being) CompositeImplicitAutograd
 *   or CompositeExplicitAutograd. The manifest does not record dispatch
 *   tables, so this needs the baseline catalog (the torch the manifest was
 *   generated against: an installed one, or its YAMLs read from its wheel on
 *   PyPI, Note [Schemas from a wheel]); without one, listed overloads that
 *   are CompositeImplicitAutograd in the target are noted, not judged.
 * - tags: tags added or removed (`core` among them).
 *
 * And for the whole torch: core-ATen counts before (manifest core_total) and
 * after, the core overloads the target adds or drops that the backend does
 * not cover (by name: needs the baseline), and out=/inplace siblings that the
 * new plan derives and the manifest does not list (and the reverse).
 *
 * And the private PyTorch Python APIs the project's package relies on
 * (Inductor, Dynamo and c10d registration: src/upgrade/python-api.ts, Note
 * [Python API drift]), compared by the caller and carried in the report; a
 * break or a missing definition needs action.
 *
 * The catalog is injected (compareUpgrade takes it), so tests feed a catalog
 * edited in memory through exactly the path a second torch takes.
 */
import { printCType } from "../api/ctype.js";
import { kernelSignature } from "../api/dispatcher.js";
import { parseBackendYaml } from "../backend/load.js";
import { suggest } from "../backend/suggest.js";
import type { BackendConfig } from "../backend/types.js";
import type { Manifest, ManifestOperator } from "../dest/manifest.js";
import { buildPlan, type KernelDecl } from "../dest/plan.js";
import { findDefinitions, normalizedParams, normalizeParam } from "../impl/kernels.js";
import { parseSchema, printArguments, printReturns, printSchema, schemaKind } from "../model/schema.js";
import type { NativeFunction, OperatorCatalog } from "../model/types.js";
import { type Diagnostic, formatLoc, type SourceLoc, UserError } from "../util/errors.js";
import { cmp } from "../vocab.js";
import { type PythonApiReport, pythonApiBreaks } from "./python-api.js";

export type Change =
  | {
      readonly kind: "signature";
      readonly oldDeclaration: string;
      readonly newDeclaration: string;
      readonly oldSchema: string;
      readonly newSchema: string;
      /** Kernel definitions that do not match the new declaration (will stop compiling or linking). */
      readonly breaks: readonly { readonly loc: SourceLoc; readonly definition: string }[];
    }
  | { readonly kind: "schema"; readonly oldSchema: string; readonly newSchema: string }
  | { readonly kind: "removed"; readonly renamedTo: string | null; readonly suggestions: readonly string[] }
  | { readonly kind: "dispatch"; readonly was: string; readonly now: string; readonly effect: string }
  | { readonly kind: "tags"; readonly added: readonly string[]; readonly removed: readonly string[] };

export interface OverloadReport {
  readonly op: string;
  /** The manifest's served_by: kernel, autograd or runtime. */
  readonly servedBy: string;
  /** Where backend.yaml lists it (from the target's parse; null for removed overloads without a diagnostic). */
  readonly loc: SourceLoc | null;
  /** Empty: unchanged. */
  readonly changes: readonly Change[];
}

export interface UpgradeReport {
  readonly fromTorch: string;
  readonly toTorch: string;
  /** The version of the baseline catalog used for dispatch/core comparisons, or null. */
  readonly baseline: string | null;
  readonly overloads: readonly OverloadReport[];
  /**
   * backend.yaml errors against the target that no removed overload explains
   * (entries dropped to plan the rest; e.g. a symint: entry that lost its SymInt).
   */
  readonly yamlErrors: readonly Diagnostic[];
  readonly core: {
    /** The manifest's core_total (a manifest from an older gen has none: the baseline's count, else null). */
    readonly before: number | null;
    readonly after: number;
    /** Core overloads new in the target that the backend does not serve (null: no baseline to tell). */
    readonly addedUncovered: readonly string[] | null;
    /** Core overloads the target no longer tags core (or lacks) that the backend did not serve (null: no baseline). */
    readonly removedUncovered: readonly string[] | null;
  };
  readonly derived: { readonly added: readonly string[]; readonly removed: readonly string[] };
  /** Without a baseline: listed overloads that are CompositeImplicitAutograd in the target. */
  readonly compositeInTarget: readonly string[];
  readonly summary: {
    readonly unchanged: number;
    readonly signature: number;
    readonly schema: number;
    readonly removed: number;
    readonly dispatch: number;
    readonly tags: number;
  };
  /** The private Python APIs' drift (null: not compared, as when compareUpgrade's caller gives none). */
  readonly pythonApi: PythonApiReport | null;
  /** Whether the upgrade needs anything beyond this report (exit 1). */
  readonly actionNeeded: boolean;
}

export interface UpgradeInputs {
  readonly manifest: Manifest;
  /** backend.yaml's text and path (the path for diagnostics). */
  readonly yamlText: string;
  readonly yamlFile: string;
  /** The target torch's catalog. */
  readonly target: OperatorCatalog;
  /** The catalog of the torch the manifest was generated against, when available. */
  readonly baseline?: OperatorCatalog | null;
  /** The project's kernel sources (files), scanned for definitions that break. */
  readonly kernelSources?: readonly string[];
  /** The private Python APIs' drift between the baseline and the target (comparePythonApi). */
  readonly pythonApi?: PythonApiReport | null;
}

const stripBuild = (v: string) => v.replace(/\+.*$/, "");

/** A release version's numbers, or null for a version we cannot read. */
function versionTuple(v: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/**
 * Refuses a target torch the upgrade cannot be judged against: a nightly or
 * other development build (its operator set is not a release's), or one older
 * than the project's pin (that is a downgrade). Throws UserError (one line).
 */
export function checkTargetVersion(pin: string, target: string): void {
  if (/\.dev|\+git|a\d|b\d/.test(target)) {
    throw new UserError(
      `torch ${target} is a nightly or pre-release build; upgrade compares against a torch release (install one, or pass --python)`,
    );
  }
  const p = versionTuple(pin);
  const t = versionTuple(target);
  if (!t) throw new UserError(`cannot read torch version ${JSON.stringify(target)}`);
  if (p && (t[0] - p[0] || t[1] - p[1] || t[2] - p[2]) < 0) {
    throw new UserError(
      `torch ${stripBuild(target)} is older than the project's pin ${pin}; upgrade moves to a newer torch`,
    );
  }
}

/**
 * backend.yaml parsed against the target; entries the target rejects (an
 * overload it removed, a `symint:` entry that lost its SymInt) are dropped
 * (dropEntry) and returned as errors. Anything else that does not load is
 * thrown as is.
 */
function loadAgainst(
  text: string,
  file: string,
  catalog: OperatorCatalog,
): { config: BackendConfig; errors: Diagnostic[] } {
  const errors: Diagnostic[] = [];
  let lines = text.split("\n");
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      return { config: parseBackendYaml(lines.join("\n"), file, catalog), errors };
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      const errs = e.diagnostics.filter((d) => d.severity === "error");
      if (errs.length === 0 || !errs.every((d) => d.loc)) throw e;
      const next = [...lines];
      for (const d of [...errs].sort((a, b) => b.loc!.col - a.loc!.col)) {
        const dropped = dropEntry(next[d.loc!.line - 1] ?? "", d.loc!.col);
        if (dropped === null) throw e;
        next[d.loc!.line - 1] = dropped;
        errors.push(d);
      }
      lines = next;
    }
  }
  throw new UserError(`${file}: does not load against torch ${catalog.torchVersion}`);
}

/**
 * `line` without the list entry that starts at `col` (1-based): a block entry
 * (`  - name`) becomes an empty line; a flow entry (`[a, name, b]`) and its
 * comma become spaces, so other entries keep their columns. Null: not a list
 * entry we can drop.
 */
export function dropEntry(line: string, col: number): string | null {
  if (/^\s*-\s+\S+\s*(#.*)?$/.test(line)) return "";
  const i = col - 1;
  const before = line.slice(0, i);
  const end = line.slice(i).search(/[,\]]/);
  const inFlow = before.includes("[") || before.trim() === "" || before.trimEnd().endsWith(",");
  if (i < 0 || end <= 0 || !inFlow || line.slice(i, i + end).includes(":")) return null;
  const j = i + end;
  const blank = (a: number, b: number) => line.slice(0, a) + " ".repeat(b - a) + line.slice(b);
  if (line[j] === ",") return blank(i, j + 1);
  const comma = before.trimEnd().endsWith(",") ? before.trimEnd().length - 1 : -1;
  return comma >= 0 ? blank(comma, j) : blank(i, j);
}

const mentions = (d: Diagnostic, name: string) => d.message.includes(`"${name}"`) || d.message.includes(` ${name} `);

function sameSchema(a: string, b: string): boolean {
  return a === b || printSchema(parseSchema(a)) === printSchema(parseSchema(b));
}

/** Dispatch semantics of an overload, in words, as far as the upgrade cares. */
function dispatchOf(f: NativeFunction): string {
  if (f.hasCompositeImplicitAutogradKernel) return "CompositeImplicitAutograd";
  if (f.hasCompositeExplicitAutogradKernel) return "CompositeExplicitAutograd";
  return "backend kernels";
}

function dispatchEffect(was: string, now: string): string {
  if (now === "CompositeImplicitAutograd") {
    return "the overload now decomposes above the backend (at the Autograd key): the kernel is bypassed; drop it or list what it decomposes into";
  }
  if (was === "CompositeImplicitAutograd") {
    return "the overload no longer decomposes: without the kernel it falls back; keep the kernel (and its autograd)";
  }
  return `dispatch changed from ${was} to ${now}; the backend kernel still takes precedence on the device`;
}

function renameOf(old: ManifestOperator, target: OperatorCatalog): string | null {
  const s = parseSchema(old.schema);
  const base = old.name.split(".")[0]!;
  const args = printArguments(s.arguments);
  const rets = printReturns(s.returns);
  for (const [name, f] of target.byName) {
    if (name.split(".")[0] !== base || name === old.name) continue;
    if (printArguments(f.func.arguments) === args && printReturns(f.func.returns) === rets) return name;
  }
  return null;
}

/**
 * Where a removed overload may have gone: overloads of the same kind whose
 * base name contains the old one as a word (`qr` -> `linalg_qr`), shortest
 * first, else the closest names by edit distance.
 */
function successors(m: ManifestOperator, target: OperatorCatalog, names: readonly string[]): string[] {
  const base = m.name.split(".")[0]!;
  const word = new RegExp(`(^|_)${base.replace(/[^\w]/g, "")}(_|$)`);
  const within = names
    .filter((n) => n !== m.name && word.test(n.split(".")[0]!) && schemaKind(target.byName.get(n)!.func) === m.kind)
    .sort((a, b) => a.length - b.length || cmp(a, b));
  return within.length > 0 ? within.slice(0, 3) : suggest(m.name, names, 3);
}

function oldKernelSignature(m: ManifestOperator, like: NativeFunction) {
  const f: NativeFunction = { ...like, func: parseSchema(m.schema), funcText: m.schema };
  return kernelSignature(f, m.symint);
}

/** What a definition must match (Note [Finding definitions]): name, parameter types, return type; not parameter names. */
function cppSignature(sig: ReturnType<typeof kernelSignature>): string {
  return `${normalizeParam(printCType(sig.returns))} ${sig.name}(${normalizedParams(sig).join(", ")})`;
}

/** As the generated header declares it (KernelDecl.declaration): `static` for a class member (Note [Kernel home]). */
function declOf(sig: ReturnType<typeof kernelSignature>, config: BackendConfig): string {
  return `${config.kernelHome.kind === "class" ? "static " : ""}${sig.decl()};`;
}

const LISTED = new Set(["kernel", "autograd", "runtime"]);

export function compareUpgrade(inp: UpgradeInputs): UpgradeReport {
  const { manifest, target } = inp;
  const baseline =
    inp.baseline && stripBuild(inp.baseline.torchVersion) === manifest.torch_version ? inp.baseline : null;
  const { config, errors: yamlErrors } = loadAgainst(inp.yamlText, inp.yamlFile, target);
  const plan = buildPlan(config, target);
  const kernels = new Map<string, KernelDecl>();
  for (const k of [...plan.backend.kernels, ...(plan.autograd?.kernels ?? [])]) kernels.set(k.entry.name, k);
  const locs = new Map<string, SourceLoc>();
  for (const e of [...config.supported, ...config.autograd, ...config.fullCodegen, ...config.runtime]) {
    if (!locs.has(e.name)) locs.set(e.name, e.loc);
  }
  const defs = inp.kernelSources?.length ? findDefinitions(inp.kernelSources, config).definitions : [];
  const names = [...target.byName.keys()];

  const overloads: OverloadReport[] = [];
  const attributed = new Set<Diagnostic>();
  const compositeInTarget: string[] = [];
  for (const m of manifest.operators) {
    if (!LISTED.has(m.served_by)) continue;
    const changes: Change[] = [];
    const f = target.byName.get(m.name);
    if (!f) {
      const renamedTo = renameOf(m, target);
      const suggestions = renamedTo ? [renamedTo] : successors(m, target, names);
      changes.push({ kind: "removed", renamedTo, suggestions });
      // backend.yaml's errors about it (the supported/autograd line, a symint: line) are this report.
      const errs = yamlErrors.filter((d) => mentions(d, m.name));
      for (const d of errs) attributed.add(d);
      overloads.push({ op: m.name, servedBy: m.served_by, loc: errs[0]?.loc ?? null, changes });
      continue;
    }
    const k = kernels.get(m.name);
    if (!sameSchema(m.schema, f.funcText)) {
      const before = k ? oldKernelSignature(m, baseline?.byName.get(m.name) ?? f) : null;
      if (k && before && cppSignature(before) !== cppSignature(k.sig)) {
        const want = normalizedParams(k.sig).join(", ");
        const breaks = defs
          .filter((d) => d.notKernel === null && (d.name === before.name || d.name === k.sig.name))
          .filter((d) => !(d.name === k.sig.name && d.params.join(", ") === want))
          .map((d) => ({ loc: d.loc, definition: d.raw }));
        changes.push({
          kind: "signature",
          oldDeclaration: declOf(before, config),
          newDeclaration: k.declaration,
          oldSchema: m.schema,
          newSchema: f.funcText,
          breaks,
        });
      } else {
        changes.push({ kind: "schema", oldSchema: m.schema, newSchema: f.funcText });
      }
    }
    const old = baseline?.byName.get(m.name);
    if (old) {
      const was = dispatchOf(old);
      const now = dispatchOf(f);
      if (was !== now) changes.push({ kind: "dispatch", was, now, effect: dispatchEffect(was, now) });
    } else if (f.hasCompositeImplicitAutogradKernel && m.served_by !== "runtime") {
      compositeInTarget.push(m.name);
    }
    const newTags = [...f.tags].sort(cmp);
    const added = newTags.filter((t) => !m.tags.includes(t));
    const removed = m.tags.filter((t) => !newTags.includes(t));
    if (added.length || removed.length) changes.push({ kind: "tags", added, removed });
    overloads.push({ op: m.name, servedBy: m.served_by, loc: locs.get(m.name) ?? null, changes });
  }

  // Siblings derived now vs then.
  const regs = [...plan.backend.registrations, ...(plan.autograd?.registrations ?? [])];
  const derivedNow = new Set(regs.filter((r) => r.servedBy.startsWith("derived_")).map((r) => r.op));
  const derivedThen = new Set(manifest.operators.filter((o) => o.served_by.startsWith("derived_")).map((o) => o.name));
  const derived = {
    added: [...derivedNow].filter((n) => !derivedThen.has(n)).sort(cmp),
    removed: [...derivedThen].filter((n) => !derivedNow.has(n)).sort(cmp),
  };

  // Core ATen.
  const served = new Set([...regs.map((r) => r.op), ...plan.runtime.map((f) => f.name)]);
  const coreAfter = [...target.coreNames()];
  let addedUncovered: string[] | null = null;
  let removedUncovered: string[] | null = null;
  if (baseline) {
    const baseCore = new Set(baseline.coreNames());
    const after = new Set(coreAfter);
    addedUncovered = coreAfter.filter((n) => !baseCore.has(n) && !served.has(n)).sort(cmp);
    removedUncovered = [...baseCore].filter((n) => !after.has(n) && !served.has(n)).sort(cmp);
  }

  const coreBefore: number | null =
    typeof manifest.core_total === "number" ? manifest.core_total : baseline ? baseline.coreNames().length : null;
  const unattributed = yamlErrors.filter((d) => !attributed.has(d));
  const count = (k: Change["kind"]) => overloads.filter((o) => o.changes.some((c) => c.kind === k)).length;
  const summary = {
    unchanged: overloads.filter((o) => o.changes.length === 0).length,
    signature: count("signature"),
    schema: count("schema"),
    removed: count("removed"),
    dispatch: count("dispatch"),
    tags: count("tags"),
  };
  const actionNeeded =
    overloads.some((o) => o.changes.length > 0) ||
    unattributed.length > 0 ||
    derived.added.length > 0 ||
    derived.removed.length > 0 ||
    (coreBefore !== null && coreBefore !== coreAfter.length) ||
    (addedUncovered?.length ?? 0) > 0 ||
    (removedUncovered?.length ?? 0) > 0 ||
    pythonApiBreaks(inp.pythonApi ?? null) > 0;
  return {
    fromTorch: manifest.torch_version,
    toTorch: stripBuild(target.torchVersion),
    baseline: baseline ? stripBuild(baseline.torchVersion) : null,
    overloads,
    yamlErrors: unattributed,
    core: { before: coreBefore, after: coreAfter.length, addedUncovered, removedUncovered },
    derived,
    compositeInTarget: compositeInTarget.sort(cmp),
    summary,
    pythonApi: inp.pythonApi ?? null,
    actionNeeded,
  };
}

export const where = (loc: SourceLoc | null) => (loc ? formatLoc(loc) : "");
