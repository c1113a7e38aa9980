/**
 * The C++ sources gen copies unchanged into what it prints (Note [C++
 * helper sources]); everything else is printed by src/dest/printer.ts.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** templates/cpp/ at the package root, from src/dest (tests) or dist/dest (built). */
const CPP_DIR = fileURLToPath(new URL("../../templates/cpp/", import.meta.url));

/**
 * Note [C++ helper sources]: C++ that gen prints without filling anything in
 * (the helpers derived overloads share, Note [Derived helpers defined once])
 * is kept as plain C++ under templates/cpp/, not as templates: gen copies a
 * file's text as it is into Register<Key>.cpp's helper namespace, after
 * the declarations of templates/cpp/DerivedDecls.h (derivedDecls() in
 * register.ts), and test/integration/compile.test.ts
 * compiles the files the same way as a translation unit of their own. They
 * hold no #include: the registration file's include list carries what they
 * need.
 */
const sources = new Map<string, string>();

export function cppSource(name: string): string {
  let text = sources.get(name);
  if (text === undefined) {
    text = readFileSync(`${CPP_DIR}${name}`, "utf8");
    sources.set(name, text);
  }
  return text;
}
