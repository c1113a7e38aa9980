// Factories: full, full_like, scalar_tensor, fill (functional and in place,
// with a Scalar or a 0-dim tensor) and arange.start_step. The glue decides what eager decides -- the dtype a
// fill value implies, the conversion of the value to that dtype (with its
// overflow check), arange's length (arange_length) -- and the
// library fills (refkFill, refkArange).
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

namespace opgen_ref {
namespace {

at::TensorOptions factory_options(std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                                  std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory);
}

// out <- value (already converted with fill_value, which refuses complex);
// out lives on the device, of any dtype the library fills (the storage dtypes
// too, Note [Storage dtypes]).
at::Tensor filled(at::Tensor out, const refkScalar& value, const char* op) {
  if (out.numel() == 0) return out;
  const c10::DeviceGuard guard(out.device());
  const refkTensor d = describe_storage(out, op);
  const refkContext ctx = context();
  check(refkFill(&ctx, &d, value), op);
  return out;
}

// A fill whose result was asked for on another device (full_like(x,
// device='cpu')): made here, then moved, so that only the device computes.
at::Tensor filled_like(const at::Tensor& self, const at::Scalar& value, const at::TensorOptions& options,
                       std::optional<at::MemoryFormat> memory_format, const char* op) {
  const auto dtype = c10::typeMetaToScalarType(options.dtype());
  // Note [Complex dtypes]: a complex result is filled part by part.
  const auto fill = [&](at::Tensor out) {
    if (c10::isComplexType(dtype)) {
      fill_complex(out, value.toComplexDouble(), op);
      return out;
    }
    return filled(out, fill_value(value, dtype, op), op);
  };
  if (options.device().is_privateuseone()) return fill(at::empty_like(self, options, memory_format));
  return fill(at::empty_like(self, options.device(self.device()), memory_format)).to(options.device());
}

}  // namespace

at::Tensor full(at::IntArrayRef size, const at::Scalar& fill_value_, std::optional<at::ScalarType> dtype,
                std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory) {
  TORCH_CHECK(layout.value_or(at::kStrided) != at::kSparse, "full(...) is not implemented for sparse layout");
  // at::native::infer_full_options: the value's kind decides a missing dtype.
  if (!dtype.has_value()) {
    if (fill_value_.isBoolean()) {
      dtype = at::kBool;
    } else if (fill_value_.isIntegral(/*includeBool=*/false)) {
      dtype = at::kLong;
    } else if (fill_value_.isComplex()) {
      dtype = c10::toComplexType(c10::get_default_dtype_as_scalartype());
    } else {
      dtype = c10::get_default_dtype_as_scalartype();
    }
  }
  at::Tensor out = at::empty(size, factory_options(dtype, layout, device, pin_memory));
  return filled(out, fill_value(fill_value_, *dtype, "full"), "full");
}

at::Tensor full_like(const at::Tensor& self, const at::Scalar& fill_value_, std::optional<at::ScalarType> dtype,
                     std::optional<at::Layout> layout, std::optional<at::Device> device,
                     std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  const auto options = self.options().merge_in(factory_options(dtype, layout, device, pin_memory));
  return filled_like(self, fill_value_, options, memory_format, "full_like");
}

// The functional fill: a fresh tensor laid out like self.
at::Tensor fill(const at::Tensor& self, const at::Scalar& value) {
  return filled_like(self, value, self.options(), std::nullopt, "fill");
}

// In place, in one pass (an expanded self is filled through its stride-0
// dims, as eager allows); the value is checked even for an empty self.
at::Tensor& fill_(at::Tensor& self, const at::Scalar& value) {
  if (self.is_complex()) {
    fill_complex(self, value.toComplexDouble(), "fill_");
    return self;
  }
  const refkScalar v = fill_value(value, self.scalar_type(), "fill_");
  filled(self, v, "fill_");
  return self;
}

