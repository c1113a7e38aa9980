// Device memory: the allocator PyTorch calls for every tensor on the device
// (registered for PrivateUse1) and a pinned host allocator that the hooks
// hand out for `pin_memory()`. Both are thin: the driver owns the memory and
// answers pointer queries (refPointerGetAttributes), as a real driver does.
#include "runtime/Runtime.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cctype>

namespace opgen_ref::runtime {
namespace {

void device_delete(void* p) { refFree(p); }
void pinned_delete(void* p) { refFreeHost(p); }

// The driver's statistics in PyTorch's shape (Note [Device memory statistics]
// in driver/MemoryStats.h), for torch.accelerator.memory_stats() and friends.
c10::CachingAllocator::Stat to_stat(const refMemoryStat& s) {
  c10::CachingAllocator::Stat out;
  out.current = s.current;
  out.peak = s.peak;
  out.allocated = s.allocated;
  out.freed = s.freed;
  return out;
}

void set_aggregate(c10::CachingAllocator::StatArray& a, const refMemoryStat& s) {
  a[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)] = to_stat(s);
}

// A c10::DeviceAllocator, so that the device-generic memory API
// (torch.accelerator.memory_allocated, empty_cache, get_memory_info) works.
class DeviceAllocator final : public c10::DeviceAllocator {
 public:
  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override { driver_check(refMemEmptyCache(), "empty cache"); }

  // Streams of the reference drivers never reuse a block before the work
  // queued on it completes (CPU: synchronous; CUDA: Note [CUDA block cache]),
  // so there is nothing to record.
  void recordStream(const c10::DataPtr& /*ptr*/, c10::Stream /*stream*/) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device_index(device);
    refMemoryStats s{};
    driver_check(refMemGetStats(device, &s), "memory statistics");
    c10::CachingDeviceAllocator::DeviceStats out;
    set_aggregate(out.allocation, s.allocations);
    set_aggregate(out.active, s.allocations);
    set_aggregate(out.segment, s.segments);
    set_aggregate(out.allocated_bytes, s.allocated_bytes);
    set_aggregate(out.active_bytes, s.allocated_bytes);
    set_aggregate(out.requested_bytes, s.requested_bytes);
    set_aggregate(out.reserved_bytes, s.reserved_bytes);
    out.num_device_alloc = s.segments.allocated;
    out.num_device_free = s.segments.freed;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    check_device_index(device);
    driver_check(refMemResetStats(device, refMemResetTotals), "reset memory statistics");
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    check_device_index(device);
    driver_check(refMemResetStats(device, refMemResetPeaks), "reset peak memory statistics");
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
    size_t free_bytes = 0, total_bytes = 0;
    driver_check(refMemGetInfo(&free_bytes, &total_bytes), "memory info");
    return {free_bytes, total_bytes};
  }

  c10::DataPtr allocate(size_t nbytes) override {
    check_not_forked();
    mark_device_used();
    const auto device = current_device();
    void* p = nullptr;
    if (nbytes != 0) {
      driver_check(refSetDevice(device), "set device");
      const refError e = refMalloc(&p, nbytes);
      TORCH_CHECK_WITH(OutOfMemoryError, e == refSuccess, device_name(), ": out of memory allocating ", nbytes,
                       " bytes on device ", static_cast<int>(device));
    }
    return {p, p, &device_delete, c10::Device(c10::DeviceType::PrivateUse1, device)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &device_delete; }
  void copy_data(void* dest, const void* src, size_t count) const override { memcpy_any(dest, src, count); }
};

class PinnedHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* p = nullptr;
    if (nbytes != 0) driver_check(refMallocHost(&p, nbytes), "pinned host allocation");
    return {p, p, &pinned_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &pinned_delete; }
  void copy_data(void* dest, const void* src, size_t count) const override { memcpy_any(dest, src, count); }
};

DeviceAllocator g_device_allocator;
PinnedHostAllocator g_pinned_allocator;

refPointerAttributes attributes(const void* ptr) {
  refPointerAttributes a{};
  driver_check(refPointerGetAttributes(&a, ptr), "pointer attributes");
  return a;
}

}  // namespace

