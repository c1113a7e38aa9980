/**
 * The private PyTorch Python APIs a project's package relies on, for
 * `opgen-backend upgrade`: the definitions the scaffold's Inductor, Dynamo
 * and c10d registrations call, subclass or override, read as source text
 * from the baseline torch and from the target, and compared signature by
 * signature.
 *
 * Note [Watched Python APIs]: WATCHED lists, per definition, the file inside
 * the torch package, its qualified name (`Class.method`, `Class.Nested.method`,
 * a module-level function, a class, or a class/module attribute) and the
 * scaffold file that uses it. It is derived from what
 * scaffolds/common/torch_{{name}}/_inductor.py, _compile.py and
 * _distributed.py actually call, subclass and override; a change there that
 * reaches another torch definition adds a row here. C++ bindings
 * (ProcessGroupGloo, torch._C) have no Python source and are not watched.
 * The target's files come out of its wheel with the operator YAMLs (Note
 * [Schemas from a wheel], PYTHON_API_FILES); an installed torch's from its
 * package directory.
 *
 * The scanner does not run Python: it blanks strings and comments (so a
 * docstring's example `class` or a `)` in a default string cannot confuse
 * it), walks `class X` bodies by indentation, takes `def name(` at the body's
 * indentation (the last one that is not `@overload`: the one Python keeps), its decorators, and
 * the balanced parameter list, and splits that at top-level commas. A method
 * a class does not define is looked up in its bases that the same file
 * defines (CustomGraphModulePass.uuid is CustomPassBase's). Parameters are
 * compared by name, kind (positional-only, positional, *args, keyword-only,
 * **kwargs) and whether they have a default; annotations and defaults are
 * compared after whitespace is normalized.
 *
 * What counts as a break (Note [Python API drift]): a positional parameter
 * added, removed or reordered (an override no longer takes what callers
 * pass, or a call passes the wrong thing), a parameter that lost its default,
 * a keyword-only parameter removed or added without a default, *args or
 * **kwargs removed, a staticmethod/classmethod/property decorator changed,
 * or the definition gone. Compatible: a keyword-only parameter added with a
 * default, *args/**kwargs added, an annotation or default changed, a class's
 * bases changed. The scaffold's `_keywords()` version gate takes keyword-only
 * arguments as they grow; a break needs the scaffold (and the projects made
 * from it) changed.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { cmp } from "../vocab.js";

export type WatchedKind = "def" | "class" | "attribute";

export interface WatchedDefinition {
  /** Inside the wheel / site-packages, e.g. torch/_inductor/codegen/common.py. */
  readonly file: string;
  /** Dotted inside the file: `register_backend_for_device`, `PythonWrapperCodegen.create`. */
  readonly name: string;
  readonly kind: WatchedKind;
  /** The project file that relies on it (the scaffold's path, as init writes it). */
  readonly usedBy: string;
}

const INDUCTOR = "torch_<name>/_inductor.py";
const COMPILE = "torch_<name>/_compile.py";
const DIST = "torch_<name>/_distributed.py";

const COMMON = "torch/_inductor/codegen/common.py";
const WRAPPER = "torch/_inductor/codegen/wrapper.py";
const CPP = "torch/_inductor/codegen/cpp.py";
const PASS = "torch/_inductor/custom_graph_pass.py";
const GRAPH = "torch/_inductor/graph.py";
const CONFIG = "torch/_inductor/config.py";
const DEVICE_INTERFACE = "torch/_dynamo/device_interface.py";
const C10D = "torch/distributed/distributed_c10d.py";

const w = (file: string, name: string, kind: WatchedKind, usedBy: string): WatchedDefinition => ({
  file,
  name,
  kind,
  usedBy,
});

