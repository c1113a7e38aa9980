/**
 * The CUDA reference backend where CI runs: nvcc present, no GPU (issue 13).
 * One project is initialised with `init --device cuda --kernels all` and
 * built once with --werror (the compile-heavy part: ~10 minutes on two
 * loaded cores, so everything GPU-free shares that one build). Then:
 * it links warning-free; `import torch` autoloads it and warns, naming the
 * missing GPU, without crashing; the conformance runner records the whole
 * run as skipped with that reason; the project's own tests skip with it;
 * bench/gpu-check.sh stops before building and says why. The static checks
 * (entry points, op list, rendering) are test/integration/cuda-backend.test.ts.
 *
 * Skipped where nvcc is missing, and the no-GPU expectations where a GPU is
 * present (bench/gpu-check.sh is the check for such a machine).
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { parseReport } from "../../src/conformance/aggregate.js";
import { cliIn, PYTHON, ROOT } from "../helpers/cli.js";

const python = PYTHON;
const cudaHome = process.env.CUDA_HOME ?? "/usr/local/cuda";
const hasNvcc = existsSync(path.join(cudaHome, "bin", "nvcc"));
const work = mkdtempSync(path.join(tmpdir(), "opgen-cuda-e2e-"));
const project = path.join(work, "gpudev");
const site = path.join(work, "site");
const NO_GPU = /no gpudev device: no NVIDIA GPU is visible to the CUDA runtime/;

const cli = cliIn(work);

async function py(code: string, env: Record<string, string> = {}) {
  return execa(python, ["-c", code], { cwd: work, reject: false, all: true, env: { PYTHONPATH: site, ...env } });
}

let buildLog = "";
let gpuPresent = false;

describe.skipIf(!hasNvcc)("init --device cuda, built where no GPU is", () => {
  beforeAll(async () => {
    const probe = await execa(python, ["-c", "import ctypes; c = ctypes.CDLL('libcuda.so.1'); print(c.cuInit(0))"], {
      reject: false,
    });
    gpuPresent = probe.exitCode === 0 && probe.stdout.trim() === "0";
    let r = await cli(["init", project, "--name", "gpudev", "--device", "cuda", "--kernels", "all"]);
    if (r.exitCode !== 0) throw new Error(`init failed:\n${r.all}`);
    r = await cli(["build", project, "--python", python, "--target", site, "--werror"], { MAX_JOBS: "2" });
    buildLog = String(r.all);
    if (r.exitCode !== 0) throw new Error(`build failed:\n${buildLog.slice(-6000)}`);
  }, 1_800_000);

  it("compiles the .cu kernels with nvcc and links without a warning", () => {
    expect(buildLog).toMatch(/NVCC/);
    expect(buildLog.split("\n").filter((l) => /warning/i.test(l))).toEqual([]);
    const so = readFileSync(path.join(project, "build", "cuda", "build.ninja"), "utf8");
    expect(so).toMatch(/-gencode=arch=compute_90,code=sm_90/);
    expect(so).toMatch(/-Werror=all-warnings/);
  });

  it("imports with a warning that names the missing GPU, and plain `import torch` autoloads it", async () => {
    if (gpuPresent) return;
    const r = await py(
      [
        "import torch",
        "print('backend', torch._C._get_privateuse1_backend_name(), torch.gpudev.is_available())",
        "print('cpu', (torch.ones(2) + 1).tolist())",
        "import torch_gpudev",
        "print('reason', torch_gpudev.unavailable_reason())",
        "try:",
        "    torch.ones(2, device='gpudev')",
        "except RuntimeError as e:",
        "    print('device error', e)",
      ].join("\n"),
    );
    expect(r.exitCode, r.all).toBe(0);
    expect(r.stdout).toMatch(/backend gpudev False/);
    expect(r.stdout).toMatch(/cpu \[2\.0, 2\.0\]/);
    expect(r.stdout).toMatch(NO_GPU);
    expect(r.stdout).toMatch(/device error .*0 gpudev device/);
    expect(r.stderr).toMatch(/RuntimeWarning: torch_gpudev: no gpudev device: no NVIDIA GPU/);
  }, 300_000);

  it("opgen-backend test reports the whole run as skipped, with the reason", async () => {
    if (gpuPresent) return;
    const json = path.join(work, "skip.json");
    const r = await cli(
      ["test", project, "--python", python, "--ops", "add.Tensor,mm,sum.dim_IntList", "--json", json],
      {
        PYTHONPATH: site,
      },
    );
    expect(r.exitCode, String(r.all).slice(-2000)).toBe(0);
    expect(r.all).toMatch(/every task skipped: no gpudev device: no NVIDIA GPU/);
    const rep = parseReport(readFileSync(json, "utf8"), "skip.json");
    expect(rep.results.length).toBeGreaterThanOrEqual(3 * 8);
    for (const x of rep.results) {
      expect(x.status).toBe("skip");
      expect(x.message).toMatch(NO_GPU);
    }
  }, 300_000);

  it("opgen-backend test --model skips every case with the reason", async () => {
    if (gpuPresent) return;
    const json = path.join(work, "models-skip.json");
    const r = await cli(
      [
        "test",
        project,
        "--python",
        python,
        "--model",
        "zoo:gpt2,resnet",
        "--results",
        path.join(work, "m.jsonl"),
        "--json",
        json,
      ],
      { PYTHONPATH: site },
    );
    expect(r.exitCode, String(r.all).slice(-2000)).toBe(0);
    expect(r.all).toMatch(/every task skipped: no gpudev device: no NVIDIA GPU/);
    const rep = parseReport(readFileSync(json, "utf8"), "models-skip.json");
    expect(rep.models?.map((m) => [m.name, m.status])).toEqual([
      ["model:zoo:gpt2", "skip"],
      ["model:zoo:resnet", "skip"],
    ]);
    for (const x of rep.results) expect(x.message).toMatch(NO_GPU);
  }, 300_000);

  it("the project's own tests skip with the reason", async () => {
    if (gpuPresent) return;
    const r = await execa(python, ["-m", "pytest", "-q", "-rs", "tests"], {
      cwd: project,
      reject: false,
      all: true,
      env: { PYTHONPATH: site },
    });
    expect(r.exitCode, r.all).toBe(0);
    expect(r.all).toMatch(/no gpudev device on this machine/);
    expect(r.all).not.toMatch(/failed/);
    // The two that need no device run: tests/test_inductor.py's lazy-import
    // check and the cuda-kind device's refusal of Inductor, with its reason.
    expect(r.all).toMatch(/\b2 passed/);
  }, 300_000);

  it("bench/gpu-check.sh lists its steps (--dry-run) and skips, saying why, without a GPU", async () => {
    if (gpuPresent) return;
    const out = path.join(work, "gpu-check");
    const dry = await execa("bash", [path.join(ROOT, "bench", "gpu-check.sh"), "--out", out, "--dry-run"], {
      reject: false,
      all: true,
      env: { OPGEN_PYTHON: python },
    });
    expect(dry.exitCode, dry.all).toBe(0);
    for (const step of ["init:", "build:", "training:", "device tests:", "conformance:", "models:", "benchmarks:"]) {
      expect(dry.all).toContain(step);
    }
    const r = await execa("bash", [path.join(ROOT, "bench", "gpu-check.sh"), "--out", out], {
      reject: false,
      all: true,
      env: { OPGEN_PYTHON: python },
    });
    expect(r.exitCode, r.all).toBe(0);
    expect(r.all).toMatch(/SKIPPED: .*(GPU|NVIDIA driver)/);
    expect(readFileSync(path.join(out, "SKIPPED"), "utf8")).toMatch(/GPU|NVIDIA driver/);
    expect(existsSync(path.join(out, "work"))).toBe(false);
  }, 300_000);
});
