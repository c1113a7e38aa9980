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
 * What gets a Function, with what backward, is the Plan's (`functions`,
 * src/dest/plan.ts); this file prints it.
 *
 * Note [Saved arguments]: tensors are saved with save_for_backward (an
 * absent `Tensor?` as an undefined tensor); int, float, bool, str, Scalar
 * and int lists in ctx->saved_data as IValues, read back as the owning C++
 * type (std::string for str, std::vector<int64_t> for int[]).
 */
import { DispatcherSignature } from "../api/dispatcher.js";
import { type BackwardFormula, formulaNames, isPlainTensor } from "../backend/custom.js";
import { autogradKey } from "../backend/types.js";
import { callArguments, printType } from "../model/schema.js";
import type { Argument } from "../model/types.js";
import { type AutogradFunction, NO_FLAGS, type Plan } from "./plan.js";
import { CppFile } from "./printer.js";

/**
 * The include block's order (Note [Include order] in printer.ts): what gen
 * has always printed, formulas' headers first.
 */
const INCLUDE_ORDER = [
  "<ATen/Functions.h>",
  "<ATen/TensorOperators.h>",
  "<ATen/Tensor.h>",
  "<ATen/core/dispatch/Dispatcher.h>",
  "<c10/core/ScalarType.h>",
  "<torch/csrc/autograd/custom_function.h>",
  "<torch/library.h>",
  "<optional>",
  "<string>",
  "<tuple>",
  /^"/,
];

function cxxString(s: string): string {
  return JSON.stringify(s);
}

function className(m: AutogradFunction): string {
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

function savedOf(a: Argument): ReturnType<typeof savedValue> {
  return savedValue(printType(a.type).replace(/\[\d+\]$/, "[]"));
}

/**
 * The body of a backward written as formulas (Note [Backward formulas] in
 * src/backend/custom.ts): locals for the names the formulas use, as the
 * Function saved them (Note [Saved arguments]), then one gradient per
 * forward argument, undefined where no formula is given. Only used names
 * get a local, so the generated code has no unused variables.
 */
function formulaBackward(
  f: CppFile,
  m: AutogradFunction,
  formula: BackwardFormula,
  args: readonly Argument[],
  tensors: readonly Argument[],
  nOut: number,
): void {
  // Formulas call ATen's functions (at::rsqrt(...)) and operators (grad * x) as well as Tensor methods.
  f.include("<ATen/Functions.h>", "<ATen/TensorOperators.h>");
  const used = new Set<string>();
  for (const e of formula.entries) {
    const r = formulaNames(e.expr);
    if ("names" in r) for (const n of r.names) used.add(n.name);
  }
  f.line("    // Note [Backward formulas]: the names the formulas use.");
  const savedTensors = tensors.filter((a) => used.has(a.name));
  const results = nOut === 1 ? ["result"] : Array.from({ length: nOut }, (_, i) => `result${i}`);
  const usedResults = results.filter((r) => used.has(r));
  if (savedTensors.length > 0 || usedResults.length > 0) {
    f.line("    const torch::autograd::variable_list saved = ctx->get_saved_variables();");
  } else f.line("    (void)ctx;");
  for (const a of args) {
    if (!used.has(a.name)) continue;
    const ti = tensors.indexOf(a);
    if (ti >= 0) {
      f.line(
        printType(a.type) === "Tensor?"
          ? `    const std::optional<at::Tensor> ${a.name} = saved[${ti}].defined() ? std::optional<at::Tensor>(saved[${ti}]) : std::nullopt;`
          : `    const at::Tensor& ${a.name} = saved[${ti}];`,
      );
    } else {
      f.line(`    const auto ${a.name} = ${savedOf(a).load(`ctx->saved_data[${cxxString(a.name)}]`)};`);
    }
  }
  for (const [i, r] of results.entries()) {
    if (used.has(r)) f.line(`    const at::Tensor& ${r} = saved[${tensors.length + i}];`);
  }
  if (used.has("grad")) f.line("    const at::Tensor& grad = grads[0];");
  if (!used.has("grad") && !used.has("grads")) f.line("    (void)grads;");
  const byInput = new Map(formula.entries.map((e) => [e.input, e.expr]));
  f.line(
    `    // ${m.ns}::${m.name}${m.overload ? `.${m.overload}` : ""}: one gradient per argument, undefined without a formula.`,
  );
  f.line("    return {");
  for (const a of args) {
    const e = byInput.get(a.name);
    f.line(e === undefined ? "        at::Tensor()," : `        at::Tensor(${e}),`);
  }
  f.line("    };");
}

/** The backward that raises: the YAML names neither a backward operator nor formulas. */
function missingBackward(f: CppFile, m: AutogradFunction, device: string): void {
  f.line("    (void)ctx;");
  f.line("    (void)grads;");
  const what = m.ns === "aten" ? `${m.name}${m.overload ? `.${m.overload}` : ""}` : `${m.ns}::${m.name}`;
  const how =
    m.ns === "aten"
      ? `list it under autograd: as {op: ${what}, backward: <kernel of a custom: operator>} in backend.yaml`
      : "give its custom: entry a backward: in backend.yaml";
  f.line(
    `    TORCH_CHECK_NOT_IMPLEMENTED(false, ${cxxString(`backward of ${what} not implemented for ${device}; ${how}`)});`,
  );
}

/** The backward that calls the backward operator (Note [Backward convention] in src/backend/custom.ts). */
function operatorBackward(
  f: CppFile,
  m: AutogradFunction,
  args: readonly Argument[],
  tensors: readonly Argument[],
  device: string,
): void {
  const b = m.backward!;
  const bsig = new DispatcherSignature(b.func, NO_FLAGS, "backward");
  const dot = b.name.indexOf(".");
  const [bname, bover] = dot < 0 ? [b.name, ""] : [b.name.slice(0, dot), b.name.slice(dot + 1)];
  f.line(`    ${handle(device, bname, bover, bsig)}`);
  f.line("    const torch::autograd::variable_list saved = ctx->get_saved_variables();");
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
      callArgs.push(savedOf(a).load(`ctx->saved_data[${cxxString(a.name)}]`));
    }
  }
  f.line(`    const auto r = op.call(${callArgs.join(", ")});`);
  const nIn = args.filter((a) => isPlainTensor(a.type)).length;
  let k = 0;
  const gradsOut = args.map((a) => {
    if (!isPlainTensor(a.type)) return "at::Tensor()";
    const g = nIn === 1 ? "r" : `std::get<${k}>(r)`;
    k++;
    return g;
  });
  f.line(`    return {${gradsOut.join(", ")}};`);
}

