// Recurrent-cell kernels of the CPU reference library: the fused LSTM and
// GRU cells and their gradients (RefKernels.h, "recurrent cells"). The
// matrix products stay with the glue (refkGemm); what is left is pointwise
// gate math per hidden unit, so threads split the batch rows and every row
// walks its hidden units, reading gate k of unit j at column k * H + j.
// Half types load to float, compute there and round each result once; the
// gate math per unit is common/Rnn.h's (shared with the CUDA library).
#include "kernels/common/Rnn.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

using rnn::Optional;
using rnn::present;
using rnn::Rows;

// Runs row(b) for every batch row on the pool, a few hundred units per task.
template <class F>
void for_rows(int threads, int64_t batch, int64_t hidden, F&& row) {
  const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(hidden, 1));
  parallel_for(batch, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) row(b);
  });
}

template <class T>
void lstm_forward(int threads, const refkTensor& hy_t, const refkTensor& cy_t, const refkTensor& ws_t,
                  const refkTensor& ig_t, const refkTensor& hg_t, const refkTensor& cx_t, const refkTensor* b1_t,
                  const refkTensor* b2_t) {
  const int64_t batch = cx_t.sizes[0], h = cx_t.sizes[1];
  const Rows<T> hy(hy_t), cy(cy_t), ws(ws_t), ig(ig_t), hg(hg_t), cx(cx_t);
  const Optional<T> b1(b1_t), b2(b2_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) rnn::lstm_unit(hy, cy, ws, ig, hg, cx, b1, b2, b, j, h);
  });
}

template <class T>
void lstm_backward(int threads, const refkTensor& gg_t, const refkTensor& gcx_t, const refkTensor* ghy_t,
                   const refkTensor* gcy_t, const refkTensor& cx_t, const refkTensor& cy_t, const refkTensor& ws_t) {
  const int64_t batch = cx_t.sizes[0], h = cx_t.sizes[1];
  const Rows<T> gg(gg_t), gcx(gcx_t), cx(cx_t), cy(cy_t), ws(ws_t);
  const Optional<T> ghy(ghy_t), gcy(gcy_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) rnn::lstm_backward_unit(gg, gcx, ghy, gcy, cx, cy, ws, b, j, h);
  });
}

template <class T>
void gru_forward(int threads, const refkTensor& hy_t, const refkTensor& ws_t, const refkTensor& ig_t,
                 const refkTensor& hg_t, const refkTensor& hx_t, const refkTensor* b1_t, const refkTensor* b2_t) {
  const int64_t batch = hx_t.sizes[0], h = hx_t.sizes[1];
  const Rows<T> hy(hy_t), ws(ws_t), ig(ig_t), hg(hg_t), hx(hx_t);
  const Optional<T> b1(b1_t), b2(b2_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) rnn::gru_unit(hy, ws, ig, hg, hx, b1, b2, b, j, h);
  });
}

template <class T>
void gru_backward(int threads, const refkTensor& gi_t, const refkTensor& gh_t, const refkTensor& ghx_t,
                  const refkTensor& ghy_t, const refkTensor& ws_t) {
  const int64_t batch = ghy_t.sizes[0], h = ghy_t.sizes[1];
  const Rows<T> gi(gi_t), gh(gh_t), ghx(ghx_t), ghy(ghy_t), ws(ws_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) rnn::gru_backward_unit(gi, gh, ghx, ghy, ws, b, j, h);
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkLstmCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* cy,
                                   const refkTensor* workspace, const refkTensor* input_gates,
                                   const refkTensor* hidden_gates, const refkTensor* cx, const refkTensor* input_bias,
                                   const refkTensor* hidden_bias) {
  return guarded("lstm_cell", [&] {
    if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell: cx must be 2-d");
    const int64_t batch = cx->sizes[0], h = cx->sizes[1];
    if (present(input_bias) != present(hidden_bias)) {
      return fail(refkErrorInvalidValue, "lstm_cell: both biases or neither");
    }
    if (auto s = checked(rnn::check_cell("lstm_cell", cx->dtype, batch, h, 4,
                                         {{hy, 1}, {cy, 1}, {workspace, 4}, {input_gates, 4}, {hidden_gates, 4},
                                          {input_bias, 0}, {hidden_bias, 0}}))) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({hy, cy, workspace, input_gates, hidden_gates, cx, input_bias, hidden_bias});
    return dispatch_floating("lstm_cell", cx->dtype, [&](auto tag) {
      lstm_forward<typename decltype(tag)::type>(ctx->num_threads, *hy, *cy, *workspace, *input_gates, *hidden_gates,
                                                 *cx, input_bias, hidden_bias);
    });
  });
}

