// The CPU implementation of the reference driver (RefDriver.h): "device
// memory" is host memory obtained with mmap and kept inaccessible outside
// access windows (Note [Protected device memory]); work runs synchronously
// on the calling thread, so a stream is an ordering promise that is always
// kept and an event is the time it was reached.
//
// Note [Virtual devices]: the device count is 2 unless REF_DEVICE_COUNT says
// otherwise (0..16), so that device-index bugs show on a machine without an
// accelerator.
#include "driver/RefDriver.h"

#include "driver/MemoryStats.h"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

constexpr int kMaxDevices = 16;

int read_device_count() {
  const char* env = std::getenv("REF_DEVICE_COUNT");
  if (env == nullptr || *env == '\0') return 2;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || v < 0) return 2;
  return static_cast<int>(std::min<long>(v, kMaxDevices));
}

int device_count() {
  static const int n = read_device_count();
  return n;
}

// Note [Protection keys]: how the driver keeps device memory inaccessible
// outside access windows (Note [Protected device memory]).
// - keys (the default where the CPU and kernel have memory protection keys,
//   pkeys(7)): every device page carries one protection key, given once when
//   the pages are mapped, and a window is a change of the calling thread's
//   PKRU register (one unprivileged instruction; no system call, no TLB
//   shootdown). Opening a window opens all device memory to that thread
//   only; other host threads still fault, and so does host code on this
//   thread once the window closes. Freed blocks waiting in the cache (Note
//   [Cached pages]) keep the key: protecting them too (PROT_NONE on free,
//   back on reuse) was measured at ~3.5 us per allocation, more than all
//   the rest of a small op, so a kernel that touches a freed block is the
//   sanitized build's to find (Note [Poisoned device memory]), as on a GPU
//   with a caching allocator.
// - pages (REF_DRIVER_PROTECTION=pages, or no pkeys): each window is an
//   mprotect of the allocation it names, process-wide: two system calls per
//   operand per kernel, ~13 us per small op (README.md, Benchmarks).
// - off (REF_DRIVER_UNPROTECTED=1): nothing is protected.
// What slips past keys and pages alike, a kernel's access to a live
// allocation it was not given, is the sanitized build's to find too.
// bench/overhead.py --modes keys,pages,off measures the three.
enum class Protection { off, pages, keys };

int g_pkey = -1;

Protection protection() {
  static const Protection mode = [] {
    const char* off = std::getenv("REF_DRIVER_UNPROTECTED");
    if (off != nullptr && std::strcmp(off, "1") == 0) return Protection::off;
    const char* how = std::getenv("REF_DRIVER_PROTECTION");
    if (how != nullptr && std::strcmp(how, "pages") == 0) return Protection::pages;
    if (how != nullptr && *how != '\0' && std::strcmp(how, "keys") != 0) {
      std::fprintf(stderr, "refdriver: REF_DRIVER_PROTECTION=%s is not a mode (allowed: keys, pages); using keys\n", how);
    }
    // Threads that exist already start with every key but 0 denied (the
    // kernel's default PKRU), as does this one after the call.
    g_pkey = pkey_alloc(0, PKEY_DISABLE_ACCESS);
    return g_pkey >= 0 ? Protection::keys : Protection::pages;
  }();
  return mode;
}

bool protection_on() { return protection() != Protection::off; }

// Windows open on this thread (keys mode): the thread's rights change only
// when the count leaves or reaches 0.
thread_local int tls_open = 0;

void open_thread_window() {
  if (tls_open++ == 0) pkey_set(g_pkey, 0);
}

void close_thread_window() {
  if (tls_open > 0 && --tls_open == 0) pkey_set(g_pkey, PKEY_DISABLE_ACCESS);
}

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

thread_local int tls_device = 0;

