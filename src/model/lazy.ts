/**
 * Translates native_functions.yaml into the catalog's functions, groups and
 * name indexes on demand: a cold `gen` for a backend of a few hundred
 * operators reads every entry's name but parses only the entries whose
 * operators it asks about (and their groups), instead of all ~2,600 schemas.
 *
 * Note [Lazy catalog]: everything torchgen derives from an entry depends only
 * on the entries of its signature group (grouping: signatureKey; generated
 * out=/functional variants: generateForGroup), and every member of a
 * signature group has the same BaseOperatorName.base (`add` for add.Tensor,
 * add_.Tensor, add.out). So entries are bucketed by base name up front, which
 * needs only the text before each schema's '('; a bucket is parsed, grouped
 * and completed with its generated operators the first time any of its names
 * is asked for; whole-file views (`functions`, `groups`, iterating `byName`)
 * parse every bucket and put the results in exactly the order the eager
 * parseNativeFunctionsYaml gives (a test compares the two). The objects are
 * the same plain, fully-built NativeFunctions either way; only when they are
 * built changes.
 *
 * Only a file of the regular shape torch ships is read this way (every
 * top-level line `- func: <plain schema>`); anything else goes to the eager
 * reader, which reports all problems of the file at once. A bad entry inside
 * a regular file is reported (file:line:col) when its bucket is first read.
 */
import { type Diagnostic, UserError } from "../util/errors.js";
import { YamlListFile } from "../yaml/operators.js";
import { fromDict, fromYaml, generateForGroup, groupFunctions, isGroup, preGroup } from "./native.js";
import { parseBaseOperatorName } from "./schema.js";
import type { NativeFunction, NativeFunctionsGroup, SchemaKind } from "./types.js";

/** One signature group of a bucket, with where it first appears in the file. */
interface SigGroup {
  /** File index of the group's first entry: its place in torchgen's group order. */
  readonly first: number;
  readonly d: ReadonlyMap<SchemaKind, NativeFunction>;
  /** Generated operators (out= first, then functional), or null. */
  readonly generated: readonly NativeFunction[] | null;
  readonly group: NativeFunctionsGroup | null;
}

export interface WholeCatalog {
  readonly functions: readonly NativeFunction[];
  readonly groups: readonly (NativeFunctionsGroup | NativeFunction)[];
  readonly byName: ReadonlyMap<string, NativeFunction>;
  readonly groupOf: ReadonlyMap<string, NativeFunctionsGroup>;
}

/**
 * The whole catalog. Its name maps are built when first asked for: point
 * lookups go through LazyNativeFunctions' per-entry tables instead, so a
 * `gen` that only looks names up never builds them.
 */
class WholeView implements WholeCatalog {
  private names: Map<string, NativeFunction> | null = null;
  private groupsOf: Map<string, NativeFunctionsGroup> | null = null;
  constructor(
    readonly functions: readonly NativeFunction[],
    readonly groups: readonly (NativeFunctionsGroup | NativeFunction)[],
  ) {}

  get byName(): ReadonlyMap<string, NativeFunction> {
    if (!this.names) {
      this.names = new Map();
      for (const f of this.functions) this.names.set(f.name, f);
    }
    return this.names;
  }

  get groupOf(): ReadonlyMap<string, NativeFunctionsGroup> {
    if (!this.groupsOf) {
      this.groupsOf = new Map();
      for (const g of this.groups) if (isGroup(g)) for (const f of groupFunctions(g)) this.groupsOf.set(f.name, g);
    }
    return this.groupsOf;
  }
}

/** The bucket key of an operator name (`add_.Tensor` -> `add`); null for a name that cannot be an operator. */
function bucketOf(name: string): string | null {
  const dot = name.indexOf(".");
  try {
    return parseBaseOperatorName(dot < 0 ? name : name.slice(0, dot)).base;
  } catch {
    return null;
  }
}

