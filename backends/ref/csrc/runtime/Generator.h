// The device's random number generator: one default generator per device,
// seeded by torch.manual_seed, whose state round-trips through
// torch.<device>.get_rng_state/set_rng_state.
//
// Note [Philox offsets]: the generator is a (seed, offset) pair, as CUDA's
// Philox generator is. A kernel that draws n numbers reserves a range of
// counters with reserve(n) and passes (seed, offset) to the kernel library,
// which computes element i from counter offset + i / 4 alone. Nothing is
// drawn on the host, so a GPU computes the same numbers in parallel, and
// two ops never reuse counters.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <mutex>

namespace opgen_ref::runtime {

class DeviceGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit DeviceGeneratorImpl(c10::DeviceIndex device_index, uint64_t seed = c10::default_rng_seed_val);
  ~DeviceGeneratorImpl() override = default;

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // at::check_generator<DeviceGeneratorImpl> compares against this.
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // Note [Philox offsets]: the seed and the first counter of a fresh range
  // long enough for n numbers.
  std::pair<uint64_t, uint64_t> reserve(uint64_t n);

 private:
  DeviceGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The generator an op uses: `gen` if given, else the device's default one.
DeviceGeneratorImpl* generator_for(const std::optional<at::Generator>& gen, c10::DeviceIndex device);

}  // namespace opgen_ref::runtime
