import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UserError } from "../../src/util/errors.js";
import { acquireLock, staleFiles, writeFiles } from "../../src/write/files.js";

const fresh = () => mkdtempSync(path.join(tmpdir(), "opgen-write-"));

describe("writeFiles", () => {
  it("creates, then rewrites nothing on a no-op run (mtimes unchanged)", () => {
    const dir = fresh();
    const files = [
      { path: "a/x.h", content: "x\n" },
      { path: "y.cpp", content: "y\n" },
    ];
    const r1 = writeFiles(dir, files);
    expect(r1.files.map((f) => f.status)).toEqual(["created", "created"]);
    const old = new Date(2000, 1, 1);
    utimesSync(path.join(dir, "y.cpp"), old, old);
    const r2 = writeFiles(dir, files);
    expect(r2.files.map((f) => f.status)).toEqual(["unchanged", "unchanged"]);
    expect(statSync(path.join(dir, "y.cpp")).mtime.getTime()).toBe(old.getTime());
  });

  it("updates only the changed file and leaves no temp files", () => {
    const dir = fresh();
    writeFiles(dir, [
      { path: "a", content: "1" },
      { path: "b", content: "2" },
    ]);
    const r = writeFiles(dir, [
      { path: "a", content: "1" },
      { path: "b", content: "3" },
    ]);
    expect(staleFiles(r)).toEqual(["b"]);
    expect(readFileSync(path.join(dir, "b"), "utf8")).toBe("3");
    expect(readdirSync(dir).sort()).toEqual(["a", "b"]);
  });

  it.each([
    ["dry run", { dryRun: true }],
    ["check", { check: true }],
  ])("%s writes nothing but reports staleness", (_name, opts) => {
    const dir = fresh();
    const r = writeFiles(dir, [{ path: "n/new.h", content: "z" }], opts);
    expect(staleFiles(r)).toEqual(["n/new.h"]);
    expect(existsSync(path.join(dir, "n"))).toBe(false);
  });

  it("never overwrites a createOnly file that exists", () => {
    const dir = fresh();
    writeFileSync(path.join(dir, "k.cpp"), "mine");
    const r = writeFiles(dir, [{ path: "k.cpp", content: "stub", createOnly: true }]);
    expect(r.files[0]?.status).toBe("kept");
    expect(readFileSync(path.join(dir, "k.cpp"), "utf8")).toBe("mine");
  });

  it.each([["../escape.h"], ["/etc/passwd"], ["a/../../b"], [""]])("refuses %j outside the output dir", (p) => {
    const dir = fresh();
    expect(() => writeFiles(dir, [{ path: p, content: "x" }])).toThrow(UserError);
  });

  it("validates every path before writing anything", () => {
    const dir = fresh();
    expect(() =>
      writeFiles(dir, [
        { path: "ok.h", content: "x" },
        { path: "../bad.h", content: "x" },
      ]),
    ).toThrow(UserError);
    expect(existsSync(path.join(dir, "ok.h"))).toBe(false);
  });
});

describe("acquireLock (Note [Results lock])", () => {
  const what = "`opgen-backend test`";
  const hint = "wait for it to finish, or give this run its own file with --results";

  it("refuses a second writer while the first holds the lock, and frees it on release", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "opgen-lock-")), "results.jsonl");
    const first = acquireLock(file, what, hint);
    expect(readFileSync(`${file}.lock`, "utf8")).toBe(`${process.pid}\n`);
    expect(() => acquireLock(file, what, hint)).toThrow(
      new UserError(`${file} is being written by another ${what} (pid ${process.pid}); ${hint}`),
    );
    first.release();
    first.release();
    expect(existsSync(`${file}.lock`)).toBe(false);
    acquireLock(file, what, hint).release();
  });

  it("takes over a lock whose process is gone", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "opgen-lock-")), "results.jsonl");
    // Linux never hands out a pid above 2^22 (PID_MAX_LIMIT), so no process has this one.
    const gone = String(2 ** 22 + 1);
    writeFileSync(`${file}.lock`, `${gone}\n`);
    const lock = acquireLock(file, what, hint);
    expect(readFileSync(`${file}.lock`, "utf8")).toBe(`${process.pid}\n`);
    lock.release();
  });
});