// fill_ with a 0-dim tensor (what masked_fill's and where's decompositions
// pass): as eager, a value on another device (a host scalar) is read and
// filled as a Scalar, one on self's device is copied into every element
// (refkCopy from a stride-0 source, casting as copy_ casts), through a
// copy of it when it is a view of self.
at::Tensor& fill_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  if (value.device() != self.device()) return opgen_ref::fill_(self, value.item());
  const c10::DeviceGuard guard(self.device());
  for (const c10::ScalarType t : {self.scalar_type(), value.scalar_type()}) {
    if (c10::isComplexType(t)) kernel_dtype(t, "fill_");  // throws (complex is not filled from a tensor)
    storage_dtype(t, "fill_");
  }
  if (self.numel() == 0) return self;
  at::Tensor v = value;
  if (self.is_alias_of(value)) {
    v = empty({}, value.scalar_type(), value.device());
    copy_into(v, value, "fill_");
  }
  copy_into(self, v, "fill_");
  return self;
}

at::Tensor scalar_tensor(const at::Scalar& s, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  // The default dtype whatever the scalar's kind, as eager.
  const auto t = dtype.value_or(c10::get_default_dtype_as_scalartype());
  at::Tensor out = at::empty({}, factory_options(t, layout, device, pin_memory));
  if (c10::isComplexType(t)) {
    fill_complex(out, s.toComplexDouble(), "scalar_tensor");
    return out;
  }
  return filled(out, fill_value(s, t, "scalar_tensor"), "scalar_tensor");
}

namespace {

// arange's length as eager computes it: the bounds checked in double, the
// length in double too (so every device agrees), except for int64, whose
// values double cannot all hold: there exact integer arithmetic.
int64_t arange_length(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, bool int64) {
  const double dstart = start.to<double>(), dend = end.to<double>(), dstep = step.to<double>();
  TORCH_CHECK(dstep > 0 || dstep < 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(dstart) && std::isfinite(dend), "unsupported range: ", dstart, " -> ", dend);
  TORCH_CHECK((dstep > 0 && dend >= dstart) || (dstep < 0 && dend <= dstart),
              "upper bound and lower bound inconsistent with step sign");
  double size = 0;
  if (int64) {
    const auto a = start.to<int64_t>(), b = end.to<int64_t>(), st = step.to<int64_t>();
    TORCH_CHECK_VALUE(st != 0, "step must be nonzero");
    const int64_t sign = (st > 0) - (st < 0);
    size = static_cast<double>((b - a + st - sign) / st);
  } else {
    size = std::ceil((dend - dstart) / dstep);
  }
  TORCH_CHECK(size >= 0 && size <= static_cast<double>(std::numeric_limits<int64_t>::max()),
              "invalid size, possible overflow?");
  return static_cast<int64_t>(size);
}

}  // namespace

at::Tensor arange(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                  std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                  std::optional<at::Device> device, std::optional<bool> pin_memory) {
  // Integral (bool included) bounds and step give int64 unless a dtype is asked for.
  if (!dtype.has_value()) {
    const bool integral = start.isIntegral(true) && end.isIntegral(true) && step.isIntegral(true);
    dtype = integral ? at::kLong : c10::get_default_dtype_as_scalartype();
  }
  // eager's arange_out: the length (arange_length), then start and step
  // converted to the accumulate type the CPU kernel computes in (with
  // Scalar::to's overflow checks).
  switch (*dtype) {
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble: break;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "\"arange_cpu\" not implemented for '", c10::toString(*dtype), "'");
  }
  const int64_t size = arange_length(start, end, step, *dtype == at::kLong);
  refkScalar a{}, s{};
  at::Tensor out = at::empty({size}, factory_options(dtype, layout, device, pin_memory));
  if (c10::isFloatingType(*dtype)) {
    const bool half = *dtype == at::kHalf || *dtype == at::kBFloat16;
    a.f = half ? static_cast<double>(start.toFloat()) : start.toDouble();
    s.f = half ? static_cast<double>(step.toFloat()) : step.toDouble();
  } else {
    a.i = start.toLong();
    s.i = step.toLong();
  }
  if (size == 0) return out;
  const c10::DeviceGuard guard(out.device());
  const refkTensor d = describe(out, "arange");
  const refkContext ctx = context();
  check(refkArange(&ctx, &d, a, s), "arange");
  return out;
}

}  // namespace opgen_ref
