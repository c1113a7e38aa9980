// Pooling: avg_pool2d/3d, _adaptive_avg_pool2d/3d, max_pool2d/3d_with_indices
// and their backward ops. The glue checks arguments as eager does, with
// eager's words and error classes, in checks of its own below (Note [Pooling
// checks]), computes the output size, allocates in the input's memory format
// (a channels-last input gives a channels-last result, as eager; eager's 3-d
// average pooling, plain and adaptive, gives contiguous ones), and hands
// the library one call per op: refkPool / refkPoolBackward over (plane dims,
// spatial dims) descriptors (Note [Spatial dims] in RefKernels.h). The
// core avg_pool1d and adaptive_avg_pool1d are CompositeImplicitAutograd and
// reach these kernels through eager's decomposition (Note [Upsampling
// overloads] in Resample.cpp).
#include "aten/Glue.h"

#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <tuple>
#include <vector>

namespace opgen_ref {
namespace {

bool is_floating(c10::ScalarType t) { return c10::isFloatingType(t) && has_kernel_dtype(t); }

// eager's CPU dtype coverage of the op: "not implemented for" otherwise.
void check_dtype(const at::Tensor& t, bool ok, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

at::Tensor empty_as_format(at::IntArrayRef shape, const at::Tensor& like, c10::ScalarType dtype,
                           at::MemoryFormat format) {
  return at::empty(shape, at::TensorOptions().dtype(dtype).device(like.device()).memory_format(format));
}

refkPoolParams params(int nspatial, const int64_t* k, const int64_t* s, const int64_t* p, const int64_t* d,
                      bool count_include_pad, std::optional<int64_t> divisor) {
  refkPoolParams r{};
  r.nspatial = nspatial;
  for (int i = 0; i < nspatial; ++i) {
    r.kernel[i] = k != nullptr ? k[i] : 0;
    r.stride[i] = s != nullptr ? s[i] : 1;
    r.padding[i] = p != nullptr ? p[i] : 0;
    r.dilation[i] = d != nullptr ? d[i] : 1;
  }
  r.count_include_pad = count_include_pad ? 1 : 0;
  r.divisor = divisor.value_or(0);
  return r;
}

void run_pool(refkPoolMode mode, const at::Tensor& out, const at::Tensor* indices, const at::Tensor& in,
              const refkPoolParams& p, const char* op) {
  if (out.numel() == 0) return;
  const refkTensor dout = describe(out, op), din = describe(in, op);
  refkTensor dind{};
  if (indices != nullptr) dind = describe(*indices, op);
  const refkContext ctx = context();
  check(refkPool(&ctx, mode, &dout, indices != nullptr ? &dind : nullptr, &din, &p), op);
}

void run_pool_backward(refkPoolMode mode, const at::Tensor& grad_in, const at::Tensor& grad_out,
                       const at::Tensor* indices, const refkPoolParams& p, const char* op) {
  if (grad_in.numel() == 0) return;
  const refkTensor dgi = describe(grad_in, op), dgo = describe(grad_out, op);
  refkTensor dind{};
  if (indices != nullptr) dind = describe(*indices, op);
  const refkContext ctx = context();
  check(refkPoolBackward(&ctx, mode, &dgi, &dgo, indices != nullptr ? &dind : nullptr, &p), op);
}

// The output shape: input's leading dims with the spatial ones replaced.
std::vector<int64_t> with_spatial(const at::Tensor& t, std::initializer_list<int64_t> spatial) {
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end() - static_cast<int64_t>(spatial.size()));
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  return shape;
}

// ---- argument checks ----------------------------------------------------------------
//
// Note [Pooling checks]: eager checks a pooling op's arguments before any
// kernel runs (Pool.h and AdaptivePooling.h in ATen/native, and each op's
// own code): each window argument narrowed to an int as it is read, the
// output size, the input's shape, then a backward's grad_output and indices.
// The glue makes the same tests in the same order with the same texts and
// error classes, so a user sees one error on either device, also where
// eager's order is an accident of its code: max pooling's backward checks
// grad_output's dtype between the window and the input, 3-d average
// pooling's only when its kernel reads grad_output; max_pool3d's backward
// takes the output size from grad_output; a negative adaptive output size
// is the allocation's error. The checks are written here, not taken from
// ATen, so the glue holds no at::native code beyond its metadata helpers
// (Note [What the glue decides] in Glue.h). Pairs and triples of window
// values are in dim order: (H, W) and (T, H, W).

// An int[N] window argument (its length already checked: 1 or N) read as
// eager keeps it, in ints: a single value serves every dim; `omitted` when
// it is empty (stride defaults to the kernel).
void read_window(at::IntArrayRef v, int n, int64_t* out, const int64_t* omitted) {
  for (int i = 0; i < n; ++i) {
    if (v.empty()) {
      out[i] = omitted[i];
      continue;
    }
    const int64_t x = v.size() == 1 ? v[0] : v[i];
    TORCH_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(),
                "value cannot be converted to type int without overflow");
    out[i] = x;
  }
}

// Window positions along one dim: floor((size + 2 pad - dilation (kernel - 1)
// - 1 [+ stride - 1 in ceil mode]) / stride) + 1, the last window starting
// inside the input or its left padding. Eager keeps the quotient in an int
// (ATen's div_rtn), so this does too: one beyond an int's range wraps as
// there.
int64_t pooled_size(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  TORCH_CHECK(stride != 0, "stride should not be zero");
  TORCH_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  TORCH_CHECK(pad <= ((kernel - 1) * dilation + 1) / 2,
              "pad should be at most half of effective kernel size, but got pad=", pad, ", kernel_size=", kernel,
              " and dilation=", dilation);
  const int64_t x = size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  auto q = static_cast<int>(x / stride);
  if (x % stride != 0 && ((x % stride < 0) != (stride < 0))) --q;
  int64_t out = static_cast<int64_t>(q) + 1;
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

// A 2-d pooling's input and window: positive kernel, stride and dilation; a
// 3-d input with no empty dim or a 4-d one whose batch may be empty (4-d
// only in channels-last); padding at most half the kernel; a non-empty
// output of (oh, ow).
void check_pool2d_shape(const at::Tensor& input, const int64_t k[2], const int64_t s[2], const int64_t p[2],
                        const int64_t d[2], int64_t oh, int64_t ow) {
  TORCH_CHECK(k[1] > 0 && k[0] > 0, "kernel size should be greater than zero, but got ", "kH: ", k[0], " kW: ", k[1]);
  TORCH_CHECK(s[1] > 0 && s[0] > 0, "stride should be greater than zero, but got dH: ", s[0], " dW: ", s[1]);
  TORCH_CHECK(d[0] > 0 && d[1] > 0, "dilation should be greater than zero, but got ", "dilationH: ", d[0],
              " dilationW: ", d[1]);
  const int64_t ndim = input.dim();
  const bool spatial = input.size(1) != 0 && input.size(2) != 0;
  if (input.suggest_memory_format() == at::MemoryFormat::ChannelsLast) {
    TORCH_CHECK(ndim == 4 && spatial && input.size(3) != 0,
                "Expected 4D (batch mode) tensor expected for input with channels_last layout",
                " with optional 0 dim batch size for input, but got: ", input.sizes());
  } else {
    TORCH_CHECK((ndim == 3 && input.size(0) != 0 && spatial) || (ndim == 4 && spatial && input.size(3) != 0),
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
                input.sizes());
  }
  TORCH_CHECK(k[1] / 2 >= p[1] && k[0] / 2 >= p[0],
              "pad should be smaller than or equal to half of kernel size, but got ", "padW = ", p[1],
              ", padH = ", p[0], ", kW = ", k[1], ", kH = ", k[0]);
  const int64_t planes = input.size(-3), h = input.size(-2), w = input.size(-1);
  TORCH_CHECK(ow >= 1 && oh >= 1, "Given input size: (", planes, "x", h, "x", w, "). ", "Calculated output size: (",
              planes, "x", oh, "x", ow, "). ", "Output size is too small");
}

// A 3-d pooling's input and window, named `fn` in the texts: positive
// kernel, stride and dilation; a 4-d input with no empty dim or a 5-d one
// whose batch may be empty; for average pooling (`avg`) an input at least
// the kernel's size; padding at most half the kernel; a non-empty output.
void check_pool3d_shape(const at::Tensor& input, const int64_t k[3], const int64_t s[3], const int64_t p[3],
                        const int64_t d[3], const int64_t out[3], const char* fn, bool avg) {
  const int64_t ndim = input.dim();
  TORCH_CHECK(k[0] > 0 && k[2] > 0 && k[1] > 0, "kernel size should be greater than zero, but got ", "kT: ", k[0],
              " kH: ", k[1], " kW: ", k[2]);
  TORCH_CHECK(s[0] > 0 && s[2] > 0 && s[1] > 0, "stride should be greater than zero, but got ", "dT: ", s[0],
              " dH: ", s[1], " dW: ", s[2]);
  TORCH_CHECK(d[0] > 0 && d[2] > 0 && d[1] > 0, "dilation should be greater than zero, but got ", "dilationT: ",
              d[0], " dilationH: ", d[1], " dilationW: ", d[2]);
  TORCH_CHECK(ndim == 4 || ndim == 5, fn, ": Expected 4D or 5D tensor for input, but got: ", input.sizes());
  for (int64_t i = ndim == 5 ? 1 : 0; i < ndim; ++i) {
    // eager's text names the empty dim's length (0), not its index
    TORCH_CHECK(input.size(i) > 0, fn,
                ": Expected input's non-batch dimensions to have positive length, but input has a shape of ",
                input.sizes(), " and non-batch dimension ", input.size(i), " has length zero!");
  }
  const int64_t planes = input.size(-4), t = input.size(-3), h = input.size(-2), w = input.size(-1);
  TORCH_CHECK(!avg || (t >= k[0] && h >= k[1] && w >= k[2]), "input image ", "(T: ", t, " H: ", h, " W: ", w,
              ") smaller than ", "kernel size ", "(kT: ", k[0], " kH: ", k[1], " kW: ", k[2], ")");
  TORCH_CHECK(k[0] / 2 >= p[0] && k[2] / 2 >= p[2] && k[1] / 2 >= p[1],
              "pad should be smaller than or equal to half of kernel size, but got ", "kT: ", k[0], " kW: ", k[2],
              " kH: ", k[1], " padT: ", p[0], " padW: ", p[2], " padH: ", p[1]);
  TORCH_CHECK(out[0] >= 1 && out[2] >= 1 && out[1] >= 1, "Given input size: (", planes, "x", t, "x", h, "x", w,
              "). ", "Calculated output size: (", planes, "x", out[0], "x", out[1], "x", out[2], "). ",
              "Output size is too small");
}

// A backward operand's (grad_output's, indices') last sizes: the forward
// result's, in an `ndim`-d tensor (TensorUtils' check_dim_size, dim by dim).
void check_last_sizes(const at::Tensor& t, int64_t ndim, std::initializer_list<int64_t> sizes) {
  int64_t dim = ndim - static_cast<int64_t>(sizes.size());
  for (const int64_t size : sizes) at::check_dim_size(t, ndim, dim++, size);
}

// An adaptive pooling backward's grad_output: no empty dim but the batch.
void check_grad_nonempty(const at::Tensor& grad_output, const char* fn) {
  for (int64_t i = 1; i < grad_output.dim(); ++i) {
    TORCH_CHECK(grad_output.size(i) > 0, fn,
                "(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has sizes ",
                grad_output.sizes(), " with dimension ", i, " being empty");
  }
}

// A backward's grad_output must have the input's dtype.
void check_grad_output_dtype(const at::Tensor& grad_output, const at::Tensor& input) {
  TORCH_CHECK(input.scalar_type() == grad_output.scalar_type(), "expected dtype ", input.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
}

// The same where eager finds it only when its kernel reads grad_output as
// the input's type (data_ptr's words), after its dtype dispatch.
void check_grad_read_dtype(const at::Tensor& grad_output, const at::Tensor& input) {
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grad_output.scalar_type());
}

// A result allocated as eager allocates it: an empty tensor resized, so a
// negative size is resize_'s error ("numel: integer multiplication
// overflow"), or, when another dim is 0, a result with that size.
at::Tensor empty_resized(at::IntArrayRef shape, const at::Tensor& like, at::MemoryFormat format) {
  at::Tensor t = at::empty({0}, like.options());
  t.resize_(shape, format);
  return t;
}

constexpr int64_t kNoDilation[3] = {1, 1, 1};

// ---- avg_pool2d -----------------------------------------------------------------

struct Avg2d {
  int64_t k[2], s[2], p[2];
  int64_t oh, ow;
};

Avg2d avg_pool2d_meta(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, std::optional<int64_t> divisor_override) {
  Avg2d a{};
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  read_window(kernel_size, 2, a.k, nullptr);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2,
              "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  read_window(stride, 2, a.s, a.k);
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2,
              "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  read_window(padding, 2, a.p, nullptr);
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  (void)input.size(-3);  // eager reads the planes first: IndexError below 3 dims
  a.oh = pooled_size(input.size(-2), a.k[0], a.p[0], a.s[0], 1, ceil_mode);
  a.ow = pooled_size(input.size(-1), a.k[1], a.p[1], a.s[1], 1, ceil_mode);
  check_pool2d_shape(input, a.k, a.s, a.p, kNoDilation, a.oh, a.ow);
  return a;
}

bool avg_pool_dtype(c10::ScalarType t) { return is_floating(t) || t == c10::kLong; }

}  // namespace

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  const c10::DeviceGuard guard(self.device());
  const Avg2d a = avg_pool2d_meta(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_dtype(self, avg_pool_dtype(self.scalar_type()), "avg_pool2d");
  at::Tensor out =
      empty_as_format(with_spatial(self, {a.oh, a.ow}), self, self.scalar_type(), self.suggest_memory_format());
  run_pool(refkPoolAvg, out, nullptr, self, params(2, a.k, a.s, a.p, nullptr, count_include_pad, divisor_override),
           "avg_pool2d");
  return out;
}

at::Tensor avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                               at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, std::optional<int64_t> divisor_override) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "avg_pool2d_backward");
  // The forward's checks (eager's backward check repeats them), then grad_output's sizes.
  const Avg2d a = avg_pool2d_meta(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_last_sizes(grad_output, self.dim(), {self.size(-3), a.oh, a.ow});
  check_grad_output_dtype(grad_output, self);
  check_dtype(self, avg_pool_dtype(self.scalar_type()), "avg_pool2d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolAvg, grad_input, grad_output, nullptr,
                    params(2, a.k, a.s, a.p, nullptr, count_include_pad, divisor_override), "avg_pool2d_backward");
  return grad_input;
}