/** Note [Watched Python APIs]. */
export const WATCHED: readonly WatchedDefinition[] = [
  // _inductor.py: register()
  w(COMMON, "register_backend_for_device", "def", INDUCTOR),
  w(COMMON, "register_device_op_overrides", "def", INDUCTOR),
  // OpOverrides(DeviceOpOverrides)
  w(COMMON, "DeviceOpOverrides", "class", INDUCTOR),
  ...["import_get_raw_stream_as", "set_device", "synchronize", "device_guard", "cpp_kernel_type"].map((m) =>
    w(COMMON, `DeviceOpOverrides.${m}`, "def", INDUCTOR),
  ),
  // Wrapper(Calls, PythonWrapperCodegen): overrides, and what the overrides call on self.
  w(WRAPPER, "PythonWrapperCodegen", "class", INDUCTOR),
  ...[
    "__init__",
    "create",
    "_generate_kernel_call_helper",
    "make_allocation",
    "write_header",
    "codegen_python_shape_tuple",
    "writeline",
  ].map((m) => w(WRAPPER, `PythonWrapperCodegen.${m}`, "def", INDUCTOR)),
  // SubgraphWrapper(Calls, SubgraphPythonWrapperCodegen), made by Wrapper.create.
  w(WRAPPER, "SubgraphPythonWrapperCodegen", "class", INDUCTOR),
  w(WRAPPER, "SubgraphPythonWrapperCodegen.__init__", "def", INDUCTOR),
  // DevicePass(CustomGraphModulePass)
  w(PASS, "CustomGraphModulePass", "class", INDUCTOR),
  w(PASS, "CustomGraphModulePass.__call__", "def", INDUCTOR),
  w(PASS, "CustomGraphModulePass.uuid", "def", INDUCTOR),
  // _scheduling(): CppScheduling, and the cuda kind's Refusing(CppScheduling).__init__
  w(CPP, "CppScheduling", "class", INDUCTOR),
  w(CPP, "CppScheduling.__init__", "def", INDUCTOR),
  // Calls._generate_kernel_call_helper: V.graph.get_current_device_or_throw()
  w(GRAPH, "GraphLowering.get_current_device_or_throw", "def", INDUCTOR),
  // Note [GPU-only fusion passes]: the config knobs a cpu-kind device turns off.
  ...[
    "loop_ordering_after_fusion",
    "loop_reindexing_after_fusion",
    "loop_index_inversion_in_fusion",
    "cuda_backend",
  ].map((k) => w(CONFIG, k, "attribute", INDUCTOR)),
  // _compile.py: _register() and Interface(DeviceInterface)
  w(DEVICE_INTERFACE, "register_interface_for_device", "def", COMPILE),
  w(DEVICE_INTERFACE, "DeviceInterface", "class", COMPILE),
  ...["device", "Event", "Stream", "Worker"].map((c) => w(DEVICE_INTERFACE, `DeviceInterface.${c}`, "class", COMPILE)),
  ...["set_device", "current_device", "get_device_properties"].map((m) =>
    w(DEVICE_INTERFACE, `DeviceInterface.Worker.${m}`, "def", COMPILE),
  ),
  ...[
    "current_device",
    "set_device",
    "maybe_exchange_device",
    "exchange_device",
    "device_count",
    "is_available",
    "synchronize",
    "stream",
    "current_stream",
    "set_stream",
    "_set_stream_by_id",
    "get_raw_stream",
    "get_compute_capability",
    "is_bf16_supported",
    "is_triton_capable",
  ].map((m) => w(DEVICE_INTERFACE, `DeviceInterface.${m}`, "def", COMPILE)),
  // _distributed.py: _register()
  w(C10D, "Backend", "class", DIST),
  w(C10D, "Backend.register_backend", "def", DIST),
  w(C10D, "Backend._plugins", "attribute", DIST),
];

/** The torch files WATCHED reads (what the wheel reader fetches besides the YAMLs). */
export const PYTHON_API_FILES: readonly string[] = [...new Set(WATCHED.map((d) => d.file))].sort(cmp);

// ---------------------------------------------------------------------------
// Scanning Python source text.

/**
 * `text` with the inside of every string literal and every comment blanked
 * (newlines kept), so brackets, colons and indentation can be
 * read off it; and `clean`: comments blanked, strings kept (for printing).
 * Both have `text`'s length, so indices carry over.
 */
