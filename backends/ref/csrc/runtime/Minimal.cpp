// The operators every PrivateUse1 backend must provide before anything else
// works: allocation, views, resize, copies across CPU and devices, scalar
// reads, set_, fill_ and zero_. They are registered by hand here, not
// through backend.yaml, because they belong to the runtime (how memory is
// laid out and moved) rather than to the vendor's compute kernels.
//
// Note [Views]: view, _reshape_alias, as_strided and unfold build a TensorImpl that
// shares the input's Storage; autograd's view tracking happens above us (the
// ADInplaceOrView key), so these only compute sizes, strides and offsets.
#include "kernels/RefKernels.h"
#include "runtime/Runtime.h"

#include <ATen/Parallel.h>

#include <ATen/EmptyTensor.h>
#include <ATen/InferSize.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace opgen_ref::runtime {
namespace {

constexpr c10::DispatchKeySet kKeys(c10::DispatchKey::PrivateUse1);

c10::Device target_device(std::optional<c10::Device> device_opt) {
  auto device = device_opt.value_or(c10::Device(c10::DeviceType::PrivateUse1, current_device()));
  TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, device_name(), ": expected a ", device_name(), " device, got ", device);
  if (!device.has_index()) device.set_index(current_device());
  check_device_index(device.index());
  return device;
}

void check_strided(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(layout.value_or(c10::Layout::Strided) == c10::Layout::Strided,
              device_name(), ": only strided tensors are supported, got layout ", *layout);
  TORCH_CHECK(!pin_memory.value_or(false), device_name(), ": only CPU tensors can be pinned");
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  check_strided(layout, pin_memory);
  const c10::DeviceGuard guard(target_device(device));
  return at::detail::empty_generic(size, device_allocator(), kKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  check_strided(layout, pin_memory);
  const c10::DeviceGuard guard(target_device(device));
  return at::detail::empty_strided_generic(size, stride, device_allocator(), kKeys, c10::dtype_or_default(dtype));
}

// A new TensorImpl on self's storage: see Note [Views].
at::Tensor alias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride, int64_t offset) {
  TORCH_CHECK(size.size() == stride.size(), device_name(), ": mismatch in length of strides and shape");
  for (auto s : size) TORCH_CHECK(s >= 0, device_name(), ": negative dimension ", s);
  TORCH_CHECK(offset >= 0, device_name(), ": negative storage offset ", offset);
  const size_t need = at::detail::computeStorageNbytes(size, stride, self.itemsize(), offset);
  TORCH_CHECK(need <= self.storage().nbytes(), "setStorage: sizes ", size, ", strides ", stride,
              ", storage offset ", offset, ", and itemsize ", self.itemsize(), " requiring a storage size of ", need,
              " are out of bounds for storage of size ", self.storage().nbytes());
  auto out = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(self.storage()),
                                                      self.key_set(), self.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
  return out;
}

at::Tensor as_strided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return alias(self, size, stride, storage_offset.value_or(self.storage_offset()));
}

at::Tensor view(const at::Tensor& self, at::IntArrayRef size) {
  const auto shape = at::infer_size_dv(size, self.numel());
  const auto stride = at::detail::computeStride(self.sizes(), self.strides(), shape);
  TORCH_CHECK(stride.has_value(),
              "view size is not compatible with input tensor's size and stride (at least one dimension spans "
              "across two contiguous subspaces). Use .reshape(...) instead.");
  return alias(self, shape, *stride, self.storage_offset());
}

at::Tensor reshape_alias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return alias(self, size, stride, self.storage_offset());
}

// view_as_real and view_as_complex (what .real, .imag and torch.fft's
// callers use): views of another dtype on the same storage, sizes and
// strides as eager's, with eager's checks (Note [Complex dtypes] in
// RefKernels.h). A view cannot fall back to CPU: it would be a copy.
at::Tensor alias_as(const at::Tensor& self, c10::ScalarType dtype, at::IntArrayRef size, at::IntArrayRef stride,
                    int64_t offset) {
  auto out = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(self.storage()),
                                                      self.key_set(), c10::scalarTypeToTypeMeta(dtype));
  out.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
  return out;
}

at::Tensor view_as_real(const at::Tensor& self) {
  TORCH_CHECK(!self.is_conj(), "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
              "conjugate tensor so you can view it as real, use self.resolve_conj()");
  TORCH_CHECK(self.is_complex(), "view_as_real is only supported for complex tensors");
  std::vector<int64_t> size = self.sizes().vec(), stride;
  size.push_back(2);
  for (const int64_t s : self.strides()) stride.push_back(s * 2);
  stride.push_back(1);
  return alias_as(self, c10::toRealValueType(self.scalar_type()), size, stride, self.storage_offset() * 2);
}

