/**
 * Kernel stubs (`gen --stubs`): a compilable skeleton `<op>.cpp` per declared
 * kernel the vendor has not defined yet, whose body throws NotImplementedError
 * naming the operator.
 */
import { printCType } from "../api/ctype.js";
import { DispatcherSignature } from "../api/dispatcher.js";
import { isPlainTensor } from "../backend/custom.js";
import type { BackendConfig } from "../backend/types.js";
import { printSchema, unambiguousName } from "../model/catalog.js";
import {
  callArguments,
  operatorNameString,
  parseSchema,
  printArgument,
  printBaseOperatorName,
} from "../model/schema.js";
import { assertNever } from "../util/errors.js";
import { cmp } from "../vocab.js";
import type { OutputFile } from "../write/files.js";
import { headerFileName } from "./header.js";
import { kernelsOf, NO_FLAGS, type Plan } from "./plan.js";
import { CppFile } from "./printer.js";

/**
 * `ret Class::name(const at::Tensor & /*self*\/, ...)`, or `ret name(...)` for
 * a free function (the stub defines it inside `namespace <cpp_namespace> {`):
 * names commented out so -Wunused-parameter stays quiet.
 */
function stubSignature(config: BackendConfig, sig: DispatcherSignature): string {
  const params = sig.args.map((a) => `${printCType(a.type)} /*${a.name}*/`).join(", ");
  const home = config.kernelHome;
  const name = home.kind === "class" ? `${home.className}::${sig.name}` : sig.name;
  return `${printCType(sig.returns)} ${name}(${params})`;
}

/**
 * What a stub includes: the generated header that declares its member, or,
 * for a free function, only what its signature needs (the generated header
 * declares its types with <ATen/Tensor.h> alone), so that the stub, like any
 * free-function kernel source, is not rebuilt when backend.yaml changes.
 */
function stubIncludes(config: BackendConfig, headerName: string): string[] {
  const home = config.kernelHome;
  switch (home.kind) {
    case "class":
      return [`"${headerName}"`, "<c10/util/Exception.h>"];
    case "free":
      return ["<ATen/Tensor.h>", "<c10/util/Exception.h>"];
    default:
      return assertNever(home, "kernel home");
  }
}

/** One stub file: the schemas it implements, then a definition that throws. */
function printStub(
  config: BackendConfig,
  schemas: readonly string[],
  includes: readonly string[],
  signature: string,
  op: string,
): string {
  const f = new CppFile()
    .comment("Kernel stub written by opgen-backend: it is yours now (gen never rewrites it).")
    .comment(`Replace the body with the ${config.device} implementation of:`);
  for (const schema of schemas) f.comment(`  ${schema}`);
  f.line()
    .include(...includes)
    .includesHere({ grouped: true });
  f.line(`namespace ${config.cppNamespace} {`).line();
  f.line(`${signature} {`);
  f.line(
    `  C10_THROW_ERROR(NotImplementedError, "${op} is not implemented for ${config.device} yet (kernel stub written by opgen-backend)");`,
  );
  f.line("}").line();
  return f.line(`} // namespace ${config.cppNamespace}`).toString();
}

/**
 * `gen --stubs DIR`: one compilable `<op>.cpp` per declared kernel whose op is
 * not in `defined` (src/impl finds the definitions). Files are create-only:
 * the writer never overwrites one.
 */
export function emitKernelStubs(
  plan: Plan,
  defined: ReadonlySet<string>,
  definedNames: ReadonlySet<string> = new Set(),
): OutputFile[] {
  const config = plan.config;
  const includes = stubIncludes(config, headerFileName(plan));
  const out: OutputFile[] = [];
  const seen = new Set<string>();
  for (const k of kernelsOf(plan)) {
    if (defined.has(k.entry.name) || seen.has(k.entry.name)) continue;
    seen.add(k.entry.name);
    out.push({
      path: `${unambiguousName(k.entry.fn.func.name)}.cpp`,
      createOnly: true,
      content: printStub(config, [printSchema(k.entry.fn.func)], includes, stubSignature(config, k.sig), k.entry.name),
    });
  }
  // Custom operators' kernels, and the backward a generated Function lacks
  // (Note [Backward convention] in src/backend/custom.ts); a function of
  // that name defined anywhere counts as defined.
  for (const w of customStubs(plan)) {
    if (definedNames.has(w.sig.name) || seen.has(`custom:${w.sig.name}`)) continue;
    seen.add(`custom:${w.sig.name}`);
    out.push({
      path: `${w.sig.name}.cpp`,
      createOnly: true,
      content: printStub(config, w.schemaLines, includes, stubSignature(config, w.sig), w.op),
    });
  }
  return out.sort((a, b) => cmp(a.path, b.path));
}

/**
 * Stubs beyond the aten kernels: every custom operator's kernel, and for a
 * generated Function without a backward (an `autograd:` mapping entry with
 * neither backward: nor formulas), the backward kernel it would name,
 * `<op>_autograd_backward` (aten has its own `<op>_backward` kernels), with
 * the signature of Note [Backward convention] and, in its comment, the
 * custom: entry to add. An entry that gets no Function would not call a
 * backward, so it gets no stub.
 */
function customStubs(plan: Plan): { sig: DispatcherSignature; op: string; schemaLines: string[] }[] {
  const device = plan.config.device;
  const out = plan.customKernels.map(({ op }) => ({
    sig: new DispatcherSignature(op.func, NO_FLAGS, op.kernel),
    op: `${device}::${op.name}`,
    schemaLines: [`${device}::${op.schema}`],
  }));
  for (const fn of plan.functions) {
    // Custom operators' Functions call a custom backward or none (no stub to write);
    // Note [Backward formulas]: formulas need no kernel.
    if (fn.ns !== "aten" || fn.backward !== null || fn.formula !== null) continue;
    const fwd = fn.func;
    const name = operatorNameString(fwd.name);
    const over = fwd.name.overloadName ? `_${fwd.name.overloadName}` : "";
    const base = `${printBaseOperatorName(fwd.name.name)}${over}_autograd_backward`;
    const nGrads = fwd.returns.filter((r) => isPlainTensor(r.type)).length;
    const args = [
      ...Array.from({ length: nGrads }, (_, i) => `Tensor grad${nGrads > 1 ? i : ""}`),
      ...callArguments(fwd).map((a) => printArgument({ ...a, default: null })),
    ];
    const nIn = callArguments(fwd).filter((a) => isPlainTensor(a.type)).length;
    const rets = nIn === 1 ? "Tensor" : `(${Array(nIn).fill("Tensor").join(", ")})`;
    const schema = `${base}(${args.join(", ")}) -> ${rets}`;
    out.push({
      sig: new DispatcherSignature(parseSchema(schema), NO_FLAGS, base),
      op: `backward of ${name}`,
      schemaLines: [
        `${device}::${schema}`,
        `the backward of ${name}: add to backend.yaml`,
        `  custom: [{func: "${schema}", kernel: ${base}}]`,
        `  autograd: [{op: ${name}, backward: ${base}}]`,
      ],
    });
  }
  return out;
}