export function maskPython(text: string): { masked: string; clean: string } {
  const m = text.split("");
  const c = text.split("");
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text[i]!;
    if (ch === "#") {
      while (i < n && text[i] !== "\n") {
        m[i] = " ";
        c[i] = " ";
        i++;
      }
      continue;
    }
    if (ch === '"' || ch === "'") {
      const triple = text.startsWith(ch.repeat(3), i);
      const q = triple ? ch.repeat(3) : ch;
      // Quotes blanked too: a closing triple quote alone on a line must not read as a dedent.
      for (let j = 0; j < q.length; j++) m[i + j] = " ";
      // A raw string's backslash still keeps the next quote inside the literal.
      i += q.length;
      while (i < n) {
        if (text[i] === "\\") {
          m[i] = " ";
          if (i + 1 < n && text[i + 1] !== "\n") m[i + 1] = " ";
          i += 2;
          continue;
        }
        if (text.startsWith(q, i)) {
          for (let j = 0; j < q.length; j++) m[i + j] = " ";
          i += q.length;
          break;
        }
        if (!triple && text[i] === "\n") break; // unterminated: stop at the line's end
        if (text[i] !== "\n") m[i] = " ";
        i++;
      }
      continue;
    }
    i++;
  }
  return { masked: m.join(""), clean: c.join("") };
}

interface Line {
  /** Offset of the line's first character. */
  readonly start: number;
  readonly indent: number;
  /** The masked line without its indentation. */
  readonly body: string;
  /** 1-based. */
  readonly number: number;
}

/** Logical starts are enough here: continuation lines sit inside brackets, which the caller skips. */
function linesOf(masked: string): Line[] {
  const out: Line[] = [];
  let start = 0;
  let number = 1;
  for (const raw of masked.split("\n")) {
    const body = raw.trimStart();
    out.push({ start, indent: raw.length - body.length, body: body.trimEnd(), number });
    start += raw.length + 1;
    number++;
  }
  return out;
}

