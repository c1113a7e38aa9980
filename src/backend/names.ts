/**
 * The closed sets and grammars that names from a backend YAML are checked
 * against before anything prints them into C++ or Python (see Note [Nothing
 * unchecked reaches C++] in types.ts). Each check returns null when the name is
 * fine, else the reason, phrased to follow "cpp_namespace ...".
 */

/** A user value quoted for a message: escapes newlines and quotes, shortens long values. */
export function q(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 77)}...` : s);
}

/** C++20 keywords and alternative tokens: none may name a namespace or class. */
// biome-ignore format: a word list reads best packed
const CPP_KEYWORDS: ReadonlySet<string> = new Set([
  "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
  "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
  "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
  "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
  "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
  "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
  "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
  "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
  "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
]);

const CPP_IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why `s` cannot be one C++ identifier, or null. */
export function cppIdentifierProblem(s: string): string | null {
  if (s.length === 0) return "is empty";
  if (!CPP_IDENT.test(s)) return `${q(s)} is not a C++ identifier (letters, digits and _, not starting with a digit)`;
  if (CPP_KEYWORDS.has(s)) return `${q(s)} is a C++ keyword`;
  // [lex.name]: these are reserved for the implementation in every scope.
  if (s.includes("__") || /^_[A-Z]/.test(s))
    return `${q(s)} is reserved in C++ (contains "__" or starts with _ and a capital)`;
  return null;
}

/** Why `s` cannot be a `a::b::c` namespace path, or null. */
export function cppNamespaceProblem(s: string): string | null {
  if (s.trim().length === 0) return "is empty";
  const parts = s.split("::");
  for (const p of parts) {
    if (p.length === 0) return `${q(s)} has an empty part (write a::b, without leading, trailing or doubled ::)`;
    const why = cppIdentifierProblem(p);
    if (why) return parts.length > 1 ? `part ${why}` : why;
  }
  // Declaring into std is undefined behaviour ([namespace.std]).
  if (parts[0] === "std") return `${q(s)} is inside namespace std, which programs may not add to`;
  return null;
}

// biome-ignore format: a word list reads best packed
const PY_KEYWORDS: ReadonlySet<string> = new Set([
  "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
  "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda",
  "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
]);

/** Why `s` cannot be a Python package (module) name, or null. */
export function pythonPackageProblem(s: string): string | null {
  if (s.length === 0) return "is empty";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) return `${q(s)} is not a Python identifier (letters, digits and _)`;
  if (PY_KEYWORDS.has(s)) return `${q(s)} is a Python keyword`;
  return null;
}

/**
 * Device type names torch 2.13 already parses (c10/core/DeviceType.cpp, plus
 * "metal" which c10 names but torch.device rejects). A renamed PrivateUse1
 * device may not reuse one. test/integration checks this list against torch.
 */
// biome-ignore format: a word list reads best packed
export const KNOWN_DEVICES: readonly string[] = [
  "cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla", "vulkan", "metal",
  "xpu", "mps", "meta", "hpu", "lazy", "ipu", "mtia", "privateuseone",
];

/**
 * Why `s` cannot be the name given to rename_privateuse1_backend, or null.
 * c10's device-string parser reads only lower-case letters and `_` before the
 * optional `:index` (checked against torch: `my2chip` and `MyChip` fail to
 * parse after a rename), and the name becomes an attribute `torch.<device>`.
 */
export function deviceNameProblem(s: string): string | null {
  if (s.length === 0) return "is empty";
  if (!/^[a-z][a-z_]*$/.test(s)) {
    return `${q(s)} cannot be a torch device name (torch parses only lower-case letters and _, starting with a letter)`;
  }
  if (KNOWN_DEVICES.includes(s)) return `${q(s)} is a device torch already has`;
  if (PY_KEYWORDS.has(s)) return `${q(s)} is a Python keyword, so torch.${s} could not be written`;
  return null;
}

/**
 * Every torchgen DispatchKey name (torchgen/model.py, torch 2.13) that is not an
 * allowed backend key. We tell "a real key PyTorch owns" apart from a typo.
 * test/integration checks this against torchgen's DispatchKey.
 */
// biome-ignore format: a word list reads best packed
const COMPONENTS = ["CPU", "CUDA", "HIP", "XLA", "MTIA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "Meta", "PrivateUse1", "PrivateUse2", "PrivateUse3"];
// biome-ignore format: a word list reads best packed
export const TORCHGEN_DISPATCH_KEYS: readonly string[] = [
  "Undefined", "CatchAll", "FPGA", "MAIA", "Vulkan", "Metal", "MKLDNN", "OpenGL", "OpenCL", "IDEEP",
  "CustomRNGKeyId", "MkldnnCPU", "Sparse", "SparseCsr", "NestedTensor", "Dense", "PythonTLSSnapshot",
  "PreDispatch", "PythonDispatcher", "Python", "FuncTorchDynamicLayerBackMode", "ZeroTensor", "Conjugate",
  "Negative", "BackendSelect", "Named", "AutogradOther", "AutogradFunctionality", "AutogradNestedTensor",
  "Tracer", "Autocast", "AutocastCPU", "AutocastCUDA", "AutocastXPU", "Batched", "VmapMode",
  "FuncTorchGradWrapper", "FuncTorchBatched", "BatchedNestedTensor", "FuncTorchVmapMode",
  "FuncTorchDynamicLayerFrontMode", "Functionalize", "TESTING_ONLY_GenericWrapper", "TESTING_ONLY_GenericMode",
  "ADInplaceOrView", "Autograd", "CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor",
  "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "FuncTorchBatchedDecomposition",
  ...["", "Quantized", "Sparse", "SparseCsr", "NestedTensor", "Autograd"].flatMap((f) => COMPONENTS.map((c) => f + c)),
];

/** Backend components whose kernels live in PyTorch itself. */
export const IN_TREE_BACKENDS: ReadonlySet<string> = new Set(["CPU", "CUDA", "HIP", "MPS", "XPU", "Meta"]);

/**
 * Namespaces where ATen (torch 2.13's generated headers) and libtorch declare
 * one C++ function per operator under the operator's own name: `at::add`,
 * `at::native::add`, `at::cpu::add`, `torch::empty`, ... Free-function
 * kernels (Note [Kernel home]) get those very names, so in one of these
 * namespaces they would redeclare or redefine torch's functions.
 */
// biome-ignore format: a word list reads best packed
export const ATEN_OPERATOR_NAMESPACES: readonly string[] = [
  "at", "torch", "at::_ops", "at::native", "at::symint", "at::redispatch", "at::meta", "at::cpu", "at::cuda",
  "at::mps", "at::xpu", "at::compositeexplicitautograd", "at::compositeexplicitautogradnonfunctional",
  "at::compositeimplicitautograd", "at::compositeimplicitautogradnestedtensor",
];

/** Why free-function kernels (free_functions: true) cannot live in namespace `ns`, or null. */
export function freeFunctionNamespaceProblem(ns: string): string | null {
  if (!ATEN_OPERATOR_NAMESPACES.includes(ns)) return null;
  return `${q(ns)} is where torch declares its own function for each operator (${ns}::add, ...), which free-function kernels of the same names would collide with`;
}
