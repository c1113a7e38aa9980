// The FFT primitives every torch.fft function ends in (_fft_r2c, _fft_c2r,
// _fft_c2c): eager's argument checks, result shapes and dtypes (float32 ->
// complex64, float64 -> complex128; eager CPU has no half FFT) and its
// normalization, over the library's refkFft. Results are contiguous.
// Note [Complex dtypes] in RefKernels.h: these and the copies are the only
// glue that hands the library complex tensors.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <vector>

namespace opgen_ref {
namespace {

// The transform dims as eager's kernels accept them: at least one, distinct
// and in [0, dim()) (torch.fft wraps them first; eager CPU refuses others
// with internal asserts, and an empty tensor with its FFT library's errors).
std::vector<int32_t> fft_dims(const at::Tensor& self, at::IntArrayRef dim, const char* op) {
  TORCH_CHECK(!dim.empty(), op, ": expected at least one dim to transform");
  TORCH_CHECK(self.numel() > 0, op, ": cannot transform an empty tensor (sizes ", self.sizes(), ")");
  std::vector<int32_t> dims;
  std::vector<bool> seen(static_cast<size_t>(self.dim()), false);
  for (int64_t d : dim) {
    TORCH_CHECK(d >= 0 && d < self.dim(), op, ": dim ", d, " is out of range for a tensor of ", self.dim(),
                " dims");
    TORCH_CHECK(!seen[d], op, ": dim ", d, " is listed twice");
    seen[d] = true;
    dims.push_back(static_cast<int32_t>(d));
  }
  return dims;
}

// ATen's _fft_normalization_scale: 1 for none (0), 1 / sqrt(n) for by_root_n
// (1), 1 / n otherwise, n the signal's elements over the transformed dims.
double fft_scale(int64_t normalization, at::IntArrayRef signal_sizes, const std::vector<int32_t>& dims) {
  if (normalization == 0) return 1.0;
  double n = 1;
  for (int32_t d : dims) n *= static_cast<double>(signal_sizes[d]);
  return normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
}

void run_fft(refkFftKind kind, const at::Tensor& out, const at::Tensor& in, const std::vector<int32_t>& dims,
             bool forward, double scale, const char* op) {
  const refkTensor o = describe_storage(out, op), i = describe_storage(in, op);
  const refkContext ctx = context();
  check(refkFft(&ctx, kind, &o, &i, static_cast<int32_t>(dims.size()), dims.data(), forward ? 1 : 0, scale), op);
}

void check_complex(const at::Tensor& self) {
  TORCH_CHECK(self.is_complex(), "Only supports complex dtypes, but found: ", self.scalar_type());
}

}  // namespace

at::Tensor _fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided) {
  constexpr const char* op = "_fft_r2c";
  const c10::ScalarType dtype = self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(dtype), "Only supports floating-point dtypes, but found: ", dtype);
  TORCH_CHECK(dtype == c10::kFloat || dtype == c10::kDouble, "Unsupported dtype ", dtype);
  const c10::DeviceGuard guard(self.device());
  const std::vector<int32_t> dims = fft_dims(self, dim, op);
  std::vector<int64_t> sizes = self.sizes().vec();
  if (onesided) sizes[dims.back()] = sizes[dims.back()] / 2 + 1;
  at::Tensor out = empty(sizes, c10::toComplexType(dtype), self.device());
  run_fft(refkFftR2C, out, self, dims, true, fft_scale(normalization, self.sizes(), dims), op);
  return out;
}

at::Tensor _fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  constexpr const char* op = "_fft_c2r";
  check_complex(self);
  const c10::DeviceGuard guard(self.device());
  std::vector<int32_t> dims = fft_dims(self, dim, op);
  const int32_t last = dims.back();
  const int64_t in_size = self.size(last);
  TORCH_CHECK(last_dim_size >= 1 && (in_size == last_dim_size || in_size == last_dim_size / 2 + 1), op,
              ": a last dim of ", in_size, " frequencies cannot give ", last_dim_size,
              " elements; expected last_dim_size / 2 + 1 (or last_dim_size) frequencies");
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[last] = last_dim_size;
  const double scale = fft_scale(normalization, sizes, dims);
  // The leading dims as a complex-to-complex inverse first (as eager's CPU
  // kernel), then the Hermitian last dim.
  at::Tensor in = self;
  if (dims.size() > 1) {
    in = empty(self.sizes(), self.scalar_type(), self.device());
    run_fft(refkFftC2C, in, self, std::vector<int32_t>(dims.begin(), dims.end() - 1), false, 1.0, op);
  }
  at::Tensor out = empty(sizes, c10::toRealValueType(self.scalar_type()), self.device());
  run_fft(refkFftC2R, out, in, {last}, false, scale, op);
  return out;
}

at::Tensor _fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool forward) {
  constexpr const char* op = "_fft_c2c";
  check_complex(self);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty(self.sizes(), self.scalar_type(), self.device());
  if (dim.empty()) {  // nothing to transform: eager returns a copy
    copy_into(out, self, op);
    return out;
  }
  const std::vector<int32_t> dims = fft_dims(self, dim, op);
  run_fft(refkFftC2C, out, self, dims, forward, fft_scale(normalization, self.sizes(), dims), op);
  return out;
}

}  // namespace opgen_ref
