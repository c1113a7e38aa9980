/**
 * The vendor's kernel sources vs the kernels the header declares: which
 * declared kernels have a definition, by signature rather than by name
 * (torchgen's `--impl-path` only counts `Class::name(` occurrences, so a
 * definition with the wrong parameter types passes it and fails at link
 * time). Used by the missing-kernel check (`gen --impl-path`) and to decide
 * which kernel stubs to write (`gen --stubs`).
 *
 * Note [Finding definitions]: we look for `ClassName::name(` outside comments
 * and string literals whose balanced parameter list is followed by `{` (after
 * optional `const`/`noexcept`/`override`), i.e. a definition, not a call.
 * Parameter types are compared after normalization: namespaces (`at::`,
 * `c10::`, `std::`) and parameter names dropped, `T const &` == `const T &`,
 * top-level const on by-value parameters ignored (it is not part of the
 * signature), and the ATen aliases (`IntArrayRef` == `ArrayRef<int64_t>`, ...)
 * unified.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { printCType } from "../api/ctype.js";
import type { DispatcherSignature } from "../api/dispatcher.js";
import type { BackendConfig } from "../backend/types.js";
import { printSchema, unambiguousName } from "../model/catalog.js";
import type { OperatorCatalog } from "../model/types.js";
import type { Diagnostic, SourceLoc } from "../util/errors.js";
import type { OutputFile } from "../write/files.js";
import { headerFileName } from "./header.js";
import { buildPlan, cmp, type KernelDecl, type Plan } from "./plan.js";
import { render } from "./templates.js";

const SOURCE_EXT = new Set([".cpp", ".cc", ".cxx", ".c++", ".cu", ".mm", ".h", ".hh", ".hpp", ".hxx", ".cuh"]);
const SKIP_DIRS = new Set(["node_modules", ".git", "build", "dist", "__pycache__"]);

export interface KernelDefinition {
  readonly name: string;
  readonly params: readonly string[];
  readonly raw: string;
  readonly loc: SourceLoc;
}

/** Source files under `p` (a file or a directory), sorted. */
export function sourceFiles(p: string): string[] {
  if (!existsSync(p)) return [];
  if (statSync(p).isFile()) return [p];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name) && !e.name.startsWith(".")) walk(full);
      } else if (e.isFile() && SOURCE_EXT.has(path.extname(e.name).toLowerCase())) {
        out.push(full);
      }
    }
  };
  walk(p);
  return out.sort(cmp);
}

/** Comments and string/char literals replaced by spaces (newlines kept, so offsets stay valid). */
export function blankCommentsAndStrings(src: string): string {
  const out = src.split("");
  let i = 0;
  const blank = (from: number, to: number) => {
    for (let j = from; j < to; j++) if (out[j] !== "\n") out[j] = " ";
  };
  while (i < src.length) {
    const c = src[i];
    if (c === "/" && src[i + 1] === "/") {
      const e = src.indexOf("\n", i);
      const end = e < 0 ? src.length : e;
      blank(i, end);
      i = end;
    } else if (c === "/" && src[i + 1] === "*") {
      const e = src.indexOf("*/", i + 2);
      const end = e < 0 ? src.length : e + 2;
      blank(i, end);
      i = end;
    } else if (c === '"' || c === "'") {
      // Raw strings are rare in kernels; treat R"( ... )" as ordinary text up to the closing delimiter.
      let j = i + 1;
      while (j < src.length && src[j] !== c && src[j] !== "\n") j += src[j] === "\\" ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else {
      i++;
    }
  }
  return out.join("");
}

function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, col: offset - last };
}

