/**
 * Note [C++ printer]: gen prints its C++ (Register<Key>.cpp,
 * AutogradFunctions.cpp, the kernel header, kernel stubs) through CppFile, a
 * small typed printer, not through templates. Every decision is made in the
 * plan before printing; what is left is layout, and a printer keeps it in
 * TypeScript, where a misspelt field is a compile error rather than a
 * render-time one, and where it costs nothing to load (a template runtime's
 * share of a cold gen is in bench/micro-optimizations.md). C++ that gen
 * copies unchanged, the derived overloads' helpers, is kept as real C++
 * sources under templates/cpp/ (Note [C++ helper sources]), which the
 * compile test builds on their own.
 *
 * The printer tracks a file's #includes: include() may be called at any
 * point while printing, by the code that prints the construct needing the
 * header, and the block goes where includesHere() (called once) stood, each
 * header once, in the order first asked for unless the file gives an order
 * (Note [Include order]). Where it differs from the templates it replaced,
 * on inputs gen never gives: an empty comment line prints as `//` (no
 * trailing space), and a header asked for twice is printed once.
 *
 * Note [Include order]: which headers a file includes is decided where each
 * construct is printed; the order of the block is the file's layout, given
 * to includesHere() as a list of headers and patterns. A header goes at the
 * first entry it matches (several at one pattern in code-unit order), one
 * that matches none after all the others, in first-asked order. The
 * registration files and AutogradFunctions.cpp give the order gen has always
 * printed, which the golden hashes pin.
 */

import { cmp } from "../vocab.js";

const INCLUDES = Symbol("includes");

/** An entry of an include order (Note [Include order]): a header, or a pattern over headers. */
export type IncludeOrder = readonly (string | RegExp)[];

export class CppFile {
  private readonly parts: (string | typeof INCLUDES)[] = [];
  private readonly headers: string[] = [];
  private grouped = false;
  private order: IncludeOrder = [];

  /** `<header>` or `"header"`, printed once in the include block. */
  include(...headers: readonly string[]): this {
    for (const h of headers) if (!this.headers.includes(h)) this.headers.push(h);
    return this;
  }

  /**
   * Where the include block goes. `grouped`: each #include is a group of its
   * own (a blank line after each), so that clang-format's include sorting
   * keeps a kernel source's own header first. `order`: the block's order
   * (Note [Include order]); without one, first-asked.
   */
  includesHere(opts: { readonly grouped?: boolean; readonly order?: IncludeOrder } = {}): this {
    this.grouped = opts.grouped ?? false;
    this.order = opts.order ?? [];
    this.parts.push(INCLUDES);
    return this;
  }

  /** One line (the empty line by default); `text` holds no newline. */
  line(text = ""): this {
    this.parts.push(text);
    return this;
  }

  /** Lines as they are; a block of text (with newlines) is split into its lines. */
  lines(texts: readonly string[]): this {
    for (const t of texts) for (const l of t.split("\n")) this.parts.push(l);
    return this;
  }

  /** `// text` per line; an empty line prints as `//`. */
  comment(...texts: readonly string[]): this {
    for (const t of texts) this.parts.push(t === "" ? "//" : `// ${t}`);
    return this;
  }

  /** The file: every line ends with a newline. */
  toString(): string {
    let s = "";
    for (const p of this.parts) {
      if (p !== INCLUDES) {
        s += `${p}\n`;
        continue;
      }
      for (const h of this.ordered()) s += this.grouped ? `#include ${h}\n\n` : `#include ${h}\n`;
    }
    return s;
  }

  /** The headers in the file's order (Note [Include order]). */
  private ordered(): readonly string[] {
    if (this.order.length === 0) return this.headers;
    const rank = (h: string) => {
      const i = this.order.findIndex((o) => (typeof o === "string" ? o === h : o.test(h)));
      return i < 0 ? this.order.length : i;
    };
    const ranked = this.headers.map((h, asked) => ({ h, asked, rank: rank(h) }));
    // Unmatched headers keep first-asked order; several at one pattern sort by code unit.
    const unmatched = this.order.length;
    ranked.sort((a, b) => a.rank - b.rank || (a.rank === unmatched ? a.asked - b.asked : cmp(a.h, b.h)));
    return ranked.map((r) => r.h);
  }
}
