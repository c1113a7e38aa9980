// Convolution and its gradients, 1-d to 3-d, strided, padded, dilated,
// grouped and transposed, as im2col/col2im and GEMMs of the kernel library
// (Note [Convolution as GEMM] in RefKernels.h).
//
// Registering aten::convolution and aten::convolution_backward on the device
// is what F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, padding='same' and their
// autograd reach on torch 2.13 (conv*d and _convolution_mode are
// CompositeImplicit and call convolution; autograd's formula for
// convolution calls convolution_backward); without them, the
// CompositeExplicit kernels would go on to convolution_overrideable.
//
// Every case is one of three products over an (image, grid) pair, where
// grid position o reads image position o * stride - padding + k * dilation:
// - unfold: grid = W @ im2col(image)          (forward; transposed: grad_input)
// - fold:   image = col2im(W^T @ grid)        (transposed forward; grad_input)
// - weight: dW = grid @ im2col(image)^T       (grad_weight, both kinds)
// with W the weight as a (C_grid, C_image / groups * K) matrix per group:
// (C_out, C_in / g, *k) for a convolution (grid = output), (C_in, C_out / g,
// *k) for a transposed one (grid = input). The half types compute in float
// throughout and round once at the end, as eager's CPU kernels accumulate.
// Column buffers are laid out (C * K, N, L), so the weight gradient is one
// GEMM over (n, l) per group; large batches run in chunks.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <array>
#include <sstream>
#include <tuple>
#include <vector>

namespace opgen_ref {
namespace {

constexpr const char* kOp = "convolution";
constexpr int64_t kColumnBudget = int64_t{64} << 20;  // bytes of column buffer per chunk

struct Params {
  int64_t spatial = 0;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
  bool dilated() const {
    for (int64_t d : dilation) {
      if (d != 1) return true;
    }
    return false;
  }
};

std::vector<int64_t> expand_param(at::IntArrayRef p, const char* name, int64_t dim) {
  if (p.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dim), p[0]);
  TORCH_CHECK(static_cast<int64_t>(p.size()) == dim, "expected ", name,
              " to be a single integer value or a list of ", dim,
              " values to match the convolution dimensions, but got ", name, "=", p);
  return p.vec();
}

Params make_params(const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
                   at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  Params p;
  p.spatial = weight.dim() - 2;
  TORCH_CHECK(p.spatial > 0, "weight should have at least three dimensions");
  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  p.stride = expand_param(stride, "stride", p.spatial);
  p.padding = expand_param(padding, "padding", p.spatial);
  p.dilation = expand_param(dilation, "dilation", p.spatial);
  p.output_padding = expand_param(output_padding, "output_padding", p.spatial);
  p.groups = groups;
  p.transposed = transposed;
  return p;
}

// Eager's check_shape_forward (its messages), and the backends' own checks.
void check_shapes(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, const Params& p) {
  const int64_t k = input.dim(), groups = p.groups;
  const at::IntArrayRef w = weight.sizes();
  for (int64_t v : p.padding) TORCH_CHECK(v >= 0, "negative padding is not supported");
  for (int64_t v : p.output_padding) TORCH_CHECK(v >= 0, "negative output_padding is not supported");
  for (int64_t v : p.stride) TORCH_CHECK(v > 0, "non-positive stride is not supported");
  for (int64_t v : p.dilation) TORCH_CHECK(v > 0, "dilation should be greater than zero");
  TORCH_CHECK(weight.dim() == k, "Expected ", weight.dim(), "-dimensional input for ", weight.dim(),
              "-dimensional weight ", w, ", but got ", k, "-dimensional input of size ", input.sizes(), " instead");
  TORCH_CHECK(w[0] >= groups, "Given groups=", groups, ", expected weight to be at least ", groups,
              " at dimension 0, but got weight of size ", w, " instead");
  TORCH_CHECK(w[0] % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size [", w, "] instead");
  if (!p.transposed) {
    TORCH_CHECK(input.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ", w, ", expected input",
                input.sizes(), " to have ", w[1] * groups, " channels, but got ", input.size(1),
                " channels instead");
    TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[0]), "Given weight of size ", w,
                ", expected bias to be 1-dimensional with ", w[0], " elements, but got bias of size ", bias.sizes(),
                " instead");
    bool fits = true;
    std::ostringstream in_ss, k_ss;
    for (int64_t i = 2; i < k; ++i) {
      const int64_t padded = input.size(i) + 2 * p.padding[i - 2];
      const int64_t extent = p.dilation[i - 2] * (w[i] - 1) + 1;
      fits = fits && padded >= extent;
      in_ss << (i > 2 ? " x " : "") << padded;
      k_ss << (i > 2 ? " x " : "") << extent;
    }
    TORCH_CHECK(fits, "Calculated padded input size per channel: (", in_ss.str(), "). Kernel size: (", k_ss.str(),
                "). Kernel size can't be greater than actual input size");
  } else {
    TORCH_CHECK(input.size(1) == w[0], "Given transposed=", p.transposed, ", weight of size ", w,
                ", expected input", input.sizes(), " to have ", w[0], " channels, but got ", input.size(1),
                " channels instead");
    TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w[1] * groups), "Given transposed=",
                p.transposed, ", weight of size ", w, ", expected bias to be 1-dimensional with ", w[1] * groups,
                " elements, but got bias of size ", bias.sizes(), " instead");
    for (int64_t i = 0; i < p.spatial; ++i) {
      TORCH_CHECK(p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i],
                  "output padding must be smaller than either stride or dilation, but got output_padding: ",
                  at::IntArrayRef(p.output_padding), ", stride: ", at::IntArrayRef(p.stride),
                  ", dilation: ", at::IntArrayRef(p.dilation));
    }
  }
}

