/**
 * C++ types as data: what a schema type becomes in generated C++, kept as a
 * small tree (torchgen's api/types CType family) so that code can ask
 * structural questions ("is this a mutable reference?", "is this a list of
 * tensors?") instead of matching strings, and so that printing lives in one
 * place. Nodes are immutable and print themselves with `cpp()`
 * (`printCType` is the same spelling, by structure, for exhaustive checks).
 *
 * Note [C++ type spelling]: `cpp()` spells types exactly as torchgen does
 * (`const at::Tensor &`, `::std::optional<int64_t>`, `::std::tuple<a,b>`
 * without spaces after commas) because vendors diff our header against the
 * one torchgen gave them, and the oracle test compares declaration strings.
 */
import { assertNever } from "../util/errors.js";

/** A named, non-templated C++ type: `at::Tensor`, `int64_t`, `c10::SymIntArrayRef`. */
export interface BaseCType {
  readonly kind: "base";
  readonly name: string;
  cpp(): string;
}
export interface ConstRefCType {
  readonly kind: "constRef";
  readonly elem: CType;
  cpp(): string;
}
export interface MutRefCType {
  readonly kind: "mutRef";
  readonly elem: CType;
  cpp(): string;
}
export interface OptionalCType {
  readonly kind: "optional";
  readonly elem: CType;
  cpp(): string;
}
/** `::std::vector<T>` (returns of `Tensor[]`). */
export interface VectorCType {
  readonly kind: "vector";
  readonly elem: CType;
  cpp(): string;
}
/** `::std::array<T,N>` (`bool[3]`). */
export interface ArrayCType {
  readonly kind: "array";
  readonly elem: CType;
  readonly size: number;
  cpp(): string;
}
export interface TupleCType {
  readonly kind: "tuple";
  readonly elems: readonly CType[];
  cpp(): string;
}
/** `c10::List<T>` (`Tensor?[]`). */
export interface ListCType {
  readonly kind: "list";
  readonly elem: CType;
  cpp(): string;
}
/** `at::ArrayRef<T>` (`Scalar[]`, `Dimname[]`-like lists without a named alias). */
export interface ArrayRefCType {
  readonly kind: "arrayRef";
  readonly elem: CType;
  cpp(): string;
}

export type CType =
  | BaseCType
  | ConstRefCType
  | MutRefCType
  | OptionalCType
  | VectorCType
  | ArrayCType
  | TupleCType
  | ListCType
  | ArrayRefCType;

export function printCType(t: CType): string {
  switch (t.kind) {
    case "base":
      return t.name;
    case "constRef":
      return `const ${printCType(t.elem)} &`;
    case "mutRef":
      return `${printCType(t.elem)} &`;
    case "optional":
      return `::std::optional<${printCType(t.elem)}>`;
    case "vector":
      return `::std::vector<${printCType(t.elem)}>`;
    case "array":
      return `::std::array<${printCType(t.elem)},${t.size}>`;
    case "tuple":
      return `::std::tuple<${t.elems.map(printCType).join(",")}>`;
    case "list":
      return `c10::List<${printCType(t.elem)}>`;
    case "arrayRef":
      return `at::ArrayRef<${printCType(t.elem)}>`;
    default:
      return assertNever(t, "C++ type");
  }
}

/** One node: its printed form is computed once, when it is built (children print first). */
class Node {
  private readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  cpp(): string {
    return this.text;
  }
}

