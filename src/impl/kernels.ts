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
 *
 * Note [Finding free definitions]: free-function kernels (Note [Kernel home])
 * have no class name to search for, so the scanner follows the file's scopes
 * instead: braces, `namespace a::b {` (nested, inline and anonymous ones),
 * `extern "C"` blocks and namespace aliases, with comments, strings and
 * preprocessor lines blanked. A function definition at namespace scope whose
 * name is a kernel's is that kernel when the namespace it lands in (the
 * enclosing namespaces plus what its name is qualified with: both `at::Tensor
 * at::mychip::abs(...)` and `abs(...)` inside `namespace at::mychip {`) is
 * cpp_namespace and it links from another translation unit. One that is named
 * like a missing kernel but does not (in an anonymous namespace, `static`,
 * `inline`, `extern "C"`, another namespace) is reported with why, and so is
 * anything the scanner cannot follow (unbalanced braces, e.g. from macros or
 * `#if` branches), rather than counted or dropped silently. Definitions a macro
 * expands to are not seen. Other definitions in cpp_namespace, overloads and
 * kernels the YAML does not list, are the vendor's business.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { printCType } from "../api/ctype.js";
import type { DispatcherSignature } from "../api/dispatcher.js";
import type { BackendConfig } from "../backend/types.js";
import { type KernelDecl, kernelsOf, type Plan } from "../dest/plan.js";
import { emitKernelStubs } from "../dest/stubs.js";
import { assertNever, type Diagnostic, type SourceLoc } from "../util/errors.js";
import { cmp } from "../vocab.js";
import type { OutputFile } from "../write/files.js";

const SOURCE_EXT = new Set([".cpp", ".cc", ".cxx", ".c++", ".cu", ".mm", ".h", ".hh", ".hpp", ".hxx", ".cuh"]);
const SKIP_DIRS = new Set(["node_modules", ".git", "build", "dist", "__pycache__"]);

export interface KernelDefinition {
  readonly name: string;
  readonly params: readonly string[];
  /** What is defined, for messages: `Class::name(<params as written>)`, `at::mychip::name(...)`. */
  readonly raw: string;
  readonly loc: SourceLoc;
  /**
   * The return type, normalized like parameters, where it must be compared:
   * for a free function (Note [Free kernels' return types]); null for a member
   * (the compiler compares it with the struct's declaration) or when the
   * scanner cannot tell it from what precedes it.
   */
  readonly returns: string | null;
  /**
   * Null when Register<Backend>.cpp links to this definition if its signature
   * matches; else why it cannot (Note [Finding free definitions]).
   */
  readonly notKernel: string | null;
}

