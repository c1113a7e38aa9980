// Devices, streams and events: the DeviceGuardImplInterface that c10 uses
// for every device switch (DeviceGuard, OptionalDeviceGuard, StreamGuard,
// c10::Event), registered for PrivateUse1, over the driver's devices,
// streams and events.
//
// c10 names a stream by (device, id); the driver hands out stream handles.
// Id 0 is each device's default stream (the driver's NULL stream); other ids
// map to driver streams created on first use and kept for the process, as
// CUDA's stream pool does. The current device and the current stream per
// device are thread-local, as c10 requires. A device index of -1 means the
// current device.
#include "runtime/Runtime.h"

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <pthread.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace opgen_ref::runtime {
namespace {

constexpr c10::DeviceType kDev = c10::DeviceType::PrivateUse1;
constexpr c10::DeviceIndex kMaxDevices = 16;

thread_local c10::DeviceIndex tls_device = 0;
// Current stream id per device, per thread (0 = the default stream).
thread_local c10::StreamId tls_stream[kMaxDevices] = {};
std::atomic<c10::StreamId> next_stream_id{1};

std::mutex streams_mu;
std::map<std::pair<c10::DeviceIndex, c10::StreamId>, refStream_t>& streams() {
  static auto* m = new std::map<std::pair<c10::DeviceIndex, c10::StreamId>, refStream_t>();
  return *m;
}

refStream_t driver_stream(c10::DeviceIndex device, c10::StreamId id) {
  if (id == 0) return nullptr;
  std::lock_guard<std::mutex> g(streams_mu);
  auto [it, fresh] = streams().try_emplace({device, id}, nullptr);
  if (fresh) {
    int previous = 0;
    driver_check(refGetDevice(&previous), "get device");
    driver_check(refSetDevice(device), "set device");
    driver_check(refStreamCreate(&it->second, 0), "stream creation");
    driver_check(refSetDevice(previous), "set device");
  }
  return it->second;
}

c10::DeviceIndex resolve(c10::DeviceIndex index) {
  const auto i = index == -1 ? current_device() : index;
  check_device_index(i);
  return i;
}

struct Event {
  c10::DeviceIndex device;
  refEvent_t handle;
};

class GuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kDev; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kDev);
    const auto old = current_device();
    if (d.index() != old) set_device(d.index());
    return c10::Device(kDev, old);
  }
  c10::Device getDevice() const override { return c10::Device(kDev, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kDev);
    set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count()) tls_device = d.index();
  }

  c10::Stream getStream(c10::Device d) const override {
    const auto i = resolve(d.index());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, i), tls_stream[i]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, resolve(d.index())), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*isHighPriority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, resolve(d.index())), next_stream_id.fetch_add(1));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    const auto idx = resolve(s.device_index());
    const auto old = c10::Stream(c10::Stream::UNSAFE, c10::Device(kDev, idx), tls_stream[idx]);
    tls_stream[idx] = s.id();
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  bool queryStream(const c10::Stream& s) const override {
    return refStreamQuery(driver_stream(s.device_index(), s.id())) == refSuccess;
  }
  void synchronizeStream(const c10::Stream& s) const override {
    driver_check(refStreamSynchronize(driver_stream(s.device_index(), s.id())), "stream synchronize");
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override { synchronize(index); }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag /*flag*/) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), device_name(), ": event device index ",
                device_index, " does not match the stream's device ", stream.device_index());
    auto* e = static_cast<Event*>(*event);
    if (e == nullptr) {
      e = new Event{stream.device_index(), nullptr};
      driver_check(refEventCreate(&e->handle), "event creation");
      *event = e;
    }
    TORCH_CHECK(e->device == stream.device_index(), device_name(), ": event was created on device ", e->device,
                " but recorded on a stream of device ", stream.device_index());
    driver_check(refEventRecord(e->handle, driver_stream(stream.device_index(), stream.id())), "event record");
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    driver_check(refStreamWaitEvent(driver_stream(stream.device_index(), stream.id()),
                                    static_cast<Event*>(event)->handle),
                 "stream wait");
  }
  bool queryEvent(void* event) const override {
    return event == nullptr || refEventQuery(static_cast<Event*>(event)->handle) == refSuccess;
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) driver_check(refEventSynchronize(static_cast<Event*>(event)->handle), "event synchronize");
  }
  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    auto* e = static_cast<Event*>(event);
    if (e == nullptr) return;
    refEventDestroy(e->handle);
    delete e;
  }
  // torch.accelerator.get_device_capability(): the dtypes a tensor of this
  // device may have and convert between, the kernel library's.
  c10::DeviceCapability getDeviceCapability(c10::Device /*device*/) const override {
    c10::DeviceCapability cap;
    auto& has = cap.capability_data.supported_scalar_types;
#define OPGEN_REF_CAPABILITY(_, name) has.has_##name = kernel_dtype_of(c10::ScalarType::name).has_value();
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(OPGEN_REF_CAPABILITY)
#undef OPGEN_REF_CAPABILITY
    return cap;
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    auto* a = static_cast<Event*>(start);
    auto* b = static_cast<Event*>(end);
    TORCH_CHECK(a != nullptr && b != nullptr, device_name(), ": both events must be recorded before elapsedTime()");
    float ms = 0;
    driver_check(refEventElapsedTime(&ms, a->handle, b->handle), "elapsed time");
    return ms;
  }
};

