/**
 * Schema -> C++ in the dispatcher API: the unboxed calling convention every
 * external-backend kernel follows (torchgen Note [External Backends Follow
 * Dispatcher API]; api/cpp.py + api/dispatcher.py are the reference). Unlike
 * the public C++ API there are no defaults, no TensorOptions bundling and
 * arguments come in schema order (positional, kwarg-only, out).
 *
 * Note [SymInt in kernel signatures]: a `SymInt` argument is `int64_t` (and
 * `SymInt[]` is `at::IntArrayRef`) unless the backend YAML lists the operator
 * under `symint:`, in which case the kernel takes `c10::SymInt` /
 * `c10::SymIntArrayRef` and its name gets a `_symint` suffix. Returns always
 * keep `c10::SymInt`. The dispatcher accepts either form at registration and
 * converts (guard_int) for int64_t kernels, so we register kernels with their
 * own signature and never convert by hand.
 *
 * Note [Per-function C++ flags]: two properties of a native function change
 * its C++ types: `use_const_ref_for_mutable_tensors` (mutable tensors are
 * `const at::Tensor &`) and being part of a structured group (`Tensor[]` is
 * `const at::ITensorListRef &` instead of `at::TensorList`). torchgen sets
 * them per function through thread-locals; here they are explicit options.
 */
import { printBaseOperatorName } from "../model/schema.js";
import type { Argument, FunctionSchema, NativeFunction, Return, Type } from "../model/types.js";
import { assertNever } from "../util/errors.js";
import { arrayC, arrayRefC, type CType, constRef, listC, mutRef, optionalC, T, tupleC, vectorC } from "./ctype.js";

export interface CppFlags {
  /** Kernel takes SymInt (Note [SymInt in kernel signatures]). */
  readonly symint: boolean;
  /** use_const_ref_for_mutable_tensors */
  readonly constRefForMutable: boolean;
  /** part of a structured group: `Tensor[]` -> `const at::ITensorListRef &` */
  readonly iListRef: boolean;
}

export function cppFlags(f: NativeFunction, symint: boolean): CppFlags {
  return {
    symint,
    constRefForMutable: f.useConstRefForMutableTensors,
    iListRef: f.structured || f.structuredDelegate !== null,
  };
}

function isBase(t: Type, name: string): boolean {
  return t.kind === "base" && t.name === name;
}

/** torchgen cpp.valuetype_type: null for Tensor/Scalar and lists other than bool[N]. */
function valueType(t: Type, symint: boolean): CType | null {
  switch (t.kind) {
    case "base": {
      const name = t.name;
      switch (name) {
        case "Tensor":
        case "Scalar":
          return null;
        case "SymInt":
          return symint ? T.symInt : T.int64;
        case "int":
          return T.int64;
        case "float":
          return T.double;
        case "bool":
          return T.bool;
        case "str":
          return T.stringView;
        case "Generator":
          return T.generator;
        case "ScalarType":
          return T.scalarType;
        case "DimVector":
          return T.dimVector;
        case "Layout":
          return T.layout;
        case "Device":
          return T.device;
        case "DeviceIndex":
          return T.deviceIndex;
        case "MemoryFormat":
          return T.memoryFormat;
        case "QScheme":
          return T.qscheme;
        case "Storage":
          return T.storage;
        case "Stream":
          return T.stream;
        case "SymBool":
          return T.symBool;
        case "GraphModule":
          throw new Error("GraphModule has no dispatcher C++ type");
        default:
          return assertNever(name, "base type");
      }
    }
    case "optional": {
      const e = valueType(t.elem, symint);
      return e === null ? null : optionalC(e);
    }
    case "list":
      if (isBase(t.elem, "bool")) {
        if (t.size === null) throw new Error("bool[] must have a size");
        return arrayC(T.bool, t.size);
      }
      return null;
    case "custom":
      throw new Error(`custom class type ${t.name} has no dispatcher C++ type`);
    default:
      return assertNever(t, "type");
  }
}

