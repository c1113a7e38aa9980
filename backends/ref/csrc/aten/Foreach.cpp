// The _foreach_* operators torch.optim's SGD (momentum), Adam and AdamW
// call on the device (their foreach path is the default for a PrivateUse1
// device). A list whose tensors share dtype and device and are floating goes
// to the library in one refkForeach call (Note [Foreach calls]); any other
// list is eager's slow path, one in-place device op per tensor (each our own
// kernel), so dtype promotion and errors are eager's.
#include "aten/Glue.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <vector>

namespace opgen_ref {
namespace {

// Eager's check_foreach_api_restrictions.
void check_lists(at::TensorList self, std::initializer_list<at::TensorList> others, size_t nscalars = 0) {
  TORCH_CHECK(!self.empty(), "Tensor list must have at least one tensor.");
  for (const at::TensorList& o : others) {
    TORCH_CHECK(self.size() == o.size(), "Tensor lists must have the same number of tensors, got ", self.size(),
                " and ", o.size());
  }
  if (nscalars != 0) {
    TORCH_CHECK(self.size() == nscalars, "Tensor list must have same number of elements as scalar list, got ",
                self.size(), " and ", nscalars);
  }
}

// Whether one library call serves the list: every tensor of one floating
// dtype the library has, on the first tensor's device, others broadcasting
// to self's shape without changing it.
bool library_route(at::TensorList self, std::initializer_list<at::TensorList> others) {
  const c10::Device device = self[0].device();
  if (!device.is_privateuseone()) return false;
  for (size_t k = 0; k < self.size(); ++k) {
    const auto dtype = self[k].scalar_type();
    if (!c10::isFloatingType(dtype) || !has_kernel_dtype(dtype) || self[k].device() != device) return false;
    for (const at::TensorList& o : others) {
      const at::Tensor& t = o[k];
      if (t.scalar_type() != dtype || t.device() != device) return false;
      if (at::infer_size(self[k].sizes(), t.sizes()) != self[k].sizes()) return false;
    }
  }
  return true;
}

// One refkForeach call over the list: out[k] = op(self[k], a[k], b[k], s).
void run(refkForeachOp op, at::TensorList out, at::TensorList self, at::TensorList a, at::TensorList b,
         const std::vector<refkScalar>& scalars, const char* name) {
  const c10::DeviceGuard guard(self[0].device());
  std::vector<refkTensor> d_out, d_self, d_a, d_b;
  std::vector<refkScalar> s;
  for (size_t k = 0; k < self.size(); ++k) {
    if (self[k].numel() == 0) continue;
    d_out.push_back(describe(out[k], name));
    d_self.push_back(describe(self[k], name));
    if (!a.empty()) d_a.push_back(describe_as(a[k], self[k].sizes(), name));
    if (!b.empty()) d_b.push_back(describe_as(b[k], self[k].sizes(), name));
    s.push_back(scalars[scalars.size() == 1 ? 0 : k]);
  }
  if (d_out.empty()) return;
  const refkContext ctx = context();
  check(refkForeach(&ctx, op, static_cast<int32_t>(d_out.size()), d_out.data(), d_self.data(),
                    d_a.empty() ? nullptr : d_a.data(), d_b.empty() ? nullptr : d_b.data(), s.data(),
                    static_cast<int32_t>(s.size())),
        name);
}

std::vector<refkScalar> scalars_of(at::ArrayRef<at::Scalar> s) {
  std::vector<refkScalar> r;
  r.reserve(s.size());
  for (const at::Scalar& v : s) r.push_back(kernel_scalar(v));
  return r;
}

// A scalar added to a float16/bfloat16 tensor is rounded to the tensor's
// dtype first (Note [Reduced-precision scalars]); one value per tensor then.
std::vector<refkScalar> add_scalars(at::TensorList self, const at::Scalar& scalar) {
  std::vector<refkScalar> r;
  for (const at::Tensor& t : self) r.push_back(fill_value(scalar, t.scalar_type(), "_foreach_add_"));
  return r;
}

}  // namespace

void _foreach_add_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  check_lists(self, {other});
  if (!library_route(self, {other})) {
    for (size_t k = 0; k < self.size(); ++k) self[k].add_(other[k], alpha);
    return;
  }
  run(refkForeachAdd, self, self, other, {}, {kernel_scalar(alpha)}, "_foreach_add_");
}

void _foreach_add_(at::TensorList self, const at::Scalar& scalar) {
  check_lists(self, {});
  if (!library_route(self, {})) {
    for (const at::Tensor& t : self) t.add_(scalar);
    return;
  }
  run(refkForeachAddScalar, self, self, {}, {}, add_scalars(self, scalar), "_foreach_add_");
}

void _foreach_mul_(at::TensorList self, const at::Scalar& scalar) {
  check_lists(self, {});
  if (!library_route(self, {})) {
    for (const at::Tensor& t : self) t.mul_(scalar);
    return;
  }
  run(refkForeachMulScalar, self, self, {}, {}, {kernel_scalar(scalar)}, "_foreach_mul_");
}

void _foreach_div_(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
  check_lists(self, {}, scalars.size());
  if (!library_route(self, {})) {
    for (size_t k = 0; k < self.size(); ++k) self[k].div_(scalars[k]);
    return;
  }
  run(refkForeachDivScalar, self, self, {}, {}, scalars_of(scalars), "_foreach_div_");
}

void _foreach_lerp_(at::TensorList self, at::TensorList tensors1, const at::Scalar& weight) {
  check_lists(self, {tensors1});
  if (!library_route(self, {tensors1})) {
    for (size_t k = 0; k < self.size(); ++k) self[k].lerp_(tensors1[k], weight);
    return;
  }
  run(refkForeachLerp, self, self, tensors1, {}, {kernel_scalar(weight)}, "_foreach_lerp_");
}

void _foreach_addcmul_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2, const at::Scalar& value) {
  check_lists(self, {tensor1, tensor2});
  if (!library_route(self, {tensor1, tensor2})) {
    for (size_t k = 0; k < self.size(); ++k) self[k].addcmul_(tensor1[k], tensor2[k], value);
    return;
  }
  run(refkForeachAddcmul, self, self, tensor1, tensor2, {kernel_scalar(value)}, "_foreach_addcmul_");
}

void _foreach_addcdiv_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                       at::ArrayRef<at::Scalar> scalars) {
  check_lists(self, {tensor1, tensor2}, scalars.size());
  if (!library_route(self, {tensor1, tensor2})) {
    for (size_t k = 0; k < self.size(); ++k) self[k].addcdiv_(tensor1[k], tensor2[k], scalars[k]);
    return;
  }
  run(refkForeachAddcdiv, self, self, tensor1, tensor2, scalars_of(scalars), "_foreach_addcdiv_");
}

std::vector<at::Tensor> _foreach_sqrt(at::TensorList self) {
  check_lists(self, {});
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  if (!library_route(self, {})) {
    for (const at::Tensor& t : self) out.push_back(t.sqrt());
    return out;
  }
  for (const at::Tensor& t : self) out.push_back(at::empty_like(t));
  run(refkForeachSqrt, out, self, {}, {}, {refkScalar{0, 0}}, "_foreach_sqrt");
  return out;
}

}  // namespace opgen_ref
