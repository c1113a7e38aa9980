// nll_loss of the CUDA reference library: per-element losses and the
// gradient a thread per element, the reduced loss one block summing in
// double; every element's arithmetic is common/Loss.h's, shared with the CPU
// library. A target out of range raises the device flag of Note [Index
// errors on the device] and is skipped; the host then names the first one
// in batch order, as the CPU library does.
#include "kernels/common/Loss.h"
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace loss = refk::loss;

struct Target {
  const char* data;
  int64_t stride;  // bytes
  bool u8;
  __device__ int64_t at(int64_t i) const {
    const char* p = data + i * stride;
    return u8 ? static_cast<int64_t>(*reinterpret_cast<const uint8_t*>(p)) : *reinterpret_cast<const int64_t*>(p);
  }
};
Target target_of(const refkTensor& t) {
  return Target{static_cast<const char*>(t.data), t.strides[0] * itemsize(t.dtype), t.dtype == refkUInt8};
}

// Element (i, j) of a 1-d or 2-d operand (element strides).
struct At2 {
  int64_t s0, s1;
};
At2 at2_of(const refkTensor& t) { return At2{t.ndim > 0 ? t.strides[0] : 0, t.ndim > 1 ? t.strides[1] : 0}; }

template <class T>
__device__ opmath_t<T> weight_at(const T* w, int64_t ws, int64_t t) {
  return w == nullptr ? opmath_t<T>(1) : load(w[t * ws]);
}

template <class T>
__global__ void nll_none_kernel(int64_t batch, int64_t classes, T* out, int64_t os, T* total_weight, const T* self,
                                At2 ss, Target target, const T* w, int64_t ws, int64_t ignore_index, int* bad) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first == 0) *total_weight = store<T>(opmath_t<T>(0));
  for (int64_t i = first; i < batch; i += stride) {
    const int64_t t = target.at(i);
    if (t == ignore_index) {
      out[i * os] = store<T>(opmath_t<T>(0));
    } else if (t < 0 || t >= classes) {
      *bad = 1;
    } else {
      out[i * os] = loss::nll_element<T>(load(self[i * ss.s0 + t * ss.s1]), weight_at(w, ws, t));
    }
  }
}

// One block: the double sums over the batch, then one thread finishes.
template <class T>
__global__ void nll_reduced_kernel(int64_t batch, int64_t classes, T* out, T* total_weight, const T* self, At2 ss,
                                   Target target, const T* w, int64_t ws, bool mean, int64_t ignore_index, int* bad) {
  double sum = 0, weights = 0;
  for (int64_t i = threadIdx.x; i < batch; i += blockDim.x) {
    const int64_t t = target.at(i);
    if (t == ignore_index) continue;
    if (t < 0 || t >= classes) {
      *bad = 1;
      continue;
    }
    const double wt = static_cast<double>(weight_at(w, ws, t));
    sum -= static_cast<double>(load(self[i * ss.s0 + t * ss.s1])) * wt;
    weights += wt;
  }
  sum = block_combine(sum, Sum{});
  weights = block_combine(weights, Sum{});
  if (threadIdx.x == 0) loss::nll_reduced<T>(sum, weights, mean, *out, *total_weight);
}

template <class T>
__global__ void nll_backward_kernel(int64_t batch, int64_t classes, T* grad_input, At2 gis, const T* grad_output,
                                    int64_t gos, const T* total_weight, Target target, const T* w, int64_t ws,
                                    bool mean, bool per_element, int64_t ignore_index, int* bad) {
  using V = opmath_t<T>;
  const V shared = loss::nll_grad_shared<T>(load(grad_output[0]), load(*total_weight), mean);
  const int64_t n = batch * classes;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const int64_t i = e / classes, c = e % classes;
    const int64_t t = target.at(i);
    T v = store<T>(V(0));
    if (c == 0 && t != ignore_index && (t < 0 || t >= classes)) *bad = 1;
    if (c == t && t != ignore_index) {
      v = loss::nll_grad_element<T>(weight_at(w, ws, t), per_element ? load(grad_output[i * gos]) : V(0), shared,
                                    per_element);
    }
    grad_input[i * gis.s0 + c * gis.s1] = v;
  }
}

// The first target out of range in batch order (the error path), or success.
refkStatus target_error(const char* op, const refkTensor& target, int64_t classes, int64_t ignore_index) {
  std::vector<int64_t> v;
  if (auto s = index_values(op, target, v)) return s;
  for (const int64_t t : v) {
    if (t != ignore_index && (t < 0 || t >= classes)) {
      return fail(refkErrorIndexOutOfBounds, "Target " + std::to_string(t) + " is out of bounds.");
    }
  }
  return refkSuccess;
}

