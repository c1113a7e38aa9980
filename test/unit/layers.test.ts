/**
 * The architecture, checked from the sources (shared/DESIGN.md's data flow):
 * every folder of src/ is one floor, and an import never runs from a lower
 * floor to a higher one; and no module but src/write writes to the file
 * system (src/write/files.ts).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
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

const ROOT = path.resolve(SRC, "..");

/** A row of one of docs/ARCHITECTURE.md's tables, cells by the header's column names. */
interface MapRow {
  readonly line: number;
  readonly cells: Readonly<Record<string, string>>;
}

const cellsOf = (line: string): string[] =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((c) => c.trim());

/** Every table row of a Markdown text whose header has an "entry point" column. */
function mapRows(text: string): MapRow[] {
  const rows: MapRow[] = [];
  let header: string[] | null = null;
  text.split("\n").forEach((line, i) => {
    if (!line.trimStart().startsWith("|")) {
      header = null;
      return;
    }
    const cells = cellsOf(line);
    if (header === null) {
      header = cells;
      return;
    }
    if (cells.every((c) => /^-+$/.test(c)) || !header.includes("entry point")) return;
    rows.push({ line: i + 1, cells: Object.fromEntries(header.map((h, j) => [h, cells[j] ?? ""])) });
  });
  return rows;
}

const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** A declaration of `name` in `text`: exported, for a TypeScript file; present as a word, for any other. */
function declares(file: string, text: string, name: string): boolean {
  const n = name.replace(/[$]/g, "\\$");
  return file.endsWith(".ts")
    ? new RegExp(`export (?:async )?(?:function|class|const|interface|type) ${n}\\b`).test(text)
    : new RegExp(`\\b${n}\\b`).test(text);
}

describe("the written map (docs/ARCHITECTURE.md)", () => {
  const doc = "docs/ARCHITECTURE.md";
  const rows = mapRows(readFileSync(path.join(ROOT, doc), "utf8"));
  const first = (r: MapRow): string => ticked(Object.values(r.cells)[0]!)[0] ?? "";
  const srcRows = rows.filter((r) => first(r).startsWith("src/"));

  it("has a row for every room of FLOORS, on the room's floor", () => {
    const rooms = new Map(srcRows.map((r) => [roomOf(first(r).slice("src/".length)), r]));
    expect(FLOORS.flat().filter((room) => !rooms.has(room))).toEqual([]);
    const wrong = [...rooms].filter(([room, r]) => r.cells.floor !== String(floorOf(room)));
    expect(
      wrong.map(([room, r]) => `${doc}:${r.line}: ${room} is on floor ${floorOf(room)}, not ${r.cells.floor}`),
    ).toEqual([]);
  });

  it("names entry points and Notes that exist", () => {
    expect(rows.length).toBeGreaterThan(FLOORS.flat().length);
    const missing: string[] = [];
    for (const r of rows) {
      const [file, ...names] = ticked(r.cells["entry point"] ?? "");
      if (file === undefined) {
        missing.push(`${doc}:${r.line}: no entry point`);
        continue;
      }
      const abs = path.join(ROOT, file);
      if (!existsSync(abs)) {
        missing.push(`${doc}:${r.line}: ${file} does not exist`);
        continue;
      }
      const text = readFileSync(abs, "utf8");
      if (names.length === 0) missing.push(`${doc}:${r.line}: ${file} names no function or class`);
      for (const n of names) if (!declares(file, text, n)) missing.push(`${doc}:${r.line}: ${file} declares no ${n}`);
      const note = r.cells["Note to read first"] ?? "";
      if (note.startsWith("none")) continue;
      const [name, where] = ticked(note);
      const body =
        where !== undefined && existsSync(path.join(ROOT, where)) ? readFileSync(path.join(ROOT, where), "utf8") : "";
      if (!name?.startsWith("Note [") || !body.includes(`${name}:`))
        missing.push(`${doc}:${r.line}: ${name} is not defined in ${where}`);
    }
    expect(missing).toEqual([]);
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

// The unit tier is pure TypeScript (vitest.config.ts): a test that starts a
// process or reads the installed torch belongs in test/integration.
const IMPURE: [RegExp, string][] = [
  [/from\s+"(?:node:)?child_process"|import\(\s*"(?:node:)?child_process"/, "child_process"],
  [/from\s+"execa"|import\(\s*"execa"/, "execa"],
  [/from\s+"[./]*\/src\/torch\/discover(?:\.js)?"/, "the installed torch (src/torch/discover)"],
  [/from\s+"\.\.\/helpers\/(?:cli|pypi)(?:\.js)?"/, "a test helper that starts processes"],
];
function impurities(text: string): string[] {
  return IMPURE.filter(([re]) => re.test(text)).map(([, what]) => what);
}

describe("the unit tier", () => {
  const UNIT = path.resolve(import.meta.dirname);
  it("no test/unit file starts a process or reads the installed torch", () => {
    const found: string[] = [];
    // (this file holds the patterns themselves as the check's own test data)
    const files = readdirSync(UNIT).filter((n) => n.endsWith(".test.ts") && n !== path.basename(import.meta.filename));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      for (const what of impurities(readFileSync(path.join(UNIT, f), "utf8"))) found.push(`test/unit/${f}: ${what}`);
    }
    expect(found).toEqual([]);
  });

  const cases: [string, { given: string; want: string[] }][] = [
    ["pure", { given: 'import { toJunit } from "../../src/conformance/formats.js";', want: [] }],
    ["a spawn", { given: 'import { spawnSync } from "node:child_process";', want: ["child_process"] }],
    ["execa, dynamically", { given: 'const { execa } = await import("execa");', want: ["execa"] }],
    [
      "torch",
      {
        given: 'import { discoverTorch } from "../../src/torch/discover.js";',
        want: ["the installed torch (src/torch/discover)"],
      },
    ],
    [
      "the CLI helper",
      { given: 'import { cliIn } from "../helpers/cli.js";', want: ["a test helper that starts processes"] },
    ],
  ];
  it.each(cases)("the check sees %s", (_name, { given, want }) => {
    expect(impurities(given)).toEqual(want);
  });
});
