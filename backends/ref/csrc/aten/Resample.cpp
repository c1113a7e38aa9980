// Padding and resampling: reflection_pad1d/2d/3d, replication_pad2d/3d,
// upsample_bilinear2d, upsample_nearest2d (what the core .vec overloads
// decompose into, Note [Upsampling overloads]), their backward ops,
// grid_sampler_2d, col2im.
// The glue checks arguments with ATen's own metadata helpers (Padding.h's
// check_valid_input, UpSample.h's upsample_2d_common_check,
// GridSamplerUtils.h's checks, im2col_shape_check.h's col2im check), picks
// the result's shape and memory format as eager does, and makes one library
// call (Note [Spatial dims] in RefKernels.h).
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/GridSamplerUtils.h>
#include <ATen/native/Padding.h>
#include <ATen/native/UpSample.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

#include <vector>

namespace opgen_ref {
namespace {

void check_dtype(const at::Tensor& t, bool ok, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

bool is_floating(c10::ScalarType t) { return c10::isFloatingType(t) && has_kernel_dtype(t); }

// ---- padding ----------------------------------------------------------------------

// reflection_pad{1,2,3}d / replication_pad{2,3}d: `dims` spatial dims, padding
// as (last dim's left, right, the one before's left, right, ...).
at::Tensor pad(const at::Tensor& self, at::IntArrayRef padding, int dims, refkPadMode mode, const char* op) {
  const c10::DeviceGuard guard(self.device());
  switch (dims) {
    case 1: at::native::padding::check_valid_input<1>(self, padding); break;
    case 2: at::native::padding::check_valid_input<2>(self, padding); break;
    default: at::native::padding::check_valid_input<3>(self, padding); break;
  }
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  int64_t before[3] = {0, 0, 0};
  const int64_t first = self.dim() - dims;
  for (int i = 0; i < dims; ++i) {
    const int64_t d = self.dim() - 1 - i;  // padding[2i], [2i+1] pad dim d
    const int64_t l = padding[2 * i], r = padding[2 * i + 1], in = self.size(d);
    if (mode == refkPadReflect) {
      TORCH_CHECK(l < in && r < in, "Argument #4: Padding size should be less than the corresponding input dimension, ",
                  "but got: padding (", l, ", ", r, ") at dimension ", d, " of input ", self.sizes());
    }
    shape[d] = in + l + r;
    TORCH_CHECK(shape[d] >= 1, "input (", in, ") is too small. Calculated output ", shape[d]);
    before[d - first] = l;
  }
  check_dtype(self, has_kernel_dtype(self.scalar_type()) && self.scalar_type() != c10::kBool, op);
  const bool channels_last = dims == 2 && self.dim() == 4 && self.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
  const bool channels_last_3d =
      dims == 3 && self.dim() == 5 && self.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d;
  const auto format = channels_last      ? at::MemoryFormat::ChannelsLast
                      : channels_last_3d ? at::MemoryFormat::ChannelsLast3d
                                         : at::MemoryFormat::Contiguous;
  at::Tensor out = at::empty(shape, self.options().memory_format(format));
  if (out.numel() == 0) return out;
  const refkTensor dout = describe(out, op), din = describe(self, op);
  const refkContext ctx = context();
  check(refkPad(&ctx, mode, &dout, &din, dims, before), op);
  return out;
}

}  // namespace

at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding) {
  return pad(self, padding, 1, refkPadReflect, "reflection_pad1d");
}
at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  return pad(self, padding, 2, refkPadReflect, "reflection_pad2d");
}
at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  return pad(self, padding, 3, refkPadReflect, "reflection_pad3d");
}
at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  return pad(self, padding, 2, refkPadReplicate, "replication_pad2d");
}
at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  return pad(self, padding, 3, refkPadReplicate, "replication_pad3d");
}