namespace {

struct Avg3d {
  int64_t k[3], s[3], p[3];
  int64_t out[3];  // (T, H, W)
};

Avg3d avg_pool3d_args(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, std::optional<int64_t> divisor_override) {
  Avg3d a{};
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  read_window(kernel_size, 3, a.k, nullptr);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
  read_window(stride, 3, a.s, a.k);
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "avg_pool3d: padding must be a single int, or a tuple of three ints");
  read_window(padding, 3, a.p, nullptr);
  TORCH_CHECK((self.ndimension() == 4 || self.ndimension() == 5),
              "non-empty 4D or 5D (batch mode) tensor expected for input");
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  for (int i = 0; i < 3; ++i) a.out[i] = pooled_size(self.size(i - 3), a.k[i], a.p[i], a.s[i], 1, ceil_mode);
  return a;
}

bool avg_pool3d_dtype(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble || t == c10::kLong; }

}  // namespace

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  const c10::DeviceGuard guard(self.device());
  const Avg3d a = avg_pool3d_args(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_pool3d_shape(self, a.k, a.s, a.p, kNoDilation, a.out, "avg_pool3d()", true);
  check_dtype(self, avg_pool3d_dtype(self.scalar_type()), "avg_pool3d_out_frame");
  at::Tensor out = empty_as_format(with_spatial(self, {a.out[0], a.out[1], a.out[2]}), self, self.scalar_type(),
                                   at::MemoryFormat::Contiguous);
  run_pool(refkPoolAvg, out, nullptr, self, params(3, a.k, a.s, a.p, nullptr, count_include_pad, divisor_override),
           "avg_pool3d");
  return out;
}

