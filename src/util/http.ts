/**
 * The one HTTP client of opgen-backend (Node's fetch with a timeout), and the
 * user's cache directory, for what is fetched once and kept: a torch
 * release's operator YAMLs (src/upgrade/wheel.ts) and PyTorch's test files
 * at a commit (src/conformance/upstream.ts). Reads only: what is fetched is
 * written by src/write.
 */
import { homedir } from "node:os";
import path from "node:path";
import { UserError } from "./errors.js";

/** $OPGEN_CACHE_DIR, else $XDG_CACHE_HOME/opgen-backend, else ~/.cache/opgen-backend. */
export function defaultCacheDir(): string {
  const own = process.env.OPGEN_CACHE_DIR;
  if (own) return own;
  const xdg = process.env.XDG_CACHE_HOME;
  return path.join(xdg || path.join(homedir(), ".cache"), "opgen-backend");
}

export interface Http {
  readonly base: string;
  readonly timeoutMs: number;
  /** what the caller says when the network is not there (how to do without it) */
  readonly offlineHint: string;
  /** bytes transferred so far */
  bytes: number;
  /** requests made so far */
  requests: number;
}

export function unreachable(http: Http, url: string, e: unknown): UserError {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const why =
    (e as Error).name === "TimeoutError" ? "timed out" : (cause?.code ?? cause?.message ?? (e as Error).message);
  return new UserError(`cannot reach ${url} (${why}); ${http.offlineHint}`);
}

/** GET `url` (bytes [start, end) of it with `range`); a network failure is a one-line UserError. */
export async function httpGet(http: Http, url: string, range?: readonly [number, number]): Promise<Response> {
  http.requests += 1;
  try {
    return await fetch(url, {
      headers: range ? { Range: `bytes=${range[0]}-${range[1] - 1}` } : {},
      signal: AbortSignal.timeout(http.timeoutMs),
      redirect: "follow",
    });
  } catch (e) {
    throw unreachable(http, url, e);
  }
}