class Base extends Node implements BaseCType {
  readonly kind = "base" as const;
  constructor(readonly name: string) {
    super(name);
  }
}
class ConstRef extends Node implements ConstRefCType {
  readonly kind = "constRef" as const;
  constructor(readonly elem: CType) {
    super(`const ${elem.cpp()} &`);
  }
}
class MutRef extends Node implements MutRefCType {
  readonly kind = "mutRef" as const;
  constructor(readonly elem: CType) {
    super(`${elem.cpp()} &`);
  }
}
class Optional extends Node implements OptionalCType {
  readonly kind = "optional" as const;
  constructor(readonly elem: CType) {
    super(`::std::optional<${elem.cpp()}>`);
  }
}
class Vector extends Node implements VectorCType {
  readonly kind = "vector" as const;
  constructor(readonly elem: CType) {
    super(`::std::vector<${elem.cpp()}>`);
  }
}
class StdArray extends Node implements ArrayCType {
  readonly kind = "array" as const;
  constructor(
    readonly elem: CType,
    readonly size: number,
  ) {
    super(`::std::array<${elem.cpp()},${size}>`);
  }
}
class Tuple extends Node implements TupleCType {
  readonly kind = "tuple" as const;
  constructor(readonly elems: readonly CType[]) {
    super(`::std::tuple<${elems.map((e) => e.cpp()).join(",")}>`);
  }
}
class List extends Node implements ListCType {
  readonly kind = "list" as const;
  constructor(readonly elem: CType) {
    super(`c10::List<${elem.cpp()}>`);
  }
}
class ArrayRef extends Node implements ArrayRefCType {
  readonly kind = "arrayRef" as const;
  constructor(readonly elem: CType) {
    super(`at::ArrayRef<${elem.cpp()}>`);
  }
}

const baseCache = new Map<string, BaseCType>();
export function baseC(name: string): BaseCType {
  let t = baseCache.get(name);
  if (!t) {
    t = new Base(name);
    baseCache.set(name, t);
  }
  return t;
}
// Composite nodes are interned per element (base nodes are interned by name,
// so every node is): a type is built and printed once per process, not once
// per argument of every kernel (~20,000 for a backend listing every operator).
function interned<E, N>(make: (elem: E) => N): (elem: E) => N {
  const cache = new Map<E, N>();
  return (elem: E) => {
    let n = cache.get(elem);
    if (n === undefined) {
      n = make(elem);
      cache.set(elem, n);
    }
    return n;
  };
}
export const constRef: (elem: CType) => ConstRefCType = interned((elem: CType) => new ConstRef(elem));
export const mutRef: (elem: CType) => MutRefCType = interned((elem: CType) => new MutRef(elem));
export const optionalC: (elem: CType) => OptionalCType = interned((elem: CType) => new Optional(elem));
export const vectorC: (elem: CType) => VectorCType = interned((elem: CType) => new Vector(elem));
export const arrayC = (elem: CType, size: number): ArrayCType => new StdArray(elem, size);
export const tupleC = (elems: readonly CType[]): TupleCType => new Tuple([...elems]);
export const listC: (elem: CType) => ListCType = interned((elem: CType) => new List(elem));
export const arrayRefC: (elem: CType) => ArrayRefCType = interned((elem: CType) => new ArrayRef(elem));

// The named C++ types the dispatcher API uses (torchgen api/types/types.py).
export const T = Object.freeze({
  void: baseC("void"),
  bool: baseC("bool"),
  int64: baseC("int64_t"),
  double: baseC("double"),
  tensor: baseC("at::Tensor"),
  scalar: baseC("at::Scalar"),
  scalarType: baseC("at::ScalarType"),
  layout: baseC("at::Layout"),
  device: baseC("at::Device"),
  deviceIndex: baseC("at::DeviceIndex"),
  memoryFormat: baseC("at::MemoryFormat"),
  qscheme: baseC("at::QScheme"),
  storage: baseC("at::Storage"),
  stream: baseC("at::Stream"),
  generator: baseC("at::Generator"),
  dimVector: baseC("at::DimVector"),
  stringView: baseC("c10::string_view"),
  symInt: baseC("c10::SymInt"),
  symBool: baseC("c10::SymBool"),
  intArrayRef: baseC("at::IntArrayRef"),
  symIntArrayRef: baseC("c10::SymIntArrayRef"),
  optionalIntArrayRef: baseC("at::OptionalIntArrayRef"),
  optionalSymIntArrayRef: baseC("at::OptionalSymIntArrayRef"),
  tensorList: baseC("at::TensorList"),
  iTensorListRef: baseC("at::ITensorListRef"),
});
