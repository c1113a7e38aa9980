// Which scaled_dot_product_attention path the device takes: PyTorch asks a
// PrivateUse1 device through _fused_sdp_choice_stub (and the
// _fused_sdp_choice operator), and runs the answer. The device answers
// SDPBackend::overrideable, its fused kernels in aten/Attention.cpp (Note
// [Reference attention]), for what they implement: 4-d dense query, key and
// value of float32, float64, float16 or bfloat16 (the half types computed
// in float32 and rounded at the end, Note [Half-precision attention], as
// the math path computes them), batch and heads alike (no grouped-query
// broadcast), no dropout, no nested tensors; anything else takes the math
// path, which runs on the device's other kernels. torch.backends' switches
// (sdpa_kernel, enable_math_sdp...) are honoured: with both paths off the
// answer is SDPBackend::error, and scaled_dot_product_attention raises.
#include "runtime/Runtime.h"

#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <optional>

namespace opgen_ref::runtime {
namespace {

bool fused_fits(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal) {
  for (const at::Tensor* t : {&q, &k, &v}) {
    if (t->is_nested() || t->dim() != 4 || t->layout() != c10::kStrided || t->scalar_type() != q.scalar_type()) {
      return false;
    }
  }
  const c10::ScalarType dtype = q.scalar_type();
  if (dtype != c10::kFloat && dtype != c10::kDouble && dtype != c10::kHalf && dtype != c10::kBFloat16) return false;
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != q.size(1) || v.size(1) != q.size(1)) {
    return false;
  }
  if (k.size(3) != q.size(3) || v.size(2) != k.size(2)) return false;
  if (dropout_p != 0.0) return false;
  if (attn_mask.has_value() && attn_mask->defined()) {
    if (is_causal || attn_mask->is_nested() || attn_mask->dim() > 4) return false;
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> /*scale*/, bool /*enable_gqa*/) {
  const auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() && fused_fits(query, key, value, attn_mask, dropout_p, is_causal)) {
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  }
  if (ctx.userEnabledMathSDP()) return static_cast<int64_t>(at::SDPBackend::math);
  return static_cast<int64_t>(at::SDPBackend::error);
}

}  // namespace
}  // namespace opgen_ref::runtime

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &opgen_ref::runtime::fused_sdp_choice)
}  // namespace at::native

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(opgen_ref::runtime::fused_sdp_choice));
}