// Which integer dtypes eager's CPU backends take (slow_conv2d/3d take every
// integer type forward only; the dilated and transposed ones int64 only; no
// backward but the dilated one's takes integers; bool none), with their
// error class.
void check_dtype(c10::ScalarType t, const Params& p, bool forward, std::array<bool, 3> mask) {
  if (c10::isFloatingType(t)) return;
  const bool dilated = !p.transposed && p.dilated();
  bool ok = false;
  if (forward) {
    ok = t != c10::kBool && ((!p.transposed && !dilated) || t == c10::kLong);
  } else if (mask[0] || mask[1]) {
    ok = dilated && t == c10::kLong;
  } else if (mask[2]) {  // the bias gradient alone: a sum, except where the backend does it all at once
    ok = p.transposed ? p.spatial != 3 : (!dilated || t == c10::kLong);
  } else {  // nothing asked: only the dilated backend still dispatches on the dtype
    ok = !dilated || t == c10::kLong;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", forward ? "slow_conv" : "slow_conv_backward", "\" not implemented for '",
                              c10::toString(t), "'");
}

// The dtype everything is computed in: float for the half types.
c10::ScalarType compute_type(c10::ScalarType t) {
  return t == c10::kHalf || t == c10::kBFloat16 ? c10::kFloat : t;
}

// t in `ct`, contiguous (t itself when it already is).
at::Tensor prepared(const at::Tensor& t, c10::ScalarType ct, c10::Device device) {
  if (t.scalar_type() == ct && t.is_contiguous()) return t;
  at::Tensor out = empty(t.sizes(), ct, device);
  if (out.numel() > 0) copy_into(out, t, kOp);
  return out;
}

// A descriptor over t's memory: element offset and explicit sizes/strides.
refkTensor view_of(const at::Tensor& t, int64_t offset, std::initializer_list<int64_t> sizes,
                   std::initializer_list<int64_t> strides) {
  refkTensor d{};
  d.data = t.numel() == 0 ? nullptr : static_cast<char*>(const_cast<void*>(t.const_data_ptr())) + offset * t.element_size();
  d.dtype = kernel_dtype(t.scalar_type(), kOp);
  d.ndim = static_cast<int32_t>(sizes.size());
  int i = 0;
  for (int64_t s : sizes) d.sizes[i++] = s;
  i = 0;
  for (int64_t s : strides) d.strides[i++] = s;
  return d;
}

