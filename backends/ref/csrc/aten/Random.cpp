// Random fills: normal_ and uniform_. The generator reserves a counter range
// (Note [Philox offsets]); the library computes the numbers on the device.
#include "aten/Glue.h"
#include "runtime/Generator.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <mutex>

namespace opgen_ref {
namespace {

at::Tensor& fill_random(at::Tensor& self, refkDistribution dist, double a, double b,
                        const std::optional<at::Generator>& gen, uint64_t words_per_element, const char* name) {
  const c10::DeviceGuard guard(self.device());
  auto* g = runtime::generator_for(gen, self.device().index());
  if (self.numel() == 0) return self;
  std::pair<uint64_t, uint64_t> seed_offset;
  {
    std::lock_guard<std::mutex> lock(g->mutex_);
    seed_offset = g->reserve(static_cast<uint64_t>(self.numel()) * words_per_element);
  }
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
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "check_uniform_bounds",
                              "\" not implemented for '", c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return fill_random(self, refkUniform, from, to, generator, 1, "uniform_");
}

}  // namespace opgen_ref
