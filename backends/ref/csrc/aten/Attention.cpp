// Fused scaled dot-product attention: PyTorch's "overrideable" path for a
// PrivateUse1 device (_scaled_dot_product_fused_attention_overrideable and
// its backward), taken by F.scaled_dot_product_attention when the device's
// _fused_sdp_choice answers SDPBackend::overrideable
// (runtime/SdpChoice.cpp). Built from the library's GEMM and softmax.
//
// Note [Reference attention]: for q (B, H, L, E), k (B, H, S, E), v (B, H,
// S, Ev), batched over B * H: scores = scale * q @ k^T (+ attn_bias,
// broadcast to (B, H, L, S); is_causal sets key j > query i to -inf), p =
// softmax(scores), out = p @ v, and logsumexp (B, H, L) =
// log(sum(exp(scores))) per query. The backward recomputes p rather than
// keeping it (the memory a fused kernel exists to save): dv = p^T @ dout,
// dp = dout @ v^T, dscores = p * (dp - sum(dp * p)), dq = scale * dscores
// @ k, dk = scale * dscores^T @ q, and dbias = dscores summed over the dims
// attn_bias broadcasts. Dropout is not
// offered (the choice sends dropout_p > 0 to the math path), so
// philox_seed/offset, cum_seq_q/k and debug_attn_mask are empty.
//
// Note [Half-precision attention]: float16 and bfloat16 inputs are computed
// in float32 (scores, softmax, logsumexp, the products and the backward),
// and out and the gradients are rounded to the input dtype at the end, as
// eager's math path does (_scaled_dot_product_attention_math upcasts half
// query/key/value to float32 unless
// torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp is set) and as
// CUDA's flash kernels accumulate; logsumexp stays float32, as flash
// attention returns it.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace opgen_ref {

// The glue's own sum (aten/Reduce.cpp).
at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype);

namespace {

constexpr const char* kOp = "_scaled_dot_product_fused_attention_overrideable";

void gemm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b, double alpha) {
  const refkTensor cd = describe(c, kOp), ad = describe(a, kOp), bd = describe(b, kOp);
  const refkContext ctx = context();
  check(refkGemm(&ctx, &cd, &ad, &bd, refkScalar{alpha, 0}, refkScalar{0.0, 0}), kOp);
}

struct Shapes {
  int64_t B, H, L, S, E, Ev;
  c10::ScalarType dtype;      // what the kernels compute in (float32 for the half types)
  c10::ScalarType out_dtype;  // the inputs' dtype: out and the gradients'
  c10::Device device;
  double scale;
};

Shapes check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                    std::optional<double> scale) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kOp,
              ": expected 4-d query, key and value (batch, heads, sequence, embedding), got ", q.dim(), "-d, ",
              k.dim(), "-d and ", v.dim(), "-d");
  const c10::ScalarType dtype = q.scalar_type();
  TORCH_CHECK(k.scalar_type() == dtype && v.scalar_type() == dtype, kOp,
              ": expected query, key and value of one dtype, got ", dtype, ", ", k.scalar_type(), " and ",
              v.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(dtype == c10::kFloat || dtype == c10::kDouble || dtype == c10::kHalf ||
                                  dtype == c10::kBFloat16,
                              "\"", kOp, "\" not implemented for '", c10::toString(dtype), "'");
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2);
  TORCH_CHECK(k.size(0) == B && v.size(0) == B && k.size(1) == H && v.size(1) == H, kOp,
              ": expected query, key and value of one batch size and head count, got ", q.sizes(), ", ", k.sizes(),
              " and ", v.sizes());
  TORCH_CHECK(k.size(3) == E && v.size(2) == S, kOp, ": expected key (.., S, ", E, ") and value (.., S, Ev), got ",
              k.sizes(), " and ", v.sizes());
  if (bias.defined()) {
    TORCH_CHECK(bias.dim() <= 4, kOp, ": attn_bias must broadcast to (B, H, L, S), got ", bias.sizes());
    const int64_t full[4] = {B, H, L, S};
    for (int64_t i = 0; i < bias.dim(); ++i) {
      const int64_t n = bias.size(bias.dim() - 1 - i), want = full[3 - i];
      TORCH_CHECK(n == want || n == 1, kOp, ": attn_bias of shape ", bias.sizes(), " does not broadcast to [", B,
                  ", ", H, ", ", L, ", ", S, "]");
    }
  }
  const c10::Device device = common_device({&q, &k, &v, &bias}, kOp);
  const double s = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  const c10::ScalarType compute = dtype == c10::kDouble ? c10::kDouble : c10::kFloat;
  return Shapes{B, H, L, S, E, v.size(3), compute, dtype, device, s};
}

