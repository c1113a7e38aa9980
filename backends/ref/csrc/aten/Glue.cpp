// Descriptors, allocation, casts and errors for the ATen glue (Glue.h).
#include "aten/Glue.h"

#include "runtime/Runtime.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace opgen_ref {

namespace {

// `storage`: the dtypes only copies and fills take (complex, Note [Storage
// dtypes]) are accepted too.
refkDtype storage_dtype(c10::ScalarType t, const char* op, bool storage) {
  const auto d = runtime::kernel_dtype_of(t);
  TORCH_CHECK_NOT_IMPLEMENTED(d.has_value() && (storage || (!c10::isComplexType(t) && !is_storage_only(t))), "\"",
                              op, "\" not implemented for '", c10::toString(t), "' on ",
                              c10::get_privateuse1_backend());
  return *d;
}

refkTensor describe_with(const at::Tensor& t, at::IntArrayRef shape, const char* op, bool complex);

}  // namespace

bool is_storage_only(c10::ScalarType t) {
  return c10::isFloat8Type(t) || t == c10::kUInt16 || t == c10::kUInt32 || t == c10::kUInt64;
}

bool has_kernel_dtype(c10::ScalarType t) {
  return runtime::kernel_dtype_of(t).has_value() && !c10::isComplexType(t) && !is_storage_only(t);
}

refkDtype storage_dtype(c10::ScalarType t, const char* op) { return storage_dtype(t, op, true); }

refkDtype kernel_dtype(c10::ScalarType t, const char* op) { return storage_dtype(t, op, false); }

refkTensor describe(const at::Tensor& t, const char* op) { return describe_with(t, t.sizes(), op, false); }

refkTensor describe_as(const at::Tensor& t, at::IntArrayRef shape, const char* op) {
  return describe_with(t, shape, op, false);
}

refkTensor describe_storage(const at::Tensor& t, const char* op) { return describe_with(t, t.sizes(), op, true); }

refkTensor describe_storage_as(const at::Tensor& t, at::IntArrayRef shape, const char* op) {
  return describe_with(t, shape, op, true);
}

namespace {

refkTensor describe_with(const at::Tensor& t, at::IntArrayRef shape, const char* op, bool complex) {
  TORCH_CHECK(static_cast<int64_t>(shape.size()) <= REFK_MAX_DIMS, op, ": tensors of more than ", REFK_MAX_DIMS,
              " dimensions are not supported on ", c10::get_privateuse1_backend());
  refkTensor d{};
  d.data = t.numel() == 0 ? nullptr : const_cast<void*>(t.const_data_ptr());
  d.dtype = storage_dtype(t.scalar_type(), op, complex);
  d.ndim = static_cast<int32_t>(shape.size());
  // Right-aligned broadcast: dims t lacks, or has as 1 where shape does not, get stride 0.
  const int64_t offset = static_cast<int64_t>(shape.size()) - t.dim();
  TORCH_INTERNAL_ASSERT(offset >= 0, op, ": cannot broadcast a ", t.dim(), "-d tensor to ", shape);
  for (int64_t i = 0; i < d.ndim; ++i) {
    d.sizes[i] = shape[i];
    const int64_t j = i - offset;
    if (j < 0) {
      d.strides[i] = 0;
    } else if (t.size(j) == shape[i]) {
      d.strides[i] = t.stride(j);
    } else {
      TORCH_INTERNAL_ASSERT(t.size(j) == 1, op, ": cannot broadcast ", t.sizes(), " to ", shape);
      d.strides[i] = 0;
    }
  }
  return d;
}

}  // namespace

refkTensor describe_nonempty(const at::Tensor& t, const char* op) {
  refkTensor d = describe(t, op);
  if (t.dim() == 0) {
    d.ndim = 1;
    d.sizes[0] = 1;
    d.strides[0] = 1;
  }
  return d;
}

refkContext context() {
  return refkContext{runtime::current_stream(), static_cast<int32_t>(at::get_num_threads())};
}