at::Tensor view_as_complex(const at::Tensor& self) {
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK(t == c10::kFloat || t == c10::kDouble || t == c10::kHalf,
              "view_as_complex is only supported for float, double and half tensors, but got a tensor of scalar "
              "type: ", t);
  TORCH_CHECK(self.dim() != 0, "Input tensor must have one or more dimensions");
  TORCH_CHECK(self.size(-1) == 2, "Tensor must have a last dimension of size 2");
  TORCH_CHECK(self.stride(-1) == 1, "Tensor must have a last dimension with stride 1");
  std::vector<int64_t> stride;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) {
    TORCH_CHECK(self.stride(d) % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
    stride.push_back(self.stride(d) / 2);
  }
  TORCH_CHECK(self.storage_offset() % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  const at::IntArrayRef sizes = self.sizes();
  return alias_as(self, c10::toComplexType(t), sizes.slice(0, sizes.size() - 1), stride, self.storage_offset() / 2);
}

// unfold: windows of `size` elements every `step` along a dim, as a new
// last dim over the same elements (overlapping where step < size), with
// eager's checks and texts. Eager has only CPU and CUDA kernels for it, no
// composite one, and the CPU fallback refuses a view (Note [No views through
// the fallback] in Fallback.cpp), so every project serves it here: a
// starter project too, whose backend.yaml lists none of csrc/aten's views
// (those others are CompositeExplicitAutograd over as_strided).
at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  const int64_t ndim = self.dim();
  const int64_t d = at::maybe_wrap_dim(dimension, ndim, /*wrap_scalar=*/true);
  std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
  const int64_t max_size = ndim == 0 ? 1 : sizes[static_cast<size_t>(d)];
  TORCH_CHECK(size <= max_size, "maximum size for tensor at dimension ", d, " is ", max_size, " but size is ", size);
  TORCH_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  TORCH_CHECK(step > 0, "step is ", step, " but must be > 0");
  sizes.push_back(size);
  strides.push_back(ndim == 0 ? 1 : strides[static_cast<size_t>(d)]);
  if (d < ndim) {
    sizes[static_cast<size_t>(d)] = (sizes[static_cast<size_t>(d)] - size) / step + 1;
    strides[static_cast<size_t>(d)] *= step;
  }
  return alias(self, sizes, strides, self.storage_offset());
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  // Note [resize_ keeps strides]: as eager CPU's resize_, a tensor whose
  // sizes do not change keeps its strides (a strided out= view stays that
  // view), and only an explicit memory_format restrides it.
  TORCH_CHECK(memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format ", *memory_format);
  auto* impl = self.unsafeGetTensorImpl();
  const c10::DeviceGuard guard(self.device());
  if (self.sizes() != size) impl->set_sizes_contiguous(size);
  if (memory_format.has_value()) impl->empty_tensor_restride(*memory_format);
  const size_t need = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.itemsize(),
                                                       self.storage_offset());
  auto* storage = impl->unsafe_storage().unsafeGetStorageImpl();
  if (need > storage->nbytes()) {
    TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
    c10::DataPtr fresh = device_allocator()->allocate(need);
    memcpy_any(fresh.get(), storage->data(), storage->nbytes());
    storage->set_data_ptr_noswap(std::move(fresh));
    storage->set_nbytes(need);
  }
  return self;
}

refkContext kernel_context() {
  return refkContext{current_stream(), static_cast<int32_t>(at::get_num_threads())};
}

void kernel_check(refkStatus s, const char* op) { TORCH_CHECK(s == refkSuccess, op, ": ", refkLastError()); }

refkDtype kernel_dtype(c10::ScalarType t) {
  const auto d = kernel_dtype_of(t);
  TORCH_CHECK_NOT_IMPLEMENTED(d.has_value(), device_name(), ": copies of ", t, " tensors are not supported");
  return *d;
}

