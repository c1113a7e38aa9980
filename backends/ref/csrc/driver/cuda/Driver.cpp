// The CUDA implementation of the reference driver (RefDriver.h): the CUDA
// runtime plays the vendor's SDK. Device memory comes from cudaMalloc behind
// a caching allocator (Note [CUDA block cache]), device indices are CUDA
// device ordinals, refStream_t/refEvent_t are cudaStream_t/cudaEvent_t, and
// copies are cudaMemcpy/cudaMemcpyAsync. Compiled by the host compiler
// against the CUDA runtime API only (no torch, no nvcc).
//
// Host code never touches device memory here: refAccessBegin/End, the CPU
// driver's protection windows (Note [Protected device memory]), refuse
// device pointers, since no host access to GPU memory exists to open.
//
// Note [No GPU]: on a machine without a GPU or without a driver,
// cudaGetDeviceCount fails; the driver then reports 0 devices and every
// other call fails with refErrorInvalidDevice, so importing a project built
// on it works (its Python package says why there is no device) and CPU
// tensors are unaffected.
#include "driver/MemoryStats.h"
#include "driver/RefDriver.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

// The CUDA text of this thread's last CUDA failure, and the driver code it
// became: refGetErrorString adds the text only to that code.
thread_local std::string tls_error;
thread_local refError tls_code = refSuccess;

int device_count() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it for later calls
      return 0;
    }
    return count;
  }();
  return n;
}

// Maps a CUDA error to the driver's codes; the CUDA text stays readable
// through refGetErrorString.
refError code_of(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return refSuccess;
    case cudaErrorMemoryAllocation: return refErrorMemoryAllocation;
    case cudaErrorInvalidDevice:
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return refErrorInvalidDevice;
    case cudaErrorInvalidDevicePointer: return refErrorInvalidPointer;
    case cudaErrorNotReady: return refErrorNotReady;
    default: return refErrorInvalidValue;
  }
}

refError check(cudaError_t e) {
  if (e == cudaSuccess) return refSuccess;
  (void)cudaGetLastError();  // not left for the kernel library's launch checks
  if (e == cudaErrorNotReady) return refErrorNotReady;
  tls_error = cudaGetErrorString(e);
  return tls_code = code_of(e);
}

refError no_device() {
  tls_error = "no CUDA device is available";
  return tls_code = refErrorInvalidDevice;
}

// Note [CUDA block cache]: freed device blocks are kept per device, keyed by
// their rounded size, and handed out again, as PyTorch's CUDA caching
// allocator does (cudaMalloc/cudaFree synchronize the device and cost
// microseconds to milliseconds). A freed block may still be read or written
// by work queued before the free, on any stream: the free records an event
// on the legacy default stream, which every stream of this driver (created
// blocking) is ordered with, and the block is reused only once that event
// has completed. Sizes round up to 512 bytes (small) or 2 MiB (large), so
// nearby sizes share blocks. On cudaMalloc failure the cache is emptied
// (after the device synchronizes) and the allocation retried.
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;
constexpr size_t kLargeFrom = size_t{1} << 20;

size_t round_size(size_t n) {
  const size_t r = n >= kLargeFrom ? kLargeRound : kSmallRound;
  return (n + r - 1) / r * r;
}

struct Block {
  size_t size;    // bytes asked for
  size_t rounded; // bytes reserved
  int device;     // -1: pinned host memory
};

struct FreeBlock {
  void* ptr;
  cudaEvent_t ready;  // recorded at the free; null when none was needed
};

class Allocator {
 public:
  std::mutex mu;
  std::map<uintptr_t, Block> live;  // address-ordered: interior pointers find their block
  std::map<std::pair<int, size_t>, std::vector<FreeBlock>> cached;  // (device, rounded) -> blocks
  refMemoryStats stats[64] = {};  // Note [Device memory statistics]

  std::map<uintptr_t, Block>::iterator find(const void* p) {
    const auto key = reinterpret_cast<uintptr_t>(p);
    auto it = live.upper_bound(key);
    if (it == live.begin()) return live.end();
    --it;
    if (key < it->first + std::max<size_t>(it->second.size, 1)) return it;
    return live.end();
  }

  // Releases every cached block of `device` back to CUDA. Caller holds mu.
  void empty_cache(int device) {
    for (auto it = cached.begin(); it != cached.end();) {
      if (it->first.first != device) {
        ++it;
        continue;
      }
      for (FreeBlock& b : it->second) {
        if (b.ready != nullptr) {
          cudaEventSynchronize(b.ready);
          cudaEventDestroy(b.ready);
        }
        cudaFree(b.ptr);
        refdrv::on_release(stats[device], it->first.second);
      }
      it = cached.erase(it);
    }
  }
};