export class LazyNativeFunctions {
  /** Per file entry: its 0-based line and full operator name. */
  private readonly lines: number[] = [];
  private readonly names: string[] = [];
  /** Per file entry: the 0-based line of its first `  tags:` line, -1 when it has none. */
  private readonly tagLines: number[] = [];
  /** Name of a file entry -> its index. */
  private readonly fileIndex = new Map<string, number>();
  /** Bucket key -> file indices, in file order. */
  private readonly buckets = new Map<string, number[]>();
  /** Bucket of each file index. */
  private readonly bucketKeys: string[] = [];
  /** Buckets read so far -> their signature groups. */
  private readonly done = new Map<string, readonly SigGroup[]>();
  /**
   * What the buckets read so far hold, one table each for all buckets: per
   * file index its function and group, and the generated operators and their
   * groups by name.
   */
  private readonly fileFns: NativeFunction[] = [];
  private readonly fileGroups: (NativeFunctionsGroup | undefined)[] = [];
  private readonly generated = new Map<string, NativeFunction>();
  private readonly generatedGroups = new Map<string, NativeFunctionsGroup>();
  private whole: WholeCatalog | null = null;

  private constructor(
    private readonly reader: YamlListFile,
    private readonly file: string,
    private readonly validTags: ReadonlySet<string>,
  ) {}

  /** The lazy view of `text`, or null when it is not of the regular shape (use the eager reader). */
  static of(text: string, file: string, validTags: ReadonlySet<string>): LazyNativeFunctions | null {
    const reader = new YamlListFile(text, file);
    const self = new LazyNativeFunctions(reader, file, validTags);
    const lines = reader.lines;
    let seenEntry = false;
    for (let k = 0; k < lines.length; k++) {
      const l = lines[k]!;
      const c = l.charCodeAt(0);
      if (c !== 45 /* - */) {
        // Inside an entry (checked when it is read), blank, or a comment; before
        // the first entry only blank lines and comments may stand.
        if (c === 32 && (seenEntry || reader.indentAt(k) === -1)) {
          // The entry's tags line, for coreNames (Note [Core without the whole catalog]).
          if (seenEntry && self.tagLines[self.tagLines.length - 1] === -1 && l.startsWith("  tags:")) {
            self.tagLines[self.tagLines.length - 1] = k;
          }
          continue;
        }
        if (Number.isNaN(c) || c === 35 /* # */) continue;
        return null; // tab, or content at column 0 that is not an entry: the eager reader says what is wrong
      }
      if (!l.startsWith("- func: ")) return null;
      seenEntry = true;
      // A plain one-line schema: what readInlineValue would return, untouched.
      const paren = l.indexOf("(", 8);
      const c8 = l.charCodeAt(8);
      if (paren < 0 || c8 === 39 || c8 === 34 || c8 === 32 || l.includes(" #", 8) || l.includes(": ", 8)) return null;
      if (l.charCodeAt(l.length - 1) === 32) return null;
      const name = l.slice(8, paren);
      const i = self.names.length;
      self.fileIndex.set(name, i);
      if (self.fileIndex.size === i) return null; // a duplicate: the eager reader reports it
      const key = bucketOf(name) ?? name;
      self.lines.push(k);
      self.names.push(name);
      self.tagLines.push(-1);
      self.bucketKeys.push(key);
      const b = self.buckets.get(key);
      if (b) b.push(i);
      else self.buckets.set(key, [i]);
    }
    return self;
  }

  /**
   * Note [Core without the whole catalog]: gen needs the core-ATen overloads
   * (the manifest's core_total, the autograd report's composite ones) but not
   * the other ~2,400 entries, and asking `functions` for them builds every
   * entry. An entry is core when its own `tags:` names core (torchgen adds
   * core to no entry, and generated operators carry only their source's
   * nondeterministic_seeded/view_copy), and torch writes `tags:` on one line,
   * `tags: core` or `tags: [core, pointwise]`, maybe with a comment; so those
   * lines decide (of() notes each entry's first one while it indexes the file).
   * A `tags:` value of any other shape (a block list, quotes) makes
   * this read the whole catalog instead, so the answer never depends on the
   * shortcut.
   */
  coreNames(): string[] {
    const lines = this.reader.lines;
    const out: string[] = [];
    for (let i = 0; i < this.names.length; i++) {
      const k = this.tagLines[i]!;
      if (k < 0) continue;
      // A comment after the value (` # ...`) is no part of it.
      const v = lines[k]!.slice("  tags:".length)
        .replace(/\s#.*$/, "")
        .trim();
      let tags: string[];
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(v)) tags = [v];
      else if (/^\[[A-Za-z0-9_, ]*\]$/.test(v))
        tags = v
          .slice(1, -1)
          .split(",")
          .map((t) => t.trim());
      else return this.all().functions.flatMap((f) => (f.tags.includes("core") ? [f.name] : []));
      if (tags.includes("core")) out.push(this.names[i]!);
    }
    return out;
  }

