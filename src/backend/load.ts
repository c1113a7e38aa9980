/**
 * Translates a vendor's backend YAML (torchgen's gen_backend_stubs.py format,
 * plus our keys) into a validated, fully defaulted BackendConfig, resolving
 * every listed operator against the installed torch's catalog.
 *
 * The text becomes a small tree whose nodes keep their offsets (src/yaml/tree.ts), so
 * each Diagnostic can say file:line:col: from src/yaml/backend.ts when the file has the
 * usual plain shape, else from the `yaml` package's Document API. The whole
 * file is checked before we throw: one UserError holds every problem (Note
 * [Diagnostics] in src/util/errors.ts).
 *
 * Each top-level key has its reader in src/backend/keys/ (one per key, or per
 * keys that decide one thing together); checkTop calls them in one list.
 *
 * Scalars are read with the YAML 1.1 schema because torchgen reads these files
 * with PyYAML (YAML 1.1): `device_guard: yes` must mean what it means there.
 * Booleans additionally must be spelt as PyYAML spells them (`y` is a string
 * to PyYAML but a boolean to the `yaml` package's 1.1 schema).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { OperatorCatalog } from "../model/types.js";
import { type Diagnostic, type SourceLoc, UserError } from "../util/errors.js";
import { fastParse } from "../yaml/backend.js";
import { parseDocument } from "../yaml/document.js";
import { isAlias, isMap, type YMap, type YNode, type YPair } from "../yaml/tree.js";
import { readBackend, readDevice, readPythonPackage } from "./keys/backend.js";
import { checkAutogradBackwards } from "./keys/backward.js";
import { describe, isNullScalar, KeyContext, pyyamlString, type TopKeys } from "./keys/context.js";
import { readCppNamespace, readKernelHome } from "./keys/cpp.js";
import { readCustom } from "./keys/custom.js";
import { readDtypes, readPartialDtypes } from "./keys/dtypes.js";
import { readFallback } from "./keys/fallback.js";
import { readNonNative } from "./keys/nonnative.js";
import { readOpLists } from "./keys/oplists.js";
import { q } from "./names.js";
import { didYouMean } from "./suggest.js";
import { autogradKey, type BackendConfig } from "./types.js";

/** Keys gen_backend_stubs.py / gen_lazy_tensor.py pop from the YAML (torch 2.13), same meaning here. */
export const TORCHGEN_KEYS = [
  "backend",
  "class_name",
  "cpp_namespace",
  "supported",
  "autograd",
  "symint",
  "full_codegen",
  "non_native",
  "ir_gen",
  "use_out_as_primary",
  "device_guard",
] as const;
/** Our additions; see docs/backend-yaml.md. */
export const OUR_KEYS = [
  "device",
  "python_package",
  "fallback",
  "dtypes",
  "partial_dtypes",
  "free_functions",
  "runtime",
  "custom",
] as const;
export const ALL_KEYS: readonly string[] = [...TORCHGEN_KEYS, ...OUR_KEYS];

/** Every operator of torch listed once is ~80 K characters; anything near this is not a backend YAML. */
const MAX_CHARS = 4 * 1024 * 1024;
const MAX_FLOW_DEPTH = 32;

/** Reads and validates `file`. Throws UserError with every problem found. */
export function loadBackendYaml(file: string, catalog: OperatorCatalog): BackendConfig {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "";
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : String(e);
    throw new UserError(`${file}: cannot read backend YAML: ${why}; pass the path of your backend.yaml`);
  }
  return parseBackendYaml(bytes.toString("utf8"), file, catalog, { sha256: sha256(bytes) });
}

