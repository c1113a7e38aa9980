/**
 * Kernel stubs (`gen --stubs`): a compilable skeleton `<op>.cpp` per declared
 * kernel the vendor has not defined yet, whose body throws NotImplementedError
 * naming the operator.
 */
import { printCType } from "../api/ctype.js";
import type { DispatcherSignature } from "../api/dispatcher.js";
import type { BackendConfig } from "../backend/types.js";
import { printSchema, unambiguousName } from "../model/catalog.js";
import { assertNever } from "../util/errors.js";
import { cmp } from "../vocab.js";
import type { OutputFile } from "../write/files.js";
import { headerFileName } from "./header.js";
import { kernelsOf, type Plan } from "./plan.js";
import { render } from "./templates.js";

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

/**
 * `gen --stubs DIR`: one compilable `<op>.cpp` per declared kernel whose op is
 * not in `defined` (src/impl finds the definitions). Files are create-only:
 * the writer never overwrites one.
 */
export function emitKernelStubs(plan: Plan, defined: ReadonlySet<string>): OutputFile[] {
  const config = plan.config;
  const includes = stubIncludes(config, headerFileName(plan));
  const out: OutputFile[] = [];
  const seen = new Set<string>();
  for (const k of kernelsOf(plan)) {
    if (defined.has(k.op) || seen.has(k.op)) continue;
    seen.add(k.op);
    out.push({
      path: `${unambiguousName(k.f.func.name)}.cpp`,
      createOnly: true,
      content: render("kernel_stub.cpp.hbs", {
        device: config.device,
        schemas: [printSchema(k.f.func)],
        includes,
        cppNamespace: config.cppNamespace,
        kernels: [{ signature: stubSignature(config, k.sig), op: k.op, device: config.device }],
      }),
    });
  }
  return out.sort((a, b) => cmp(a.path, b.path));
}
