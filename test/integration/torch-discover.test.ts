import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { discoverTorch, resolvePython } from "../../src/torch/discover.js";
import { UserError } from "../../src/util/errors.js";

const venvPython = process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python");

function script(body: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "opgen-py-"));
  const f = path.join(dir, "python");
  writeFileSync(f, `#!/bin/sh\n${body}\n`);
  chmodSync(f, 0o755);
  return f;
}

describe("discoverTorch", () => {
  it("finds the installed torch and its packaged YAMLs", async () => {
    const t = await discoverTorch(venvPython);
    expect(t.version).toMatch(/^2\.13\./);
    expect(t.nativeFunctionsYaml).toMatch(/torchgen\/packaged\/ATen\/native\/native_functions\.yaml$/);
    expect(t.derivativesYaml).toMatch(/packaged\/autograd\/derivatives\.yaml$/);
  });

  it.each<[string, () => string, RegExp]>([
    [
      "missing interpreter",
      () => "/nonexistent/python3",
      /cannot run Python '\/nonexistent\/python3' \(no such program\)/,
    ],
    [
      "broken interpreter",
      () => script("echo 'Fatal Python error: init_fs_encoding' >&2; exit 1"),
      /failed \(exit 1\): Fatal Python error/,
    ],
    ["not a python", () => script("echo hello"), /did not answer the torch probe/],
    [
      "python without torch",
      () => {
        // A fresh venv of the same base interpreter: a real Python that has no torch.
        const dir = mkdtempSync(path.join(tmpdir(), "opgen-notorch-"));
        execFileSync(venvPython, ["-m", "venv", "--without-pip", dir]);
        return path.join(dir, "bin", "python");
      },
      /torch is not importable .*pip install torch==2\.13\.0/,
    ],
    [
      "torch older than supported",
      () => {
        const root = mkdtempSync(path.join(tmpdir(), "opgen-oldtorch-"));
        mkdirSync(path.join(root, "torch"));
        mkdirSync(path.join(root, "torchgen"));
        writeFileSync(path.join(root, "torch", "__init__.py"), "");
        writeFileSync(path.join(root, "torch", "version.py"), "__version__ = '2.1.0+cpu'\n");
        writeFileSync(path.join(root, "torchgen", "__init__.py"), "");
        return script(`PYTHONPATH=${root} exec /usr/bin/env python3 -s "$@"`);
      },
      /torch 2\.1\.0\+cpu .* older than the oldest supported \(2\.13\)/,
    ],
  ])("%s gets a one-line actionable error", async (_name, make, want) => {
    const err = await discoverTorch(make()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    const msg = (err as UserError).message;
    expect(msg).toMatch(want);
    expect(msg.includes("\n")).toBe(false);
  });

  it("resolves --python, then OPGEN_PYTHON, then python3", () => {
    const saved = process.env.OPGEN_PYTHON;
    try {
      process.env.OPGEN_PYTHON = "/env/python";
      expect(resolvePython("/flag/python")).toBe("/flag/python");
      expect(resolvePython()).toBe("/env/python");
      delete process.env.OPGEN_PYTHON;
      expect(resolvePython()).toBe("python3");
    } finally {
      if (saved === undefined) delete process.env.OPGEN_PYTHON;
      else process.env.OPGEN_PYTHON = saved;
    }
  });
});
