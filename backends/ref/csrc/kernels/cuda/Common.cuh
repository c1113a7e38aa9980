// What every CUDA kernel of the reference library shares beyond
// common/Dtypes.h (storage types, opmath loads and stores, dispatch),
// common/Checks.h (operand checks) and common/Errors.h (error texts): the
// one elementwise launcher every pointwise op runs on, over common/Loop.h's
// plan of the descriptors' coalesced dims with a contiguous fast path
// (TensorIterator + gpu_kernel in ATen, reduced to what a kernel library
// needs), a block-wide combine for row kernels, and how index errors found
// on the device reach the host (Note [Index errors on the device]).
//
// Torch-free by design (Note [Descriptor conventions] in RefKernels.h):
// only the CUDA runtime and the C ABI headers pass through nvcc.
#pragma once

#include "kernels/RefKernels.h"
#include "kernels/common/Checks.h"
#include "kernels/common/Descriptors.h"
#include "kernels/common/Dtypes.h"
#include "kernels/common/Errors.h"
#include "kernels/common/Loop.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace refkc {

// Storage types, conversions, cast rules, itemsize and dispatch are the CPU
// library's (common/Dtypes.h), as are numel, same_shape and or_null
// (common/Descriptors.h): one definition, so the two cannot drift.
using refk::acc_t;
using refk::BFloat16;
using refk::contiguous_like;
using refk::dispatch;
using refk::dispatch_bytes;
using refk::dispatch_index;
using refk::or_null;
using refk::dtype_name;
using refk::from_scalar;
using refk::Half;
using refk::is_floating_v;
using refk::is_floating_dtype;
using refk::is_half_v;
using refk::is_index_dtype;
using refk::is_integral_v;
using refk::itemsize;
using refk::load;
using refk::numel;
using refk::opmath_t;
using refk::same_shape;
using refk::store;
using refk::Tag;

// ---- errors ----------------------------------------------------------------

// The CPU library's too (common/Errors.h).
using refk::check_rank;
using refk::check_shapes;
using refk::checked;
using refk::dispatch_floating;
using refk::fail;
using refk::unsupported;

// The status of the launch just made (a launch error is refkErrorInvalidValue
// with CUDA's text).
refkStatus launched(const char* op);
refkStatus not_implemented(const char* entry);

inline cudaStream_t stream_of(const refkContext* ctx) {
  return ctx == nullptr || ctx->stream == nullptr ? cudaStreamLegacy : reinterpret_cast<cudaStream_t>(ctx->stream);
}

// Note [Index errors on the device]: a kernel that meets an index out of
// range (or a target out of bounds) skips the element and raises a flag in
// device memory; the host reads the flag back after the launch (one stream
// synchronization per call that reads indices) and only then, on the error
// path, copies the index tensor to the host to find the offending element
// in row-major order, so the message names the element the CPU library
// names. The flag lives in stream-ordered memory of the call's own stream.
class ErrorFlag {
 public:
  explicit ErrorFlag(cudaStream_t s) : stream_(s) {}
  ~ErrorFlag() {
    if (flag_ != nullptr) cudaFreeAsync(flag_, stream_);
  }
  ErrorFlag(const ErrorFlag&) = delete;
  ErrorFlag& operator=(const ErrorFlag&) = delete;
  // Allocates the flag, cleared, on the stream.
  refkStatus init(const char* op);
  int* get() const { return flag_; }
  // Waits for the stream; `raised` tells whether a kernel set the flag.
  refkStatus read(const char* op, bool& raised);
  // The end of a call that launched kernels with the flag: the launches'
  // status when they failed, success when no kernel raised the flag, else
  // the error `find()` returns (the host's row-major search for the first
  // offending element), or "op: <what> is out of bounds" should it find none.
  template <class Find>
  refkStatus finish(const char* op, refkStatus launch, const char* what, Find&& find) {
    if (launch != refkSuccess) return launch;
    bool raised = false;
    if (auto s = read(op, raised)) return s;
    if (!raised) return refkSuccess;
    if (auto s = find()) return s;
    return fail(refkErrorIndexOutOfBounds, std::string(op) + ": " + what + " is out of bounds");
  }

 private:
  cudaStream_t stream_;
  int* flag_ = nullptr;
};

// The values of an int32/int64 (or uint8, for nll targets) index tensor in
// row-major order, copied to the host after the device is idle (the error
// path of Note [Index errors on the device]).
refkStatus index_values(const char* op, const refkTensor& t, std::vector<int64_t>& out);

// The text of Note [Index errors] (RefKernels.h).
refkStatus index_error(int64_t value, int64_t dim, int64_t size);

// Blocks for a grid-stride loop over n items.
inline unsigned blocks_for(int64_t n, int threads = 256) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// ---- the offset calculator -------------------------------------------------

// N operands of one shape (operand 0 is the output) as byte strides over
// coalesced dims, innermost last, planned as the CPU library's Loop is
// (Note [Loop plans], common/Loop.h); passed to kernels by value.
template <int N>
using Offsets = refk::LoopPlan<N>;

template <int N>
Offsets<N> plan(const refkTensor* const (&ops)[N]) {
  return Offsets<N>(ops, N);
}

