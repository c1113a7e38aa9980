// Note [Device memory statistics]: both drivers count their allocations the
// same way, so that torch.accelerator.memory_stats() and the device module's
// memory_allocated()/memory_reserved() mean one thing on every device.
// An allocation adds its rounded size to allocated_bytes and, when it took
// fresh memory from the system (mmap, cudaMalloc) instead of a cached block,
// to reserved_bytes and segments. A free takes it off allocated_bytes; the
// block leaves reserved_bytes only when it goes back to the system (cache
// full, out of memory, refMemEmptyCache). C++ only, torch-free.
#pragma once

#include "driver/RefDriver.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace refdrv {

inline void grow(refMemoryStat& s, int64_t n) {
  s.current += n;
  s.allocated += n;
  if (s.current > s.peak) s.peak = s.current;
}

inline void shrink(refMemoryStat& s, int64_t n) {
  s.current -= n;
  s.freed += n;
}

inline void on_allocate(refMemoryStats& s, size_t requested, size_t rounded, bool fresh) {
  grow(s.allocations, 1);
  grow(s.allocated_bytes, static_cast<int64_t>(rounded));
  grow(s.requested_bytes, static_cast<int64_t>(requested));
  if (fresh) {
    grow(s.reserved_bytes, static_cast<int64_t>(rounded));
    grow(s.segments, 1);
  }
}

inline void on_free(refMemoryStats& s, size_t requested, size_t rounded) {
  shrink(s.allocations, 1);
  shrink(s.allocated_bytes, static_cast<int64_t>(rounded));
  shrink(s.requested_bytes, static_cast<int64_t>(requested));
}

// A cached (or just freed) block given back to the system.
inline void on_release(refMemoryStats& s, size_t rounded) {
  shrink(s.reserved_bytes, static_cast<int64_t>(rounded));
  shrink(s.segments, 1);
}

inline void reset(refMemoryStats& s, refMemResetKind kind) {
  for (refMemoryStat* st : {&s.allocations, &s.allocated_bytes, &s.requested_bytes, &s.reserved_bytes, &s.segments}) {
    if (kind == refMemResetPeaks) st->peak = st->current;
    if (kind == refMemResetTotals) st->allocated = st->freed = 0;
  }
}

}  // namespace refdrv
