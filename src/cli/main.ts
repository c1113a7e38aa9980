/**
 * Commander wiring and exit codes only. Each command lives in its own module;
 * this file maps UserError to `opgen-backend: message` + exit 1 and lets
 * anything else (a bug) propagate with its stack.
 */
import { Command, CommanderError } from "commander";
import { registerConformanceCommands } from "../conformance/commands.js";
import { registerScaffoldCommands } from "../scaffold/commands.js";
import { formatDiagnostic, UserError } from "../util/errors.js";
import { registerGenCommands } from "./gen.js";

const VERSION = "0.1.0";

export async function main(argv: readonly string[]): Promise<number> {
  const program = new Command();
  program
    .name("opgen-backend")
    .description("Onboard an accelerator into PyTorch on PrivateUse1, out of tree.")
    .exitOverride()
    .version(VERSION)
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerScaffoldCommands(program);
  registerGenCommands(program);
  registerConformanceCommands(program);

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
      return 1;
    }
    throw err;
  }
}