// (B, H, n, m) as (B * H, n, m): a view where the strides allow, else a copy.
at::Tensor batched(const at::Tensor& t) { return t.reshape({t.size(0) * t.size(1), t.size(2), t.size(3)}); }

// scale * q @ k^T (+ bias, causal mask) into a new (B, H, L, S) tensor.
at::Tensor scores(const Shapes& sh, const at::Tensor& q3, const at::Tensor& k3, const at::Tensor& bias,
                  bool is_causal) {
  at::Tensor s = empty({sh.B, sh.H, sh.L, sh.S}, sh.dtype, sh.device);
  if (s.numel() == 0) return s;
  gemm(batched(s), q3, k3.transpose(1, 2), sh.E == 0 ? 0.0 : sh.scale);
  const refkTensor sd = describe(s, kOp);
  const refkContext ctx = context();
  if (bias.defined()) {
    const at::Tensor b = to_dtype(bias, sh.dtype, sh.device, kOp);
    const refkTensor bd = describe_as(b, s.sizes(), kOp);
    check(refkBinary(&ctx, refkAdd, &sd, &sd, &bd, refkScalar{1.0, 1}), kOp);
  }
  if (is_causal) {
    // key j > query i: the bool (L, S) of two aranges compared, then -inf there.
    at::Tensor rows = empty({sh.L}, c10::kLong, sh.device), cols = empty({sh.S}, c10::kLong, sh.device);
    const refkTensor rd = describe(rows, kOp), cd = describe(cols, kOp);
    check(refkArange(&ctx, &rd, refkScalar{0.0, 0}, refkScalar{1.0, 1}), kOp);
    check(refkArange(&ctx, &cd, refkScalar{0.0, 0}, refkScalar{1.0, 1}), kOp);
    at::Tensor above = empty({sh.L, sh.S}, c10::kBool, sh.device);
    const refkTensor ad = describe(above, kOp), c2 = describe_as(cols, above.sizes(), kOp),
                     r2 = describe_as(rows.view({sh.L, 1}), above.sizes(), kOp);
    check(refkBinary(&ctx, refkGt, &ad, &c2, &r2, refkScalar{1.0, 1}), kOp);
    const at::Tensor ninf = scalar_tensor_on(-std::numeric_limits<double>::infinity(), sh.dtype, sh.device);
    const refkTensor md = describe_as(above, s.sizes(), kOp), nd = describe_as(ninf, s.sizes(), kOp);
    check(refkWhere(&ctx, &sd, &md, &nd, &sd), kOp);
  }
  return s;
}

at::Tensor softmax_rows(const at::Tensor& s) {
  at::Tensor p = empty(s.sizes(), s.scalar_type(), s.device());
  if (p.numel() == 0) return p;
  const refkTensor pd = describe(p, kOp), sd = describe(s, kOp);
  const refkContext ctx = context();
  check(refkSoftmax(&ctx, &pd, &sd, 3, 0), kOp);
  return p;
}

// log(sum(exp(s))) over the last dim as max + log(sum(exp(s - max))).
at::Tensor logsumexp(const Shapes& sh, const at::Tensor& s) {
  const c10::ScalarType stat = sh.dtype;
  at::Tensor lse = empty({sh.B, sh.H, sh.L}, stat, sh.device);
  if (lse.numel() == 0) return lse;
  const refkContext ctx = context();
  const at::Tensor& sf = s;
  at::Tensor m = empty({sh.B, sh.H, sh.L}, stat, sh.device), e = empty(s.sizes(), stat, sh.device);
  const refkTensor sd = describe(sf, kOp), md = describe(m, kOp), ed = describe(e, kOp), ld = describe(lse, kOp),
                   mb = describe_as(m.view({sh.B, sh.H, sh.L, 1}), s.sizes(), kOp);
  const refkUnaryParams none{};
  if (sh.S == 0) {
    check(refkFill(&ctx, &ld, refkScalar{-std::numeric_limits<double>::infinity(), 0}), kOp);
    return lse;
  }
  check(refkReduce(&ctx, refkAmax, &md, &sd, 1, refkScalar{0.0, 0}), kOp);
  check(refkBinary(&ctx, refkSub, &ed, &sd, &mb, refkScalar{1.0, 1}), kOp);
  check(refkUnary(&ctx, refkExp, &ed, &ed, &none), kOp);
  check(refkReduce(&ctx, refkSum, &ld, &ed, 1, refkScalar{0.0, 0}), kOp);
  check(refkUnary(&ctx, refkLog, &ld, &ld, &none), kOp);
  check(refkBinary(&ctx, refkAdd, &ld, &ld, &md, refkScalar{1.0, 1}), kOp);
  return lse;
}

