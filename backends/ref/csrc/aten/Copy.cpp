// Copies that produce new tensors: clone, _to_copy (.to() of dtype and
// device), and the functional copy. Device<->host transfers go through the
// runtime's _copy_from (the driver); the library does strides and casts.
#include "aten/Glue.h"
#include "runtime/Runtime.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_copy_from.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

namespace opgen_ref {
namespace {

// A new tensor on `device` laid out as eager's clone/_to_copy lays it out:
// Preserve keeps a non-overlapping dense input's strides, else contiguous in
// the requested memory format.
at::Tensor empty_like_as(const at::Tensor& self, c10::ScalarType dtype, c10::Device device,
                         std::optional<at::MemoryFormat> memory_format) {
  const auto format = memory_format.value_or(at::MemoryFormat::Preserve);
  const auto options = at::TensorOptions().dtype(dtype).device(device);
  if (format == at::MemoryFormat::Preserve) {
    if (self.is_non_overlapping_and_dense()) return at::empty_strided(self.sizes(), self.strides(), options);
    return at::empty(self.sizes(), options.memory_format(self.suggest_memory_format()));
  }
  return at::empty(self.sizes(), options.memory_format(format));
}

// t's memory as a tensor without conjugate or negative bits (an alias).
at::Tensor memory_of(const at::Tensor& t) {
  if (!t.is_conj() && !t.is_neg()) return t;
  at::Tensor m = t.alias();
  m._set_conj(false);
  m._set_neg(false);
  return m;
}

}  // namespace

at::Tensor clone(const at::Tensor& self, std::optional<at::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_like_as(self, self.scalar_type(), self.device(), memory_format);
  copy_into(out, self, "clone");
  return out;
}

at::Tensor _to_copy(const at::Tensor& self, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                    std::optional<at::Device> device, std::optional<bool> pin_memory, bool non_blocking,
                    std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided, "_to_copy: only strided tensors are supported on ",
              c10::get_privateuse1_backend());
  const auto target_dtype = dtype.value_or(self.scalar_type());
  c10::Device target = device.value_or(self.device());
  if (target.is_privateuseone() && !target.has_index()) target = c10::Device(target.type(), runtime::current_device());
  if (target.is_cpu()) {
    // Device -> host: the runtime's transfer, into a host tensor of the target layout.
    at::Tensor out = empty_like_as(self, target_dtype, target, memory_format);
    if (pin_memory.value_or(false)) out = out.pin_memory();
    at::_copy_from(self, out, non_blocking);
    return out;
  }
  const c10::DeviceGuard guard(target);
  at::Tensor out = empty_like_as(self, target_dtype, target, memory_format);
  if (self.is_privateuseone() && target == self.device()) {
    copy_into(out, self, "_to_copy");
  } else {
    at::_copy_from(self, out, non_blocking);
  }
  return out;
}

at::Tensor copy(const at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_like_as(self, self.scalar_type(), self.device(), at::MemoryFormat::Preserve);
  const at::Tensor s = src.device() == self.device() ? src : src.to(self.device(), non_blocking);
  copy_into(out, s, "copy");
  return out;
}

// In place, across any pair of devices: the ATen copy_ that every .to(),
// .cpu() and storage copy ends in. Device to device is the library's strided
// cast; anything involving the host goes through the runtime's transfer
// (_copy_from, the driver). `self` may be a CPU tensor here: the dispatcher
// picks this kernel when either argument is on the device.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (self.is_same(src) || self.numel() == 0) return self;
  TORCH_CHECK(at::infer_size(self.sizes(), src.sizes()) == self.sizes(), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", at::infer_size(self.sizes(), src.sizes()));
  at::assert_no_internal_overlap(self);
  at::assert_no_partial_overlap(self, src);
  const at::Tensor from = src.sizes() == self.sizes() ? src : src.expand(self.sizes());
  if (self.is_privateuseone() && from.is_privateuseone()) {
    const c10::DeviceGuard guard(self.device());
    copy_into(self, from, "copy_");
    return self;
  }
  if (!self.is_conj() && !self.is_neg() && !from.is_conj() && !from.is_neg()) {
    at::_copy_from(from, self, non_blocking);
    return self;
  }
  // Note [Conjugate and negative bits] (Glue.cpp): _copy_from moves memory,
  // so it gets both sides without their bits, and the device side's memory
  // is conjugated or negated where the bits differ.
  const bool conj = self.is_conj() != from.is_conj(), neg = self.is_neg() != from.is_neg();
  if (self.is_privateuseone()) {
    at::_copy_from(memory_of(from), memory_of(self), non_blocking);
    const c10::DeviceGuard guard(self.device());
    apply_bits(self, conj, neg, "copy_");
  } else {
    const c10::DeviceGuard guard(from.device());
    at::Tensor staged = empty(from.sizes(), from.scalar_type(), from.device());
    copy_into(staged, memory_of(from), "copy_");
    apply_bits(staged, conj, neg, "copy_");
    at::_copy_from(staged, memory_of(self), false);
  }
  return self;
}

}  // namespace opgen_ref
