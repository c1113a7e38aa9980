// Autocast for the device (torch.autocast("<device>")): every operator falls
// through the AutocastPrivateUse1 key unchanged, except the ones on CUDA's
// lists, which get CUDA's policy (Note [Autocast lists]). Without the
// fallthrough, any op inside an autocast region fails with "Could not run
// ... 'AutocastPrivateUse1'".
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

namespace {

using at::autocast::CastPolicy;
// The names AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE's signatures use
// unqualified (it is written for namespace at::autocast).
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// Note [Autocast lists]: the device casts exactly what CUDA casts, read from
// the lists torch itself keeps in ATen/autocast_mode.h ("to make sure other
// backends can reuse the policy op list"; AutocastCUDA registers them the
// same way), so they follow the torch the project builds against instead of
// a copy that goes stale:
// - lower_precision_fp (AT_FORALL_LOWER_PRECISION_FP): matrix products,
//   convolutions, RNN cells, scaled_dot_product_attention run in the
//   autocast dtype;
// - fp32 (AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
//   AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE): exp, log, pow, norms, losses,
//   softmax, sum, cumsum, prod, upsampling run in float32;
// - promote (AT_FORALL_PROMOTE): dot, vdot, addcmul, addcdiv, atan2, cross,
//   index_put, scatter_add, ... run in the widest input dtype, so dot of two
//   float16 tensors stays float16 and float16 with float32 gives float32.
// OpenReg registers `dot` as fp32 (its test_autocast expects float32 from two
// float16 inputs); that is OpenReg's example of the fp32 policy, not what
// CUDA does, and a device here is treated as CUDA (DESIGN.md), so that
// OpenReg test fails on purpose. binary_cross_entropy is refused as CUDA
// refuses it, with CUDA's message.
#define OPGEN_AUTOCAST_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define OPGEN_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define OPGEN_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define OPGEN_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

at::Tensor binary_cross_entropy_banned(const at::Tensor& /*self*/, const at::Tensor& /*target*/,
                                       const std::optional<at::Tensor>& /*weight*/, int64_t /*reduction*/) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(OPGEN_AUTOCAST_LOWER)
  AT_FORALL_FP32(OPGEN_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(OPGEN_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(OPGEN_AUTOCAST_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace
