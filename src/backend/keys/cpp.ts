/**
 * `cpp_namespace:`, `class_name:` and `free_functions:`: where the kernels
 * live in C++ (Note [Kernel home] in src/backend/types.ts).
 */
import type { SourceLoc } from "../../util/errors.js";
import { cppIdentifierProblem, cppNamespaceProblem, freeFunctionNamespaceProblem } from "../names.js";
import type { BackendKey, KernelHome } from "../types.js";
import type { KeyContext, TopKeys } from "./context.js";

/** The namespace, or "" when it is missing or wrong (reported). */
export function readCppNamespace(cx: KeyContext, node: unknown, keyLoc: SourceLoc): string {
  const nsRaw = cx.readString("cpp_namespace", node);
  if (nsRaw.kind === "invalid") {
    // reported by readString
  } else if (nsRaw.kind === "absent" || nsRaw.value.trim() === "") {
    cx.error(
      keyLoc,
      "`cpp_namespace` is missing or empty; give the C++ namespace of your kernels, e.g. `cpp_namespace: at::mychip`",
    );
  } else {
    const why = cppNamespaceProblem(nsRaw.value);
    if (why) {
      cx.error(cx.locOf(node), `cpp_namespace ${why}; it must be a C++ namespace path like at::mychip`);
    } else return nsRaw.value;
  }
  return "";
}

/** class_name and free_functions together: a class's static members, or free functions. */
export function readKernelHome(
  cx: KeyContext,
  top: TopKeys,
  backend: BackendKey | null,
  cppNamespace: string,
): KernelHome {
  const cnRaw = cx.readString("class_name", top.value("class_name"));
  let className = backend ? `${backend}NativeFunctions` : "";
  if (cnRaw.kind === "ok") {
    const why = cppIdentifierProblem(cnRaw.value);
    if (why) {
      cx.error(
        cx.locOf(top.value("class_name")),
        `class_name ${why}; it must be one C++ identifier like MychipNativeFunctions (no ::)`,
      );
    } else className = cnRaw.value;
  }
  const freeFunctions = cx.readBool("free_functions", top.value("free_functions"), false);
  if (freeFunctions) {
    const cnLoc = top.keyLoc("class_name");
    if (cnLoc) {
      const ff = top.keyLoc("free_functions")!;
      cx.error(
        cnLoc,
        `class_name cannot be given with free_functions: true (line ${ff.line}): free-function kernels are ` +
          "<cpp_namespace>::<name>, members of no struct; remove class_name, or remove free_functions to keep " +
          "kernels as static members of class_name",
      );
    }
    const why = cppNamespace === "" ? null : freeFunctionNamespaceProblem(cppNamespace);
    if (why) {
      cx.error(
        cx.locOf(top.value("cpp_namespace")),
        `cpp_namespace ${why}; with free_functions: true use a namespace of your own like at::mychip`,
      );
    }
  }
  return freeFunctions ? { kind: "free" } : { kind: "class", className };
}
