/**
 * Plan -> `AutogradFunctions.cpp`: a torch::autograd::Function per `autograd:`
 * entry that can have one and per `custom:` operator, registered on
 * Autograd<Key>; and the custom operators' TORCH_LIBRARY definitions and
 * <Key> kernels. The Python side of custom operators (fake registrations,
 * typed wrappers) is python.ts's `ops.py`.
 *
 * Note [Autograd entries are Functions]: torchgen registers an `autograd:`
 * kernel on Autograd<Key> as it is, and the vendor writes the autograd
 * Function by hand; an entry written as a plain name keeps that meaning
 * (a torchgen YAML means here what it means there). An entry written as a
 * mapping, `{op: gelu, backward: <kernel>}` or `{op: gelu}`, gets a generated
 * Function instead: the vendor's kernel moves to <Key> (so
 * code below autograd, inference mode and torch.compile's fake tensors reach
 * it through the dispatcher like any kernel) and Autograd<Key> gets a
 * Function whose forward redispatches below autograd and saves the
 * arguments, and whose backward calls the backward operator the YAML names
 * (Note [Backward convention] in src/backend/custom.ts) through the
 * dispatcher, or evaluates the YAML's formulas over other ops (Note
 * [Backward formulas] there), or raises "backward of <op> not implemented
 * for <device>".
 * An entry gets a Function when PyTorch's rules for one are simple: a
 * functional schema (no mutation, no views), Tensor returns, and arguments
 * a Function can save (Note [Saved arguments]); any other entry is
 * registered as torchgen does, and the loader warns that it is. Outputs derivatives.yaml's
 * output_differentiability marks False, and outputs that cannot have a
 * gradient (integral or bool dtype), are marked non-differentiable, as
 * VariableType does.
 *
 * Note [Saved arguments]: tensors are saved with save_for_backward (an
 * absent `Tensor?` as an undefined tensor); int, float, bool, str, Scalar
 * and int lists in ctx->saved_data as IValues, read back as the owning C++
 * type (std::string for str, std::vector<int64_t> for int[]).
 */
import { DispatcherSignature } from "../api/dispatcher.js";
import {
  type BackwardFormula,
  type CustomOp,
  formulaNames,
  functionProblem,
  isPlainTensor,
} from "../backend/custom.js";
import type { BackendConfig } from "../backend/types.js";
import { callArguments, printType } from "../model/schema.js";
import type { Argument, FunctionSchema } from "../model/types.js";
import type { Plan } from "./plan.js";

const NO_FLAGS = { symint: false, constRefForMutable: false, iListRef: false } as const;

/** The `autograd:` entries that get a Function (Note [Autograd entries are Functions]). */
export function wrappedAutograd(config: BackendConfig): ReadonlySet<string> {
  return new Set(
    config.autograd
      .filter((e) => config.autogradBackward.has(e.name) && functionProblem(e.fn) === null)
      .map((e) => e.name),
  );
}

/** `static <decl>;` (or a free function's) for each custom kernel, as the header declares them. */
export function customDeclarations(config: BackendConfig): string[] {
  const decls = config.custom.map((o) => {
    const sig = new DispatcherSignature(o.func, NO_FLAGS, o.kernel);
    return config.kernelHome.kind === "class" ? `static ${sig.decl()};` : `${sig.decl()};`;
  });
  return [...new Set(decls)].sort();
}

interface FnModel {
  /** The qualified operator (`aten::gelu`, `ref::fused_bias_gelu`) and overload. */
  readonly ns: string;
  readonly name: string;
  readonly overload: string;
  readonly func: FunctionSchema;
  readonly backward: CustomOp | null;
  /** The backward as formulas (Note [Backward formulas] in src/backend/custom.ts), or null. */
  readonly formula: BackwardFormula | null;
  /** Returns derivatives.yaml's output_differentiability marks False. */
  readonly nonDifferentiable: readonly number[];
}

function cxxString(s: string): string {
  return JSON.stringify(s);
}

function className(m: FnModel): string {
  const base = `${m.ns}_${m.name}${m.overload ? `_${m.overload}` : ""}`;
  return `${base.replace(/(^|_)([a-z0-9])/g, (_, _u, c: string) => c.toUpperCase())}Function`;
}

/** `c10::Dispatcher` handle of an operator, typed by its dispatcher signature (a static local). */
function handle(ns: string, name: string, overload: string, sig: DispatcherSignature): string {
  const fnType = `${sig.returns.cpp()}(${sig.paramTypes().join(", ")})`;
  return (
    `static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(${cxxString(`${ns}::${name}`)}, ` +
    `${cxxString(overload)}).typed<${fnType}>();`
  );
}

