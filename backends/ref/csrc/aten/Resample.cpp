// Padding and resampling: reflection_pad1d/2d/3d, replication_pad2d/3d,
// upsample_bilinear2d, upsample_nearest2d (what the core .vec overloads
// decompose into, Note [Upsampling overloads]), their backward ops,
// grid_sampler_2d, col2im.
// The glue checks arguments as eager does, with eager's words and error
// classes (the conformance runner compares both), in checks of its own below,
// picks the result's shape and memory format as eager does, and makes one
// library call (Note [Spatial dims] in RefKernels.h).
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>
#include <c10/util/safe_numerics.h>

#include <array>
#include <vector>

namespace opgen_ref {
namespace {

void check_dtype(const at::Tensor& t, bool ok, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

bool is_floating(c10::ScalarType t) { return c10::isFloatingType(t) && has_kernel_dtype(t); }

// ---- argument checks ----------------------------------------------------------------
//
// Note [Resampling checks]: eager checks these arguments before any kernel
// runs (Padding.h, UpSample.h, GridSamplerUtils.h, im2col_shape_check.h in
// ATen/native); the checks below make the same tests in the same order with
// the same texts, all RuntimeError as eager's TORCH_CHECK raises them, so a
// user sees one error on either device. They are written here, not taken
// from ATen, so the glue holds no at::native code beyond its metadata helpers
// (Note [What the glue decides] in Glue.h).

// The input of a `dims`-d padding: (dims + 1)-d, or (dims + 2)-d with a batch
// that may be empty; every other dim non-empty; two pads per padded dim
// (replication's own words for that come first).
void check_pad_input(const at::Tensor& input, at::IntArrayRef padding, int dims, refkPadMode mode) {
  if (mode == refkPadReplicate) {
    TORCH_CHECK(padding.size() == static_cast<size_t>(2 * dims), "padding size is expected to be ", 2 * dims);
  }
  TORCH_CHECK(padding.size() == static_cast<size_t>(2 * dims), "padding size is expected to be ", 2 * dims,
              ", but got: ", padding.size());
  const bool batched = input.dim() == dims + 2;
  bool ok = batched || input.dim() == dims + 1;
  for (int64_t d = batched ? 1 : 0; ok && d < input.dim(); ++d) ok = input.size(d) != 0;
  TORCH_CHECK(ok, "Expected ", dims + 1, "D or ", dims + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
              input.sizes());
}

// The output shape of a 2-d upsampling (N, C, H_out, W_out) of an input of
// `input_size` (N, C, H, W); spatial sizes must be positive.
std::array<int64_t, 4> upsample2d_shape(at::IntArrayRef input_size, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  TORCH_CHECK(input_size.size() == 4, "It is expected input_size equals to 4, but got size ", input_size.size());
  const int64_t oh = output_size[0], ow = output_size[1], ih = input_size[2], iw = input_size[3];
  TORCH_CHECK(ih > 0 && iw > 0 && oh > 0 && ow > 0, "Input and output sizes should be greater than 0,",
              " but got input (H: ", ih, ", W: ", iw, ") output (H: ", oh, ", W: ", ow, ")");
  return {input_size[0], input_size[1], oh, ow};
}

// grid_sampler_2d's operands: a 4-d input with non-empty spatial dims and a
// (N, H_out, W_out, 2) grid on its device, both strided. The checks that
// every grid_sampler makes come first, then the 2-d one (eager's order; its
// size(0) and size(-1) raise IndexError on a 0-d operand, as these do).
void check_grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid) {
  TORCH_CHECK(input.defined(), "grid_sampler(): expected input to not be undefined");
  TORCH_CHECK(grid.defined(), "grid_sampler(): expected grid to not be undefined");
  TORCH_CHECK(input.device() == grid.device(), "grid_sampler(): expected input and grid to be on same device, but ",
              "input is on ", input.device(), " and grid is on ", grid.device());
  TORCH_CHECK(input.layout() == at::kStrided && grid.layout() == at::kStrided,
              "grid_sampler(): expected input and grid to have torch.strided layout, but input has ", input.layout(),
              " and grid has ", grid.layout());
  TORCH_CHECK(input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
              " in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t i = 2; i < input.dim(); ++i) {
    TORCH_CHECK(input.size(i) > 0,
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(input.dim() == 4 && input.dim() == grid.dim(),
              "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with sizes ",
              input.sizes(), " and grid with sizes ", grid.sizes());
}

// Sliding-window positions along one dim: floor((size + 2 pad - dilation
// (kernel - 1) - 1) / stride) + 1, rounding towards -infinity as eager does.
int64_t sliding_blocks(int64_t size, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride) {
  const int64_t x = size + 2 * pad - (dilation * (kernel - 1) + 1);
  const int64_t q = x / stride;
  return (x % stride != 0 && ((x < 0) != (stride < 0)) ? q - 1 : q) + 1;
}

// col2im's input: 2-d (C * kH * kW, L) or 3-d with a batch that may be
// empty, L the number of sliding blocks output_size makes; positive kernel,
// stride and dilation, non-negative padding (each pair as (height, width)).
void check_col2im_shape(const at::Tensor& input, at::IntArrayRef output, at::IntArrayRef kernel,
                        at::IntArrayRef dilation, at::IntArrayRef pad, at::IntArrayRef stride) {
  TORCH_CHECK(kernel[1] > 0 && kernel[0] > 0, "kernel size should be greater than zero, but got kernel_height: ",
              kernel[0], " kernel_width: ", kernel[1]);
  TORCH_CHECK(stride[1] > 0 && stride[0] > 0, "stride should be greater than zero, but got stride_height: ",
              stride[0], " stride_width: ", stride[1]);
  TORCH_CHECK(dilation[1] > 0 && dilation[0] > 0,
              "dilation should be greater than zero, but got dilation_height: ", dilation[0],
              " dilation_width: ", dilation[1]);
  TORCH_CHECK(pad[1] >= 0 && pad[0] >= 0, "padding should be non-negative, but got pad_height: ", pad[0],
              " pad_width: ", pad[1]);
  const int64_t ndim = input.dim();
  TORCH_CHECK((ndim == 2 && input.size(0) != 0 && input.size(1) != 0) ||
                  (ndim == 3 && input.size(1) != 0 && input.size(2) != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions ",
              "for input, but got: ", input.sizes());
  const int64_t batch_dim = ndim == 3 ? 0 : -1;
  const int64_t planes = input.size(batch_dim + 1);
  uint64_t kernel_numel = 1;
  TORCH_CHECK(!c10::mul_overflows(static_cast<uint64_t>(kernel[1]), static_cast<uint64_t>(kernel[0]), &kernel_numel),
              "Given kernel_width = ", kernel[1], " and kernel_height = ", kernel[0],
              " the product of kernel_width and kernel_height overflowed.");
  TORCH_CHECK(planes % (kernel[1] * kernel[0]) == 0,
              "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got ",
              "input.size(1)=", planes, " and kernel_size=(", kernel[0], ", ", kernel[1], ").");
  const int64_t length = input.size(batch_dim + 2);
  const int64_t bh = sliding_blocks(output[0], pad[0], dilation[0], kernel[0], stride[0]);
  const int64_t bw = sliding_blocks(output[1], pad[1], dilation[1], kernel[1], stride[1]);
  TORCH_CHECK(length == bh * bw, "Given output_size=(", output[0], ", ", output[1], "), kernel_size=(", kernel[0],
              ", ", kernel[1], "), dilation=(", dilation[0], ", ", dilation[1], "), padding=(", pad[0], ", ", pad[1],
              "), stride=(", stride[0], ", ", stride[1],
              "), expected size of input's dimension 2 to match the calculated number of sliding blocks ", bh, " * ",
              bw, " = ", bh * bw, ", but got input.size(2)=", length, ".");
  TORCH_CHECK(bh >= 1 && bw >= 1, "Given output_size=(", output[0], ", ", output[1], "), kernel_size=(", kernel[0],
              ", ", kernel[1], "), dilation=(", dilation[0], ", ", dilation[1], "), padding=(", pad[0], ", ", pad[1],
              "), stride=(", stride[0], ", ", stride[1], "), calculated shape of the array of sliding blocks as (",
              bh, ", ", bw, "), which is too small (non-positive)");
  TORCH_CHECK(output[1] >= 1 && output[0] >= 1,
              "Expected output spatial size to be positive, but got: output_size=(", output[0], ", ", output[1],
              ").");
}

// ---- padding ----------------------------------------------------------------------

// reflection_pad{1,2,3}d / replication_pad{2,3}d: `dims` spatial dims, padding
// as (last dim's left, right, the one before's left, right, ...).
at::Tensor pad(const at::Tensor& self, at::IntArrayRef padding, int dims, refkPadMode mode, const char* op) {
  const c10::DeviceGuard guard(self.device());
  check_pad_input(self, padding, dims, mode);
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
    // Only reflection_pad1d refuses an empty result; a negative size is
    // at::empty's error below, as in eager.
    TORCH_CHECK(dims != 1 || shape[d] >= 1, "input (W: ", in, ") is too small. Calculated output W: ", shape[d]);
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
  const auto full = upsample2d_shape(input.sizes(), output_size);
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
  const auto full = upsample2d_shape(input_size, output_size);
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
  check_grid_sampler_2d(input, grid);
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
  check_col2im_shape(self, output_size, kernel_size, dilation, padding, stride);
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
