/**
 * Headless Chromium for the tests that look at an HTML report as a person
 * would: the installed binary, the flags this machine's closed network
 * needs, and the DOM after the page's scripts ran.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";

export function findChromium(): string {
  const found = ["chromium", "chromium-browser"].find((c) => {
    try {
      execFileSync("which", [c]);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) throw new Error("chromium is not installed: apt-get update && apt-get install -y chromium");
  return found;
}

/** The flags of one headless run with a fresh profile. */
export function chromiumFlags(): string[] {
  const profile = mkdtempSync(path.join(tmpdir(), "opgen-chromium-"));
  return [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--user-data-dir=${profile}`,
  ];
}

/** The page's DOM once loaded (its inline scripts have run). */
export async function dumpDom(url: string): Promise<string> {
  const r = await execa(findChromium(), [...chromiumFlags(), "--dump-dom", url], { reject: false, timeout: 120_000 });
  if (r.exitCode !== 0) throw new Error(`chromium --dump-dom ${url} exited ${r.exitCode}: ${String(r.stderr)}`);
  return String(r.stdout);
}