/** How a saved non-tensor argument is stored and read back (Note [Saved arguments]). */
function savedValue(t: string): { store: (x: string) => string; load: (x: string) => string } {
  switch (t) {
    case "str":
      return { store: (x) => `std::string(${x})`, load: (x) => `${x}.toStringRef()` };
    case "int":
    case "SymInt":
      return { store: (x) => x, load: (x) => `${x}.toInt()` };
    case "float":
      return { store: (x) => x, load: (x) => `${x}.toDouble()` };
    case "bool":
      return { store: (x) => x, load: (x) => `${x}.toBool()` };
    case "Scalar":
      return { store: (x) => x, load: (x) => `${x}.toScalar()` };
    default:
      // int[], SymInt[] (int64 kernels: Note [SymInt in kernel signatures])
      return { store: (x) => x, load: (x) => `${x}.toIntVector()` };
  }
}

/**
 * The body of a backward written as formulas (Note [Backward formulas] in
 * src/backend/custom.ts): locals for the names the formulas use, as the
 * Function saved them (Note [Saved arguments]), then one gradient per
 * forward argument, undefined where no formula is given. Only used names
 * get a local, so the generated code has no unused variables.
 */
function formulaBackward(
  m: FnModel,
  f: BackwardFormula,
  args: readonly Argument[],
  tensors: readonly Argument[],
  nOut: number,
): string[] {
  const used = new Set<string>();
  for (const e of f.entries) {
    const r = formulaNames(e.expr);
    if ("names" in r) for (const n of r.names) used.add(n.name);
  }
  const L: string[] = [];
  L.push("    // Note [Backward formulas]: the names the formulas use.");
  const savedTensors = tensors.filter((a) => used.has(a.name));
  const results = nOut === 1 ? ["result"] : Array.from({ length: nOut }, (_, i) => `result${i}`);
  const usedResults = results.filter((r) => used.has(r));
  if (savedTensors.length > 0 || usedResults.length > 0) {
    L.push("    const torch::autograd::variable_list saved = ctx->get_saved_variables();");
  } else L.push("    (void)ctx;");
  for (const a of args) {
    if (!used.has(a.name)) continue;
    const ti = tensors.indexOf(a);
    if (ti >= 0) {
      L.push(
        printType(a.type) === "Tensor?"
          ? `    const std::optional<at::Tensor> ${a.name} = saved[${ti}].defined() ? std::optional<at::Tensor>(saved[${ti}]) : std::nullopt;`
          : `    const at::Tensor& ${a.name} = saved[${ti}];`,
      );
    } else {
      const load = savedValue(printType(a.type).replace(/\[\d+\]$/, "[]")).load(
        `ctx->saved_data[${cxxString(a.name)}]`,
      );
      L.push(`    const auto ${a.name} = ${load};`);
    }
  }
  for (const [i, r] of results.entries()) {
    if (used.has(r)) L.push(`    const at::Tensor& ${r} = saved[${tensors.length + i}];`);
  }
  if (used.has("grad")) L.push("    const at::Tensor& grad = grads[0];");
  if (!used.has("grad") && !used.has("grads")) L.push("    (void)grads;");
  const byInput = new Map(f.entries.map((e) => [e.input, e.expr]));
  L.push(
    `    // ${m.ns}::${m.name}${m.overload ? `.${m.overload}` : ""}: one gradient per argument, undefined without a formula.`,
  );
  L.push("    return {");
  for (const a of args) {
    const e = byInput.get(a.name);
    L.push(e === undefined ? "        at::Tensor()," : `        at::Tensor(${e}),`);
  }
  L.push("    };");
  return L;
}