// The elements a strided tensor can touch: [first, last] in elements from its
// data pointer (strides here are never negative).
std::pair<int64_t, int64_t> span(const at::Tensor& t) {
  int64_t lo = 0, hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

// A descriptor of `t`'s layout over memory at `data` (element [0, ...]).
refkTensor layout_at(const at::Tensor& t, void* data) {
  TORCH_CHECK(t.dim() <= REFK_MAX_DIMS, device_name(), ": copies of tensors with more than ", REFK_MAX_DIMS,
              " dims are not supported");
  refkTensor d{};
  d.data = data;
  d.dtype = kernel_dtype(t.scalar_type());
  d.ndim = static_cast<int32_t>(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) {
    d.sizes[i] = t.size(i);
    d.strides[i] = t.stride(i);
  }
  return d;
}

// Host memory a tensor covers, staged in a device buffer with the same
// layout: lets the device library do any strided or casting part of a
// host<->device copy, so host code never touches device memory.
struct Staged {
  c10::DataPtr buffer;
  refkTensor desc;
  size_t nbytes;
  int64_t first;
};

Staged stage(const at::Tensor& host, bool upload) {
  const auto [lo, hi] = span(host);
  const size_t nbytes = static_cast<size_t>(hi - lo + 1) * host.itemsize();
  Staged s{device_allocator()->allocate(nbytes), {}, nbytes, lo};
  char* base = static_cast<char*>(s.buffer.get());
  s.desc = layout_at(host, base - lo * static_cast<int64_t>(host.itemsize()));
  const char* host_first = static_cast<const char*>(host.const_data_ptr()) + lo * host.itemsize();
  if (upload) driver_check(refMemcpy(base, host_first, nbytes, refMemcpyHostToDevice), "copy to device");
  return s;
}

void download(const Staged& s, const at::Tensor& host) {
  char* host_first = static_cast<char*>(host.data_ptr()) + s.first * host.itemsize();
  driver_check(refMemcpy(host_first, s.buffer.get(), s.nbytes, refMemcpyDeviceToHost), "copy to host");
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), device_name(), ": _copy_from needs defined tensors");
  TORCH_CHECK(self.device().is_cpu() || self.device().is_privateuseone(), device_name(), ": cannot copy from ",
              self.device());
  TORCH_CHECK(dst.device().is_cpu() || dst.device().is_privateuseone(), device_name(), ": cannot copy to ",
              dst.device());
  TORCH_CHECK(self.sizes() == dst.sizes() || self.numel() == 1 || dst.numel() == 0, device_name(),
              ": _copy_from expects equal shapes, got ", self.sizes(), " and ", dst.sizes());
  if (dst.numel() == 0) return dst;
  const c10::DeviceGuard guard(dst.is_privateuseone() ? dst.device() : self.device());
  const refkContext ctx = kernel_context();
  // A source broadcast to dst's shape (copy_ of a 1-element tensor).
  const at::Tensor src = self.sizes() == dst.sizes() ? self : self.expand(dst.sizes());
  const bool same_bytes = src.scalar_type() == dst.scalar_type() && src.is_contiguous() && dst.is_contiguous();
  if (same_bytes && (src.is_cpu() || dst.is_cpu())) {
    // One transfer: a real device's DMA engine; with non_blocking and a
    // pinned host side, asynchronous on the current stream (the CUDA driver
    // returns before it finishes, as CUDA's copy_ does; the CPU driver's
    // async copy is synchronous).
    const void* host = src.is_cpu() ? src.const_data_ptr() : dst.const_data_ptr();
    if (non_blocking && is_pinned_host_pointer(host)) {
      memcpy_any_async(dst.data_ptr(), src.const_data_ptr(), dst.nbytes());
    } else {
      memcpy_any(dst.data_ptr(), src.const_data_ptr(), dst.nbytes());
    }
    return dst;
  }
  if (src.is_privateuseone() && dst.is_privateuseone()) {
    const refkTensor d = layout_at(dst, dst.data_ptr());
    const refkTensor s = layout_at(src, const_cast<void*>(src.const_data_ptr()));
    kernel_check(refkCopy(&ctx, &d, &s), "copy_");
    return dst;
  }
  if (src.is_cpu()) {  // host -> device, with a layout or dtype change on the device
    const Staged s = stage(src, /*upload=*/true);
    const refkTensor d = layout_at(dst, dst.data_ptr());
    kernel_check(refkCopy(&ctx, &d, &s.desc), "copy_");
    return dst;
  }
  // device -> host: read dst's span, write its elements on the device, write
  // the span back (gaps between dst's elements keep their values).
  const Staged s = stage(dst, /*upload=*/true);
  const refkTensor from = layout_at(src, const_cast<void*>(src.const_data_ptr()));
  kernel_check(refkCopy(&ctx, &s.desc, &from), "copy_");
  download(s, dst);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.is_privateuseone()) {
    resize_(dst, self.sizes(), std::nullopt);
  } else {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) { return local_scalar(self); }

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, int64_t storage_offset, at::IntArrayRef size,
                               at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              device_name(), ": set_ expects a ", device_name(), " storage, got one on ", source.device());
  auto* impl = self.unsafeGetTensorImpl();
  if (!impl->storage().is_alias_of(source)) impl->set_storage_keep_dtype(std::move(source));
  const std::vector<int64_t> contiguous = stride.empty() ? at::detail::defaultStrides(size) : std::vector<int64_t>{};
  const at::IntArrayRef st = stride.empty() ? at::IntArrayRef(contiguous) : stride;
  TORCH_CHECK(size.size() == st.size(), device_name(), ": set_: mismatch in length of strides and shape");
  const size_t need = at::detail::computeStorageNbytes(size, st, self.itemsize(), storage_offset);
  TORCH_CHECK(need <= impl->storage().nbytes(), device_name(), ": set_: sizes ", size, " and strides ", st,
              " are out of bounds for a storage of ", impl->storage().nbytes(), " bytes");
  impl->set_sizes_and_strides(size, st, storage_offset);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.itemsize());
  return set_storage_offset(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  return set_storage_offset(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());  // the new storage stays on self's device
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return set_storage_offset(self, std::move(empty), 0, {0}, {});
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  const c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) return self;
  const refkContext ctx = kernel_context();
  const refkTensor d = layout_at(self, self.data_ptr());
  const refkScalar v{value.isBoolean() ? (value.toBool() ? 1.0 : 0.0) : value.toDouble(),
                     value.isFloatingPoint() ? static_cast<int64_t>(value.toDouble())
                                             : (value.isBoolean() ? int64_t{value.toBool()} : value.toLong())};
  kernel_check(refkFill(&ctx, &d, v), "fill_");
  return self;
}