/** Top-level comma split of a parameter list. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "<" || ch === "(" || ch === "[" || ch === "{") depth++;
    else if (ch === ">" || ch === ")" || ch === "]" || ch === "}") depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else {
      cur += ch;
    }
  }
  if (cur.trim().length > 0 || parts.length > 0) parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0 && p !== "void");
}

const ALIASES: readonly [RegExp, string][] = [
  [/\bOptionalSymIntArrayRef\b/g, "OptionalArrayRef<SymInt>"],
  [/\bOptionalIntArrayRef\b/g, "OptionalArrayRef<int64_t>"],
  [/\bSymIntArrayRef\b/g, "ArrayRef<SymInt>"],
  [/\bIntArrayRef\b/g, "ArrayRef<int64_t>"],
  [/\bTensorList\b/g, "ArrayRef<Tensor>"],
];

/** Drops a trailing parameter name and default, normalizes spelling (Note [Finding definitions]). */
export function normalizeParam(param: string): string {
  let p = param;
  // default argument
  let depth = 0;
  for (let i = 0; i < p.length; i++) {
    const ch = p[i];
    if (ch === "<" || ch === "(" || ch === "[" || ch === "{") depth++;
    else if (ch === ">" || ch === ")" || ch === "]" || ch === "}") depth--;
    else if (ch === "=" && depth === 0) {
      p = p.slice(0, i);
      break;
    }
  }
  p = p.replace(/\s+/g, " ").trim();
  // trailing parameter name: an identifier after a type (`int64_t dim`, `const at::Tensor &self`)
  const m = /^(.*?)\s*\b([A-Za-z_]\w*)$/.exec(p);
  if (m) {
    const before = m[1]!.trim();
    const qualified = /:$/.test(before);
    const keywordOnly = /^(const|volatile|unsigned|signed|long|short|struct|class)$/.test(before);
    if (before.length > 0 && !qualified && !keywordOnly && /[\w>&*\]]$/.test(before)) p = before;
  }
  p = p.replace(/(^|[^\w])(::)?(at|c10|std)::/g, "$1").replace(/^::/, "");
  p = p.replace(/(^|[<(,\s])::/g, "$1");
  for (const [re, to] of ALIASES) p = p.replace(re, to);
  p = p.replace(/\s*([&*<>,()])\s*/g, "$1").trim();
  // `T const&` -> `const T&`
  const east = /^(.+?)\s*\bconst\s*(&|\*)?$/.exec(p);
  if (east && !east[1]!.startsWith("const ")) p = `const ${east[1]!.trim()}${east[2] ?? ""}`;
  // top-level const on a by-value parameter is not part of the signature
  if (/^const\s/.test(p) && !/[&*]$/.test(p)) p = p.replace(/^const\s+/, "");
  return p.replace(/\s+/g, " ");
}

export function normalizedParams(sig: DispatcherSignature): string[] {
  return sig.args.map((a) => normalizeParam(printCType(a.type)));
}

/** `ClassName::name(...)` definitions in `files` (Note [Finding definitions]). */
export function findDefinitions(files: readonly string[], className: string): KernelDefinition[] {
  const defs: KernelDefinition[] = [];
  const re = new RegExp(`\\b${className}\\s*::\\s*(~?[A-Za-z_]\\w*)\\s*\\(`, "g");
  for (const file of files) {
    const raw = readFileSync(file, "utf8");
    const text = blankCommentsAndStrings(raw);
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const open = m.index + m[0].length - 1;
      let depth = 0;
      let close = -1;
      for (let i = open; i < text.length; i++) {
        if (text[i] === "(") depth++;
        else if (text[i] === ")" && --depth === 0) {
          close = i;
          break;
        }
      }
      if (close < 0) continue;
      const after = text.slice(close + 1, close + 200).replace(/^\s*((const|noexcept|override|final)\b\s*)*/, "");
      if (!after.startsWith("{")) continue;
      const { line, col } = lineCol(text, m.index);
      const paramText = text.slice(open + 1, close);
      defs.push({
        name: m[1]!,
        params: splitTopLevel(paramText).map(normalizeParam),
        raw: `${className}::${m[1]}(${paramText.replace(/\s+/g, " ").trim()})`,
        loc: { file, line, col },
      });
    }
  }
  return defs;
}

function allKernels(plan: Plan): KernelDecl[] {
  return [...plan.backend.kernels, ...(plan.autograd?.kernels ?? [])];
}