Allocator& allocator() {
  static Allocator* a = new Allocator();  // never destroyed: frees may run at exit
  return *a;
}

void print_stats_at_exit() {
  Allocator& a = allocator();
  for (int d = 0; d < device_count() && d < 64; ++d) {
    const refMemoryStats& s = a.stats[d];
    std::fprintf(stderr,
                 "ref cuda driver: device %d: %lld cudaMalloc calls, %lld cache hits, peak %lld bytes allocated, "
                 "%lld bytes reserved\n",
                 d, static_cast<long long>(s.segments.allocated),
                 static_cast<long long>(s.allocations.allocated - s.segments.allocated),
                 static_cast<long long>(s.allocated_bytes.peak), static_cast<long long>(s.reserved_bytes.current));
  }
}

// Takes a cached block of `rounded` bytes on `device` whose last use has
// completed, or null. Caller holds mu.
void* take_cached(Allocator& a, int device, size_t rounded) {
  auto it = a.cached.find({device, rounded});
  if (it == a.cached.end()) return nullptr;
  std::vector<FreeBlock>& blocks = it->second;
  for (size_t i = 0; i < blocks.size(); ++i) {
    FreeBlock b = blocks[i];
    if (b.ready != nullptr) {
      const cudaError_t q = cudaEventQuery(b.ready);
      (void)cudaGetLastError();
      if (q == cudaErrorNotReady) continue;
      cudaEventDestroy(b.ready);
    }
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
    if (blocks.empty()) a.cached.erase(it);
    return b.ptr;
  }
  return nullptr;
}

refError device_malloc(void** ptr, size_t size) {
  if (ptr == nullptr) return refErrorInvalidValue;
  if (size == 0) {
    *ptr = nullptr;
    return refSuccess;
  }
  if (device_count() == 0) return no_device();
  int device = 0;
  if (refError e = check(cudaGetDevice(&device))) return e;
  if (device >= 64) return refErrorInvalidDevice;
  static const bool stats_at_exit = [] {
    const char* env = std::getenv("REF_CUDA_STATS");
    if (env != nullptr && std::strcmp(env, "1") == 0) std::atexit(print_stats_at_exit);
    return true;
  }();
  (void)stats_at_exit;
  const size_t rounded = round_size(size);
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  void* p = take_cached(a, device, rounded);
  const bool fresh = p == nullptr;
  if (fresh) {
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      a.empty_cache(device);
      e = cudaMalloc(&p, rounded);
    }
    if (refError r = check(e)) return r;
  }
  refdrv::on_allocate(a.stats[device], size, rounded, fresh);
  a.live[reinterpret_cast<uintptr_t>(p)] = Block{size, rounded, device};
  *ptr = p;
  return refSuccess;
}

refError device_free(void* ptr) {
  if (ptr == nullptr) return refSuccess;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  auto it = a.live.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == a.live.end() || it->second.device < 0) return refErrorInvalidPointer;
  const Block b = it->second;
  a.live.erase(it);
  refdrv::on_free(a.stats[b.device], b.size, b.rounded);
  int previous = 0;
  cudaGetDevice(&previous);
  if (previous != b.device) cudaSetDevice(b.device);
  cudaEvent_t ready = nullptr;
  if (cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) == cudaSuccess) {
    cudaEventRecord(ready, cudaStreamLegacy);
  } else {
    (void)cudaGetLastError();
    cudaDeviceSynchronize();
  }
  if (previous != b.device) cudaSetDevice(previous);
  a.cached[{b.device, b.rounded}].push_back(FreeBlock{ptr, ready});
  return refSuccess;
}

cudaMemcpyKind cuda_kind(refMemcpyKind k) {
  switch (k) {
    case refMemcpyHostToDevice: return cudaMemcpyHostToDevice;
    case refMemcpyDeviceToHost: return cudaMemcpyDeviceToHost;
    case refMemcpyDeviceToDevice: return cudaMemcpyDeviceToDevice;
    case refMemcpyHostToHost: return cudaMemcpyHostToHost;
  }
  return cudaMemcpyDefault;
}

cudaStream_t cuda_stream(refStream_t s) {
  // NULL is the legacy default stream, with which every stream created here
  // (blocking) is ordered: runtime copies through refMemcpy see kernels
  // launched on any stream.
  return s == nullptr ? cudaStreamLegacy : reinterpret_cast<cudaStream_t>(s);
}

}  // namespace