  /** byName.get without building the whole catalog. */
  fn(name: string): NativeFunction | undefined {
    const whole = this.whole;
    const i = this.fileIndex.get(name);
    if (i !== undefined) {
      if (!whole) this.bucket(this.bucketKeys[i]!);
      return this.fileFns[i];
    }
    if (whole) return this.generated.get(name);
    const key = bucketOf(name);
    return key !== null && this.bucket(key) ? this.generated.get(name) : undefined;
  }

  /**
   * Whether some operator's name, before its overload, is `base` (a custom
   * operator may not take an aten name): only the bucket `base` would be in
   * is read.
   */
  hasBase(base: string): boolean {
    const named = (f: NativeFunction) => f.name === base || f.name.startsWith(`${base}.`);
    if (this.whole) return this.whole.functions.some(named);
    const key = bucketOf(base);
    if (key === null || !this.bucket(key)) return false;
    for (const g of this.done.get(key)!) {
      for (const f of g.d.values()) if (named(f)) return true;
      if (g.generated?.some(named)) return true;
    }
    return false;
  }

  /** groupOf.get without building the whole catalog. */
  group(name: string): NativeFunctionsGroup | undefined {
    const whole = this.whole;
    const i = this.fileIndex.get(name);
    if (!whole) {
      const key = i !== undefined ? this.bucketKeys[i]! : bucketOf(name);
      if (key === null || !this.bucket(key)) return undefined;
    }
    return i !== undefined ? this.fileGroups[i] : this.generatedGroups.get(name);
  }

  /** Whether every entry has been read (for tests: point lookups keep the catalog lazy). */
  get isWhole(): boolean {
    return this.whole !== null;
  }

  /** Every bucket, assembled in the eager reader's order. */
  all(): WholeCatalog {
    if (this.whole) return this.whole;
    // Entries of buckets not read yet are read in one pass, as the eager
    // reader does. Buckets are closed under signature groups, so the rest
    // groups alone.
    const fileFns = this.fileFns;
    const sigGroups: SigGroup[] = [];
    for (const b of this.done.values()) for (const s of b) sigGroups.push(s);
    const diags: Diagnostic[] = [];
    const n = this.names.length;
    let restGroups: SigGroup[];
    // No bucket read yet: everything is left, and the rest is fileFns itself
    // (when every entry is a function).
    const readAll = this.done.size === 0;
    let read = 0;
    if (readAll) {
      for (let i = 0; i < n; i++) {
        const f = this.read(i, diags);
        if (f) {
          fileFns[i] = f;
          read++;
        }
      }
      if (diags.length > 0) throw UserError.fromDiagnostics(diags);
    }
    if (readAll && read === n) restGroups = this.complete(fileFns, null);
    else {
      const rest: NativeFunction[] = [];
      const restIndex: number[] = [];
      for (let i = 0; i < n; i++) {
        if (!readAll && this.done.has(this.bucketKeys[i]!)) continue;
        const f = readAll ? (fileFns[i] ?? null) : this.read(i, diags);
        if (!f) continue;
        fileFns[i] = f;
        rest.push(f);
        restIndex.push(i);
      }
      if (diags.length > 0) throw UserError.fromDiagnostics(diags);
      restGroups = this.complete(rest, restIndex);
    }
    for (let g = 0; g < restGroups.length; g++) sigGroups.push(restGroups[g]!);
    // torchgen's group order: by first appearance of each signature (already
    // so when no bucket was read before).
    if (this.done.size > 0) sigGroups.sort((a, b) => a.first - b.first);
    const functions = fileFns.slice();
    const groups: (NativeFunctionsGroup | NativeFunction)[] = [];
    for (let g = 0; g < sigGroups.length; g++) {
      const s = sigGroups[g]!;
      if (s.generated) for (let k = 0; k < s.generated.length; k++) functions.push(s.generated[k]!);
      if (s.group) groups.push(s.group);
      else for (const f of s.d.values()) groups.push(f);
    }
    this.whole = new WholeView(functions, groups);
    return this.whole;
  }