function sameParams(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Declared kernels that have a matching definition in `defs`, by op name. */
function definedOps(plan: Plan, defs: readonly KernelDefinition[]): Set<string> {
  const byName = new Map<string, KernelDefinition[]>();
  for (const d of defs) byName.set(d.name, [...(byName.get(d.name) ?? []), d]);
  const ok = new Set<string>();
  for (const k of allKernels(plan)) {
    const want = normalizedParams(k.sig);
    if ((byName.get(k.sig.name) ?? []).some((d) => sameParams(d.params, want))) ok.add(k.op);
  }
  return ok;
}

/**
 * The missing-kernel check: every declared kernel must have a definition with
 * the declared parameter types somewhere under `implPath`. Errors cite the
 * definition that does not match (file:line:col) or, when there is none, the
 * YAML entry that asks for the kernel.
 */
export function missingKernels(config: BackendConfig, catalog: OperatorCatalog, implPath: string): Diagnostic[] {
  const plan = buildPlan(config, catalog);
  const files = sourceFiles(implPath);
  if (files.length === 0) {
    return [
      { severity: "error", message: `no C++ sources found at ${implPath}; --impl-path takes a file or directory` },
    ];
  }
  const defs = findDefinitions(files, config.className);
  const byName = new Map<string, KernelDefinition[]>();
  for (const d of defs) byName.set(d.name, [...(byName.get(d.name) ?? []), d]);
  const kernels = allKernels(plan);
  const declared = new Map<string, KernelDecl[]>();
  for (const k of kernels) declared.set(k.sig.name, [...(declared.get(k.sig.name) ?? []), k]);

  const out: Diagnostic[] = [];
  const used = new Set<KernelDefinition>();
  for (const k of kernels) {
    const want = normalizedParams(k.sig);
    const cands = byName.get(k.sig.name) ?? [];
    const exact = cands.find((d) => sameParams(d.params, want));
    if (exact) {
      used.add(exact);
      continue;
    }
    const expected = `${config.className}::${k.sig.decl().replace(/^.*? (?=\w+\()/, "")}`;
    out.push({
      severity: "error",
      loc: k.entry.loc,
      message:
        cands.length === 0
          ? `no definition of ${expected} for ${k.op} under ${implPath}`
          : `no definition of ${config.className}::${k.sig.name} for ${k.op} has the declared parameters; expected ${expected}`,
    });
  }
  for (const d of defs) {
    if (used.has(d)) continue;
    const decls = declared.get(d.name);
    if (!decls) continue; // helpers of the class that the header does not declare are the vendor's business
    const sameArity = decls.filter((k) => k.sig.args.length === d.params.length);
    const best = sameArity.length > 0 ? sameArity : decls;
    const k = best[0]!;
    const want = normalizedParams(k.sig);
    const diff = d.params.findIndex((p, i) => p !== want[i]);
    const detail =
      d.params.length !== want.length
        ? `it has ${d.params.length} parameters, ${k.op} takes ${want.length}`
        : `parameter ${diff + 1} is '${d.params[diff]}', ${k.op} declares '${want[diff]}'`;
    out.push({
      severity: "error",
      loc: d.loc,
      message: `${d.raw} does not match any declared overload of ${config.className}::${d.name}: ${detail}`,
    });
  }
  return out;
}

export interface StubOptions {
  /** Directories (or files) whose sources may already define kernels; stubs are written only for the rest. */
  readonly existingDirs?: readonly string[];
}

/** `ret Class::name(const at::Tensor & /*self*\/, ...)` — names commented out so -Wunused-parameter stays quiet. */
function stubSignature(config: BackendConfig, sig: DispatcherSignature): string {
  const params = sig.args.map((a) => `${printCType(a.type)} /*${a.name}*/`).join(", ");
  return `${printCType(sig.returns)} ${config.className}::${sig.name}(${params})`;
}

/**
 * `gen --stubs DIR`: one compilable `<op>.cpp` per declared kernel that no
 * source under `existingDirs` defines yet. Files are create-only: the writer
 * never overwrites one.
 */
export function kernelStubs(config: BackendConfig, catalog: OperatorCatalog, opts: StubOptions = {}): OutputFile[] {
  const plan = buildPlan(config, catalog);
  const files = (opts.existingDirs ?? []).flatMap(sourceFiles);
  const defined = definedOps(plan, findDefinitions(files, config.className));
  const out: OutputFile[] = [];
  const seen = new Set<string>();
  for (const k of allKernels(plan)) {
    if (defined.has(k.op) || seen.has(k.op)) continue;
    seen.add(k.op);
    out.push({
      path: `${unambiguousName(k.f.func.name)}.cpp`,
      createOnly: true,
      content: render("kernel_stub.cpp.hbs", {
        device: config.device,
        schemas: [printSchema(k.f.func)],
        headerName: headerFileName(plan),
        cppNamespace: config.cppNamespace,
        kernels: [{ signature: stubSignature(config, k.sig), op: k.op, device: config.device }],
      }),
    });
  }
  return out.sort((a, b) => cmp(a.path, b.path));
}
