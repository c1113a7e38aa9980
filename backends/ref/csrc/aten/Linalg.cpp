// Matrix products: mm, bmm, addmm, baddbmm, addbmm; and p-norm distances between rows
// (_cdist_forward, _pdist_forward). Shapes and dtypes are checked with
// eager's messages, in eager's order; the library's blocked GEMM (refkGemm,
// Note [Blocked GEMM]) computes with any strides, so transposed and sliced
// operands are never copied first.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <ATen/ExpandUtils.h>
#include <c10/util/Exception.h>

#include <vector>

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

at::Tensor zero_filled(const at::Tensor& out) {
  const refkTensor o = describe(out, "cdist");
  const refkContext ctx = context();
  check(refkFill(&ctx, &o, refkScalar{0.0, 0}), "cdist");
  return out;
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

// beta * self + alpha * batch1 @ batch2 per batch, self expanded to the
// product's shape (B, N, P); the result has batch2's dtype. Checks in eager's
// order (its meta function reads the sizes before checking the ranks).
at::Tensor baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const c10::Scalar& beta, const c10::Scalar& alpha) {
  const std::vector<int64_t> shape{batch1.size(0), batch1.size(1), batch2.size(2)};
  const at::Tensor bias = self.expand(shape);
  TORCH_CHECK(self.scalar_type() == batch1.scalar_type(), "Input dtypes must be the same, got: input ",
              self.scalar_type(), ", batch1: ", batch1.scalar_type(), ", batch2: ", batch2.scalar_type());
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  const int64_t k = batch1.size(2);
  TORCH_CHECK(batch2.size(0) == shape[0] && batch2.size(1) == k,
              "Expected size for first two dimensions of batch2 tensor to be: [", shape[0], ", ", k, "] but got: [",
              batch2.size(0), ", ", batch2.size(1), "].");
  const c10::ScalarType dtype = batch2.scalar_type();
  TORCH_CHECK(batch1.scalar_type() == dtype, "expected scalar type ", dtype, " but found ", batch1.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"baddbmm\" not implemented for 'Bool'");
  const c10::Device device = common_device({&self, &batch1, &batch2}, "baddbmm");
  const c10::DeviceGuard guard(device);
  const refkScalar b = gemm_scalar(beta, dtype, "baddbmm"), a = gemm_scalar(alpha, dtype, "baddbmm");
  at::Tensor out = empty(shape, dtype, device);
  const bool ignore_self = c10::isIntegralType(dtype, false) ? b.i == 0 : b.f == 0.0;
  if (!ignore_self && out.numel() > 0) copy_into(out, to_dtype(bias, dtype, device, "baddbmm"), "baddbmm");
  gemm_into(out, batch1, batch2, a, ignore_self ? kZero : b, "baddbmm");
  return out;
}

// beta * self + alpha * the sum over b of batch1[b] @ batch2[b], as eager
// computes it: one addmm per batch into the result (beta on the first), so
// the sum is rounded to the dtype batch by batch; no batches leave
// beta * self. The result has self's dtype.
at::Tensor addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  const std::vector<int64_t> shape{batch1.size(1), batch2.size(2)};
  const at::Tensor bias = self.expand(shape);
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0), "batch1 and batch2 must have same number of batches, got ",
              batch1.size(0), " and ", batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
              batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  const c10::ScalarType dtype = self.scalar_type();
  const int64_t batches = batch1.size(0);
  if (batches > 0) {
    TORCH_CHECK(dtype == batch2.scalar_type(), "self and mat2 must have the same dtype, but got ", dtype, " and ",
                batch2.scalar_type());
    TORCH_CHECK(batch1.scalar_type() == batch2.scalar_type(), "mat1 and mat2 must have the same dtype, but got ",
                batch1.scalar_type(), " and ", batch2.scalar_type());
    TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  }
  kernel_dtype(dtype, "addbmm");
  const c10::Device device = common_device({&self, &batch1, &batch2}, "addbmm");
  const c10::DeviceGuard guard(device);
  const bool half = dtype == c10::kHalf || dtype == c10::kBFloat16;
  const refkScalar b = fill_value(beta, half ? c10::kFloat : dtype, "addbmm");
  const refkScalar a = fill_value(alpha, half ? c10::kFloat : dtype, "addbmm");
  at::Tensor out = empty(shape, dtype, device);
  const bool ignore_self = c10::isIntegralType(dtype, true) ? b.i == 0 : b.f == 0.0;
  if (!ignore_self && out.numel() > 0) copy_into(out, bias, "addbmm");
  if (batches == 0) {
    if (ignore_self) {
      if (out.numel() > 0) {
        const refkTensor o = describe(out, "addbmm");
        const refkContext ctx = context();
        check(refkFill(&ctx, &o, kZero), "addbmm");
      }
      return out;
    }
    // beta * self: a product over an empty inner dim.
    TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::kBool, "\"mul_cpu\" not implemented for 'Bool'");
    const at::Tensor none1 = empty({shape[0], 0}, dtype, device), none2 = empty({0, shape[1]}, dtype, device);
    gemm_into(out, none1, none2, a, b, "addbmm");
    return out;
  }
  for (int64_t i = 0; i < batches; ++i) {
    gemm_into(out, batch1.select(0, i), batch2.select(0, i), a, i == 0 ? (ignore_self ? kZero : b) : kOne, "addbmm");
  }
  return out;
}

