// The argument checks both kernel libraries make before any work, written
// once (Note [One definition per semantics] in Dtypes.h): dtype names in
// error texts, and the operand checks of the calls whose contract is the
// same on every device. Each check returns the error text, or nullptr when
// the operands are valid (a check that can also refuse a dtype returns a
// Verdict); the library records it with its own fail() (the per-thread
// text refkLastError() reads is each library's), so every device refuses
// the same calls with the same words.
#pragma once

#include "kernels/common/BinaryOps.h"
#include "kernels/common/Descriptors.h"
#include "kernels/common/UnaryOps.h"

#include <initializer_list>
#include <string>

namespace refk {

inline const char* dtype_name(refkDtype d) {
  switch (d) {
    case refkBool: return "bool";
    case refkUInt8: return "uint8";
    case refkInt8: return "int8";
    case refkInt16: return "int16";
    case refkInt32: return "int32";
    case refkInt64: return "int64";
    case refkFloat16: return "float16";
    case refkBFloat16: return "bfloat16";
    case refkFloat32: return "float32";
    case refkFloat64: return "float64";
    case refkComplex64: return "complex64";
    case refkComplex128: return "complex128";
    case refkUInt16: return "uint16";
    case refkUInt32: return "uint32";
    case refkUInt64: return "uint64";
    case refkFloat8E4M3FN: return "float8_e4m3fn";
    case refkFloat8E5M2: return "float8_e5m2";
    case refkFloat8E4M3FNUZ: return "float8_e4m3fnuz";
    case refkFloat8E5M2FNUZ: return "float8_e5m2fnuz";
    case refkFloat8E8M0FNU: return "float8_e8m0fnu";
  }
  return "unknown dtype";
}

inline bool is_floating_dtype(refkDtype d) {
  return d == refkFloat16 || d == refkBFloat16 || d == refkFloat32 || d == refkFloat64;
}

inline bool is_index_dtype(refkDtype d) { return d == refkInt32 || d == refkInt64; }

namespace check {

// What a check found: invalid operands (`error`, refkErrorInvalidValue), a
// dtype the call does not compute in (`unsupported_op` set: each library's
// unsupported(op, dtype), refkErrorUnsupportedDtype), or nothing. Each
// library's checked() turns it into a status.
struct Verdict {
  const char* error = nullptr;
  const char* error_op = nullptr;  // the call `error` is about, when its text does not name it
  const char* unsupported_op = nullptr;
  refkDtype dtype = refkFloat32;