/** The Function and the plain function registered for it; returns that function's name. */
function printFunction(f: CppFile, m: AutogradFunction, device: string): string {
  // A Function is printed from dispatcher signatures and saves arguments as
  // IValues, so it may name std::optional, std::string and std::tuple: asked
  // for with every Function, not per type that appears, which keeps the
  // include block what gen has always printed.
  f.include(
    "<ATen/Tensor.h>",
    "<torch/csrc/autograd/custom_function.h>",
    "<c10/core/ScalarType.h>",
    "<optional>",
    "<string>",
    "<tuple>",
  );
  const sig = new DispatcherSignature(m.func, NO_FLAGS, "forward");
  const cls = className(m);
  const args = callArguments(m.func);
  const params = sig.args.map((a) => `${a.type.cpp()} ${a.name}`);
  const multi = m.func.returns.length > 1;
  const fwdRet = multi ? "torch::autograd::variable_list" : "at::Tensor";
  f.line(`struct ${cls} final : public torch::autograd::Function<${cls}> {`);
  f.line(`  static ${fwdRet} forward(${["torch::autograd::AutogradContext* ctx", ...params].join(", ")}) {`);
  f.include("<ATen/core/dispatch/Dispatcher.h>");
  f.line(`    ${handle(m.ns, m.name, m.overload, sig)}`);
  f.line(`    ${sig.returns.cpp()} result;`);
  f.line("    {");
  f.line("      at::AutoDispatchBelowADInplaceOrView guard;");
  f.line(`      result = op.call(${args.map((a) => a.name).join(", ")});`);
  f.line("    }");
  const outs = multi ? m.func.returns.map((_, i) => `std::get<${i}>(result)`) : ["result"];
  const tensors = args.filter(
    (a) => (a.type.kind === "base" && a.type.name === "Tensor") || printType(a.type) === "Tensor?",
  );
  if (m.backward || m.formula) {
    const saved = tensors.map((a) => (printType(a.type) === "Tensor?" ? `${a.name}.value_or(at::Tensor())` : a.name));
    // Note [Backward formulas]: outputs a formula names are saved after the inputs.
    if (m.formula?.usesResult) saved.push(...outs);
    f.line(`    ctx->save_for_backward({${saved.join(", ")}});`);
    for (const a of args) {
      if (!tensors.includes(a)) f.line(`    ctx->saved_data[${cxxString(a.name)}] = ${savedOf(a).store(a.name)};`);
    }
  }
  if (m.nonDifferentiable.length > 0) {
    f.line("    // derivatives.yaml: output_differentiability");
    f.line(`    ctx->mark_non_differentiable({${m.nonDifferentiable.map((i) => outs[i]!).join(", ")}});`);
  }
  f.line(`    for (const at::Tensor& r : {${outs.join(", ")}}) {`);
  f.line(
    "      if (!c10::isFloatingType(r.scalar_type()) && !c10::isComplexType(r.scalar_type())) ctx->mark_non_differentiable({r});",
  );
  f.line("    }");
  f.line(multi ? `    return {${outs.join(", ")}};` : "    return result;");
  f.line("  }");
  f.line();
  f.line(
    "  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {",
  );
  if (m.formula !== null) formulaBackward(f, m, m.formula, args, tensors, outs.length);
  else if (m.backward === null) missingBackward(f, m, device);
  else operatorBackward(f, m, args, tensors, device);
  f.line("  }");
  f.line("};");
  const wname = `${cls.slice(0, -"Function".length).replace(/^./, (c) => c.toLowerCase())}_autograd`;
  const call = `${cls}::apply(${args.map((a) => a.name).join(", ")})`;
  f.line();
  f.line(`${sig.returns.cpp()} ${wname}(${params.join(", ")}) {`);
  if (multi) {
    f.line(`  const torch::autograd::variable_list r = ${call};`);
    f.line(`  return std::make_tuple(${m.func.returns.map((_, i) => `r[${i}]`).join(", ")});`);
  } else {
    f.line(`  return ${call};`);
  }
  f.line("}");
  return wname;
}