namespace {

// reflection_pad{1,2,3}d_backward / replication_pad{2,3}d_backward.
at::Tensor pad_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, int dims,
                        refkPadMode mode, const char* op) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, op);
  TORCH_CHECK(static_cast<int>(padding.size()) == 2 * dims, "padding size is expected to be ", 2 * dims,
              ", but got: ", padding.size());
  TORCH_CHECK(grad_output.dim() == self.dim(), op, ": expected grad_output of ", self.dim(), " dimensions, got ",
              grad_output.dim());
  if (mode == refkPadReplicate) {  // eager's replication backward checks the unpadded dims too
    for (int64_t d = 0; d < self.dim() - dims; ++d) {
      TORCH_CHECK(grad_output.size(d) == self.size(d), "gradOutput ", d + 1 == self.dim() - dims ? "channel" : "batch",
                  " unexpected. Expected: ", self.size(d), ", Got: ", grad_output.size(d));
    }
  }
  static const char* const names[3] = {"width", "height", "depth"};
  int64_t before[3] = {0, 0, 0};
  for (int i = 0; i < dims; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t l = padding[2 * i], r = padding[2 * i + 1], expected = self.size(d) + l + r;
    if (mode == refkPadReflect) {
      TORCH_CHECK(l < self.size(d) && r < self.size(d),
                  "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (",
                  l, ", ", r, ") at dimension ", d, " of input ", self.sizes());
    }
    TORCH_CHECK(expected == grad_output.size(d), "grad_output ", names[i], " unexpected. Expected: ", expected,
                ", Got: ", grad_output.size(d));
    before[d - (self.dim() - dims)] = l;
  }
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  check_dtype(self, is_floating(self.scalar_type()), op);
  at::Tensor grad_input = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  if (grad_input.numel() == 0) return grad_input;
  const refkTensor dgi = describe(grad_input, op), dgo = describe(grad_output, op);
  const refkContext ctx = context();
  check(refkPadBackward(&ctx, mode, &dgi, &dgo, dims, before), op);
  return grad_input;
}

}  // namespace

at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return pad_backward(grad_output, self, padding, 1, refkPadReflect, "reflection_pad1d_backward");
}
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return pad_backward(grad_output, self, padding, 2, refkPadReflect, "reflection_pad2d_backward");
}
at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return pad_backward(grad_output, self, padding, 3, refkPadReflect, "reflection_pad3d_backward");
}
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      at::IntArrayRef padding) {
  return pad_backward(grad_output, self, padding, 2, refkPadReplicate, "replication_pad2d_backward");
}
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                      at::IntArrayRef padding) {
  return pad_backward(grad_output, self, padding, 3, refkPadReplicate, "replication_pad3d_backward");
}

// ---- upsampling -------------------------------------------------------------------
//
// Note [Upsampling overloads]: the core-ATen upsample_{bilinear,nearest}2d.vec
// and avg_pool1d/adaptive_avg_pool1d are CompositeImplicitAutograd: eager
// decomposes them (into the overloads below, avg_pool2d and
// _adaptive_avg_pool2d) before any backend sees them, and that is where their
// gradients come from. A backend kernel registered for them would take them
// out of autograd (the autograd key then finds no formula), so the reference
// backend registers what they decompose into, and they run on its kernels.

namespace {

at::Tensor upsample2d(const at::Tensor& input, at::IntArrayRef output_size, std::optional<double> scales_h,
                      std::optional<double> scales_w, refkUpsampleMode mode, bool align_corners, const char* op) {
  const c10::DeviceGuard guard(input.device());
  const auto full = at::native::upsample_2d_common_check(input.sizes(), output_size);
  TORCH_CHECK(input.numel() != 0 || c10::multiply_integers(input.sizes().begin() + 1, input.sizes().end()),
              "Non-empty 4D data tensor expected but got a tensor with sizes ", input.sizes());
  check_dtype(input, is_floating(input.scalar_type()) || input.scalar_type() == c10::kByte, op);
  at::Tensor out = at::empty(full, input.options().memory_format(input.suggest_memory_format()));
  if (out.numel() == 0) return out;
  const double scales[2] = {scales_h.value_or(0.0), scales_w.value_or(0.0)};
  const refkTensor dout = describe(out, op), din = describe(input, op);
  const refkContext ctx = context();
  check(refkUpsample(&ctx, mode, &dout, &din, 2, align_corners ? 1 : 0, scales), op);
  return out;
}

}  // namespace

at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners,
                               std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample2d(self, output_size, scales_h, scales_w, refkUpsampleLinear, align_corners, "upsample_bilinear2d");
}

at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scales_h,
                              std::optional<double> scales_w) {
  return upsample2d(self, output_size, scales_h, scales_w, refkUpsampleNearest, false, "upsample_nearest2d");
}

namespace {

at::Tensor upsample2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                               at::IntArrayRef input_size, std::optional<double> scales_h,
                               std::optional<double> scales_w, refkUpsampleMode mode, bool align_corners,
                               const char* op) {
  const c10::DeviceGuard guard(grad_output.device());
  const auto full = at::native::upsample_2d_common_check(input_size, output_size);
  TORCH_CHECK(grad_output.dim() == 4, "Expected grad_output to be a tensor of dimension 4 but got: dimension ",
              grad_output.dim());
  for (int64_t i = 0; i < 4; ++i) {
    TORCH_CHECK(grad_output.size(i) == full[i], "Expected grad_output to have the same shape as output;",
                " output.size(", i, ") = ", full[i], " but got grad_output.size(", i, ") = ", grad_output.size(i));
  }
  check_dtype(grad_output, is_floating(grad_output.scalar_type()), op);
  at::Tensor grad_input =
      at::empty(input_size, grad_output.options().memory_format(grad_output.suggest_memory_format()));
  if (grad_input.numel() == 0) return grad_input;
  const double scales[2] = {scales_h.value_or(0.0), scales_w.value_or(0.0)};
  const refkTensor dgi = describe(grad_input, op), dgo = describe(grad_output, op);
  const refkContext ctx = context();
  check(refkUpsampleBackward(&ctx, mode, &dgi, &dgo, 2, align_corners ? 1 : 0, scales), op);
  return grad_input;
}

}  // namespace

