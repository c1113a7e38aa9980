/**
 * Terminal output rules shared by every command: colour only when the stream
 * is a TTY and NO_COLOR is unset (FORCE_COLOR forces it).
 */

export interface Style {
  readonly red: (s: string) => string;
  readonly green: (s: string) => string;
  readonly yellow: (s: string) => string;
  readonly dim: (s: string) => string;
  readonly bold: (s: string) => string;
}

export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== "") return false;
  if (process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY);
}

const wrap = (on: boolean, open: number, close: number) => (s: string) =>
  on ? `\u001b[${open}m${s}\u001b[${close}m` : s;

export function style(stream: NodeJS.WriteStream = process.stdout): Style {
  const on = useColor(stream);
  return {
    red: wrap(on, 31, 39),
    green: wrap(on, 32, 39),
    yellow: wrap(on, 33, 39),
    dim: wrap(on, 2, 22),
    bold: wrap(on, 1, 22),
  };
}
