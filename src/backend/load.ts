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
 * Scalars are read with the YAML 1.1 schema because torchgen reads these files
 * with PyYAML (YAML 1.1): `device_guard: yes` must mean what it means there.
 * Booleans additionally must be spelt as PyYAML spells them (`y` is a string
 * to PyYAML but a boolean to the `yaml` package's 1.1 schema).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type * as Yaml from "yaml";
import { hasSymInt, parseSchema, SchemaParseError } from "../model/schema.js";
import type { NativeFunction, NativeFunctionsGroup, OperatorCatalog } from "../model/types.js";
import { type Diagnostic, type SourceLoc, UserError } from "../util/errors.js";
import { fastParse } from "../yaml/backend.js";
import { isAlias, isMap, isScalar, isSeq, type YMap, type YNode, type YPair } from "../yaml/tree.js";
import { checkAutogradBackwards, type ReaderContext, readAutogradMapping, readCustom } from "./custom.js";
import {
  cppIdentifierProblem,
  cppNamespaceProblem,
  deviceNameProblem,
  freeFunctionNamespaceProblem,
  IN_TREE_BACKENDS,
  pythonPackageProblem,
  q,
  TORCHGEN_DISPATCH_KEYS,
} from "./names.js";
import { didYouMean } from "./suggest.js";
import {
  BACKEND_KEYS,
  type BackendConfig,
  type BackendKey,
  DEFAULT_DEVICE,
  DTYPE_ALIASES,
  DTYPES,
  type Dtype,
  FALLBACK_POLICIES,
  type FallbackPolicy,
  type KernelHome,
  type NonNativeEntry,
  type OpEntry,
} from "./types.js";

/**
 * The `yaml` package, loaded only when src/yaml/backend.ts cannot read a file
 * (Note [Cold start]). Synchronous (loadBackendYaml is), through
 * require: the package ships CommonJS for Node.
 */
let yamlModule: typeof Yaml | undefined;
function yamlPackage(): typeof Yaml {
  yamlModule ??= createRequire(import.meta.url)("yaml") as typeof Yaml;
  return yamlModule;
}

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
  "free_functions",
  "runtime",
  "custom",
] as const;
export const ALL_KEYS: readonly string[] = [...TORCHGEN_KEYS, ...OUR_KEYS];

type OpListKey = "supported" | "autograd" | "symint" | "full_codegen" | "ir_gen" | "runtime";

/** gen_lazy_tensor's LazyIrProperties names, the only values `non_native[].properties` may hold. */
const LAZY_IR_PROPERTIES: readonly string[] = [
  "ShapePrecompute",
  "ShapeCompute",
  "ShapeCache",
  "Lower",
  "LowerDeclOnly",
  "CanBeReused",
  "CanBeReusedDeclOnly",
  "CreateFn",
  "CreateFnDeclOnly",
  "TreatScalarsAsConstants",
];

// PyYAML's bool resolver (yaml/resolver.py), which is what torchgen sees.
const PYYAML_BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/;

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
  const cx = new Checker(file, text, catalog, options.fastPath ?? true);
  const config = cx.run();
  const diags = sortDiagnostics(cx.diags);
  if (config === null || diags.some((d) => d.severity === "error")) throw UserError.fromDiagnostics(diags);
  return { ...config, sourceSha256: options.sha256 ?? sha256(text), warnings: diags };
}

function sortDiagnostics(ds: readonly Diagnostic[]): Diagnostic[] {
  // Stable: diagnostics at one spot keep the order the checks produced them.
  return [...ds].sort((a, b) => (a.loc?.line ?? 0) - (b.loc?.line ?? 0) || (a.loc?.col ?? 0) - (b.loc?.col ?? 0));
}

/** A scalar read from the YAML: absent (missing key or null), invalid (already reported), or a value. */
type Read<T> = { readonly kind: "absent" } | { readonly kind: "invalid" } | { readonly kind: "ok"; readonly value: T };

/** An op list entry as written, resolved or not. */
interface RawEntry {
  readonly name: string;
  readonly loc: SourceLoc;
  readonly fn: NativeFunction | null;
}