std::string device_name() { return c10::get_privateuse1_backend(); }

std::string upper_device_name() {
  std::string s = device_name();
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void driver_check(refError e, const char* what) {
  TORCH_CHECK(e == refSuccess, device_name(), ": ", what, " failed: ", refGetErrorString(e));
}

c10::Allocator* device_allocator() { return &g_device_allocator; }
c10::Allocator* pinned_host_allocator() { return &g_pinned_allocator; }

std::optional<c10::DeviceIndex> device_of_pointer(const void* ptr) {
  const auto a = attributes(ptr);
  if (a.type != refMemoryDevice) return std::nullopt;
  return static_cast<c10::DeviceIndex>(a.device);
}

bool is_pinned_host_pointer(const void* ptr) { return attributes(ptr).type == refMemoryHost; }

namespace {
refMemcpyKind memcpy_kind(void* dst, const void* src) {
  const bool dst_dev = attributes(dst).type == refMemoryDevice;
  const bool src_dev = attributes(src).type == refMemoryDevice;
  return dst_dev ? (src_dev ? refMemcpyDeviceToDevice : refMemcpyHostToDevice)
                 : (src_dev ? refMemcpyDeviceToHost : refMemcpyHostToHost);
}
}  // namespace

void memcpy_any(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  check_not_forked();
  driver_check(refMemcpy(dst, src, nbytes, memcpy_kind(dst, src)), "memcpy");
}

void memcpy_any_async(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  driver_check(refMemcpyAsync(dst, src, nbytes, memcpy_kind(dst, src), current_stream()), "memcpy");
}

// Element 0, as eager's _local_scalar_dense: Tensor::item() checks that
// there is exactly one element before it gets here.
c10::Scalar local_scalar(const at::Tensor& t) {
  TORCH_CHECK(t.numel() > 0, "cannot read a scalar from a tensor with no elements");
  alignas(16) unsigned char buf[16] = {};
  driver_check(refMemcpy(buf, t.const_data_ptr(), t.itemsize(), refMemcpyDeviceToHost), "read scalar");
  switch (t.scalar_type()) {
#define OPGEN_REF_CASE(type, name) \
  case c10::ScalarType::name:      \
    return c10::Scalar(*reinterpret_cast<const type*>(buf));
    OPGEN_REF_CASE(uint8_t, Byte)
    OPGEN_REF_CASE(int8_t, Char)
    OPGEN_REF_CASE(int16_t, Short)
    OPGEN_REF_CASE(int32_t, Int)
    OPGEN_REF_CASE(int64_t, Long)
    OPGEN_REF_CASE(float, Float)
    OPGEN_REF_CASE(double, Double)
    OPGEN_REF_CASE(bool, Bool)
    OPGEN_REF_CASE(c10::Half, Half)
    OPGEN_REF_CASE(c10::BFloat16, BFloat16)
    OPGEN_REF_CASE(c10::complex<float>, ComplexFloat)
    OPGEN_REF_CASE(c10::complex<double>, ComplexDouble)
    OPGEN_REF_CASE(uint16_t, UInt16)
    OPGEN_REF_CASE(uint32_t, UInt32)
    OPGEN_REF_CASE(uint64_t, UInt64)
    OPGEN_REF_CASE(c10::Float8_e4m3fn, Float8_e4m3fn)
    OPGEN_REF_CASE(c10::Float8_e5m2, Float8_e5m2)
    OPGEN_REF_CASE(c10::Float8_e4m3fnuz, Float8_e4m3fnuz)
    OPGEN_REF_CASE(c10::Float8_e5m2fnuz, Float8_e5m2fnuz)
    OPGEN_REF_CASE(c10::Float8_e8m0fnu, Float8_e8m0fnu)
#undef OPGEN_REF_CASE
    default: TORCH_CHECK(false, "_local_scalar_dense: unsupported dtype ", t.scalar_type());
  }
}

// PyTorch asks this registry for the PrivateUse1 allocator (empty tensors,
// storage resize, deserialization).
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_device_allocator)

}  // namespace opgen_ref::runtime
