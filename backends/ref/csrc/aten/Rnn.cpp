// The fused recurrent cells: what ATen's LSTM and GRU (nn.LSTM, nn.GRU,
// LSTMCell, GRUCell) call for a PrivateUse1 input once the gate products are
// computed (_thnn_fused_lstm_cell, _thnn_fused_gru_cell) and what autograd
// calls for their gradients (_thnn_fused_lstm_cell_backward_impl, under the
// composite _thnn_fused_lstm_cell_backward; _thnn_fused_gru_cell_backward).
// ATen has CUDA kernels only, so these define the ops as CUDA's do: the same
// argument checks and messages (TensorUtils' checkDim, checkSize...), a
// workspace of (B, 4H) for LSTM and (B, 5H) for GRU laid out as CUDA's, and
// bias gradients as the gate gradients summed over the batch.
#include "aten/Glue.h"

#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <tuple>

namespace opgen_ref {

// The glue's own sum (aten/Reduce.cpp).
at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype);

namespace {

const at::Tensor& value(const std::optional<at::Tensor>& t) {
  static const at::Tensor undefined;
  return t.has_value() ? *t : undefined;
}

// A descriptor of t, or an absent operand (data NULL) when t is undefined.
refkTensor maybe_describe(const at::Tensor& t, const char* op) {
  if (t.defined()) return describe(t, op);
  refkTensor d{};
  d.dtype = refkFloat32;
  return d;
}

// The floating dtypes the cells compute in, and one dtype for all operands
// (CUDA reads every operand as the input's scalar_t).
void check_dtypes(const char* op, std::initializer_list<const at::Tensor*> ts) {
  const c10::ScalarType dtype = (*ts.begin())->scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(dtype) && has_kernel_dtype(dtype), "\"", op,
                              "\" not implemented for '", c10::toString(dtype), "'");
  for (const at::Tensor* t : ts) {
    TORCH_CHECK(!t->defined() || t->scalar_type() == dtype, "expected scalar type ", c10::toString(dtype),
                " but found ", c10::toString(t->scalar_type()));
  }
}

