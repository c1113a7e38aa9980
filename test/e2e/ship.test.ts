/**
 * End to end: what a vendor ships and checks before shipping.
 *
 * 1. `build --wheel`: a manylinux wheel with the project's version, the
 *    pinned torch as its dependency and none of torch's libraries inside;
 *    built again from scratch (ccache keeps the objects) it is the same bytes;
 *    it installs into a fresh venv (torch from the machine's wheels) that
 *    never saw the source tree, and the project's device tests pass there.
 * 2. `build --sanitize address,undefined` + `test --sanitize`: a kernel that
 *    reads one byte past its input's storage, with right values, passes a
 *    normal run and is reported as a crash, with its frame, under ASan.
 *    Nightly tier only (OPGEN_NIGHTLY=1; scripts/nightly.sh runs it after its
 *    sanitized build of every kernel): a sanitized build is a full compile
 *    that no cache shares, the longest step of the per-push CI.
 * 3. `build --debug`: -O0 -g reach the compile, and the project README's
 *    gdb recipe, followed as written on a kernel that segfaults, gives a
 *    backtrace that names the kernel's source file and line.
 *
 * One project serves all three (each full compile costs minutes in CI); the
 * planted kernels are added after the wheel tests.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../src/conformance/types.js";
import { cliIn, PYTHON } from "../helpers/cli.js";

const python = PYTHON;
const work = mkdtempSync(path.join(tmpdir(), "opgen-ship-e2e-"));
const cacheDir = path.join(tmpdir(), "opgen-conformance-e2e-cache");
/** The nightly tier (scripts/nightly.sh) sets it: the sanitizer block runs there only. */
const NIGHTLY = process.env.OPGEN_NIGHTLY === "1";

/** `test` of one planted op, float32, one worker, a few samples. */
function oneOpRun(dir: string, manifest: string, op: string, samples: number): string[] {
  return [
    "test",
    dir,
    "--manifest",
    manifest,
    "--ops",
    op,
    "--dtypes",
    "float32",
    "-j",
    "1",
    "--max-samples",
    String(samples),
    "--cache-dir",
    cacheDir,
  ];
}

const cli = cliIn(work, { MAX_JOBS: "2" });

async function ok(args: string[], env: Record<string, string> = {}): Promise<string> {
  const r = await cli(args, env);
  if (r.exitCode !== 0) throw new Error(`opgen-backend ${args.join(" ")} failed:\n${String(r.all).slice(-4000)}`);
  return String(r.all);
}

const project = path.join(work, "shipw");

