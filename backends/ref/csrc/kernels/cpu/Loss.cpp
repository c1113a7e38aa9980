// Loss kernels of the CPU reference library: nll_loss's forward and
// backward, each element's arithmetic common/Loss.h's (shared with the CUDA
// library), and log_sigmoid's (binary_cross_entropy_with_logits' terms,
// common/Pointwise.h's), elementwise over the loop planner's rows. The per-element forms thread over the batch; the reduced
// forward runs one ordered pass in double (a class row is read once per
// sample, so the batch is the whole work), which is at least as accurate as
// ATen's cascade sum in the dtype.
#include "kernels/common/Loss.h"
#include "kernels/common/Pointwise.h"
#include "kernels/cpu/Common.h"

#include <vector>

namespace refk {
namespace {

int64_t target_at(const refkTensor& target, int64_t i) {
  const char* p = static_cast<const char*>(target.data) + i * target.strides[0] * itemsize(target.dtype);
  if (target.dtype == refkUInt8) return *reinterpret_cast<const uint8_t*>(p);
  return *reinterpret_cast<const int64_t*>(p);
}

// The first out-of-range target in batch order, or -1.
int64_t bad_target(const refkTensor& target, int64_t batch, int64_t classes, int64_t ignore_index) {
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t t = target_at(target, i);
    if (t != ignore_index && (t < 0 || t >= classes)) return i;
  }
  return -1;
}

refkStatus out_of_bounds(const refkTensor& target, int64_t i) {
  return fail(refkErrorIndexOutOfBounds, "Target " + std::to_string(target_at(target, i)) + " is out of bounds.");
}

template <class T>
T& at(const refkTensor& t, int64_t i, int64_t j = 0) {
  return *(static_cast<T*>(t.data) + i * t.strides[0] + (t.ndim > 1 ? j * t.strides[1] : 0));
}

template <class T>
refkStatus nll_forward(int threads, const refkTensor& out, const refkTensor& total_weight, const refkTensor& self,
                       const refkTensor& target, const refkTensor* weight, int32_t reduction, int64_t ignore_index) {
  using V = opmath_t<T>;
  const int64_t batch = self.sizes[0], classes = self.sizes[1];
  if (const int64_t i = bad_target(target, batch, classes, ignore_index); i >= 0) return out_of_bounds(target, i);
  auto w = [&](int64_t t) { return weight ? load(at<T>(*weight, t)) : V(1); };
  if (reduction == refkReductionNone && out.ndim == 1) {
    parallel_for(batch, 1024, threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t t = target_at(target, i);
        at<T>(out, i) = t == ignore_index ? store<T>(V(0)) : loss::nll_element<T>(load(at<T>(self, i, t)), w(t));
      }
    });
    at<T>(total_weight, 0) = store<T>(V(0));
    return refkSuccess;
  }
  double loss = 0, weights = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t t = target_at(target, i);
    if (t == ignore_index) continue;
    loss -= static_cast<double>(load(at<T>(self, i, t))) * static_cast<double>(w(t));
    weights += static_cast<double>(w(t));
  }
  loss::nll_reduced<T>(loss, weights, reduction == refkReductionMean, at<T>(out, 0), at<T>(total_weight, 0));
  return refkSuccess;
}

template <class T>
refkStatus nll_backward(int threads, const refkTensor& grad_input, const refkTensor& grad_output,
                        const refkTensor& target, const refkTensor* weight, const refkTensor& total_weight,
                        int32_t reduction, int64_t ignore_index) {
  using V = opmath_t<T>;
  const int64_t batch = grad_input.sizes[0], classes = grad_input.sizes[1];
  if (const int64_t i = bad_target(target, batch, classes, ignore_index); i >= 0) return out_of_bounds(target, i);
  // With one sample both forms compute -w * g with one rounding.
  const bool per_element = reduction == refkReductionNone && numel(grad_output) == batch;
  const V shared = loss::nll_grad_shared<T>(load(at<T>(grad_output, 0)), load(at<T>(total_weight, 0)),
                                             reduction == refkReductionMean);
  parallel_for(batch, 256, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < classes; ++c) at<T>(grad_input, i, c) = store<T>(V(0));
      const int64_t t = target_at(target, i);
      if (t == ignore_index) continue;
      const V w = weight ? load(at<T>(*weight, t)) : V(1);
      at<T>(grad_input, i, t) =
          loss::nll_grad_element<T>(w, per_element ? load(at<T>(grad_output, i)) : V(0), shared, per_element);
    }
  });
  return refkSuccess;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkNllLoss(const refkContext* ctx, const refkTensor* out, const refkTensor* total_weight,
                                  const refkTensor* self, const refkTensor* target, const refkTensor* weight,
                                  int32_t reduction, int64_t ignore_index) {
  return guarded("nll_loss", [&] {
    if (auto s = checked(check::nll_loss(*self, *target, weight))) return s;
    const Access access({out, total_weight, self, target, weight});
    return dispatch(self->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        return nll_forward<T>(ctx->num_threads, *out, *total_weight, *self, *target, weight, reduction, ignore_index);
      } else {
        return unsupported("nll_loss", self->dtype);
      }
    });
  });
}

