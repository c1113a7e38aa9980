// The reference device's driver: the C ABI a vendor's runtime SDK offers
// (CUDA's runtime API, Ascend's acl, OpenReg's openreg library). Everything
// the torch-facing runtime (csrc/runtime/) does to the device goes through
// these calls: memory, copies, streams, events, the device count. A new
// device is a new implementation of this header (cpu/ here, cuda/ beside it);
// the runtime and the ATen glue do not change.
//
// Plain C, no torch headers: the driver is the layer below PyTorch.
//
// Note [Protected device memory]: the CPU driver keeps device memory in host
// pages that host code cannot touch (a protection key it lacks, or PROT_NONE)
// except while the kernel library or the driver itself works on them. Host code that dereferences a device
// pointer (glue reading a tensor's data_ptr, a runtime shortcut) faults at
// once, as it would on a GPU, instead of passing on CPU and crashing on real
// hardware. refAccessBegin/refAccessEnd open and close that window; only the
// kernel library and the driver call them. How a window is made, and what it
// costs, is Note [Protection keys] in cpu/Driver.cpp. Set
// REF_DRIVER_UNPROTECTED=1 to turn protection off (debugging with a host
// debugger).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum refError {
  refSuccess = 0,
  refErrorInvalidValue = 1,
  refErrorInvalidDevice = 2,
  refErrorMemoryAllocation = 3,
  refErrorInvalidPointer = 4,
  refErrorNotReady = 5,
} refError;

typedef enum refMemcpyKind {
  refMemcpyHostToDevice = 0,
  refMemcpyDeviceToHost = 1,
  refMemcpyDeviceToDevice = 2,
  refMemcpyHostToHost = 3,
} refMemcpyKind;

typedef enum refMemoryType { refMemoryUnregistered = 0, refMemoryHost = 1, refMemoryDevice = 2 } refMemoryType;

typedef struct refPointerAttributes {
  refMemoryType type;
  int device;  // -1 for host memory
  void* base;  // start of the allocation that contains the pointer
  size_t size;
} refPointerAttributes;

typedef struct refStream_* refStream_t;  // NULL is the device's default stream
typedef struct refEvent_* refEvent_t;

const char* refGetErrorString(refError e);

// Devices. The current device is per thread (as in CUDA).
refError refGetDeviceCount(int* count);
refError refSetDevice(int device);
refError refGetDevice(int* device);
refError refDeviceSynchronize(void);

// Device memory on the current device, and pinned host memory.
refError refMalloc(void** ptr, size_t size);
refError refFree(void* ptr);
refError refMallocHost(void** ptr, size_t size);
refError refFreeHost(void* ptr);
refError refPointerGetAttributes(refPointerAttributes* attributes, const void* ptr);

// Memory statistics of one device's allocations, as a caching allocator
// keeps them (Note [Device memory statistics]). Each stat is a gauge with
// its peak and two running totals: what was added and what was taken off.
typedef struct refMemoryStat {
  int64_t current;
  int64_t peak;
  int64_t allocated;  // total added since the last reset of running totals
  int64_t freed;      // total taken off since then
} refMemoryStat;

typedef struct refMemoryStats {
  refMemoryStat allocations;      // live refMalloc blocks (a count)
  refMemoryStat allocated_bytes;  // their sizes as the driver rounds them
  refMemoryStat requested_bytes;  // their sizes as the callers asked
  refMemoryStat reserved_bytes;   // taken from the system, live or cached for reuse
  refMemoryStat segments;         // system allocations held (a count)
} refMemoryStats;

typedef enum refMemResetKind { refMemResetPeaks = 1, refMemResetTotals = 2 } refMemResetKind;

refError refMemGetStats(int device, refMemoryStats* stats);
refError refMemResetStats(int device, refMemResetKind kind);
// Gives every device's cached free blocks back to the system.
refError refMemEmptyCache(void);
// Free and total memory of the current device.
refError refMemGetInfo(size_t* free_bytes, size_t* total_bytes);

// Copies; the async form is ordered on `stream`.
refError refMemcpy(void* dst, const void* src, size_t count, refMemcpyKind kind);
refError refMemcpyAsync(void* dst, const void* src, size_t count, refMemcpyKind kind, refStream_t stream);

// Streams of the current device.
refError refStreamCreate(refStream_t* stream, int priority);
refError refStreamDestroy(refStream_t stream);
refError refStreamSynchronize(refStream_t stream);
refError refStreamQuery(refStream_t stream);
refError refStreamWaitEvent(refStream_t stream, refEvent_t event);

refError refEventCreate(refEvent_t* event);
refError refEventDestroy(refEvent_t event);
refError refEventRecord(refEvent_t event, refStream_t stream);
refError refEventSynchronize(refEvent_t event);
refError refEventQuery(refEvent_t event);
refError refEventElapsedTime(float* ms, refEvent_t start, refEvent_t end);

// Note [Protected device memory]: opens (Begin) or closes (End) host access
// to the device allocation that contains `ptr`; nests and is thread-safe.
// Pointers that are not device memory are ignored.
refError refAccessBegin(const void* ptr);
refError refAccessEnd(const void* ptr);

// A kernel library's worker thread that runs part of a call on behalf of a
// thread holding access windows takes that access for the part it runs:
// Begin before, End after. Nests; a no-op where windows are not per thread
// (Note [Protection keys] in cpu/Driver.cpp).
refError refAccessThreadBegin(void);
refError refAccessThreadEnd(void);

// Note [Kernel scope]: host code that the kernel library did not write, a
// kernel Inductor generated and compiled for the device (torch_<device>/
// _inductor.py), is handed to the driver to run: refLaunchHostFunc runs
// fn(user) on `stream`, ordered after the work queued there, with the `count`
// device allocations that contain ptrs[0..count) open to every host thread
// (the generated code runs its loops on OpenMP threads the driver never
// sees) and closed again after. The scope is refcounted per allocation, on
// the count that the kernel library's own windows keep where windows are
// per allocation, so nested and overlapping scopes never close each other's
// memory; pointers that are not device memory (a CPU tensor, a size) are
// ignored. This is the call where a vendor's own compiler plugs in: a
// driver whose device runs the code itself (a Triton or vendor-toolchain
// kernel on a GPU-like device) launches the kernel object here instead of a
// host function. On the CUDA driver device memory is not host-addressable,
// so fn runs once the stream is drained and opens nothing.
typedef void (*refHostFn)(void* user);
refError refLaunchHostFunc(refStream_t stream, const void* const* ptrs, size_t count, refHostFn fn, void* user);

#ifdef __cplusplus
}  // extern "C"
#endif
