/**
 * Plan -> `<Backend>NativeFunctions.h`: the kernel declarations vendors
 * implement (torchgen DispatchKeyNativeFunctions.h, same declarations, our
 * banner): static members of the struct class_name, or free functions in
 * cpp_namespace with `free_functions: true` (Note [Kernel home]).
 */
import path from "node:path";
import { assertNever } from "../util/errors.js";
import type { Plan } from "./plan.js";
import { CppFile } from "./printer.js";

export function headerFileName(plan: Plan): string {
  return `${plan.config.backend}NativeFunctions.h`;
}

export function emitHeader(plan: Plan, banner: string): string {
  const c = plan.config;
  const yamlName = path.basename(c.file);
  const home = c.kernelHome;
  let about: string[];
  let structOpen: string[];
  let structClose: string[];
  switch (home.kind) {
    case "class":
      about = [
        `The kernels of the ${c.backend} backend: one static member per operator`,
        `overload listed in ${yamlName}, in the dispatcher API (the signatures`,
        "torchgen's gen_backend_stubs.py declares). Define them in your kernel sources.",
      ];
      structOpen = [`struct ${home.className} {`];
      structClose = ["};"];
      break;
    case "free":
      about = [
        `The kernels of the ${c.backend} backend: one free function per operator`,
        `overload listed in ${yamlName} (free_functions: true), with the names and`,
        "dispatcher-API signatures torchgen's gen_backend_stubs.py gives its static",
        "members. The registration files include this header; kernel sources need",
        "not (so listing another operator rebuilds none of them): define each kernel",
        `in namespace ${c.cppNamespace}, declared where you like.`,
      ];
      structOpen = [];
      structClose = [];
      break;
    default:
      return assertNever(home, "kernel home");
  }
  const f = new CppFile()
    .line("#pragma once")
    .line()
    .comment(banner, "")
    .comment(...about);
  f.line().comment("clang-format off").line();
  f.include("<ATen/Tensor.h>").includesHere().line();
  f.line(`namespace ${c.cppNamespace} {`).line();
  for (const l of structOpen) f.line(l).line();
  f.lines(plan.declarations);
  for (const l of structClose) f.line().line(l);
  return f.line().line(`} // namespace ${c.cppNamespace}`).toString();
}