extern "C" refkStatus refkNllLossBackward(const refkContext* ctx, const refkTensor* grad_input,
                                          const refkTensor* grad_output, const refkTensor* target,
                                          const refkTensor* weight, const refkTensor* total_weight, int32_t reduction,
                                          int64_t ignore_index) {
  return guarded("nll_loss_backward", [&] {
    if (auto s = checked(check::nll_loss(*grad_input, *target, weight))) return s;
    const Access access({grad_input, grad_output, target, weight, total_weight});
    return dispatch(grad_input->dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        return nll_backward<T>(ctx->num_threads, *grad_input, *grad_output, *target, weight, *total_weight,
                               reduction, ignore_index);
      } else {
        return unsupported("nll_loss_backward", grad_input->dtype);
      }
    });
  });
}

extern "C" refkStatus refkLogSigmoid(const refkContext* ctx, const refkTensor* out, const refkTensor* buffer,
                                     const refkTensor* in) {
  return guarded("log_sigmoid", [&] {
    if (auto s = checked(check::log_sigmoid("log_sigmoid", {out, in}, *buffer))) return s;
    const Access access({out, buffer, in});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        using V = opmath_t<T>;
        if (buffer->data == nullptr) {
          const refkTensor* ops[2] = {out, in};
          typed_rows<T, T, 1>(Loop<2>(ops), ctx->num_threads,
                              [](V x) { return scalar::log_sigmoid(x, scalar::log_sigmoid_buffer(x)); });
          return refkSuccess;
        }
        const refkTensor* ops[3] = {out, buffer, in};
        Loop<3>(ops).run(ctx->num_threads, [](char* const* p, const int64_t* s, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const V x = load(*reinterpret_cast<const T*>(p[2] + i * s[2]));
            const V z = scalar::log_sigmoid_buffer(x);
            *reinterpret_cast<T*>(p[0] + i * s[0]) = store<T>(scalar::log_sigmoid(x, z));
            *reinterpret_cast<T*>(p[1] + i * s[1]) = store<T>(z);
          }
        });
        return refkSuccess;
      } else {
        return unsupported("log_sigmoid", in->dtype);
      }
    });
  });
}

extern "C" refkStatus refkLogSigmoidBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                             const refkTensor* in, const refkTensor* buffer) {
  return guarded("log_sigmoid_backward", [&] {
    if (auto s = checked(check::log_sigmoid("log_sigmoid_backward", {grad_in, grad, in}, *buffer))) return s;
    const Access access({grad_in, grad, in, buffer});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (is_floating_v<T>) {
        using V = opmath_t<T>;
        if (buffer->data == nullptr) {
          const refkTensor* ops[3] = {grad_in, grad, in};
          typed_rows<T, T, 2>(Loop<3>(ops), ctx->num_threads, [](V g, V x) {
            return scalar::log_sigmoid_backward(g, x, scalar::log_sigmoid_buffer(x));
          });
          return refkSuccess;
        }
        const refkTensor* ops[4] = {grad_in, grad, in, buffer};
        typed_rows<T, T, 3>(Loop<4>(ops), ctx->num_threads,
                            [](V g, V x, V z) { return scalar::log_sigmoid_backward(g, x, z); });
        return refkSuccess;
      } else {
        return unsupported("log_sigmoid_backward", in->dtype);
      }
    });
  });
}