// In place, eager's addbmm_ is its out= form into self, which resizes self
// to the product's shape (a self that only broadcasts to it grows; no
// warning), self's old values read through the expansion.
at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2, const c10::Scalar& beta,
                    const c10::Scalar& alpha) {
  const at::Tensor r = opgen_ref::addbmm(self, batch1, batch2, beta, alpha);
  if (!self.sizes().equals(r.sizes())) self.resize_(r.sizes());
  copy_into(self, r, "addbmm_");
  return self;
}

// Distances are computed directly (the library sums in double), also where
// eager's CPU kernel takes its matrix-product route for p = 2 (compute_mode;
// both agree within the dtype's tolerance, the direct one is the closer).
at::Tensor _cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(c10::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(c10::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const c10::ScalarType dtype = x1.scalar_type();
  TORCH_CHECK(x2.scalar_type() == dtype, "cdist: X1 and X2 must have the same dtype, X1 got: ", dtype, " X2 got: ",
              x2.scalar_type());
  const c10::Device device = common_device({&x1, &x2}, "cdist");
  const c10::DeviceGuard guard(device);
  const int64_t P = x1.size(-2), R = x2.size(-2), M = x1.size(-1);
  const std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  int64_t B = 1;
  for (int64_t s : batch) B *= s;
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(P);
  out_shape.push_back(R);
  at::Tensor out = empty(out_shape, dtype, device);
  // As eager: an empty result or rows of no columns (all distances 0) never
  // reach the dtype dispatch, so they work for the half types too.
  if (out.numel() == 0) return out;
  if (M == 0) return zero_filled(out);
  TORCH_CHECK_NOT_IMPLEMENTED(dtype == c10::kFloat || dtype == c10::kDouble, "\"cdist\" not implemented for '",
                              c10::toString(dtype), "'");
  // Operands as (B, rows, M): broadcast batch dims are laid out first when
  // there is more than one (their strides need not merge).
  const auto flat = [&](const at::Tensor& x, int64_t rows) {
    std::vector<int64_t> shape = batch;
    shape.push_back(rows);
    shape.push_back(M);
    refkTensor d{};
    if (batch.size() <= 1 && x.dim() == static_cast<int64_t>(shape.size())) {
      d = describe_as(x, shape, "cdist");
      if (batch.empty()) {  // add the batch dim
        for (int k = 2; k > 0; --k) {
          d.sizes[k] = d.sizes[k - 1];
          d.strides[k] = d.strides[k - 1];
        }
        d.sizes[0] = 1;
        d.strides[0] = 0;
        d.ndim = 3;
      }
      return std::make_pair(d, at::Tensor());
    }
    at::Tensor c = empty(shape, dtype, device);
    copy_into(c, x, "cdist");
    return std::make_pair(describe(c.view({B, rows, M}), "cdist"), c);
  };
  const auto [d1, keep1] = flat(x1, P);
  const auto [d2, keep2] = flat(x2, R);
  const refkTensor o = describe(out.view({B, P, R}), "cdist");
  const refkContext ctx = context();
  check(refkCdist(&ctx, &o, &d1, &d2, p), "cdist");
  return out;
}

at::Tensor _pdist_forward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const c10::ScalarType dtype = self.scalar_type();
  const c10::Device device = common_device({&self}, "pdist");
  const c10::DeviceGuard guard(device);
  const int64_t N = self.size(0);
  at::Tensor out = empty({N >= 2 ? N * (N - 1) / 2 : 0}, dtype, device);
  // As eager, any dtype passes when there is nothing to compute.
  if (out.numel() == 0) return out;
  if (self.size(1) == 0) return zero_filled(out);
  TORCH_CHECK_NOT_IMPLEMENTED(dtype == c10::kFloat || dtype == c10::kDouble, "\"pdist\" not implemented for '",
                              c10::toString(dtype), "'");
  const refkTensor o = describe(out, "pdist"), x = describe(self, "pdist");
  const refkContext ctx = context();
  check(refkPdist(&ctx, &o, &x, p), "pdist");
  return out;
}

}  // namespace opgen_ref
