/**
 * `backend:`, `device:` and `python_package:`: the dispatch key, the name the
 * device gets in torch (PrivateUse1 only), and the Python package named
 * after it.
 */
import type { SourceLoc } from "../../util/errors.js";
import { deviceNameProblem, IN_TREE_BACKENDS, pythonPackageProblem, q, TORCHGEN_DISPATCH_KEYS } from "../names.js";
import { didYouMean } from "../suggest.js";
import { BACKEND_KEYS, type BackendKey, DEFAULT_DEVICE } from "../types.js";
import type { KeyContext } from "./context.js";

export function readBackend(cx: KeyContext, node: unknown, keyLoc: SourceLoc): BackendKey | null {
  const allowed = `one of ${BACKEND_KEYS.join(", ")}`;
  const read = cx.readString("backend", node);
  if (read.kind === "invalid") return null;
  const raw = read.kind === "ok" ? read.value : "";
  if (raw.trim() === "") {
    cx.error(keyLoc, `\`backend\` is missing or empty; give the dispatch key to register on: ${allowed}`);
    return null;
  }
  if ((BACKEND_KEYS as readonly string[]).includes(raw)) return raw as BackendKey;
  const loc = cx.locOf(node);
  if (IN_TREE_BACKENDS.has(raw)) {
    cx.error(
      loc,
      `backend ${q(raw)} is a dispatch key PyTorch implements itself; an out-of-tree backend uses ${allowed}`,
    );
  } else if (raw === "PrivateUse2" || raw === "PrivateUse3") {
    cx.error(loc, `backend ${q(raw)} has no device type in torch, so no tensor can reach it; use ${allowed}`);
  } else if (TORCHGEN_DISPATCH_KEYS.includes(raw)) {
    cx.error(loc, `backend ${q(raw)} is not a backend dispatch key; use ${allowed}`);
  } else {
    const hint = didYouMean(raw, BACKEND_KEYS, 1);
    cx.error(loc, `unknown dispatch key ${q(raw)}${hint}${hint ? " " : "; "}backend must be ${allowed}`);
  }
  return null;
}

export function readDevice(cx: KeyContext, backend: BackendKey | null, node: unknown, backendLoc: SourceLoc): string {
  const fallbackName = backend ? DEFAULT_DEVICE[backend] : "privateuseone";
  const read = cx.readString("device", node);
  if (read.kind === "invalid") return fallbackName;
  if (read.kind === "absent") {
    if (backend === "PrivateUse1") {
      cx.warn(
        backendLoc,
        "no `device:` given, so the device keeps torch's name `privateuseone`; set `device: <name>` to rename it",
      );
    }
    return fallbackName;
  }
  const raw = read.value;
  if (backend !== null && backend !== "PrivateUse1" && raw !== fallbackName) {
    cx.error(
      cx.locOf(node),
      `device ${q(raw)} cannot be set for backend ${backend}: torch renames only PrivateUse1; remove it or write device: ${fallbackName}`,
    );
    return fallbackName;
  }
  if (backend !== null && backend !== "PrivateUse1") return raw;
  const why = deviceNameProblem(raw);
  if (why) {
    cx.error(cx.locOf(node), `device ${why}; choose a new lower-case name like mychip`);
    return fallbackName;
  }
  return raw;
}

export function readPythonPackage(cx: KeyContext, device: string, node: unknown): string {
  const ppRaw = cx.readString("python_package", node);
  let pythonPackage = `torch_${device}`;
  if (ppRaw.kind === "ok") {
    const why = pythonPackageProblem(ppRaw.value);
    if (why) {
      cx.error(cx.locOf(node), `python_package ${why}; it must be an importable name like torch_mychip`);
    } else pythonPackage = ppRaw.value;
  }
  return pythonPackage;
}