at::Tensor avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                               at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, std::optional<int64_t> divisor_override) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "avg_pool3d_backward");
  const Avg3d a = avg_pool3d_args(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_pool3d_shape(self, a.k, a.s, a.p, kNoDilation, a.out, "avg_pool3d_backward()", true);
  check_last_sizes(grad_output, self.dim(), {self.size(-4), a.out[0], a.out[1], a.out[2]});
  check_dtype(self, avg_pool3d_dtype(self.scalar_type()), "avg_pool3d_backward_out_frame");
  check_grad_read_dtype(grad_output, self);
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), at::MemoryFormat::Contiguous);
  run_pool_backward(refkPoolAvg, grad_input, grad_output, nullptr,
                    params(3, a.k, a.s, a.p, nullptr, count_include_pad, divisor_override), "avg_pool3d_backward");
  return grad_input;
}

// ---- adaptive average pooling ---------------------------------------------------

at::Tensor _adaptive_avg_pool2d(const at::Tensor& self, at::IntArrayRef output_size) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  const int64_t ndim = self.dim();
  TORCH_CHECK((ndim == 3 || ndim == 4), "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", self.sizes());
  for (const int64_t i : {-2, -1}) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                "but input has sizes ",
                self.sizes(), " with dimension ", i + ndim, " being empty");
  }
  // output_size's signs are adaptive_avg_pool2d's check (CompositeImplicit,
  // before this op); here a negative one is the allocation's error.
  at::Tensor out = empty_resized(with_spatial(self, {output_size[0], output_size[1]}), self,
                                 ndim == 4 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous);
  if (out.numel() == 0) return out;  // eager returns before its dtype dispatch
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool2d");
  run_pool(refkPoolAdaptiveAvg, out, nullptr, self, params(2, nullptr, nullptr, nullptr, nullptr, true, {}),
           "_adaptive_avg_pool2d");
  return out;
}

