/**
 * `opgen-backend init` and `opgen-backend build`: commander wiring only
 * (src/cli/main.ts calls registerScaffoldCommands); the commands live in src/scaffold.
 */
import path from "node:path";
import type { Command } from "commander";
import { parseSanitizers, SANITIZERS } from "../conformance/sanitize.js";
import { build } from "../scaffold/build.js";
import { DEVICE_KINDS, init, KERNEL_SETS } from "../scaffold/init.js";
import { discoverTorch } from "../torch/discover.js";
import { UserError } from "../util/errors.js";

/** The torch release `init` pins by default (Note [Pinned torch]): the discovered torch's, if it is a release. */
async function discoveredRelease(python?: string): Promise<string> {
  let version: string;
  try {
    version = (await discoverTorch(python)).version;
  } catch (err) {
    if (err instanceof UserError) throw new UserError(`${err.message}; or pass --torch-version x.y.z`);
    throw err;
  }
  const release = version.split("+")[0]!;
  if (!/^\d+\.\d+\.\d+$/.test(release)) {
    throw new UserError(
      `torch ${version} is not a release (a nightly or source build), so it cannot be pinned; pass the release the project should pin with --torch-version x.y.z`,
    );
  }
  return release;
}

export function registerScaffoldCommands(program: Command): void {
  program
    .command("init")
    .description("create a backend project whose device works in PyTorch at once (build it with `opgen-backend build`)")
    .argument("<dir>", "directory for the new project (must not exist or be empty)")
    .requiredOption(
      "-n, --name <device>",
      "the torch device name, e.g. mychip (torch.device('mychip'), package torch_mychip)",
    )
    .option("--device <kind>", `hardware the runtime targets: ${DEVICE_KINDS.join(" | ")}`, "cpu")
    .option("-f, --force", "write into a non-empty directory, replacing files the scaffold has")
    .option(
      "--kernels <set>",
      `which reference operators backend.yaml registers: ${KERNEL_SETS.join(" | ")} (the sources are the same)`,
      "starter",
    )
    .option(
      "--torch-version <x.y.z>",
      "the torch release the project pins and builds against (default: the torch of --python, $OPGEN_PYTHON or python3)",
    )
    .option("--python <path>", "the Python whose torch the project pins (else $OPGEN_PYTHON, else python3)")
    .action(
      async (
        dir: string,
        opts: {
          name: string;
          device: string;
          kernels: string;
          force?: boolean;
          torchVersion?: string;
          python?: string;
        },
      ) => {
        const torchVersion = opts.torchVersion ?? (await discoveredRelease(opts.python));
        const r = init(dir, {
          name: opts.name,
          device: opts.device,
          kernels: opts.kernels,
          force: Boolean(opts.force),
          torchVersion,
        });
        process.stdout.write(
          `created ${r.vars.package} for device "${r.vars.name}" in ${dir} (${r.files.length} files)\n`,
        );
        process.stdout.write(
          `next:\n  opgen-backend build ${dir}\n  python -c "import torch; print(torch.randn(2, 2, device='${r.vars.name}'))"\n`,
        );
      },
    );

  program
    .command("build")
    .description(
      "regenerate csrc/generated, then compile and install the project (pip, no build isolation, ninja, ccache)",
    )
    .argument("[dir]", "the project directory", ".")
    .option("--python <path>", "the Python to build and install into (else $OPGEN_PYTHON, else python3)")
    .option("-j, --jobs <n>", "parallel compile jobs (MAX_JOBS)")
    .option("--werror", "treat compiler warnings as errors")
    .option("--target <dir>", "install into <dir> (pip --target) instead of site-packages; use it via PYTHONPATH")
    .option(
      "--wheel <outdir>",
      "write a distributable manylinux wheel (auditwheel; torch's libraries excluded, reproducible) into <outdir> instead of installing",
    )
    .option("--debug", "-O0 -g build in build/debug, installed into .opgen/debug/site (gdb: see the project README)")
    .option(
      "--sanitize <list>",
      `build with sanitizers (${SANITIZERS.join(",")}) in build/sanitize-*, installed into .opgen/sanitize-*/site; run it with \`test --sanitize\``,
    )
    .action(
      async (
        dir: string,
        opts: {
          python?: string;
          jobs?: string;
          werror?: boolean;
          target?: string;
          wheel?: string;
          debug?: boolean;
          sanitize?: string;
        },
      ) => {
        const jobs = opts.jobs !== undefined ? Number.parseInt(opts.jobs, 10) : undefined;
        if (jobs !== undefined && !(jobs > 0))
          throw new UserError(`--jobs must be a positive integer, got ${opts.jobs}`);
        await build(path.resolve(dir), {
          python: opts.python,
          jobs,
          werror: Boolean(opts.werror),
          target: opts.target,
          wheel: opts.wheel,
          debug: Boolean(opts.debug),
          sanitize: opts.sanitize !== undefined ? parseSanitizers(opts.sanitize) : undefined,
        });
      },
    );
}