at::Tensor empty_like_int(c10::Device device) { return empty({0}, c10::kLong, device); }

// Note [Attention layouts]: the op's meta (torch/_meta_registrations.py:
// alloc_with_matching_layout for the output, empty_like for each gradient)
// promises the output query's order of dims by stride, a float32
// logsumexp, 0-dim philox seed and offset, and each gradient its input's
// strides; compiled graphs rely on it (Inductor asserts the
// strides of every extern kernel's result). The kernels here compute
// contiguous results; this returns `result` laid out as `like` orders its
// dims (exactly `like`'s strides when it is dense and of the same shape),
// copying only when the two differ.
at::Tensor in_layout_of(const at::Tensor& like, const at::Tensor& result) {
  if (!result.defined() || like.dim() != result.dim()) return result;
  std::vector<int64_t> strides(result.dim());
  if (like.sizes() == result.sizes() && like.is_non_overlapping_and_dense()) {
    strides.assign(like.strides().begin(), like.strides().end());
  } else {
    std::vector<int64_t> order(result.dim());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
    int64_t stride = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      strides[*it] = stride;
      stride *= result.size(*it);
    }
  }
  if (result.strides() == at::IntArrayRef(strides)) return result;
  at::Tensor placed = at::empty_strided(result.sizes(), strides, result.options());
  copy_into(placed, result, kOp);
  return placed;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor,
           at::Tensor>
