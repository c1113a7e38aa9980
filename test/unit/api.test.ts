/**
 * Schema types -> dispatcher-API C++ types (src/api), table-driven. Expected
 * strings are torchgen's spelling (Note [C++ type spelling]); the oracle test
 * checks whole headers against torchgen itself.
 */
import { describe, expect, it } from "vitest";
import { constRef, printCType, T, tupleC } from "../../src/api/ctype.js";
import {
  argumentType,
  type CppFlags,
  DispatcherSignature,
  dispatcherName,
  returnsType,
} from "../../src/api/dispatcher.js";
import { parseSchema } from "../../src/model/catalog.js";

const PLAIN: CppFlags = { symint: false, constRefForMutable: false, iListRef: false };
const SYM: CppFlags = { ...PLAIN, symint: true };
const ILIST: CppFlags = { ...PLAIN, iListRef: true };
const CONSTMUT: CppFlags = { ...PLAIN, constRefForMutable: true };

/** The C++ type of the one argument of `f(<decl>) -> ()`. */
function arg(decl: string, flags: CppFlags): string {
  const a = parseSchema(`f(${decl}) -> ()`).arguments.positional[0]!;
  return argumentType(a.type, a.annotation?.isWrite === true, flags).cpp();
}

function ret(returns: string, flags: CppFlags = PLAIN): string {
  return returnsType(parseSchema(`f(Tensor(a!) self, Tensor(b!) out) -> ${returns}`).returns, flags).cpp();
}

describe("argument types", () => {
  it.each<[string, CppFlags, string]>([
    ["Tensor self", PLAIN, "const at::Tensor &"],
    ["Tensor(a) self", PLAIN, "const at::Tensor &"],
    ["Tensor(a!) self", PLAIN, "at::Tensor &"],
    ["Tensor(a!) self", CONSTMUT, "const at::Tensor &"],
    ["Tensor? weight", PLAIN, "const ::std::optional<at::Tensor> &"],
    ["Tensor(a!)? out", PLAIN, "at::Tensor &"],
    ["Tensor[] tensors", PLAIN, "at::TensorList"],
    ["Tensor[] tensors", ILIST, "const at::ITensorListRef &"],
    ["Tensor(a!)[] out", PLAIN, "at::TensorList"],
    ["Tensor?[] indices", PLAIN, "const c10::List<::std::optional<at::Tensor>> &"],
    ["Scalar alpha", PLAIN, "const at::Scalar &"],
    ["Scalar? min", PLAIN, "const ::std::optional<at::Scalar> &"],
    ["Scalar[] scalars", PLAIN, "at::ArrayRef<at::Scalar>"],
    ["int dim", PLAIN, "int64_t"],
    ["int? dim", PLAIN, "::std::optional<int64_t>"],
    ["int[] dims", PLAIN, "at::IntArrayRef"],
    ["int[2] stride", PLAIN, "at::IntArrayRef"],
    ["int[1]? dim", PLAIN, "at::OptionalIntArrayRef"],
    ["SymInt n", PLAIN, "int64_t"],
    ["SymInt n", SYM, "c10::SymInt"],
    ["SymInt? n", PLAIN, "::std::optional<int64_t>"],
    ["SymInt? n", SYM, "::std::optional<c10::SymInt>"],
    ["SymInt[] size", PLAIN, "at::IntArrayRef"],
    ["SymInt[] size", SYM, "c10::SymIntArrayRef"],
    ["SymInt[1]? s", PLAIN, "at::OptionalIntArrayRef"],
    ["SymInt[1]? s", SYM, "at::OptionalSymIntArrayRef"],
    ["float p", PLAIN, "double"],
    ["float[]? scale", PLAIN, "::std::optional<at::ArrayRef<double>>"],
    ["bool keepdim", PLAIN, "bool"],
    ["bool[3] output_mask", PLAIN, "::std::array<bool,3>"],
    ["bool? pin_memory", PLAIN, "::std::optional<bool>"],
    ["str reduce", PLAIN, "c10::string_view"],
    ["str? rounding_mode", PLAIN, "::std::optional<c10::string_view>"],
    ["ScalarType? dtype", PLAIN, "::std::optional<at::ScalarType>"],
    ["Layout? layout", PLAIN, "::std::optional<at::Layout>"],
    ["Device? device", PLAIN, "::std::optional<at::Device>"],
    ["DeviceIndex? index", PLAIN, "::std::optional<at::DeviceIndex>"],
    ["MemoryFormat? memory_format", PLAIN, "::std::optional<at::MemoryFormat>"],
    ["Generator? generator", PLAIN, "::std::optional<at::Generator>"],
    ["Storage source", PLAIN, "at::Storage"],
    ["Stream stream", PLAIN, "at::Stream"],
    ["QScheme qscheme", PLAIN, "at::QScheme"],
    ["SymBool b", PLAIN, "c10::SymBool"],
    ["Dimname dim", PLAIN, "<parse error>"],
  ])("%s (%o) -> %s", (decl, flags, want) => {
    if (want === "<parse error>") {
      expect(() => arg(decl, flags)).toThrow();
      return;
    }
    expect(arg(decl, flags)).toBe(want);
  });
});