/** Offset just past the bracket that closes the one at `open`. */
function closing(masked: string, open: number): number {
  let depth = 0;
  for (let i = open; i < masked.length; i++) {
    const ch = masked[i]!;
    if (ch === "(" || ch === "[" || ch === "{") depth++;
    else if (ch === ")" || ch === "]" || ch === "}") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return masked.length;
}

/** Top-level comma-separated pieces of masked[from, to) as [start, end) ranges. */
function splitTop(masked: string, from: number, to: number): [number, number][] {
  const out: [number, number][] = [];
  let depth = 0;
  let s = from;
  for (let i = from; i < to; i++) {
    const ch = masked[i]!;
    if (ch === "(" || ch === "[" || ch === "{") depth++;
    else if (ch === ")" || ch === "]" || ch === "}") depth--;
    else if (ch === "," && depth === 0) {
      out.push([s, i]);
      s = i + 1;
    }
  }
  out.push([s, to]);
  return out.filter(([a, b]) => masked.slice(a, b).trim() !== "");
}

interface Scope {
  readonly src: Source;
  /** Line indices [from, to) of the body. */
  readonly from: number;
  readonly to: number;
  /** The body's indentation. */
  readonly indent: number;
}

/** A Python file read for scanning (parsePython); scanning one file for many definitions reads it once. */
export interface Source {
  readonly text: string;
  readonly masked: string;
  readonly clean: string;
  readonly lines: readonly Line[];
}

export function parsePython(text: string): Source {
  const { masked, clean } = maskPython(text);
  return { text, masked, clean, lines: linesOf(masked) };
}

function depthChange(masked: string, from: number, to: number): number {
  let d = 0;
  for (let i = from; i < to; i++) {
    const ch = masked[i]!;
    if (ch === "(" || ch === "[" || ch === "{") d++;
    else if (ch === ")" || ch === "]" || ch === "}") d--;
  }
  return d;
}

/** The statements at a scope's own indentation (not lines that continue a bracket opened above). */
function* statements(scope: Scope): Generator<number> {
  const { lines, masked } = scope.src;
  let depth = 0;
  for (let k = scope.from; k < scope.to; k++) {
    const l = lines[k]!;
    if (l.body === "") continue;
    if (depth <= 0 && l.indent === scope.indent) yield k;
    depth += depthChange(masked, l.start, l.start + l.indent + l.body.length);
  }
}

/**
 * The body of the block whose header is line `k` (a header may span lines:
 * a long `def` or base list): the lines after it indented deeper, up to the
 * first statement that is not.
 */
function bodyOf(src: Source, k: number): Scope {
  const head = src.lines[k]!;
  let depth = 0;
  let from = k;
  do {
    const l = src.lines[from]!;
    depth += depthChange(src.masked, l.start, l.start + l.indent + l.body.length);
    from++;
  } while (depth > 0 && from < src.lines.length);
  let indent = -1;
  let to = from;
  depth = 0;
  for (let j = from; j < src.lines.length; j++) {
    const l = src.lines[j]!;
    if (l.body === "") continue;
    if (depth <= 0 && l.indent <= head.indent) break;
    if (indent < 0) indent = l.indent;
    depth += depthChange(src.masked, l.start, l.start + l.indent + l.body.length);
    to = j + 1;
  }
  return { src, from, to, indent: indent < 0 ? head.indent + 4 : indent };
}

const ident = (name: string) => name.replace(/[^\w]/g, "");

/** `class name` directly in the scope: its line index. */
function findClass(scope: Scope, name: string): number | null {
  const re = new RegExp(`^class\\s+${ident(name)}\\s*[(:]`);
  for (const k of statements(scope)) if (re.test(scope.src.lines[k]!.body)) return k;
  return null;
}

/** The decorators right above line k (names without arguments). */
function decoratorsAbove(src: Source, k: number, indent: number): string[] {
  const out: string[] = [];
  for (let j = k - 1; j >= 0; j--) {
    const l = src.lines[j]!;
    if (l.body === "") continue;
    if (l.indent !== indent || !l.body.startsWith("@")) break;
    out.unshift(l.body.slice(1).replace(/\(.*$/, "").trim());
  }
  return out;
}

export interface Found {
  readonly kind: WatchedKind;
  /** 1-based line of the definition. */
  readonly line: number;
  /** def: the decorators that change how it is called; class: none. */
  readonly decorators: readonly string[];
  /** def: its parameters; class: its bases (as parameters without kinds); attribute: none. */
  readonly params: readonly Param[];
  /** The class it was found in when that is a base of the one named. */
  readonly inheritedFrom: string | null;
}

export type ParamKind = "positional-only" | "positional" | "var-positional" | "keyword-only" | "var-keyword";

export interface Param {
  readonly name: string;
  readonly kind: ParamKind;
  /** Whitespace-normalized; "" when none. */
  readonly annotation: string;
  /** Whitespace-normalized; null when none. */
  readonly default: string | null;
}

const CALLING = new Set(["staticmethod", "classmethod", "property"]);

/** Whitespace normalized the way a formatter would print it: `Optional[ int ]` -> `Optional[int]`. */
function normalize(s: string): string {
  return s
    .replace(/\s+/g, " ")
    .replace(/([([{]) /g, "$1")
    .replace(/ ([)\]},])/g, "$1")
    .replace(/,(?=\S)/g, ", ")
    .replace(/,\s*([)\]}])/g, "$1")
    .trim();
}

/** The first top-level `ch` in masked[a, b) (`=` not part of ==, <=, >=, !=). */
function topLevel(masked: string, a: number, b: number, ch: string): number {
  let depth = 0;
  for (let i = a; i < b; i++) {
    const c = masked[i]!;
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    else if (c === ch && depth === 0) {
      if (ch === "=" && ("=<>!".includes(masked[i - 1] ?? "") || masked[i + 1] === "=")) continue;
      return i;
    }
  }
  return -1;
}

/** The parameters between masked[open] === "(" and its closing bracket. */
function paramsAt(src: Source, open: number): Param[] {
  const close = closing(src.masked, open) - 1;
  const out: Param[] = [];
  let kind: ParamKind = "positional";
  const pieces = splitTop(src.masked, open + 1, close);
  // A `/` marks everything before it positional-only.
  const slash = pieces.findIndex(([a, b]) => src.masked.slice(a, b).trim() === "/");
  pieces.forEach(([a, b], idx) => {
    const raw = src.masked.slice(a, b).trim();
    if (raw === "/") return;
    if (raw === "*") {
      kind = "keyword-only";
      return;
    }
    const colon = topLevel(src.masked, a, b, ":");
    const eq = topLevel(src.masked, a, b, "=");
    const nameEnd = [colon, eq].filter((x) => x >= 0).sort((x, y) => x - y)[0] ?? b;
    const name = src.clean.slice(a, nameEnd).trim();
    const annotation = colon >= 0 ? normalize(src.clean.slice(colon + 1, eq >= 0 && eq > colon ? eq : b)) : "";
    const dflt = eq >= 0 ? normalize(src.clean.slice(eq + 1, b)) : null;
    let k: ParamKind = idx < slash ? "positional-only" : kind;
    if (name.startsWith("**")) k = "var-keyword";
    else if (name.startsWith("*")) {
      k = "var-positional";
      kind = "keyword-only";
    }
    out.push({ name: name.replace(/^\*+/, ""), kind: k, annotation, default: dflt });
  });
  return out;
}

