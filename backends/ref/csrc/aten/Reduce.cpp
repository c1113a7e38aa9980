// Reductions: sum, mean, prod, amax/amin, any/all, var, max/min with indices,
// argmax/argmin and cumsum. The glue resolves dims (at::dim_list_to_bitset,
// maybe_wrap_dim), the result dtype (eager's rules: integral sums become
// int64, mean needs a floating dtype), and lays the input out for the library
// as kept dims followed by reduced dims, as descriptor strides: no copy.
#include "aten/Glue.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <tuple>

namespace opgen_ref {
namespace {

constexpr size_t kMaxMask = 64;
using Mask = std::bitset<kMaxMask>;

Mask dims_mask(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  const int64_t nd = self.dim();
  if (!dim.has_value() || dim->empty()) {
    Mask m;
    for (int64_t d = 0; d < nd; ++d) m.set(static_cast<size_t>(d));
    return m;
  }
  return at::dim_list_to_bitset(*dim, nd);
}

std::vector<int64_t> result_shape(const at::Tensor& self, const Mask& mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask.test(static_cast<size_t>(d))) {
      shape.push_back(self.size(d));
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  return shape;
}

// in: kept dims then reduced dims; out: the kept dims of the (maybe keepdim) result.
void describe_reduction(const at::Tensor& in, const at::Tensor& out, const Mask& mask, bool keepdim,
                        refkTensor& din, refkTensor& dout, const char* op) {
  din = describe(in, op);
  dout = describe(out, op);
  refkTensor i = din, o = dout;
  i.ndim = o.ndim = 0;
  int64_t od = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (mask.test(static_cast<size_t>(d))) {
      if (keepdim) ++od;
      continue;
    }
    i.sizes[i.ndim] = in.size(d);
    i.strides[i.ndim++] = in.stride(d);
    o.sizes[o.ndim] = out.size(od);
    o.strides[o.ndim++] = out.stride(od);
    ++od;
  }
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (!mask.test(static_cast<size_t>(d))) continue;
    i.sizes[i.ndim] = in.size(d);
    i.strides[i.ndim++] = in.stride(d);
  }
  din = i;
  dout = o;
}

at::Tensor reduce(const at::Tensor& self, const Mask& mask, bool keepdim, c10::ScalarType compute,
                  c10::ScalarType result, refkReduceOp op, const char* name, double correction = 0) {
  const c10::Device device = common_device({&self}, name);
  const c10::DeviceGuard guard(device);
  const at::Tensor in = to_dtype(self, compute, device, name);
  at::Tensor out = empty(result_shape(self, mask, keepdim), result, device);
  if (out.numel() == 0) return out;
  refkTensor din{}, dout{};
  describe_reduction(in, out, mask, keepdim, din, dout, name);
  const refkContext ctx = context();
  check(refkReduce(&ctx, op, &dout, &din, static_cast<int32_t>(din.ndim - dout.ndim), refkScalar{correction, 0}),
        name);
  return out;
}

// Sums and products of integral or bool tensors are int64 unless a dtype is asked for.
c10::ScalarType widened(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type();
}

void check_nonempty(const at::Tensor& self, at::IntArrayRef dim, const Mask& mask, const char* name) {
  TORCH_CHECK(!dim.empty() || self.numel() != 0, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  for (int64_t d = 0; d < self.dim(); ++d) {
    TORCH_CHECK_INDEX(!mask.test(static_cast<size_t>(d)) || self.size(d) != 0, name,
                      "(): Expected reduction dim ", d, " to have non-zero size.");
  }
}

c10::ScalarType mean_dtype(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const auto t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t),
              "mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
              " dtype must be either a floating point or complex dtype. Got: ", t);
  return t;
}

at::Tensor var_impl(const at::Tensor& self, at::OptionalIntArrayRef dim, double correction, bool keepdim) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()) || c10::isComplexType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  return reduce(self, dims_mask(self, dim), keepdim, self.scalar_type(), self.scalar_type(), refkVar, "var",
                correction);
}

// Values and indices of the max or min along `dim` (the library's trailing dim).
std::tuple<at::Tensor, at::Tensor> arg_reduce(const at::Tensor& self, int64_t dim, bool keepdim, bool is_max,
                                               bool want_values, const char* name) {
  const c10::Device device = common_device({&self}, name);
  const c10::DeviceGuard guard(device);
  kernel_dtype(self.scalar_type(), name);
  dim = at::maybe_wrap_dim(dim, self.dim());
  if (self.dim() > 0) {
    TORCH_CHECK_INDEX(self.size(dim) != 0, name, "(): Expected reduction dim ", dim, " to have non-zero size.");
  }
  Mask mask;
  if (self.dim() > 0) mask.set(static_cast<size_t>(dim));
  const auto shape = result_shape(self, mask, keepdim);
  at::Tensor values = want_values ? empty(shape, self.scalar_type(), device) : at::Tensor();
  at::Tensor indices = empty(shape, c10::kLong, device);
  if (indices.numel() == 0) return {values, indices};
  refkTensor din{}, dind{}, dval{};
  describe_reduction(self, indices, mask, keepdim, din, dind, name);
  if (self.dim() == 0) din.sizes[din.ndim] = 1, din.strides[din.ndim++] = 1;
  if (want_values) {
    refkTensor unused{};
    describe_reduction(self, values, mask, keepdim, unused, dval, name);
  }
  const refkContext ctx = context();
  check(refkArgReduce(&ctx, is_max ? 1 : 0, &dval, &dind, &din), name);
  return {values, indices};
}