extern "C" refkStatus refkLstmCellBackward(const refkContext* ctx, const refkTensor* grad_gates,
                                           const refkTensor* grad_cx, const refkTensor* grad_hy,
                                           const refkTensor* grad_cy, const refkTensor* cx, const refkTensor* cy,
                                           const refkTensor* workspace) {
  return guarded("lstm_cell_backward", [&] {
    if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell_backward: cx must be 2-d");
    const int64_t batch = cx->sizes[0], h = cx->sizes[1];
    if (auto s = checked(rnn::check_cell("lstm_cell_backward", cx->dtype, batch, h, 4,
                                         {{grad_gates, 4}, {grad_cx, 1}, {grad_hy, 1}, {grad_cy, 1}, {cy, 1},
                                          {workspace, 4}}))) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({grad_gates, grad_cx, grad_hy, grad_cy, cx, cy, workspace});
    return dispatch_floating("lstm_cell_backward", cx->dtype, [&](auto tag) {
      lstm_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_gates, *grad_cx, grad_hy, grad_cy, *cx, *cy,
                                                  *workspace);
    });
  });
}

extern "C" refkStatus refkGruCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* workspace,
                                  const refkTensor* input_gates, const refkTensor* hidden_gates, const refkTensor* hx,
                                  const refkTensor* input_bias, const refkTensor* hidden_bias) {
  return guarded("gru_cell", [&] {
    if (hx->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell: hx must be 2-d");
    const int64_t batch = hx->sizes[0], h = hx->sizes[1];
    if (present(input_bias) != present(hidden_bias)) {
      return fail(refkErrorInvalidValue, "gru_cell: both biases or neither");
    }
    if (auto s = checked(rnn::check_cell("gru_cell", hx->dtype, batch, h, 3,
                                         {{hy, 1}, {workspace, 5}, {input_gates, 3}, {hidden_gates, 3},
                                          {input_bias, 0}, {hidden_bias, 0}}))) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({hy, workspace, input_gates, hidden_gates, hx, input_bias, hidden_bias});
    return dispatch_floating("gru_cell", hx->dtype, [&](auto tag) {
      gru_forward<typename decltype(tag)::type>(ctx->num_threads, *hy, *workspace, *input_gates, *hidden_gates, *hx,
                                                input_bias, hidden_bias);
    });
  });
}

extern "C" refkStatus refkGruCellBackward(const refkContext* ctx, const refkTensor* grad_input_gates,
                                          const refkTensor* grad_hidden_gates, const refkTensor* grad_hx,
                                          const refkTensor* grad_hy, const refkTensor* workspace) {
  return guarded("gru_cell_backward", [&] {
    if (grad_hy->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell_backward: grad_hy must be 2-d");
    const int64_t batch = grad_hy->sizes[0], h = grad_hy->sizes[1];
    if (auto s = checked(rnn::check_cell("gru_cell_backward", grad_hy->dtype, batch, h, 3,
                                         {{grad_input_gates, 3}, {grad_hidden_gates, 3}, {grad_hx, 1},
                                          {workspace, 5}}))) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({grad_input_gates, grad_hidden_gates, grad_hx, grad_hy, workspace});
    return dispatch_floating("gru_cell_backward", grad_hy->dtype, [&](auto tag) {
      gru_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_input_gates, *grad_hidden_gates, *grad_hx,
                                                 *grad_hy, *workspace);
    });
  });
}