/** torchgen cpp.argumenttype_type (dispatcher flavour: no value-type conversion). */
export function argumentType(t: Type, mutable: boolean, flags: CppFlags): CType {
  const v = valueType(t, flags.symint);
  if (v !== null) return v;
  const tensorRef = mutable && !flags.constRefForMutable ? mutRef(T.tensor) : constRef(T.tensor);
  switch (t.kind) {
    case "base":
      if (t.name === "Tensor") return tensorRef;
      if (t.name === "Scalar") return constRef(T.scalar);
      throw new Error(`base type ${t.name} should have been a value type`);
    case "optional": {
      const e = t.elem;
      // torchgen: a mutable `Tensor(a!)?` is a plain `at::Tensor &` (sic).
      if (isBase(e, "Tensor"))
        return mutable && !flags.constRefForMutable ? mutRef(T.tensor) : constRef(optionalC(T.tensor));
      if (isBase(e, "Scalar")) return constRef(optionalC(T.scalar));
      if (e.kind === "list" && isBase(e.elem, "int")) return T.optionalIntArrayRef;
      if (e.kind === "list" && isBase(e.elem, "SymInt")) {
        return flags.symint ? T.optionalSymIntArrayRef : T.optionalIntArrayRef;
      }
      return optionalC(argumentType(e, mutable, flags));
    }
    case "list": {
      const e = t.elem;
      if (isBase(e, "int")) return T.intArrayRef;
      if (isBase(e, "SymInt")) return flags.symint ? T.symIntArrayRef : T.intArrayRef;
      if (isBase(e, "Tensor")) return flags.iListRef ? constRef(T.iTensorListRef) : T.tensorList;
      if (isBase(e, "Scalar")) return arrayRefC(T.scalar);
      if (e.kind === "optional" && isBase(e.elem, "Tensor")) return constRef(listC(optionalC(T.tensor)));
      return arrayRefC(argumentType(e, mutable, flags));
    }
    case "custom":
      throw new Error(`custom class type ${t.name} has no dispatcher C++ type`);
    default:
      return assertNever(t, "type");
  }
}

/** torchgen cpp.returntype_type; SymInt is always kept in returns. */
function returnType(t: Type, mutable: boolean, flags: CppFlags): CType {
  const v = valueType(t, true);
  if (v !== null) return v;
  switch (t.kind) {
    case "base":
      if (t.name === "Tensor") {
        if (!mutable) return T.tensor;
        return flags.constRefForMutable ? constRef(T.tensor) : mutRef(T.tensor);
      }
      if (t.name === "Scalar") return T.scalar;
      break;
    case "list":
      if (mutable) throw new Error("native functions never return a mutable tensor list");
      if (t.size !== null) throw new Error("fixed-size list returns are not supported");
      return vectorC(returnType(t.elem, false, flags));
    case "optional":
      if (isBase(t.elem, "Tensor")) return optionalC(returnType(t.elem, mutable, flags));
      break;
    default:
      break;
  }
  throw new Error(`unsupported return type ${JSON.stringify(t)}`);
}

export function returnsType(rs: readonly Return[], flags: CppFlags): CType {
  const one = (r: Return) => returnType(r.type, r.annotation?.isWrite === true, flags);
  if (rs.length === 0) return T.void;
  if (rs.length === 1) return one(rs[0]!);
  return tupleC(rs.map(one));
}

/** One C++ parameter: the schema argument it binds and its C++ type. */
export interface Binding {
  readonly name: string;
  readonly type: CType;
  readonly argument: Argument;
}

export function printBinding(b: Binding): string {
  return `${b.type.cpp()} ${b.name}`;
}

/** torchgen dispatcher.jit_arguments: positional, kwarg-only, out. */
export function jitArguments(s: FunctionSchema): readonly Argument[] {
  return [...s.arguments.positional, ...s.arguments.kwargOnly, ...s.arguments.out];
}

/** torchgen cpp.name / dispatcher.name: base name (with `_` for inplace), `_out` for out= overloads. */
export function dispatcherName(s: FunctionSchema): string {
  const base = printBaseOperatorName(s.name.name);
  return s.arguments.out.length > 0 ? `${base}_out` : base;
}

/**
 * A function in the dispatcher API: name, parameters, return type. Prints
 * declarations, definitions and pointer types (torchgen DispatcherSignature).
 */
export class DispatcherSignature {
  readonly args: readonly Binding[];
  readonly returns: CType;

  constructor(
    readonly func: FunctionSchema,
    readonly flags: CppFlags,
    readonly name: string,
  ) {
    this.args = Object.freeze(
      jitArguments(func).map((a) => ({
        name: a.name,
        type: argumentType(a.type, a.annotation?.isWrite === true, flags),
        argument: a,
      })),
    );
    this.returns = returnsType(func.returns, flags);
    Object.freeze(this);
  }

  /** `ret name(T a, U b)` — declarations and definitions look the same (no defaults). */
  decl(name: string = this.name): string {
    return `${this.returns.cpp()} ${name}(${this.args.map(printBinding).join(", ")})`;
  }

  /** Parameter types only, for function pointer types and signature comparison. */
  paramTypes(): string[] {
    return this.args.map((a) => a.type.cpp());
  }

  /** `ret (*)(T, U)` */
  ptrType(): string {
    return `${this.returns.cpp()} (*)(${this.paramTypes().join(", ")})`;
  }

  /** A key equal for signatures with the same C++ function type. */
  typeKey(): string {
    return `${this.returns.cpp()}(${this.paramTypes().join(",")})`;
  }
}

/**
 * The signature of a backend kernel for `f` (static member of class_name):
 * torchgen kernel_signature for external backends, named like
 * gen_backend_stubs names it (`dispatcherName`, `_symint` when listed).
 */
export function kernelSignature(f: NativeFunction, symint: boolean): DispatcherSignature {
  const name = dispatcherName(f.func) + (symint ? "_symint" : "");
  return new DispatcherSignature(f.func, cppFlags(f, symint), name);
}
