/**
 * Commander wiring and exit codes only. Each command lives in its own module;
 * this file maps UserError to `opgen-backend: message` + exit 1 and lets
 * anything else (a bug) propagate with its stack.
 */
import { Command, CommanderError } from "commander";
import { formatDiagnostic, UserError } from "../util/errors.js";

export async function main(argv: readonly string[]): Promise<number> {
  const program = new Command();
  program
    .name("opgen-backend")
    .description("Onboard an accelerator into PyTorch on PrivateUse1, out of tree.")
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

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