extern "C" {

const char* refGetErrorString(refError e) {
  const char* base = "unknown error";
  switch (e) {
    case refSuccess: return "no error";
    case refErrorInvalidValue: base = "invalid argument"; break;
    case refErrorInvalidDevice: base = "invalid device ordinal"; break;
    case refErrorMemoryAllocation: base = "out of memory"; break;
    case refErrorInvalidPointer: base = "invalid device pointer"; break;
    case refErrorNotReady: base = "device not ready"; break;
  }
  if (tls_error.empty() || e != tls_code) return base;
  thread_local std::string text;
  text = std::string(base) + " (CUDA: " + tls_error + ")";
  return text.c_str();
}

refError refGetDeviceCount(int* count) {
  if (count == nullptr) return refErrorInvalidValue;
  *count = device_count();
  return refSuccess;
}

refError refSetDevice(int device) {
  if (device < 0 || device >= device_count()) return device_count() == 0 ? no_device() : refErrorInvalidDevice;
  return check(cudaSetDevice(device));
}

refError refGetDevice(int* device) {
  if (device == nullptr) return refErrorInvalidValue;
  if (device_count() == 0) {
    *device = 0;  // as the CPU driver: a current device index exists even with no device
    return refSuccess;
  }
  return check(cudaGetDevice(device));
}

refError refDeviceSynchronize(void) {
  if (device_count() == 0) return no_device();
  return check(cudaDeviceSynchronize());
}

refError refMalloc(void** ptr, size_t size) { return device_malloc(ptr, size); }
refError refFree(void* ptr) { return device_free(ptr); }

refError refMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return refErrorInvalidValue;
  if (size == 0) {
    *ptr = nullptr;
    return refSuccess;
  }
  if (device_count() == 0) return no_device();
  void* p = nullptr;
  if (refError e = check(cudaHostAlloc(&p, size, cudaHostAllocPortable))) return e;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  a.live[reinterpret_cast<uintptr_t>(p)] = Block{size, size, -1};
  *ptr = p;
  return refSuccess;
}

refError refFreeHost(void* ptr) {
  if (ptr == nullptr) return refSuccess;
  {
    Allocator& a = allocator();
    std::lock_guard<std::mutex> g(a.mu);
    auto it = a.live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == a.live.end() || it->second.device >= 0) return refErrorInvalidPointer;
    a.live.erase(it);
  }
  return check(cudaFreeHost(ptr));
}

refError refPointerGetAttributes(refPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return refErrorInvalidValue;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  auto it = a.find(ptr);
  if (it == a.live.end()) {
    *attributes = refPointerAttributes{refMemoryUnregistered, -1, nullptr, 0};
  } else {
    const Block& b = it->second;
    *attributes = refPointerAttributes{b.device < 0 ? refMemoryHost : refMemoryDevice, b.device,
                                       reinterpret_cast<void*>(it->first), b.size};
  }
  return refSuccess;
}

refError refMemcpy(void* dst, const void* src, size_t count, refMemcpyKind kind) {
  if (count == 0) return refSuccess;
  if (dst == nullptr || src == nullptr || kind < refMemcpyHostToDevice || kind > refMemcpyHostToHost) {
    return refErrorInvalidValue;
  }
  if (kind == refMemcpyHostToHost) {
    std::memmove(dst, src, count);
    return refSuccess;
  }
  if (device_count() == 0) return no_device();
  return check(cudaMemcpy(dst, src, count, cuda_kind(kind)));
}

// Asynchronous with respect to the host when the host side is pinned
// (refMallocHost) or both sides are device memory, as cudaMemcpyAsync is:
// that is what non_blocking=True copies need. Pageable host memory makes
// CUDA stage the copy, which returns once the source has been read.
refError refMemcpyAsync(void* dst, const void* src, size_t count, refMemcpyKind kind, refStream_t stream) {
  if (count == 0) return refSuccess;
  if (dst == nullptr || src == nullptr || kind < refMemcpyHostToDevice || kind > refMemcpyHostToHost) {
    return refErrorInvalidValue;
  }
  if (device_count() == 0) return no_device();
  return check(cudaMemcpyAsync(dst, src, count, cuda_kind(kind), cuda_stream(stream)));
}

refError refStreamCreate(refStream_t* stream, int priority) {
  if (stream == nullptr) return refErrorInvalidValue;
  if (device_count() == 0) return no_device();
  int least = 0, greatest = 0;
  if (refError e = check(cudaDeviceGetStreamPriorityRange(&least, &greatest))) return e;
  // RefDriver priorities: 0 normal, negative higher, as CUDA's.
  const int p = priority < greatest ? greatest : (priority > least ? least : priority);
  cudaStream_t s = nullptr;
  if (refError e = check(cudaStreamCreateWithPriority(&s, cudaStreamDefault, p))) return e;
  *stream = reinterpret_cast<refStream_t>(s);
  return refSuccess;
}

