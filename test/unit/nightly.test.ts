/**
 * The scheduled tier (issue 16) is wired up: the GitHub workflow runs on a
 * schedule and on demand and calls scripts/nightly.sh after setup, and every
 * opgen-backend command the script runs parses against the CLI's own option
 * tables (the commander program `opgen-backend` builds), so a renamed or
 * dropped flag fails here, not at night.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { registerConformanceCommands } from "../../src/cli/conformance.js";
import { registerScaffoldCommands } from "../../src/cli/scaffold.js";
import { parseSanitizers } from "../../src/conformance/sanitize.js";

const ROOT = path.resolve(__dirname, "..", "..");
const SCRIPT = readFileSync(path.join(ROOT, "scripts", "nightly.sh"), "utf8");

/** Values for the script's shell variables, as a run would have them. */
const VARS: Record<string, string> = { PROJECT: "/tmp/nightly/ref", WORK: "/tmp/nightly", JOBS: "2", TIMEOUT: "180" };

/** The script's `cli <command> <args...>` lines: continuations joined, `|| ...` dropped, variables expanded. */
function cliCalls(script: string): string[][] {
  const joined = script.replace(/\\\n\s*/g, " ");
  const calls: string[][] = [];
  for (const raw of joined.split("\n")) {
    const line = raw.trim();
    if (!line.startsWith("cli ")) continue;
    const words = line
      .replace(/\s*\|\|.*$/, "")
      .split(/\s+/)
      .slice(1);
    calls.push(
      words.map((w) =>
        w.replace(/^"|"$/g, "").replace(/\$\{?(\w+)\}?/g, (_m, name: string) => {
          const v = VARS[name];
          if (v === undefined) throw new Error(`scripts/nightly.sh: no test value for $${name} in: ${line}`);
          return v;
        }),
      ),
    );
  }
  return calls;
}

/** opgen-backend's commands, registered as the CLI registers them (src/cli/main.ts). */
function program(): Command {
  const p = new Command("opgen-backend").exitOverride();
  registerScaffoldCommands(p);
  registerConformanceCommands(p);
  for (const c of p.commands) c.exitOverride();
  return p;
}

describe("the nightly sanitizer tier", () => {
  it("is a scheduled (and manually started) workflow that runs scripts/nightly.sh after setup", () => {
    const wf = parse(readFileSync(path.join(ROOT, ".github", "workflows", "nightly.yml"), "utf8")) as {
      on: { schedule?: { cron: string }[]; workflow_dispatch?: unknown };
      jobs: Record<string, { steps: { run?: string }[] }>;
    };
    expect(wf.on.schedule?.[0]?.cron).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect("workflow_dispatch" in wf.on).toBe(true);
    const runs = Object.values(wf.jobs).flatMap((j) => j.steps.map((s) => s.run ?? ""));
    const setup = runs.findIndex((r) => /\bbash scripts\/setup\.sh\b/.test(r));
    const nightly = runs.findIndex((r) => /\bbash scripts\/nightly\.sh\b/.test(r));
    expect(setup).toBeGreaterThanOrEqual(0);
    expect(nightly).toBeGreaterThan(setup);
  });

  it("runs init --kernels all, build --sanitize address,undefined, test --sanitize", () => {
    const calls = cliCalls(SCRIPT);
    expect(calls.map((c) => c[0])).toEqual(["init", "build", "test"]);
    const [init, build, test] = calls as [string[], string[], string[]];
    expect(init[init.indexOf("--kernels") + 1]).toBe("all");
    expect(parseSanitizers(build[build.indexOf("--sanitize") + 1]!)).toEqual(["address", "undefined"]);
    expect(test).toContain("--sanitize");
    // `test` fails on problems unless told not to: the script's exit status depends on it.
    expect(test).not.toContain("--no-fail-on-problems");
  });

  it.each(
    cliCalls(SCRIPT).map((c) => [c[0]!, c] as const),
  )("its `%s` parses against the CLI's options", (name, call) => {
    const cmd = program().commands.find((c) => c.name() === name);
    expect(cmd, `opgen-backend has no command ${name}`).toBeDefined();
    const parsed = cmd!.parseOptions(call.slice(1));
    expect(parsed.unknown, `flags opgen-backend ${name} does not know`).toEqual([]);
    expect(parsed.operands).toEqual([VARS.PROJECT]);
    // Values went through the options' own parsers (e.g. --workers' integer check).
    if (name === "test") expect(cmd!.opts()).toMatchObject({ workers: 2, timeout: 180, sanitize: true });
    if (name === "build") expect(cmd!.opts()).toMatchObject({ jobs: "2", werror: true, sanitize: "address,undefined" });
  });

  it("runs ship.test.ts's sanitizer block, which the per-push CI skips, by its name", () => {
    const line = /^OPGEN_NIGHTLY=1 npx vitest run (\S+) -t "([^"]+)"/m.exec(SCRIPT);
    expect(line, "scripts/nightly.sh runs the planted sanitizer e2e").not.toBeNull();
    const file = readFileSync(path.join(ROOT, line![1]!), "utf8");
    expect(file).toContain(`describe.runIf(NIGHTLY)("${line![2]}"`);
    expect(file).toMatch(/const NIGHTLY = process\.env\.OPGEN_NIGHTLY === "1";/);
  });

  it("refuses a flag the CLI does not have (the check bites)", () => {
    const cmd = program().commands.find((c) => c.name() === "test")!;
    expect(cmd.parseOptions(["/p", "--sanitise"]).unknown).toEqual(["--sanitise"]);
  });
});
