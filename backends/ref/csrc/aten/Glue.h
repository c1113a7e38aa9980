// The ATen glue's shared vocabulary: tensors to kernel-library descriptors,
// result allocation on the right device, dtype casts through the library,
// and turning library errors into PyTorch errors.
//
// Note [What the glue decides]: everything PyTorch defines about an operator
// is decided here, with ATen's public metadata helpers (at::result_type,
// at::infer_size, maybe_wrap_dim), never its compute: argument checks with
// eager's messages, the result dtype and shape, broadcasting (as stride-0
// descriptors), which dtype the library computes in, and allocation. The
// kernel library (kernels/RefKernels.h) then only computes, so the same glue
// drives the CPU library and a CUDA one.
//
// The glue uses nothing of at::native, ATen's kernels and their internal
// helpers: promotion over several operands (ResultDtype, Note [Result
// dtype]), out= resizing (resize_out), arange's length and cat's, pooling's,
// padding's, resampling's, grid_sampler's and col2im's argument checks
// (Note [Pooling checks] in Pool.cpp, Note [Resampling checks] in
// Resample.cpp) are written here, with eager's rules and messages.
// test/integration/reference-layers.test.ts holds the glue to that.
//
// Note [Device memory is not host memory]: glue code never dereferences a
// device pointer; values it needs on the host (a scalar, a count) come back
// through the driver (read_scalar), as on real hardware. The CPU driver
// enforces this (Note [Protected device memory]).
#pragma once

#include "kernels/RefKernels.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <initializer_list>
#include <optional>

namespace opgen_ref {

// The library's dtype for a torch dtype its compute calls take; throws for
// dtypes the library lacks (quantized, float8...) and for complex, with the
// op's name.
refkDtype kernel_dtype(c10::ScalarType t, const char* op);
bool has_kernel_dtype(c10::ScalarType t);
// Note [Storage dtypes] (RefKernels.h): uint16/32/64 and the float8 types,
// which the library copies and fills and computes nothing on. kernel_dtype
// and describe refuse them as they refuse complex; storage_dtype and
// describe_storage take both, for the copies and fills.
bool is_storage_only(c10::ScalarType t);
refkDtype storage_dtype(c10::ScalarType t, const char* op);

// A descriptor of t as it is (its own sizes and strides).
refkTensor describe(const at::Tensor& t, const char* op);
// A descriptor of t broadcast to `shape` (stride 0 on broadcast dims).
refkTensor describe_as(const at::Tensor& t, at::IntArrayRef shape, const char* op);
// A descriptor that sees a 0-d tensor as 1-d of size 1, as ATen's
// ensure_nonempty_* helpers do for gather, scatter and the losses' targets.
refkTensor describe_nonempty(const at::Tensor& t, const char* op);

// Note [Complex dtypes] (RefKernels.h): the library stores complex tensors
// and computes on them only in the calls that note says; so kernel_dtype and
// describe refuse complex (and the storage dtypes), and only the glue of
// those calls uses these, which take them.
refkTensor describe_storage(const at::Tensor& t, const char* op);
refkTensor describe_storage_as(const at::Tensor& t, at::IntArrayRef shape, const char* op);

// Note [Complex dtypes] (RefKernels.h): the calls that take complex (the
// byte movers, eq and ne, ...) admit their dtypes and describe their
// operands with these: the real dtypes and complex64/complex128, never the
// storage dtypes (kernel_dtype's refusal for those, and for complex32).
inline refkDtype complex_kernel_dtype(c10::ScalarType t, const char* op) {
  return c10::isComplexType(t) ? storage_dtype(t, op) : kernel_dtype(t, op);
}
inline refkTensor describe_complex(const at::Tensor& t, const char* op) {
  return t.is_complex() ? describe_storage(t, op) : describe(t, op);
}
inline refkTensor describe_complex_as(const at::Tensor& t, at::IntArrayRef shape, const char* op) {
  return t.is_complex() ? describe_storage_as(t, shape, op) : describe_as(t, shape, op);
}
// describe_nonempty, admitting complex.
inline refkTensor describe_complex_nonempty(const at::Tensor& t, const char* op) {
  if (!t.is_complex()) return describe_nonempty(t, op);
  refkTensor d = describe_storage(t, op);
  if (t.dim() == 0) {
    d.ndim = 1;
    d.sizes[0] = 1;
    d.strides[0] = 1;
  }
  return d;
}

// The stream and host threads of the current device.
refkContext context();

// Throws a PyTorch error carrying the library's message unless s == refkSuccess.
void check(refkStatus s, const char* op);

refkScalar kernel_scalar(const c10::Scalar& s);

// The device all tensor arguments live on (CPU 0-dim tensors are scalars and
// may come along, as in eager); eager's error when they disagree.
c10::Device common_device(std::initializer_list<const at::Tensor*> ts, const char* op);

// A new contiguous tensor on `device`.
at::Tensor empty(at::IntArrayRef shape, c10::ScalarType dtype, c10::Device device);

// Note [Result dtype]: eager's type promotion over any number of operands
// (torch.result_type's rule). Operands fall in three categories: tensors
// with dimensions, 0-dim tensors, and wrapped numbers (Python scalars; a
// floating or complex one counts as the default dtype of its kind). Each
// category promotes within itself; a higher category then decides, unless a
// lower one is of a higher kind (integral < floating < complex), which
// lifts the result to that kind.
class ResultDtype {
 public:
  // Counts t (an undefined tensor counts for nothing).
  ResultDtype& operator+=(const at::Tensor& t);
  c10::ScalarType get() const;