at::Tensor _adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "_adaptive_avg_pool2d_backward");
  check_grad_nonempty(grad_output, "adaptive_avg_pool2d_backward");
  const int64_t ndim = grad_output.dim();
  constexpr const char* fn = "adaptive_avg_pool2d_backward_out_cpu_template";
  TORCH_CHECK(self.dim() == ndim, fn, ": Expected dimensions ", self.dim(), " for `grad_output` but got dimensions ",
              ndim);
  TORCH_CHECK((ndim == 3 || ndim == 4), fn, ": Expected 3D or 4D tensor, but got ", self.sizes());
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), fn, ": Expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool2d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolAdaptiveAvg, grad_input, grad_output, nullptr,
                    params(2, nullptr, nullptr, nullptr, nullptr, true, {}), "_adaptive_avg_pool2d_backward");
  return grad_input;
}

at::Tensor _adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, "
                "but input has sizes ",
                self.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK((self.dim() == 4 || self.dim() == 5), "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ",
              self.sizes());
  // As in 2-d, a negative output size is the allocation's error; unlike
  // 2-d, eager dispatches on the dtype even for an empty result.
  at::Tensor out = empty_resized(with_spatial(self, {output_size[0], output_size[1], output_size[2]}), self,
                                 at::MemoryFormat::Contiguous);
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool3d_cpu");
  run_pool(refkPoolAdaptiveAvg, out, nullptr, self, params(3, nullptr, nullptr, nullptr, nullptr, true, {}),
           "_adaptive_avg_pool3d");
  return out;
}