_scaled_dot_product_fused_attention_overrideable(const at::Tensor& query, const at::Tensor& key,
                                                 const at::Tensor& value, const std::optional<at::Tensor>& attn_bias,
                                                 double dropout_p, bool is_causal, bool return_debug_mask,
                                                 std::optional<double> scale) {
  static const at::Tensor undefined;
  const at::Tensor& bias = attn_bias.has_value() ? *attn_bias : undefined;
  const Shapes sh = check_inputs(query, key, value, bias, scale);
  const c10::DeviceGuard guard(sh.device);
  TORCH_CHECK_NOT_IMPLEMENTED(dropout_p == 0.0, kOp,
                              ": the reference fused attention has no dropout (its _fused_sdp_choice sends "
                              "dropout_p > 0 to the math path)");
  TORCH_CHECK_NOT_IMPLEMENTED(!return_debug_mask, kOp, ": return_debug_mask is not supported");
  TORCH_CHECK(!(is_causal && bias.defined()), kOp, ": Explicit attn_mask should not be set when is_causal=True");
  const at::Tensor q3 = batched(to_dtype(query, sh.dtype, sh.device, kOp)),
                   k3 = batched(to_dtype(key, sh.dtype, sh.device, kOp)),
                   v3 = batched(to_dtype(value, sh.dtype, sh.device, kOp));
  const at::Tensor s = scores(sh, q3, k3, bias, is_causal);
  const at::Tensor p = softmax_rows(s);
  at::Tensor out = empty({sh.B, sh.H, sh.L, sh.Ev}, sh.dtype, sh.device);
  if (out.numel() > 0) {
    if (sh.S == 0) {
      const refkTensor od = describe(out, kOp);
      const refkContext ctx = context();
      check(refkFill(&ctx, &od, refkScalar{0.0, 0}), kOp);
    } else {
      gemm(batched(out), batched(p), v3, 1.0);
    }
  }
  // float32 whatever the inputs, as the meta kernel says (Note [Attention layouts])
  const at::Tensor lse = to_dtype(logsumexp(sh, s), c10::kFloat, sh.device, kOp);
  return {in_layout_of(query, to_dtype(out, sh.out_dtype, sh.device, kOp)),
          lse,
          empty_like_int(sh.device),
          empty_like_int(sh.device),
          c10::SymInt(sh.L),
          c10::SymInt(sh.S),
          empty({}, c10::kLong, sh.device),  // philox seed and offset: 0-dim, as the meta's
          empty({}, c10::kLong, sh.device),
          empty({0}, sh.out_dtype, sh.device)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _scaled_dot_product_fused_attention_overrideable_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& /*out*/,
    const at::Tensor& /*logsumexp*/, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/,
    int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p, bool is_causal, const at::Tensor& /*philox_seed*/,
    const at::Tensor& /*philox_offset*/, std::optional<double> scale) {
  const Shapes sh = check_inputs(query, key, value, attn_bias, scale);
  const c10::DeviceGuard guard(sh.device);
  TORCH_CHECK_NOT_IMPLEMENTED(dropout_p == 0.0, kOp, "_backward: the reference fused attention has no dropout");
  TORCH_CHECK(grad_out.dim() == 4 && grad_out.size(0) == sh.B && grad_out.size(1) == sh.H &&
                  grad_out.size(2) == sh.L && grad_out.size(3) == sh.Ev,
              kOp, "_backward: grad_out of shape ", grad_out.sizes(), " does not match the output's [", sh.B, ", ",
              sh.H, ", ", sh.L, ", ", sh.Ev, "]");
  const at::Tensor q3 = batched(to_dtype(query, sh.dtype, sh.device, kOp)),
                   k3 = batched(to_dtype(key, sh.dtype, sh.device, kOp)),
                   v3 = batched(to_dtype(value, sh.dtype, sh.device, kOp));
  const at::Tensor go3 = batched(to_dtype(grad_out, sh.dtype, sh.device, kOp));
  at::Tensor grad_q, grad_k, grad_v, grad_bias;
  const at::Tensor p = softmax_rows(scores(sh, q3, k3, attn_bias, is_causal));
  if (grad_input_mask[2]) {
    grad_v = empty(value.sizes(), sh.dtype, sh.device);
    if (grad_v.numel() > 0) gemm(batched(grad_v), batched(p).transpose(1, 2), go3, 1.0);
  }
  const bool need_ds = grad_input_mask[0] || grad_input_mask[1] || (grad_input_mask[3] && attn_bias.defined());
  at::Tensor ds = empty(p.sizes(), sh.dtype, sh.device);
  if (need_ds && ds.numel() > 0) {
    at::Tensor dp = empty(p.sizes(), sh.dtype, sh.device);
    gemm(batched(dp), go3, v3.transpose(1, 2), 1.0);
    const refkTensor dsd = describe(ds, kOp), dpd = describe(dp, kOp), pd = describe(p, kOp);
    const refkContext ctx = context();
    check(refkSoftmaxBackward(&ctx, &dsd, &dpd, &pd, 3, 0), kOp);
  }
  const auto zero_if_empty_product = [&](const at::Tensor& t) {
    // An empty reduction (S == 0) contributes nothing: zeros, as eager's matmul.
    if (t.numel() > 0 && ds.numel() == 0) {
      const refkTensor d = describe(t, kOp);
      const refkContext ctx = context();
      check(refkFill(&ctx, &d, refkScalar{0.0, 0}), kOp);
      return true;
    }
    return t.numel() == 0;
  };
  if (grad_input_mask[0]) {
    grad_q = empty(query.sizes(), sh.dtype, sh.device);
    if (!zero_if_empty_product(grad_q)) gemm(batched(grad_q), batched(ds), k3, sh.scale);
  }
  if (grad_input_mask[1]) {
    grad_k = empty(key.sizes(), sh.dtype, sh.device);
    if (!zero_if_empty_product(grad_k)) gemm(batched(grad_k), batched(ds).transpose(1, 2), q3, sh.scale);
  }
  if (grad_input_mask[3] && attn_bias.defined()) {
    // dscores summed over the dims attn_bias broadcasts, in its dtype and shape.
    std::vector<int64_t> dims;
    const int64_t lead = 4 - attn_bias.dim();
    for (int64_t d = 0; d < 4; ++d) {
      if (d < lead || (attn_bias.size(d - lead) == 1 && ds.size(d) != 1)) dims.push_back(d);
    }
    at::Tensor g = dims.empty() ? ds : sum(ds, dims, /*keepdim=*/true, std::nullopt);
    grad_bias = in_layout_of(attn_bias, to_dtype(g.reshape(attn_bias.sizes()), attn_bias.scalar_type(), sh.device, kOp));
  }
  const auto out = [&](const at::Tensor& like, const at::Tensor& g) {
    return g.defined() ? in_layout_of(like, to_dtype(g, sh.out_dtype, sh.device, kOp)) : g;
  };
  return {out(query, grad_q), out(key, grad_k), out(value, grad_v), grad_bias};
}

}  // namespace opgen_ref
