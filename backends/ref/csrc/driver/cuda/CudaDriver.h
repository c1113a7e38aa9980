// What the CUDA driver offers beyond RefDriver.h: its caching allocator's
// statistics (Note [CUDA block cache] in Driver.cpp) and a way to give
// cached blocks back. Plain C, no torch and no CUDA headers, so host code and
// tests can read the statistics; REF_CUDA_STATS=1 also prints them at exit.
#pragma once

#include "driver/RefDriver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct refCudaMemoryStats {
  uint64_t allocated_bytes;       // held by live allocations (rounded sizes)
  uint64_t peak_allocated_bytes;  // the most allocated_bytes has been
  uint64_t reserved_bytes;        // obtained from cudaMalloc and not yet given back
  uint64_t cached_bytes;          // reserved, free and waiting for reuse
  uint64_t cuda_mallocs;          // cudaMalloc calls that succeeded
  uint64_t cache_hits;            // allocations served from the cache
} refCudaMemoryStats;

refError refCudaGetMemoryStats(int device, refCudaMemoryStats* stats);
// Gives the current device's cached blocks back to CUDA (after their last use).
refError refCudaEmptyCache(void);

#ifdef __cplusplus
}  // extern "C"
#endif