function emitFunction(m: FnModel, device: string): { code: string; wrapper: string } {
  const sig = new DispatcherSignature(m.func, NO_FLAGS, "forward");
  const cls = className(m);
  const args = callArguments(m.func);
  const params = sig.args.map((a) => `${a.type.cpp()} ${a.name}`);
  const multi = m.func.returns.length > 1;
  const fwdRet = multi ? "torch::autograd::variable_list" : "at::Tensor";
  const L: string[] = [];
  L.push(`struct ${cls} final : public torch::autograd::Function<${cls}> {`);
  L.push(`  static ${fwdRet} forward(${["torch::autograd::AutogradContext* ctx", ...params].join(", ")}) {`);
  L.push(`    ${handle(m.ns, m.name, m.overload, sig)}`);
  L.push(`    ${sig.returns.cpp()} result;`);
  L.push("    {");
  L.push("      at::AutoDispatchBelowADInplaceOrView guard;");
  L.push(`      result = op.call(${args.map((a) => a.name).join(", ")});`);
  L.push("    }");
  const outs = multi ? m.func.returns.map((_, i) => `std::get<${i}>(result)`) : ["result"];
  const tensors = args.filter(
    (a) => (a.type.kind === "base" && a.type.name === "Tensor") || printType(a.type) === "Tensor?",
  );
  if (m.backward || m.formula) {
    const saved = tensors.map((a) => (printType(a.type) === "Tensor?" ? `${a.name}.value_or(at::Tensor())` : a.name));
    // Note [Backward formulas]: outputs a formula names are saved after the inputs.
    if (m.formula?.usesResult) saved.push(...outs);
    L.push(`    ctx->save_for_backward({${saved.join(", ")}});`);
    for (const a of args) {
      if (tensors.includes(a)) continue;
      L.push(
        `    ctx->saved_data[${cxxString(a.name)}] = ${savedValue(printType(a.type).replace(/\[\d+\]$/, "[]")).store(a.name)};`,
      );
    }
  }
  if (m.nonDifferentiable.length > 0) {
    L.push("    // derivatives.yaml: output_differentiability");
    L.push(`    ctx->mark_non_differentiable({${m.nonDifferentiable.map((i) => outs[i]!).join(", ")}});`);
  }
  L.push(`    for (const at::Tensor& r : {${outs.join(", ")}}) {`);
  L.push(
    "      if (!c10::isFloatingType(r.scalar_type()) && !c10::isComplexType(r.scalar_type())) ctx->mark_non_differentiable({r});",
  );
  L.push("    }");
  L.push(multi ? `    return {${outs.join(", ")}};` : "    return result;");
  L.push("  }");
  L.push("");
  L.push(
    "  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {",
  );
  if (m.formula !== null) {
    L.push(...formulaBackward(m, m.formula, args, tensors, outs.length));
  } else if (m.backward === null) {
    L.push("    (void)ctx;");
    L.push("    (void)grads;");
    const what = m.ns === "aten" ? `${m.name}${m.overload ? `.${m.overload}` : ""}` : `${m.ns}::${m.name}`;
    const how =
      m.ns === "aten"
        ? `list it under autograd: as {op: ${what}, backward: <kernel of a custom: operator>} in backend.yaml`
        : "give its custom: entry a backward: in backend.yaml";
    L.push(
      `    TORCH_CHECK_NOT_IMPLEMENTED(false, ${cxxString(`backward of ${what} not implemented for ${device}; ${how}`)});`,
    );
  } else {
    const b = m.backward;
    const bsig = new DispatcherSignature(b.func, NO_FLAGS, "backward");
    const dot = b.name.indexOf(".");
    const [bname, bover] = dot < 0 ? [b.name, ""] : [b.name.slice(0, dot), b.name.slice(dot + 1)];
    L.push(`    ${handle(device, bname, bover, bsig)}`);
    L.push("    const torch::autograd::variable_list saved = ctx->get_saved_variables();");
    const callArgs: string[] = m.func.returns.map((_, i) => `grads[${i}]`);
    for (const a of args) {
      const ti = tensors.indexOf(a);
      if (ti >= 0) {
        callArgs.push(
          printType(a.type) === "Tensor?"
            ? `saved[${ti}].defined() ? std::optional<at::Tensor>(saved[${ti}]) : std::nullopt`
            : `saved[${ti}]`,
        );
      } else {
        callArgs.push(
          savedValue(printType(a.type).replace(/\[\d+\]$/, "[]")).load(`ctx->saved_data[${cxxString(a.name)}]`),
        );
      }
    }
    L.push(`    const auto r = op.call(${callArgs.join(", ")});`);
    const nIn = args.filter((a) => isPlainTensor(a.type)).length;
    let k = 0;
    const gradsOut = args.map((a) => {
      if (!isPlainTensor(a.type)) return "at::Tensor()";
      const g = nIn === 1 ? "r" : `std::get<${k}>(r)`;
      k++;
      return g;
    });
    L.push(`    return {${gradsOut.join(", ")}};`);
  }
  L.push("  }");
  L.push("};");
  const wname = `${cls.slice(0, -"Function".length).replace(/^./, (c) => c.toLowerCase())}_autograd`;
  const call = `${cls}::apply(${args.map((a) => a.name).join(", ")})`;
  L.push("");
  L.push(`${sig.returns.cpp()} ${wname}(${params.join(", ")}) {`);
  if (multi) {
    L.push(`  const torch::autograd::variable_list r = ${call};`);
    L.push(`  return std::make_tuple(${m.func.returns.map((_, i) => `r[${i}]`).join(", ")});`);
  } else {
    L.push(`  return ${call};`);
  }
  L.push("}");
  return { code: L.join("\n"), wrapper: wname };
}