at::Tensor arg_impl(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, bool is_max,
                    const char* name) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, name, "(): does not support bool input");
  if (dim.has_value()) return std::get<1>(arg_reduce(self, *dim, keepdim, is_max, false, name));
  TORCH_CHECK(self.numel() != 0, name, "(): Expected reduction dim to be specified for input.numel() == 0.");
  // Over all elements: a contiguous input viewed as one dim.
  const at::Tensor flat = (self.is_contiguous() ? self : self.clone()).reshape({-1});
  at::Tensor r = std::get<1>(arg_reduce(flat, 0, false, is_max, false, name));
  if (keepdim) r = r.reshape(std::vector<int64_t>(static_cast<size_t>(self.dim()), 1));
  return r;
}

}  // namespace

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  const auto t = widened(self, dtype);
  return reduce(self, dims_mask(self, dim), keepdim, dtype.value_or(self.scalar_type()), t, refkSum, "sum");
}

at::Tensor mean(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const auto t = mean_dtype(self, dtype);
  return reduce(self, dims_mask(self, std::nullopt), false, t, t, refkMean, "mean");
}

at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                std::optional<at::ScalarType> dtype) {
  const auto t = mean_dtype(self, dtype);
  return reduce(self, dims_mask(self, dim), keepdim, t, t, refkMean, "mean");
}

at::Tensor prod(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const auto t = widened(self, dtype);
  return reduce(self, dims_mask(self, std::nullopt), false, dtype.value_or(self.scalar_type()), t, refkProd, "prod");
}

at::Tensor prod(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  const auto t = widened(self, dtype);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  return reduce(self, dims_mask(self, at::IntArrayRef(d)), keepdim, dtype.value_or(self.scalar_type()), t, refkProd,
                "prod");
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const Mask mask = dims_mask(self, dim);
  check_nonempty(self, dim, mask, "amax");
  return reduce(self, mask, keepdim, self.scalar_type(), self.scalar_type(), refkAmax, "amax");
}

at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const Mask mask = dims_mask(self, dim);
  check_nonempty(self, dim, mask, "amin");
  return reduce(self, mask, keepdim, self.scalar_type(), self.scalar_type(), refkAmin, "amin");
}

// Both extremes (MoE routing's torch.aminmax), as amin and amax over one dim
// or all of them, with aminmax's own checks.
std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  Mask mask;
  if (dim.has_value()) {
    const int64_t d = at::maybe_wrap_dim(*dim, self.dim());
    if (self.dim() > 0) {
      TORCH_CHECK_INDEX(self.size(d) != 0, "aminmax: Expected reduction dim ", d, " to have non-zero size.");
      mask.set(static_cast<size_t>(d));
    }
  } else {
    TORCH_CHECK(self.numel() > 0,
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.");
    mask = dims_mask(self, std::nullopt);
  }
  const auto t = self.scalar_type();
  return {reduce(self, mask, keepdim, t, t, refkAmin, "aminmax"), reduce(self, mask, keepdim, t, t, refkAmax, "aminmax")};
}

// any: bool results, except uint8 inputs, which keep uint8 (eager's rule).
at::Tensor any(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  const auto t = self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  return reduce(self, dims_mask(self, dim), keepdim, self.scalar_type(), t, refkAny, "any");
}
at::Tensor any(const at::Tensor& self) { return any(self, std::nullopt, false); }
at::Tensor any(const at::Tensor& self, int64_t dim, bool keepdim) {
  return any(self, at::IntArrayRef(at::maybe_wrap_dim(dim, self.dim())), keepdim);
}

// all: as any (bool results, uint8 inputs keep uint8).
at::Tensor all(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  const auto t = self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  return reduce(self, dims_mask(self, dim), keepdim, self.scalar_type(), t, refkAll, "all");
}
at::Tensor all(const at::Tensor& self) { return all(self, std::nullopt, false); }
at::Tensor all(const at::Tensor& self, int64_t dim, bool keepdim) {
  return all(self, at::IntArrayRef(at::maybe_wrap_dim(dim, self.dim())), keepdim);
}

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim, bool unbiased, bool keepdim) {
  return var_impl(self, dim, unbiased ? 1.0 : 0.0, keepdim);
}
at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
               bool keepdim) {
  return var_impl(self, dim, correction ? correction->toDouble() : 1.0, keepdim);
}

