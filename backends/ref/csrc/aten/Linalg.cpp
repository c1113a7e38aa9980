// Matrix products: mm, bmm, addmm. Shapes and dtypes are checked with eager's
// messages, in eager's order; the library's blocked GEMM (refkGemm, Note
// [Blocked GEMM]) computes with any strides, so transposed and sliced
// operands are never copied first.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

namespace opgen_ref {
namespace {

// alpha/beta as the GEMM reads them: converted as eager converts them
// (checked, truncating for integers); the half types compute in float.
refkScalar gemm_scalar(const c10::Scalar& s, c10::ScalarType dtype, const char* op) {
  const bool half = dtype == c10::kHalf || dtype == c10::kBFloat16;
  return fill_value(s, half ? c10::kFloat : dtype, op);
}

// out (+)= alpha * a @ b on the library, 2-d or batched 3-d.
void gemm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, refkScalar alpha, refkScalar beta,
               const char* op) {
  if (out.numel() == 0) return;
  const refkTensor cd = describe(out, op), ad = describe(a, op), bd = describe(b, op);
  const refkContext ctx = context();
  check(refkGemm(&ctx, &cd, &ad, &bd, alpha, beta), op);
}

constexpr refkScalar kOne{1.0, 1};
constexpr refkScalar kZero{0.0, 0};

}  // namespace

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2, "self must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
              self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              self.scalar_type(), " != ", mat2.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  const c10::Device device = common_device({&self, &mat2}, "mm");
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty({self.size(0), mat2.size(1)}, self.scalar_type(), device);
  gemm_into(out, self, mat2, kOne, kZero, "mm");
  return out;
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  const int64_t batch = self.size(0), k = self.size(2);
  TORCH_CHECK(mat2.size(0) == batch && mat2.size(1) == k,
              "Expected size for first two dimensions of batch2 tensor to be: [", batch, ", ", k, "] but got: [",
              mat2.size(0), ", ", mat2.size(1), "].");
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "expected scalar type ", self.scalar_type(), " but found ",
              mat2.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool, "\"bmm\" not implemented for 'Bool'");
  const c10::Device device = common_device({&self, &mat2}, "bmm");
  const c10::DeviceGuard guard(device);
  at::Tensor out = empty({batch, self.size(1), mat2.size(2)}, self.scalar_type(), device);
  gemm_into(out, self, mat2, kOne, kZero, "bmm");
  return out;
}

// beta * self + alpha * mat1 @ mat2, self broadcast to the product's shape.
// beta == 0 ignores self (NaN and inf in it do not propagate), as eager.
at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", mat2.scalar_type());
  TORCH_CHECK(mat1.scalar_type() == mat2.scalar_type(), "mat1 and mat2 must have the same dtype, but got ",
              mat1.scalar_type(), " and ", mat2.scalar_type());
  TORCH_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
              mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  const c10::ScalarType dtype = mat1.scalar_type();
  const c10::Device device = common_device({&self, &mat1, &mat2}, "addmm");
  const c10::DeviceGuard guard(device);
  const at::Tensor bias = to_dtype(self, dtype, device, "addmm").expand({mat1.size(0), mat2.size(1)});
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  const refkScalar b = gemm_scalar(beta, dtype, "addmm"), a = gemm_scalar(alpha, dtype, "addmm");
  at::Tensor out = empty(bias.sizes(), dtype, device);
  const bool ignore_self = c10::isIntegralType(dtype, false) ? b.i == 0 : b.f == 0.0;
  if (!ignore_self && out.numel() > 0) copy_into(out, bias, "addmm");
  gemm_into(out, mat1, mat2, a, ignore_self ? kZero : b, "addmm");
  return out;
}

}  // namespace opgen_ref