void gemm(const refkTensor& c, const refkTensor& a, const refkTensor& b, refkScalar beta) {
  const refkContext ctx = context();
  check(refkGemm(&ctx, &c, &a, &b, refkScalar{1.0, 1}, beta), kOp);
}

// The image/grid pairing of one call (Note at the top).
struct Geometry {
  refkConvGeometry g{};
  int64_t groups = 1;
  int64_t c_img = 0, c_grid = 0;  // channels of each side
  int64_t K = 1, L = 1;           // kernel offsets, grid positions
  bool trivial = true;            // 1x1 kernel, stride 1, no padding: col == image
  std::vector<int64_t> img;       // image spatial sizes

  Geometry(const Params& p, const at::Tensor& weight, int64_t c_img_, int64_t c_grid_, at::IntArrayRef img_sizes,
           at::IntArrayRef grid_sizes)
      : groups(p.groups), c_img(c_img_), c_grid(c_grid_), img(img_sizes.begin(), img_sizes.end()) {
    g.spatial = static_cast<int32_t>(p.spatial);
    for (int64_t d = 0; d < p.spatial; ++d) {
      g.grid[d] = grid_sizes[d];
      g.kernel[d] = weight.size(2 + d);
      g.stride[d] = p.stride[d];
      g.padding[d] = p.padding[d];
      g.dilation[d] = p.dilation[d];
      K *= g.kernel[d];
      L *= g.grid[d];
      trivial = trivial && g.kernel[d] == 1 && g.stride[d] == 1 && g.padding[d] == 0 && img_sizes[d] == grid_sizes[d];
    }
  }
  int64_t rows() const { return c_img / groups * K; }  // column rows per group
  int64_t chunk(int64_t n, int64_t itemsize) const {
    const int64_t per = std::max<int64_t>(1, c_img * K * L * itemsize);
    return std::max<int64_t>(1, std::min<int64_t>(n, kColumnBudget / per));
  }
  std::vector<int64_t> shape(int64_t n, int64_t c, at::IntArrayRef spatial) const {
    std::vector<int64_t> s{n, c};
    s.insert(s.end(), spatial.begin(), spatial.end());
    return s;
  }
};

// im2col of images [n0, n0 + nb) into a (C * K, nb, L) buffer.
at::Tensor columns(const at::Tensor& image, const Geometry& geo, int64_t n0, int64_t nb) {
  at::Tensor col = empty({geo.c_img * geo.K, nb, geo.L}, image.scalar_type(), image.device());
  if (col.numel() == 0) return col;
  refkTensor im = describe(image, kOp);
  im.data = static_cast<char*>(im.data) + n0 * image.stride(0) * image.element_size();
  im.sizes[0] = nb;
  const refkTensor cd = view_of(col, 0, {nb, geo.c_img * geo.K, geo.L}, {geo.L, nb * geo.L, 1});
  const refkContext ctx = context();
  check(refkConvIm2col(&ctx, &cd, &im, &geo.g), kOp);
  return col;
}

// grid (N, C_grid, *grid) = W_g @ im2col(image)_g per group; image in the compute dtype.
at::Tensor unfold_product(const at::Tensor& image, const at::Tensor& wm, const Geometry& geo,
                          at::IntArrayRef grid_sizes) {
  const int64_t N = image.size(0), G = geo.groups, cg = geo.c_grid / G, R = geo.rows(), L = geo.L;
  at::Tensor out = empty(geo.shape(N, geo.c_grid, grid_sizes), image.scalar_type(), image.device());
  if (out.numel() == 0) return out;
  const bool direct = geo.trivial && image.is_contiguous();
  const int64_t nb = direct ? N : geo.chunk(N, image.element_size());
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t m = std::min(nb, N - n0);
    const at::Tensor col = direct ? at::Tensor() : columns(image, geo, n0, m);
    for (int64_t g = 0; g < G; ++g) {
      const refkTensor c = view_of(out, (n0 * geo.c_grid + g * cg) * L, {m, cg, L}, {geo.c_grid * L, L, 1});
      const refkTensor a = view_of(wm, g * cg * R, {m, cg, R}, {0, R, 1});
      const refkTensor b = direct ? view_of(image, (n0 * geo.c_img + g * R) * L, {m, R, L}, {geo.c_img * L, L, 1})
                                  : view_of(col, g * R * m * L, {m, R, L}, {L, m * L, 1});
      gemm(c, a, b, refkScalar{0.0, 0});
    }
  }
  return out;
}