// Note [Poisoned device memory]: AddressSanitizer knows malloc's blocks, not
// the driver's pages, so under ASan (`opgen-backend build --sanitize address`)
// every block gets at least kRedzone bytes after its end, and the driver marks
// those bytes, and whole freed blocks waiting in the cache, as poisoned:
// a kernel that reads or writes one element past a tensor's storage, or a
// freed block, is reported where it happens, even when its values come out
// right and the page it touched was mapped.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kRedzone = 64;
void poison(void* p, size_t n) { ASAN_POISON_MEMORY_REGION(p, n); }
void unpoison(void* p, size_t n) { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
constexpr size_t kRedzone = 0;
void poison(void*, size_t) {}
void unpoison(void*, size_t) {}
#endif

struct Allocation {
  size_t size;      // bytes asked for
  size_t mapped;    // bytes mapped (whole pages)
  int device;       // -1: pinned host memory
  int open = 0;     // access windows open on it
};

// Address-ordered, so that interior pointers (views) find their allocation.
class Table {
 public:
  std::mutex mu;
  std::map<uintptr_t, Allocation> map;

  // The allocation containing p; map.end() when none. Caller holds mu.
  std::map<uintptr_t, Allocation>::iterator find(const void* p) {
    const auto key = reinterpret_cast<uintptr_t>(p);
    auto it = map.upper_bound(key);
    if (it == map.begin()) return map.end();
    --it;
    if (key < it->first + std::max<size_t>(it->second.size, 1)) return it;
    return map.end();
  }
};

Table& table() {
  static Table* t = new Table();  // never destroyed: frees may run at exit
  return *t;
}

// Opens or closes the allocation for every thread: pages mode's windows,
// and kernel scopes in either mode (Note [Kernel scope] in RefDriver.h),
// where keys mode moves the pages to the default key 0 and back.
void protect(uintptr_t base, const Allocation& a, bool accessible) {
  if (a.device < 0) return;
  void* p = reinterpret_cast<void*>(base);
  if (protection() == Protection::pages) mprotect(p, a.mapped, accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
  if (protection() == Protection::keys) pkey_mprotect(p, a.mapped, PROT_READ | PROT_WRITE, accessible ? 0 : g_pkey);
}

// A kernel scope's open (or close) of the allocations holding ptrs, on the
// per-allocation count pages mode's windows keep.
void kernel_scope(const void* const* ptrs, size_t count, bool open) {
  if (!protection_on()) return;
  std::lock_guard<std::mutex> g(table().mu);
  for (size_t i = 0; i < count; ++i) {
    if (ptrs[i] == nullptr) continue;
    auto it = table().find(ptrs[i]);
    if (it == table().map.end()) continue;
    Allocation& a = it->second;
    if (open && a.open++ == 0) protect(it->first, a, true);
    if (!open && a.open > 0 && --a.open == 0) protect(it->first, a, false);
  }
}

// Fresh device pages: inaccessible outside windows from the start.
void protect_fresh(void* p, size_t mapped, int device) {
  if (device < 0) return;
  if (protection() == Protection::pages) mprotect(p, mapped, PROT_NONE);
  if (protection() == Protection::keys) pkey_mprotect(p, mapped, PROT_READ | PROT_WRITE, g_pkey);
}

// Large allocations start on a 2 MiB boundary and ask for transparent huge
// pages: first touch then faults once per 2 MiB instead of once per 4 KiB,
// which is most of the cost of writing a fresh large result.
constexpr size_t kHuge = size_t{2} << 20;

void* map_aligned(size_t mapped) {
  if (mapped < kHuge) {
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void* raw = mmap(nullptr, mapped + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHuge - 1) / kHuge * kHuge;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = aligned + mapped, end = start + mapped + kHuge;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, mapped, MADV_HUGEPAGE);
  return p;
}

// Note [Cached pages]: freed blocks are kept by exact mapped size, up to
// kCacheLimit bytes in all, and handed out again, as a GPU runtime's caching
// allocator does: mapping fresh pages (a system call, then zero-filled page
// faults on first touch) would otherwise dominate small and mid-size ops.
// A reused block keeps its old contents, as torch.empty promises nothing.
constexpr size_t kCacheLimit = size_t{1} << 30;

struct Cache {
  std::multimap<std::pair<size_t, int>, void*> blocks;  // (mapped, device or -1 for host) -> block
  size_t bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

// Per device (Note [Device memory statistics]); guarded by table().mu.
refMemoryStats g_stats[kMaxDevices] = {};

void account_release(int device, size_t mapped) {
  if (device >= 0) refdrv::on_release(g_stats[device], mapped);
}

// Gives cached blocks back to the system: all of them, or (device_only) those
// of device memory. Caller holds table().mu.
void release_cache(bool device_only) {
  Cache& c = cache();
  for (auto it = c.blocks.begin(); it != c.blocks.end();) {
    const auto [mapped, device] = it->first;
    if (device_only && device < 0) {
      ++it;
      continue;
    }
    unpoison(it->second, mapped);  // the address range may be mapped again by anyone
    munmap(it->second, mapped);
    account_release(device, mapped);
    c.bytes -= mapped;
    it = c.blocks.erase(it);
  }
}

refError map_pages(void** ptr, size_t size, int device) {
  if (ptr == nullptr) return refErrorInvalidValue;
  if (size == 0) {
    *ptr = nullptr;
    return refSuccess;
  }
  const size_t mapped = (size + kRedzone + page_size() - 1) / page_size() * page_size();
  const Allocation a{size, mapped, device};
  std::lock_guard<std::mutex> g(table().mu);
  void* p = nullptr;
  auto hit = cache().blocks.find({mapped, device});
  const bool fresh = hit == cache().blocks.end();
  if (!fresh) {
    p = hit->second;
    cache().bytes -= mapped;
    cache().blocks.erase(hit);
  } else {
    p = map_aligned(mapped);
    if (p == nullptr && cache().bytes > 0) {  // out of memory: give the cache back first
      release_cache(false);
      p = map_aligned(mapped);
    }
    if (p == nullptr) return refErrorMemoryAllocation;
    protect_fresh(p, mapped, device);
  }
  if (device >= 0) refdrv::on_allocate(g_stats[device], size, mapped, fresh);
  unpoison(p, size);
  poison(static_cast<char*>(p) + size, mapped - size);
  table().map[reinterpret_cast<uintptr_t>(p)] = a;
  *ptr = p;
  return refSuccess;
}

refError unmap_pages(void* ptr, bool device) {
  if (ptr == nullptr) return refSuccess;
  size_t mapped = 0;
  {
    std::lock_guard<std::mutex> g(table().mu);
    auto it = table().map.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == table().map.end() || (it->second.device >= 0) != device) return refErrorInvalidPointer;
    const Allocation a = it->second;
    mapped = a.mapped;
    if (a.open > 0) protect(it->first, a, false);  // freed inside a window: cached blocks stay closed
    table().map.erase(it);
    if (a.device >= 0) refdrv::on_free(g_stats[a.device], a.size, mapped);
    if (cache().bytes + mapped <= kCacheLimit) {
      poison(ptr, mapped);
      cache().blocks.emplace(std::make_pair(mapped, a.device), ptr);
      cache().bytes += mapped;
      return refSuccess;
    }
    account_release(a.device, mapped);
  }
  unpoison(ptr, mapped);  // the address range may be mapped again by anyone
  munmap(ptr, mapped);
  return refSuccess;
}

// Copies with the driver's own access to device memory.
class Access {
 public:
  Access(const void* a, const void* b) : a_(a), b_(b) {
    refAccessBegin(a_);
    refAccessBegin(b_);
  }
  ~Access() {
    refAccessEnd(b_);
    refAccessEnd(a_);
  }
  Access(const Access&) = delete;
  Access& operator=(const Access&) = delete;

 private:
  const void* a_;
  const void* b_;
};

struct Stream {
  int device;
};

struct Event {
  int device = -1;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

}  // namespace

extern "C" {

const char* refGetErrorString(refError e) {
  switch (e) {
    case refSuccess: return "no error";
    case refErrorInvalidValue: return "invalid argument";
    case refErrorInvalidDevice: return "invalid device ordinal";
    case refErrorMemoryAllocation: return "out of memory";
    case refErrorInvalidPointer: return "invalid device pointer";
    case refErrorNotReady: return "device not ready";
  }
  return "unknown error";
}

refError refGetDeviceCount(int* count) {
  if (count == nullptr) return refErrorInvalidValue;
  *count = device_count();
  return refSuccess;
}

refError refSetDevice(int device) {
  if (device < 0 || device >= device_count()) return refErrorInvalidDevice;
  tls_device = device;
  return refSuccess;
}

refError refGetDevice(int* device) {
  if (device == nullptr) return refErrorInvalidValue;
  *device = tls_device;
  return refSuccess;
}

refError refDeviceSynchronize(void) { return refSuccess; }

refError refMalloc(void** ptr, size_t size) { return map_pages(ptr, size, tls_device); }
refError refFree(void* ptr) { return unmap_pages(ptr, true); }
refError refMallocHost(void** ptr, size_t size) { return map_pages(ptr, size, -1); }
refError refFreeHost(void* ptr) { return unmap_pages(ptr, false); }

refError refMemGetStats(int device, refMemoryStats* stats) {
  if (stats == nullptr) return refErrorInvalidValue;
  if (device < 0 || device >= device_count()) return refErrorInvalidDevice;
  std::lock_guard<std::mutex> g(table().mu);
  *stats = g_stats[device];
  return refSuccess;
}

refError refMemResetStats(int device, refMemResetKind kind) {
  if (device < 0 || device >= device_count()) return refErrorInvalidDevice;
  if (kind != refMemResetPeaks && kind != refMemResetTotals) return refErrorInvalidValue;
  std::lock_guard<std::mutex> g(table().mu);
  refdrv::reset(g_stats[device], kind);
  return refSuccess;
}

refError refMemEmptyCache(void) {
  std::lock_guard<std::mutex> g(table().mu);
  release_cache(true);
  return refSuccess;
}

// Device memory is host memory here: the machine's.
refError refMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return refErrorInvalidValue;
  *free_bytes = static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * page_size();
  *total_bytes = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
  return refSuccess;
}

refError refPointerGetAttributes(refPointerAttributes* attributes, const void* ptr) {
  if (attributes == nullptr) return refErrorInvalidValue;
  std::lock_guard<std::mutex> g(table().mu);
  auto it = table().find(ptr);
  if (it == table().map.end()) {
    *attributes = refPointerAttributes{refMemoryUnregistered, -1, nullptr, 0};
  } else {
    const Allocation& a = it->second;
    *attributes = refPointerAttributes{a.device < 0 ? refMemoryHost : refMemoryDevice, a.device,
                                       reinterpret_cast<void*>(it->first), a.size};
  }
  return refSuccess;
}

refError refMemcpy(void* dst, const void* src, size_t count, refMemcpyKind kind) {
  if (count == 0) return refSuccess;
  if (dst == nullptr || src == nullptr || kind < refMemcpyHostToDevice || kind > refMemcpyHostToHost) {
    return refErrorInvalidValue;
  }
  const Access access(dst, src);
  std::memmove(dst, src, count);
  return refSuccess;
}

refError refMemcpyAsync(void* dst, const void* src, size_t count, refMemcpyKind kind, refStream_t /*stream*/) {
  return refMemcpy(dst, src, count, kind);
}

refError refStreamCreate(refStream_t* stream, int /*priority*/) {
  if (stream == nullptr) return refErrorInvalidValue;
  *stream = reinterpret_cast<refStream_t>(new Stream{tls_device});
  return refSuccess;
}

refError refStreamDestroy(refStream_t stream) {
  delete reinterpret_cast<Stream*>(stream);
  return refSuccess;
}

refError refStreamSynchronize(refStream_t /*stream*/) { return refSuccess; }
refError refStreamQuery(refStream_t /*stream*/) { return refSuccess; }

refError refStreamWaitEvent(refStream_t /*stream*/, refEvent_t event) {
  return event == nullptr ? refErrorInvalidValue : refSuccess;
}

refError refEventCreate(refEvent_t* event) {
  if (event == nullptr) return refErrorInvalidValue;
  *event = reinterpret_cast<refEvent_t>(new Event());
  return refSuccess;
}

refError refEventDestroy(refEvent_t event) {
  delete reinterpret_cast<Event*>(event);
  return refSuccess;
}

refError refEventRecord(refEvent_t event, refStream_t stream) {
  if (event == nullptr) return refErrorInvalidValue;
  auto* e = reinterpret_cast<Event*>(event);
  e->device = stream == nullptr ? tls_device : reinterpret_cast<Stream*>(stream)->device;
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return refSuccess;
}

refError refEventSynchronize(refEvent_t event) { return event == nullptr ? refErrorInvalidValue : refSuccess; }
refError refEventQuery(refEvent_t event) { return event == nullptr ? refErrorInvalidValue : refSuccess; }

refError refEventElapsedTime(float* ms, refEvent_t start, refEvent_t end) {
  auto* a = reinterpret_cast<Event*>(start);
  auto* b = reinterpret_cast<Event*>(end);
  if (ms == nullptr || a == nullptr || b == nullptr || !a->recorded || !b->recorded) return refErrorInvalidValue;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return refSuccess;
}

refError refAccessBegin(const void* ptr) {
  if (ptr == nullptr || !protection_on()) return refSuccess;
  if (protection() == Protection::keys) {
    open_thread_window();
    return refSuccess;
  }
  std::lock_guard<std::mutex> g(table().mu);
  auto it = table().find(ptr);
  if (it != table().map.end() && it->second.open++ == 0) protect(it->first, it->second, true);
  return refSuccess;
}

refError refAccessEnd(const void* ptr) {
  if (ptr == nullptr || !protection_on()) return refSuccess;
  if (protection() == Protection::keys) {
    close_thread_window();
    return refSuccess;
  }
  std::lock_guard<std::mutex> g(table().mu);
  auto it = table().find(ptr);
  if (it != table().map.end() && it->second.open > 0 && --it->second.open == 0) protect(it->first, it->second, false);
  return refSuccess;
}

refError refLaunchHostFunc(refStream_t /*stream*/, const void* const* ptrs, size_t count, refHostFn fn, void* user) {
  if (fn == nullptr || (count > 0 && ptrs == nullptr)) return refErrorInvalidValue;
  // Work runs synchronously here, so what was queued on the stream is done.
  kernel_scope(ptrs, count, true);
  fn(user);
  kernel_scope(ptrs, count, false);
  return refSuccess;
}

refError refAccessThreadBegin(void) {
  if (protection() == Protection::keys) open_thread_window();
  return refSuccess;
}

refError refAccessThreadEnd(void) {
  if (protection() == Protection::keys) close_thread_window();
  return refSuccess;
}

}  // extern "C"
