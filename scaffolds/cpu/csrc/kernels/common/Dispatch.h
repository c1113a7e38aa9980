// Dtype dispatch for kernels: calls `f(scalar_t{})` for the runtime dtype,
// so a kernel body is a generic lambda
//
//   dispatch_numeric(t.scalar_type(), "mm", [&](auto tag) {
//     using scalar_t = decltype(tag);
//     ...
//   });
//
// Each family is a named set, so widening one (say, adding complex to the
// pointwise kernels) is a one-line change here. Every instantiation costs
// compile time; the sets are as small as the operators' eager semantics
// allow. An unsupported dtype raises NotImplementedError naming the operator.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <c10/util/complex.h>

#include <cstdint>

namespace kernels {

[[noreturn]] inline void unsupported_dtype(const char* op, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", op, "\" not implemented for '", c10::toString(t), "'");
}

// half, bfloat16, float, double
template <typename F>
void dispatch_floating(at::ScalarType t, const char* op, F&& f) {
  switch (t) {
    case at::kHalf: return f(c10::Half{});
    case at::kBFloat16: return f(c10::BFloat16{});
    case at::kFloat: return f(float{});
    case at::kDouble: return f(double{});
    default: unsupported_dtype(op, t);
  }
}

// uint8, int8..int64, then the floating set (no bool)
template <typename F>
void dispatch_numeric(at::ScalarType t, const char* op, F&& f) {
  switch (t) {
    case at::kByte: return f(uint8_t{});
    case at::kChar: return f(int8_t{});
    case at::kShort: return f(int16_t{});
    case at::kInt: return f(int32_t{});
    case at::kLong: return f(int64_t{});
    default: return dispatch_floating(t, op, static_cast<F&&>(f));
  }
}

// bool and the numeric set
template <typename F>
void dispatch_all(at::ScalarType t, const char* op, F&& f) {
  if (t == at::kBool) return f(bool{});
  return dispatch_numeric(t, op, static_cast<F&&>(f));
}

// everything a tensor element can be read or written as (copies, fill_, .item())
template <typename F>
void dispatch_every(at::ScalarType t, const char* op, F&& f) {
  switch (t) {
    case at::kComplexHalf: return f(c10::complex<c10::Half>{});
    case at::kComplexFloat: return f(c10::complex<float>{});
    case at::kComplexDouble: return f(c10::complex<double>{});
    case at::kUInt16: return f(uint16_t{});
    case at::kUInt32: return f(uint32_t{});
    case at::kUInt64: return f(uint64_t{});
    default: return dispatch_all(t, op, static_cast<F&&>(f));
  }
}

} // namespace kernels