 private:
  c10::ScalarType dims_ = c10::ScalarType::Undefined;
  c10::ScalarType zero_dim_ = c10::ScalarType::Undefined;
  c10::ScalarType wrapped_ = c10::ScalarType::Undefined;
};

// at::result_type(a, b) by Note [Result dtype]'s rule, without the
// dispatcher round trip the op costs (binary kernels ask for it per call).
c10::ScalarType result_dtype(const at::Tensor& a, const at::Tensor& b);

// out= resized as eager's structured kernels resize it: untouched when it
// has `shape` already; else resized, with eager's deprecation warning when it
// held elements.
void resize_out(const at::Tensor& out, at::IntArrayRef shape);

// t as `dtype` on `device`: t itself when nothing changes, else a copy made by
// the library (a CPU 0-dim tensor becomes a filled device tensor).
at::Tensor to_dtype(const at::Tensor& t, c10::ScalarType dtype, c10::Device device, const char* op);

// A 0-dim device tensor holding s as dtype.
at::Tensor scalar_tensor_on(const c10::Scalar& s, c10::ScalarType dtype, c10::Device device);

// dst <- src (any dtypes, broadcast src to dst's shape), by the library;
// the values, whatever conjugate and negative bits each has (Note
// [Conjugate and negative bits] in Glue.cpp).
void copy_into(const at::Tensor& dst, const at::Tensor& src, const char* op);
// Conjugates (conj, complex t only) and negates (neg) t's memory in place.
void apply_bits(const at::Tensor& t, bool conj, bool neg, const char* op);

// Every element of t set to `value`: a complex t gets both parts (each
// rounded on its own, as c10::complex's conversion), a real one fill_value's
// conversion of it.
void fill_complex(const at::Tensor& t, c10::complex<double> value, const char* op);
void fill_scalar(const at::Tensor& t, const c10::Scalar& value, const char* op);

// A host copy of a 1-element device tensor's value (through the driver).
c10::Scalar read_scalar(const at::Tensor& t);

// `value` as an element of `dtype`, converted as eager's fill_ converts it
// (Scalar::to<T>: truncating, and refusing values the dtype cannot hold with
// "value cannot be converted to type ... without overflow").
refkScalar fill_value(const c10::Scalar& value, c10::ScalarType dtype, const char* op);

}  // namespace opgen_ref