void check(refkStatus s, const char* op) {
  if (s == refkSuccess) return;
  const std::string message = refkLastError();
  if (message == "ZeroDivisionError") TORCH_CHECK(false, "ZeroDivisionError");
  if (s == refkErrorUnsupportedDtype) TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": ", message);
  TORCH_CHECK(false, op, ": ", message);
}

refkScalar kernel_scalar(const c10::Scalar& s) {
  if (s.isFloatingPoint()) return refkScalar{s.toDouble(), static_cast<int64_t>(s.toDouble())};
  if (s.isBoolean()) return refkScalar{s.toBool() ? 1.0 : 0.0, s.toBool() ? 1 : 0};
  TORCH_CHECK(!s.isComplex(), "complex scalars are not supported on ", c10::get_privateuse1_backend());
  // A Python int past int64's range is a uint64 Scalar: its bits in `i`.
  if (s.type() == c10::kUInt64) return refkScalar{static_cast<double>(s.toUInt64()), static_cast<int64_t>(s.toUInt64())};
  return refkScalar{static_cast<double>(s.toLong()), s.toLong()};
}

c10::Device common_device(std::initializer_list<const at::Tensor*> ts, const char* op) {
  std::optional<c10::Device> device;
  for (const at::Tensor* t : ts) {
    if (t == nullptr || !t->defined()) continue;
    if (t->device().is_cpu() && t->dim() == 0) continue;
    if (!device) {
      device = t->device();
    } else {
      TORCH_CHECK(*device == t->device(),
                  "Expected all tensors to be on the same device, but found at least two devices, ", *device,
                  " and ", t->device(), "! (when checking argument for ", op, ")");
    }
  }
  TORCH_CHECK(device.has_value(), op, ": expected a tensor on ", c10::get_privateuse1_backend());
  TORCH_CHECK(device->is_privateuseone(), op, ": expected tensors on ", c10::get_privateuse1_backend(),
              ", got one on ", *device);
  return *device;
}

// A device output goes straight to the device's allocator, as eager CPU's
// TensorIterator outputs go to at::detail::empty_cpu: one dispatcher round
// trip less per output (about a microsecond, and most kernels allocate one
// or more). The guard places it on `device`, as empty.memory_format does.
at::Tensor empty(at::IntArrayRef shape, c10::ScalarType dtype, c10::Device device) {
  if (device.type() != c10::DeviceType::PrivateUse1) {
    return at::empty(shape, at::TensorOptions().dtype(dtype).device(device));
  }
  const c10::OptionalDeviceGuard guard(device.has_index() ? std::optional<c10::Device>(device) : std::nullopt);
  return at::detail::empty_generic(shape, runtime::device_allocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype, std::nullopt);
}

at::Tensor scalar_tensor_on(const c10::Scalar& s, c10::ScalarType dtype, c10::Device device) {
  at::Tensor t = empty({}, dtype, device);
  if (c10::isComplexType(dtype)) {
    fill_complex(t, s.toComplexDouble(), "scalar_tensor");
    return t;
  }
  const refkTensor d = describe_storage(t, "scalar_tensor");  // a real value fills complex as (value, 0)
  const refkContext ctx = context();
  check(refkFill(&ctx, &d, kernel_scalar(s)), "scalar_tensor");
  return t;
}

at::Tensor to_dtype(const at::Tensor& t, c10::ScalarType dtype, c10::Device device, const char* op) {
  if (t.device().is_cpu()) {
    TORCH_INTERNAL_ASSERT(t.dim() == 0, op, ": only 0-dim CPU tensors can join a device op");
    return scalar_tensor_on(t.item(), dtype, device);
  }
  if (t.scalar_type() == dtype) return t;
  at::Tensor out = empty(t.sizes(), dtype, device);
  copy_into(out, t, op);
  return out;
}