/** `m.impl` names: `gelu`, `add.Tensor`. */
function implName(m: AutogradFunction): string {
  return cxxString(m.overload ? `${m.name}.${m.overload}` : m.name);
}

/** The file, or null when the plan has no Functions (no custom operators, no autograd entries that get one). */
export function emitAutogradFunctions(plan: Plan, headerName: string, banner: string): string | null {
  const c = plan.config;
  if (plan.functions.length === 0) return null;
  const f = new CppFile()
    .comment(
      banner,
      "",
      "Autograd Functions of the autograd: entries and custom: operators, and the",
      "custom operators' definitions (Note [Autograd entries are Functions] in",
      "opgen-backend's src/dest/autograd.ts).",
    )
    .line()
    .comment("clang-format off")
    .line();
  // The backend's header, as in the registration files; it declares the custom kernels registered below.
  f.include(`"${headerName}"`).includesHere({ order: INCLUDE_ORDER }).line().line("namespace {").line();
  const wrappers = new Map<AutogradFunction, string>();
  for (const m of plan.functions) {
    wrappers.set(m, printFunction(f, m, c.device));
    f.line();
  }
  const impls = (fns: readonly AutogradFunction[]) => {
    for (const m of fns) f.line(`  m.impl(${implName(m)}, &${wrappers.get(m)});`);
  };
  const aten = plan.functions.filter((m) => m.ns === "aten");
  if (aten.length > 0) {
    f.include("<torch/library.h>");
    f.line(`TORCH_LIBRARY_IMPL(aten, ${autogradKey(c.backend)}, m) {`);
    impls(aten);
    f.line("}").line();
  }
  if (plan.customKernels.length > 0) {
    f.include("<torch/library.h>");
    f.line(`TORCH_LIBRARY(${c.device}, m) {`);
    for (const k of plan.customKernels) f.line(`  m.def(${cxxString(k.op.schema)});`);
    f.line("}").line();
    f.line(`TORCH_LIBRARY_IMPL(${c.device}, ${c.backend}, m) {`);
    for (const k of plan.customKernels)
      f.line(`  m.impl(${cxxString(k.op.name)}, &::${plan.kernelScope}::${k.op.kernel});`);
    f.line("}").line();
    f.line(`TORCH_LIBRARY_IMPL(${c.device}, ${autogradKey(c.backend)}, m) {`);
    impls(plan.functions.filter((m) => m.ns !== "aten"));
    f.line("}").line();
  }
  return f.line("} // namespace").toString();
}
