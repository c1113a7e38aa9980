// Pooling: avg_pool2d/3d, _adaptive_avg_pool2d/3d, max_pool2d/3d_with_indices
// and their backward ops. The glue checks arguments as eager does (ATen's own
// shape-check helpers from ATen/native/Pool.h, which only read sizes),
// computes the output size, allocates in the input's memory format (a
// channels-last input gives a channels-last result, as eager), and hands the
// library one call per op: refkPool / refkPoolBackward over (plane dims,
// spatial dims) descriptors (Note [Spatial dims] in RefKernels.h). The
// core avg_pool1d and adaptive_avg_pool1d are CompositeImplicitAutograd and
// reach these kernels through eager's decomposition (Note [Upsampling
// overloads] in Resample.cpp).
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/AdaptivePooling.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <tuple>

namespace opgen_ref {
namespace {

bool is_floating(c10::ScalarType t) { return c10::isFloatingType(t) && has_kernel_dtype(t); }

// eager's CPU dtype coverage of the op: "not implemented for" otherwise.
void check_dtype(const at::Tensor& t, bool ok, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(t.scalar_type()), "'");
}

// One of a pooling op's int[N] arguments: one value for every dim, or N.
int64_t pick(at::IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

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

// ---- avg_pool2d -----------------------------------------------------------------

struct Avg2d {
  int64_t k[2], s[2], p[2];
  int64_t oh, ow;
};

Avg2d avg_pool2d_meta(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, std::optional<int64_t> divisor_override) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2,
              "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2,
              "avg_pool2d: padding must either be a single int, or a tuple of two ints");
  Avg2d a{};
  for (size_t i = 0; i < 2; ++i) {
    a.k[i] = at::native::safe_downcast<int, int64_t>(pick(kernel_size, i));
    a.s[i] = stride.empty() ? a.k[i] : at::native::safe_downcast<int, int64_t>(pick(stride, i));
    a.p[i] = at::native::safe_downcast<int, int64_t>(pick(padding, i));
  }
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  const int64_t nInputPlane = input.size(-3), inputHeight = input.size(-2), inputWidth = input.size(-1);
  a.oh = at::native::pooling_output_shape<int64_t>(inputHeight, a.k[0], a.p[0], a.s[0], 1, ceil_mode);
  a.ow = at::native::pooling_output_shape<int64_t>(inputWidth, a.k[1], a.p[1], a.s[1], 1, ceil_mode);
  at::native::pool2d_shape_check(input, a.k[0], a.k[1], a.s[0], a.s[1], a.p[0], a.p[1], 1, 1, nInputPlane, inputHeight,
                     inputWidth, a.oh, a.ow, input.suggest_memory_format());
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
  const Avg2d a = avg_pool2d_meta(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  at::native::avg_pool2d_backward_shape_check(self, grad_output, 0, a.k[0], a.k[1], a.s[0], a.s[1], a.p[0], a.p[1],
                                              self.size(-3), self.size(-2), self.size(-1), a.oh, a.ow,
                                              self.suggest_memory_format());
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
  check_dtype(self, avg_pool_dtype(self.scalar_type()), "avg_pool2d_backward_out_frame");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolAvg, grad_input, grad_output, nullptr,
                    params(2, a.k, a.s, a.p, nullptr, count_include_pad, divisor_override), "avg_pool2d_backward");
  return grad_input;
}

namespace {

struct Avg3d {
  int64_t k[3], s[3], p[3];
  int64_t ot, oh, ow;
};

Avg3d avg_pool3d_args(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, std::optional<int64_t> divisor_override) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "avg_pool3d: padding must be a single int, or a tuple of three ints");
  Avg3d a{};
  for (size_t i = 0; i < 3; ++i) {
    a.k[i] = at::native::safe_downcast<int, int64_t>(pick(kernel_size, i));
    a.s[i] = stride.empty() ? a.k[i] : at::native::safe_downcast<int, int64_t>(pick(stride, i));
    a.p[i] = at::native::safe_downcast<int, int64_t>(pick(padding, i));
  }
  TORCH_CHECK((self.ndimension() == 4 || self.ndimension() == 5),
              "non-empty 4D or 5D (batch mode) tensor expected for input");
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  a.ot = at::native::pooling_output_shape<int64_t>(self.size(-3), a.k[0], a.p[0], a.s[0], 1, ceil_mode);
  a.oh = at::native::pooling_output_shape<int64_t>(self.size(-2), a.k[1], a.p[1], a.s[1], 1, ceil_mode);
  a.ow = at::native::pooling_output_shape<int64_t>(self.size(-1), a.k[2], a.p[2], a.s[2], 1, ceil_mode);
  return a;
}

bool avg_pool3d_dtype(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble || t == c10::kLong; }

}  // namespace

