/**
 * Plan -> `op_manifest.json` (docs/INTERFACES.md): every overload the
 * generated files register, with its schema, tags, kind and the kernel that
 * serves it. The conformance runner and `coverage` read it. Sorted by name;
 * no timestamps, no absolute paths. `schema` is the entry as written
 * (Note [Lossless schemas]: the same string printSchema gives).
 */
import { schemaKind } from "../model/catalog.js";
import type { NativeFunction } from "../model/types.js";
import { cmp, GENERATOR } from "../vocab.js";
import type { Plan, Registration } from "./plan.js";

export interface ManifestOperator {
  readonly name: string;
  readonly schema: string;
  readonly kind: string;
  readonly tags: readonly string[];
  readonly core: boolean;
  readonly served_by: string;
  readonly kernel: string;
  readonly autograd: boolean;
  readonly symint: boolean;
  readonly view: boolean;
}

export interface Manifest {
  readonly generator: string;
  readonly backend: string;
  readonly device: string;
  readonly python_package: string;
  readonly cpp_namespace: string;
  /**
   * backend.yaml's class_name: each kernel is `<cpp_namespace>::<class_name>::<kernel>`.
   * Absent with `free_functions: true`, where it is `<cpp_namespace>::<kernel>` (Note [Kernel home]).
   */
  readonly class_name?: string;
  readonly torch_version: string;
  readonly yaml_sha256: string;
  /** How many overloads of this torch are tagged `core`: the runner's core-ATen denominator. */
  readonly core_total: number;
  /** backend.yaml's `dtypes:` (absent when it does not say: the runner's default set). */
  readonly dtypes?: readonly string[];
  /** backend.yaml's `partial_dtypes:`: dtype -> the operators that claim it besides `dtypes:` (absent when none). */
  readonly partial_dtypes?: Readonly<Record<string, readonly string[]>>;
  readonly operators: readonly ManifestOperator[];
}

const isView = (f: NativeFunction) => f.func.returns.some((x) => x.annotation !== null && !x.annotation.isWrite);

/** One manifest line, keys in the manifest's order. */
function entry(
  f: NativeFunction,
  kind: string,
  servedBy: string,
  kernel: string,
  autograd: boolean,
  symint: boolean,
): ManifestOperator {
  return {
    name: f.name,
    schema: f.funcText,
    kind,
    tags: [...f.tags].sort(cmp),
    core: f.tags.includes("core"),
    served_by: servedBy,
    kernel,
    autograd,
    symint,
    view: isView(f),
  };
}

/**
 * A core overload the backend leaves to its CompositeImplicitAutograd
 * decomposition (coverage fate "decomposes"): not in the manifest gen writes,
 * but `test` adds it to the run (Note [Core overloads through their
 * decomposition] in src/conformance/coverage.ts).
 */
export const decomposedOperator = (f: NativeFunction): ManifestOperator =>
  entry(f, schemaKind(f.func), "decomposition", "", false, false);

const operator = (r: Registration): ManifestOperator =>
  entry(r.f, r.kind, r.servedBy, r.kernel.sig.name, r.autograd, r.kernel.symint);

/** An overload the project's runtime registers (Note [Runtime operators] in src/backend/load.ts). */
const runtimeOperator = (f: NativeFunction): ManifestOperator =>
  entry(f, schemaKind(f.func), "runtime", "", false, false);

export function buildManifest(plan: Plan): Manifest {
  const c = plan.config;
  const regs = [...plan.backend.registrations, ...(plan.autograd?.registrations ?? [])];
  return {
    generator: GENERATOR,
    backend: c.backend,
    device: c.device,
    python_package: c.pythonPackage,
    cpp_namespace: c.cppNamespace,
    ...(c.kernelHome.kind === "class" ? { class_name: c.kernelHome.className } : {}),
    // "2.13.0+cpu" -> "2.13.0": the build variant is not part of the operator set.
    torch_version: plan.torchVersion.replace(/\+.*$/, ""),
    yaml_sha256: plan.config.sourceSha256,
    core_total: plan.coreTotal,
    ...(c.dtypes ? { dtypes: c.dtypes } : {}),
    ...(c.partialDtypes.size > 0 ? { partial_dtypes: Object.fromEntries(c.partialDtypes) } : {}),
    operators: [...regs.map(operator), ...plan.runtime.map(runtimeOperator)].sort((a, b) => cmp(a.name, b.name)),
  };
}

/**
 * The manifest as JSON: top-level keys one per line, then one operator per
 * line, so a change to one operator is a one-line diff (and the all-operators
 * manifest is ~0.7 MB, not the 1.2 MB of 2-space-indented JSON).
 */
export function emitManifest(m: Manifest): string {
  const { operators, ...head } = m;
  let s = "{\n";
  for (const [k, v] of Object.entries(head)) s += `  ${JSON.stringify(k)}: ${JSON.stringify(v)},\n`;
  if (operators.length === 0) return `${s}  "operators": []\n}\n`;
  s += '  "operators": [\n';
  for (let i = 0; i < operators.length; i++) {
    s += `    ${JSON.stringify(operators[i])}${i + 1 < operators.length ? "," : ""}\n`;
  }
  return `${s}  ]\n}\n`;
}