function sha256(bytes: string | Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export interface ParseOptions {
  /** Use src/yaml/backend.ts where it applies (default true); tests turn it off to compare both readers. */
  readonly fastPath?: boolean;
  /** SHA-256 of the bytes `text` was decoded from (default: of `text` as UTF-8). */
  readonly sha256?: string;
}

/** As loadBackendYaml, for YAML text already in memory; `file` is only used in diagnostics. */
export function parseBackendYaml(
  text: string,
  file: string,
  catalog: OperatorCatalog,
  options: ParseOptions = {},
): BackendConfig {
  const cx = new KeyContext(file, text, catalog);
  const config = check(cx, options.fastPath ?? true);
  const diags = sortDiagnostics(cx.diags);
  if (config === null || diags.some((d) => d.severity === "error")) throw UserError.fromDiagnostics(diags);
  return { ...config, sourceSha256: options.sha256 ?? sha256(text), warnings: diags };
}

function sortDiagnostics(ds: readonly Diagnostic[]): Diagnostic[] {
  // Stable: diagnostics at one spot keep the order the checks produced them.
  return [...ds].sort((a, b) => (a.loc?.line ?? 0) - (b.loc?.line ?? 0) || (a.loc?.col ?? 0) - (b.loc?.col ?? 0));
}

/** Returns null when the file is too broken to check further (errors already recorded). */
function check(cx: KeyContext, fastPath: boolean): Omit<BackendConfig, "warnings" | "sourceSha256"> | null {
  if (!withinLimits(cx)) return null;
  const fast = fastPath ? fastParse(cx.text) : undefined;
  const top = fast === undefined ? parseFully(cx) : fast;
  if (top === undefined) return null;
  if (isNullScalar(top)) {
    cx.error(
      cx.locAt(0),
      "the backend YAML is empty; it must be a mapping with at least `backend:` and `cpp_namespace:`",
    );
    return null;
  }
  if (!isMap(top)) {
    cx.error(cx.locOf(top), `the top level is ${describe(top)}; it must be a mapping of keys (${ALL_KEYS.join(", ")})`);
    return null;
  }
  return checkTop(cx, top);
}

/**
 * Reads the file with the `yaml` package (everything src/yaml/backend.ts does not
 * cover). Returns the top node, or undefined after a syntax error: the tree
 * is then unreliable, so the syntax errors are all we report.
 */
function parseFully(cx: KeyContext): YNode | null | undefined {
  // Duplicate keys are reported by us, citing both lines.
  const doc = parseDocument(cx.text, { uniqueKeys: false });
  for (const e of doc.errors) {
    cx.error(cx.locAt(e.offset), `invalid YAML: ${e.message}; fix the syntax (see https://yaml.org/spec/1.1/)`);
  }
  if (doc.errors.length > 0) return undefined;
  for (const w of doc.warnings) {
    cx.error(cx.locAt(w.offset), `unsupported YAML: ${w.message}; use plain scalars, lists and mappings without tags`);
  }
  // Anchors and aliases have no use in an op list and make alias bombs
  // ("billion laughs") possible; we refuse them outright, before anything is
  // expanded. One diagnostic per anchor (with its uses) keeps a bomb's
  // report short.
  for (const a of doc.anchors) {
    const n = a.uses.length;
    const distinct = [...new Set(a.uses.map((o) => cx.locAt(o).line))];
    const lines = distinct.slice(0, 5).join(", ") + (distinct.length > 5 ? ", ..." : "");
    const where = `line${distinct.length === 1 ? "" : "s"} ${lines}`;
    const used = n === 0 ? "" : ` (used by ${n} alias${n === 1 ? "" : "es"}, ${where})`;
    cx.error(
      cx.locAt(a.offset),
      `YAML anchor &${a.name}${used} is not allowed; write values out in full, without & and *`,
    );
  }
  for (const o of doc.strayAliases) cx.error(cx.locAt(o), "YAML alias is not allowed; write the value out in full");
  return doc.root;
}

/**
 * The `yaml` package aborts the whole process (V8 out of memory, not a
 * catchable exception) on flow collections nested some thousands deep, so
 * we refuse those before parsing. Brackets are counted without regard to
 * quotes or comments: that can only over-count, and a real backend YAML
 * nests two levels at most.
 */
function withinLimits(cx: KeyContext): boolean {
  if (cx.text.length > MAX_CHARS) {
    cx.error(cx.locAt(0), `the file has ${cx.text.length} characters; a backend YAML may have at most ${MAX_CHARS}`);
    return false;
  }
  let depth = 0;
  for (let i = 0; i < cx.text.length; i++) {
    const c = cx.text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_FLOW_DEPTH) {
        const loc = cx.locAt(i);
        cx.error(
          loc,
          `[ and { nest deeper than ${MAX_FLOW_DEPTH} levels; a backend YAML needs at most two (lists of names)`,
        );
        return false;
      }
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return true;
}

/** The top-level keys, each read once: unknown and duplicate keys reported. */
function readTop(cx: KeyContext, top: YMap): TopKeys {
  const first = new Map<string, YPair>();
  const keyLocs = new Map<string, SourceLoc>();
  for (const pair of top.items) {
    const k = pair.key;
    const name = pyyamlString(k);
    if (name === null) {
      if (!isAlias(k)) {
        cx.error(cx.locOf(k), `a key is ${describe(k)}; keys are plain names: ${ALL_KEYS.join(", ")}`);
      }
      continue;
    }
    const prev = first.get(name);
    if (prev) {
      const pl = cx.locOf(prev.key);
      cx.error(cx.locOf(k), `duplicate key ${q(name)} (first at line ${pl.line}); each key may appear once`);
      continue;
    }
    first.set(name, pair);
    keyLocs.set(name, cx.locOf(k));
    if (!ALL_KEYS.includes(name)) {
      const hint = didYouMean(name, ALL_KEYS, 1);
      cx.error(cx.locOf(k), `unknown key ${q(name)}${hint}${hint ? " " : "; "}allowed keys: ${ALL_KEYS.join(", ")}`);
    }
  }
  return {
    value: (key) => first.get(key)?.value ?? null,
    keyLoc: (key) => keyLocs.get(key),
    loc: cx.locOf(top),
  };
}

/** One reader per key (src/backend/keys/), in the order their checks depend on each other. */
function checkTop(cx: KeyContext, yamlTop: YMap): Omit<BackendConfig, "warnings" | "sourceSha256"> | null {
  const top = readTop(cx, yamlTop);
  const backendLoc = top.keyLoc("backend") ?? top.loc;
  const backend = readBackend(cx, top.value("backend"), backendLoc);
  const cppNamespace = readCppNamespace(cx, top.value("cpp_namespace"), top.keyLoc("cpp_namespace") ?? top.loc);
  const kernelHome = readKernelHome(cx, top, backend, cppNamespace);
  const useOutAsPrimary = cx.readBool("use_out_as_primary", top.value("use_out_as_primary"), false);
  const deviceGuard = cx.readBool("device_guard", top.value("device_guard"), false);
  const nonNative = readNonNative(cx, top.value("non_native"));
  const lists = readOpLists(cx, top);
  const fallback = readFallback(cx, top.value("fallback"));
  const dtypes = readDtypes(cx, top.value("dtypes"));
  const partialDtypes = readPartialDtypes(
    cx,
    top.value("partial_dtypes"),
    dtypes,
    new Set([...lists.supported, ...lists.autograd, ...lists.runtime].map((e) => e.name)),
  );
  const device = readDevice(cx, backend, top.value("device"), backendLoc);
  const pythonPackage = readPythonPackage(cx, device, top.value("python_package"));

  // custom operators and the backwards autograd entries name (keys/custom.ts, keys/backward.ts)
  const custom = readCustom(cx, top.value("custom"), device);
  const autogradBackward = checkAutogradBackwards(
    cx,
    lists.autograd.flatMap((e) => {
      const m = lists.autogradMappings.get(e.name);
      return m ? [{ name: e.name, loc: e.loc, fn: e.fn, ...m }] : [];
    }),
    custom,
    autogradKey(backend ?? "PrivateUse1"),
  );

  if (backend === null) return null;
  const { supported, autograd, symint, fullCodegen, irGen, runtime } = lists;
  return {
    custom,
    autogradBackward: new Map(autogradBackward.map((b) => [b.op, b.backward])),
    autogradFormula: new Map(autogradBackward.flatMap((b) => (b.formula ? [[b.op, b.formula] as const] : []))),
    file: cx.file,
    backend,
    cppNamespace,
    kernelHome,
    supported,
    autograd,
    symint,
    fullCodegen,
    nonNative,
    irGen,
    runtime,
    useOutAsPrimary,
    deviceGuard,
    device,
    pythonPackage,
    fallback,
    dtypes,
    partialDtypes,
  };
}