  /** File entry `i` as a NativeFunction (null after pushing its problems onto `diags`). */
  private read(i: number, diags: Diagnostic[]): NativeFunction | null {
    const f = fromYaml(this.reader.read(this.lines[i]!).entry, this.file, this.validTags, diags);
    if (f && f.name !== this.names[i]) {
      throw new Error(`internal: ${this.file}:${this.lines[i]! + 1}: read ${f.name}, scanned ${this.names[i]}`);
    }
    return f;
  }

  /** Reads bucket `key` (once); false when there is no such bucket. */
  private bucket(key: string): boolean {
    if (this.done.has(key)) return true;
    const idx = this.buckets.get(key);
    if (!idx) return false;
    const diags: Diagnostic[] = [];
    const order: NativeFunction[] = [];
    const orderIndex: number[] = [];
    for (const i of idx) {
      const f = this.read(i, diags);
      if (!f) continue;
      this.fileFns[i] = f;
      order.push(f);
      orderIndex.push(i);
    }
    if (diags.length > 0) throw UserError.fromDiagnostics(diags);
    this.done.set(key, this.complete(order, orderIndex));
    return true;
  }

  /**
   * Groups `fns` (whole signature groups, in file order; `index[k]` is the
   * file index of `fns[k]`, or k for a null `index`) by signature, adds the
   * generated operators, and records both in the per-entry tables.
   */
  private complete(fns: readonly NativeFunction[], index: readonly number[] | null): SigGroup[] {
    const out: SigGroup[] = [];
    const firsts: number[] = [];
    const members: number[] = [];
    const groups = preGroup(fns, firsts, members);
    for (let g = 0; g < groups.length; g++) {
      const d = groups[g]!;
      // generateForGroup only adds to d, so a group's members are `fns`' and the generated.
      const generated = generateForGroup(d);
      const group = fromDict(d);
      if (generated) {
        for (let k = 0; k < generated.length; k++) {
          const x = generated[k]!;
          this.generated.set(x.name, x);
          if (group) this.generatedGroups.set(x.name, group);
        }
      }
      const first = firsts[g]!;
      out.push({ first: index ? index[first]! : first, d, generated, group });
    }
    // A group holds every member of its signature (fromDict: no scratch variant).
    for (let k = 0; k < fns.length; k++) {
      const group = out[members[k]!]!.group;
      if (group) this.fileGroups[index ? index[k]! : k] = group;
    }
    return out;
  }
}

/**
 * A ReadonlyMap over a LazyNativeFunctions: point lookups (`get`, `has`)
 * parse one bucket; anything that enumerates parses everything.
 */
export class LazyMap<V> implements ReadonlyMap<string, V> {
  constructor(
    private readonly one: (k: string) => V | undefined,
    private readonly whole: () => ReadonlyMap<string, V>,
  ) {}

  get(k: string): V | undefined {
    return this.one(k);
  }
  has(k: string): boolean {
    return this.one(k) !== undefined;
  }
  get size(): number {
    return this.whole().size;
  }
  keys(): MapIterator<string> {
    return this.whole().keys();
  }
  values(): MapIterator<V> {
    return this.whole().values();
  }
  entries(): MapIterator<[string, V]> {
    return this.whole().entries();
  }
  forEach(cb: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.whole()) cb.call(thisArg, v, k, this);
  }
  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.whole()[Symbol.iterator]();
  }
}
