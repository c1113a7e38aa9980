// The device generator (Generator.h): a Philox (seed, offset) pair.
#include "runtime/Generator.h"

#include "runtime/Runtime.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/DistributionsHelper.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <deque>
#include <mutex>

namespace opgen_ref::runtime {
namespace {

constexpr uint32_t kStateMagic = 0x4f504752;  // "OPGR"
constexpr uint32_t kStateVersion = 2;

struct StateBlob {
  uint32_t magic;
  uint32_t version;
  uint64_t seed;
  uint64_t offset;
};

}  // namespace

DeviceGeneratorImpl::DeviceGeneratorImpl(c10::DeviceIndex device_index, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device_index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void DeviceGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void DeviceGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t DeviceGeneratorImpl::get_offset() const { return offset_; }
uint64_t DeviceGeneratorImpl::current_seed() const { return seed_; }

uint64_t DeviceGeneratorImpl::seed() {
  const auto s = c10::detail::getNonDeterministicRandom();
  set_current_seed(s);
  return s;
}

std::pair<uint64_t, uint64_t> DeviceGeneratorImpl::reserve(uint64_t n) {
  // Four 32-bit numbers per counter; round up to whole counters.
  const uint64_t start = offset_;
  offset_ += (n + 3) / 4;
  return {seed_, start};
}

c10::intrusive_ptr<c10::TensorImpl> DeviceGeneratorImpl::get_state() const {
  const StateBlob blob{kStateMagic, kStateVersion, seed_, offset_};
  auto t = at::detail::empty_cpu({static_cast<int64_t>(sizeof(StateBlob))}, at::kByte);
  std::memcpy(t.mutable_data_ptr(), &blob, sizeof(StateBlob));
  return t.getIntrusivePtr();
}

void DeviceGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.device().is_cpu() && new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
              device_name(), ": RNG state must be a CPU torch.uint8 tensor (as returned by get_rng_state())");
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(sizeof(StateBlob)), device_name(), ": RNG state has ",
              new_state.numel(), " bytes, expected ", sizeof(StateBlob), "; was it produced by torch.", device_name(),
              ".get_rng_state()?");
  StateBlob blob{};
  std::memcpy(&blob, new_state.data(), sizeof(StateBlob));
  TORCH_CHECK(blob.magic == kStateMagic && blob.version == kStateVersion, device_name(), ": not a ", device_name(),
              " RNG state (bad magic or version)");
  seed_ = blob.seed;
  offset_ = blob.offset;
}

DeviceGeneratorImpl* DeviceGeneratorImpl::clone_impl() const {
  auto* g = new DeviceGeneratorImpl(device_.index(), seed_);
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(c10::DeviceIndex index) {
  // A deque never moves its elements: references handed out stay valid.
  static std::once_flag once;
  static std::deque<at::Generator> gens;
  std::call_once(once, [] {
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      gens.push_back(at::make_generator<DeviceGeneratorImpl>(i));
    }
  });
  const auto idx = index == -1 ? current_device() : index;
  check_device_index(idx);
  return gens[static_cast<size_t>(idx)];
}

at::Generator new_generator(c10::DeviceIndex index) {
  const auto idx = index == -1 ? current_device() : index;
  check_device_index(idx);
  return at::make_generator<DeviceGeneratorImpl>(idx);
}

DeviceGeneratorImpl* generator_for(const std::optional<at::Generator>& gen, c10::DeviceIndex device) {
  return at::get_generator_or_default<DeviceGeneratorImpl>(gen, default_generator(device));
}

}  // namespace opgen_ref::runtime