namespace {

// The real (part 0) or imaginary (part 1) parts of a complex descriptor's
// elements: the same elements seen as reals of its precision, strides doubled.
refkTensor part_of(const refkTensor& complex, int part) {
  refkTensor d = complex;
  d.dtype = complex.dtype == refkComplex64 ? refkFloat32 : refkFloat64;
  const size_t real_size = d.dtype == refkFloat32 ? sizeof(float) : sizeof(double);
  d.data = static_cast<char*>(complex.data) + part * real_size;
  for (int32_t i = 0; i < d.ndim; ++i) d.strides[i] *= 2;
  return d;
}

// Negates, in place, the real or imaginary parts of a complex descriptor's elements.
void negate_part(const refkTensor& complex, int part, const refkContext& ctx, const char* op) {
  const refkTensor d = part_of(complex, part);
  const refkUnaryParams p{};
  check(refkUnary(&ctx, refkNeg, &d, &d, &p), op);
}

}  // namespace

void fill_complex(const at::Tensor& t, c10::complex<double> value, const char* op) {
  if (t.numel() == 0) return;
  const refkTensor d = describe_storage(t, op);
  const refkContext ctx = context();
  // Each part rounds to the precision on its own, as c10::complex<float>(value) does.
  const refkTensor re = part_of(d, 0), im = part_of(d, 1);
  check(refkFill(&ctx, &re, refkScalar{value.real(), 0}), op);
  check(refkFill(&ctx, &im, refkScalar{value.imag(), 0}), op);
}

void fill_scalar(const at::Tensor& t, const c10::Scalar& value, const char* op) {
  if (t.is_complex()) return fill_complex(t, value.toComplexDouble(), op);
  const refkScalar v = fill_value(value, t.scalar_type(), op);
  if (t.numel() == 0) return;
  const refkTensor d = describe(t, op);
  const refkContext ctx = context();
  check(refkFill(&ctx, &d, v), op);
}

// Note [Conjugate and negative bits]: a tensor with the conjugate (or
// negative) bit holds conj(x) (or -x) for the value x it stands for. The
// dispatcher resolves the bits before most kernels (the Conjugate and
// Negative keys' fallbacks), but copy_, clone and the resolving ops
// themselves (resolve_conj, conj_physical) are fallthrough there, and
// resolve_conj is empty_like + copy_: a copy keeps the values, so dst's
// memory gets src's memory conjugated (negated) where their bits differ, as
// eager's copy_ does. Host<->device copies apply the bits on the device side
// (Copy.cpp's copy_).
void copy_into(const at::Tensor& dst, const at::Tensor& src, const char* op) {
  if (dst.numel() == 0) return;
  const refkTensor d = describe_storage(dst, op);
  const refkTensor s = describe_storage_as(src, dst.sizes(), op);
  const refkContext ctx = context();
  check(refkCopy(&ctx, &d, &s), op);
  apply_bits(dst, dst.is_conj() != src.is_conj(), dst.is_neg() != src.is_neg(), op);
}

void apply_bits(const at::Tensor& t, bool conj, bool neg, const char* op) {
  conj = conj && t.is_complex();
  if ((!conj && !neg) || t.numel() == 0) return;
  const refkTensor d = describe_storage(t, op);
  const refkContext ctx = context();
  if (!t.is_complex()) {
    const refkUnaryParams p{};
    check(refkUnary(&ctx, refkNeg, &d, &d, &p), op);
    return;
  }
  // conj negates the imaginary parts, neg both; both together the real ones.
  if (neg) negate_part(d, 0, ctx, op);
  if (neg != conj) negate_part(d, 1, ctx, op);
}

namespace {

c10::ScalarType promote(c10::ScalarType a, c10::ScalarType b) {
  if (a == c10::ScalarType::Undefined) return b;
  if (b == c10::ScalarType::Undefined) return a;
  return c10::promoteTypes(a, b);
}

// Note [Result dtype]: `higher`'s category decides unless `lower` is of a higher kind.
c10::ScalarType combine(c10::ScalarType higher, c10::ScalarType lower) {
  if (c10::isComplexType(higher)) return higher;
  if (c10::isComplexType(lower)) return c10::isFloatingType(higher) ? c10::toComplexType(higher) : lower;
  if (c10::isFloatingType(higher)) return higher;
  if (higher == c10::ScalarType::Bool || c10::isFloatingType(lower)) return promote(higher, lower);
  return higher != c10::ScalarType::Undefined ? higher : lower;
}

}  // namespace

