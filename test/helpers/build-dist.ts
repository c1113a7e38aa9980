/**
 * vitest globalSetup: compiles src/ into dist/ once, before any test file
 * runs. Test files that drive bin/opgen-backend.js used to rebuild dist/ in
 * their own beforeAll, which rewrote files under a CLI that a parallel file
 * was starting (a fresh-clone CI run failed on it: gen-cli.test.ts's second
 * `gen` exited 2 while another file's tsc was writing dist/). One build, in
 * the main process, before the workers start, cannot race.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";

export default function setup(): void {
  const root = path.resolve(__dirname, "..", "..");
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  const r = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
}