// log_sigmoid's forward writes two outputs (common/Pointwise.h's formulas).
template <class T>
struct LogSigmoidBoth {
  __device__ void operator()(char* const (&p)[3]) const {
    const opmath_t<T> x = load(*reinterpret_cast<const T*>(p[2]));
    const opmath_t<T> z = refk::scalar::log_sigmoid_buffer(x);
    *reinterpret_cast<T*>(p[0]) = store<T>(refk::scalar::log_sigmoid(x, z));
    *reinterpret_cast<T*>(p[1]) = store<T>(z);
  }
};
struct LogSigmoidOut {
  template <class V>
  __device__ V operator()(V x) const {
    return refk::scalar::log_sigmoid(x, refk::scalar::log_sigmoid_buffer(x));
  }
};
struct LogSigmoidGrad {
  template <class V>
  __device__ V operator()(V g, V x, V z) const {
    return refk::scalar::log_sigmoid_backward(g, x, z);
  }
};
struct LogSigmoidGradRecomputed {
  template <class V>
  __device__ V operator()(V g, V x) const {
    return refk::scalar::log_sigmoid_backward(g, x, refk::scalar::log_sigmoid_buffer(x));
  }
};

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkNllLoss(const refkContext* ctx, const refkTensor* out, const refkTensor* total_weight,
                                  const refkTensor* self, const refkTensor* target, const refkTensor* weight,
                                  int32_t reduction, int64_t ignore_index) {
  if (auto s = checked(refk::check::nll_loss(*self, *target, weight))) return s;
  const int64_t batch = self->sizes[0], classes = self->sizes[1];
  const cudaStream_t stream = stream_of(ctx);
  ErrorFlag bad(stream);
  if (auto s = bad.init("nll_loss")) return s;
  const refkStatus launch = dispatch_floating("nll_loss", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = weight != nullptr ? static_cast<const T*>(weight->data) : nullptr;
    const int64_t ws = weight != nullptr ? weight->strides[0] : 0;
    if (reduction == refkReductionNone && out->ndim == 1) {
      nll_none_kernel<T><<<blocks_for(batch), kBlockThreads, 0, stream>>>(
          batch, classes, static_cast<T*>(out->data), out->strides[0], static_cast<T*>(total_weight->data),
          static_cast<const T*>(self->data), at2_of(*self), target_of(*target), w, ws, ignore_index, bad.get());
    } else {
      nll_reduced_kernel<T><<<1, kBlockThreads, 0, stream>>>(
          batch, classes, static_cast<T*>(out->data), static_cast<T*>(total_weight->data),
          static_cast<const T*>(self->data), at2_of(*self), target_of(*target), w, ws,
          reduction == refkReductionMean, ignore_index, bad.get());
    }
    return launched("nll_loss");
  });
  return bad.finish("nll_loss", launch, "a target",
                    [&] { return target_error("nll_loss", *target, classes, ignore_index); });
}

extern "C" refkStatus refkNllLossBackward(const refkContext* ctx, const refkTensor* grad_input,
                                          const refkTensor* grad_output, const refkTensor* target,
                                          const refkTensor* weight, const refkTensor* total_weight, int32_t reduction,
                                          int64_t ignore_index) {
  if (auto s = checked(refk::check::nll_loss(*grad_input, *target, weight))) return s;
  const int64_t batch = grad_input->sizes[0], classes = grad_input->sizes[1];
  if (batch * classes == 0) return target_error("nll_loss_backward", *target, classes, ignore_index);
  // With one sample both forms compute -w * g with one rounding.
  const bool per_element = reduction == refkReductionNone && numel(*grad_output) == batch;
  const cudaStream_t stream = stream_of(ctx);
  ErrorFlag bad(stream);
  if (auto s = bad.init("nll_loss_backward")) return s;
  const refkStatus launch = dispatch_floating("nll_loss_backward", grad_input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = weight != nullptr ? static_cast<const T*>(weight->data) : nullptr;
    const int64_t ws = weight != nullptr ? weight->strides[0] : 0;
    nll_backward_kernel<T><<<blocks_for(batch * classes), kBlockThreads, 0, stream>>>(
        batch, classes, static_cast<T*>(grad_input->data), at2_of(*grad_input),
        static_cast<const T*>(grad_output->data), grad_output->ndim > 0 ? grad_output->strides[0] : 0,
        static_cast<const T*>(total_weight->data), target_of(*target), w, ws, reduction == refkReductionMean,
        per_element, ignore_index, bad.get());
    return launched("nll_loss_backward");
  });
  return bad.finish("nll_loss_backward", launch, "a target",
                    [&] { return target_error("nll_loss_backward", *target, classes, ignore_index); });
}

extern "C" refkStatus refkLogSigmoid(const refkContext* ctx, const refkTensor* out, const refkTensor* buffer,
                                     const refkTensor* in) {
  if (auto s = checked(refk::check::log_sigmoid("log_sigmoid", {out, in}, *buffer))) return s;
  return dispatch_floating("log_sigmoid", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (buffer->data == nullptr) {
      const refkTensor* ops[2] = {out, in};
      return typed<T, T, 1>("log_sigmoid", ctx, ops, LogSigmoidOut{});
    }
    const refkTensor* ops[3] = {out, buffer, in};
    return for_each<3>("log_sigmoid", ctx, ops, LogSigmoidBoth<T>{});
  });
}

extern "C" refkStatus refkLogSigmoidBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                             const refkTensor* in, const refkTensor* buffer) {
  if (auto s = checked(refk::check::log_sigmoid("log_sigmoid_backward", {grad_in, grad, in}, *buffer))) return s;
  return dispatch_floating("log_sigmoid_backward", in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (buffer->data == nullptr) {
      const refkTensor* ops[3] = {grad_in, grad, in};
      return typed<T, T, 2>("log_sigmoid_backward", ctx, ops, LogSigmoidGradRecomputed{});
    }
    const refkTensor* ops[4] = {grad_in, grad, in, buffer};
    return typed<T, T, 3>("log_sigmoid_backward", ctx, ops, LogSigmoidGrad{});
  });
}
