// The fused recurrent cells of the CUDA reference library: a thread per
// (batch row, hidden unit), each running common/Rnn.h's gate math, the CPU
// library's, in opmath with each result rounded once.
#include "kernels/common/Rnn.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

using refk::rnn::check_cell;
using refk::rnn::Optional;
using refk::rnn::present;
using refk::rnn::Rows;

template <class T>
__global__ void lstm_kernel(int64_t batch, int64_t h, Rows<T> hy, Rows<T> cy, Rows<T> ws, Rows<T> ig, Rows<T> hg,
                            Rows<T> cx, Optional<T> b1, Optional<T> b2) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * h; e += stride) {
    refk::rnn::lstm_unit(hy, cy, ws, ig, hg, cx, b1, b2, e / h, e % h, h);
  }
}

template <class T>
__global__ void lstm_backward_kernel(int64_t batch, int64_t h, Rows<T> gg, Rows<T> gcx, Optional<T> ghy,
                                     Optional<T> gcy, Rows<T> cx, Rows<T> cy, Rows<T> ws) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * h; e += stride) {
    refk::rnn::lstm_backward_unit(gg, gcx, ghy, gcy, cx, cy, ws, e / h, e % h, h);
  }
}

template <class T>
__global__ void gru_kernel(int64_t batch, int64_t h, Rows<T> hy, Rows<T> ws, Rows<T> ig, Rows<T> hg, Rows<T> hx,
                           Optional<T> b1, Optional<T> b2) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * h; e += stride) {
    refk::rnn::gru_unit(hy, ws, ig, hg, hx, b1, b2, e / h, e % h, h);
  }
}

template <class T>
__global__ void gru_backward_kernel(int64_t batch, int64_t h, Rows<T> gi, Rows<T> gh, Rows<T> ghx, Rows<T> ghy,
                                    Rows<T> ws) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < batch * h; e += stride) {
    refk::rnn::gru_backward_unit(gi, gh, ghx, ghy, ws, e / h, e % h, h);
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" {

refkStatus refkLstmCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* cy,
                        const refkTensor* workspace, const refkTensor* input_gates, const refkTensor* hidden_gates,
                        const refkTensor* cx, const refkTensor* input_bias, const refkTensor* hidden_bias) {
  if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell: cx must be 2-d");
  const int64_t batch = cx->sizes[0], h = cx->sizes[1];
  if (present(input_bias) != present(hidden_bias)) return fail(refkErrorInvalidValue, "lstm_cell: both biases or neither");
  if (auto s = checked(check_cell("lstm_cell", cx->dtype, batch, h, 4,
                                  {{hy, 1}, {cy, 1}, {workspace, 4}, {input_gates, 4}, {hidden_gates, 4},
                                   {input_bias, 0}, {hidden_bias, 0}}))) {
    return s;
  }
  if (batch == 0 || h == 0) return refkSuccess;
  return dispatch_floating("lstm_cell", cx->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    lstm_kernel<T><<<blocks_for(batch * h), kBlockThreads, 0, stream_of(ctx)>>>(
        batch, h, Rows<T>(*hy), Rows<T>(*cy), Rows<T>(*workspace), Rows<T>(*input_gates), Rows<T>(*hidden_gates),
        Rows<T>(*cx), Optional<T>(input_bias), Optional<T>(hidden_bias));
    return launched("lstm_cell");
  });
}

refkStatus refkLstmCellBackward(const refkContext* ctx, const refkTensor* grad_gates, const refkTensor* grad_cx,
                                const refkTensor* grad_hy, const refkTensor* grad_cy, const refkTensor* cx,
                                const refkTensor* cy, const refkTensor* workspace) {
  if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell_backward: cx must be 2-d");
  const int64_t batch = cx->sizes[0], h = cx->sizes[1];
  if (auto s = checked(check_cell("lstm_cell_backward", cx->dtype, batch, h, 4,
                                  {{grad_gates, 4}, {grad_cx, 1}, {grad_hy, 1}, {grad_cy, 1}, {cy, 1},
                                   {workspace, 4}}))) {
    return s;
  }
  if (batch == 0 || h == 0) return refkSuccess;
  return dispatch_floating("lstm_cell_backward", cx->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    lstm_backward_kernel<T><<<blocks_for(batch * h), kBlockThreads, 0, stream_of(ctx)>>>(
        batch, h, Rows<T>(*grad_gates), Rows<T>(*grad_cx), Optional<T>(grad_hy), Optional<T>(grad_cy), Rows<T>(*cx),
        Rows<T>(*cy), Rows<T>(*workspace));
    return launched("lstm_cell_backward");
  });
}

refkStatus refkGruCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* workspace,
                       const refkTensor* input_gates, const refkTensor* hidden_gates, const refkTensor* hx,
                       const refkTensor* input_bias, const refkTensor* hidden_bias) {
  if (hx->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell: hx must be 2-d");
  const int64_t batch = hx->sizes[0], h = hx->sizes[1];
  if (present(input_bias) != present(hidden_bias)) return fail(refkErrorInvalidValue, "gru_cell: both biases or neither");
  if (auto s = checked(check_cell("gru_cell", hx->dtype, batch, h, 3,
                                  {{hy, 1}, {workspace, 5}, {input_gates, 3}, {hidden_gates, 3}, {input_bias, 0},
                                   {hidden_bias, 0}}))) {
    return s;
  }
  if (batch == 0 || h == 0) return refkSuccess;
  return dispatch_floating("gru_cell", hx->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gru_kernel<T><<<blocks_for(batch * h), kBlockThreads, 0, stream_of(ctx)>>>(
        batch, h, Rows<T>(*hy), Rows<T>(*workspace), Rows<T>(*input_gates), Rows<T>(*hidden_gates), Rows<T>(*hx),
        Optional<T>(input_bias), Optional<T>(hidden_bias));
    return launched("gru_cell");
  });
}

refkStatus refkGruCellBackward(const refkContext* ctx, const refkTensor* grad_input_gates,
                               const refkTensor* grad_hidden_gates, const refkTensor* grad_hx,
                               const refkTensor* grad_hy, const refkTensor* workspace) {
  if (grad_hy->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell_backward: grad_hy must be 2-d");
  const int64_t batch = grad_hy->sizes[0], h = grad_hy->sizes[1];
  if (auto s = checked(check_cell("gru_cell_backward", grad_hy->dtype, batch, h, 3,
                                  {{grad_input_gates, 3}, {grad_hidden_gates, 3}, {grad_hx, 1}, {workspace, 5}}))) {
    return s;
  }
  if (batch == 0 || h == 0) return refkSuccess;
  return dispatch_floating("gru_cell_backward", grad_hy->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gru_backward_kernel<T><<<blocks_for(batch * h), kBlockThreads, 0, stream_of(ctx)>>>(
        batch, h, Rows<T>(*grad_input_gates), Rows<T>(*grad_hidden_gates), Rows<T>(*grad_hx), Rows<T>(*grad_hy),
        Rows<T>(*workspace));
    return launched("gru_cell_backward");
  });
}

}  // extern "C"