at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  const c10::DeviceGuard guard(self.device());
  const Avg3d a = avg_pool3d_args(self, kernel_size, stride, padding, ceil_mode, divisor_override);
  at::native::pool3d_shape_check(self, self.size(-4), a.k[0], a.k[1], a.k[2], a.s[0], a.s[1], a.s[2], a.p[0], a.p[1],
                                 a.p[2], 1, 1, 1, self.size(-3), self.size(-2), self.size(-1), a.ot, a.oh, a.ow,
                                 "avg_pool3d()", true);
  check_dtype(self, avg_pool3d_dtype(self.scalar_type()), "avg_pool3d_out_frame");
  at::Tensor out = empty_as_format(with_spatial(self, {a.ot, a.oh, a.ow}), self, self.scalar_type(),
                                   self.suggest_memory_format());
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
  at::native::avg_pool3d_backward_shape_check(self, grad_output, self.size(-4), a.k[0], a.k[1], a.k[2], a.s[0],
                                              a.s[1], a.s[2], a.p[0], a.p[1], a.p[2], self.size(-3), self.size(-2),
                                              self.size(-1), a.ot, a.oh, a.ow, "avg_pool3d_backward()");
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
  check_dtype(self, avg_pool3d_dtype(self.scalar_type()), "avg_pool3d_backward_out_frame");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
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
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 ",
              "but received {", output_size[0], ", ", output_size[1], "}");
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool2d");
  at::Tensor out = empty_as_format(with_spatial(self, {output_size[0], output_size[1]}), self, self.scalar_type(),
                                   self.suggest_memory_format());
  run_pool(refkPoolAdaptiveAvg, out, nullptr, self, params(2, nullptr, nullptr, nullptr, nullptr, true, {}),
           "_adaptive_avg_pool2d");
  return out;
}

at::Tensor _adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "_adaptive_avg_pool2d_backward");
  at::native::adaptive_pool_empty_output_check(grad_output, "adaptive_avg_pool2d_backward");
  const int64_t ndim = grad_output.dim();
  TORCH_CHECK((ndim == 3 || ndim == 4), "adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  TORCH_CHECK(self.dim() == ndim, "adaptive_avg_pool2d_backward(): grad_output and input dims differ");
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool2d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolAdaptiveAvg, grad_input, grad_output, nullptr,
                    params(2, nullptr, nullptr, nullptr, nullptr, true, {}), "_adaptive_avg_pool2d_backward");
  return grad_input;
}

at::Tensor _adaptive_avg_pool3d(const at::Tensor& self, at::IntArrayRef output_size) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0 && output_size[2] >= 0,
              "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 ", "but received {",
              output_size[0], ", ", output_size[1], ", ", output_size[2], "}");
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, "
                "but input has sizes ",
                self.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK((self.dim() == 4 || self.dim() == 5), "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ",
              self.sizes());
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool3d_cpu");
  at::Tensor out = empty_as_format(with_spatial(self, {output_size[0], output_size[1], output_size[2]}), self,
                                   self.scalar_type(), self.suggest_memory_format());
  run_pool(refkPoolAdaptiveAvg, out, nullptr, self, params(3, nullptr, nullptr, nullptr, nullptr, true, {}),
           "_adaptive_avg_pool3d");
  return out;
}

at::Tensor _adaptive_avg_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self}, "_adaptive_avg_pool3d_backward");
  at::native::adaptive_pool_empty_output_check(grad_output, "adaptive_avg_pool3d_backward");
  TORCH_CHECK(self.dim() == grad_output.dim(), "adaptive_avg_pool3d_backward_out_cpu_template",
              ": Expected dimensions ", self.dim(), " for `gradOutput_` but got dimensions ", grad_output.dim());
  for (const int64_t d : {-4, -3, -2, -1}) (void)self.size(d);  // eager's IndexError for fewer dims
  for (const int64_t d : {-3, -2, -1}) (void)grad_output.size(d);
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  check_dtype(self, is_floating(self.scalar_type()), "adaptive_avg_pool3d_backward_cpu");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
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

Max2d max_pool2d_meta(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints")
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2,
              "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints")
  TORCH_CHECK(padding.size() == 1 || padding.size() == 2,
              "max_pool2d: padding must either be a single int, or a tuple of two ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 2,
              "max_pool2d: dilation must be either a single int, or a tuple of two ints");
  Max2d m{};
  for (size_t i = 0; i < 2; ++i) {
    m.k[i] = at::native::safe_downcast<int, int64_t>(pick(kernel_size, i));
    m.s[i] = stride.empty() ? m.k[i] : at::native::safe_downcast<int, int64_t>(pick(stride, i));
    m.p[i] = at::native::safe_downcast<int, int64_t>(pick(padding, i));
    m.d[i] = at::native::safe_downcast<int, int64_t>(pick(dilation, i));
  }
  const auto memory_format = input.suggest_memory_format();
  if (memory_format == at::MemoryFormat::ChannelsLast) {
    TORCH_CHECK(input.ndimension() == 4,
                "non-empty 4D (batch mode) tensor expected for input with channels_last layout");
  } else {
    TORCH_CHECK((input.ndimension() == 3 || input.ndimension() == 4),
                "non-empty 3D or 4D (batch mode) tensor expected for input");
  }
  const int64_t nInputPlane = input.size(-3), inputHeight = input.size(-2), inputWidth = input.size(-1);
  m.oh = at::native::pooling_output_shape<int64_t>(inputHeight, m.k[0], m.p[0], m.s[0], m.d[0], ceil_mode);
  m.ow = at::native::pooling_output_shape<int64_t>(inputWidth, m.k[1], m.p[1], m.s[1], m.d[1], ceil_mode);
  at::native::pool2d_shape_check(input, m.k[0], m.k[1], m.s[0], m.s[1], m.p[0], m.p[1], m.d[0], m.d[1], nInputPlane, inputHeight,
                     inputWidth, m.oh, m.ow, memory_format);
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
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
  const Max2d m = max_pool2d_meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  at::native::max_pool2d_backward_shape_check(self, grad_output, indices, m.k[0], m.k[1], m.s[0], m.s[1], m.p[0],
                                              m.p[1], m.d[0], m.d[1], self.size(-3), self.size(-2), self.size(-1),
                                              m.oh, m.ow, self.suggest_memory_format());
  check_dtype(self, is_floating(self.scalar_type()), "max_pool2d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolMax, grad_input, grad_output, &indices, params(2, m.k, m.s, m.p, m.d, true, {}),
                    "max_pool2d_with_indices_backward");
  return grad_input;
}

