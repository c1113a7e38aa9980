/**
 * `opgen-backend coverage --model FILE[:NAME,...]`: the overloads a model
 * needs, against backend.yaml (Note [Model coverage] in src/dest/coverage.ts
 * judges them), and `--add`, which lists the missing ones under the YAML's
 * `supported:`.
 *
 * The overloads come from the conformance runner: `python -m
 * opgen_conformance model-ops` imports the model file, runs each selected
 * case once on eager CPU under a TorchDispatchMode and prints what it
 * dispatched (python/opgen_conformance/models.py model_ops). It starts while
 * the torch probe and the catalog load, since both take seconds.
 *
 * `--add` edits the file a person wrote: it inserts lines (src/yaml/edit.ts),
 * checks that the new text loads and lists every added overload, and only
 * then writes it, atomically (src/write). The file must still be the one
 * coverage read.
 */
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseBackendYaml } from "../backend/load.js";
import type { BackendConfig } from "../backend/types.js";
import {
  computeModelCoverage,
  type ModelCoverageReport,
  type ModelOpCounts,
  type TracedCase,
} from "../dest/coverage.js";
import type { OperatorCatalog } from "../model/types.js";
import { loadInputs } from "../pipeline/gen.js";
import { resolvePython } from "../torch/discover.js";
import { UserError } from "../util/errors.js";
import { writeText } from "../write/files.js";
import { appendToTopLevelList } from "../yaml/edit.js";
import { runnerOutput } from "./runner.js";

export interface TracedModel {
  /** The model file, as the runner resolved it (absolute). */
  readonly file: string;
  readonly cases: readonly TracedCase[];
}

/** The phases python/opgen_conformance/models.py counts. */
const PHASES = ["forward", "backward", "step"] as const;

/**
 * The runner's trace of the cases `spec` selects (`FILE[:NAME[,NAME]]`,
 * `zoo` for the shipped zoo). A model file that does not exist or does not
 * load, a name that matches no case, or a case that raises: UserError with
 * the runner's message.
 */
export async function traceModel(python: string, spec: string, cancel?: AbortSignal): Promise<TracedModel> {
  // The runner says the same, after importing torch: seconds later.
  const file = spec.split(":")[0]!;
  if (file !== "zoo" && !isFile(file) && !(!file.endsWith(".py") && isFile(`${file}.py`))) {
    throw new UserError(`--model ${spec}: ${path.resolve(file)}: no such model file`);
  }
  const text = await runnerOutput(python, ["model-ops", "--model", spec], `--model ${spec}`, cancel);
  return parseTrace(text, spec);
}

function isFile(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
}

/** model-ops' JSON: `[{file, case, ops: {overload: {forward, backward, step}}}]`. */
export function parseTrace(stdout: string, spec: string): TracedModel {
  const bug = (why: string) => new Error(`model-ops --model ${spec} printed ${why}: ${stdout.slice(0, 200)}`);
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch {
    throw bug("no JSON");
  }
  if (!Array.isArray(raw)) throw bug("no list");
  let file = "";
  const cases: TracedCase[] = [];
  for (const c of raw as { file?: unknown; case?: unknown; ops?: unknown }[]) {
    if (typeof c?.file !== "string" || typeof c.case !== "string" || typeof c.ops !== "object" || c.ops === null) {
      throw bug("a case without file, case and ops");
    }
    file = c.file;
    const ops: Record<string, ModelOpCounts> = {};
    for (const [name, n] of Object.entries(c.ops as Record<string, Record<string, unknown>>)) {
      if (!PHASES.every((p) => Number.isInteger(n?.[p]))) throw bug(`counts for ${name} that are not integers`);
      ops[name] = { forward: n.forward as number, backward: n.backward as number, step: n.step as number };
    }
    cases.push({ name: `${path.basename(c.file, ".py")}:${c.case}`, ops });
  }
  return { file, cases };
}

