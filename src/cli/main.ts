/**
 * Commander wiring and exit codes only. Each command lives in its own module;
 * this file maps UserError to `opgen-backend: message` + its exit code (1
 * unless the error says otherwise: Note [Exit codes] in src/util/errors.ts)
 * and lets anything else (a bug) propagate with its stack.
 *
 * Command modules are imported only when their command runs: the scaffold
 * and conformance commands pull in execa, the `yaml` package and Handlebars'
 * compiler, which `gen` never uses and must not pay for (Note [Cold start]).
 * The whole set is registered when no known command is named (bare `--help`,
 * `help`, a typo), so help and "unknown command" answers stay complete.
 *
 * Note [Cold start]: `gen` is one short, cold process, so what it imports and
 * starts decides most of its time: it starts the torch probe (a Python
 * process that does not import torch) before anything else, reads both kinds
 * of YAML with src/yaml's line readers instead of the `yaml` package, prints
 * C++ with its own printer (Note [C++ printer]), not a template engine, and
 * defers everything else
 * to the commands that need it. bench/cold-load.mjs measures what each of
 * these costs; bench/gen.mjs measures gen against torchgen. Comments cite this
 * Note rather than figures.
 */
import { setFlagsFromString } from "node:v8";
import type { Command } from "commander";
import { discoverTorch } from "../torch/discover.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { VERSION } from "../version.js";

type Register = (program: Command) => void;

const GEN: () => Promise<Register> = async () => (await import("./gen.js")).registerGenCommands;
const SCAFFOLD: () => Promise<Register> = async () => (await import("./scaffold.js")).registerScaffoldCommands;
const CONFORMANCE: () => Promise<Register> = async () => (await import("./conformance.js")).registerConformanceCommands;
const UPGRADE: () => Promise<Register> = async () => (await import("./upgrade.js")).registerUpgradeCommand;

/** Registration order is the order `--help` lists commands in. */
const GROUPS = [SCAFFOLD, GEN, CONFORMANCE, UPGRADE] as const;

/** Top-level command name -> the module that registers it. */
const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  init: SCAFFOLD,
  build: SCAFFOLD,
  gen: GEN,
  coverage: GEN,
  test: CONFORMANCE,
  bench: CONFORMANCE,
  report: CONFORMANCE,
  upgrade: UPGRADE,
};

/** The command argv names (`node script cmd ...`): the first word not starting with '-'. */
function commandName(argv: readonly string[]): string | undefined {
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("-")) return a;
    // Top-level options take no values, so anything before the command is a flag.
  }
  return undefined;
}

/** `--python X` / `--python=X` as commander will read it for gen/coverage (undefined: not given). */
function pythonFlag(argv: readonly string[]): string | undefined {
  for (let i = 3; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a === "--python") return argv[i + 1];
    if (a.startsWith("--python=")) return a.slice("--python=".length);
  }
  return undefined;
}

export async function main(argv: readonly string[]): Promise<number> {
  const name = commandName(argv);
  if ((name === "gen" || name === "coverage") && !argv.includes("--help") && !argv.includes("-h")) {
    // The torch probe is a Python process: start it before loading anything,
    // so that it runs while commander and the pipeline load (Note [Cold start]). The
    // answer is memoized per interpreter, so the command's own discoverTorch
    // call takes it over; a wrong guess at the flag only costs a second probe.
    discoverTorch(pythonFlag(argv)).catch(() => {});
    // Note [No optimizing JIT for gen]: gen is one short pass over ~3,000
    // operators; V8's optimizing compilers (TurboFan, and Maglev where it is
    // on) spend more on compiling the hot parser functions than the optimized
    // code saves before the process exits, and on a 2-core machine they
    // compete with the torch probe. bench/micro-optimizations.md has the
    // numbers (bench/gen-cpu.mjs with and without the flags).
    // The flags are read when a function would tier up, so setting them here,
    // before the pipeline runs, takes effect.
    setFlagsFromString("--no-turbofan");
    setFlagsFromString("--no-maglev");
  }
  const { Command, CommanderError } = await import("commander");
  const program = new Command();
  program
    .name("opgen-backend")
    .description("Onboard an accelerator into PyTorch on PrivateUse1, out of tree.")
    .exitOverride()
    .version(VERSION)
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const only = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  for (const register of await Promise.all((only ? [only] : GROUPS).map((g) => g()))) register(program);

  try {
    await program.parseAsync(argv as string[]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : 1;
    }
    if (err instanceof UserError) {
      for (const d of err.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
      process.stderr.write(`opgen-backend: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}