ResultDtype& ResultDtype::operator+=(const at::Tensor& t) {
  if (!t.defined()) return *this;
  c10::ScalarType type = t.scalar_type();
  const bool wrapped = t.unsafeGetTensorImpl()->is_wrapped_number();
  if (wrapped && c10::isComplexType(type)) type = c10::typeMetaToScalarType(c10::get_default_complex_dtype());
  else if (wrapped && c10::isFloatingType(type)) type = c10::typeMetaToScalarType(c10::get_default_dtype());
  c10::ScalarType& category = t.dim() > 0 ? dims_ : wrapped ? wrapped_ : zero_dim_;
  category = promote(category, type);
  return *this;
}

c10::ScalarType ResultDtype::get() const {
  return combine(dims_, combine(zero_dim_, wrapped_));
}

c10::ScalarType result_dtype(const at::Tensor& a, const at::Tensor& b) {
  ResultDtype r;
  r += a;
  r += b;
  return r.get();
}

void resize_out(const at::Tensor& out, at::IntArrayRef shape) {
  if (out.sizes().equals(shape)) return;
  if (out.numel() != 0) {
    TORCH_WARN("An output with one or more elements was resized since it had shape ", out.sizes(),
               ", which does not match the required output shape ", shape,
               ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless "
               "they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
               "elements with t.resize_(0).");
  }
  out.resize_(shape);
}

c10::Scalar read_scalar(const at::Tensor& t) {
  TORCH_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  return runtime::local_scalar(t);
}

refkScalar fill_value(const c10::Scalar& value, c10::ScalarType dtype, const char* op) {
  const auto integral = [](int64_t v) { return refkScalar{static_cast<double>(v), v}; };
  const auto floating = [](double v) { return refkScalar{v, std::isfinite(v) ? static_cast<int64_t>(v) : 0}; };
  switch (dtype) {
    case c10::kBool: return integral(value.toBool() ? 1 : 0);
    case c10::kByte: return integral(value.toByte());
    case c10::kChar: return integral(value.toChar());
    case c10::kShort: return integral(value.toShort());
    case c10::kInt: return integral(value.toInt());
    case c10::kLong: return integral(value.toLong());
    case c10::kHalf: return floating(static_cast<float>(value.toHalf()));
    case c10::kBFloat16: return floating(static_cast<float>(value.toBFloat16()));
    case c10::kFloat: return floating(value.toFloat());
    case c10::kDouble: return floating(value.toDouble());
    // Note [Storage dtypes]: unsigned values as their bits, float8 ones
    // already in the format (the library's conversion keeps them).
    case c10::kUInt16: return integral(value.toUInt16());
    case c10::kUInt32: return integral(value.toUInt32());
    case c10::kUInt64: {
      const uint64_t u = value.toUInt64();
      return refkScalar{static_cast<double>(u), static_cast<int64_t>(u)};
    }
    case c10::kFloat8_e4m3fn: return floating(static_cast<float>(value.toFloat8_e4m3fn()));
    case c10::kFloat8_e5m2: return floating(static_cast<float>(value.toFloat8_e5m2()));
    case c10::kFloat8_e4m3fnuz: return floating(static_cast<float>(value.toFloat8_e4m3fnuz()));
    case c10::kFloat8_e5m2fnuz: return floating(static_cast<float>(value.toFloat8_e5m2fnuz()));
    case c10::kFloat8_e8m0fnu: return floating(static_cast<float>(value.toFloat8_e8m0fnu()));
    default: break;
  }
  kernel_dtype(dtype, op);  // throws
  return {};
}

}  // namespace opgen_ref