export interface ModelCoverageRequest {
  readonly yamlPath: string;
  /** `FILE[:NAME,...]` each; their cases are judged together. */
  readonly models: readonly string[];
  readonly python?: string;
  /** Told when tracing starts and ends (it takes seconds): stderr on the CLI. */
  readonly progress?: (line: string) => void;
}

export interface ModelCoverageOutcome {
  readonly config: BackendConfig;
  readonly catalog: OperatorCatalog;
  readonly models: readonly TracedModel[];
  readonly report: ModelCoverageReport;
}

export async function runModelCoverage(req: ModelCoverageRequest): Promise<ModelCoverageOutcome> {
  const python = resolvePython(req.python);
  // A backend YAML with mistakes ends the run at once, and the trace with it.
  const cancel = new AbortController();
  const inputs = loadInputs(req.yamlPath, python);
  inputs.catch(() => cancel.abort());
  const trace = async () => {
    const started = Date.now();
    req.progress?.(`tracing ${req.models.join(", ")} on eager CPU (imports torch, runs each case once) ...`);
    // One model file at a time: each runner imports torch, and two would only share the cores.
    const models: TracedModel[] = [];
    for (const spec of req.models) models.push(await traceModel(python, spec, cancel.signal));
    const n = models.reduce((k, m) => k + m.cases.length, 0);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    req.progress?.(`traced ${n} case${n === 1 ? "" : "s"} in ${seconds} s`);
    return models;
  };
  const [{ config, catalog }, models] = await Promise.all([inputs, trace()]);
  const cases = models.flatMap((m) => m.cases);
  const unique = cases.filter((c, i) => cases.findIndex((d) => d.name === c.name) === i);
  return { config, catalog, models, report: computeModelCoverage(config, catalog, unique) };
}

export interface Added {
  /** The overloads written under supported:, in the order written. */
  readonly names: readonly string[];
  /** Where the first one is. */
  readonly line: number;
}

/**
 * Lists `report.missing` under `supported:` of the backend YAML `config` was
 * loaded from; nothing to add writes nothing. The comment line above the
 * added names says where they came from (`because`).
 */
export function addMissing(
  config: BackendConfig,
  catalog: OperatorCatalog,
  report: ModelCoverageReport,
  because: string,
): Added {
  const names = report.missing.filter((n) => catalog.byName.has(n));
  if (names.length === 0) return { names, line: 0 };
  const file = config.file;
  const bytes = readFileSync(file);
  if (createHash("sha256").update(bytes).digest("hex") !== config.sourceSha256) {
    throw new UserError(`${file} changed while coverage ran; run coverage --add again`);
  }
  const text = bytes.toString("utf8");
  const n = names.length;
  const comment = `${n} overload${n === 1 ? "" : "s"} added by \`opgen-backend coverage --add\` for ${because}`;
  let edited: { text: string; line: number };
  let listed: readonly string[];
  try {
    edited = appendToTopLevelList(text, "supported", names, comment);
    listed = parseBackendYaml(edited.text, file, catalog).supported.map((e) => e.name);
  } catch (e) {
    // The file loaded before the edit, so this is ours to fix; the person gets the list to add.
    const why = e instanceof UserError ? e.diagnostics.map((d) => d.message).join("; ") || e.message : String(e);
    throw new UserError(
      `${file}: could not add to supported: without changing what is there (${why}); nothing was written. ` +
        `Add these by hand: ${names.join(", ")}`,
    );
  }
  const lost = names.filter((x) => !listed.includes(x));
  if (lost.length > 0) throw new Error(`coverage --add: ${lost.join(", ")} not under supported: after the edit`);
  writeText(file, edited.text);
  return { names, line: edited.line };
}

/** `small.py` or `small.py:mlp,cnn` for the comment: the file's name, not where it is. */
export function modelsLabel(specs: readonly string[]): string {
  return specs
    .map((s) => {
      const i = s.indexOf(":");
      const file = i < 0 ? s : s.slice(0, i);
      return path.basename(file) + (i < 0 ? "" : s.slice(i));
    })
    .join(", ");
}