// image (N, C_img, *img) = col2im(W_g^T @ grid_g) per group; grid contiguous in the compute dtype.
at::Tensor fold_product(const at::Tensor& grid, const at::Tensor& wm, const Geometry& geo) {
  const int64_t N = grid.size(0), G = geo.groups, cg = geo.c_grid / G, R = geo.rows(), L = geo.L;
  at::Tensor out = empty(geo.shape(N, geo.c_img, geo.img), grid.scalar_type(), grid.device());
  if (out.numel() == 0) return out;
  const bool direct = geo.trivial;
  const int64_t nb = direct ? N : geo.chunk(N, grid.element_size());
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t m = std::min(nb, N - n0);
    at::Tensor col = direct ? out : empty({geo.c_img * geo.K, m, L}, grid.scalar_type(), grid.device());
    for (int64_t g = 0; g < G; ++g) {
      const refkTensor c = direct ? view_of(out, (n0 * geo.c_img + g * R) * L, {m, R, L}, {geo.c_img * L, L, 1})
                                  : view_of(col, g * R * m * L, {m, R, L}, {L, m * L, 1});
      const refkTensor a = view_of(wm, g * cg * R, {m, R, cg}, {0, 1, R});
      const refkTensor b = view_of(grid, (n0 * geo.c_grid + g * cg) * L, {m, cg, L}, {geo.c_grid * L, L, 1});
      gemm(c, a, b, refkScalar{0.0, 0});
    }
    if (direct) continue;
    refkTensor im = describe(out, kOp);
    im.data = static_cast<char*>(im.data) + n0 * out.stride(0) * out.element_size();
    im.sizes[0] = m;
    const refkTensor cd = view_of(col, 0, {m, geo.c_img * geo.K, L}, {L, m * L, 1});
    const refkContext ctx = context();
    check(refkConvCol2im(&ctx, &im, &cd, &geo.g), kOp);
  }
  return out;
}

// dW (C_grid, C_img / G * K) = sum over n of grid_g @ im2col(image)_g^T; grid
// contiguous, both in the compute dtype.
at::Tensor weight_product(const at::Tensor& grid, const at::Tensor& image, const Geometry& geo) {
  const int64_t N = grid.size(0), G = geo.groups, cg = geo.c_grid / G, R = geo.rows(), L = geo.L;
  at::Tensor out = empty({geo.c_grid, R}, grid.scalar_type(), grid.device());
  if (out.numel() == 0) return out;
  // grid as (C_grid, N, L), so (n, l) is one K dim of stride 1.
  at::Tensor gp = grid;
  if (N > 1 && grid.numel() > 0) {
    gp = empty({geo.c_grid, N, L}, grid.scalar_type(), grid.device());
    const refkTensor dst = describe(gp, kOp);
    const refkTensor src = view_of(grid, 0, {geo.c_grid, N, L}, {L, geo.c_grid * L, 1});
    const refkContext ctx = context();
    check(refkCopy(&ctx, &dst, &src), kOp);
  }
  const int64_t nb = geo.chunk(std::max<int64_t>(N, 1), image.element_size());
  for (int64_t n0 = 0; n0 < std::max<int64_t>(N, 1); n0 += nb) {
    const int64_t m = std::min(nb, N - n0);
    const at::Tensor col = m > 0 ? columns(image, geo, n0, m) : at::Tensor();
    for (int64_t g = 0; g < G; ++g) {
      const refkTensor c = view_of(out, g * cg * R, {cg, R}, {R, 1});
      const refkTensor a = view_of(gp, g * cg * N * L + n0 * L, {cg, m * L}, {N * L, 1});
      const refkTensor b = m > 0 ? view_of(col, g * R * m * L, {m * L, R}, {1, m * L}) : view_of(gp, 0, {0, R}, {R, 1});
      gemm(c, a, b, n0 > 0 ? refkScalar{1.0, 1} : refkScalar{0.0, 0});
    }
  }
  return out;
}

