// How both kernel libraries report errors, written once (Note [One
// definition per semantics] in Dtypes.h): the per-thread text refkLastError()
// returns, the unsupported-dtype texts, a common/Checks.h verdict as a
// status, the shape and rank checks every entry point opens with, and the
// one dispatcher over the floating dtypes. Host code only; each library's
// refkLastError() reads last_error() (the C ABI both implement).
#pragma once

#include "kernels/common/Checks.h"

#include <initializer_list>
#include <string>

namespace refk {

// The text refkLastError() returns on this thread.
inline std::string& last_error() {
  thread_local std::string text;
  return text;
}

// Records the message refkLastError() returns on this thread; returns `s`.
inline refkStatus fail(refkStatus s, const std::string& message) {
  last_error() = message;
  return s;
}

inline refkStatus unsupported(const char* op, refkDtype d) {
  return fail(refkErrorUnsupportedDtype, std::string(op) + ": dtype " + dtype_name(d) + " is not supported");
}

// Dtypes.h's answer for a complex dtype given to a call that takes none.
inline refkStatus unsupported_dtype(refkDtype d) {
  return fail(refkErrorUnsupportedDtype, std::string("dtype ") + dtype_name(d) + " is not supported by this call");
}

// A common/Checks.h verdict as a status: its text as an invalid-value
// error, its refused dtype as unsupported(), or success.
inline refkStatus checked(const check::Verdict& v) {
  if (v.error != nullptr) return fail(refkErrorInvalidValue, v.message());
  if (v.unsupported_op != nullptr) return unsupported(v.unsupported_op, v.dtype);
  return refkSuccess;
}

// Checks that operands match the output's shape; an error status otherwise.
inline refkStatus check_shapes(const char* op, std::initializer_list<const refkTensor*> ts) {
  if (const char* e = check::same_shapes(ts)) return fail(refkErrorInvalidValue, std::string(op) + ": " + e);
  return refkSuccess;
}

inline refkStatus check_rank(const char* op, const refkTensor& t, int ndim) {
  if (t.ndim == ndim) return refkSuccess;
  return fail(refkErrorInvalidValue, std::string(op) + ": expected a " + std::to_string(ndim) + "-d operand");
}

// Which dtypes dispatch_floating takes: all four, or float32 and float64.
enum class Floating { all, no_half };

// Calls f(Tag<T>{}) for a floating dtype (f returns a refkStatus, or nothing
// for success), unsupported(op, d) for any other.
template <Floating kinds = Floating::all, class F>
refkStatus dispatch_floating(const char* op, refkDtype d, F&& f) {
  const auto call = [&](auto tag) -> refkStatus {
    if constexpr (std::is_void_v<decltype(f(tag))>) {
      f(tag);
      return refkSuccess;
    } else {
      return f(tag);
    }
  };
  switch (d) {
    case refkFloat16:
      if constexpr (kinds == Floating::no_half) return unsupported(op, d);
      else return call(Tag<Half>{});
    case refkBFloat16:
      if constexpr (kinds == Floating::no_half) return unsupported(op, d);
      else return call(Tag<BFloat16>{});
    case refkFloat32: return call(Tag<float>{});
    case refkFloat64: return call(Tag<double>{});
    default: return unsupported(op, d);
  }
}

}  // namespace refk
