// Weight normalization: _weight_norm_interface and its backward, what
// torch.nn.utils.weight_norm (and its parametrizations form) reaches through
// _weight_norm for dim 0 or the last dim, the conv weights of wav2vec2-style
// positional embeddings among them. The glue makes eager CPU's checks and
// result layouts (w contiguous, the norms laid out as g, in float32 for
// float16/bfloat16 weights) and hands refkWeightNorm 1-d views of g and the
// norms.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <tuple>

namespace opgen_ref {
namespace {

// A contiguous tensor as one dim of all its elements.
refkTensor flat(const at::Tensor& t, const char* op) { return describe(t.view({t.numel()}), op); }

at::Tensor contiguous_on(const at::Tensor& t, const char* op) {
  if (t.is_contiguous()) return t;
  at::Tensor c = empty(t.sizes(), t.scalar_type(), t.device());
  copy_into(c, t, op);
  return c;
}

c10::ScalarType norm_dtype(c10::ScalarType t) {
  return t == c10::kHalf || t == c10::kBFloat16 ? c10::kFloat : t;
}

// Eager's checks of the fused kernels, made even for an empty v: floating
// weights, g (and the norms) of v's dtype (their accumulation type), and
// dim the first or the last. g holds one element per index along dim.
void check_weights(const at::Tensor& v, const at::Tensor& g, int64_t dim, const char* op) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1, op, ": fused kernels can only be applied for first or last dim");
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(v.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(v.scalar_type()), "'");
  kernel_dtype(v.scalar_type(), op);
  TORCH_CHECK(g.scalar_type() == v.scalar_type(), "expected scalar type ", v.scalar_type(), " but found ",
              g.scalar_type());
  TORCH_CHECK(g.numel() == v.size(dim), op, ": g must have v.size(dim) = ", v.size(dim), " elements, got ",
              g.numel());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _weight_norm_interface(const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  const char* op = "weight_norm_kernel";
  const c10::Device device = common_device({&v, &g}, "_weight_norm_interface");
  const c10::DeviceGuard guard(device);
  at::Tensor w = empty(v.sizes(), v.scalar_type(), device);
  at::Tensor norm = at::empty_strided(g.sizes(), g.strides(), g.options().dtype(norm_dtype(g.scalar_type())));
  const refkContext ctx = context();
  // An empty v computes too, as eager's: a slice without elements has norm
  // 0 (and its gradients 0 / 0); eager CPU divides by zero when dim's own
  // size is 0, where there is nothing to compute here.
  check_weights(v, g, dim, op);
  const at::Tensor gc = contiguous_on(g, op);
  at::Tensor n = norm.is_contiguous() ? norm : empty(g.sizes(), norm.scalar_type(), device);
  const refkTensor dw = describe(w, op), dv = describe(v, op), dg = flat(gc, op), dn = flat(n, op);
  check(refkWeightNorm(&ctx, &dw, &dn, &dv, &dg, static_cast<int32_t>(dim)), op);
  if (!n.is_same(norm)) copy_into(norm, n, op);
  return {w, norm};
}

std::tuple<at::Tensor, at::Tensor> _weight_norm_interface_backward(const at::Tensor& grad_w, const at::Tensor& saved_v,
                                                                   const at::Tensor& saved_g,
                                                                   const at::Tensor& saved_norms, int64_t dim) {
  const char* op = "weight_norm_backward_kernel";
  const c10::Device device = common_device({&grad_w, &saved_v, &saved_g, &saved_norms}, "_weight_norm_interface_backward");
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(saved_v.is_contiguous(), "saved_v must be contiguous");
  TORCH_CHECK(saved_g.is_contiguous(), "saved_g must be contiguous");
  TORCH_CHECK(saved_norms.is_contiguous(), "saved_norms must be contiguous");
  at::Tensor grad_v = empty(saved_v.sizes(), saved_v.scalar_type(), device);
  at::Tensor grad_g = empty(saved_g.sizes(), saved_g.scalar_type(), device);
  const refkContext ctx = context();
  check_weights(saved_v, saved_g, dim, op);
  TORCH_CHECK(grad_w.scalar_type() == saved_v.scalar_type(), "expected scalar type ", saved_v.scalar_type(),
              " but found ", grad_w.scalar_type());
  TORCH_CHECK(grad_w.sizes() == saved_v.sizes(), op, ": grad_w must have saved_v's shape ", saved_v.sizes(),
              ", got ", grad_w.sizes());
  const auto nt = norm_dtype(saved_v.scalar_type());
  TORCH_CHECK(saved_norms.scalar_type() == nt, "expected scalar type ", nt, " but found ", saved_norms.scalar_type());
  TORCH_CHECK(saved_norms.numel() == saved_v.size(dim), op, ": saved_norms must have v.size(dim) = ",
              saved_v.size(dim), " elements, got ", saved_norms.numel());
  const refkTensor dgv = describe(grad_v, op), dgw = describe(grad_w, op), dv = describe(saved_v, op),
                   dgg = flat(grad_g, op), dg = flat(saved_g, op), dn = flat(saved_norms, op);
  check(refkWeightNormBackward(&ctx, &dgv, &dgg, &dgw, &dv, &dg, &dn, static_cast<int32_t>(dim)), op);
  return {grad_v, grad_g};
}

}  // namespace opgen_ref
