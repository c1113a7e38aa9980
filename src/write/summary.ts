/**
 * What a write did, as the lines `gen` (and `build`, which runs gen) prints:
 * one line per file that changed (every file under --dry-run), then a count.
 */
import path from "node:path";
import { style } from "../util/term.js";
import { staleFiles, type WriteOptions, type WriteResult } from "./files.js";

export function writeSummary(r: WriteResult, mode: WriteOptions, what: string): string[] {
  const s = style();
  const would = Boolean(mode.dryRun || mode.check);
  const lines: string[] = [];
  for (const f of r.files) {
    if (f.status === "unchanged" && !mode.dryRun) continue;
    const tag =
      f.status === "created"
        ? s.green(would ? "would create" : "created")
        : f.status === "updated"
          ? s.yellow(would ? "would update" : "updated")
          : s.dim(f.status);
    lines.push(`${tag} ${path.join(r.outDir, f.path)}`);
  }
  const n = staleFiles(r).length;
  lines.push(
    `${what}: ${r.files.length} file(s), ${n} ${would ? "stale" : "written"}, ${r.files.length - n} unchanged`,
  );
  return lines;
}