/** The definitions found in kernel sources, and what the scanner could not follow there. */
export interface DefinitionScan {
  readonly definitions: readonly KernelDefinition[];
  /** Warnings with file:line:col (Note [Finding free definitions]). */
  readonly problems: readonly Diagnostic[];
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

/** The kernel definitions in `files`, wherever the backend's kernels live (Note [Kernel home]). */
export function findDefinitions(files: readonly string[], config: BackendConfig): DefinitionScan {
  const home = config.kernelHome;
  let scan: DefinitionScan;
  switch (home.kind) {
    case "class":
      scan = { definitions: memberDefinitions(files, home.className), problems: [] };
      break;
    case "free": {
      const definitions: KernelDefinition[] = [];
      const problems: Diagnostic[] = [];
      for (const file of files) freeDefinitions(file, readFileSync(file, "utf8"), config, definitions, problems);
      scan = { definitions, problems };
      break;
    }
    default:
      return assertNever(home, "kernel home");
  }
  const { everywhere, byFile } = typeAliases(files);
  if (byFile.size === 0) return scan;
  return {
    ...scan,
    definitions: scan.definitions.map((d) => {
      // the definition's own file first: two files may give one name two types
      const own = byFile.get(d.loc.file);
      const aliases = own === undefined ? everywhere : new Map([...everywhere, ...own]);
      const expand = (t: string) => expandAliases(t, aliases);
      return { ...d, params: d.params.map(expand), returns: d.returns === null ? null : expand(d.returns) };
    }),
  };
}

/**
 * Note [Type aliases in kernel sources]: a kernel may spell a type through an
 * alias of the vendor's (`using Tensors = std::tuple<at::Tensor, at::Tensor,
 * at::Tensor>;`, `typedef ... Name;`), which the compiler sees through and
 * the signature comparison must too. Aliases are collected at namespace
 * scope from every scanned file. A definition sees its own file's aliases
 * first, then those of the other files (a header's) whose name no two files
 * give two types: kernel sources may reuse a name (Norm.cpp's `Tensors` is a
 * tuple, the runtime's Distributed.cpp's a vector). A name one file aliases
 * to two types is left unexpanded there, as are alias templates.
 */
function typeAliases(files: readonly string[]): {
  everywhere: Map<string, string>;
  byFile: Map<string, Map<string, string>>;
} {
  const found = new Map<string, string | null>();
  const byFile = new Map<string, Map<string, string>>();
  const add = (into: Map<string, string | null>, name: string, t: string) => {
    const had = into.get(name);
    into.set(name, had === undefined || had === t ? t : null);
  };
  const usable = (m: Map<string, string | null>) => {
    const out = new Map<string, string>();
    for (const [name, type] of m) if (type !== null && type !== name) out.set(name, type);
    return out;
  };
  for (const file of files) {
    const text = blankDirectives(blankCommentsAndStrings(readFileSync(file, "utf8")));
    const atNamespaceScope = namespaceScopes(text);
    const own = new Map<string, string | null>();
    const both = (name: string, type: string) => {
      const t = normalizeParam(type);
      add(own, name, t);
      add(found, name, t);
    };
    for (const m of text.matchAll(/(?:^|[;{}])\s*using\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);/g)) {
      if (atNamespaceScope(m.index + m[0].length - 1)) both(m[1]!, m[2]!);
    }
    for (const m of text.matchAll(/(?:^|[;{}])\s*typedef\s+([^;{}()]+?)\s+([A-Za-z_]\w*)\s*;/g)) {
      if (atNamespaceScope(m.index + m[0].length - 1)) both(m[2]!, m[1]!);
    }
    if (own.size > 0) byFile.set(file, usable(own));
  }
  return { everywhere: usable(found), byFile };
}

/**
 * Whether an offset of `text` (comments, strings and directives blanked) lies
 * at namespace scope: every brace around it opens a namespace or an
 * `extern "C"` block, none a function body or a class.
 */
function namespaceScopes(text: string): (offset: number) => boolean {
  const opens: number[] = []; // offsets of the open `{`s that open something else
  const spans: [number, number][] = [];
  const stack: boolean[] = [];
  let stmt = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{") {
      const head = text.slice(stmt, i);
      const ns = /(?:\bnamespace(?:\s+[\w:]+)?|\bextern\s*"\s*")\s*$/.test(head);
      stack.push(ns);
      if (!ns) opens.push(i);
      stmt = i + 1;
    } else if (c === "}") {
      if (stack.pop() === false) spans.push([opens.pop()!, i]);
      stmt = i + 1;
    } else if (c === ";") {
      stmt = i + 1;
    }
  }
  return (offset) => !spans.some(([a, b]) => a < offset && offset < b) && !opens.some((a) => a < offset);
}

/** `t` (normalized) with the aliases it names replaced by their types, aliases of aliases too. */
function expandAliases(t: string, aliases: ReadonlyMap<string, string>): string {
  let out = t;
  for (let pass = 0; pass < 8; pass++) {
    const next = out.replace(
      /\b(?:[A-Za-z_]\w*::)*([A-Za-z_]\w*)\b/g,
      (whole, name: string) => aliases.get(name) ?? whole,
    );
    if (next === out) break;
    out = next;
  }
  return normalizeParam(out);
}

/** `ClassName::name(...)` definitions in `files` (Note [Finding definitions]). */
function memberDefinitions(files: readonly string[], className: string): KernelDefinition[] {
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
        returns: null,
        notKernel: null,
      });
    }
  }
  return defs;
}

/**
 * Preprocessor lines (with their `\` continuations) blanked, and of each
 * `#if`/`#elif`/`#else` group every branch but the first (the second when the
 * first is `#if 0`), so the scanner follows one configuration of the file
 * rather than the braces of all of them. Offsets are kept.
 */
