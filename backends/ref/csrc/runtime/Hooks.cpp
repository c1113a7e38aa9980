// PrivateUse1HooksInterface for the device: how device-generic parts of PyTorch
// (torch.Generator(device=...), pin_memory(), torch.accelerator, lazy init,
// storage resize) reach the device runtime.
#include "runtime/Generator.h"
#include "runtime/Runtime.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Storage.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace opgen_ref::runtime {
namespace {

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  void init() const override {
    // The reference device needs no driver initialization. A vendor opens
    // the driver here; PyTorch calls this lazily, once.
  }
  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < device_count();
  }

  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto old = current_device();
    set_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    if (device < 0 || device >= device_count()) return current_device();
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override { return new_generator(device_index); }

  at::Device getDeviceFromPtr(void* data) const override {
    const auto d = device_of_pointer(data);
    TORCH_CHECK(d.has_value(), device_name(), ": pointer ", data, " was not allocated on a ", device_name(), " device");
    return at::Device(c10::DeviceType::PrivateUse1, *d);
  }

  bool isPinnedPtr(const void* data) const override { return is_pinned_host_pointer(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_host_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    TORCH_CHECK(storage.resizable(), device_name(), ": trying to resize a storage that is not resizable");
    auto* impl = storage.unsafeGetStorageImpl();
    const size_t old = impl->nbytes();
    c10::DataPtr fresh = impl->allocator()->allocate(newsize);
    memcpy_any(fresh.get(), impl->data(), std::min(old, newsize));
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

// Registered before any Python code can ask for it: at library load.
[[maybe_unused]] const bool registered = [] {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

} // namespace
} // namespace opgen_ref::runtime