refError refStreamDestroy(refStream_t stream) {
  if (stream == nullptr) return refSuccess;
  return check(cudaStreamDestroy(reinterpret_cast<cudaStream_t>(stream)));
}

refError refStreamSynchronize(refStream_t stream) {
  if (device_count() == 0) return no_device();
  return check(cudaStreamSynchronize(cuda_stream(stream)));
}

refError refStreamQuery(refStream_t stream) {
  if (device_count() == 0) return no_device();
  return check(cudaStreamQuery(cuda_stream(stream)));
}

refError refStreamWaitEvent(refStream_t stream, refEvent_t event) {
  if (event == nullptr) return refErrorInvalidValue;
  return check(cudaStreamWaitEvent(cuda_stream(stream), reinterpret_cast<cudaEvent_t>(event), 0));
}

refError refEventCreate(refEvent_t* event) {
  if (event == nullptr) return refErrorInvalidValue;
  if (device_count() == 0) return no_device();
  cudaEvent_t e = nullptr;
  if (refError r = check(cudaEventCreate(&e))) return r;
  *event = reinterpret_cast<refEvent_t>(e);
  return refSuccess;
}

refError refEventDestroy(refEvent_t event) {
  if (event == nullptr) return refSuccess;
  return check(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)));
}

refError refEventRecord(refEvent_t event, refStream_t stream) {
  if (event == nullptr) return refErrorInvalidValue;
  return check(cudaEventRecord(reinterpret_cast<cudaEvent_t>(event), cuda_stream(stream)));
}

refError refEventSynchronize(refEvent_t event) {
  if (event == nullptr) return refErrorInvalidValue;
  return check(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)));
}

refError refEventQuery(refEvent_t event) {
  if (event == nullptr) return refErrorInvalidValue;
  return check(cudaEventQuery(reinterpret_cast<cudaEvent_t>(event)));
}

refError refEventElapsedTime(float* ms, refEvent_t start, refEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return refErrorInvalidValue;
  return check(cudaEventElapsedTime(ms, reinterpret_cast<cudaEvent_t>(start), reinterpret_cast<cudaEvent_t>(end)));
}

// Note [Protected device memory] has no CUDA counterpart: the host cannot
// open device memory, so a window on it is an error; host pointers are
// ignored as in the CPU driver.
refError refAccessBegin(const void* ptr) {
  refPointerAttributes a;
  refPointerGetAttributes(&a, ptr);
  return a.type == refMemoryDevice ? refErrorInvalidPointer : refSuccess;
}

refError refAccessEnd(const void* ptr) { return refAccessBegin(ptr); }

// Note [Kernel scope]: device memory is not host-addressable here, so there
// is nothing to open; fn runs once the stream's queued work is done.
refError refLaunchHostFunc(refStream_t stream, const void* const* ptrs, size_t count, refHostFn fn, void* user) {
  if (fn == nullptr || (count > 0 && ptrs == nullptr)) return refErrorInvalidValue;
  const refError e = check(cudaStreamSynchronize(cuda_stream(stream)));
  if (e != refSuccess) return e;
  fn(user);
  return refSuccess;
}

refError refAccessThreadBegin(void) { return refSuccess; }
refError refAccessThreadEnd(void) { return refSuccess; }

refError refMemGetStats(int device, refMemoryStats* stats) {
  if (stats == nullptr) return refErrorInvalidValue;
  if (device < 0 || device >= device_count() || device >= 64) return refErrorInvalidDevice;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  *stats = a.stats[device];
  return refSuccess;
}

refError refMemResetStats(int device, refMemResetKind kind) {
  if (device < 0 || device >= device_count() || device >= 64) return refErrorInvalidDevice;
  if (kind != refMemResetPeaks && kind != refMemResetTotals) return refErrorInvalidValue;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  refdrv::reset(a.stats[device], kind);
  return refSuccess;
}

refError refMemEmptyCache(void) {
  if (device_count() == 0) return no_device();
  Allocator& a = allocator();
  std::lock_guard<std::mutex> g(a.mu);
  for (int d = 0; d < device_count() && d < 64; ++d) a.empty_cache(d);
  return refSuccess;
}

refError refMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return refErrorInvalidValue;
  if (device_count() == 0) return no_device();
  return check(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // extern "C"
