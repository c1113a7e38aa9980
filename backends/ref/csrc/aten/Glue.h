// The ATen glue's shared vocabulary: tensors to kernel-library descriptors,
// result allocation on the right device, dtype casts through the library,
// and turning library errors into PyTorch errors.
//
// Note [What the glue decides]: everything PyTorch defines about an operator
// is decided here, with ATen's metadata helpers (at::result_type,
// at::infer_size, maybe_wrap_dim), never its compute: argument checks with
// eager's messages, the result dtype and shape, broadcasting (as stride-0
// descriptors), which dtype the library computes in, and allocation. The
// kernel library (kernels/RefKernels.h) then only computes, so the same glue
// drives the CPU library and a CUDA one.
//
// The only at::native names the glue may use are ATen's metadata helpers,
// which compute no tensor values: type promotion (ResultTypeState,
// update_result_type_state, result_type), out= resizing (resize_output),
// arange's length (compute_arange_size) and cat's argument checks
// (check_cat_no_zero_dim, cat_should_skip_tensor, check_cat_shape_except_dim).
// Pooling, padding, resampling, grid_sampler and col2im check their
// arguments themselves (Note [Pooling checks] in Pool.cpp, Note [Resampling
// checks] in Resample.cpp).
// test/integration/reference-layers.test.ts holds the glue to that list.
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

// A descriptor of t as it is (its own sizes and strides).
refkTensor describe(const at::Tensor& t, const char* op);
// A descriptor of t broadcast to `shape` (stride 0 on broadcast dims).
refkTensor describe_as(const at::Tensor& t, at::IntArrayRef shape, const char* op);
// A descriptor that sees a 0-d tensor as 1-d of size 1, as ATen's
// ensure_nonempty_* helpers do for gather, scatter and the losses' targets.
refkTensor describe_nonempty(const at::Tensor& t, const char* op);

// Note [Complex dtypes] (RefKernels.h): the library stores complex tensors,
// copies, fills, adds, multiplies and transforms them, nothing else; so
// kernel_dtype and describe refuse complex, and only the glue of those calls
// uses these, which take it.
refkTensor describe_storage(const at::Tensor& t, const char* op);
refkTensor describe_storage_as(const at::Tensor& t, at::IntArrayRef shape, const char* op);

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

// t as `dtype` on `device`: t itself when nothing changes, else a copy made by
// the library (a CPU 0-dim tensor becomes a filled device tensor).
at::Tensor to_dtype(const at::Tensor& t, c10::ScalarType dtype, c10::Device device, const char* op);

// A 0-dim device tensor holding s as dtype.
at::Tensor scalar_tensor_on(const c10::Scalar& s, c10::ScalarType dtype, c10::Device device);

// dst <- src (any dtypes, broadcast src to dst's shape), by the library.
void copy_into(const at::Tensor& dst, const at::Tensor& src, const char* op);

// A host copy of a 1-element device tensor's value (through the driver).
c10::Scalar read_scalar(const at::Tensor& t);

// `value` as an element of `dtype`, converted as eager's fill_ converts it
// (Scalar::to<T>: truncating, and refusing values the dtype cannot hold with
// "value cannot be converted to type ... without overflow").
refkScalar fill_value(const c10::Scalar& value, c10::ScalarType dtype, const char* op);

}  // namespace opgen_ref
