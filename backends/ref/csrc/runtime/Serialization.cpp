// Serialization hooks for the device tensors. torch.save writes a device
// tensor's bytes (copied to CPU) and its location ("the device:1"); torch.load
// copies them back through the device module (see torch_<device>/__init__.py,
// which provides what torch.serialization._validate_device asks for).
//
// These hooks carry backend metadata (c10::BackendMeta) across save/load: a
// vendor with device-specific layouts records them in the map here and
// restores them on load. The reference device has no such metadata, so it
// only records the format version it wrote, to keep the seam exercised.
#include "runtime/Runtime.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <string>
#include <unordered_map>

namespace opgen_ref::runtime {
namespace {

void serialize_meta(const at::Tensor& /*t*/, std::unordered_map<std::string, bool>& m) {
  m[device_name() + "_format_v1"] = true;
}

void deserialize_meta(const at::Tensor& /*t*/, std::unordered_map<std::string, bool>& /*m*/) {
  // Nothing to restore on the reference device.
}

[[maybe_unused]] const bool registered = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &serialize_meta, &deserialize_meta);
  return true;
}();

} // namespace
} // namespace opgen_ref::runtime
