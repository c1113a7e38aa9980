// Small helpers every kernel uses: where a kernel's inputs live, allocating
// outputs on the device, and raw typed access to device memory.
//
// Note [Device memory access]: the reference device's memory is host memory,
// so kernels read and write it through plain pointers. A vendor's kernels
// launch device code instead; the helpers that decide shapes, dtypes and
// devices stay the same.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/result_type_ops.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <initializer_list>

namespace kernels {

inline bool is_device(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

// The device a kernel runs on: every tensor input must be on the same
// device (same index); 0-dim CPU tensors (Python scalars, `torch.tensor(2)`)
// are allowed alongside, as on every accelerator.
inline c10::Device common_device(const char* op, std::initializer_list<const at::Tensor*> ts) {
  std::optional<c10::Device> dev;
  for (const at::Tensor* t : ts) {
    if (!t->defined()) continue;
    if (t->device().is_cpu() && t->dim() == 0) continue;
    TORCH_CHECK(is_device(*t), op, ": expected all tensors on the same device, but found one on ", t->device());
    if (!dev) {
      dev = t->device();
    } else {
      TORCH_CHECK(*dev == t->device(), op, ": expected all tensors on the same device, but found at least two devices, ",
                  *dev, " and ", t->device(), "!");
    }
  }
  TORCH_CHECK(dev.has_value(), op, ": no input tensor is on the device");
  return *dev;
}

// Brings a tensor to `device` and `dtype` (a copy only when needed).
inline at::Tensor on(const at::Tensor& t, c10::Device device, at::ScalarType dtype) {
  if (t.device() == device && t.scalar_type() == dtype) return t;
  return t.to(device, dtype);
}

// Through the dispatcher, so the device's own empty kernel allocates.
// (The *_ops.h headers are a fraction of the cost of ATen/ops/empty.h.)
inline at::Tensor empty_on(c10::Device device, at::IntArrayRef shape, at::ScalarType dtype) {
  return at::_ops::empty_memory_format::call(c10::fromIntArrayRefSlow(shape), dtype, std::nullopt, device,
                                             std::nullopt, std::nullopt);
}

// The dtype eager PyTorch computes for a binary operator (type promotion).
inline at::ScalarType result_type(const at::Tensor& a, const at::Tensor& b) {
  return at::_ops::result_type_Tensor::call(a, b);
}

template <typename T>
T* data(const at::Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

} // namespace kernels