std::tuple<at::Tensor, at::Tensor> max(const at::Tensor& self, int64_t dim, bool keepdim) {
  return arg_reduce(self, dim, keepdim, true, true, "max");
}
std::tuple<at::Tensor, at::Tensor> min(const at::Tensor& self, int64_t dim, bool keepdim) {
  return arg_reduce(self, dim, keepdim, false, true, "min");
}
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_impl(self, dim, keepdim, true, "argmax");
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_impl(self, dim, keepdim, false, "argmin");
}

// Note [Histogram semantics] (RefKernels.h): floating inputs as eager CPU's
// histc (its checks, texts and order: histogram_histc_out), integer inputs
// as CUDA's (_histc_cuda: bounds truncated to integers, checked with CUDA's
// texts), which eager CPU refuses and downstream code relies on.
at::Tensor histc(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  const c10::Device device = common_device({&self}, "histc");
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"histc\" not implemented for 'Bool'");
  kernel_dtype(dtype, "histc");
  const Mask all_dims = dims_mask(self, std::nullopt);
  const auto extreme = [&](refkReduceOp op) {
    return read_scalar(reduce(self, all_dims, false, dtype, dtype, op, "histc"));
  };
  refkScalar lo{}, hi{};
  if (c10::isFloatingType(dtype)) {
    TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
    double l = min.toDouble(), h = max.toDouble();
    if (l == h && self.numel() > 0) {
      l = extreme(refkAmin).toDouble();
      h = extreme(refkAmax).toDouble();
    }
    if (l == h) {
      l -= 1;
      h += 1;
    }
    TORCH_CHECK(!(std::isinf(l) || std::isinf(h) || std::isnan(l) || std::isnan(h)), "torch.histc: range of [", l,
                ", ", h, "] is not finite");
    TORCH_CHECK(l < h, "torch.histc: max must be larger than min");
    lo.f = l;
    hi.f = h;
  } else {
    TORCH_CHECK(bins > 0, "bins must be > 0");
    int64_t l = min.toLong(), h = max.toLong();
    if (l == h && self.numel() > 0) {
      l = extreme(refkAmin).toLong();
      h = extreme(refkAmax).toLong();
    }
    if (l == h) {
      l -= 1;
      h += 1;
    }
    TORCH_CHECK(l < h, "max must be larger than min");
    lo.i = l;
    hi.i = h;
  }
  at::Tensor out = empty({bins}, dtype, device);
  const refkTensor o = describe(out, "histc"), i = describe(self, "histc");
  const refkContext ctx = context();
  check(refkHistc(&ctx, &o, &i, lo, hi), "histc");
  return out;
}

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  const c10::Device device = common_device({&self}, "cumsum");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const auto t = widened(self, dtype);
  const at::Tensor in = to_dtype(self, dtype.value_or(self.scalar_type()), device, "cumsum");
  at::Tensor out = empty(self.sizes(), t, device);
  if (out.numel() == 0) return out;
  refkTensor din = describe(in, "cumsum"), dout = describe(out, "cumsum");
  if (self.dim() > 0) {
    // The scanned dim last, in both.
    for (refkTensor* x : {&din, &dout}) {
      const int64_t size = x->sizes[d], stride = x->strides[d];
      for (int64_t k = d; k + 1 < x->ndim; ++k) x->sizes[k] = x->sizes[k + 1], x->strides[k] = x->strides[k + 1];
      x->sizes[x->ndim - 1] = size;
      x->strides[x->ndim - 1] = stride;
    }
  }
  const refkContext ctx = context();
  check(refkCumsum(&ctx, &dout, &din), "cumsum");
  return out;
}

// In place, the sum keeps self's dtype unless one is asked for (a bool
// tensor sums as bool), which the functional cumsum's int64 result cannot.
at::Tensor& cumsum_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(!dtype || *dtype == self.scalar_type(), "Bad in-place call: input tensor dtype ", self.dtype(),
              " and output tensor dtype ", c10::scalarTypeToTypeMeta(*dtype), " should match");
  at::maybe_wrap_dim(dim, self.dim());
  // Empty and 0-dim tensors are their own cumulative sum, for any dtype.
  if (self.numel() == 0 || self.dim() == 0) return self;
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"cumsum_out_cpu\" not implemented for 'Bool'");
  const at::Tensor r = cumsum(self, dim, dtype.value_or(self.scalar_type()));
  copy_into(self, r, "cumsum_");
  return self;
}

}  // namespace opgen_ref