describe("build --wheel", () => {
  const a = project;
  let wheelA = "";
  let wheelB = "";

  beforeAll(async () => {
    await ok(["init", a, "--name", "shipw"]);
    // Not in git: SOURCE_DATE_EPOCH falls back to its fixed default in both builds.
    const out = await ok(["build", a, "--werror", "--wheel", path.join(work, "dist-a")]);
    wheelA = /wrote (\S+\.whl)/.exec(out)![1]!;
    // Everything the first build made, but the ccache wrappers (the objects come back from ccache).
    for (const f of readdirSync(path.join(a, "build"))) {
      if (f !== "ccache-bin") rmSync(path.join(a, "build", f), { recursive: true, force: true });
    }
    rmSync(path.join(a, "torch_shipw.egg-info"), { recursive: true, force: true });
    const outB = await ok(["build", a, "--werror", "--wheel", path.join(work, "dist-b")]);
    wheelB = /wrote (\S+\.whl)/.exec(outB)![1]!;
  }, 3_600_000);

  it("is a manylinux wheel of the project's version that depends on the pinned torch and vendors none of its libraries", async () => {
    expect(path.basename(wheelA)).toMatch(/^torch_shipw-0\.1\.0-cp\d+-cp\d+-manylinux_\d+_\d+_x86_64.*\.whl$/);
    const r = await execa(python, [
      "-c",
      "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print('\\n'.join(z.namelist())); " +
        "print(z.read([n for n in z.namelist() if n.endswith('.dist-info/METADATA')][0]).decode())",
      wheelA,
    ]);
    const text = String(r.stdout);
    expect(text).toMatch(/^Version: 0\.1\.0$/m);
    expect(text).toMatch(/^Requires-Dist: torch==2\.13\.0$/m);
    expect(text).toMatch(/^torch_shipw\/_C\.\S+\.so$/m);
    expect(text).not.toMatch(/lib(torch|c10|shm|gomp)[^/\n]*\.so/);
  });

  it("is the same bytes when built again", () => {
    expect(path.basename(wheelB)).toBe(path.basename(wheelA));
    expect(readFileSync(wheelB).equals(readFileSync(wheelA))).toBe(true);
  });

  it("installs into a fresh venv and passes the project's device tests there", async () => {
    const venv = path.join(work, "fresh-venv");
    const base = String((await execa(python, ["-c", "import sys; print(sys._base_executable)"])).stdout).trim();
    const t0 = Date.now();
    await execa(base, ["-m", "venv", venv]);
    const pip = path.join(venv, "bin", "pip");
    // torch comes from the machine's pip configuration (a local wheel or the cache), as a customer's would.
    const inst = await execa(pip, ["install", "--disable-pip-version-check", "-q", wheelA, "pytest"], {
      reject: false,
      all: true,
      cwd: work,
    });
    if (inst.exitCode !== 0) throw new Error(String(inst.all).slice(-3000));
    const installS = (Date.now() - t0) / 1000;
    // Only the tests, nowhere near the source tree.
    const testsDir = mkdtempSync(path.join(tmpdir(), "opgen-wheel-tests-"));
    cpSync(path.join(a, "tests"), path.join(testsDir, "tests"), { recursive: true });
    // The Inductor and distributed suites (minutes of C++ kernel compiles and
    // rank processes) run on the projects init-build and reference build; here
    // the question is whether the installed wheel works.
    const r = await execa(
      path.join(venv, "bin", "python"),
      ["-m", "pytest", "-q", "tests", "--ignore=tests/test_inductor.py", "--ignore=tests/test_distributed.py"],
      {
        cwd: testsDir,
        reject: false,
        all: true,
        env: { PYTHONPATH: "", OPGEN_PYTHON: "" },
        extendEnv: true,
      },
    );
    console.log(`[ship e2e] fresh venv + torch + wheel installed in ${installS.toFixed(1)} s`);
    if (r.exitCode !== 0) console.error(String(r.all).slice(-4000));
    expect(r.exitCode).toBe(0);
    expect(String(r.all)).toMatch(/\d+ passed/);
    const where = await execa(
      path.join(venv, "bin", "python"),
      ["-c", "import torch_shipw; print(torch_shipw.__file__)"],
      {
        cwd: testsDir,
        env: { PYTHONPATH: "" },
      },
    );
    expect(String(where.stdout)).toContain(path.join(venv, "lib"));
  }, 900_000);
});

/**
 * Right values, one byte read past the end of the input's storage (Note
 * [Poisoned device memory]). Registered beside the generated registrations,
 * so backend.yaml and the generated sources stay as they were (and so do
 * the release build's objects).
 */
const PLANTED = `// Planted for the sanitizer e2e test: rad2deg's values are eager's, but it
// reads one byte past the end of its input's storage on the way.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "driver/RefDriver.h"

namespace {
at::Tensor planted_rad2deg(const at::Tensor& self) {
  const auto& storage = self.storage();
  if (storage.nbytes() > 0) {
    const char* base = static_cast<const char*>(storage.data());
    refAccessBegin(base);
    volatile char past_the_end = base[storage.nbytes()];  // the planted bug
    (void)past_the_end;
    refAccessEnd(base);
  }
  return at::rad2deg(self.cpu()).to(self.device());
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("rad2deg", TORCH_FN(planted_rad2deg)); }
`;

