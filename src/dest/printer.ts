/**
 * Note [C++ printer]: gen prints its C++ (Register<Key>.cpp, the kernel
 * header, kernel stubs) through CppFile, a small typed printer, not through
 * templates. Every decision is made in the plan before printing; what is
 * left is layout, and a printer keeps it in TypeScript, where a misspelt
 * field is a compile error rather than a render-time one, and where it costs
 * nothing to load (a template runtime's share of a cold gen is in
 * bench/micro-optimizations.md). C++ that gen copies unchanged, the derived
 * overloads' helpers, is kept as real C++ sources under templates/cpp/
 * (Note [C++ helper sources]), which the compile test builds on their own.
 *
 * The printer tracks a file's #includes: include() may be called at any
 * point while printing, and the block goes where includesHere() (called
 * once) stood, each header once, in the order first asked for. Where it
 * differs from the templates it replaced, on inputs gen never gives: an
 * empty comment line prints as `//` (no trailing space), and a header asked
 * for twice is printed once.
 */

const INCLUDES = Symbol("includes");

export class CppFile {
  private readonly parts: (string | typeof INCLUDES)[] = [];
  private readonly headers: string[] = [];
  private grouped = false;

  /** `<header>` or `"header"`, printed once in the include block. */
  include(...headers: readonly string[]): this {
    for (const h of headers) if (!this.headers.includes(h)) this.headers.push(h);
    return this;
  }

  /**
   * Where the include block goes. `grouped`: each #include is a group of its
   * own (a blank line after each), so that clang-format's include sorting
   * keeps a kernel source's own header first.
   */
  includesHere(opts: { readonly grouped?: boolean } = {}): this {
    this.grouped = opts.grouped ?? false;
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
      for (const h of this.headers) s += this.grouped ? `#include ${h}\n\n` : `#include ${h}\n`;
    }
    return s;
  }
}