// Blocks for a kernel that runs a block per row over `rows` rows (0: no launch).
inline unsigned blocks_per_row(int64_t rows) {
  return static_cast<unsigned>(rows < 65535 * 16 ? rows : 65535 * 16);
}

// ---- block-wide combine ---------------------------------------------------

constexpr int kBlockThreads = 256;

// Combines one value per thread across a block of kBlockThreads threads;
// every thread gets the result. Values of up to 16 bytes.
template <class A, class F>
__device__ A block_combine(A v, F combine) {
  static_assert(sizeof(A) <= 16, "block_combine: values of up to 16 bytes");
  __shared__ alignas(16) unsigned char raw[kBlockThreads * 16];
  A* sm = reinterpret_cast<A*>(raw);
  __syncthreads();
  sm[threadIdx.x] = v;
  __syncthreads();
  for (int w = kBlockThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) sm[threadIdx.x] = combine(sm[threadIdx.x], sm[threadIdx.x + w]);
    __syncthreads();
  }
  return sm[0];
}

struct Sum {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

// An element of any floating dtype as double, and a double stored into one
// (per-row statistics and parameters whose dtype may differ from the rows').
__device__ inline double read_value(refkDtype d, const char* p) {
  switch (d) {
    case refkFloat16: return load(*reinterpret_cast<const Half*>(p));
    case refkBFloat16: return load(*reinterpret_cast<const BFloat16*>(p));
    case refkFloat32: return *reinterpret_cast<const float*>(p);
    default: return *reinterpret_cast<const double*>(p);
  }
}

// A 1-d operand that may be absent (data NULL), passed by value.
struct Vec {
  const char* data;
  refkDtype dtype;
  int64_t stride;  // bytes
  __device__ double at(int64_t i, double fill) const {
    return data == nullptr ? fill : read_value(dtype, data + i * stride);
  }
};
inline Vec vec_of(const refkTensor* t) {
  if (t == nullptr || t->data == nullptr) return Vec{nullptr, refkFloat32, 0};
  return Vec{static_cast<const char*>(t->data), t->dtype, (t->ndim > 0 ? t->strides[0] : 0) * itemsize(t->dtype)};
}

// Base pointers of N operands, by value.
template <int N>
struct Ptrs {
  char* p[N];
};

template <int N, class F>
__global__ void strided_kernel(Offsets<N> o, Ptrs<N> base, F f) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < o.numel; i += stride) {
    int64_t off[N];
    o.at(i, off);
    char* p[N];
    for (int k = 0; k < N; ++k) p[k] = base.p[k] + off[k];
    f(p);
  }
}

// Contiguous operands: pointers step by each operand's item size.
template <int N>
struct Sizes {
  int64_t s[N];
};

template <int N, class F>
__global__ void dense_kernel(int64_t n, Ptrs<N> base, Sizes<N> isz, F f) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    char* p[N];
    for (int k = 0; k < N; ++k) p[k] = base.p[k] + i * isz.s[k];
    f(p);
  }
}

// The elementwise launcher: calls f(char* const (&p)[N]) on the device for
// every element, p[k] pointing at operand k's element, on the context's
// stream. f must be a device functor (no host state).
template <int N, class F>
refkStatus for_each(const char* op, const refkContext* ctx, const refkTensor* const (&ops)[N], F f) {
  const Offsets<N> o = plan(ops);
  if (o.numel == 0) return refkSuccess;
  Ptrs<N> base;
  for (int k = 0; k < N; ++k) base.p[k] = static_cast<char*>(ops[k]->data);
  const unsigned blocks = blocks_for(o.numel);
  if (o.contiguous) {
    Sizes<N> isz;
    for (int k = 0; k < N; ++k) isz.s[k] = itemsize(ops[k]->dtype);
    dense_kernel<N><<<blocks, 256, 0, stream_of(ctx)>>>(o.numel, base, isz, f);
  } else {
    strided_kernel<N><<<blocks, 256, 0, stream_of(ctx)>>>(o, base, f);
  }
  return launched(op);
}

// out = f(in...) with all inputs of storage type In, in opmath.
template <class Out, class In, int NIN, class F>
struct Typed {
  F f;
  __device__ void operator()(char* const (&p)[NIN + 1]) const {
    Out* o = reinterpret_cast<Out*>(p[0]);
    if constexpr (NIN == 1) {
      *o = store<Out>(f(load(*reinterpret_cast<const In*>(p[1]))));
    } else if constexpr (NIN == 2) {
      *o = store<Out>(f(load(*reinterpret_cast<const In*>(p[1])), load(*reinterpret_cast<const In*>(p[2]))));
    } else {
      *o = store<Out>(f(load(*reinterpret_cast<const In*>(p[1])), load(*reinterpret_cast<const In*>(p[2])),
                        load(*reinterpret_cast<const In*>(p[3]))));
    }
  }
};

template <class Out, class In, int NIN, class F>
refkStatus typed(const char* op, const refkContext* ctx, const refkTensor* const (&ops)[NIN + 1], F f) {
  return for_each<NIN + 1>(op, ctx, ops, Typed<Out, In, NIN, F>{f});
}

}  // namespace refkc