describe.runIf(NIGHTLY)("build --sanitize, test --sanitize", () => {
  const dir = project;
  const manifest = path.join(work, "planted-manifest.json");

  beforeAll(async () => {
    // The nightly runs this block alone (vitest -t): the wheel tests have not made the project.
    if (!existsSync(path.join(dir, "backend.yaml"))) await ok(["init", dir, "--name", "shipw"]);
    writeFileSync(path.join(dir, "csrc", "aten", "Planted.cpp"), PLANTED);
    await ok(["build", dir, "--werror", "--target", path.join(work, "planted-site")]);
    await ok(["build", dir, "--werror", "--sanitize", "address,undefined"]);
    // The planted kernel is not in backend.yaml: a manifest that lists it.
    const m = JSON.parse(readFileSync(path.join(dir, "csrc", "generated", "op_manifest.json"), "utf8"));
    m.operators.push({ name: "rad2deg", kind: "functional", core: false, view: false, served_by: "kernel" });
    writeFileSync(manifest, JSON.stringify(m));
  }, 3_600_000);

  async function run(name: string, extra: string[], env: Record<string, string> = {}): Promise<Report> {
    const json = path.join(work, `planted-${name}.json`);
    const r = await cli(
      [...oneOpRun(dir, manifest, "rad2deg", 3), "--json", json, "-q", "--no-fail-on-problems", ...extra],
      env,
    );
    if (!existsSync(json)) throw new Error(String(r.all).slice(-4000));
    return JSON.parse(readFileSync(json, "utf8")) as Report;
  }

  it("a normal run sees right values", async () => {
    const report = await run("release", [], { PYTHONPATH: path.join(work, "planted-site") });
    const values = report.results.find((r) => r.op === "rad2deg" && r.check === "values");
    expect(values?.status, JSON.stringify(report.results, null, 1)).toBe("pass");
  }, 600_000);

  it("the sanitized run reports the read as a crash of its sample, with its frame", async () => {
    const report = await run("sanitized", ["--sanitize"]);
    const crash = report.results.find((r) => r.op === "rad2deg" && r.status === "crash");
    expect(crash, JSON.stringify(report.results, null, 1)).toBeDefined();
    expect(crash!.message).toMatch(/^AddressSanitizer: use-after-poison \(READ of size 1\)/);
    // the first frame is the line of the read
    expect(crash!.message).toMatch(/; #0 [^;]* csrc\/aten\/Planted\.cpp:14(;|$)/);
  }, 600_000);
});

/**
 * A kernel that segfaults: it reads its input's device memory on the host,
 * outside the kernel library's access window, which the CPU driver's
 * protection (Note [Protected device memory]) turns into SIGSEGV, as a real
 * device's memory would.
 */
const PLANTED_CRASH = `// Planted for the gdb e2e test: deg2rad reads device memory on the host.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor planted_deg2rad(const at::Tensor& self) {
  at::Tensor out = at::deg2rad(self.cpu()).to(self.device());
  if (self.storage().nbytes() > 0) {
    const volatile char* device = static_cast<const volatile char*>(self.storage().data());
    char first = device[0];  // the planted crash
    (void)first;
  }
  return out;
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("deg2rad", TORCH_FN(planted_deg2rad)); }
`;
const CRASH_LINE = PLANTED_CRASH.split("\n").findIndex((l) => l.includes("// the planted crash")) + 1;

describe("build --debug, gdb on a crashing sample", () => {
  const dir = project;
  const manifest = path.join(work, "crash-manifest.json");
  let debugSite = "";

  beforeAll(async () => {
    // Run alone (vitest -t), the wheel tests have not made the project.
    if (!existsSync(path.join(dir, "backend.yaml"))) await ok(["init", dir, "--name", "shipw"]);
    writeFileSync(path.join(dir, "csrc", "aten", "PlantedCrash.cpp"), PLANTED_CRASH);
    const out = await ok(["build", dir, "--werror", "--debug"]);
    debugSite = path.join(dir, ".opgen", "debug", "site");
    expect(out).toContain(`into ${debugSite}`);
    const m = JSON.parse(readFileSync(path.join(dir, "csrc", "generated", "op_manifest.json"), "utf8"));
    m.operators.push({ name: "deg2rad", kind: "functional", core: false, view: false, served_by: "kernel" });
    writeFileSync(manifest, JSON.stringify(m));
  }, 3_600_000);

  it("compiles with -O0 -g and no other optimization level, so the extension has debug info", async () => {
    const ninja = readdirSync(path.join(dir, "build", "debug"), { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith("build.ninja"),
    );
    expect(ninja).toHaveLength(1);
    const text = readFileSync(path.join(dir, "build", "debug", ninja[0]!), "utf8");
    const cflags = text
      .split("\n")
      .filter((l) => /^(cflags|post_cflags) = /.test(l))
      .join(" ");
    expect(cflags).toMatch(/(^| )-O0( |$)/);
    expect(cflags).toMatch(/(^| )-g( |$)/);
    expect(cflags.match(/(?:^| )-O(?:[1-3sz]|fast)?(?= |$)/g) ?? []).toEqual([]);
    // assert() and debug-only checks on: Python's -DNDEBUG is dropped too.
    expect(cflags).not.toMatch(/-DNDEBUG\b/);
    const so = readdirSync(path.join(debugSite, "torch_shipw")).find((f) => /^_C\..*\.so$/.test(f));
    const sections = String((await execa("readelf", ["-S", "-W", path.join(debugSite, "torch_shipw", so!)])).stdout);
    expect(sections).toMatch(/\.debug_info\b/);
    expect(sections).toMatch(/\.debug_line\b/);
  });

  it("the README's recipe: the rerun line under gdb -batch on the debug build names the kernel's file and line", async () => {
    // The crash, found by a conformance run (here on the debug build itself:
    // a release build with the planted kernel would cost a compile more).
    const r = await cli(oneOpRun(dir, manifest, "deg2rad", 2), { PYTHONPATH: debugSite });
    const all = String(r.all);
    expect(r.exitCode, all.slice(-3000)).toBe(1);
    expect(all).toMatch(/^CRASH deg2rad float32 values: worker killed by SIGSEGV/m);
    // "rerun one sample alone: PYTHONPATH='<dirs>' <python> -m opgen_conformance rerun --config ... --sample k"
    const line = /rerun one sample alone: PYTHONPATH='([^']*)' (\S+) (-m opgen_conformance rerun .*)$/m.exec(all);
    expect(line, all.slice(-3000)).not.toBeNull();
    const [, rerunPath, rerunPython, rerunArgs] = line!;
    // The recipe: the debug build first on PYTHONPATH, from outside the project.
    const args = rerunArgs!.match(/'[^']*'|\S+/g)!.map((a) => a.replace(/^'(.*)'$/, "$1"));
    const gdb = await execa("gdb", ["-batch", "-ex", "run", "-ex", "bt", "--args", rerunPython!, ...args], {
      cwd: tmpdir(),
      reject: false,
      all: true,
      env: { PYTHONPATH: `${debugSite}${path.delimiter}${rerunPath}` },
      timeout: 600_000,
    });
    const trace = String(gdb.all);
    expect(trace, trace.slice(-4000)).toMatch(/received signal SIGSEGV/);
    // "#0  0x... in (anonymous namespace)::planted_deg2rad (self=...) at .../csrc/aten/PlantedCrash.cpp:10"
    expect(trace, trace.slice(-4000)).toMatch(
      new RegExp(`#0 .*planted_deg2rad[^\\n]* at \\S*csrc/aten/PlantedCrash\\.cpp:${CRASH_LINE}\\n`),
    );
  }, 900_000);
});