describe("return types", () => {
  it.each<[string, CppFlags, string]>([
    ["()", PLAIN, "void"],
    ["Tensor", PLAIN, "at::Tensor"],
    ["Tensor(a)", PLAIN, "at::Tensor"],
    ["Tensor(a!)", PLAIN, "at::Tensor &"],
    ["Tensor(a!)", CONSTMUT, "const at::Tensor &"],
    ["(Tensor(a!), Tensor(b!))", PLAIN, "::std::tuple<at::Tensor &,at::Tensor &>"],
    ["(Tensor values, Tensor indices)", PLAIN, "::std::tuple<at::Tensor,at::Tensor>"],
    ["Tensor[]", PLAIN, "::std::vector<at::Tensor>"],
    ["Tensor(a)[]", PLAIN, "::std::vector<at::Tensor>"],
    ["(Tensor, Tensor[])", PLAIN, "::std::tuple<at::Tensor,::std::vector<at::Tensor>>"],
    ["Scalar", PLAIN, "at::Scalar"],
    ["SymInt", PLAIN, "c10::SymInt"],
    ["int", PLAIN, "int64_t"],
    ["float", PLAIN, "double"],
    ["bool", PLAIN, "bool"],
    ["ScalarType", PLAIN, "at::ScalarType"],
    ["Tensor?", PLAIN, "::std::optional<at::Tensor>"],
  ])("-> %s (%o) is %s", (returns, flags, want) => {
    expect(ret(returns, flags)).toBe(want);
  });
});

describe("signatures", () => {
  it.each<[string, boolean, string]>([
    [
      "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      false,
      "at::Tensor add(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha)",
    ],
    [
      "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
      false,
      "at::Tensor & add_out(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha, at::Tensor & out)",
    ],
    [
      "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
      false,
      "at::Tensor & add_(at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha)",
    ],
    [
      "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
      false,
      "at::Tensor & __iand__(at::Tensor & self, const at::Tensor & other)",
    ],
    [
      "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
      true,
      "at::Tensor view_symint(const at::Tensor & self, c10::SymIntArrayRef size)",
    ],
    [
      "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
      false,
      "at::Tensor empty(at::IntArrayRef size, ::std::optional<at::ScalarType> dtype, ::std::optional<at::Layout> layout, ::std::optional<at::Device> device, ::std::optional<bool> pin_memory, ::std::optional<at::MemoryFormat> memory_format)",
    ],
    [
      "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
      false,
      "::std::tuple<at::Tensor &,at::Tensor &> max_out(const at::Tensor & self, int64_t dim, bool keepdim, at::Tensor & max, at::Tensor & max_values)",
    ],
  ])("%s", (schema, symint, want) => {
    const s = parseSchema(schema);
    const flags = { ...PLAIN, symint };
    const sig = new DispatcherSignature(s, flags, dispatcherName(s) + (symint ? "_symint" : ""));
    expect(sig.decl()).toBe(want);
    expect(sig.ptrType()).toBe(
      want.replace(
        / \w+\((.*)\)$/,
        (_m, params: string) =>
          ` (*)(${params
            .split(", ")
            .map((p) => p.replace(/ \w+$/, ""))
            .join(", ")})`,
      ),
    );
  });
});

describe("C++ type objects", () => {
  it("print themselves, canonically", () => {
    const t = tupleC([constRef(T.tensor), T.int64]);
    expect(t.cpp()).toBe("::std::tuple<const at::Tensor &,int64_t>");
    expect(printCType(t)).toBe(t.cpp());
    expect(tupleC([constRef(T.tensor), T.int64]).cpp()).toBe(t.cpp());
    expect(tupleC([constRef(T.tensor), T.double]).cpp()).not.toBe(t.cpp());
  });
});