// CUDA's checkSizes: gates 2-d and alike, biases 1-d of a gate row's
// length, the previous state 2-d of batch x gates / factor elements.
void check_cell_sizes(at::CheckedFrom c, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                      const at::Tensor& input_bias, const at::Tensor& hidden_bias, int64_t factor,
                      const at::Tensor& prev_hidden) {
  const at::TensorArg ig{input_gates, "input_gates", 1}, hg{hidden_gates, "hidden_gates", 2},
      ib{input_bias, "input_bias", 3}, hb{hidden_bias, "hidden_bias", 4}, ph{prev_hidden, "prev_hidden", 5};
  at::checkDim(c, ig, 2);
  at::checkSameSize(c, ig, hg);
  const int64_t gates_size = input_gates.size(1);
  if (input_bias.defined()) {
    at::checkDim(c, ib, 1);
    at::checkNumel(c, ib, gates_size);
    at::checkSameSize(c, ib, hb);
  }
  at::checkDim(c, ph, 2);
  at::checkNumel(c, ph, input_gates.size(0) * gates_size / factor);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> _thnn_fused_lstm_cell(const at::Tensor& input_gates,
                                                                     const at::Tensor& hidden_gates,
                                                                     const at::Tensor& cx,
                                                                     const std::optional<at::Tensor>& input_bias,
                                                                     const std::optional<at::Tensor>& hidden_bias) {
  constexpr const char* op = "_thnn_fused_lstm_cell";
  const at::Tensor &ib = value(input_bias), &hb = value(hidden_bias);
  const c10::Device device = common_device({&input_gates, &hidden_gates, &cx, &ib, &hb}, op);
  const c10::DeviceGuard guard(device);
  check_cell_sizes(op, input_gates, hidden_gates, ib, hb, 4, cx);
  check_dtypes(op, {&input_gates, &hidden_gates, &cx, &ib, &hb});
  const c10::ScalarType dtype = input_gates.scalar_type();
  at::Tensor workspace = empty(input_gates.sizes(), dtype, device);
  at::Tensor hy = empty(cx.sizes(), dtype, device), cy = empty(cx.sizes(), dtype, device);
  const refkTensor dhy = describe(hy, op), dcy = describe(cy, op), dws = describe(workspace, op),
                   dig = describe(input_gates, op), dhg = describe(hidden_gates, op), dcx = describe(cx, op),
                   dib = maybe_describe(ib, op), dhb = maybe_describe(hb, op);
  if (cx.numel() == 0) return {hy, cy, workspace};
  const refkContext ctx = context();
  check(refkLstmCell(&ctx, &dhy, &dcy, &dws, &dig, &dhg, &dcx, &dib, &dhb), op);
  return {hy, cy, workspace};
}

// Returns (grad_gates, grad_cx, grad_bias); all undefined when neither
// gradient is (the composite _thnn_fused_lstm_cell_backward passes
// grad_gates on as both gate gradients and grad_bias as both biases').
std::tuple<at::Tensor, at::Tensor, at::Tensor> _thnn_fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy, const at::Tensor& cx,
    const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  constexpr const char* op = "_thnn_fused_lstm_cell_backward_impl";
  const at::Tensor &ghy = value(grad_hy), &gcy = value(grad_cy);
  if (!ghy.defined() && !gcy.defined()) return {};
  const c10::Device device = common_device({&ghy, &gcy, &cx, &cy, &workspace}, op);
  const c10::DeviceGuard guard(device);
  // CUDA's checkLSTMBackwardSizes.
  const at::CheckedFrom c = "fused_lstm_cell_backward";
  const at::TensorArg ghy_arg{ghy, "grad_hy", 1}, gcy_arg{gcy, "grad_cy", 2}, cx_arg{cx, "cx", 3},
      cy_arg{cy, "cy", 4}, ws_arg{workspace, "workspace", 5};
  const at::TensorArg& defined_grad = ghy.defined() ? ghy_arg : gcy_arg;
  at::checkDim(c, defined_grad, 2);
  const at::IntArrayRef size = defined_grad->sizes();
  if (ghy.defined()) at::checkSize(c, ghy_arg, size);
  if (gcy.defined()) at::checkSize(c, gcy_arg, size);
  at::checkSize(c, cx_arg, size);
  at::checkSize(c, cy_arg, size);
  at::checkDim(c, ws_arg, 2);
  at::checkNumel(c, ws_arg, size[0] * size[1] * 4);
  check_dtypes(op, {&workspace, &ghy, &gcy, &cx, &cy});
  const c10::ScalarType dtype = workspace.scalar_type();
  at::Tensor grad_gates = empty(workspace.sizes(), dtype, device), grad_cx = empty(cx.sizes(), dtype, device);
  const refkTensor dgg = describe(grad_gates, op), dgcx = describe(grad_cx, op), dghy = maybe_describe(ghy, op),
                   dgcy = maybe_describe(gcy, op), dcx = describe(cx, op), dcy = describe(cy, op),
                   dws = describe(workspace, op);
  const refkContext ctx = context();
  if (cx.numel() != 0) check(refkLstmCellBackward(&ctx, &dgg, &dgcx, &dghy, &dgcy, &dcx, &dcy, &dws), op);
  at::Tensor grad_bias = has_bias ? opgen_ref::sum(grad_gates, at::IntArrayRef{0}, false, std::nullopt) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> _thnn_fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                        const at::Tensor& hx,
                                                        const std::optional<at::Tensor>& input_bias,
                                                        const std::optional<at::Tensor>& hidden_bias) {
  constexpr const char* op = "_thnn_fused_gru_cell";
  const at::Tensor &ib = value(input_bias), &hb = value(hidden_bias);
  const c10::Device device = common_device({&input_gates, &hidden_gates, &hx, &ib, &hb}, op);
  const c10::DeviceGuard guard(device);
  check_cell_sizes(op, input_gates, hidden_gates, ib, hb, 3, hx);
  check_dtypes(op, {&input_gates, &hidden_gates, &hx, &ib, &hb});
  const c10::ScalarType dtype = input_gates.scalar_type();
  at::Tensor workspace = empty({hx.size(0), hx.size(1) * 5}, dtype, device);
  at::Tensor hy = empty(hx.sizes(), dtype, device);
  const refkTensor dhy = describe(hy, op), dws = describe(workspace, op), dig = describe(input_gates, op),
                   dhg = describe(hidden_gates, op), dhx = describe(hx, op), dib = maybe_describe(ib, op),
                   dhb = maybe_describe(hb, op);
  if (hx.numel() == 0) return {hy, workspace};
  const refkContext ctx = context();
  check(refkGruCell(&ctx, &dhy, &dws, &dig, &dhg, &dhx, &dib, &dhb), op);
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> _thnn_fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  constexpr const char* op = "_thnn_fused_gru_cell_backward";
  const c10::Device device = common_device({&grad_hy, &workspace}, op);
  const c10::DeviceGuard guard(device);
  // CUDA's checkGRUBackwardSizes.
  const at::CheckedFrom c = "fused_gru_cell_backward";
  const at::TensorArg ghy_arg{grad_hy, "grad_hy", 1}, ws_arg{workspace, "workspace", 2};
  at::checkDim(c, ghy_arg, 2);
  at::checkSize(c, ws_arg, {grad_hy.size(0), grad_hy.size(1) * 5});
  check_dtypes(op, {&grad_hy, &workspace});
  const c10::ScalarType dtype = grad_hy.scalar_type();
  const int64_t hidden = workspace.size(1) / 5;
  at::Tensor grad_input_gates = empty({workspace.size(0), hidden * 3}, dtype, device);
  at::Tensor grad_hidden_gates = empty({workspace.size(0), hidden * 3}, dtype, device);
  at::Tensor grad_hx = empty(grad_hy.sizes(), dtype, device);
  const refkTensor dgi = describe(grad_input_gates, op), dgh = describe(grad_hidden_gates, op),
                   dghx = describe(grad_hx, op), dghy = describe(grad_hy, op), dws = describe(workspace, op);
  const refkContext ctx = context();
  if (grad_hy.numel() != 0) check(refkGruCellBackward(&ctx, &dgi, &dgh, &dghx, &dghy, &dws), op);
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = opgen_ref::sum(grad_input_gates, at::IntArrayRef{0}, false, std::nullopt);
    grad_hidden_bias = opgen_ref::sum(grad_hidden_gates, at::IntArrayRef{0}, false, std::nullopt);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace opgen_ref