/** Per-catalog indexes for resolving names; built once per catalog. */
interface CatalogIndex {
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

function describe(node: unknown): string {
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
function pyyamlString(node: unknown): string | null {
  if (!isScalar(node)) return null;
  if (typeof node.value === "string") return node.value;
  if (typeof node.value === "boolean" && node.source !== undefined && !PYYAML_BOOL.test(node.source)) {
    return node.source;
  }
  return null;
}

function isNullScalar(node: unknown): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

class Checker {
  readonly diags: Diagnostic[] = [];
  /** `autograd:` entries written as mappings, by op name: the backward kernel they name (custom.ts). */
  private readonly autogradMappings = new Map<
    string,
    { backward: string | null; backwardLoc: SourceLoc | null; formulaNode: YMap | null }
  >();
  /** Offsets where each line starts, for offset -> line:col. */
  private readonly lineStarts: number[] = [0];
  /** Built on first use (misspelt names only): it enumerates the whole catalog (Note [Lazy catalog]). */
  private get ix(): CatalogIndex {
    return catalogIndex(this.catalog);
  }

  constructor(
    private readonly file: string,
    private readonly text: string,
    private readonly catalog: OperatorCatalog,
    private readonly fastPath: boolean,
  ) {
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) this.lineStarts.push(i + 1);
  }

  private locAt(offset: number): SourceLoc {
    // The last line start at or before offset.
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { file: this.file, line: lo + 1, col: offset - this.lineStarts[lo]! + 1 };
  }

  private locOf(node: unknown): SourceLoc {
    const offset = (node as { offset?: number } | null)?.offset;
    return this.locAt(offset ?? 0);
  }

  private error(loc: SourceLoc, message: string): void {
    this.diags.push({ severity: "error", loc, message });
  }

  private warn(loc: SourceLoc, message: string): void {
    this.diags.push({ severity: "warning", loc, message });
  }

  /** Returns null when the file is too broken to check further (errors already recorded). */
  run(): Omit<BackendConfig, "warnings" | "sourceSha256"> | null {
    if (!this.withinLimits()) return null;
    const fast = this.fastPath ? fastParse(this.text) : undefined;
    const top = fast === undefined ? this.parseFully() : fast;
    if (top === undefined) return null;
    if (isNullScalar(top)) {
      this.error(
        this.locAt(0),
        "the backend YAML is empty; it must be a mapping with at least `backend:` and `cpp_namespace:`",
      );
      return null;
    }
    if (!isMap(top)) {
      this.error(
        this.locOf(top),
        `the top level is ${describe(top)}; it must be a mapping of keys (${ALL_KEYS.join(", ")})`,
      );
      return null;
    }
    return this.checkTop(top);
  }

  /**
   * Reads the file with the `yaml` package (everything src/yaml/backend.ts does not
   * cover). Returns the top node, or undefined after a syntax error: the tree
   * is then unreliable, so the syntax errors are all we report.
   */
  private parseFully(): YNode | null | undefined {
    const Y = yamlPackage();
    const doc = Y.parseDocument(this.text, {
      version: "1.1",
      // Duplicate keys are reported by us, citing both lines.
      uniqueKeys: false,
      merge: false,
      prettyErrors: false,
    });
    for (const e of doc.errors) {
      const msg = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
      this.error(this.locAt(e.pos[0]), `invalid YAML: ${msg}; fix the syntax (see https://yaml.org/spec/1.1/)`);
    }
    if (doc.errors.length > 0) return undefined;
    for (const w of doc.warnings) {
      const msg = w.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
      this.error(this.locAt(w.pos[0]), `unsupported YAML: ${msg}; use plain scalars, lists and mappings without tags`);
    }
    // Anchors and aliases have no use in an op list and make alias bombs
    // ("billion laughs") possible; we refuse them outright, before anything is
    // expanded. One diagnostic per anchor (with its uses) keeps a bomb's
    // report short.
    const anchors = new Map<string, { loc: SourceLoc; uses: number[] }>();
    const strayAliases: SourceLoc[] = [];
    const at = (node: unknown): SourceLoc => this.locAt((node as { range?: [number] }).range?.[0] ?? 0);
    Y.visit(doc, (_key, node) => {
      if (node === null || Y.isPair(node)) return;
      if (Y.isAlias(node)) {
        const a = anchors.get(node.source);
        if (a) a.uses.push(at(node).line);
        else strayAliases.push(at(node));
        return;
      }
      const anchor = (node as { anchor?: string }).anchor;
      if (anchor && !anchors.has(anchor)) anchors.set(anchor, { loc: at(node), uses: [] });
    });
    for (const [name, a] of anchors) {
      const n = a.uses.length;
      const distinct = [...new Set(a.uses)];
      const lines = distinct.slice(0, 5).join(", ") + (distinct.length > 5 ? ", ..." : "");
      const where = `line${distinct.length === 1 ? "" : "s"} ${lines}`;
      const used = n === 0 ? "" : ` (used by ${n} alias${n === 1 ? "" : "es"}, ${where})`;
      this.error(a.loc, `YAML anchor &${name}${used} is not allowed; write values out in full, without & and *`);
    }
    for (const loc of strayAliases) this.error(loc, "YAML alias is not allowed; write the value out in full");

    return toTree(Y, doc.contents);
  }

  /**
   * The `yaml` package aborts the whole process (V8 out of memory, not a
   * catchable exception) on flow collections nested some thousands deep, so
   * we refuse those before parsing. Brackets are counted without regard to
   * quotes or comments: that can only over-count, and a real backend YAML
   * nests two levels at most.
   */
  private withinLimits(): boolean {
    if (this.text.length > MAX_CHARS) {
      this.error(
        this.locAt(0),
        `the file has ${this.text.length} characters; a backend YAML may have at most ${MAX_CHARS}`,
      );
      return false;
    }
    let depth = 0;
    for (let i = 0; i < this.text.length; i++) {
      const c = this.text.charCodeAt(i);
      if (c === 0x5b || c === 0x7b) {
        if (++depth > MAX_FLOW_DEPTH) {
          const loc = this.locAt(i);
          this.error(
            loc,
            `[ and { nest deeper than ${MAX_FLOW_DEPTH} levels; a backend YAML needs at most two (lists of names)`,
          );
          return false;
        }
      } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
    }
    return true;
  }

  private checkTop(top: YMap): Omit<BackendConfig, "warnings" | "sourceSha256"> | null {
    const first = new Map<string, YPair>();
    const keyLocs = new Map<string, SourceLoc>();
    for (const pair of top.items) {
      const k = pair.key;
      const name = pyyamlString(k);
      if (name === null) {
        if (!isAlias(k)) {
          this.error(this.locOf(k), `a key is ${describe(k)}; keys are plain names: ${ALL_KEYS.join(", ")}`);
        }
        continue;
      }
      const prev = first.get(name);
      if (prev) {
        const pl = this.locOf(prev.key);
        this.error(this.locOf(k), `duplicate key ${q(name)} (first at line ${pl.line}); each key may appear once`);
        continue;
      }
      first.set(name, pair);
      keyLocs.set(name, this.locOf(k));
      if (!ALL_KEYS.includes(name)) {
        const hint = didYouMean(name, ALL_KEYS, 1);
        this.error(
          this.locOf(k),
          `unknown key ${q(name)}${hint}${hint ? " " : "; "}allowed keys: ${ALL_KEYS.join(", ")}`,
        );
      }
    }
    const value = (key: string): unknown => first.get(key)?.value ?? null;
    const topLoc = this.locOf(top);

    // --- backend
    const backend = this.checkBackend(value("backend"), keyLocs.get("backend") ?? topLoc);

    // --- cpp_namespace
    const nsRaw = this.readString("cpp_namespace", value("cpp_namespace"));
    let cppNamespace = "";
    if (nsRaw.kind === "invalid") {
      // reported by readString
    } else if (nsRaw.kind === "absent" || nsRaw.value.trim() === "") {
      this.error(
        keyLocs.get("cpp_namespace") ?? topLoc,
        "`cpp_namespace` is missing or empty; give the C++ namespace of your kernels, e.g. `cpp_namespace: at::mychip`",
      );
    } else {
      const why = cppNamespaceProblem(nsRaw.value);
      if (why) {
        this.error(
          this.locOf(value("cpp_namespace")),
          `cpp_namespace ${why}; it must be a C++ namespace path like at::mychip`,
        );
      } else cppNamespace = nsRaw.value;
    }

    // --- class_name, free_functions (Note [Kernel home])
    const cnRaw = this.readString("class_name", value("class_name"));
    let className = backend ? `${backend}NativeFunctions` : "";
    if (cnRaw.kind === "ok") {
      const why = cppIdentifierProblem(cnRaw.value);
      if (why) {
        this.error(
          this.locOf(value("class_name")),
          `class_name ${why}; it must be one C++ identifier like MychipNativeFunctions (no ::)`,
        );
      } else className = cnRaw.value;
    }
    const freeFunctions = this.readBool("free_functions", value("free_functions"), false);
    if (freeFunctions) {
      const cnLoc = keyLocs.get("class_name");
      if (cnLoc) {
        const ff = keyLocs.get("free_functions")!;
        this.error(
          cnLoc,
          `class_name cannot be given with free_functions: true (line ${ff.line}): free-function kernels are ` +
            "<cpp_namespace>::<name>, members of no struct; remove class_name, or remove free_functions to keep " +
            "kernels as static members of class_name",
        );
      }
      const why = cppNamespace === "" ? null : freeFunctionNamespaceProblem(cppNamespace);
      if (why) {
        this.error(
          this.locOf(value("cpp_namespace")),
          `cpp_namespace ${why}; with free_functions: true use a namespace of your own like at::mychip`,
        );
      }
    }
    const kernelHome: KernelHome = freeFunctions ? { kind: "free" } : { kind: "class", className };

    // --- flags
    const useOutAsPrimary = this.readBool("use_out_as_primary", value("use_out_as_primary"), false);
    const deviceGuard = this.readBool("device_guard", value("device_guard"), false);

    // --- op lists
    const supportedRaw = this.readOpList("supported", value("supported"));
    const autogradRaw = this.readOpList("autograd", value("autograd"));
    const symintRaw = this.readOpList("symint", value("symint"));
    const fullCodegenRaw = this.readOpList("full_codegen", value("full_codegen"));
    const irGenRaw = this.readOpList("ir_gen", value("ir_gen"));
    const nonNative = this.readNonNative(value("non_native"));
    const runtimeRaw = this.readOpList("runtime", value("runtime"));

    const supported = this.dedup("supported", supportedRaw);
    const autograd = this.dedup("autograd", autogradRaw);
    const symint = this.dedup("symint", symintRaw);
    const fullCodegen = this.dedup("full_codegen", fullCodegenRaw);
    const irGen = this.dedup("ir_gen", irGenRaw);
    const runtime = this.dedup("runtime", runtimeRaw);

    // torchgen's gen_backend_stubs appends full_codegen to supported, so for
    // every rule below the two are one list.
    const forward = new Map<string, OpEntry>();
    for (const e of supported) forward.set(e.name, e);
    for (const e of fullCodegen) {
      const s = forward.get(e.name);
      if (s) {
        this.warn(
          e.loc,
          `${e.name} is listed in both supported (line ${s.loc.line}) and full_codegen (line ${e.loc.line}); list it once`,
        );
      } else forward.set(e.name, e);
    }
    this.checkGroupSplit(forward, autograd);
    this.checkSymint(symint, forward, autograd);
    this.checkRuntime(runtime, forward, autograd);

    // --- our keys
    const fallback = this.readFallback(value("fallback"));
    const dtypes = this.readDtypes(value("dtypes"));
    const device = this.checkDevice(backend, value("device"), keyLocs.get("backend") ?? topLoc);
    const ppRaw = this.readString("python_package", value("python_package"));
    let pythonPackage = `torch_${device}`;
    if (ppRaw.kind === "ok") {
      const why = pythonPackageProblem(ppRaw.value);
      if (why) {
        this.error(
          this.locOf(value("python_package")),
          `python_package ${why}; it must be an importable name like torch_mychip`,
        );
      } else pythonPackage = ppRaw.value;
    }

    // --- custom operators and the backwards autograd entries name (custom.ts)
    const rc = this.readerContext(device);
    const custom = readCustom(rc, value("custom"));
    const autogradBackward = checkAutogradBackwards(
      rc,
      autograd.flatMap((e) => {
        const m = this.autogradMappings.get(e.name);
        return m ? [{ name: e.name, loc: e.loc, fn: e.fn, ...m }] : [];
      }),
      custom,
      `Autograd${backend ?? "PrivateUse1"}`,
    );

    if (backend === null) return null;
    return {
      custom,
      autogradBackward: new Map(autogradBackward.map((b) => [b.op, b.backward])),
      autogradFormula: new Map(autogradBackward.flatMap((b) => (b.formula ? [[b.op, b.formula] as const] : []))),
      file: this.file,
      backend,
      autogradKey: `Autograd${backend}`,
      cppNamespace,
      cppNamespaceParts: cppNamespace === "" ? [] : cppNamespace.split("::"),
      kernelHome,
      supported,
      autograd,
      symint,
      symintNames: new Set(symint.map((e) => e.name)),
      fullCodegen,
      nonNative,
      irGen,
      runtime,
      runtimeNames: new Set(runtime.map((e) => e.name)),
      useOutAsPrimary,
      deviceGuard,
      device,
      pythonPackage,
      fallback,
      dtypes,
      keyLocs,
    };
  }

  /** What custom.ts needs of this checker. */
  private readerContext(device: string): ReaderContext {
    return {
      device,
      locOf: (n) => this.locOf(n),
      error: (l, m) => this.error(l, m),
      warn: (l, m) => this.warn(l, m),
      str: (n) => pyyamlString(n),
      quoted: (n) => {
        const at = (n as { offset?: unknown } | null)?.offset;
        return typeof at === "number" && (this.text[at] === '"' || this.text[at] === "'");
      },
      atenHasBase: (base) => this.catalog.byName.has(base) || this.ix.overloads.has(base),
    };
  }

  private checkBackend(node: unknown, keyLoc: SourceLoc): BackendKey | null {
    const allowed = `one of ${BACKEND_KEYS.join(", ")}`;
    const read = this.readString("backend", node);
    if (read.kind === "invalid") return null;
    const raw = read.kind === "ok" ? read.value : "";
    if (raw.trim() === "") {
      this.error(keyLoc, `\`backend\` is missing or empty; give the dispatch key to register on: ${allowed}`);
      return null;
    }
    if ((BACKEND_KEYS as readonly string[]).includes(raw)) return raw as BackendKey;
    const loc = this.locOf(node);
    if (IN_TREE_BACKENDS.has(raw)) {
      this.error(
        loc,
        `backend ${q(raw)} is a dispatch key PyTorch implements itself; an out-of-tree backend uses ${allowed}`,
      );
    } else if (raw === "PrivateUse2" || raw === "PrivateUse3") {
      this.error(loc, `backend ${q(raw)} has no device type in torch, so no tensor can reach it; use ${allowed}`);
    } else if (TORCHGEN_DISPATCH_KEYS.includes(raw)) {
      this.error(loc, `backend ${q(raw)} is not a backend dispatch key; use ${allowed}`);
    } else {
      const hint = didYouMean(raw, BACKEND_KEYS, 1);
      this.error(loc, `unknown dispatch key ${q(raw)}${hint}${hint ? " " : "; "}backend must be ${allowed}`);
    }
    return null;
  }

  private checkDevice(backend: BackendKey | null, node: unknown, backendLoc: SourceLoc): string {
    const fallbackName = backend ? DEFAULT_DEVICE[backend] : "privateuseone";
    const read = this.readString("device", node);
    if (read.kind === "invalid") return fallbackName;
    if (read.kind === "absent") {
      if (backend === "PrivateUse1") {
        this.warn(
          backendLoc,
          "no `device:` given, so the device keeps torch's name `privateuseone`; set `device: <name>` to rename it",
        );
      }
      return fallbackName;
    }
    const raw = read.value;
    if (backend !== null && backend !== "PrivateUse1" && raw !== fallbackName) {
      this.error(
        this.locOf(node),
        `device ${q(raw)} cannot be set for backend ${backend}: torch renames only PrivateUse1; remove it or write device: ${fallbackName}`,
      );
      return fallbackName;
    }
    if (backend !== null && backend !== "PrivateUse1") return raw;
    const why = deviceNameProblem(raw);
    if (why) {
      this.error(this.locOf(node), `device ${why}; choose a new lower-case name like mychip`);
      return fallbackName;
    }
    return raw;
  }

  /** `dtypes:` a list of torch dtype names (DTYPES); null when absent. */
  private readDtypes(node: unknown): Dtype[] | null {
    if (isNullScalar(node) || isAlias(node)) return null;
    const allowed = `allowed: ${DTYPES.join(", ")}`;
    if (!isSeq(node)) {
      this.error(this.locOf(node), `dtypes is ${describe(node)}; it must be a list of dtype names (${allowed})`);
      return null;
    }
    const seen = new Map<Dtype, SourceLoc>();
    let bad = false;
    for (const item of node.items) {
      if (isAlias(item)) continue;
      const loc = this.locOf(item);
      const raw = pyyamlString(item);
      if (raw === null) {
        this.error(loc, `dtypes entry is ${describe(item)}; entries are dtype names like float32 (${allowed})`);
        bad = true;
        continue;
      }
      const bare = raw.startsWith("torch.") ? raw.slice("torch.".length) : raw;
      const known = DTYPES.find((d) => d === bare);
      if (!known) {
        const alias = DTYPE_ALIASES[bare];
        const hint = alias
          ? `; torch.${bare} is written ${alias} here`
          : didYouMean(bare, DTYPES) || "; the conformance runner has samples only for these";
        this.error(loc, `dtypes entry ${q(raw)} is not a dtype we can test${hint} (${allowed})`);
        bad = true;
        continue;
      }
      if (bare !== raw) {
        this.error(loc, `dtypes entry ${q(raw)}: write ${known}, without torch.`);
        bad = true;
        continue;
      }
      const prev = seen.get(known);
      if (prev) {
        this.warn(
          loc,
          `${known} is listed twice in dtypes (at ${prev.line}:${prev.col} and ${loc.line}:${loc.col}); the second entry is ignored`,
        );
        continue;
      }
      seen.set(known, loc);
    }
    if (seen.size === 0 && !bad) {
      this.error(
        this.locOf(node),
        `dtypes is empty; list the dtypes your device supports, or leave the key out (${allowed})`,
      );
    }
    return DTYPES.filter((d) => seen.has(d));
  }

  private readFallback(node: unknown): FallbackPolicy {
    const read = this.readString("fallback", node);
    if (read.kind !== "ok") return "cpu";
    const raw = read.value;
    const found = FALLBACK_POLICIES.find((p) => p === raw);
    if (found) return found;
    this.error(this.locOf(node), `fallback ${q(raw)} is not a fallback policy; use ${FALLBACK_POLICIES.join(" or ")}`);
    return "cpu";
  }

  private readString(key: string, node: unknown): Read<string> {
    if (isNullScalar(node)) return { kind: "absent" };
    if (isAlias(node)) return { kind: "invalid" };
    const s = pyyamlString(node);
    if (s !== null) return { kind: "ok", value: s };
    this.error(this.locOf(node), `${key} is ${describe(node)}; it must be a string`);
    return { kind: "invalid" };
  }

  private readBool(key: string, node: unknown, dflt: boolean): boolean {
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

  private readOpList(key: OpListKey, node: unknown): RawEntry[] {
    // torchgen lets `supported:` and `symint:` be empty (null); we allow it for every list.
    if (isNullScalar(node) || isAlias(node)) return [];
    if (!isSeq(node)) {
      this.error(this.locOf(node), `${key} is ${describe(node)}; it must be a list of operator names like add.Tensor`);
      return [];
    }
    // Names first (bad entries reported here), so the catalog hears about all of them before the lookups.
    const named: { name: string; loc: SourceLoc }[] = [];
    for (const item of node.items) {
      if (isAlias(item)) continue;
      const loc = this.locOf(item);
      if (key === "autograd" && isMap(item)) {
        const m = readAutogradMapping(this.readerContext(""), item);
        if (m) {
          this.autogradMappings.set(m.name, {
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
        this.error(
          loc,
          `${key} entry is ${describe(item)}${example}; entries are operator names as strings, like add.Tensor`,
        );
        continue;
      }
      named.push({ name, loc });
    }
    this.catalog.expect?.(named.map((e) => e.name));
    return named.map(({ name, loc }) => ({ name, loc, fn: this.resolveOp(key, name, loc) }));
  }

  private resolveOp(key: string, name: string, loc: SourceLoc): NativeFunction | null {
    const fn = this.catalog.byName.get(name);
    if (fn) return fn;
    const v = this.catalog.torchVersion;
    const rule = "operators are written name.overload as in native_functions.yaml";
    if (name.startsWith("aten::")) {
      const bare = name.slice("aten::".length);
      const hint = this.catalog.byName.has(bare) ? `write ${q(bare)}` : rule;
      this.error(loc, `${key} entry ${q(name)} has a namespace prefix; ${hint} (no aten::)`);
      return null;
    }
    const dot = name.indexOf(".");
    const base = dot < 0 ? name : name.slice(0, dot);
    const overloads = this.ix.overloads.get(base);
    if (dot < 0 && overloads) {
      // torchgen matches exact OperatorName strings: `add` names the overload
      // with an empty name, which `add` does not have.
      const shown =
        overloads.slice(0, 8).join(", ") + (overloads.length > 8 ? `, ... (${overloads.length} in all)` : "");
      this.error(
        loc,
        `${key} entry ${q(name)} is not an operator: it has only named overloads; list each you implement: ${shown}`,
      );
      return null;
    }
    if (dot >= 0 && name.slice(dot + 1) === "default" && this.catalog.byName.has(base)) {
      this.error(
        loc,
        `${key} entry ${q(name)} is not an operator; the overload Python calls .default is written ${q(base)}`,
      );
      return null;
    }
    if (dot >= 0 && overloads) {
      // The base name is right: offer its overloads, not look-alike names.
      const close = didYouMean(name, overloads);
      const hint = close || `; ${base} has: ${overloads.slice(0, 8).join(", ")}${overloads.length > 8 ? ", ..." : ""}`;
      this.error(loc, `${key} entry ${q(name)} is not an operator of torch ${v}${hint}`);
      return null;
    }
    const hint = didYouMean(name, this.ix.names);
    this.error(loc, `${key} entry ${q(name)} is not an operator of torch ${v}${hint}${hint ? " " : "; "}(${rule})`);
    return null;
  }

  /** Drops unresolved entries and later duplicates (a warning naming both lines). */
  private dedup(key: OpListKey, raw: readonly RawEntry[]): OpEntry[] {
    const seen = new Map<string, OpEntry>();
    const out: OpEntry[] = [];
    for (const r of raw) {
      if (r.fn === null) continue;
      const prev = seen.get(r.name);
      if (prev) {
        this.warn(
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
  private checkRuntime(
    runtime: readonly OpEntry[],
    forward: ReadonlyMap<string, OpEntry>,
    autograd: readonly OpEntry[],
  ): void {
    const autogradByName = new Map(autograd.map((e) => [e.name, e]));
    for (const r of runtime) {
      const clash = forward.get(r.name) ?? autogradByName.get(r.name);
      if (!clash) continue;
      const where = forward.has(r.name) ? "supported" : "autograd";
      this.error(
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
  private checkGroupSplit(forward: ReadonlyMap<string, OpEntry>, autograd: readonly OpEntry[]): void {
    const reported = new Set<unknown>();
    for (const a of autograd) {
      const g = this.catalog.groupOf.get(a.name);
      const members = g ? groupMembers(g).map((f) => f.name) : [a.name];
      const clash = members.map((m) => forward.get(m)).find((e) => e !== undefined);
      if (!clash) continue;
      const groupId = g ?? a.name;
      if (reported.has(groupId)) continue;
      reported.add(groupId);
      const what = clash.name === a.name ? `${a.name} is also listed` : `${clash.name}, in the same op group,`;
      this.error(
        a.loc,
        `${a.name} is listed under autograd but ${what} under supported (line ${clash.loc.line}); ` +
          `all variants of an op (${members.filter((m) => m).join(", ")}) must be in supported or all in autograd`,
      );
    }
  }

  private checkSymint(
    symint: readonly OpEntry[],
    forward: ReadonlyMap<string, OpEntry>,
    autograd: readonly OpEntry[],
  ): void {
    const autogradNames = new Set(autograd.map((e) => e.name));
    for (const s of symint) {
      if (!hasSymInt(s.fn.func)) {
        this.error(
          s.loc,
          `symint entry ${s.name} has no SymInt argument, so it has no SymInt kernel; list only ops whose schema takes SymInt`,
        );
        continue;
      }
      if (!forward.has(s.name) && !autogradNames.has(s.name)) {
        this.warn(
          s.loc,
          `symint entry ${s.name} is not listed in supported, autograd or full_codegen, so it has no effect`,
        );
      }
    }
  }

  private readNonNative(node: unknown): NonNativeEntry[] {
    if (isNullScalar(node) || isAlias(node)) return [];
    if (!isSeq(node)) {
      this.error(
        this.locOf(node),
        `non_native is ${describe(node)}; it must be a list of mappings with func: and properties:`,
      );
      return [];
    }
    const out: NonNativeEntry[] = [];
    for (const item of node.items) {
      if (isAlias(item)) continue;
      const loc = this.locOf(item);
      if (!isMap(item)) {
        this.error(
          loc,
          `non_native entry is ${describe(item)}; it must be a mapping with func: (a schema) and properties:`,
        );
        continue;
      }
      let func: string | null = null;
      let properties: string[] = [];
      let opkind: string | null = null;
      const seen = new Set<string>();
      for (const p of item.items) {
        const k = p.key;
        if (!isScalar(k) || typeof k.value !== "string") {
          this.error(this.locOf(k), `non_native key is ${describe(k)}; keys are func, properties, opkind`);
          continue;
        }
        if (seen.has(k.value)) {
          this.error(this.locOf(k), `duplicate key ${q(k.value)} in a non_native entry; each key may appear once`);
          continue;
        }
        seen.add(k.value);
        switch (k.value) {
          case "func": {
            const s = this.readString("non_native func", p.value);
            if (s.kind === "absent") this.error(this.locOf(k), "non_native func is empty; give the operator schema");
            if (s.kind === "ok") {
              try {
                parseSchema(s.value);
                func = s.value;
              } catch (e) {
                if (!(e instanceof SchemaParseError)) throw e;
                this.error(
                  this.locOf(p.value),
                  `non_native func is not a valid schema: ${e.reason} (column ${e.col}); write it as in native_functions.yaml`,
                );
              }
            }
            break;
          }
          case "properties":
            properties = this.readProperties(p.value);
            break;
          case "opkind": {
            const s = this.readString("non_native opkind", p.value);
            if (s.kind === "ok") {
              const why = cppNamespaceProblem(s.value);
              if (why) this.error(this.locOf(p.value), `non_native opkind ${why}; it must be a C++ name like ltc_cast`);
              else opkind = s.value;
            }
            break;
          }
          default: {
            const hint = didYouMean(k.value, ["func", "properties", "opkind"], 1);
            this.error(
              this.locOf(k),
              `unknown non_native key ${q(k.value)}${hint}${hint ? " " : "; "}allowed: func, properties, opkind`,
            );
          }
        }
      }
      if (func === null) {
        if (!seen.has("func")) this.error(loc, "non_native entry has no func:; give the operator schema");
        continue;
      }
      out.push({ func, properties, opkind, loc });
    }
    return out;
  }

  private readProperties(node: unknown): string[] {
    if (isNullScalar(node)) return [];
    if (!isSeq(node)) {
      this.error(
        this.locOf(node),
        `non_native properties is ${describe(node)}; it must be a list of: ${LAZY_IR_PROPERTIES.join(", ")}`,
      );
      return [];
    }
    const out: string[] = [];
    for (const it of node.items) {
      if (isScalar(it) && typeof it.value === "string" && LAZY_IR_PROPERTIES.includes(it.value)) out.push(it.value);
      else if (!isAlias(it)) {
        const hint = isScalar(it) && typeof it.value === "string" ? didYouMean(it.value, LAZY_IR_PROPERTIES, 1) : "";
        this.error(
          this.locOf(it),
          `non_native property is ${describe(it)}${hint}${hint ? " " : "; "}allowed: ${LAZY_IR_PROPERTIES.join(", ")}`,
        );
      }
    }
    return out;
  }
}

function groupMembers(g: NativeFunctionsGroup): NativeFunction[] {
  return [g.functional, g.inplace, g.mutable, g.out].filter((f): f is NativeFunction => f !== null);
}

/** The `yaml` package's nodes as our tree (src/yaml/tree.ts). */
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