/**
 * The definition `qualname` (dotted) of `kind` in Python source `text`, or
 * null when the file does not define it (Note [Watched Python APIs]).
 */
export function findDefinition(text: string | Source, qualname: string, kind: WatchedKind): Found | null {
  const src = typeof text === "string" ? parsePython(text) : text;
  const top: Scope = { src, from: 0, to: src.lines.length, indent: 0 };
  return lookup(top, top, qualname.split("."), kind, null, new Set());
}

function lookup(
  top: Scope,
  scope: Scope,
  parts: readonly string[],
  kind: WatchedKind,
  inheritedFrom: string | null,
  seen: Set<string>,
): Found | null {
  const [head, ...rest] = parts;
  if (head === undefined) return null;
  const { src } = scope;
  if (rest.length > 0) {
    const k = findClass(scope, head);
    if (k === null) return null;
    const body = bodyOf(src, k);
    const direct = lookup(top, body, rest, kind, inheritedFrom, seen);
    if (direct || rest.length > 1) return direct;
    // Not in the class itself: its bases that this file defines at the top level.
    const line = src.lines[k]!;
    const open = line.start + line.indent + line.body.indexOf("(");
    if (line.body.indexOf("(") < 0) return null;
    for (const base of paramsAt(src, open)) {
      const name = base.name;
      if (!/^\w+$/.test(name) || seen.has(name)) continue;
      seen.add(name);
      const found = lookup(top, top, [name, ...rest], kind, name, seen);
      if (found) return found;
    }
    return null;
  }
  if (kind === "class") {
    const k = findClass(scope, head);
    if (k === null) return null;
    const line = src.lines[k]!;
    const paren = line.body.indexOf("(");
    const colon = line.body.indexOf(":");
    const bases = paren >= 0 && (colon < 0 || paren < colon) ? paramsAt(src, line.start + line.indent + paren) : [];
    return { kind, line: line.number, decorators: [], params: bases, inheritedFrom };
  }
  if (kind === "attribute") {
    const re = new RegExp(`^${ident(head)}\\s*(:|=(?!=))`);
    for (const k of statements(scope)) {
      if (re.test(src.lines[k]!.body)) {
        return { kind, line: src.lines[k]!.number, decorators: [], params: [], inheritedFrom };
      }
    }
    return null;
  }
  // The last definition is the one Python keeps (after @overload stubs, or a redefinition).
  const re = new RegExp(`^(async\\s+)?def\\s+${ident(head)}\\s*\\(`);
  let found: Found | null = null;
  for (const k of statements(scope)) {
    const line = src.lines[k]!;
    if (!re.test(line.body)) continue;
    const decorators = decoratorsAbove(src, k, line.indent);
    if (decorators.some((d) => d === "overload" || d.endsWith(".overload"))) continue;
    const open = line.start + line.indent + line.body.indexOf("(");
    found = {
      kind,
      line: line.number,
      decorators: decorators.filter((d) => CALLING.has(d)),
      params: paramsAt(src, open),
      inheritedFrom,
    };
  }
  return found;
}

/** A parameter list as Python prints it (`/` and `*` markers included). */
export function printParams(found: Pick<Found, "kind" | "decorators" | "params">): string {
  if (found.kind === "attribute") return "";
  if (found.kind === "class") return `(${found.params.map((p) => p.name).join(", ")})`;
  const parts: string[] = [];
  const ps = found.params;
  ps.forEach((p, i) => {
    if (
      p.kind === "keyword-only" &&
      (i === 0 || (ps[i - 1]!.kind !== "keyword-only" && ps[i - 1]!.kind !== "var-positional"))
    )
      parts.push("*");
    const star = p.kind === "var-positional" ? "*" : p.kind === "var-keyword" ? "**" : "";
    const ann = p.annotation ? `: ${p.annotation}` : "";
    const dflt = p.default === null ? "" : p.annotation ? ` = ${p.default}` : `=${p.default}`;
    parts.push(`${star}${p.name}${ann}${dflt}`);
    if (p.kind === "positional-only" && ps[i + 1]?.kind !== "positional-only") parts.push("/");
  });
  return `${found.decorators.map((d) => `@${d} `).join("")}(${parts.join(", ")})`;
}

