// The profiler's device hooks (torch::profiler::impl::ProfilerStubs) for
// PrivateUse1: what torch.autograd.profiler.profile(use_device=<device>) and
// record_function use to time each op on the device, as CUDA's stubs do with
// CUDA events. Without them every profiled op raises inside the profiler's
// callback ("PrivateUse1 used in profiler but not enabled": a warning with a
// stack trace per op, minutes for a hundred steps) and device times are
// garbage. Each op records a driver event on the current stream; the
// profiler asks elapsed() for pairs of them.
#include "runtime/Runtime.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <functional>
#include <memory>

namespace opgen_ref::runtime {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

refEvent_t event_of(const ProfilerVoidEventStub* stub) { return static_cast<refEvent_t>(stub->get()); }

struct Stubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    if (device != nullptr) *device = current_device();
    refEvent_t e = nullptr;
    driver_check(refEventCreate(&e), "profiler event creation");
    *event = std::shared_ptr<void>(e, [](void* p) { refEventDestroy(static_cast<refEvent_t>(p)); });
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    driver_check(refEventRecord(e, current_stream()), "profiler event record");
  }
  // Microseconds, as the profiler expects (CUDA's stubs scale the same way).
  float elapsed(const ProfilerVoidEventStub* start, const ProfilerVoidEventStub* end) const override {
    driver_check(refEventSynchronize(event_of(start)), "profiler event synchronize");
    driver_check(refEventSynchronize(event_of(end)), "profiler event synchronize");
    float ms = 0;
    driver_check(refEventElapsedTime(&ms, event_of(start), event_of(end)), "profiler elapsed time");
    return ms * 1000.0f;
  }
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, i));
      op(i);
    }
  }
  void synchronize() const override { driver_check(refDeviceSynchronize(), "device synchronize"); }
};

const bool registered = [] {
  static Stubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace
}  // namespace opgen_ref::runtime