at::Tensor _adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "_adaptive_avg_pool3d_backward");
  check_grad_nonempty(grad_output, "adaptive_avg_pool3d_backward");
  TORCH_CHECK(self.dim() == grad_output.dim(), "adaptive_avg_pool3d_backward_out_cpu_template",
              ": Expected dimensions ", self.dim(), " for `gradOutput_` but got dimensions ", grad_output.dim());
  for (const int64_t d : {-4, -3, -2, -1}) (void)self.size(d);  // eager's IndexError for fewer dims
  for (const int64_t d : {-3, -2, -1}) (void)grad_output.size(d);
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool3d_backward_cpu");
  check_grad_read_dtype(grad_output, self);
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), at::MemoryFormat::Contiguous);
  run_pool_backward(refkPoolAdaptiveAvg, grad_input, grad_output, nullptr,
                    params(3, nullptr, nullptr, nullptr, nullptr, true, {}), "_adaptive_avg_pool3d_backward");
  return grad_input;
}

// ---- max pooling ----------------------------------------------------------------

namespace {

struct Max2d {
  int64_t k[2], s[2], p[2], d[2];
  int64_t oh, ow;
};

// A backward passes its grad_output, whose dtype eager checks between the
// window and the input (max_pool3d_window too).
Max2d max_pool2d_meta(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                      const at::Tensor* grad_output = nullptr) {
  Max2d m{};
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints")
  read_window(kernel_size, 2, m.k, nullptr);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2,
              "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints")
  read_window(stride, 2, m.s, m.k);
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2,
              "max_pool2d: padding must either be a single int, or a tuple of two ints");
  read_window(padding, 2, m.p, nullptr);
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 2,
              "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  read_window(dilation, 2, m.d, nullptr);
  if (grad_output != nullptr) check_grad_output_dtype(*grad_output, input);
  const auto memory_format = input.suggest_memory_format();
  if (memory_format == at::MemoryFormat::ChannelsLast) {
    TORCH_CHECK(input.ndimension() == 4,
                "non-empty 4D (batch mode) tensor expected for input with channels_last layout");
  } else {
    TORCH_CHECK((input.ndimension() == 3 || input.ndimension() == 4),
                "non-empty 3D or 4D (batch mode) tensor expected for input");
  }
  m.oh = pooled_size(input.size(-2), m.k[0], m.p[0], m.s[0], m.d[0], ceil_mode);
  m.ow = pooled_size(input.size(-1), m.k[1], m.p[1], m.s[1], m.d[1], ceil_mode);
  check_pool2d_shape(input, m.k, m.s, m.p, m.d, m.oh, m.ow);
  return m;
}

