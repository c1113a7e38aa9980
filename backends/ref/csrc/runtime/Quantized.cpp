// Quantized tensors (torch.quantize_per_tensor and the quantized dtypes
// qint8, quint8, qint32, quint4x2, quint2x4) on the device: refused, with an
// error that says why (Note [No quantized tensors]).
#include "runtime/Runtime.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>

namespace opgen_ref::runtime {
namespace {

// Note [No quantized tensors]: a quantized tensor is not a dense tensor with
// another dtype. It is a QTensorImpl holding a Quantizer, and it dispatches to
// its own key, QuantizedPrivateUse1, where nothing of the reference device's
// runs: not the CPU fallback (registered for PrivateUse1), not the glue's
// kernels. Serving quantize_per_tensor alone would hand out tensors that
// cannot be printed, dequantized, copied back to CPU or asked their q_scale;
// the per-tensor affine set alone (quantize_per_tensor, dequantize,
// int_repr, q_scale, q_zero_point, qscheme, _empty_affine_quantized,
// empty_quantized, copy_/_to_copy both ways, clone, the view ops, the
// quantized fill and equality printing needs) is a second dispatch key's
// worth of glue plus quantize/dequantize entry points in the kernel library,
// for an API torch 2.13 deprecates (its creation functions warn that they
// "are deprecated and will be removed in a future PyTorch release"); the
// quantization flows in use (torch.ao's PT2E, torchao) carry int8 data in
// plain int8/uint8 tensors with their scale and zero point, which the
// device serves. So the ways to make one are refused here, before the CPU
// fallback could make a CPU quantized tensor it cannot bring back: the
// creation ops that dispatch on their dense input (below, on PrivateUse1),
// and everything that reaches QuantizedPrivateUse1 (a fallback there):
// empty, zeros, empty_strided, empty_like or .to() with a quantized dtype
// (BackendSelect picks the quantized key from the dtype; eager CPU returns
// an empty per-tensor affine tensor for those), _empty_affine_quantized, a
// CPU quantized tensor's .to(device). torch.accelerator.get_device_capability()
// leaves the quantized dtypes out accordingly. OpenReg's test_quantize
// (quantize_per_tensor on the device, dtype and device checked) fails on
// purpose: OpenReg registers a DispatchStub that computes nothing.
[[noreturn]] void refuse(const std::string& what) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, device_name(), ": quantized tensors are not supported (", what,
      "): a quantized tensor dispatches to QuantizedPrivateUse1, where the ", device_name(),
      " device has no kernels (Note [No quantized tensors]). Quantize on CPU (x.cpu()), or keep the integer data in "
      "a plain int8/uint8 tensor with its scale and zero point (torch.ops.quantized_decomposed), which the device "
      "serves");
}

void refuse_boxed(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, torch::jit::Stack* /*stack*/) {
  const auto& name = op.operator_name();
  refuse(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
}

}  // namespace
}  // namespace opgen_ref::runtime

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : {"quantize_per_tensor", "quantize_per_tensor.tensor_qparams", "quantize_per_tensor.tensors",
                         "quantize_per_tensor_dynamic", "quantize_per_channel", "_empty_affine_quantized",
                         "_empty_per_channel_affine_quantized", "_make_per_tensor_quantized_tensor",
                         "_make_per_channel_quantized_tensor"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&opgen_ref::runtime::refuse_boxed>());
  }
}

// An op whose dispatch key comes from a quantized dtype argument
// (_empty_affine_quantized's BackendSelect picks QuantizedPrivateUse1 from
// dtype=torch.quint8) lands here, where it gets the same error rather than
// c10's "Could not run ... from the 'Quantized<device>' backend".
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&opgen_ref::runtime::refuse_boxed>());
}
