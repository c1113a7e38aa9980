// Elementwise kernels: broadcasting, type promotion and the per-dtype loop,
// written once. A pointwise kernel is one line that picks a helper and
// passes a functor, e.g. `binary_map("mul", a, b, [](auto x, auto y) { return x * y; })`.
//
// Semantics follow eager PyTorch: the result dtype is at::result_type of the
// inputs (Python scalars and 0-dim tensors promote as in eager), shapes
// broadcast as in eager, inputs may have any strides.
#pragma once

#include "kernels/common/Dispatch.h"
#include "kernels/common/Loops.h"
#include "kernels/common/Tensor.h"


namespace kernels {

// out[i] = f(a[i]) with out dtype == a's dtype.
template <typename F>
at::Tensor unary_map(const char* op, const at::Tensor& a, F f) {
  const auto device = common_device(op, {&a});
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty_on(device, a.sizes(), a.scalar_type());
  dispatch_numeric(a.scalar_type(), op, [&](auto tag) {
    using scalar_t = decltype(tag);
    auto* po = data<scalar_t>(out);
    const auto* pa = data<scalar_t>(a);
    for_each_offset<2>(a.sizes(), {strides_of(out), strides_of(a)},
                       [&](const std::array<int64_t, 2>& o) { po[o[0]] = static_cast<scalar_t>(f(pa[o[1]])); });
  });
  return out;
}

// out = f(a, b) elementwise, broadcast, computed and returned in the
// promoted dtype. `f` receives (scalar_t, scalar_t) and may use the
// `scalar_t` it is instantiated with through a generic lambda.
template <typename F>
at::Tensor binary_map(const char* op, const at::Tensor& a, const at::Tensor& b, F f) {
  const auto device = common_device(op, {&a, &b});
  const c10::DeviceGuard guard(device);
  const auto dtype = result_type(a, b);
  const at::Tensor x = on(a, device, dtype);
  const at::Tensor y = on(b, device, dtype);
  const auto shape = broadcast_shape(x.sizes(), y.sizes(), op);
  at::Tensor out = empty_on(device, shape, dtype);
  dispatch_all(dtype, op, [&](auto tag) {
    using scalar_t = decltype(tag);
    auto* po = data<scalar_t>(out);
    const auto* px = data<scalar_t>(x);
    const auto* py = data<scalar_t>(y);
    for_each_offset<3>(shape, {strides_of(out), broadcast_strides(x, shape), broadcast_strides(y, shape)},
                       [&](const std::array<int64_t, 3>& o) {
                         po[o[0]] = static_cast<scalar_t>(f(px[o[1]], py[o[2]]));
                       });
  });
  return out;
}

// Writes `value` into every element of `t` (any strides, in place).
inline void fill(const at::Tensor& t, const at::Scalar& value) {
  dispatch_every(t.scalar_type(), "fill_", [&](auto tag) {
    using scalar_t = decltype(tag);
    auto* p = data<scalar_t>(t);
    const auto v = value.to<scalar_t>();
    for_each_offset<1>(t.sizes(), {strides_of(t)}, [&](const std::array<int64_t, 1>& o) { p[o[0]] = v; });
  });
}

} // namespace kernels