at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                        at::IntArrayRef input_size, bool align_corners,
                                        std::optional<double> scales_h, std::optional<double> scales_w) {
  return upsample2d_backward(grad_output, output_size, input_size, scales_h, scales_w, refkUpsampleLinear,
                             align_corners, "upsample_bilinear2d_backward");
}

at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                       at::IntArrayRef input_size, std::optional<double> scales_h,
                                       std::optional<double> scales_w) {
  return upsample2d_backward(grad_output, output_size, input_size, scales_h, scales_w, refkUpsampleNearest, false,
                             "upsample_nearest2d_backward");
}

// ---- grid_sampler_2d ----------------------------------------------------------------

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners) {
  const c10::DeviceGuard guard(input.device());
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_2d(input, grid);
  check_dtype(input, is_floating(input.scalar_type()), "grid_sampler_2d_cpu");
  TORCH_CHECK(interpolation_mode >= 0 && interpolation_mode <= 2, "grid_sampler(): unknown interpolation mode ",
              interpolation_mode);
  TORCH_CHECK(padding_mode >= 0 && padding_mode <= 2, "grid_sampler(): unknown padding mode ", padding_mode);
  at::Tensor out = at::empty({input.size(0), input.size(1), grid.size(1), grid.size(2)}, input.options());
  if (out.numel() == 0) return out;
  const refkTensor dout = describe(out, "grid_sampler_2d"), din = describe(input, "grid_sampler_2d"),
                   dgrid = describe(grid, "grid_sampler_2d");
  const refkContext ctx = context();
  check(refkGridSample2d(&ctx, &dout, &din, &dgrid, static_cast<int32_t>(interpolation_mode),
                         static_cast<int32_t>(padding_mode), align_corners ? 1 : 0),
        "grid_sampler_2d");
  return out;
}

// ---- col2im -------------------------------------------------------------------------

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  TORCH_CHECK(kernel_size.size() == 2, "It is expected kernel_size equals to 2, but got size ", kernel_size.size());
  TORCH_CHECK(dilation.size() == 2, "It is expected dilation equals to 2, but got size ", dilation.size());
  TORCH_CHECK(padding.size() == 2, "It is expected padding equals to 2, but got size ", padding.size());
  TORCH_CHECK(stride.size() == 2, "It is expected stride equals to 2, but got size ", stride.size());
  at::native::col2im_shape_check(self, at::Tensor(), output_size[0], output_size[1], kernel_size[0], kernel_size[1],
                                 dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]);
  check_dtype(self, is_floating(self.scalar_type()) || self.scalar_type() == c10::kBool, "col2im_out_cpu");
  const bool batched = self.dim() == 3;
  const at::Tensor in = batched ? self : self.unsqueeze(0);
  const int64_t planes = in.size(1) / (kernel_size[0] * kernel_size[1]);
  at::Tensor out = at::empty({in.size(0), planes, output_size[0], output_size[1]}, self.options());
  if (out.numel() != 0) {
    const refkTensor dout = describe(out, "col2im"), din = describe(in, "col2im");
    const refkContext ctx = context();
    if (self.scalar_type() == c10::kBool) {
      check(refkCol2im(&ctx, &dout, &din, kernel_size.data(), dilation.data(), padding.data(), stride.data()),
            "col2im");
    } else {
      // The convolutions' col2im: it adds in the dtype in kernel-offset
      // order, as eager's col2im does, so half types round as eager's.
      refkConvGeometry g{};
      g.spatial = 2;
      for (int d = 0; d < 2; ++d) {
        g.kernel[d] = kernel_size[d];
        g.stride[d] = stride[d];
        g.padding[d] = padding[d];
        g.dilation[d] = dilation[d];
        g.grid[d] = (output_size[d] + 2 * padding[d] - dilation[d] * (kernel_size[d] - 1) - 1) / stride[d] + 1;
      }
      check(refkConvCol2im(&ctx, &dout, &din, &g), "col2im");
    }
  }
  return batched ? out : out.squeeze(0);
}

}  // namespace opgen_ref