/** The file, or null when the YAML has neither custom operators nor autograd entries that get a Function. */
export function emitAutogradFunctions(plan: Plan, headerName: string, banner: string): string | null {
  const c = plan.config;
  const wrapped = wrappedAutograd(c);
  if (c.custom.length === 0 && wrapped.size === 0) return null;
  const byKernel = new Map(c.custom.map((o) => [o.kernel, o]));
  const scope =
    c.kernelHome.kind === "class" ? `::${c.cppNamespace}::${c.kernelHome.className}` : `::${c.cppNamespace}`;
  const models: FnModel[] = [];
  for (const e of c.autograd) {
    if (!wrapped.has(e.name)) continue;
    const bk = c.autogradBackward.get(e.name) ?? undefined;
    models.push({
      ns: "aten",
      name: e.fn.func.name.name.base,
      overload: e.fn.func.name.overloadName,
      func: e.fn.func,
      backward: bk === undefined ? null : byKernel.get(bk)!,
      formula: c.autogradFormula.get(e.name) ?? null,
      nonDifferentiable: plan.nonDifferentiableOutputs.get(e.name) ?? [],
    });
  }
  for (const o of c.custom) {
    const dot = o.name.indexOf(".");
    models.push({
      ns: c.device,
      name: dot < 0 ? o.name : o.name.slice(0, dot),
      overload: dot < 0 ? "" : o.name.slice(dot + 1),
      func: o.func,
      backward: o.backward === null ? null : byKernel.get(o.backward)!,
      formula: o.formula,
      nonDifferentiable: [],
    });
  }
  const fns = models.map((m) => ({ m, ...emitFunction(m, c.device) }));
  const L: string[] = [];
  L.push(`// ${banner}`);
  L.push("//");
  L.push("// Autograd Functions of the autograd: entries and custom: operators, and the");
  L.push("// custom operators' definitions (Note [Autograd entries are Functions] in");
  L.push("// opgen-backend's src/dest/autograd.ts).");
  L.push("");
  L.push("// clang-format off");
  L.push("");
  // Formulas call ATen's functions (at::rsqrt(...)) and operators (grad * x) as well as Tensor methods.
  const formulas = models.some((m) => m.formula !== null);
  for (const inc of [
    ...(formulas ? ["<ATen/Functions.h>", "<ATen/TensorOperators.h>"] : []),
    "<ATen/Tensor.h>",
    "<ATen/core/dispatch/Dispatcher.h>",
    "<c10/core/ScalarType.h>",
    "<torch/csrc/autograd/custom_function.h>",
    "<torch/library.h>",
    "<optional>",
    "<string>",
    "<tuple>",
    `"${headerName}"`,
  ]) {
    L.push(`#include ${inc}`);
  }
  L.push("");
  L.push("namespace {");
  L.push("");
  for (const f of fns) {
    L.push(f.code);
    L.push("");
  }
  const aten = fns.filter((f) => f.m.ns === "aten");
  if (aten.length > 0) {
    L.push(`TORCH_LIBRARY_IMPL(aten, ${c.autogradKey}, m) {`);
    for (const f of aten)
      L.push(`  m.impl(${cxxString(f.m.overload ? `${f.m.name}.${f.m.overload}` : f.m.name)}, &${f.wrapper});`);
    L.push("}");
    L.push("");
  }
  if (c.custom.length > 0) {
    L.push(`TORCH_LIBRARY(${c.device}, m) {`);
    for (const o of c.custom) L.push(`  m.def(${cxxString(o.schema)});`);
    L.push("}");
    L.push("");
    L.push(`TORCH_LIBRARY_IMPL(${c.device}, ${c.backend}, m) {`);
    for (const o of c.custom) L.push(`  m.impl(${cxxString(o.name)}, &${scope}::${o.kernel});`);
    L.push("}");
    L.push("");
    L.push(`TORCH_LIBRARY_IMPL(${c.device}, ${c.autogradKey}, m) {`);
    for (const f of fns.filter((x) => x.m.ns !== "aten")) {
      L.push(`  m.impl(${cxxString(f.m.overload ? `${f.m.name}.${f.m.overload}` : f.m.name)}, &${f.wrapper});`);
    }
    L.push("}");
    L.push("");
  }
  L.push("} // namespace");
  L.push("");
  return L.join("\n");
}