// ---------------------------------------------------------------------------
// Comparing.

export type DriftStatus = "unchanged" | "compatible" | "break" | "missing";

/** Why a changed signature is a break or compatible (Note [Python API drift]), in words. */
export function compareFound(old: Found, now: Found): { status: DriftStatus; reasons: string[] } {
  const breaks: string[] = [];
  const notes: string[] = [];
  if (old.kind === "class") {
    const a = printParams(old);
    const b = printParams(now);
    if (a !== b) notes.push(`bases ${a} -> ${b}`);
    return { status: notes.length ? "compatible" : "unchanged", reasons: notes };
  }
  if (old.kind === "attribute") return { status: "unchanged", reasons: [] };
  const da = [...old.decorators].sort(cmp).join(" ");
  const db = [...now.decorators].sort(cmp).join(" ");
  if (da !== db) breaks.push(`decorators ${da || "none"} -> ${db || "none"}`);
  const positional = (f: Found) =>
    f.params.filter((p) => p.kind === "positional" || p.kind === "positional-only").map((p) => p.name);
  const pa = positional(old);
  const pb = positional(now);
  if (pa.join(",") !== pb.join(",")) {
    const added = pb.filter((n) => !pa.includes(n));
    const removed = pa.filter((n) => !pb.includes(n));
    if (added.length) breaks.push(`positional parameter${added.length > 1 ? "s" : ""} added: ${added.join(", ")}`);
    if (removed.length)
      breaks.push(`positional parameter${removed.length > 1 ? "s" : ""} removed: ${removed.join(", ")}`);
    if (!added.length && !removed.length) breaks.push(`positional parameters reordered: ${pb.join(", ")}`);
  }
  const byName = (f: Found) => new Map(f.params.map((p) => [p.name, p]));
  const ma = byName(old);
  const mb = byName(now);
  for (const p of old.params) {
    const q = mb.get(p.name);
    if (p.kind === "var-positional" || p.kind === "var-keyword") {
      if (!now.params.some((x) => x.kind === p.kind))
        breaks.push(`${p.kind === "var-positional" ? "*" : "**"}${p.name} removed`);
      continue;
    }
    if (!q) {
      if (p.kind === "keyword-only") breaks.push(`keyword-only parameter removed: ${p.name}`);
      continue; // a positional one is already reported
    }
    // positional -> positional-only breaks a call by keyword; positional -> keyword-only a call by position.
    if (p.kind !== q.kind) breaks.push(`${p.name}: ${p.kind} -> ${q.kind}`);
    if (p.default !== null && q.default === null) breaks.push(`${p.name} lost its default (${p.default})`);
    else if (p.default !== q.default) notes.push(`${p.name}'s default ${p.default ?? "none"} -> ${q.default}`);
    if (p.annotation !== q.annotation)
      notes.push(`${p.name}'s annotation ${p.annotation || "none"} -> ${q.annotation || "none"}`);
  }
  for (const q of now.params) {
    if (ma.has(q.name)) continue;
    if (q.kind === "var-positional" || q.kind === "var-keyword") {
      if (!old.params.some((x) => x.kind === q.kind))
        notes.push(`${q.kind === "var-positional" ? "*" : "**"}${q.name} added`);
    } else if (q.kind === "keyword-only") {
      if (q.default === null) breaks.push(`keyword-only parameter added without a default: ${q.name}`);
      else notes.push(`keyword-only parameter added: ${q.name}=${q.default}`);
    }
  }
  const unique = (xs: string[]) => [...new Set(xs)];
  if (breaks.length) return { status: "break", reasons: unique([...breaks, ...notes]) };
  if (notes.length) return { status: "compatible", reasons: unique(notes) };
  return { status: "unchanged", reasons: [] };
}