bool max_pool_dtype(c10::ScalarType t) { return has_kernel_dtype(t) && t != c10::kBool; }

}  // namespace

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  const c10::DeviceGuard guard(self.device());
  const Max2d m = max_pool2d_meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  check_dtype(self, max_pool_dtype(self.scalar_type()), "max_pool2d");
  const auto format = self.suggest_memory_format();
  const auto shape = with_spatial(self, {m.oh, m.ow});
  at::Tensor out = empty_as_format(shape, self, self.scalar_type(), format);
  at::Tensor indices = empty_as_format(shape, self, c10::kLong, format);
  run_pool(refkPoolMax, out, &indices, self, params(2, m.k, m.s, m.p, m.d, true, {}), "max_pool2d_with_indices");
  return {out, indices};
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor& indices) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self, &indices}, "max_pool2d_with_indices_backward");
  // The forward's checks (eager's backward check repeats them), then
  // grad_output's and indices' sizes, the batch last.
  const Max2d m = max_pool2d_meta(self, kernel_size, stride, padding, dilation, ceil_mode, &grad_output);
  const int64_t ndim = self.dim();
  check_last_sizes(grad_output, ndim, {self.size(-3), m.oh, m.ow});
  check_last_sizes(indices, ndim, {self.size(-3), m.oh, m.ow});
  if (ndim == 4) {
    at::check_dim_size(grad_output, ndim, 0, self.size(0));
    at::check_dim_size(indices, ndim, 0, self.size(0));
  }
  check_dtype(self, is_floating(self.scalar_type()), "max_pool2d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolMax, grad_input, grad_output, &indices, params(2, m.k, m.s, m.p, m.d, true, {}),
                    "max_pool2d_with_indices_backward");
  return grad_input;
}