export function blankDirectives(text: string): string {
  const out = text.split("");
  const groups: { keep: boolean; taken: boolean }[] = [];
  const live = () => groups.every((g) => g.keep);
  let lineStart = 0;
  let continued = false;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && text[i] !== "\n") continue;
    const line = text.slice(lineStart, i);
    const directive = continued ? null : /^\s*#\s*(\w*)(.*)$/.exec(line);
    if (directive) {
      const [, word, rest] = directive;
      if (word === "if" || word === "ifdef" || word === "ifndef") {
        const keep = live() && !(word === "if" && /^\s*0\s*$/.test(rest!));
        groups.push({ keep, taken: keep });
      } else if ((word === "elif" || word === "else") && groups.length > 0) {
        const g = groups.pop()!;
        g.keep = live() && !g.taken;
        g.taken ||= g.keep;
        groups.push(g);
      } else if (word === "endif") groups.pop();
    }
    if (continued || directive || !live()) for (let j = lineStart; j < i; j++) out[j] = " ";
    if (continued || directive) continued = /\\\s*$/.test(line);
    lineStart = i + 1;
  }
  return out.join("");
}

/** A `{ ... }` the free-definition scanner is inside. */
type Scope =
  /** `namespace a::b {` (parts a, b), or `namespace {` (anonymous, no parts) */
  | { readonly kind: "namespace"; readonly parts: readonly string[]; readonly anonymous: boolean; readonly at: number }
  /** `extern "C" {` / `extern "C++" {` */
  | { readonly kind: "linkage"; readonly c: boolean; readonly at: number }
  /** anything else: a function body, a class, an initializer */
  | { readonly kind: "other"; readonly at: number };

/** A qualifier as written, `at::mychip::` or `::at::mychip::`. */
interface Qualifier {
  readonly absolute: boolean;
  readonly parts: readonly string[];
}

function parseQualifier(s: string): Qualifier {
  const t = s.replace(/\s+/g, "");
  const absolute = t.startsWith("::");
  return { absolute, parts: t.split("::").filter((p) => p.length > 0) };
}

const NAMESPACE_HEAD =
  /(?:^|[^\w:])(?:inline\s+)?namespace\s+((?:inline\s+)?[A-Za-z_]\w*(?:\s*::\s*(?:inline\s+)?[A-Za-z_]\w*)*)\s*$/;