/** A torch's Python sources: `root` holds `torch/...` (site-packages, or the cache's copy of the wheel's members). */
export interface PythonSources {
  readonly version: string;
  readonly root: string;
}

export interface PythonApiEntry {
  readonly file: string;
  readonly name: string;
  readonly kind: WatchedKind;
  readonly usedBy: string;
  readonly status: DriftStatus;
  /** The baseline's and the target's parameter lists (printParams); null where not found. */
  readonly old: string | null;
  readonly new: string | null;
  /** `file:line` in the target (or the baseline, when missing in the target). */
  readonly where: string | null;
  readonly inheritedFrom: string | null;
  readonly reasons: readonly string[];
}

export interface PythonApiReport {
  readonly from: string;
  readonly to: string;
  /** The same files on both sides (the target is the baseline torch itself). */
  readonly sameFiles: boolean;
  /** Why nothing was compared (no baseline sources, a cache without the Python files); entries are then empty. */
  readonly unavailable: string | null;
  readonly entries: readonly PythonApiEntry[];
  readonly summary: {
    readonly unchanged: number;
    readonly compatible: number;
    readonly break: number;
    readonly missing: number;
  };
}

function readSource(root: string, file: string): Source | null {
  const p = path.join(root, file);
  return existsSync(p) ? parsePython(readFileSync(p, "utf8")) : null;
}

/**
 * Every WATCHED definition in `baseline` vs `target` (Note [Python API
 * drift]). A definition the baseline lacks too (a torch older than the one
 * the table was written against) is judged by the target alone: present is
 * compatible (with the reason), absent is missing.
 */
export function comparePythonApi(
  baseline: PythonSources,
  target: PythonSources,
  watched: readonly WatchedDefinition[] = WATCHED,
): PythonApiReport {
  const sameFiles = path.resolve(baseline.root) === path.resolve(target.root);
  const cache = new Map<string, Source | null>();
  const text = (root: string, file: string) => {
    const key = `${root}\0${file}`;
    if (!cache.has(key)) cache.set(key, readSource(root, file));
    return cache.get(key)!;
  };
  const entries = watched.map((d): PythonApiEntry => {
    const a = text(baseline.root, d.file);
    const b = sameFiles ? a : text(target.root, d.file);
    const old = a === null ? null : findDefinition(a, d.name, d.kind);
    const now = b === null ? null : findDefinition(b, d.name, d.kind);
    const base = { file: d.file, name: d.name, kind: d.kind, usedBy: d.usedBy };
    if (!now) {
      return {
        ...base,
        status: "missing",
        old: old ? printParams(old) : null,
        new: null,
        where: old ? `${d.file}:${old.line}` : null,
        inheritedFrom: old?.inheritedFrom ?? null,
        reasons: [b === null ? `torch ${target.version} has no ${d.file}` : `not defined in torch ${target.version}`],
      };
    }
    const where = `${d.file}:${now.line}`;
    if (!old) {
      return {
        ...base,
        status: "compatible",
        old: null,
        new: printParams(now),
        where,
        inheritedFrom: now.inheritedFrom,
        reasons: [`not found in torch ${baseline.version}`],
      };
    }
    const { status, reasons } = compareFound(old, now);
    return {
      ...base,
      status,
      old: printParams(old),
      new: printParams(now),
      where,
      inheritedFrom: now.inheritedFrom,
      reasons,
    };
  });
  const count = (s: DriftStatus) => entries.filter((e) => e.status === s).length;
  return {
    from: baseline.version,
    to: target.version,
    sameFiles,
    unavailable: null,
    entries,
    summary: {
      unchanged: count("unchanged"),
      compatible: count("compatible"),
      break: count("break"),
      missing: count("missing"),
    },
  };
}

/** The report when one side's sources are not to be had: nothing compared, and why. */
export function pythonApiUnavailable(from: string, to: string, why: string): PythonApiReport {
  return {
    from,
    to,
    sameFiles: false,
    unavailable: why,
    entries: [],
    summary: { unchanged: 0, compatible: 0, break: 0, missing: 0 },
  };
}

/** Whether the drift needs the scaffold changed (exit 1). */
export const pythonApiBreaks = (r: PythonApiReport | null): number => (r ? r.summary.break + r.summary.missing : 0);