namespace {

struct Max3d {
  int64_t k[3], s[3], p[3], d[3];
  int64_t ot, oh, ow;
};

Max3d max_pool3d_args(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  Max3d m{};
  for (size_t i = 0; i < 3; ++i) {
    m.k[i] = at::native::safe_downcast<int, int64_t>(pick(kernel_size, i));
    m.s[i] = stride.empty() ? m.k[i] : at::native::safe_downcast<int, int64_t>(pick(stride, i));
    m.p[i] = at::native::safe_downcast<int, int64_t>(pick(padding, i));
    m.d[i] = at::native::safe_downcast<int, int64_t>(pick(dilation, i));
  }
  if (self.suggest_memory_format() == at::MemoryFormat::ChannelsLast3d) {
    TORCH_CHECK(self.ndimension() == 5,
                "non-empty 5D (batch mode) tensor expected for input with channels_last_3d layout");
  } else {
    TORCH_CHECK((self.ndimension() == 4 || self.ndimension() == 5),
                "non-empty 4D or 5D (batch mode) tensor expected for input");
  }
  m.ot = at::native::pooling_output_shape<int64_t>(self.size(-3), m.k[0], m.p[0], m.s[0], m.d[0], ceil_mode);
  m.oh = at::native::pooling_output_shape<int64_t>(self.size(-2), m.k[1], m.p[1], m.s[1], m.d[1], ceil_mode);
  m.ow = at::native::pooling_output_shape<int64_t>(self.size(-1), m.k[2], m.p[2], m.s[2], m.d[2], ceil_mode);
  return m;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  const c10::DeviceGuard guard(self.device());
  const Max3d m = max_pool3d_args(self, kernel_size, stride, padding, dilation, ceil_mode);
  at::native::pool3d_shape_check(self, self.size(-4), m.k[0], m.k[1], m.k[2], m.s[0], m.s[1], m.s[2], m.p[0], m.p[1],
                                 m.p[2], m.d[0], m.d[1], m.d[2], self.size(-3), self.size(-2), self.size(-1), m.ot,
                                 m.oh, m.ow, "max_pool3d_with_indices_out_cpu_template()");
  check_dtype(self, max_pool_dtype(self.scalar_type()), "max_pool3d");
  const auto format = self.suggest_memory_format();
  const auto shape = with_spatial(self, {m.ot, m.oh, m.ow});
  at::Tensor out = empty_as_format(shape, self, self.scalar_type(), format);
  at::Tensor indices = empty_as_format(shape, self, c10::kLong, format);
  run_pool(refkPoolMax, out, &indices, self, params(3, m.k, m.s, m.p, m.d, true, {}), "max_pool3d_with_indices");
  return {out, indices};
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor& indices) {
  const c10::DeviceGuard guard(self.device());
  common_device({&grad_output, &self, &indices}, "max_pool3d_with_indices_backward");
  const Max3d m = max_pool3d_args(self, kernel_size, stride, padding, dilation, ceil_mode);
  TORCH_CHECK(self.scalar_type() == grad_output.scalar_type(), "expected dtype ", self.dtype(),
              " for `gradOutput` but got dtype ", grad_output.dtype());
  at::native::max_pool3d_backward_shape_check(self, grad_output, indices, self.size(-4), m.k[0], m.k[1], m.k[2],
                                              m.s[0], m.s[1], m.s[2], m.p[0], m.p[1], m.p[2], m.d[0], m.d[1], m.d[2],
                                              self.size(-3), self.size(-2), self.size(-1), m.ot, m.oh, m.ow,
                                              "max_pool3d_with_indices_backward_out_cpu_template()");
  check_dtype(self, is_floating(self.scalar_type()), "max_pool3d_backward");
  at::Tensor grad_input = empty_as_format(self.sizes(), self, self.scalar_type(), self.suggest_memory_format());
  run_pool_backward(refkPoolMax, grad_input, grad_output, &indices, params(3, m.k, m.s, m.p, m.d, true, {}),
                    "max_pool3d_with_indices_backward");
  return grad_input;
}

}  // namespace opgen_ref
