/**
 * The architecture, checked from the sources (shared/DESIGN.md's data flow):
 * every folder of src/ is one floor, and an import never runs from a lower
 * floor to a higher one; and no module but src/write writes to the file
 * system (src/write/files.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");

/** Floors, lowest first; a module may import from its own floor or any lower one. */
const FLOORS: readonly (readonly string[])[] = [
  ["util", "vocab", "version"],
  ["torch", "write", "yaml"],
  ["model"],
  ["api", "backend"],
  ["dest"],
  ["pipeline", "conformance", "impl"],
  ["scaffold"],
  ["upgrade"],
  ["cli"],
];

const floorOf = (room: string): number => FLOORS.findIndex((f) => f.includes(room));

/** src/a/b.ts -> "a"; src/vocab.ts -> "vocab". */
const roomOf = (rel: string): string => rel.split("/")[0]!.replace(/\.ts$/, "");

function sources(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => f.split(path.sep).join("/"))
    .sort();
}

/** Relative module specifiers: `from "..."` (import, import type, export ... from) and `import("...")`. */
function relativeImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*)"(\.{1,2}\/[^"]+)"/g)) out.push(m[1]!);
  return out;
}

describe("layers", () => {
  it("every folder of src/ has a floor", () => {
    const rooms = [...new Set(sources().map(roomOf))];
    expect(rooms.filter((r) => floorOf(r) < 0)).toEqual([]);
  });

  it("no import runs from a lower floor to a higher one", () => {
    const upward: string[] = [];
    for (const rel of sources()) {
      const from = roomOf(rel);
      const text = readFileSync(path.join(SRC, rel), "utf8");
      for (const spec of relativeImports(text)) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec));
        const to = roomOf(target);
        if (floorOf(to) > floorOf(from)) upward.push(`src/${rel} imports ${spec} (${from} is below ${to})`);
      }
    }
    expect(upward).toEqual([]);
  });
});

/** node:fs calls that change the file system. */
const WRITES = [
  "appendFile",
  "appendFileSync",
  "chmod",
  "chmodSync",
  "copyFile",
  "copyFileSync",
  "cp",
  "cpSync",
  "createWriteStream",
  "mkdir",
  "mkdirSync",
  "mkdtemp",
  "mkdtempSync",
  "rename",
  "renameSync",
  "rm",
  "rmSync",
  "rmdir",
  "rmdirSync",
  "symlink",
  "symlinkSync",
  "truncate",
  "truncateSync",
  "unlink",
  "unlinkSync",
  "writeFile",
  "writeFileSync",
];

/** What `text` imports from node:fs that writes, or loads fs in a way the names cannot be seen. */
function fsWrites(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/import\s+(type\s+)?([^;]*?)\s+from\s+"(?:node:)?fs(?:\/promises)?"/g)) {
    if (m[1]) continue;
    const clause = m[2]!;
    if (!clause.startsWith("{")) {
      found.push(`the whole fs module (${clause})`);
      continue;
    }
    for (const n of clause.replace(/[{}]/g, "").split(",")) {
      const name = n.trim().split(/\s+as\s+/)[0]!;
      if (WRITES.includes(name)) found.push(name);
    }
  }
  if (/\b(?:require|import)\(\s*"(?:node:)?fs/.test(text)) found.push("fs loaded dynamically");
  return found;
}

describe("the only writer", () => {
  it("no module outside src/write imports a writing fs call, or fs as a whole", () => {
    const found: string[] = [];
    for (const rel of sources()) {
      if (roomOf(rel) === "write") continue;
      for (const w of fsWrites(readFileSync(path.join(SRC, rel), "utf8"))) found.push(`src/${rel}: ${w}`);
    }
    expect(found).toEqual([]);
  });

  const cases: [string, { given: string; want: string[] }][] = [
    ["reads only", { given: 'import { existsSync, readFileSync } from "node:fs";', want: [] }],
    [
      "a renamed write",
      { given: 'import { readFileSync, writeFileSync as w } from "node:fs";', want: ["writeFileSync"] },
    ],
    ["promises", { given: 'import { mkdir, readFile } from "node:fs/promises";', want: ["mkdir"] }],
    ["a namespace", { given: 'import * as fs from "node:fs";', want: ["the whole fs module (* as fs)"] }],
    ["a type import", { given: 'import type { Stats } from "node:fs";', want: [] }],
    ["a dynamic import", { given: 'const fs = await import("node:fs");', want: ["fs loaded dynamically"] }],
  ];
  it.each(cases)("the check sees %s", (_name, { given, want }) => {
    expect(fsWrites(given)).toEqual(want);
  });
});