// Note [Fork safety]: a process that forks after using the device must not
// use it in the child: the driver's state (a GPU context, the CPU driver's
// streams) and the kernel library's host threads do not survive fork, and
// the kernel library's thread pool would wait forever for threads that the
// child does not have. As torch.cuda, the runtime marks a child "in a bad
// fork" when its parent had used the device, and every way into the device
// (allocation, the current stream every kernel launch asks for, copies)
// refuses it with a clear error; a child forked before any use is fine
// (DataLoader workers that never touch the device). torch.<device>.init()
// initializes the runtime as torch.cuda.init() does, so it poisons later
// forks too (OpenReg's test_device_poison_fork forks right after init()).
// The error opens with torch.cuda's sentence, the device's name upper-cased
// as torch.cuda, torch.xpu and torch.mtia spell theirs ("Cannot
// re-initialize REFDEV in forked subprocess. To use REFDEV with
// multiprocessing, you must use the 'spawn' start method"): device-generic
// tests match it by regex. What follows it is ours.
std::atomic<bool> used{false};
bool bad_fork = false;

}  // namespace

void mark_device_used() {
  if (used.load(std::memory_order_relaxed)) return;
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(nullptr, nullptr, [] {
      if (used.load()) bad_fork = true;
    });
  });
  used.store(true);
}

bool in_bad_fork() { return bad_fork; }

bool device_initialized() { return used.load() && !bad_fork; }

void check_not_forked() {
  TORCH_CHECK(!bad_fork, "Cannot re-initialize ", upper_device_name(), " in forked subprocess. To use ",
              upper_device_name(), " with multiprocessing, you must use the 'spawn' start method (",
              device_name(), ": the parent process had already initialized the device, and its driver state and "
              "kernel threads do not survive fork; 'forkserver' works too, or fork before the first use)");
}

c10::DeviceIndex device_count() noexcept {
  static const c10::DeviceIndex n = [] {
    int count = 0;
    return refGetDeviceCount(&count) == refSuccess ? static_cast<c10::DeviceIndex>(count) : c10::DeviceIndex{0};
  }();
  return n;
}

void check_device_index(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < device_count(), "The device index is out of range: ", static_cast<int>(index),
              "; this process has ", static_cast<int>(device_count()), " ", device_name(),
              " device(s) (indices 0..", static_cast<int>(device_count()) - 1, ")");
}

c10::DeviceIndex current_device() { return tls_device; }

void set_device(c10::DeviceIndex index) {
  if (index == -1) return;  // "the current device"
  check_device_index(index);
  driver_check(refSetDevice(index), "set device");
  tls_device = index;
}

void synchronize(c10::DeviceIndex index) {
  if (index != -1) check_device_index(index);
  driver_check(refDeviceSynchronize(), "device synchronize");
}

refStream_t current_stream() {
  check_not_forked();
  mark_device_used();
  const auto d = current_device();
  return driver_stream(d, tls_stream[d]);
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

}  // namespace opgen_ref::runtime
