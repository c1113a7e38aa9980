/**
 * The one user-facing error type. Anything thrown that is not a UserError is a
 * bug and is printed with its stack by the top-level handler in src/cli.
 *
 * Note [Diagnostics]: every pass that validates user input collects all the
 * problems it finds as Diagnostics and throws one UserError holding them, so a
 * user sees every problem in one run. A Diagnostic always carries
 * file:line:col when it is about a file.
 */

export interface SourceLoc {
  readonly file: string;
  /** 1-based */
  readonly line: number;
  /** 1-based */
  readonly col: number;
}

export type Severity = "error" | "warning";

export interface Diagnostic {
  readonly severity: Severity;
  readonly loc?: SourceLoc;
  readonly message: string;
}

export function formatLoc(loc: SourceLoc): string {
  return `${loc.file}:${loc.line}:${loc.col}`;
}

export function formatDiagnostic(d: Diagnostic): string {
  const where = d.loc ? `${formatLoc(d.loc)}: ` : "";
  const sev = d.severity === "warning" ? "warning: " : "";
  return `${where}${sev}${d.message}`;
}

/**
 * Note [Exit codes]: a command's actions throw and never exit; main
 * (src/cli/main.ts) prints the error and returns its exitCode. That is 1, or
 * what a command documents for a kind of failure: `report diff` and `upgrade`
 * exit 2 on bad input because their 1 means "regressed" / "action needed".
 */
export class UserError extends Error {
  readonly diagnostics: readonly Diagnostic[];
  /** The process's exit status when this reaches main (Note [Exit codes]). */
  readonly exitCode: number;
  constructor(message: string, diagnostics: readonly Diagnostic[] = [], options: { readonly exitCode?: number } = {}) {
    super(message);
    this.name = "UserError";
    this.diagnostics = diagnostics;
    this.exitCode = options.exitCode ?? 1;
  }

  static fromDiagnostics(diagnostics: readonly Diagnostic[]): UserError {
    const errors = diagnostics.filter((d) => d.severity === "error");
    const head = `${errors.length} error${errors.length === 1 ? "" : "s"}`;
    return new UserError(head, diagnostics);
  }
}

export function assertNever(x: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(x)}`);
}