const ANONYMOUS_HEAD = /(?:^|[^\w:])(?:inline\s+)?namespace\s*$/;
const LINKAGE_HEAD = /(?:^|[^\w:])extern\s*("[^"\n]*")\s*$/;
const ALIAS_HEAD = /(?:^|[^\w:])namespace\s+([A-Za-z_]\w*)\s*=\s*((?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*$/;
/** A (possibly qualified) name followed by `(`: a declarator, or a call, a cast, a macro. */
const DECLARATOR = /(?<![\w:.~])((?:::\s*)?(?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*)\s*\(/g;
/** What may follow a function definition's parameter list before its `{`. */
const TRAILER = /^\s*(?:(?:const|noexcept|override|final)\b\s*)*(?:->[\s\S]*)?$/;

/** The closing parenthesis of the one at `open`, or -1. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i;
  }
  return -1;
}

/**
 * The function definition whose body a `{` after `head` opens, or null: the
 * first name followed by a balanced parameter list that only qualifiers (or a
 * trailing return type, `-> decltype(x)` included) separate from the `{`,
 * with a return type before it (text a macro without `;` left before the
 * return type does not qualify: what follows its `)` is not a trailer).
 * Templates are skipped: a template is never the kernel.
 */
function functionHead(head: string): {
  readonly index: number;
  readonly qualifier: string;
  readonly name: string;
  readonly params: string;
  readonly trailer: string;
} | null {
  let found: { index: number; qualifier: string; name: string; params: string; trailer: string } | null = null;
  let depth = 0;
  let scanned = 0;
  for (const m of head.matchAll(DECLARATOR)) {
    for (; scanned < m.index; scanned++) {
      if (head[scanned] === "(") depth++;
      else if (head[scanned] === ")") depth--;
    }
    if (depth !== 0) continue;
    const open = m.index + m[0].length - 1;
    const close = closingParen(head, open);
    const trailer = head.slice(close + 1);
    if (close < 0 || !TRAILER.test(trailer)) continue;
    found = { index: m.index, qualifier: m[1]!, name: m[2]!, params: head.slice(open + 1, close), trailer };
    break;
  }
  if (found === null) return null;
  const prefix = head.slice(0, found.index);
  if (!/[A-Za-z_]/.test(prefix) || /\btemplate\b/.test(prefix)) return null;
  return found;
}

/**
 * Note [Free kernels' return types]: the Itanium ABI does not mangle a
 * (non-template) function's return type into its symbol, so a free kernel
 * defined with the declared parameters and another return type links
 * without complaint and is undefined behaviour when called; a member
 * definition cannot get that far (its struct's declaration is visible). So
 * for free functions the check compares return types too. The return type is
 * what precedes the name once attributes, `static`/`inline`/`extern`/
 * `constexpr` and all-capitals macros (`TORCH_API`, `C10_EXPORT(...)`) are
 * removed, or the trailing return type after `auto`; null when that leaves
 * nothing that looks like a type.
 */
function returnType(specifiers: string, trailer: string): string | null {
  const arrow = /->([\s\S]*)$/.exec(trailer);
  const t = (arrow ? arrow[1]! : specifiers)
    .replace(/\[\[[\s\S]*?\]\]/g, " ")
    .replace(/\bextern\s*"[^"]*"/g, " ")
    .replace(/\b[A-Z][A-Z0-9_]*\s*\([^()]*\)/g, " ")
    .replace(/\b(?:static|inline|extern|constexpr|consteval|[A-Z][A-Z0-9_]*)\b/g, " ")
    .trim();
  if (t === "" || t === "auto" || /[()[\];{}=]/.test(t)) return null;
  return normalizeParam(t);
}

/**
 * Free function definitions at namespace scope in one file (Note [Finding
 * free definitions]), appended to `defs`; what the scanner cannot follow is
 * appended to `problems` (one per file).
 */
function freeDefinitions(
  file: string,
  raw: string,
  config: BackendConfig,
  defs: KernelDefinition[],
  problems: Diagnostic[],
): void {
  const text = blankDirectives(blankCommentsAndStrings(raw));
  const trouble = walkScopes(text, raw, (headAt, head, around) => {
    const d = freeDefinition({ file, text, raw, config }, headAt, head, around);
    if (d) defs.push(d);
  });
  if (trouble !== undefined) {
    const { line, col } = lineCol(text, trouble.at);
    problems.push({
      severity: "warning",
      loc: { file, line, col },
      message: `${trouble.message} (a brace or parenthesis from a macro or an #if branch?), so it may miss or misplace the kernels defined in this file; keep braces balanced outside macros`,
    });
  }
}

/** `namespace x = a::b;`: the scope it was declared in (lookup of a::b starts there) and what it names. */
interface NamespaceAlias {
  readonly scope: readonly string[];
  readonly q: Qualifier;
}

/** What encloses a `{`: its scopes (innermost last) and the namespace aliases declared before it. */
interface Around {
  readonly stack: readonly Scope[];
  readonly aliases: ReadonlyMap<string, NamespaceAlias>;
}

/** Where the scanner lost track of the file's braces. */
interface Trouble {
  readonly at: number;
  readonly message: string;
}

/**
 * Follows the braces of `text` (comments, strings and directives blanked;
 * `raw` for the strings of `extern "..."`): namespaces, linkage blocks and
 * aliases, and every other `{` at namespace scope, whose head `onBody` gets
 * as a possible function definition. Returns the first place it lost track
 * of the braces, if any.
 */
function walkScopes(
  text: string,
  raw: string,
  onBody: (headAt: number, head: string, around: Around) => void,
): Trouble | undefined {
  const aliases = new Map<string, NamespaceAlias>();
  const stack: Scope[] = [];
  let others = 0;
  let paren = 0;
  let headStart = 0;
  const troubles: Trouble[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") {
      paren++;
      continue;
    }
    if (c === ")") {
      if (paren > 0) paren--;
      else troubles.push({ at: i, message: "this ) closes no ( the kernel check saw" });
      continue;
    }
    if (paren > 0 || (c !== "{" && c !== "}" && c !== ";")) continue;
    const head = text.slice(headStart, i);
    if (c === ";") {
      const alias = others === 0 ? ALIAS_HEAD.exec(head) : null;
      if (alias) aliases.set(alias[1]!, { scope: namespacePath(stack), q: parseQualifier(alias[2]!) });
    } else if (c === "}") {
      const s = stack.pop();
      if (s === undefined) troubles.push({ at: i, message: "this } closes no { the kernel check saw" });
      else if (s.kind === "other") others--;
    } else if (others > 0) {
      stack.push({ kind: "other", at: i });
      others++;
    } else {
      const ns = NAMESPACE_HEAD.exec(head);
      const linkage = ns ? null : LINKAGE_HEAD.exec(head);
      if (ns) {
        const parts = ns[1]!.split("::").map((p) => p.trim().replace(/^inline\s+/, ""));
        stack.push({ kind: "namespace", parts, anonymous: false, at: i });
      } else if (ANONYMOUS_HEAD.test(head)) {
        stack.push({ kind: "namespace", parts: [], anonymous: true, at: i });
      } else if (linkage) {
        const open = headStart + linkage.index + linkage[0].indexOf('"');
        stack.push({ kind: "linkage", c: raw.slice(open + 1, raw.indexOf('"', open + 1)) === "C", at: i });
      } else {
        onBody(headStart, head, { stack, aliases });
        stack.push({ kind: "other", at: i });
        others++;
      }
    }
    headStart = i + 1;
  }
  const open = stack[stack.length - 1];
  if (open) troubles.push({ at: open.at, message: "this { is never closed as the kernel check reads the file" });
  else if (paren > 0)
    troubles.push({ at: text.length, message: "a ( is never closed as the kernel check reads the file" });
  return troubles[0];
}

function namespacePath(stack: readonly Scope[]): string[] {
  return stack.flatMap((s) => (s.kind === "namespace" ? s.parts : []));
}

/** The namespaces `q::` written inside `around` may name: lookup goes from the innermost outwards. */
function candidates(q: Qualifier, around: Around): string[][] {
  let scope = namespacePath(around.stack);
  let { absolute, parts } = q;
  const alias = !absolute && parts.length > 0 ? around.aliases.get(parts[0]!) : undefined;
  if (alias) {
    scope = [...alias.scope];
    absolute = alias.q.absolute;
    parts = [...alias.q.parts, ...parts.slice(1)];
  }
  if (parts.length === 0) return [scope];
  if (absolute) return [[...parts]];
  const out: string[][] = [];
  for (let k = scope.length; k >= 0; k--) out.push([...scope.slice(0, k), ...parts]);
  return out;
}

/** The file a definition is read from: its path, its blanked text, its raw text, and the backend. */
interface FileScan {
  readonly file: string;
  readonly text: string;
  readonly raw: string;
  readonly config: BackendConfig;
}

/** The function `head` defines at headAt (before a `{` at namespace scope), or null: not a function definition. */
function freeDefinition(f: FileScan, headAt: number, head: string, around: Around): KernelDefinition | null {
  const fn = functionHead(head);
  if (!fn) return null;
  const kernelNs = f.config.cppNamespace;
  const q = parseQualifier(fn.qualifier);
  const cands = candidates(q, around).map((c) => c.join("::"));
  const anonymous = q.parts.length === 0 && around.stack.some((s) => s.kind === "namespace" && s.anonymous);
  const specifiers = head.slice(0, fn.index);
  const cLinkage = around.stack.some((s) => s.kind === "linkage" && s.c) || externC(f.raw, specifiers, headAt);
  const inKernelNs = cands.includes(kernelNs);
  let where = inKernelNs ? kernelNs : cands[0]!;
  if (anonymous) {
    where = around.stack
      .flatMap((s) => (s.kind !== "namespace" ? [] : s.anonymous ? ["(anonymous namespace)"] : s.parts))
      .join("::");
  }
  const qualified = where === "" ? `::${fn.name}` : `${where}::${fn.name}`;
  const { line, col } = lineCol(f.text, headAt + fn.index);
  return {
    name: fn.name,
    params: splitTopLevel(fn.params).map(normalizeParam),
    raw: `${qualified}(${fn.params.replace(/\s+/g, " ").trim()})`,
    loc: { file: f.file, line, col },
    returns: returnType(specifiers, fn.trailer),
    notKernel: linkProblem(f.config, fn.name, { where, inKernelNs, anonymous, specifiers, cLinkage }),
  };
}

/**
 * Why Register<Backend>.cpp cannot link to a definition of kernel `name`
 * that lands in `where`, or null (Note [Finding free definitions]).
 */
function linkProblem(
  config: BackendConfig,
  name: string,
  d: {
    readonly where: string;
    readonly inKernelNs: boolean;
    readonly anonymous: boolean;
    readonly specifiers: string;
    readonly cLinkage: boolean;
  },
): string | null {
  const kernelNs = config.cppNamespace;
  const register = `Register${config.backend}.cpp`;
  const cantLink = `so ${register} cannot link to it`;
  if (!d.inKernelNs) {
    const scope = d.where === "" ? "the global namespace" : d.where;
    return `its scope is ${scope}, not ${kernelNs}; define the kernel in namespace ${kernelNs}`;
  }
  if (d.anonymous) {
    return `it is in an anonymous namespace (internal linkage), ${cantLink}; define it outside the anonymous namespace`;
  }
  if (/\bstatic\b/.test(d.specifiers)) return `it is static (internal linkage), ${cantLink}; remove static`;
  if (/\b(?:inline|constexpr|consteval)\b/.test(d.specifiers)) {
    return `it is inline, so it is compiled only where it is called and ${register} cannot link to it; remove inline (or constexpr)`;
  }
  if (d.cLinkage) {
    return `it has C linkage (extern "C"), so it is not the C++ function ${kernelNs}::${name}; define it outside extern "C"`;
  }
  return null;
}

/** `extern "C"` among a declaration's specifiers at `at` (string contents are blanked in the scanned text: read them from `raw`). */
function externC(raw: string, specifiers: string, at: number): boolean {
  const m = /\bextern\s*"/.exec(specifiers);
  if (!m) return false;
  const open = at + m.index + m[0].length - 1;
  return raw.slice(open + 1, raw.indexOf('"', open + 1)) === "C";
}

/** How messages name a kernel: `MychipNativeFunctions::add` (as torchgen's --impl-path does), or `at::mychip::add`. */
function kernelName(config: BackendConfig, name: string): string {
  const home = config.kernelHome;
  switch (home.kind) {
    case "class":
      return `${home.className}::${name}`;
    case "free":
      return `${config.cppNamespace}::${name}`;
    default:
      return assertNever(home, "kernel home");
  }
}

/**
 * How definition d differs from kernel k's declaration (same name assumed),
 * or null when it is that kernel's signature: parameters, and the return type
 * where d has one to compare (Note [Free kernels' return types]).
 */
function signatureDiff(d: KernelDefinition, k: KernelDecl): string | null {
  const want = normalizedParams(k.sig);
  if (d.params.length !== want.length)
    return `it has ${d.params.length} parameters, ${k.entry.name} takes ${want.length}`;
  const i = d.params.findIndex((p, j) => p !== want[j]);
  if (i >= 0) return `parameter ${i + 1} is '${d.params[i]}', ${k.entry.name} declares '${want[i]}'`;
  const returns = normalizeParam(printCType(k.sig.returns));
  if (d.returns !== null && d.returns !== returns)
    return `it returns '${d.returns}', ${k.entry.name} returns '${returns}'`;
  return null;
}

/** Whether `d` is a definition of kernel k that Register<Backend>.cpp links to. */
function defines(d: KernelDefinition, k: KernelDecl): boolean {
  return d.notKernel === null && d.name === k.sig.name && signatureDiff(d, k) === null;
}

/** Declared kernels that have a matching definition in `defs`, by op name. */
function definedOps(plan: Plan, defs: readonly KernelDefinition[]): Set<string> {
  const byName = groupByName(defs);
  const ok = new Set<string>();
  for (const k of kernelsOf(plan)) {
    if ((byName.get(k.sig.name) ?? []).some((d) => defines(d, k))) ok.add(k.entry.name);
  }
  return ok;
}

function groupByName<T extends { readonly name: string }>(xs: readonly T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const l = m.get(x.name);
    if (l) l.push(x);
    else m.set(x.name, [x]);
  }
  return m;
}

/**
 * The missing-kernel check: every declared kernel must have a definition with
 * the declared parameter types (and, for free functions, return type: Note
 * [Free kernels' return types]) somewhere under `implPath`. Errors cite the
 * definition that does not match (file:line:col) or, when there is none, the
 * YAML entry that asks for the kernel.
 *
 * A member definition named like a kernel that matches no declaration is an
 * error (the struct declares no such member). A free function named like a
 * kernel is only reported when a kernel of that name is missing: as a
 * mismatch when it has another signature, with why it is not the kernel when
 * it has the kernel's; otherwise it is an overload or helper of the vendor's
 * (Note [Finding free definitions]).
 */
export function missingKernels(plan: Plan, implPath: string): Diagnostic[] {
  const config = plan.config;
  const files = sourceFiles(implPath);
  if (files.length === 0) {
    return [
      { severity: "error", message: `no C++ sources found at ${implPath}; --impl-path takes a file or directory` },
    ];
  }
  const scan = findDefinitions(files, config);
  const byName = groupByName(scan.definitions);
  const kernels = kernelsOf(plan);
  const declared = groupByName(kernels.map((k) => ({ name: k.sig.name, k })));
  const free = config.kernelHome.kind === "free";
  const what = free ? "signature" : "parameters";

  const out: Diagnostic[] = [...scan.problems];
  const used = new Set<KernelDefinition>();
  const missing = new Set<KernelDecl>();
  for (const k of kernels) {
    const cands = (byName.get(k.sig.name) ?? []).filter((d) => d.notKernel === null);
    const exact = cands.filter((d) => defines(d, k));
    if (exact.length > 0) {
      // Several: one per build variant, say; the linker reports real duplicates.
      for (const d of exact) used.add(d);
      continue;
    }
    missing.add(k);
    // Free functions: with the return type, which the check compares (members: the compiler does).
    const decl = k.sig.decl(kernelName(config, k.sig.name));
    const expected = free ? decl : decl.replace(/^.*? (?=[\w:]+\()/, "");
    out.push({
      severity: "error",
      loc: k.entry.loc,
      message:
        cands.length === 0
          ? `no definition of ${expected} for ${k.entry.name} under ${implPath}`
          : `no definition of ${kernelName(config, k.sig.name)} for ${k.entry.name} has the declared ${what}; expected ${expected}`,
    });
  }
  for (const d of scan.definitions) {
    if (used.has(d)) continue;
    const all = (declared.get(d.name) ?? []).map((x) => x.k);
    // Members: helpers of the class that the header does not declare are the vendor's business.
    // Free functions: only near misses of a missing kernel are worth a word.
    const decls = free ? all.filter((k) => missing.has(k)) : all;
    if (decls.length === 0) continue;
    if (d.notKernel !== null) {
      const k = decls.find((x) => signatureDiff(d, x) === null);
      if (k) {
        out.push({
          severity: "error",
          loc: d.loc,
          message: `${d.raw} is not the kernel ${kernelName(config, k.sig.name)} for ${k.entry.name}: ${d.notKernel}`,
        });
      }
      continue;
    }
    if (all.some((k) => signatureDiff(d, k) === null)) continue; // a second definition of a kernel
    const sameArity = decls.filter((k) => k.sig.args.length === d.params.length);
    const k = (sameArity.length > 0 ? sameArity : decls)[0]!;
    out.push({
      severity: "error",
      loc: d.loc,
      message: `${d.raw} does not match any declared overload of ${kernelName(config, d.name)}: ${signatureDiff(d, k)}`,
    });
  }
  return out;
}

export interface StubOptions {
  /** Directories (or files) whose sources may already define kernels; stubs are written only for the rest. */
  readonly existingDirs?: readonly string[];
}

/** `gen --stubs DIR`: a stub per declared kernel that no source under `existingDirs` defines yet. */
export function kernelStubs(plan: Plan, opts: StubOptions = {}): OutputFile[] {
  const files = (opts.existingDirs ?? []).flatMap(sourceFiles);
  const defs = findDefinitions(files, plan.config).definitions;
  return emitKernelStubs(plan, definedOps(plan, defs), new Set(defs.map((d) => d.name)));
}