at::Tensor& zero(at::Tensor& self) { return fill_scalar(self, 0); }

} // namespace

std::optional<refkDtype> kernel_dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return refkBool;
    case c10::kByte: return refkUInt8;
    case c10::kChar: return refkInt8;
    case c10::kShort: return refkInt16;
    case c10::kInt: return refkInt32;
    case c10::kLong: return refkInt64;
    case c10::kHalf: return refkFloat16;
    case c10::kBFloat16: return refkBFloat16;
    case c10::kFloat: return refkFloat32;
    case c10::kDouble: return refkFloat64;
    case c10::kComplexFloat: return refkComplex64;
    case c10::kComplexDouble: return refkComplex128;
    // Note [Storage dtypes] (RefKernels.h): copied and filled only.
    case c10::kUInt16: return refkUInt16;
    case c10::kUInt32: return refkUInt32;
    case c10::kUInt64: return refkUInt64;
    case c10::kFloat8_e4m3fn: return refkFloat8E4M3FN;
    case c10::kFloat8_e5m2: return refkFloat8E5M2;
    case c10::kFloat8_e4m3fnuz: return refkFloat8E4M3FNUZ;
    case c10::kFloat8_e5m2fnuz: return refkFloat8E5M2FNUZ;
    case c10::kFloat8_e8m0fnu: return refkFloat8E8M0FNU;
    default: return std::nullopt;
  }
}

// Note [Shallow copies between CPU and the device]: `param.data = t` (and so
// Module.to(), which keeps a module's Parameter objects only this way) asks
// _has_compatible_shallow_copy_type(param, t), whose default answer holds
// for in-tree backends only (TensorImpl::has_compatible_shallow_copy_type
// lists CPU, CUDA, ...). A dense tensor of this device and a dense CPU
// tensor are as interchangeable as a CPU and a CUDA one: the TensorImpl is
// the same class, and shallow_copy_from copies storage, sizes and key set.
// Without this, model.to(device) makes new Parameters and an optimizer built
// before it keeps updating the stale CPU ones.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto dense = [](const at::Tensor& t) {
    return t.layout() == c10::kStrided && (t.is_cpu() || t.device().type() == c10::DeviceType::PrivateUse1);
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) || (dense(self) && dense(from));
}

// Tensor.record_stream(s): tells the allocator that `s` uses self's memory,
// as CUDA's caching allocator needs before it reuses a block. Without a
// kernel it would go to the CPU fallback, which cannot serve a Stream.
void record_stream(at::Tensor& self, c10::Stream s) {
  TORCH_CHECK(s.device_type() == c10::DeviceType::PrivateUse1 && s.device_index() == self.device().index(),
              "record_stream: the stream (", s, ") must be on the tensor's device, ", self.device());
  auto* allocator = dynamic_cast<c10::DeviceAllocator*>(device_allocator());
  TORCH_INTERNAL_ASSERT(allocator != nullptr, "the device allocator is not a c10::DeviceAllocator");
  allocator->recordStream(self.storage().data_ptr(), s);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("view_as_real", TORCH_FN(view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("unfold", TORCH_FN(unfold));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("zero_", TORCH_FN(zero));
}

// Note [fill_ yields to a listed fill]: a backend.yaml that lists fill_.Scalar,
// or the functional fill.Scalar (the generated registrations derive
// fill_.Scalar from it), registers a fill_ kernel of its own; registering the
// runtime's as well would override one with the other (whichever static
// initializer runs last) and warn at import. So the runtime registers its
// fill_ only where nothing else did, once the library's static registrations
// have all run (the module's init).
void register_deferred_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    const auto op = c10::Dispatcher::singleton().findSchema({"aten::fill_", "Scalar"});
    if (op.has_value() && op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) return;
    static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                                          __LINE__);
    lib->impl("fill_.Scalar", TORCH_FN(fill_scalar));
  });
}

} // namespace opgen_ref::runtime