// out += bias over dim 1 (out contiguous in the compute dtype).
void add_bias(const at::Tensor& out, const at::Tensor& bias) {
  if (out.numel() == 0) return;
  const at::Tensor b = prepared(bias, out.scalar_type(), out.device());
  const refkTensor od = describe(out, kOp);
  refkTensor bd = od;  // out's shape, stride 0 but along the channels
  bd.data = const_cast<void*>(b.const_data_ptr());
  for (int d = 0; d < bd.ndim; ++d) bd.strides[d] = d == 1 ? 1 : 0;
  const refkContext ctx = context();
  check(refkBinary(&ctx, refkAdd, &od, &od, &bd, refkScalar{1.0, 1}), kOp);
}

// The result in the caller's dtype (the compute tensor itself when they agree).
at::Tensor finished(const at::Tensor& t, c10::ScalarType dtype) {
  if (t.scalar_type() == dtype) return t;
  at::Tensor out = empty(t.sizes(), dtype, t.device());
  if (out.numel() > 0) copy_into(out, t, kOp);
  return out;
}

std::vector<int64_t> output_sizes(const at::Tensor& input, const at::Tensor& weight, const Params& p) {
  std::vector<int64_t> s;
  for (int64_t d = 0; d < p.spatial; ++d) {
    const int64_t i = input.size(2 + d), k = weight.size(2 + d);
    s.push_back(p.transposed ? (i - 1) * p.stride[d] - 2 * p.padding[d] + p.dilation[d] * (k - 1) +
                                   p.output_padding[d] + 1
                             : (i + 2 * p.padding[d] - p.dilation[d] * (k - 1) - 1) / p.stride[d] + 1);
  }
  return s;
}

