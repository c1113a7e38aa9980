// Matrix products: mm. Shapes and dtypes are checked with eager's messages;
// the library's gemm computes with any strides.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

namespace opgen_ref {

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
  if (out.numel() == 0) return out;
  const refkTensor c = describe(out, "mm"), a = describe(self, "mm"), b = describe(mat2, "mm");
  const refkContext ctx = context();
  check(refkGemm(&ctx, &c, &a, &b, refkScalar{1.0, 1}, refkScalar{0.0, 0}), "mm");
  return out;
}

}  // namespace opgen_ref
