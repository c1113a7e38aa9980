/**
 * `opgen-backend upgrade` as a user runs it, on a small generated project
 * (init + gen, no build) against the installed torch: nothing to do, exit 0;
 * bad input, exit 2 with one line and nothing written.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, "bin/opgen-backend.js"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let tmp: string;
let project: string;

beforeAll(() => {
  const b = spawnSync("npm", ["run", "--silent", "build"], { cwd: ROOT, encoding: "utf8" });
  expect(b.status, b.stderr).toBe(0);
  tmp = mkdtempSync(path.join(tmpdir(), "opgen-upgrade-cli-"));
  project = path.join(tmp, "p");
  const init = cli(["init", project, "--name", "upgchip"]);
  expect(init.code, init.stderr).toBe(0);
  const gen = cli(["gen", path.join(project, "backend.yaml")]);
  expect(gen.code, gen.stderr).toBe(0);
}, 120_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("upgrade", () => {
  it("reports nothing to do on the torch the project was generated with, exit 0", () => {
    const md = path.join(tmp, "upgrade.md");
    const r = cli(["upgrade", project, "--markdown", md]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/ 0 signature changed, 0 schema changed, 0 removed, 0 dispatch changed, 0 tags changed/);
    expect(r.stdout).toMatch(/nothing to do\n$/);
    expect(readFileSync(md, "utf8")).toContain("Nothing to do.");
    const j = cli(["upgrade", project, "--json"]);
    expect(j.code).toBe(0);
    const report = JSON.parse(j.stdout);
    expect(report.actionNeeded).toBe(false);
    expect(report.overloads.length).toBeGreaterThan(0);
    expect(report.overloads.every((o: { changes: unknown[] }) => o.changes.length === 0)).toBe(true);
  });

  it("refuses a project without a manifest: one line, exit 2, nothing written", () => {
    const bare = path.join(tmp, "bare");
    const init = cli(["init", bare, "--name", "barechip"]);
    expect(init.code, init.stderr).toBe(0);
    const md = path.join(tmp, "bare.md");
    const r = cli(["upgrade", bare, "--markdown", md]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/no op manifest; run `opgen-backend gen`/);
    expect(existsSync(md)).toBe(false);
  }, 60_000);

  it("refuses a manifest older than backend.yaml: exit 2", () => {
    const yaml = path.join(project, "backend.yaml");
    const text = readFileSync(yaml, "utf8");
    try {
      writeFileSync(yaml, `${text}# edited\n`);
      const r = cli(["upgrade", project]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/backend\.yaml changed since op_manifest\.json was generated; run `opgen-backend gen`/);
    } finally {
      writeFileSync(yaml, text);
    }
  });

  it("refuses a torch older than the project's pin: exit 2", () => {
    const py = path.join(project, "pyproject.toml");
    const text = readFileSync(py, "utf8");
    try {
      writeFileSync(py, text.replace(/"torch==[^"]+"/g, '"torch==99.0.0"'));
      const r = cli(["upgrade", project]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^opgen-backend: upgrade: torch \S+ is older than the project's pin 99\.0\.0;/);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    } finally {
      writeFileSync(py, text);
    }
  });
});
