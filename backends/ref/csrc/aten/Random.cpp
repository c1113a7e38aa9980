// Random numbers: the fills normal_ and uniform_, the factories rand, randn
// and randperm, and native_dropout. The generator reserves a counter range
// (Note [Philox offsets]); the library computes the numbers on the device,
// so torch.manual_seed makes every op here reproducible, and a GPU library
// given the same (seed, offset) computes the same tensors.
#include "aten/Glue.h"
#include "runtime/Generator.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <mutex>

namespace opgen_ref {
namespace {

// Note [Philox offsets]: the seed and first counter of `words` fresh numbers.
std::pair<uint64_t, uint64_t> reserve(const std::optional<at::Generator>& gen, c10::Device device, uint64_t words) {
  auto* g = runtime::generator_for(gen, device.index());
  std::lock_guard<std::mutex> lock(g->mutex_);
  return g->reserve(words);
}

at::TensorOptions factory_options(std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                                  std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory);
}

at::Tensor& fill_random(at::Tensor& self, refkDistribution dist, double a, double b,
                        const std::optional<at::Generator>& gen, uint64_t words_per_element, const char* name) {
  const c10::DeviceGuard guard(self.device());
  runtime::generator_for(gen, self.device().index());  // checks the generator's device
  if (self.numel() == 0) return self;
  const auto seed_offset = reserve(gen, self.device(), static_cast<uint64_t>(self.numel()) * words_per_element);
  // The library writes any strides; a non-dense self is filled in place too.
  const refkTensor d = describe(self, name);
  const refkContext ctx = context();
  check(refkRandom(&ctx, dist, &d, seed_offset.first, seed_offset.second, a, b), name);
  return self;
}

}  // namespace

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return self;  // as ATen: before the dtype check
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"normal_kernel_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  return fill_random(self, refkNormal, mean, std, generator, 2, "normal_");
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"check_uniform_bounds",
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return fill_random(self, refkUniform, from, to, generator, 1, "uniform_");
}

// rand and randn: eager's empty(...).uniform_(0, 1) and .normal_(0, 1), with
// their dtype errors ("check_uniform_bounds" / "normal_kernel_cpu").
at::Tensor rand(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                std::optional<at::Device> device, std::optional<bool> pin_memory) {
  at::Tensor out = at::empty(size, factory_options(dtype, layout, device, pin_memory));
  return uniform_(out, 0.0, 1.0, std::nullopt);
}

at::Tensor randn(at::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                 std::optional<at::Device> device, std::optional<bool> pin_memory) {
  at::Tensor out = at::empty(size, factory_options(dtype, layout, device, pin_memory));
  return normal_(out, 0.0, 1.0, std::nullopt);
}

// randperm: Note [Random permutations by sorting keys] (kernels/cpu/Random.cpp).
at::Tensor randperm(int64_t n, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                    std::optional<at::Device> device, std::optional<bool> pin_memory) {
  const auto t = dtype.value_or(at::kLong);
  at::Tensor out = at::empty({n}, factory_options(t, layout, device, pin_memory));
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  // check_supported_max_int_with_precision: n - 1 must fit the dtype, and
  // every index be exact in a floating one.
  fill_value(n > 0 ? n - 1 : n, t, "randperm");
  switch (t) {
    case at::kHalf:
      TORCH_CHECK(n <= (int64_t(1) << 11) + 1, "n cannot be greater than 2049 for Half type.");
      break;
    case at::kFloat:
      TORCH_CHECK(n <= (int64_t(1) << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
      break;
    case at::kDouble:
      TORCH_CHECK(n <= (int64_t(1) << 53) + 1, "n cannot be greater than 2^53+1 for Double type.");
      break;
    case at::kBool:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "\"randperm\" not implemented for 'Bool'");
      break;
    default: break;
  }
  kernel_dtype(t, "randperm");
  if (n == 0) return out;
  const c10::DeviceGuard guard(out.device());
  const auto [seed, offset] = reserve(std::nullopt, out.device(), 2 * static_cast<uint64_t>(n));
  const refkTensor d = describe(out, "randperm");
  const refkContext ctx = context();
  check(refkRandperm(&ctx, &d, seed, offset), "randperm");
  return out;
}

// native_dropout as eager's native_dropout_cpu: in training, mask ~
// Bernoulli(1 - p) and output = input * mask / (1 - p) (0 when p == 1), fused
// in one library call; otherwise an all-true mask and a copy.
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  const c10::Device device = common_device({&input}, "native_dropout");
  const c10::DeviceGuard guard(device);
  kernel_dtype(input.scalar_type(), "native_dropout");
  if (input.numel() == 0) {
    // eager returns the input itself and a mask of the input's dtype
    return {at::empty_like(input), at::empty_like(input)};
  }
  const refkContext ctx = context();
  if (!train.has_value() || *train) {
    const double p1m = 1.0 - p;
    const double scale = p1m == 0 ? 0.0 : 1.0 / p1m;
    TORCH_CHECK(0 <= p1m && p1m <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p1m);
    // eager multiplies by the mask, then scales in place: a floating scale
    // cannot be written back into an integral or bool result.
    TORCH_CHECK(c10::isFloatingType(input.scalar_type()), "result type ",
                c10::get_default_dtype_as_scalartype(), " can't be cast to the desired output type ",
                input.scalar_type());
    at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
    at::Tensor output = at::empty_like(input);
    const auto [seed, offset] = reserve(std::nullopt, device, static_cast<uint64_t>(input.numel()));
    const refkTensor o = describe(output, "native_dropout"), m = describe(mask, "native_dropout"),
                     i = describe(input, "native_dropout");
    check(refkDropout(&ctx, &o, &m, &i, p1m, scale, seed, offset), "native_dropout");
    return {output, mask};
  }
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  const refkTensor m = describe(mask, "native_dropout");
  check(refkFill(&ctx, &m, refkScalar{1.0, 1}), "native_dropout");
  at::Tensor output = at::empty_like(input);
  copy_into(output, input, "native_dropout");
  return {output, mask};
}

}  // namespace opgen_ref