  Verdict() = default;
  Verdict(const char* e) : error(e) {}  // implicit: a text check's answer is a verdict
  static Verdict unsupported(const char* op, refkDtype d) {
    Verdict v;
    v.unsupported_op = op;
    v.dtype = d;
    return v;
  }
  // An error of a check that several calls share: its text, named by the call.
  static Verdict invalid(const char* op, const char* e) {
    Verdict v(e);
    v.error_op = op;
    return v;
  }
  // The error text the library records: "op: error" or the error alone.
  std::string message() const { return error_op != nullptr ? std::string(error_op) + ": " + error : error; }
};

// Every operand has the first one's shape (and a rank the descriptors hold).
inline const char* same_shapes(std::initializer_list<const refkTensor*> ts) {
  const refkTensor* first = *ts.begin();
  for (const refkTensor* t : ts) {
    if (t->ndim < 0 || t->ndim > REFK_MAX_DIMS) return "bad ndim";
    if (!same_shape(*first, *t)) return "operands must have the output's shape";
  }
  return nullptr;
}

inline const char* where(const refkTensor& out, const refkTensor& cond, const refkTensor& a, const refkTensor& b) {
  if (cond.dtype != refkBool || a.dtype != out.dtype || b.dtype != out.dtype) {
    return "where: bool condition and one value dtype expected";
  }
  return nullptr;
}

// clamp's bounds: an absent one (data NULL) reads the input again, which is
// never selected; every operand has the output's shape and dtype.
struct ClampOperands {
  const refkTensor* lo;
  const refkTensor* hi;
};
inline ClampOperands clamp_operands(const refkTensor& in, const refkTensor& lo, const refkTensor& hi) {
  return ClampOperands{lo.data != nullptr ? &lo : &in, hi.data != nullptr ? &hi : &in};
}
inline Verdict clamp(const refkTensor& out, const refkTensor& in, const ClampOperands& b) {
  if (const char* e = same_shapes({&out, &in, b.lo, b.hi})) return Verdict::invalid("clamp", e);
  if (in.dtype != out.dtype || b.lo->dtype != out.dtype || b.hi->dtype != out.dtype) {
    return "clamp: operands must share the output's dtype";
  }
  return {};
}

inline const char* reduce(const refkTensor& out, const refkTensor& in, int32_t nreduce) {
  if (nreduce < 0 || out.ndim + nreduce != in.ndim) return "reduce: bad ranks";
  for (int d = 0; d < out.ndim; ++d) {
    if (out.sizes[d] != in.sizes[d]) return "reduce: kept dims must match";
  }
  return nullptr;
}

inline const char* argreduce(const refkTensor& indices, const refkTensor& in) {
  if (indices.ndim + 1 != in.ndim || indices.dtype != refkInt64) {
    return "argreduce: indices must be int64 with one dim fewer than the input";
  }
  if (in.sizes[in.ndim - 1] == 0) return "argreduce: cannot reduce an empty dimension";
  return nullptr;
}

inline const char* dropout(const refkTensor& out, const refkTensor& mask, const refkTensor& in) {
  if (mask.dtype != refkBool || out.dtype != in.dtype) return "dropout: a bool mask and one dtype for out and in expected";
  return nullptr;
}

// refkNllLoss and its gradient: x is self or grad_input.
inline Verdict nll_loss(const refkTensor& x, const refkTensor& target, const refkTensor* weight) {
  if (x.ndim != 2 || target.ndim != 1 || target.sizes[0] != x.sizes[0]) {
    return "nll_loss: expected self (batch x classes) and target (batch)";
  }
  if (target.dtype != refkInt64 && target.dtype != refkUInt8) return "nll_loss: targets are int64 or uint8";
  if (weight && (weight->dtype != x.dtype || weight->ndim != 1 || weight->sizes[0] != x.sizes[1])) {
    return "nll_loss: weight must have one element per class, of self's dtype";
  }
  if (!is_floating_dtype(x.dtype)) return Verdict::unsupported("nll_loss", x.dtype);
  return {};
}

// refkForeach over n tensors per list, for an op of `nin` tensor operands
// (common/Pointwise.h's foreach::operands; 0 for an unknown op): a, b as the
// op takes them, one scalar or n, and per tensor one shape and one floating
// dtype for all its operands.
inline Verdict foreach(int nin, int32_t n, const refkTensor* out, const refkTensor* self, const refkTensor* a,
                       const refkTensor* b, int32_t nscalars) {
  if (nin == 0) return "foreach: unknown op";
  if (n < 0 || (nscalars != 1 && nscalars != n) || (nin >= 2 && a == nullptr) || (nin >= 3 && b == nullptr)) {
    return "foreach: expected n tensors per operand and 1 or n scalars";
  }
  for (int32_t k = 0; k < n; ++k) {
    const refkTensor* ta = nin >= 2 ? &a[k] : &out[k];
    const refkTensor* tb = nin >= 3 ? &b[k] : &out[k];
    if (same_shapes({&out[k], &self[k], ta, tb}) != nullptr) {
      return "foreach: operands of a tensor must have its shape";
    }
    if (self[k].dtype != out[k].dtype || ta->dtype != out[k].dtype || tb->dtype != out[k].dtype) {
      return "foreach: operands of a tensor must share its dtype";
    }
    if (!is_floating_dtype(out[k].dtype)) return Verdict::unsupported("foreach", out[k].dtype);
  }
  return {};
}

inline const char* index_select(const refkTensor& out, const refkTensor& in, int32_t dim, const refkTensor& index) {
  if (in.ndim != out.ndim || dim < 0 || dim >= in.ndim || index.ndim > 1 || out.dtype != in.dtype ||
      !is_index_dtype(index.dtype)) {
    return "index_select: bad operands";
  }
  const int64_t n = numel(index);
  for (int d = 0; d < in.ndim; ++d) {
    if (out.sizes[d] != (d == dim ? n : in.sizes[d])) return "index_select: out has the wrong shape";
  }
  return nullptr;
}

inline const char* gather(const refkTensor& out, const refkTensor& in, int32_t dim, const refkTensor& index) {
  if (!same_shape(out, index)) return "gather: operands must have the output's shape";
  if (in.ndim != index.ndim || dim < 0 || dim >= in.ndim || out.dtype != in.dtype || !is_index_dtype(index.dtype)) {
    return "gather: bad operands";
  }
  for (int d = 0; d < in.ndim; ++d) {
    if (d != dim && index.sizes[d] > in.sizes[d]) return "gather: index is larger than the input outside dim";
  }
  return nullptr;
}

inline const char* embedding_backward(const refkTensor& gw, const refkTensor& grad, const refkTensor& indices) {
  if (gw.ndim != 2 || grad.ndim != 2 || indices.ndim != 1 || grad.sizes[0] != indices.sizes[0] ||
      grad.sizes[1] != gw.sizes[1]) {
    return "embedding_backward: expected grad_weight (rows x dim), grad (n x dim) and indices (n)";
  }
  if (!is_index_dtype(indices.dtype)) return "embedding_backward: indices are int32 or int64";
  if (grad.dtype != gw.dtype) return "embedding_backward: grad and grad_weight must share one dtype";
  return nullptr;
}

// refkBiasGelu (out, in, bias) and its gradient (grad_in, grad, in, bias):
// one shape and one floating dtype; bias is NULL when absent.
inline Verdict bias_gelu(bool backward, std::initializer_list<const refkTensor*> ts) {
  const char* op = backward ? "bias_gelu_backward" : "bias_gelu";
  const refkTensor* first = *ts.begin();
  for (const refkTensor* t : ts) {
    if (t != nullptr && (t->ndim < 0 || t->ndim > REFK_MAX_DIMS || !same_shape(*first, *t))) {
      return backward ? "bias_gelu_backward: operands must have the output's shape"
                      : "bias_gelu: operands must have the output's shape";
    }
  }
  for (const refkTensor* t : ts) {
    if (t != nullptr && t->dtype != first->dtype) {
      return backward ? "bias_gelu_backward: operands must share one dtype" : "bias_gelu: operands must share one dtype";
    }
  }
  if (!is_floating_dtype(first->dtype)) return Verdict::unsupported(op, first->dtype);
  return {};
}

// src is NULL when a value is scattered.
inline const char* scatter(const refkTensor& self, int32_t dim, const refkTensor& index, const refkTensor* src) {
  if (self.ndim != index.ndim || dim < 0 || dim >= self.ndim || !is_index_dtype(index.dtype) ||
      (src != nullptr && (src->ndim != index.ndim || src->dtype != self.dtype))) {
    return "scatter: bad operands";
  }
  for (int d = 0; d < index.ndim; ++d) {
    if ((d != dim && index.sizes[d] > self.sizes[d]) || (src != nullptr && index.sizes[d] > src->sizes[d])) {
      return "scatter: index is larger than self or src";
    }
  }
  return nullptr;
}

// refkTernary: self, a and b (b's data NULL for lerp's scalar weight) of
// out's shape and dtype; addcmul in any dtype but bool, addcdiv and lerp
// in floating ones.
inline Verdict ternary(refkTernaryOp op, const refkTensor& out, const refkTensor& self, const refkTensor& a,
                       const refkTensor& b) {
  if (op != refkAddcmul && op != refkAddcdiv && op != refkLerp) return "ternary: unknown op";
  const bool has_b = op != refkLerp || b.data != nullptr;
  if (!same_shape(out, self) || !same_shape(out, a) || (has_b && !same_shape(out, b))) {
    return "ternary: operands must have the output's shape";
  }
  if (self.dtype != out.dtype || a.dtype != out.dtype || (has_b && b.dtype != out.dtype)) {
    return "ternary: operands must share the output's dtype";
  }
  if (op == refkAddcmul ? out.dtype == refkBool : !is_floating_dtype(out.dtype)) {
    return Verdict::unsupported("ternary", out.dtype);
  }
  return {};
}

// refkLogSigmoid (out, in, buffer) and its gradient (grad_in, grad, in,
// buffer): one shape and one floating dtype; buffer's data may be NULL.
inline Verdict log_sigmoid(const char* op, std::initializer_list<const refkTensor*> ts, const refkTensor& buffer) {
  const refkTensor* first = *ts.begin();
  for (const refkTensor* t : ts) {
    if (!same_shape(*first, *t)) return Verdict::invalid(op, "operands must have the output's shape");
    if (t->dtype != first->dtype) return Verdict::invalid(op, "operands must share one dtype");
  }
  if (buffer.data != nullptr && (!same_shape(*first, buffer) || buffer.dtype != first->dtype)) {
    return Verdict::invalid(op, "buffer must have the input's shape and dtype");
  }
  if (!is_floating_dtype(first->dtype)) return Verdict::unsupported(op, first->dtype);
  return {};
}

// refkWeightNorm and its gradient: w (grad_v, grad_w) of v's shape and
// floating dtype, dim a dim of v, g (grad_g) of v's dtype and norm of v's
// dtype or float32 for the half types, both 1-d of v.size(dim) elements.
inline Verdict weight_norm(const char* op, std::initializer_list<const refkTensor*> like_v, const refkTensor& v,
                           std::initializer_list<const refkTensor*> like_g, const refkTensor& norm, int32_t dim) {
  if (dim < 0 || dim >= v.ndim) return Verdict::invalid(op, "dim is not a dim of v");
  for (const refkTensor* t : like_v) {
    if (!same_shape(v, *t) || t->dtype != v.dtype) return Verdict::invalid(op, "operands must have v's shape and dtype");
  }
  const refkDtype norm_dtype = v.dtype == refkFloat16 || v.dtype == refkBFloat16 ? refkFloat32 : v.dtype;
  for (const refkTensor* t : like_g) {
    if (t->ndim != 1 || t->sizes[0] != v.sizes[dim] || t->dtype != v.dtype) {
      return Verdict::invalid(op, "g must be 1-d of v.size(dim) elements of v's dtype");
    }
  }
  if (norm.ndim != 1 || norm.sizes[0] != v.sizes[dim] || norm.dtype != norm_dtype) {
    return Verdict::invalid(op, "norm must be 1-d of v.size(dim) elements (float32 for half v)");
  }
  if (!is_floating_dtype(v.dtype)) return Verdict::unsupported(op, v.dtype);
  return {};
}

// ---- entry prologues of the pointwise families ------------------------------
//
// After check_shapes: the dtypes an entry takes, from its op table
// (UnaryOps.h, BinaryOps.h), in the order the CPU library always checked
// them. A complex or storage-only input passes: dispatch refuses it
// (unsupported_dtype), except the CPU library's complex binary ops.

inline bool dispatch_refuses(refkDtype d) { return is_complex(d) || is_storage_only(d); }

inline Verdict unary(refkUnaryOp op, const refkTensor& out, const refkTensor& in) {
  if (dispatch_refuses(in.dtype)) return {};
  if (unary::is_predicate(op)) return out.dtype == refkBool ? Verdict{} : Verdict("unary: predicates write bool");
  if (!unary::supported(op, in.dtype)) return Verdict::unsupported("unary", in.dtype);
  if (out.dtype != in.dtype) return "unary: output dtype must match the input's";
  return {};
}

// The op itself (unary::has_backward) is asked after the dtype.
inline Verdict unary_backward(const refkTensor& grad_in, const refkTensor& grad, const refkTensor& x) {
  if (grad_in.dtype != x.dtype || grad.dtype != x.dtype) return "unary backward: operands must share one dtype";
  if (dispatch_refuses(x.dtype)) return {};
  if (!is_floating_dtype(x.dtype)) return Verdict::unsupported("unary backward", x.dtype);
  return {};
}

inline Verdict binary(refkBinaryOp op, const refkTensor& out, const refkTensor& a, const refkTensor& b) {
  if (a.dtype != b.dtype) return "binary: inputs must share one dtype";
  if (dispatch_refuses(a.dtype)) return {};
  if (binary::is_predicate(op)) return out.dtype == refkBool ? Verdict{} : Verdict("binary: comparisons write bool");
  if (!binary::supported(op, a.dtype)) return Verdict::unsupported("binary", a.dtype);
  if (out.dtype != a.dtype) return "binary: output dtype must match the inputs'";
  return {};
}

}  // namespace check
}  // namespace refk
