/**
 * A vendor's backend YAML, validated and fully defaulted: which aten operators
 * the device implements (and how), plus the few settings a PrivateUse1 backend
 * needs beyond torchgen's (the device name, its Python package, the fallback,
 * the dtypes it supports).
 *
 * Every torchgen key keeps torchgen's meaning (gen_backend_stubs.py /
 * gen_lazy_tensor.py); docs/backend-yaml.md documents each key and default.
 *
 * Note [Nothing unchecked reaches C++]: every string here that a template can
 * print into generated code (backend, cppNamespace, kernelHome's className,
 * device, pythonPackage, op names) has been checked against a closed grammar
 * or a closed set by load.ts; emitters may print them as they are.
 */
import type { NativeFunction } from "../model/types.js";
import type { Diagnostic, SourceLoc } from "../util/errors.js";
import type { BackwardFormula, CustomOp } from "./custom.js";

/**
 * Dispatch keys an out-of-tree backend may register kernels for. torchgen
 * accepts any DispatchKey; we accept the backend components that PyTorch does
 * not implement itself and that have a c10 DeviceType (PrivateUse2/3 have none,
 * so a device could never carry them).
 */
export const BACKEND_KEYS = ["PrivateUse1", "XLA", "Lazy", "HPU", "IPU", "VE", "MTIA"] as const;
export type BackendKey = (typeof BACKEND_KEYS)[number];

/** The torch device type name of each backend key before any rename (c10 DeviceTypeName, lower case). */
export const DEFAULT_DEVICE: Readonly<Record<BackendKey, string>> = {
  PrivateUse1: "privateuseone",
  XLA: "xla",
  Lazy: "lazy",
  HPU: "hpu",
  IPU: "ipu",
  VE: "ve",
  MTIA: "mtia",
};

/** `Autograd<backend>`: the dispatch key `autograd:` entries are registered on. */
export function autogradKey(backend: BackendKey): `Autograd${BackendKey}` {
  return `Autograd${backend}`;
}

/** What happens to an aten operator the backend does not list. */
export const FALLBACK_POLICIES = ["cpu", "none"] as const;
export type FallbackPolicy = (typeof FALLBACK_POLICIES)[number];

import type { Dtype } from "../vocab.js";

export { DTYPES, type Dtype } from "../vocab.js";

/** torch's other spellings of those dtypes (torch.half is torch.float16). */
export const DTYPE_ALIASES: Readonly<Record<string, Dtype>> = {
  float: "float32",
  double: "float64",
  half: "float16",
  cfloat: "complex64",
  cdouble: "complex128",
  long: "int64",
  int: "int32",
  short: "int16",
};

/**
 * Note [Kernel home]: where the kernels the generated header declares live.
 * `class` is torchgen's shape (and the default): static members of the struct
 * `class_name` in cpp_namespace. `free` (`free_functions: true`) is ours: free
 * functions `<cpp_namespace>::<name>`, same names and signatures. A kernel
 * source then needs only declarations of its own (per-family headers), not the
 * generated header, so adding an op to backend.yaml rebuilds no kernel file,
 * and it may define kernels the YAML does not list yet (an undeclared static
 * member is a compile error; an unregistered free function is not). Every
 * emitter that names a kernel in C++ switches on this (register.ts
 * qualifiedKernel, header.ts, kernels.ts, manifest.ts).
 */
export type KernelHome = { readonly kind: "class"; readonly className: string } | { readonly kind: "free" };

/** One operator named in `supported`, `autograd`, `symint`, `full_codegen` or `ir_gen`. */
export interface OpEntry {
  /** Full operator name as written and as in the catalog: `add.Tensor`, `relu`. */
  readonly name: string;
  /** Where the entry is written (the scalar's first character). */
  readonly loc: SourceLoc;
  readonly fn: NativeFunction;
}

/** One `non_native:` entry (lazy-tensor IR for an op outside native_functions.yaml); kept for torchgen parity. */
export interface NonNativeEntry {
  readonly func: string;
  readonly properties: readonly string[];
  readonly opkind: string | null;
  readonly loc: SourceLoc;
}

export interface BackendConfig {
  /** The YAML path as it was given (diagnostics cite it). */
  readonly file: string;
  /** SHA-256 of the YAML as it was read (the manifest's yaml_sha256). */
  readonly sourceSha256: string;
  /** `backend:` — the dispatch key kernels are registered on. */
  readonly backend: BackendKey;
  /** `cpp_namespace:` e.g. `at::mychip`. */
  readonly cppNamespace: string;
  /**
   * Where kernels live (Note [Kernel home]): `class_name:` (default
   * `<backend>NativeFunctions`, torchgen's), or free functions with
   * `free_functions: true`.
   */
  readonly kernelHome: KernelHome;
  /** `supported:` in file order, duplicates removed (full_codegen entries are NOT included; see fullCodegen). */
  readonly supported: readonly OpEntry[];
  /** `autograd:` in file order, duplicates removed. */
  readonly autograd: readonly OpEntry[];
  /** `symint:` in file order, duplicates removed: these kernels take c10::SymInt. */
  readonly symint: readonly OpEntry[];
  /** `full_codegen:` (lazy-tensor codegen); torchgen's gen_backend_stubs treats these as supported too. */
  readonly fullCodegen: readonly OpEntry[];
  /** `non_native:` (lazy-tensor only). */
  readonly nonNative: readonly NonNativeEntry[];
  /** `ir_gen:` (lazy-tensor only: IR nodes without lowering). */
  readonly irGen: readonly OpEntry[];
  /** `runtime:` overloads the project's runtime registers by hand (Note [Runtime operators] in load.ts). */
  readonly runtime: readonly OpEntry[];
  /** `use_out_as_primary:` derive functional/inplace wrappers from the out kernel. Default false. */
  readonly useOutAsPrimary: boolean;
  /** `device_guard:` wrappers set the current device from the arguments. Default false. */
  readonly deviceGuard: boolean;
  /** `device:` the torch device name (rename_privateuse1_backend); default per backend key. */
  readonly device: string;
  /** `python_package:` the importable package of the device; default `torch_<device>`. */
  readonly pythonPackage: string;
  /** `fallback:` default `cpu`. */
  readonly fallback: FallbackPolicy;
  /**
   * `dtypes:` the dtypes the device supports, in DTYPES order, duplicates
   * removed; null when the YAML does not say (the conformance runner then
   * tests its default set).
   */
  readonly dtypes: readonly Dtype[] | null;
  /**
   * `partial_dtypes:` (Note [Partial dtypes] in keys/dtypes.ts): dtypes only
   * some operators claim, each with those operators (sorted), in DTYPES
   * order; empty when the YAML does not say.
   */
  readonly partialDtypes: ReadonlyMap<Dtype, readonly string[]>;
  /** `custom:` vendor operators in file order (src/backend/custom.ts). */
  readonly custom: readonly CustomOp[];
  /**
   * `autograd:` entries written as mappings, `{op: ..., backward: <kernel>}`:
   * op name -> the kernel of the custom operator that computes its gradients
   * (Note [Backward convention] in custom.ts), or null (backward raises).
   * These get a generated autograd Function; an entry written as a plain name
   * keeps torchgen's meaning (Note [Autograd entries are Functions]).
   */
  readonly autogradBackward: ReadonlyMap<string, string | null>;
  /** `autograd:` mapping entries whose backward is formulas (Note [Backward formulas]): op name -> them. */
  readonly autogradFormula: ReadonlyMap<string, BackwardFormula>;
  /** Problems that do not stop generation (duplicates, defaults worth knowing). */
  readonly warnings: readonly Diagnostic[];
}