namespace {

struct Max3d {
  int64_t k[3], s[3], p[3], d[3];
  int64_t out[3];  // (T, H, W)
};

// The window and the input's rank; the output size is the caller's (the
// backward takes it from grad_output, as eager does).
Max3d max_pool3d_window(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                        at::IntArrayRef padding, at::IntArrayRef dilation, const at::Tensor* grad_output = nullptr) {
  Max3d m{};
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  read_window(kernel_size, 3, m.k, nullptr);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  read_window(stride, 3, m.s, m.k);
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  read_window(padding, 3, m.p, nullptr);
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  read_window(dilation, 3, m.d, nullptr);
  if (grad_output != nullptr) check_grad_output_dtype(*grad_output, self);
  if (self.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d) {
    TORCH_CHECK(self.ndimension() == 5,
                "non-empty 5D (batch mode) tensor expected for input with channels_last_3d layout");
  } else {
    TORCH_CHECK((self.ndimension() == 4 || self.ndimension() == 5),
                "non-empty 4D or 5D (batch mode) tensor expected for input");
  }
  return m;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  const c10::DeviceGuard guard(self.device());
  Max3d m = max_pool3d_window(self, kernel_size, stride, padding, dilation);
  for (int i = 0; i < 3; ++i) m.out[i] = pooled_size(self.size(i - 3), m.k[i], m.p[i], m.s[i], m.d[i], ceil_mode);
  check_pool3d_shape(self, m.k, m.s, m.p, m.d, m.out, "max_pool3d_with_indices_out_cpu_template()", false);
  check_dtype(self, max_pool_dtype(self.scalar_type()), "max_pool3d");
  const auto format = self.suggest_memory_format();
  const auto shape = with_spatial(self, {m.out[0], m.out[1], m.out[2]});
  at::Tensor out = empty_as_format(shape, self, self.scalar_type(), format);
  at::Tensor indices = empty_as_format(shape, self, c10::kLong, format);
  run_pool(refkPoolMax, out, &indices, self, params(3, m.k, m.s, m.p, m.d, true, {}), "max_pool3d_with_indices");
  return {out, indices};
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation, bool /*ceil_mode*/,
                                            const at::Tensor& indices) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self, &indices}, "max_pool3d_with_indices_backward");
  Max3d m = max_pool3d_window(self, kernel_size, stride, padding, dilation, &grad_output);
  // The output size is grad_output's (ceil_mode plays no part), checked
  // against the window like a forward's, then grad_output and indices.
  for (int i = 0; i < 3; ++i) m.out[i] = grad_output.size(i - 3);
  check_pool3d_shape(self, m.k, m.s, m.p, m.d, m.out, "max_pool3d_with_indices_backward_out_cpu_template()", false);
  const int64_t ndim = self.dim();
  check_last_sizes(grad_output, ndim, {self.size(-4), m.out[0], m.out[1], m.out[2]});
  check_last_sizes(indices, ndim, {self.size(-4), m.out[0], m.out[1], m.out[2]});
  check_dtype(self, is_floating(self.scalar_type()), "max_pool3d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolMax, grad_input, grad_output, &indices, params(3, m.k, m.s, m.p, m.d, true, {}),
                    "max_pool3d_with_indices_backward");
  return grad_input;
}

}  // namespace opgen_ref