at::IntArrayRef spatial_of(const at::Tensor& t) { return t.sizes().slice(2); }

}  // namespace

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias_opt,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  const at::Tensor bias = bias_opt.has_value() ? *bias_opt : at::Tensor();
  const Params p = make_params(weight, stride, padding, dilation, transposed, output_padding, groups);
  check_shapes(input, weight, bias, p);
  TORCH_CHECK(input.scalar_type() == weight.scalar_type() && (!bias.defined() || bias.scalar_type() == input.scalar_type()),
              "Input type (", input.scalar_type(), ") and weight type (", weight.scalar_type(),
              ") should be the same");
  const c10::Device device = common_device({&input, &weight, &bias}, kOp);
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = input.scalar_type();
  check_dtype(dtype, p, true, {false, false, false});
  // Eager's CPU backend for a transposed convolution whose output_padding
  // reaches its stride is not oneDNN but slow_conv_transpose, which rounds
  // the columns to the half type and sums them in it: so do the same there.
  bool padding_big = false;
  for (int64_t d = 0; d < p.spatial; ++d) padding_big = padding_big || p.output_padding[d] >= p.stride[d];
  const c10::ScalarType ct = p.transposed && padding_big ? dtype : compute_type(dtype);
  const std::vector<int64_t> out_sizes = output_sizes(input, weight, p);
  for (int64_t s : out_sizes) TORCH_CHECK(s >= 0, "convolution: output size is too small: ", c10::IntArrayRef(out_sizes));
  const at::Tensor wm = prepared(weight, ct, device);
  const at::Tensor x = ct == dtype ? input : prepared(input, ct, device);
  at::Tensor out;
  if (!p.transposed) {
    const Geometry geo(p, weight, input.size(1), weight.size(0), spatial_of(input), out_sizes);
    out = unfold_product(x, wm, geo, out_sizes);
  } else {
    const Geometry geo(p, weight, weight.size(1) * groups, input.size(1), out_sizes, spatial_of(input));
    out = fold_product(prepared(x, ct, device), wm, geo);
  }
  if (bias.defined()) add_bias(out, bias);
  return finished(out, dtype);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::OptionalIntArrayRef /*bias_sizes*/,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
    at::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  const Params p = make_params(weight, stride, padding, dilation, transposed, output_padding, groups);
  check_shapes(input, weight, at::Tensor(), p);
  // grad_output has the forward's output shape (eager checks it too:
  // "Expected a tensor of dimension 4 and tensor.size[1] == 4 but got ...").
  std::vector<int64_t> want{input.size(0), p.transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t s : output_sizes(input, weight, p)) want.push_back(s);
  TORCH_CHECK(grad_output.sizes() == c10::IntArrayRef(want), "convolution_backward: expected grad_output of shape ",
              c10::IntArrayRef(want), " (the convolution's output), but got ", grad_output.sizes());
  const c10::Device device = common_device({&grad_output, &input, &weight}, "convolution_backward");
  const c10::DeviceGuard guard(device);
  const c10::ScalarType dtype = input.scalar_type();
  TORCH_CHECK(grad_output.scalar_type() == dtype && weight.scalar_type() == dtype, "Input type (", dtype,
              ") and weight type (", weight.scalar_type(), ") should be the same");
  // Eager's oneDNN kernels (float32 and the half types) give the weight's
  // gradient whenever the bias's is asked for too.
  // (A 1-d one comes back as the 2-d weight it ran with, (C, C', 1, k).)
  std::array<bool, 3> mask = output_mask;
  const bool extra_weight =
      mask[2] && !mask[1] && (dtype == c10::kFloat || dtype == c10::kHalf || dtype == c10::kBFloat16);
  if (extra_weight) mask[1] = true;
  check_dtype(dtype, p, false, mask);
  const c10::ScalarType ct = compute_type(dtype);
  const at::Tensor go = prepared(grad_output, ct, device);
  const at::Tensor wm = mask[0] ? prepared(weight, ct, device) : at::Tensor();
  const at::Tensor x = mask[0] || mask[1] ? (ct == dtype ? input : prepared(input, ct, device)) : at::Tensor();
  at::Tensor gi, gw, gb;
  if (!p.transposed) {
    // image = input, grid = grad_output.
    const Geometry geo(p, weight, input.size(1), weight.size(0), spatial_of(input), spatial_of(grad_output));
    if (mask[0]) gi = finished(fold_product(go, wm, geo), dtype);
    if (mask[1]) gw = finished(weight_product(go, x, geo).view(weight.sizes()), dtype);
  } else {
    // image = grad_output, grid = input.
    const Geometry geo(p, weight, weight.size(1) * groups, input.size(1), spatial_of(grad_output), spatial_of(input));
    if (mask[0]) gi = finished(unfold_product(go, wm, geo, spatial_of(input)), dtype);
    if (mask[1]) gw = finished(weight_product(prepared(x, ct, device), go, geo).view(weight.sizes()), dtype);
  }
  if (extra_weight && p.spatial == 1) gw = gw.view({weight.size(0), weight.size(1), 1, weight.size(2)});
  if (mask[2]) {
    const int64_t C = grad_output.size(1), N = grad_output.size(0);
    const int64_t L = grad_output.numel() / std::max<int64_t>(1, N * C);
    gb = empty({C}, dtype, device);
    if (gb.numel() > 0) {
      const refkTensor out = describe(gb, "convolution_backward");
      const refkTensor in = view_of(go, 0, {C, N, L}, {L, C * L, 1});
      const refkContext ctx = context();
      check(refkReduce(&ctx, refkSum, &out, &in, 2, refkScalar{0.0, 0}), "convolution_backward");
    }
  }
  return {gi, gw, gb};
}

}  // namespace opgen_ref
