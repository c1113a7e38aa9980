// Reductions over a set of dimensions: dim normalisation, keepdim, output
// dtype and the accumulation loop, written once. A reduction kernel supplies
// its identity and combine step, e.g. sum is `reduce_dims(..., 0, [](auto a, auto b) { return a + b; })`.
//
// Strategy: permute the reduced dimensions to the end and make the input
// contiguous (one device copy), then every output element reduces one
// contiguous run. Accumulation uses at::acc_type (double for float, float
// for half/bfloat16, int64 for integers), as ATen's CPU kernels do.
#pragma once

#include "kernels/common/Dispatch.h"
#include "kernels/common/Tensor.h"

#include <ATen/AccumulateType.h>
#include <c10/core/WrapDimMinimal.h>

#include <vector>
#include <c10/util/OptionalArrayRef.h>

namespace kernels {

struct ReducePlan {
  at::DimVector out_shape;        // with keepdim applied
  at::DimVector permutation;      // kept dims, then reduced dims
  int64_t outer = 1;              // number of output elements
  int64_t inner = 1;              // elements reduced into each
};

inline ReducePlan plan_reduction(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
  ReducePlan p;
  const int64_t ndim = self.dim();
  // No dims (None or []) reduces everything, as sum(dim=[]) does in eager.
  std::vector<bool> mask(static_cast<size_t>(ndim), !(dims.has_value() && !dims->empty()));
  if (dims.has_value()) {
    for (int64_t d : *dims) {
      const int64_t w = c10::maybe_wrap_dim(d, ndim);  // a 0-dim tensor accepts 0 and -1
      if (ndim == 0) continue;
      TORCH_CHECK(!mask[w], "dim ", w, " appears multiple times in the list of dims");
      mask[w] = true;
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask[d]) {
      p.permutation.push_back(d);
      p.out_shape.push_back(self.size(d));
      p.outer *= self.size(d);
    } else if (keepdim) {
      p.out_shape.push_back(1);
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask[d]) {
      p.permutation.push_back(d);
      p.inner *= self.size(d);
    }
  }
  return p;
}

// Reduces `self` over `dims` into a new tensor of `out_dtype`.
template <typename Combine>
at::Tensor reduce_dims(const char* op, const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                       at::ScalarType out_dtype, double identity, Combine combine) {
  const auto device = common_device(op, {&self});
  const c10::DeviceGuard guard(device);
  const ReducePlan plan = plan_reduction(self, dims, keepdim);
  const at::Tensor x = on(self, device, out_dtype).permute(plan.permutation).contiguous();
  at::Tensor out = empty_on(device, plan.out_shape, out_dtype);
  dispatch_numeric(out_dtype, op, [&](auto tag) {
    using scalar_t = decltype(tag);
    using acc_t = at::acc_type<scalar_t, /*is_cuda=*/false>;
    const auto* px = data<scalar_t>(x);
    auto* po = data<scalar_t>(out);
    for (int64_t i = 0; i < plan.outer; ++i) {
      acc_t acc = static_cast<acc_t>(identity);
      const scalar_t* run = px + i * plan.inner;
      for (int64_t j = 0; j < plan.inner; ++j) acc = combine(acc, static_cast<acc_t>(run[j]));
      po[i] = static_cast<scalar_t>(acc);
    }
  });
  return out;
}

} // namespace kernels
